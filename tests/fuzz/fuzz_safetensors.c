/* libFuzzer target for the safetensors reader (tests/fuzz/README in docs/readers.md). */
#define FUZZ_NAME "fuzz.safetensors"
#include "fuzz_reader.h"
