/*
 * The text files the analysis writes (recipes, tensor-type files, exports):
 * opened and closed so that any failure, a write's included, is one
 * FR_E_OUTPUT "cannot write '<path>': <why>".
 */
#ifndef FR_OUTPUT_FILE_H
#define FR_OUTPUT_FILE_H

#include <stdio.h>

#include "core/error.h"

/* Opens path for writing, truncating it. */
fr_status fr_output_open(const char *path, FILE **f, fr_error *err);

/* Closes f, failing when it or an earlier write to f failed. */
fr_status fr_output_close(FILE *f, const char *path, fr_error *err);

#endif
