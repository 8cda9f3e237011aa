/* libFuzzer target for the gguf reader (tests/fuzz/README in docs/readers.md),
 * with the ggml block decoders attached as the commands attach them
 * (frontier/model/block_source.h; docs/quantized-sources.md). */
#include "frontier/model/block_source.h"
#define FUZZ_NAME "fuzz.gguf"
#define FUZZ_ATTACH(src) fr_block_source_attach(src)
#include "fuzz_reader.h"
