/* libFuzzer target for the onnx reader (tests/fuzz/README in docs/readers.md). */
#define FUZZ_NAME "fuzz.onnx"
#include "fuzz_reader.h"
