/*
 * The dataset writer and reader: a round trip of every table and root
 * attribute, the create/replace rules, and refusals of files that are not
 * frontier datasets.
 */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontier/dataset/dataset.h"
#include "frontier/dataset/dataset_write.h"
#include "check.h"

static char dir[256];

static const char *path_in(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void build(fr_dataset *ds, size_t n_results)
{
    fr_error err = {0};
    memset(ds, 0, sizeof *ds);
    CHECK_OK(fr_dataset_set_string(&ds->command_line, "frontier sweep m -o x.h5", &err), err);
    CHECK_OK(fr_dataset_set_string(&ds->created, "2025-01-02T03:04:05Z", &err), err);
    CHECK_OK(fr_dataset_set_string(&ds->host, "host-é", &err), err);
    CHECK_OK(fr_dataset_set_string(&ds->devices, "cpu (2 threads)", &err), err);
    fr_ds_source s = {.source_id = 0, .path = "data/m.safetensors", .kind = "safetensors",
                      .size = 1234, .sha256 = "ab12", .mtime = 1700000000, .n_tensors = 3,
                      .n_params = 99};
    CHECK_OK(fr_dataset_add_source(ds, &s, &err), err);
    for (uint32_t t = 0; t < 40; t++) {
        char name[64];
        snprintf(name, sizeof name, "model.layers.%u.mlp.up_proj.weight", t);
        fr_ds_tensor tr = {.tensor_id = t, .source_id = 0, .name = name, .cls = "mlp_up",
                           .dtype = "BF16", .shape = "64x32", .numel = 2048, .rows = 64,
                           .cols = 32, .sq_norm = t == 3 ? NAN : 1.5 + t};
        CHECK_OK(fr_dataset_add_tensor(ds, &tr, &err), err);
    }
    fr_ds_config c0 = {.config_id = 0, .name = "int4-g32-sym", .family = "int", .nominal_bits = 4,
                       .params = "{\"bits\":4}", .origin = "builtin"};
    fr_ds_config c1 = {.config_id = 1, .name = "nvfp4", .family = "nvfp4", .nominal_bits = 4,
                       .params = NULL, .origin = "/p/lib.so"};
    CHECK_OK(fr_dataset_add_config(ds, &c0, &err), err);
    CHECK_OK(fr_dataset_add_config(ds, &c1, &err), err);
    for (size_t i = 0; i < n_results; i++) {
        fr_ds_result r = {.tensor_id = (uint32_t)(i % 40), .config_id = (uint32_t)(i / 40 % 2),
                          .bits_per_weight = 4.5, .total_bits = 9216 + i, .rel_err = 1.0 / (double)(i + 3),
                          .sqnr_db = INFINITY, .max_abs_err = 0.25, .cosine = 0.99,
                          .out_rel_err = NAN, .sq_err = (double)i, .out_sq_err = NAN,
                          .out_sq_ref = NAN, .seconds = 0.001};
        snprintf(r.device, sizeof r.device, i % 2 ? "cuda:0" : "cpu");
        CHECK_OK(fr_dataset_add_result(ds, &r, &err), err);
    }
    fr_ds_skipped k = {.source_id = 0, .name = "model.norm.weight", .reason = "1-D tensor", .config = ""};
    CHECK_OK(fr_dataset_add_skipped(ds, &k, &err), err);
}

static int same_double(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

static void compare(const fr_dataset *a, const fr_dataset *b)
{
    CHECK_STR(b->format, "frontier");
    CHECK_EQ_U64(b->schema_version, FR_SCHEMA_VERSION);
    CHECK_STR(b->tool_version, FRONTIER_VERSION);
    CHECK_STR(a->command_line, b->command_line);
    CHECK_STR(a->created, b->created);
    CHECK_STR(a->host, b->host);
    CHECK_STR(a->devices, b->devices);
    CHECK_EQ_U64(a->n_sources, b->n_sources);
    CHECK_EQ_U64(a->n_tensors, b->n_tensors);
    CHECK_EQ_U64(a->n_configs, b->n_configs);
    CHECK_EQ_U64(a->n_results, b->n_results);
    CHECK_EQ_U64(a->n_skipped, b->n_skipped);
    if (a->n_sources == b->n_sources && a->n_sources) {
        CHECK_STR(a->sources[0].path, b->sources[0].path);
        CHECK_STR(a->sources[0].sha256, b->sources[0].sha256);
        CHECK_EQ_U64(a->sources[0].size, b->sources[0].size);
        CHECK_EQ_U64(a->sources[0].mtime, b->sources[0].mtime);
        CHECK_EQ_U64(a->sources[0].n_params, b->sources[0].n_params);
    }
    for (size_t i = 0; i < a->n_tensors && a->n_tensors == b->n_tensors; i++) {
        CHECK_STR(a->tensors[i].name, b->tensors[i].name);
        CHECK_STR(a->tensors[i].cls, b->tensors[i].cls);
        CHECK_EQ_U64(a->tensors[i].rows, b->tensors[i].rows);
        CHECK(same_double(a->tensors[i].sq_norm, b->tensors[i].sq_norm));
    }
    for (size_t i = 0; i < a->n_configs && a->n_configs == b->n_configs; i++) {
        CHECK_STR(a->configs[i].name, b->configs[i].name);
        CHECK_STR(a->configs[i].params, b->configs[i].params);
        CHECK_STR(a->configs[i].origin, b->configs[i].origin);
    }
    for (size_t i = 0; i < a->n_results && a->n_results == b->n_results; i++) {
        const fr_ds_result *x = &a->results[i], *y = &b->results[i];
        CHECK(x->tensor_id == y->tensor_id && x->config_id == y->config_id);
        CHECK(x->total_bits == y->total_bits && same_double(x->rel_err, y->rel_err));
        CHECK(same_double(x->sqnr_db, y->sqnr_db) && same_double(x->out_rel_err, y->out_rel_err));
        CHECK(same_double(x->sq_err, y->sq_err) && same_double(x->seconds, y->seconds));
        CHECK_STR(x->device, y->device);
    }
    if (b->n_skipped) {
        CHECK_STR(b->skipped[0].reason, "1-D tensor");
        CHECK_STR(b->skipped[0].config, "");
    }
}

static void test_round_trip(void)
{
    fr_error err = {0};
    fr_dataset a, b;
    /* more than one HDF5 staging block of /results */
    build(&a, 20000);
    const char *p = path_in("round.h5");
    CHECK_OK(fr_dataset_write(p, &a, FR_DS_CREATE, &err), err);
    CHECK(access(path_in("round.h5.tmp"), F_OK) != 0);
    CHECK_OK(fr_dataset_read(p, &b, &err), err);
    compare(&a, &b);
    CHECK(fr_dataset_tensor(&b, 39) == &b.tensors[39]);
    CHECK(fr_dataset_config(&b, 1) == &b.configs[1]);
    CHECK(fr_dataset_config(&b, 2) == NULL);
    /* a read dataset can grow */
    fr_ds_result r = {.tensor_id = 1, .config_id = 1};
    for (int i = 0; i < 5000; i++)
        CHECK_OK(fr_dataset_add_result(&b, &r, &err), err);
    CHECK_EQ_U64(b.n_results, 25000);
    fr_dataset_free(&b);

    /* CREATE refuses an existing file and leaves it alone */
    struct stat before, after;
    stat(p, &before);
    fr_error e2 = {0};
    CHECK_EQ_U64(fr_dataset_write(p, &a, FR_DS_CREATE, &e2), FR_E_OUTPUT);
    CHECK(strstr(e2.msg, "already exists") != NULL);
    stat(p, &after);
    CHECK(before.st_ino == after.st_ino && before.st_size == after.st_size);

    /* REPLACE swaps in a new file */
    fr_dataset_free(&a);
    build(&a, 3);
    CHECK_OK(fr_dataset_write(p, &a, FR_DS_REPLACE, &err), err);
    CHECK_OK(fr_dataset_read(p, &b, &err), err);
    compare(&a, &b);
    fr_dataset_free(&b);

    /* empty tables */
    fr_dataset empty = {0};
    CHECK_OK(fr_dataset_write(path_in("empty.h5"), &empty, FR_DS_CREATE, &err), err);
    CHECK_OK(fr_dataset_read(path_in("empty.h5"), &b, &err), err);
    CHECK_EQ_U64(b.n_results + b.n_tensors + b.n_sources, 0);
    fr_dataset_free(&b);

    /* sort */
    fr_dataset_free(&a);
    build(&a, 200);
    fr_dataset_sort(&a);
    int ordered = 1;
    for (size_t i = 1; i < a.n_results; i++)
        if (a.results[i - 1].tensor_id > a.results[i].tensor_id ||
            (a.results[i - 1].tensor_id == a.results[i].tensor_id &&
             a.results[i - 1].config_id > a.results[i].config_id))
            ordered = 0;
    CHECK(ordered);
    fr_dataset_free(&a);
}

static void test_bad_paths(void)
{
    fr_dataset a, b;
    fr_error err = {0};
    build(&a, 2);
    CHECK_EQ_U64(fr_dataset_write("/nonexistent-dir/x.h5", &a, FR_DS_CREATE, &err), FR_E_OUTPUT);
    CHECK_STR(err.msg, "cannot write '/nonexistent-dir/x.h5': no such file or directory");
    fr_dataset_free(&a);

    CHECK_EQ_U64(fr_dataset_read(path_in("missing.h5"), &b, &err), FR_E_IO);
    CHECK(strstr(err.msg, "no such file") != NULL);

    FILE *f = fopen(path_in("text.h5"), "w");
    fputs("not hdf5\n", f);
    fclose(f);
    CHECK_EQ_U64(fr_dataset_read(path_in("text.h5"), &b, &err), FR_E_FORMAT);
    CHECK(strstr(err.msg, "is not an HDF5 file") != NULL);

    /* an HDF5 file in the earliest format (no metadata checksums, as h5py
     * and h5repack write by default) is refused before HDF5 parses it */
    hid_t file = H5Fcreate(path_in("earliest.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(file);
    CHECK_EQ_U64(fr_dataset_read(path_in("earliest.h5"), &b, &err), FR_E_FORMAT);
    CHECK(strstr(err.msg, "no metadata checksums") != NULL);
    CHECK(strstr(err.msg, "h5repack --latest") != NULL);
    int64_t v = 0;
    CHECK_EQ_U64(fr_dataset_probe(path_in("earliest.h5"), &v, &err), FR_E_FORMAT);

    /* an HDF5 file that is not a frontier dataset */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
    file = H5Fcreate(path_in("other.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    H5Fclose(file);
    CHECK_EQ_U64(fr_dataset_read(path_in("other.h5"), &b, &err), FR_E_FORMAT);
    CHECK(strstr(err.msg, "is not a frontier dataset") != NULL);
    CHECK_EQ_U64(fr_dataset_probe(path_in("other.h5"), &v, &err), FR_E_FORMAT);

    /* another schema version: probe reports it, read refuses */
    build(&a, 2);
    CHECK_OK(fr_dataset_write(path_in("v2.h5"), &a, FR_DS_CREATE, &err), err);
    fr_dataset_free(&a);
    file = H5Fopen(path_in("v2.h5"), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t attr = H5Aopen(file, "schema_version", H5P_DEFAULT);
    int64_t two = 2;
    H5Awrite(attr, H5T_NATIVE_INT64, &two);
    H5Aclose(attr);
    H5Fclose(file);
    CHECK_OK(fr_dataset_probe(path_in("v2.h5"), &v, &err), err);
    CHECK_EQ_U64(v, 2);
    CHECK_EQ_U64(fr_dataset_read(path_in("v2.h5"), &b, &err), FR_E_FORMAT);
    CHECK(strstr(err.msg, "schema version 2") != NULL);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/frontier-test-dataset-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trip();
    test_bad_paths();
    int rc = fr_test_finish("test_dataset");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (rc == 0 && system(cmd) != 0)
        rc = 1;
    return rc;
}
