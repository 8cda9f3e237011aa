/*
 * The text files the analysis writes (recipes, tensor-type files, exports):
 * written to a temporary name beside the target ("<path>.tmp-XXXXXX") and
 * renamed over it only when everything was written and flushed (fsync), so
 * a full disk or a failed command never leaves a truncated file under the
 * name a user asked for. Any failure, a write's included, is one
 * FR_E_OUTPUT "cannot write '<path>': <why>".
 */
#ifndef FR_OUTPUT_FILE_H
#define FR_OUTPUT_FILE_H

#include <stdio.h>

#include "core/error.h"

/* Opens a temporary file for path (at most 16 open at once). */
fr_status fr_output_open(const char *path, FILE **f, fr_error *err);

/* Closes f and renames it to path, failing (and removing it) when it or an
 * earlier write to f failed. */
fr_status fr_output_close(FILE *f, const char *path, fr_error *err);

/* Closes f and removes it: path is left as it was. NULL is fine. */
void fr_output_abort(FILE *f);

#endif
