/*
 * libFuzzer target for the frontier dataset reader (frontier/dataset/dataset.h)
 * behind sweep --resume, merge, pareto, allocate, export and annotate: the
 * input is written to a temporary file, probed, read whole (every table,
 * checksums, the global-heap walk), and a few rows are touched. HDF5 logs
 * its own error stack to stderr; frontier turns it off where it reads.
 */
#include <math.h>

#include "frontier/dataset/dataset.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file_write(data, size, ".h5");
    if (!path)
        return 0;
    fr_error err = {0};
    int64_t version = 0;
    (void)fr_dataset_probe(path, &version, &err);
    fr_dataset ds = {0};
    if (fr_dataset_read(path, &ds, &err) == FR_OK) {
        volatile double sink = 0;
        for (size_t i = 0; i < ds.n_results; i++) {
            const fr_ds_result *r = &ds.results[i];
            const fr_ds_tensor *t = fr_dataset_tensor(&ds, r->tensor_id);
            const fr_ds_config *c = fr_dataset_config(&ds, r->config_id);
            sink += r->rel_err + (t ? (double)strlen(t->name) : 0) + (c ? (double)strlen(c->name) : 0);
        }
        (void)sink;
    }
    fr_dataset_free(&ds);
    return 0;
}
