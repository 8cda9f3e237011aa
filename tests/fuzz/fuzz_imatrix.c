/*
 * libFuzzer target for the llama.cpp importance-matrix reader
 * (core/imatrix.h) through fr_calib_open_memory: GGUF imatrix files by
 * their content, anything else as the legacy .dat (the name ends in .dat).
 * The seeds hold both formats.
 */
#define FUZZ_CALIB_NAME "fuzz.dat"
#include "fuzz_calib.h"
