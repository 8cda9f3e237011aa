/*
 * Derived tables under /frontier: written into a copy that replaces the
 * dataset on commit, read back (the mixed curve), replaced on a second
 * write, nothing changed by an aborted transaction, and errors for missing
 * or non-HDF5 files.
 */
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "frontier/analysis/allocate.h"
#include "frontier/analysis/frontier_store.h"
#include "frontier/analysis/pareto.h"

static void make_file(const char *path)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[1] = {3};
    hid_t sp = H5Screate_simple(1, dims, NULL);
    hid_t d = H5Dcreate2(f, "/results", H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int v[3] = {1, 2, 3};
    H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    H5Dclose(d);
    H5Sclose(sp);
    H5Fclose(f);
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static int group_exists(const char *path, const char *name)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return -1;
    int e = H5Lexists(f, "/frontier", H5P_DEFAULT) > 0 && H5Lexists(f, name, H5P_DEFAULT) > 0;
    /* the dataset's own content survives */
    int ok = H5Lexists(f, "/results", H5P_DEFAULT) > 0;
    H5Fclose(f);
    return ok ? e : -2;
}

static int leftovers(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q frontier-tmp", dir);
    return system(cmd) == 0;
}

int main(void)
{
    char dir[] = "/tmp/frontier-store-XXXXXX", path[256], text[256];
    fr_error err;
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/run.h5", dir);
    make_file(path);

    /* a small dataset to derive tables from */
    fr_dataset ds;
    fx_init(&ds);
    uint32_t a = fx_tensor(&ds, "a", "attn_q", 64, 4);
    uint32_t b = fx_tensor(&ds, "b", "mlp_up", 128, 8);
    uint32_t c2 = fx_config(&ds, "int2", "int", 2), c4 = fx_config(&ds, "int4", "int", 4);
    fx_result(&ds, a, c2, 160, 1.0);
    fx_result(&ds, a, c4, 288, 0.1);
    fx_result(&ds, b, c2, 320, 2.0);
    fx_result(&ds, b, c4, 576, 0.2);
    fr_result_index ix;
    fr_pareto p;
    fr_alloc_problem prob;
    fr_allocation alloc;
    fr_mixed_curve curve, back;
    fr_alloc_options opt = {FR_METRIC_REL_ERR, {NULL, NULL, NULL}, 0, NULL, 0, 0, NULL};
    fr_selection sel = {"a|b", NULL, NULL};
    CHECK(fr_result_index_build(&ds, &ix, &err) == FR_OK);
    CHECK(fr_pareto_compute(&ds, &ix, &sel, FR_BY_CLASS, FR_METRIC_REL_ERR, &p, &err) == FR_OK);
    CHECK(fr_alloc_prepare(&ds, &ix, &opt, &prob, &err) == FR_OK);
    CHECK(fr_alloc_solve(&prob, 3.5, &alloc, &err) == FR_OK);
    CHECK(fr_alloc_sweep(&prob, 2, 5, 0.5, 1, &curve, &err) == FR_OK);

    /* no curve yet */
    int found = 1;
    CHECK(fr_store_read_mixed_curve(path, &back, &found, &err) == FR_OK && !found);

    /* one transaction, three groups */
    fr_store *tx;
    CHECK(fr_store_begin(path, &tx, &err) == FR_OK);
    CHECK(!leftovers(dir)); /* the copy is edited in memory, written on commit */
    CHECK(fr_store_pareto(tx, &p, &sel, "frontier pareto run.h5 --by class", &err) == FR_OK);
    CHECK(fr_store_allocation(tx, &alloc, &prob, NULL, "frontier allocate", &err) == FR_OK);
    CHECK(fr_store_mixed_curve(tx, &curve, NULL, "frontier allocate --sweep-budgets", &err) == FR_OK);
    CHECK(fr_store_commit(tx, &err) == FR_OK);
    CHECK(!leftovers(dir));
    CHECK(group_exists(path, "/frontier/pareto_class_rel_err") == 1);
    CHECK(group_exists(path, "/frontier/allocation_3.5") == 1);
    CHECK(group_exists(path, "/frontier/mixed_curve") == 1);

    /* the curve reads back exactly */
    CHECK(fr_store_read_mixed_curve(path, &back, &found, &err) == FR_OK && found);
    CHECK(back.n_points == curve.n_points && back.metric == FR_METRIC_REL_ERR);
    CHECK(back.numel == 192 && back.n_tensors == 2);
    for (size_t i = 0; i < back.n_points && i < curve.n_points; i++) {
        CHECK(back.points[i].budget == curve.points[i].budget);
        CHECK(back.points[i].total_bits == curve.points[i].total_bits);
        CHECK(back.points[i].rel_err == curve.points[i].rel_err);
        CHECK(back.points[i].optimal == curve.points[i].optimal);
    }
    fr_mixed_curve_free(&back);

    /* writing a group again replaces it; an aborted transaction changes nothing */
    long before = file_size(path);
    CHECK(fr_store_begin(path, &tx, &err) == FR_OK);
    CHECK(fr_store_pareto(tx, &p, &sel, "again", &err) == FR_OK);
    fr_store_abort(tx);
    CHECK(file_size(path) == before && !leftovers(dir));
    CHECK(fr_store_begin(path, &tx, &err) == FR_OK);
    CHECK(fr_store_pareto(tx, &p, &sel, "again", &err) == FR_OK);
    CHECK(fr_store_commit(tx, &err) == FR_OK);
    CHECK(group_exists(path, "/frontier/pareto_class_rel_err") == 1);

    /* errors */
    snprintf(text, sizeof text, "%s/missing.h5", dir);
    CHECK(fr_store_begin(text, &tx, &err) == FR_E_IO && strstr(err.msg, "missing.h5"));
    CHECK(fr_store_read_mixed_curve(text, &back, &found, &err) == FR_E_IO);
    snprintf(text, sizeof text, "%s/text.h5", dir);
    FILE *f = fopen(text, "w");
    if (f) {
        fputs("not hdf5\n", f);
        fclose(f);
    }
    CHECK(fr_store_begin(text, &tx, &err) == FR_E_FORMAT && !leftovers(dir));
    unlink(text);

    fr_mixed_curve_free(&curve);
    fr_allocation_free(&alloc);
    fr_alloc_problem_free(&prob);
    fr_pareto_free(&p);
    fr_result_index_free(&ix);
    fr_dataset_free(&ds);
    unlink(path);
    rmdir(dir);
    return fr_test_finish("test_store");
}
