/*
 * Derived tables under /frontier (docs/analysis.md, "Stored results"),
 * written through the HDF5 C API into an in-memory copy of the dataset
 * whose bytes replace it on commit (tmp + fsync + rename).
 */
#include "frontier/analysis/frontier_store.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "frontier/dataset/dataset_file.h"

#define STORE_ROOT "/frontier"

struct fr_store {
    char *path;
    hid_t file;    /* the dataset, in memory (ds_memory_fapl) */
    ds_image image; /* its bytes, once closed */
    H5E_auto2_t old_func;
    void *old_data;
};

/* HDF5 prints its error stack by default; our messages say what failed. */
static void hdf5_quiet(H5E_auto2_t *func, void **data)
{
    H5Eget_auto2(H5E_DEFAULT, func, data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void hdf5_restore(H5E_auto2_t func, void *data)
{
    H5Eset_auto2(H5E_DEFAULT, func, data);
}

/* The whole of path, read into a malloc'd buffer. */
static fr_status read_whole(const char *path, unsigned char **out, size_t *size, fr_error *err)
{
    char ebuf[128];
    fr_status st = FR_OK;
    unsigned char *buf = NULL;
    struct stat sb;
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &sb) != 0) {
        st = fr_fail(err, FR_E_IO, "cannot open '%s': %s", path,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
        goto done;
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size <= 0) {
        st = fr_fail(err, FR_E_FORMAT, "'%s' is not an HDF5 file", path);
        goto done;
    }
    if (!(buf = malloc((size_t)sb.st_size))) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory reading '%s'", path);
        goto done;
    }
    for (size_t got = 0; got < (size_t)sb.st_size;) {
        ssize_t n = read(fd, buf + got, (size_t)sb.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            st = fr_fail(err, FR_E_IO, "cannot read '%s': %s", path,
                         n < 0 ? fr_errno_text(errno, ebuf, sizeof ebuf) : "file shrank while read");
            goto done;
        }
        got += (size_t)n;
    }
    *out = buf;
    *size = (size_t)sb.st_size;
    buf = NULL;
done:
    free(buf);
    if (fd >= 0)
        close(fd);
    return st;
}

fr_status fr_store_begin(const char *path, fr_store **out, fr_error *err)
{
    fr_status st = FR_OK;
    unsigned char *bytes = NULL;
    size_t size = 0;
    *out = NULL;
    fr_store *s = calloc(1, sizeof *s);
    if (!s)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    s->file = H5I_INVALID_HID;
    hdf5_quiet(&s->old_func, &s->old_data);
    if (!(s->path = strdup(path))) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto fail;
    }
    /* the dataset is edited in memory and written back whole, as a sweep
     * writes it (dataset_write.c): HDF5 never writes to the disk itself */
    if ((st = read_whole(path, &bytes, &size, err)) != FR_OK)
        goto fail;
    hid_t fapl = ds_memory_fapl(&s->image);
    /* the core driver refuses an image under the name of a file that
     * exists; the name is only a label, no file of it is made */
    size_t n = strlen(path) + 32;
    char *label = malloc(n);
    if (label)
        snprintf(label, n, "%s.frontier-in-memory-%ld", path, (long)getpid());
    if (label && fapl >= 0 && H5Pset_file_image(fapl, bytes, size) >= 0)
        s->file = H5Fopen(label, H5F_ACC_RDWR, fapl);
    if (fapl >= 0)
        H5Pclose(fapl);
    free(label);
    free(bytes);
    if (s->file < 0) {
        st = fr_fail(err, FR_E_FORMAT, "cannot open '%s' as HDF5 for writing", path);
        goto fail;
    }
    *out = s;
    return FR_OK;
fail:
    fr_store_abort(s);
    return st;
}

void fr_store_abort(fr_store *s)
{
    if (!s)
        return;
    if (s->file >= 0)
        H5Fclose(s->file);
    ds_image_free(&s->image);
    hdf5_restore(s->old_func, s->old_data);
    free(s->path);
    free(s);
}

fr_status fr_store_commit(fr_store *s, fr_error *err)
{
    char ebuf[128];
    fr_status st = FR_OK;
    int fd = -1;
    size_t n = strlen(s->path) + 32;
    char *tmp = malloc(n);
    if (!tmp) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    /* a name of this process's own: two commands storing into one dataset
     * at once each write their own copy (the last rename wins) */
    snprintf(tmp, n, "%s.frontier-tmp-%ld", s->path, (long)getpid());
    hid_t file = s->file;
    s->file = H5I_INVALID_HID;
    if ((st = ds_close_image(file, &s->image, tmp, err)) != FR_OK ||
        (st = ds_save_image(&s->image, tmp, &fd, err)) != FR_OK)
        goto done;
    /* the dataset keeps its permissions */
    struct stat sb;
    if (stat(s->path, &sb) == 0 && fchmod(fd, sb.st_mode & 07777) != 0) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", tmp,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
        unlink(tmp);
        goto done;
    }
    if (rename(tmp, s->path) != 0) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot replace '%s': %s", s->path,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
        unlink(tmp);
        goto done;
    }
    /* make the rename itself durable */
    if (ds_fsync_folder(s->path) != 0)
        st = fr_fail(err, FR_E_OUTPUT, "cannot flush the folder of '%s': %s", s->path,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
done:
    if (fd >= 0 && close(fd) != 0 && st == FR_OK)
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", s->path,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
    free(tmp);
    fr_store_abort(s);
    return st;
}

/* ---- HDF5 helpers ---- */

static int attr_str(hid_t obj, const char *name, const char *value)
{
    int ok = 0;
    hid_t type = ds_string_type(), space = H5Screate(H5S_SCALAR), a = -1;
    const char *v = value ? value : "";
    if (type < 0 || space < 0)
        goto done;
    a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    ok = a >= 0 && H5Awrite(a, type, &v) >= 0;
done:
    if (a >= 0)
        H5Aclose(a);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    return ok;
}

static int attr_num(hid_t obj, const char *name, hid_t type, const void *value)
{
    hid_t space = H5Screate(H5S_SCALAR);
    if (space < 0)
        return 0;
    hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    int ok = a >= 0 && H5Awrite(a, type, value) >= 0;
    if (a >= 0)
        H5Aclose(a);
    H5Sclose(space);
    return ok;
}

static int attr_f64(hid_t obj, const char *name, double v)
{
    return attr_num(obj, name, H5T_NATIVE_DOUBLE, &v);
}

static int attr_u64(hid_t obj, const char *name, uint64_t v)
{
    return attr_num(obj, name, H5T_NATIVE_UINT64, &v);
}

/* The common attributes of every derived group. */
static int attrs_common(hid_t g, const char *kind, fr_metric metric, const fr_selection *sel,
                        const char *command_line)
{
    char created[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return attr_str(g, "kind", kind) && attr_str(g, "metric", fr_metric_name(metric)) &&
           attr_str(g, "include", sel && sel->include ? sel->include : "") &&
           attr_str(g, "exclude", sel && sel->exclude ? sel->exclude : "") &&
           attr_str(g, "configs", sel && sel->configs ? sel->configs : "") &&
           attr_str(g, "command_line", command_line) && attr_str(g, "created", created) &&
           attr_str(g, "tool_version", FRONTIER_VERSION);
}

/* Replaces /frontier/<name> by a new, empty group. */
static hid_t fresh_group(fr_store *s, const char *name, fr_error *err)
{
    char full[512];
    snprintf(full, sizeof full, STORE_ROOT "/%s", name);
    if (H5Lexists(s->file, STORE_ROOT, H5P_DEFAULT) <= 0) {
        hid_t root = H5Gcreate2(s->file, STORE_ROOT, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (root < 0) {
            fr_fail(err, FR_E_OUTPUT, "cannot create " STORE_ROOT " in '%s'", s->path);
            return -1;
        }
        H5Gclose(root);
    }
    if (H5Lexists(s->file, full, H5P_DEFAULT) > 0 && H5Ldelete(s->file, full, H5P_DEFAULT) < 0) {
        fr_fail(err, FR_E_OUTPUT, "cannot replace %s in '%s'", full, s->path);
        return -1;
    }
    hid_t g = H5Gcreate2(s->file, full, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0)
        fr_fail(err, FR_E_OUTPUT, "cannot create %s in '%s'", full, s->path);
    return g;
}

enum col_kind { COL_F64, COL_U64, COL_I32, COL_STR };

typedef struct col_desc {
    const char *name;
    size_t offset;
    enum col_kind kind;
} col_desc;

static hid_t compound_type(size_t row_size, const col_desc *cols, size_t n_cols, hid_t str_type)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, row_size);
    if (t < 0)
        return -1;
    for (size_t i = 0; i < n_cols; i++) {
        hid_t mt = cols[i].kind == COL_F64 ? H5T_NATIVE_DOUBLE
                 : cols[i].kind == COL_U64 ? H5T_NATIVE_UINT64
                 : cols[i].kind == COL_I32 ? H5T_NATIVE_INT32 : str_type;
        if (H5Tinsert(t, cols[i].name, cols[i].offset, mt) < 0) {
            H5Tclose(t);
            return -1;
        }
    }
    return t;
}

static fr_status write_table(fr_store *s, hid_t group, const char *name, const void *rows,
                             size_t n_rows, size_t row_size, const col_desc *cols, size_t n_cols,
                             fr_error *err)
{
    fr_status st = FR_OK;
    hid_t str = ds_string_type(), type = -1, space = -1, dset = -1, dcpl = -1;
    hsize_t dims[1] = {n_rows}, maxdims[1] = {H5S_UNLIMITED};
    if (str < 0 || (type = compound_type(row_size, cols, n_cols, str)) < 0 ||
        (space = H5Screate_simple(1, dims, maxdims)) < 0) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot describe table '%s' for '%s'", name, s->path);
        goto done;
    }
    /* chunked, so that HDF5 verifies a Fletcher32 checksum of each chunk on
     * read (a chunk may not be empty: one row at least) */
    hsize_t chunk[1] = {n_rows < 1 ? 1 : n_rows < 4096 ? n_rows : 4096};
    if ((dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 || H5Pset_chunk(dcpl, 1, chunk) < 0 ||
        H5Pset_fletcher32(dcpl) < 0) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot describe table '%s' for '%s'", name, s->path);
        goto done;
    }
    dset = H5Dcreate2(group, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (dset < 0 || (n_rows && H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0))
        st = fr_fail(err, FR_E_OUTPUT, "cannot write table '%s' into '%s'", name, s->path);
done:
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (dset >= 0)
        H5Dclose(dset);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (str >= 0)
        H5Tclose(str);
    return st;
}

/* ---- Pareto points ---- */

typedef struct pareto_row {
    const char *group;
    const char *config;
    const char *family;
    double nominal_bits;
    double bits_per_weight;
    uint64_t total_bits;
    uint64_t numel;
    uint64_t n_tensors;
    double rel_err, sqnr_db, out_rel_err;
    double sq_err, sq_norm, out_sq_err, out_sq_ref;
    int32_t on_frontier;
} pareto_row;

#define COL(type, field, kind) {#field, offsetof(type, field), kind}

static const col_desc pareto_cols[] = {
    COL(pareto_row, group, COL_STR),         COL(pareto_row, config, COL_STR),
    COL(pareto_row, family, COL_STR),        COL(pareto_row, nominal_bits, COL_F64),
    COL(pareto_row, bits_per_weight, COL_F64), COL(pareto_row, total_bits, COL_U64),
    COL(pareto_row, numel, COL_U64),         COL(pareto_row, n_tensors, COL_U64),
    COL(pareto_row, rel_err, COL_F64),       COL(pareto_row, sqnr_db, COL_F64),
    COL(pareto_row, out_rel_err, COL_F64),   COL(pareto_row, sq_err, COL_F64),
    COL(pareto_row, sq_norm, COL_F64),       COL(pareto_row, out_sq_err, COL_F64),
    COL(pareto_row, out_sq_ref, COL_F64),    COL(pareto_row, on_frontier, COL_I32),
};

typedef struct group_row {
    const char *name;
    uint64_t n_tensors, numel, n_common, common_numel, n_configs, n_partial;
} group_row;

static const col_desc group_cols[] = {
    COL(group_row, name, COL_STR),         COL(group_row, n_tensors, COL_U64),
    COL(group_row, numel, COL_U64),        COL(group_row, n_common, COL_U64),
    COL(group_row, common_numel, COL_U64), COL(group_row, n_configs, COL_U64),
    COL(group_row, n_partial, COL_U64),
};

#define N_COLS(a) (sizeof(a) / sizeof((a)[0]))

void fr_store_pareto_name(const fr_pareto *p, char *buf, size_t size)
{
    snprintf(buf, size, "pareto_%s_%s%s", fr_group_by_name(p->by), fr_metric_name(p->metric),
             p->expert_units ? "_expert_units" : "");
}

fr_status fr_store_pareto(fr_store *s, const fr_pareto *p, const fr_selection *selection,
                          const char *command_line, fr_error *err)
{
    fr_status st = FR_OK;
    char name[128];
    fr_store_pareto_name(p, name, sizeof name);
    pareto_row *rows = calloc(p->n_points + 1, sizeof *rows);
    group_row *groups = calloc(p->n_groups + 1, sizeof *groups);
    hid_t g = -1;
    if (!rows || !groups) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < p->n_points; i++) {
        const fr_point *pt = &p->points[i];
        rows[i] = (pareto_row){p->groups[pt->group].name, pt->config_name, pt->family,
                               pt->nominal_bits, pt->bits_per_weight, pt->total_bits, pt->numel,
                               pt->n_tensors, pt->rel_err, pt->sqnr_db, pt->out_rel_err,
                               pt->sq_err, pt->sq_norm, pt->out_sq_err, pt->out_sq_ref,
                               pt->on_frontier};
    }
    for (size_t i = 0; i < p->n_groups; i++) {
        const fr_pareto_group *gr = &p->groups[i];
        groups[i] = (group_row){gr->name, gr->n_tensors, gr->numel, gr->n_common,
                                gr->common_numel, gr->n_configs, gr->n_partial};
    }
    if ((g = fresh_group(s, name, err)) < 0) {
        st = err ? err->code : FR_E_OUTPUT;
        goto done;
    }
    if (!attrs_common(g, "pareto", p->metric, selection, command_line) ||
        !attr_str(g, "by", fr_group_by_name(p->by))) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot write attributes of %s in '%s'", name, s->path);
        goto done;
    }
    if ((st = write_table(s, g, "points", rows, p->n_points, sizeof *rows, pareto_cols,
                          N_COLS(pareto_cols), err)) != FR_OK)
        goto done;
    st = write_table(s, g, "groups", groups, p->n_groups, sizeof *groups, group_cols,
                     N_COLS(group_cols), err);
done:
    if (g >= 0)
        H5Gclose(g);
    free(rows);
    free(groups);
    return st;
}

/* ---- allocations ---- */

typedef struct alloc_row {
    const char *tensor;
    const char *cls;
    const char *config;
    const char *family;
    uint64_t numel;
    uint64_t total_bits;
    double bits_per_weight;
    double err_term, norm_term;
    double value;
    int32_t fixed;
} alloc_row;

static const col_desc alloc_cols[] = {
    COL(alloc_row, tensor, COL_STR),     {"class", offsetof(alloc_row, cls), COL_STR},
    COL(alloc_row, config, COL_STR),     COL(alloc_row, family, COL_STR),
    COL(alloc_row, numel, COL_U64),      COL(alloc_row, total_bits, COL_U64),
    COL(alloc_row, bits_per_weight, COL_F64), COL(alloc_row, err_term, COL_F64),
    COL(alloc_row, norm_term, COL_F64),  COL(alloc_row, value, COL_F64),
    COL(alloc_row, fixed, COL_I32),
};

void fr_store_allocation_name(double budget, char *buf, size_t size)
{
    snprintf(buf, size, "allocation_%g", budget);
}

fr_status fr_store_allocation(fr_store *s, const fr_allocation *a, const fr_alloc_problem *prob,
                              const fr_selection *selection, const char *command_line,
                              fr_error *err)
{
    fr_status st = FR_OK;
    char name[128];
    fr_store_allocation_name(a->budget, name, sizeof name);
    alloc_row *rows = calloc(a->n_choices + 1, sizeof *rows);
    hid_t g = -1;
    if (!rows) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    fr_metric shown = a->metric == FR_METRIC_SQNR_DB ? FR_METRIC_REL_ERR : a->metric;
    for (size_t i = 0; i < a->n_choices; i++) {
        const fr_alloc_choice *ch = &a->choices[i];
        const fr_ds_tensor *t = &prob->ds->tensors[ch->tensor];
        const fr_ds_config *c = &prob->ds->configs[ch->config];
        rows[i] = (alloc_row){t->name, t->cls, c->name, c->family, ch->numel, ch->total_bits,
                              (double)ch->total_bits / (double)ch->numel, ch->err_term,
                              ch->norm_term, fr_metric_value(shown, ch->err_term, ch->norm_term),
                              ch->fixed};
    }
    if ((g = fresh_group(s, name, err)) < 0) {
        st = err ? err->code : FR_E_OUTPUT;
        goto done;
    }
    if (!attrs_common(g, "allocation", a->metric, selection, command_line) ||
        !attr_f64(g, "budget", a->budget) || !attr_u64(g, "capacity_bits", a->capacity_bits) ||
        !attr_u64(g, "total_bits", a->total_bits) || !attr_u64(g, "numel", a->numel) ||
        !attr_f64(g, "bits_per_weight", a->bits_per_weight) ||
        !attr_f64(g, "value", a->value) || !attr_f64(g, "lower_bound", a->lower_bound_value) ||
        !attr_f64(g, "err_sum", a->err_sum) || !attr_f64(g, "norm_sum", a->norm_sum) ||
        !attr_u64(g, "optimal", (uint64_t)a->stats.optimal) ||
        !attr_u64(g, "search_states", a->stats.nodes) ||
        !attr_str(g, "objective", fr_alloc_objective_name(prob)) ||
        !attr_str(g, "sensitivity_source",
                  prob->objective == FR_OBJECTIVE_SENSITIVITY ? prob->sensitivity_source : "")) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot write attributes of %s in '%s'", name, s->path);
        goto done;
    }
    st = write_table(s, g, "tensors", rows, a->n_choices, sizeof *rows, alloc_cols,
                     N_COLS(alloc_cols), err);
done:
    if (g >= 0)
        H5Gclose(g);
    free(rows);
    return st;
}

/* ---- the mixed-precision curve ---- */

static const col_desc curve_cols[] = {
    COL(fr_curve_point, budget, COL_F64),     COL(fr_curve_point, bits_per_weight, COL_F64),
    COL(fr_curve_point, total_bits, COL_U64), COL(fr_curve_point, err_sum, COL_F64),
    COL(fr_curve_point, value, COL_F64),      COL(fr_curve_point, rel_err, COL_F64),
    {"lower_bound", offsetof(fr_curve_point, lower_bound_value), COL_F64},
    {"optimal", offsetof(fr_curve_point, optimal), COL_I32},
};

fr_status fr_store_mixed_curve(fr_store *s, const fr_mixed_curve *c,
                               const fr_selection *selection, const char *command_line,
                               fr_error *err)
{
    fr_status st = FR_OK;
    hid_t g = fresh_group(s, "mixed_curve", err);
    if (g < 0)
        return err ? err->code : FR_E_OUTPUT;
    if (!attrs_common(g, "mixed_curve", c->metric, selection, command_line) ||
        !attr_u64(g, "numel", c->numel) || !attr_u64(g, "n_tensors", c->n_tensors) ||
        !attr_f64(g, "norm_sum", c->norm_sum)) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot write attributes of mixed_curve in '%s'", s->path);
        goto done;
    }
    st = write_table(s, g, "points", c->points, c->n_points, sizeof *c->points, curve_cols,
                     N_COLS(curve_cols), err);
done:
    H5Gclose(g);
    return st;
}

/* A numeric attribute, converted to mem_type. */
static int read_attr_num(hid_t obj, const char *name, hid_t mem_type, void *v)
{
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0)
        return 0;
    int ok = H5Aread(a, mem_type, v) >= 0;
    H5Aclose(a);
    return ok;
}

/* A string attribute (variable or fixed length) into buf. */
static int read_attr_str(hid_t obj, const char *name, char *buf, size_t size)
{
    int ok = 0;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT), ftype = -1, mtype = -1;
    if (a < 0)
        return 0;
    ftype = H5Aget_type(a);
    if (ftype < 0 || H5Tget_class(ftype) != H5T_STRING)
        goto done;
    if (H5Tis_variable_str(ftype) > 0) {
        char *v = NULL;
        mtype = ds_string_type();
        if (mtype >= 0 && H5Aread(a, mtype, &v) >= 0 && v) {
            snprintf(buf, size, "%s", v);
            H5free_memory(v);
            ok = 1;
        }
    } else {
        size_t n = H5Tget_size(ftype);
        char *v = calloc(n + 1, 1);
        mtype = H5Tcopy(H5T_C_S1);
        if (v && mtype >= 0 && H5Tset_size(mtype, n + 1) >= 0 && H5Aread(a, mtype, v) >= 0) {
            snprintf(buf, size, "%s", v);
            ok = 1;
        }
        free(v);
    }
done:
    if (mtype >= 0)
        H5Tclose(mtype);
    if (ftype >= 0)
        H5Tclose(ftype);
    H5Aclose(a);
    return ok;
}

/* Opens the dataset at path read-only and, when it has one, its group
 * STORE_ROOT/name (*g -1 and FR_OK when absent). The caller closes both. */
static fr_status open_stored(const char *path, const char *name, hid_t *file, hid_t *g,
                             fr_error *err)
{
    char full[256];
    snprintf(full, sizeof full, STORE_ROOT "/%s", name);
    *g = -1;
    hid_t fapl = ds_fapl();
    *file = fapl < 0 ? H5I_INVALID_HID : H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (fapl >= 0)
        H5Pclose(fapl);
    if (*file < 0)
        return fr_fail(err, FR_E_IO, "cannot open '%s' as HDF5", path);
    if (H5Lexists(*file, STORE_ROOT, H5P_DEFAULT) > 0 && H5Lexists(*file, full, H5P_DEFAULT) > 0 &&
        (*g = H5Gopen2(*file, full, H5P_DEFAULT)) < 0)
        return fr_fail(err, FR_E_FORMAT, "'%s': %s cannot be opened", path, full);
    return FR_OK;
}

/* Closes what a reader opened (a negative id: not open) and restores
 * HDF5's error printing. */
static void close_stored(hid_t *ids, size_t n, H5E_auto2_t old_func, void *old_data)
{
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0)
            continue;
        switch (H5Iget_type(ids[i])) {
        case H5I_DATATYPE: H5Tclose(ids[i]); break;
        case H5I_DATASPACE: H5Sclose(ids[i]); break;
        case H5I_DATASET: H5Dclose(ids[i]); break;
        case H5I_GROUP: H5Gclose(ids[i]); break;
        case H5I_FILE: H5Fclose(ids[i]); break;
        default: break;
        }
    }
    hdf5_restore(old_func, old_data);
}

fr_status fr_store_read_mixed_curve(const char *path, fr_mixed_curve *out, int *found,
                                    fr_error *err)
{
    fr_status st = FR_OK;
    H5E_auto2_t old_func;
    void *old_data;
    hid_t file = -1, g = -1, dset = -1, space = -1, type = -1;
    memset(out, 0, sizeof *out);
    *found = 0;
    hdf5_quiet(&old_func, &old_data);
    char metric[64] = "";
    if ((st = open_stored(path, "mixed_curve", &file, &g, err)) != FR_OK || g < 0)
        goto done;
    if (g < 0 || !read_attr_str(g, "metric", metric, sizeof metric) ||
        fr_metric_from_name(metric) < 0 ||
        !read_attr_num(g, "numel", H5T_NATIVE_UINT64, &out->numel) ||
        !read_attr_num(g, "norm_sum", H5T_NATIVE_DOUBLE, &out->norm_sum)) {
        st = fr_fail(err, FR_E_FORMAT, "'%s': " STORE_ROOT "/mixed_curve is malformed", path);
        goto done;
    }
    uint64_t n_tensors = 0;
    read_attr_num(g, "n_tensors", H5T_NATIVE_UINT64, &n_tensors);
    out->n_tensors = (size_t)n_tensors;
    out->metric = (fr_metric)fr_metric_from_name(metric);
    dset = H5Dopen2(g, "points", H5P_DEFAULT);
    hsize_t dims[1] = {0};
    if (dset < 0 || (space = H5Dget_space(dset)) < 0 || H5Sget_simple_extent_ndims(space) != 1 ||
        H5Sget_simple_extent_dims(space, dims, NULL) < 0) {
        st = fr_fail(err, FR_E_FORMAT, "'%s': " STORE_ROOT "/mixed_curve/points is malformed", path);
        goto done;
    }
    out->points = calloc(dims[0] + 1, sizeof *out->points);
    if (!out->points) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    type = compound_type(sizeof *out->points, curve_cols, N_COLS(curve_cols), -1);
    if (type < 0 || (dims[0] && H5Dread(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->points) < 0)) {
        st = fr_fail(err, FR_E_FORMAT, "'%s': cannot read " STORE_ROOT "/mixed_curve/points", path);
        goto done;
    }
    out->n_points = (size_t)dims[0];
    *found = 1;
done:
    close_stored((hid_t[]){type, space, dset, g, file}, 5, old_func, old_data);
    if (st != FR_OK) {
        fr_mixed_curve_free(out);
        *found = 0;
    }
    return st;
}

/* ---- measured sensitivities: /frontier/sensitivity ---- */

typedef struct sens_row {
    const char *tensor;
    double alpha, residual;
} sens_row;

static const col_desc sens_cols[] = {
    COL(sens_row, tensor, COL_STR),
    COL(sens_row, alpha, COL_F64),
    COL(sens_row, residual, COL_F64),
};

fr_status fr_store_sensitivity(fr_store *s, const fr_stored_sensitivity *sens,
                               const char *command_line, fr_error *err)
{
    hid_t g = fresh_group(s, "sensitivity", err);
    if (g < 0)
        return FR_E_OUTPUT;
    fr_status st = FR_OK;
    sens_row *rows = calloc(sens->n + 1, sizeof *rows);
    if (!rows) {
        H5Gclose(g);
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < sens->n; i++)
        rows[i] = (sens_row){sens->names[i], sens->alpha[i], sens->residual[i]};
    time_t now = time(NULL);
    struct tm tmv;
    char created[32] = "";
    if (gmtime_r(&now, &tmv))
        strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    if (!attr_str(g, "kind", "sensitivity") || !attr_str(g, "model", sens->model) ||
        !attr_str(g, "text", sens->text) || !attr_str(g, "perturbation", sens->perturbation) ||
        !attr_str(g, "engine", sens->engine) || !attr_str(g, "command_line", command_line) ||
        !attr_str(g, "created", created) || !attr_str(g, "tool_version", FRONTIER_VERSION))
        st = fr_fail(err, FR_E_OUTPUT, "cannot write attributes of " STORE_ROOT
                     "/sensitivity in '%s'", s->path);
    if (st == FR_OK)
        st = write_table(s, g, "tensors", rows, sens->n, sizeof *rows, sens_cols, N_COLS(sens_cols),
                         err);
    free(rows);
    H5Gclose(g);
    return st;
}

/* The row of the dataset tensor a stored name denotes: the same name, or
 * (a name without ".weight") that name with it. -1: none. */
static long ds_tensor_of(const fr_dataset *ds, const char *name)
{
    size_t l = strlen(name);
    for (size_t t = 0; t < ds->n_tensors; t++) {
        const char *n = ds->tensors[t].name;
        if (!strcmp(n, name) ||
            (!strncmp(n, name, l) && !strcmp(n + l, ".weight")))
            return (long)t;
    }
    return -1;
}

fr_status fr_store_read_sensitivity(const char *path, const fr_dataset *ds, double *alpha,
                                    size_t *n_found, char *text, size_t text_len,
                                    fr_error *err)
{
    fr_status st = FR_OK;
    H5E_auto2_t old_func;
    void *old_data;
    hid_t file = -1, g = -1, dset = -1, space = -1, type = -1, str = -1;
    sens_row *rows = NULL;
    hsize_t dims[1] = {0};
    *n_found = 0;
    if (text_len)
        text[0] = '\0';
    for (size_t t = 0; t < ds->n_tensors; t++)
        alpha[t] = NAN;
    hdf5_quiet(&old_func, &old_data);
    if ((st = open_stored(path, "sensitivity", &file, &g, err)) != FR_OK || g < 0)
        goto done;
    dset = H5Dopen2(g, "tensors", H5P_DEFAULT);
    if (dset < 0 || (space = H5Dget_space(dset)) < 0 || H5Sget_simple_extent_ndims(space) != 1 ||
        H5Sget_simple_extent_dims(space, dims, NULL) < 0) {
        st = fr_fail(err, FR_E_FORMAT, "'%s': " STORE_ROOT "/sensitivity is malformed", path);
        goto done;
    }
    if (text_len)
        read_attr_str(g, "text", text, text_len);
    rows = calloc(dims[0] + 1, sizeof *rows);
    if (!rows || (str = ds_string_type()) < 0 ||
        (type = compound_type(sizeof *rows, sens_cols, N_COLS(sens_cols), str)) < 0) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    if (dims[0] && H5Dread(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0) {
        st = fr_fail(err, FR_E_FORMAT, "'%s': cannot read " STORE_ROOT "/sensitivity/tensors",
                     path);
        goto done;
    }
    for (hsize_t i = 0; i < dims[0]; i++) {
        long t = rows[i].tensor ? ds_tensor_of(ds, rows[i].tensor) : -1;
        if (t >= 0 && isnan(alpha[t]) && isfinite(rows[i].alpha) && rows[i].alpha >= 0) {
            alpha[t] = rows[i].alpha;
            (*n_found)++;
        }
    }
    if (dims[0])
        H5Dvlen_reclaim(type, space, H5P_DEFAULT, rows);
done:
    free(rows);
    close_stored((hid_t[]){type, str, space, dset, g, file}, 6, old_func, old_data);
    return st;
}
