/*
 * The name patterns of the command line (--include, --exclude, --configs,
 * --fixed): POSIX extended regular expressions, unanchored, matched with
 * regexec. One compile for every command, so a bad pattern gets the same
 * message everywhere: "invalid --include regex '(': unmatched ( or \(".
 */
#ifndef FR_PATTERN_H
#define FR_PATTERN_H

#include <regex.h>

#include "error.h"

/* Compiles pattern into re (REG_EXTENDED | REG_NOSUB). option names the
 * command-line option in the message. FR_E_USAGE (re left unallocated) when
 * it does not compile; regfree(re) after use otherwise. */
fr_status fr_pattern_compile(regex_t *re, const char *pattern, const char *option, fr_error *err);

#endif
