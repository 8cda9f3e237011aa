/* libFuzzer target for the gguf reader (tests/fuzz/README in docs/readers.md). */
#define FUZZ_NAME "fuzz.gguf"
#include "fuzz_reader.h"
