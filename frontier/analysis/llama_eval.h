/*
 * Model quality measured by a real engine (docs/evaluate.md): llama.cpp's
 * llama-perplexity, run as a program (argv, no shell) with its output
 * captured to a file, and its --kl-divergence statistics read back. Used by
 * `frontier evaluate`, which stores them under /frontier/measured
 * (frontier/analysis/annotate.h).
 */
#ifndef FR_LLAMA_EVAL_H
#define FR_LLAMA_EVAL_H

#include <stddef.h>

#include "core/error.h"

/* The llama-perplexity to run: DIR/llama-perplexity for the first of
 * bin_dir (--llama-bin), default_dir (the build's pinned llama.cpp) that is
 * given, else the first llama-perplexity on PATH. A bin_dir given and
 * lacking it is not passed over. FR_E_IO when none is an executable, the
 * message naming where it looked. */
fr_status fr_llama_find(const char *bin_dir, const char *default_dir, char *path, size_t len,
                        fr_error *err);

/* Runs argv[0] with argv (NULL-terminated; no shell, no PATH search),
 * stdin from /dev/null, stdout and stderr into log_path (replaced); waits
 * for it. *exit_status: its exit status, or 128 + the signal that ended it.
 * FR_E_IO when it cannot be started, FR_E_OUTPUT when log_path cannot be
 * written. */
fr_status fr_llama_run(const char *const *argv, const char *log_path, int *exit_status,
                       fr_error *err);

typedef struct fr_llama_kld {
    double kl_mean, kl_stderr;   /* mean KL(p_base || p_quant) in nats, and its uncertainty */
    double ppl_quant, ppl_base;  /* perplexities of both over the same tokens */
    double same_top;             /* fraction of positions with the same most likely token */
    double same_top_stderr;
    int n_chunks, n_ctx;         /* chunks of n_ctx tokens; the second half of each is scored */
    double positions;            /* scored positions: n_chunks * (n_ctx - 1 - n_ctx / 2) */
    int from_summary;            /* 1: the closing statistics, 0: the last chunk's running row */
} fr_llama_kld;

/* Reads the output of `llama-perplexity --kl-divergence`: the closing
 * "Mean    KLD:", "Mean PPL(Q)", "Mean PPL(base)" and "Same top p:" lines
 * when there (6 decimals), else the running row of the last chunk (the same
 * means over every chunk, 5 decimals): llama.cpp's asynchronous log may
 * lose its last lines when the program exits. FR_E_FORMAT when neither is
 * there (the message names the log); "you need at least N tokens" (a text
 * too short for the context) gives FR_E_USAGE. */
fr_status fr_llama_parse_kld(const char *log_path, int n_ctx, fr_llama_kld *out, fr_error *err);

/* The chunks a --kl-divergence-base file holds (its header: "_logits_",
 * n_ctx, n_vocab, n_chunk); 0 when it holds none (the text was too short
 * for its context) or is not such a file, and *n_ctx its context. */
int fr_llama_base_chunks(const char *path, int *n_ctx);

/* The text of llama.cpp's first error line in log_path (" E " lines, or
 * "error"), for messages; "" when none. */
void fr_llama_log_error(const char *log_path, char *buf, size_t len);

#endif
