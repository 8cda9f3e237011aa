/*
 * libFuzzer target for the calibration-statistics reader (core/calib.h) on
 * a safetensors calibration file, from memory: open (header and layout
 * checks), every module's values (fr_calib_check_values), and lookups of
 * every module by the matching rules.
 */
#define FUZZ_CALIB_NAME "fuzz.safetensors"
#include "fuzz_calib.h"
