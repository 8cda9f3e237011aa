/*
 * Status codes and error messages.
 *
 * Every library function returns an fr_status; on failure it has filled an
 * fr_error with a one-line message in git's style: lowercase, what failed
 * first, the file and tensor in quotes, no trailing full stop
 * ("cannot open 'model.safetensors': no such file").
 *
 * The numeric values ARE the command line's exit codes (documented in
 * docs/exit-codes.md and `frontier --help`); only main() exits.
 */
#ifndef FR_ERROR_H
#define FR_ERROR_H

#include <stddef.h>

typedef enum fr_status {
    FR_OK = 0,
    FR_E_FAIL = 1,      /* internal error, or a run that finished with failures */
    FR_E_USAGE = 2,     /* bad command line: unknown option, bad value, bad regex */
    FR_E_IO = 3,        /* a file cannot be opened, read or mapped */
    FR_E_FORMAT = 4,    /* an input file is malformed or lies about its contents */
    FR_E_OUTPUT = 5,    /* an output cannot be written, or exists and would be overwritten */
    FR_E_PLUGIN = 6,    /* a plugin could not be loaded or misbehaved */
    FR_E_DEVICE = 7,    /* the GPU was asked for and failed or is absent */
    FR_E_NOMEM = 8,     /* out of memory */
    FR_E_MISMATCH = 9,  /* datasets disagree (merge, --resume on another run) */
    FR_E_UNSUPPORTED = 10, /* this build lacks what the command needs (sensitivity without libllama) */
    FR_E_INTERRUPT = 130 /* interrupted by a signal */
} fr_status;

#define FR_ERROR_MSG_MAX 1024

typedef struct fr_error {
    fr_status code;
    char msg[FR_ERROR_MSG_MAX];
} fr_error;

/* Records code and a printf-formatted message in err (which may be NULL);
 * returns code so callers can write `return fr_fail(err, FR_E_IO, ...)`. */
fr_status fr_fail(fr_error *err, fr_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes err->msg with a printf-formatted context ("reading 'x': " + msg). */
void fr_error_prefix(fr_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void fr_error_clear(fr_error *err);

/* strerror(errnum) worded as git words system errors: a lowercase first
 * letter ("no such file or directory"), acronyms kept ("I/O error").
 * Writes into buf and returns it. */
const char *fr_errno_text(int errnum, char *buf, size_t len);

/* Short name of a status ("format error"). */
const char *fr_status_name(fr_status code);

#endif
