/* The frontier dataset in memory: reading, building, ordering (docs/dataset.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontier/dataset/dataset.h"
#include "frontier/dataset/dataset_checksum.h"
#include "frontier/dataset/dataset_file.h"
#include "frontier/dataset/dataset_schema.h"

/* ---- growth: arrays hold capacity(n) rows (16, then powers of two) ---- */

static size_t capacity(size_t n)
{
    size_t c = 16;
    while (c < n)
        c *= 2;
    return c;
}

/* Makes room for row n (0-based) in *arr, which holds capacity(n) rows
 * (or is NULL): grows to capacity(n + 1) when row n would not fit. */
static int reserve(void **arr, size_t n, size_t row_size)
{
    if (*arr && n + 1 <= capacity(n))
        return 0;
    size_t cap = capacity(n + 1);
    if (cap > SIZE_MAX / row_size)
        return -1;
    void *grown = realloc(*arr, cap * row_size);
    if (!grown)
        return -1;
    *arr = grown;
    return 0;
}

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

fr_status fr_dataset_set_string(char **field, const char *value, fr_error *err)
{
    char *copy = dup_or_empty(value);
    if (!copy)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    free(*field);
    *field = copy;
    return FR_OK;
}

/* The string columns of a row, located through the schema's field table
 * (dataset_schema.h), so a new column needs no change here. */
static char **row_string(void *row, const ds_field *field)
{
    return (char **)((char *)row + field->offset);
}

/* Appends a copy of row to a table whose rows are described by table;
 * its strings are duplicated (NULL becomes ""). */
static fr_status add_row(void **rows, size_t *n, const void *row, const ds_table *table,
                         fr_error *err)
{
    if (reserve(rows, *n, table->row_size) != 0)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    void *copy = (char *)*rows + *n * table->row_size;
    memcpy(copy, row, table->row_size);
    for (size_t f = 0; f < table->n_fields; f++) {
        if (table->fields[f].type != DS_STR)
            continue;
        char **s = row_string(copy, &table->fields[f]);
        if (!(*s = dup_or_empty(*s))) {
            for (size_t g = 0; g < f; g++)
                if (table->fields[g].type == DS_STR)
                    free(*row_string(copy, &table->fields[g]));
            return fr_fail(err, FR_E_NOMEM, "out of memory");
        }
    }
    (*n)++;
    return FR_OK;
}

static void free_rows(void *rows, size_t n, const ds_table *table)
{
    for (size_t r = 0; r < n; r++)
        for (size_t f = 0; f < table->n_fields; f++)
            if (table->fields[f].type == DS_STR)
                free(*row_string((char *)rows + r * table->row_size, &table->fields[f]));
    free(rows);
}

fr_status fr_dataset_add_source(fr_dataset *ds, const fr_ds_source *row, fr_error *err)
{
    return add_row((void **)&ds->sources, &ds->n_sources, row, &ds_sources_table, err);
}

fr_status fr_dataset_add_tensor(fr_dataset *ds, const fr_ds_tensor *row, fr_error *err)
{
    return add_row((void **)&ds->tensors, &ds->n_tensors, row, &ds_tensors_table, err);
}

size_t fr_dataset_diagonal_out_tensors(const fr_dataset *ds)
{
    size_t n = 0;
    for (size_t t = 0; t < ds->n_tensors; t++)
        n += fr_ds_tensor_out_diagonal(&ds->tensors[t]);
    return n;
}

fr_status fr_dataset_add_config(fr_dataset *ds, const fr_ds_config *row, fr_error *err)
{
    return add_row((void **)&ds->configs, &ds->n_configs, row, &ds_configs_table, err);
}

fr_status fr_dataset_add_skipped(fr_dataset *ds, const fr_ds_skipped *row, fr_error *err)
{
    return add_row((void **)&ds->skipped, &ds->n_skipped, row, &ds_skipped_table, err);
}

/* Results have no string column in memory (device is char[16]): not
 * through the schema's table, whose rows are ds_result_io. */
fr_status fr_dataset_add_result(fr_dataset *ds, const fr_ds_result *row, fr_error *err)
{
    if (reserve((void **)&ds->results, ds->n_results, sizeof *ds->results) != 0)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    fr_ds_result *r = &ds->results[ds->n_results++];
    *r = *row;
    r->device[sizeof r->device - 1] = '\0';
    return FR_OK;
}

fr_status fr_dataset_add_expert_result(fr_dataset *ds, const fr_ds_result *row, uint32_t expert,
                                       fr_error *err)
{
    if (reserve((void **)&ds->expert_results, ds->n_expert_results, sizeof *ds->expert_results) != 0)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    fr_ds_expert_result *r = &ds->expert_results[ds->n_expert_results++];
    r->row = *row;
    r->row.device[sizeof r->row.device - 1] = '\0';
    r->expert = expert;
    return FR_OK;
}

void fr_dataset_free(fr_dataset *ds)
{
    if (!ds)
        return;
    free(ds->format);
    free(ds->tool_version);
    free(ds->created);
    free(ds->command_line);
    free(ds->host);
    free(ds->devices);
    free_rows(ds->sources, ds->n_sources, &ds_sources_table);
    free_rows(ds->tensors, ds->n_tensors, &ds_tensors_table);
    free_rows(ds->configs, ds->n_configs, &ds_configs_table);
    free_rows(ds->skipped, ds->n_skipped, &ds_skipped_table);
    free(ds->results);
    free(ds->expert_results);
    memset(ds, 0, sizeof *ds);
}

const fr_ds_tensor *fr_dataset_tensor(const fr_dataset *ds, uint32_t tensor_id)
{
    if (tensor_id < ds->n_tensors && ds->tensors[tensor_id].tensor_id == tensor_id)
        return &ds->tensors[tensor_id];
    for (size_t i = 0; i < ds->n_tensors; i++)
        if (ds->tensors[i].tensor_id == tensor_id)
            return &ds->tensors[i];
    return NULL;
}

const fr_ds_config *fr_dataset_config(const fr_dataset *ds, uint32_t config_id)
{
    if (config_id < ds->n_configs && ds->configs[config_id].config_id == config_id)
        return &ds->configs[config_id];
    for (size_t i = 0; i < ds->n_configs; i++)
        if (ds->configs[i].config_id == config_id)
            return &ds->configs[i];
    return NULL;
}

static int cmp_result(const void *a, const void *b)
{
    const fr_ds_result *x = a, *y = b;
    if (x->tensor_id != y->tensor_id)
        return x->tensor_id < y->tensor_id ? -1 : 1;
    if (x->config_id != y->config_id)
        return x->config_id < y->config_id ? -1 : 1;
    return 0;
}

static int cmp_expert_result(const void *a, const void *b)
{
    const fr_ds_expert_result *x = a, *y = b;
    int c = cmp_result(&x->row, &y->row);
    if (c)
        return c;
    return x->expert < y->expert ? -1 : x->expert > y->expert;
}

static int cmp_skipped(const void *a, const void *b)
{
    const fr_ds_skipped *x = a, *y = b;
    if (x->source_id != y->source_id)
        return x->source_id < y->source_id ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return strcmp(x->config, y->config);
}

void fr_dataset_sort(fr_dataset *ds)
{
    if (ds->n_results > 1)
        qsort(ds->results, ds->n_results, sizeof *ds->results, cmp_result);
    if (ds->n_expert_results > 1)
        qsort(ds->expert_results, ds->n_expert_results, sizeof *ds->expert_results,
              cmp_expert_result);
    if (ds->n_skipped > 1)
        qsort(ds->skipped, ds->n_skipped, sizeof *ds->skipped, cmp_skipped);
}

/* ---- reading ---- */

typedef struct reader {
    const char *path;
    hid_t file;
    hid_t dxpl; /* vlen strings allocated with malloc, so free() releases them */
} reader;

/* The object header of name (relative to loc) is version 2, whose chunks
 * carry checksums that HDF5 verifies when it loads them (docs/security.md,
 * "Datasets written by other programs"): 1 yes, 0 no (version 1), -1
 * unreadable. Asked by name, before the object is opened: opening decodes
 * its messages (type, space, layout), this reads only the header. */
static int header_checksummed(hid_t loc, const char *name)
{
#if H5_VERSION_GE(1, 12, 0)
    H5O_native_info_t info;
    if (H5Oget_native_info_by_name(loc, name, &info, H5O_NATIVE_INFO_HDR, H5P_DEFAULT) < 0)
        return -1;
#else
    H5O_info_t info;
    if (H5Oget_info_by_name2(loc, name, &info, H5O_INFO_HDR, H5P_DEFAULT) < 0)
        return -1;
#endif
    return info.hdr.version >= 2;
}

static fr_status unchecksummed(const char *path, const char *what, fr_error *err)
{
    return fr_fail(err, FR_E_FORMAT,
                   "'%s': %s has no metadata checksums (an HDF5 file written with the "
                   "earliest file format, as h5py and h5repack do by default); frontier reads "
                   "datasets in the checksummed format it writes: convert it with "
                   "`h5repack --latest IN OUT` (or write it with h5py's libver=('v108', 'v110'))",
                   path, what);
}

/* The "checksum" attribute of obj into buf: 1 when read, 0 when absent,
 * -1 when present but not a short string. */
static int read_checksum(hid_t obj, char buf[DS_CHECKSUM_TEXT])
{
    int rc = -1;
    buf[0] = '\0';
    htri_t exists = H5Aexists(obj, DS_CHECKSUM_ATTR);
    if (exists == 0)
        return 0;
    if (exists < 0)
        return -1;
    hid_t attr = H5Aopen(obj, DS_CHECKSUM_ATTR, H5P_DEFAULT), type = H5I_INVALID_HID;
    hid_t mem = H5I_INVALID_HID;
    char *value = NULL;
    if (attr < 0 || (type = H5Aget_type(attr)) < 0 || H5Tget_class(type) != H5T_STRING ||
        H5Tis_variable_str(type) <= 0 || (mem = ds_string_type()) < 0 ||
        H5Aread(attr, mem, &value) < 0)
        goto done;
    if (value && strlen(value) < DS_CHECKSUM_TEXT) {
        memcpy(buf, value, strlen(value) + 1);
        rc = 1;
    }
done:
    if (value)
        H5free_memory(value);
    if (mem >= 0)
        H5Tclose(mem);
    if (type >= 0)
        H5Tclose(type);
    if (attr >= 0)
        H5Aclose(attr);
    return rc;
}

static fr_status damaged(const reader *rd, const char *what, fr_error *err)
{
    return fr_fail(err, FR_E_FORMAT,
                   "'%s': %s does not match its checksum (the file is damaged or was changed "
                   "by another program)",
                   rd->path, what);
}

static void *vlen_alloc(size_t size, void *info)
{
    (void)info;
    return malloc(size ? size : 1);
}

static void vlen_free(void *p, void *info)
{
    (void)info;
    free(p);
}

/* Reads a string attribute (variable or fixed length) into a malloc'd copy. */
static fr_status read_string_attr(const reader *rd, const char *name, char **out, int required,
                                  fr_error *err)
{
    fr_status st = FR_OK;
    hid_t attr = H5I_INVALID_HID, type = H5I_INVALID_HID, mem = H5I_INVALID_HID;
    hid_t space = H5I_INVALID_HID;
    *out = NULL;
    if (H5Aexists(rd->file, name) <= 0) {
        if (required)
            return fr_fail(err, FR_E_FORMAT, "'%s' is not a frontier dataset: no '%s' attribute",
                           rd->path, name);
        *out = strdup("");
        return *out ? FR_OK : fr_fail(err, FR_E_NOMEM, "out of memory");
    }
    attr = H5Aopen(rd->file, name, H5P_DEFAULT);
    type = attr >= 0 ? H5Aget_type(attr) : H5I_INVALID_HID;
    space = attr >= 0 ? H5Aget_space(attr) : H5I_INVALID_HID;
    if (type < 0 || space < 0 || H5Tget_class(type) != H5T_STRING ||
        H5Sget_simple_extent_npoints(space) != 1) {
        st = fr_fail(err, FR_E_FORMAT, "'%s': root attribute '%s' is not a string", rd->path,
                     name);
        goto done;
    }
    if (H5Tis_variable_str(type) > 0) {
        char *value = NULL;
        mem = ds_string_type();
        if (mem < 0 || H5Aread(attr, mem, &value) < 0) {
            st = fr_fail(err, FR_E_FORMAT, "'%s': cannot read root attribute '%s'", rd->path, name);
            goto done;
        }
        *out = strdup(value ? value : "");
        /* HDF5 allocated value with its default (malloc) manager */
        H5free_memory(value);
    } else {
        size_t size = H5Tget_size(type);
        char *buf = calloc(size + 1, 1);
        mem = H5Tcopy(type);
        if (!buf || mem < 0 || H5Aread(attr, mem, buf) < 0) {
            free(buf);
            st = fr_fail(err, FR_E_FORMAT, "'%s': cannot read root attribute '%s'", rd->path, name);
            goto done;
        }
        *out = buf;
    }
    if (!*out)
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
done:
    if (mem >= 0)
        H5Tclose(mem);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (attr >= 0)
        H5Aclose(attr);
    return st;
}

static fr_status read_int_attr(const reader *rd, const char *name, int64_t *out, fr_error *err)
{
    fr_status st = FR_OK;
    hid_t attr = H5I_INVALID_HID, type = H5I_INVALID_HID;
    if (H5Aexists(rd->file, name) <= 0)
        return fr_fail(err, FR_E_FORMAT, "'%s' is not a frontier dataset: no '%s' attribute",
                       rd->path, name);
    attr = H5Aopen(rd->file, name, H5P_DEFAULT);
    type = attr >= 0 ? H5Aget_type(attr) : H5I_INVALID_HID;
    if (type < 0 || H5Tget_class(type) != H5T_INTEGER ||
        H5Aread(attr, H5T_NATIVE_INT64, out) < 0)
        st = fr_fail(err, FR_E_FORMAT, "'%s': root attribute '%s' is not an integer", rd->path,
                     name);
    if (type >= 0)
        H5Tclose(type);
    if (attr >= 0)
        H5Aclose(attr);
    return st;
}

/* Reads table into a freshly allocated array of capacity(n) rows of the
 * in-memory struct. Every field of the schema must exist in the file
 * (extra fields are ignored: newer files stay readable), except optional
 * ones, which read as 0 when absent (files from before they existed). */
static fr_status read_table(const reader *rd, const ds_table *table, void **rows_out,
                            size_t *n_out, fr_error *err)
{
    fr_status st = FR_OK;
    hid_t dset = H5I_INVALID_HID, ftype = H5I_INVALID_HID, space = H5I_INVALID_HID;
    hid_t mtype = H5I_INVALID_HID;
    void *rows = NULL;
    *rows_out = NULL;
    *n_out = 0;
    if (H5Lexists(rd->file, table->name, H5P_DEFAULT) <= 0)
        return fr_fail(err, FR_E_FORMAT, "'%s' is not a frontier dataset: no /%s table", rd->path,
                       table->name);
    int checked = header_checksummed(rd->file, table->name);
    if (checked != 1) {
        char what[160];
        snprintf(what, sizeof what, "the object header of /%s", table->name);
        st = checked < 0 ? fr_fail(err, FR_E_FORMAT, "'%s': %s is damaged", rd->path, what)
                         : unchecksummed(rd->path, what, err);
        goto done;
    }
    dset = H5Dopen2(rd->file, table->name, H5P_DEFAULT);
    ftype = dset >= 0 ? H5Dget_type(dset) : H5I_INVALID_HID;
    space = dset >= 0 ? H5Dget_space(dset) : H5I_INVALID_HID;
    if (ftype < 0 || space < 0 || H5Tget_class(ftype) != H5T_COMPOUND ||
        H5Sget_simple_extent_ndims(space) != 1) {
        st = fr_fail(err, FR_E_FORMAT, "'%s': /%s is not a table of records", rd->path,
                     table->name);
        goto done;
    }
    uint64_t absent = 0; /* optional fields the file lacks: read as 0 */
    for (size_t i = 0; i < table->n_fields; i++) {
        int idx = H5Tget_member_index(ftype, table->fields[i].name);
        if (idx < 0 && ds_field_optional(&table->fields[i])) {
            absent |= (uint64_t)1 << i;
            continue;
        }
        H5T_class_t want = table->fields[i].type == DS_STR   ? H5T_STRING
                           : table->fields[i].type == DS_F64 ? H5T_FLOAT
                                                             : H5T_INTEGER;
        hid_t member = idx >= 0 ? H5Tget_member_type(ftype, (unsigned)idx) : H5I_INVALID_HID;
        H5T_class_t cls = member >= 0 ? H5Tget_class(member) : H5T_NO_CLASS;
        int vlen_ok = member >= 0 && (want != H5T_STRING || H5Tis_variable_str(member) > 0);
        if (member >= 0)
            H5Tclose(member);
        if (idx < 0) {
            st = fr_fail(err, FR_E_FORMAT, "'%s': /%s has no field '%s'", rd->path, table->name,
                         table->fields[i].name);
            goto done;
        }
        if (cls != want || !vlen_ok) {
            st = fr_fail(err, FR_E_FORMAT, "'%s': field '%s' of /%s has the wrong type", rd->path,
                         table->fields[i].name, table->name);
            goto done;
        }
    }
    hssize_t n = H5Sget_simple_extent_npoints(space);
    if (n < 0) {
        st = fr_fail(err, FR_E_FORMAT, "'%s': cannot size /%s", rd->path, table->name);
        goto done;
    }
    size_t cap = capacity((size_t)n);
    if (cap > SIZE_MAX / table->row_size || !(rows = calloc(cap, table->row_size))) {
        st = fr_fail(err, FR_E_NOMEM, "'%s': cannot allocate /%s (%lld rows)", rd->path,
                     table->name, (long long)n);
        goto done;
    }
    mtype = ds_table_type_subset(table, 0, absent);
    if (mtype < 0) {
        st = fr_fail(err, FR_E_FAIL, "cannot build the type of /%s", table->name);
        goto done;
    }
    /* Fletcher32 is verified here, by HDF5, chunk by chunk */
    if (n > 0 && H5Dread(dset, mtype, H5S_ALL, H5S_ALL, rd->dxpl, rows) < 0) {
        char h5msg[256];
        ds_h5_message(h5msg, sizeof h5msg);
        st = fr_fail(err, FR_E_FORMAT, "'%s': cannot read /%s: %s", rd->path, table->name, h5msg);
        *n_out = (size_t)n; /* strings read so far are freed by the caller */
        *rows_out = rows;
        rows = NULL;
        goto done;
    }
    /* strings HDF5 could not fill (NULL in the file) become "" so callers
     * never see NULL */
    for (size_t r = 0; r < (size_t)n; r++)
        for (size_t f = 0; f < table->n_fields; f++)
            if (table->fields[f].type == DS_STR) {
                char **s = row_string((char *)rows + r * table->row_size, &table->fields[f]);
                if (!*s && !(*s = strdup(""))) {
                    st = fr_fail(err, FR_E_NOMEM, "out of memory");
                    *n_out = (size_t)n; /* so the caller frees what was read */
                    *rows_out = rows;
                    rows = NULL;
                    goto done;
                }
            }
    *rows_out = rows;
    *n_out = (size_t)n;
    rows = NULL;
    /* the strings (HDF5's global heap) and everything else, as read */
    char stored[DS_CHECKSUM_TEXT], computed[DS_CHECKSUM_TEXT];
    int has = read_checksum(dset, stored);
    if (has < 0) {
        st = fr_fail(err, FR_E_FORMAT, "'%s': /%s has an unreadable checksum attribute", rd->path,
                     table->name);
        goto done;
    }
    if (has > 0) {
        ds_hash h;
        ds_hash_init(&h);
        ds_hash_rows(&h, table, *rows_out, *n_out);
        ds_hash_text(&h, computed);
        if (strcmp(stored, computed) != 0) {
            char what[64];
            snprintf(what, sizeof what, "/%s", table->name);
            st = damaged(rd, what, err);
        }
    }
done:
    free(rows);
    if (mtype >= 0)
        H5Tclose(mtype);
    if (space >= 0)
        H5Sclose(space);
    if (ftype >= 0)
        H5Tclose(ftype);
    if (dset >= 0)
        H5Dclose(dset);
    return st;
}

/*
 * HDF5 keeps variable-length strings in global heap collections, which
 * carry no checksum, and HDF5 1.10 trusts the object sizes in them (a
 * damaged size makes H5Dread copy past the collection: a crash, found by
 * tests/reliability/corruption.py). So every collection in the file is
 * checked the way HDF5 will walk it (HDF5 File Format Specification,
 * III.E; H5HGcache.c) before HDF5 reads anything: "GCOL", version 1, its
 * size, then objects (index 2 bytes, references 2, reserved 4, size 8,
 * data padded to 8; index 0 is free space whose size covers its header),
 * each inside the collection. The bytes "GCOL" elsewhere (inside data)
 * can only cause a refusal, never a wrong number.
 */
static int global_heaps_sound(const unsigned char *p, size_t n)
{
    for (size_t at = 0; at + 16 <= n;) {
        const unsigned char *hit = memmem(p + at, n - at, "GCOL", 4);
        if (!hit)
            return 1;
        size_t start = (size_t)(hit - p);
        if (start + 16 > n || p[start + 4] != 1)
            return 0;
        uint64_t size = 0;
        for (int i = 7; i >= 0; i--)
            size = size << 8 | p[start + 8 + i];
        if (size < 16 || size > n - start)
            return 0;
        size_t end = start + (size_t)size;
        for (size_t obj = start + 16; obj < end;) {
            if (obj + 16 > end)
                break; /* too small for an object header: free space */
            unsigned idx = (unsigned)p[obj] | (unsigned)p[obj + 1] << 8;
            uint64_t len = 0;
            for (int i = 7; i >= 0; i--)
                len = len << 8 | p[obj + 8 + i];
            uint64_t need = idx > 0 ? (len > UINT64_MAX - 23 ? UINT64_MAX : 16 + ((len + 7) & ~(uint64_t)7))
                                    : len;
            if (need < 16 || need > end - obj)
                return 0;
            obj += (size_t)need;
        }
        at = end;
    }
    return 1;
}

/* The version of the file's superblock (HDF5 File Format Specification,
 * II.A: the signature at offset 0, 512, 1024, 2048, ..., the version byte
 * after it), or -1 when there is none. */
static int superblock_version(const unsigned char *p, size_t n)
{
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    for (size_t at = 0; at + 9 <= n; at = at ? at * 2 : 512)
        if (memcmp(p + at, sig, sizeof sig) == 0)
            return p[at + 8];
    return -1;
}

static fr_status check_global_heaps(const char *path, fr_error *err)
{
    char ebuf[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        if (fd >= 0)
            close(fd);
        return fr_fail(err, FR_E_IO, "cannot open '%s': %s", path,
                       fr_errno_text(errno, ebuf, sizeof ebuf));
    }
    size_t n = (size_t)sb.st_size;
    void *map = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (n && map == MAP_FAILED)
        return fr_fail(err, FR_E_IO, "cannot read '%s': %s", path,
                       fr_errno_text(errno, ebuf, sizeof ebuf));
    int sound = n ? global_heaps_sound(map, n) : 1;
    int superblock = n ? superblock_version(map, n) : -1;
    if (n)
        munmap(map, n);
    if (superblock >= 0 && superblock < 2)
        return unchecksummed(path, "its superblock (version 0 or 1)", err);
    if (!sound)
        return fr_fail(err, FR_E_FORMAT,
                       "'%s': a global heap collection (the tables' strings) is damaged", path);
    return FR_OK;
}

static fr_status open_reader(const char *path, reader *rd, fr_error *err)
{
    char ebuf[128];
    rd->path = path;
    rd->file = H5I_INVALID_HID;
    rd->dxpl = H5I_INVALID_HID;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return fr_fail(err, FR_E_IO, "cannot open '%s': %s", path,
                       fr_errno_text(errno, ebuf, sizeof ebuf));
    if (S_ISDIR(sb.st_mode))
        return fr_fail(err, FR_E_IO, "cannot open '%s': is a directory", path);
#if H5_VERSION_GE(1, 12, 0)
    htri_t is_hdf5 = H5Fis_accessible(path, H5P_DEFAULT);
#else
    htri_t is_hdf5 = H5Fis_hdf5(path);
#endif
    if (is_hdf5 <= 0)
        return fr_fail(err, FR_E_FORMAT, "'%s' is not an HDF5 file", path);
    fr_status st = check_global_heaps(path, err);
    if (st != FR_OK)
        return st;
    hid_t fapl = ds_fapl();
    if (fapl < 0)
        return fr_fail(err, FR_E_FAIL, "cannot create an hdf5 property list");
    rd->file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (rd->file < 0)
        return fr_fail(err, FR_E_IO, "cannot open '%s' as HDF5", path);
    int checked = header_checksummed(rd->file, ".");
    if (checked < 0)
        return fr_fail(err, FR_E_FORMAT, "'%s': the root group's object header is damaged", path);
    if (checked == 0)
        return unchecksummed(path, "the root group's object header (version 1)", err);
    rd->dxpl = H5Pcreate(H5P_DATASET_XFER);
    if (rd->dxpl < 0 || H5Pset_vlen_mem_manager(rd->dxpl, vlen_alloc, NULL, vlen_free, NULL) < 0)
        return fr_fail(err, FR_E_FAIL, "cannot create an hdf5 property list");
    return FR_OK;
}

static void close_reader(reader *rd)
{
    if (rd->dxpl >= 0)
        H5Pclose(rd->dxpl);
    if (rd->file >= 0)
        H5Fclose(rd->file);
}

/* The root attributes that make a file a frontier dataset; *format is
 * handed back when format is not NULL (so the reader reads it once). */
static fr_status check_format(const reader *rd, char **format, int64_t *version, fr_error *err)
{
    char *value = NULL;
    fr_status st = read_string_attr(rd, "format", &value, 1, err);
    if (st == FR_OK && strcmp(value, DS_FORMAT) != 0)
        st = fr_fail(err, FR_E_FORMAT, "'%s' is not a frontier dataset (format '%s')", rd->path,
                     value);
    if (st == FR_OK)
        st = read_int_attr(rd, "schema_version", version, err);
    if (st == FR_OK && format)
        *format = value;
    else
        free(value);
    return st;
}

fr_status fr_dataset_probe(const char *path, int64_t *schema_version, fr_error *err)
{
    reader rd;
    H5E_auto2_t old_func = NULL;
    void *old_data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    fr_status st = open_reader(path, &rd, err);
    if (st == FR_OK)
        st = check_format(&rd, NULL, schema_version, err);
    close_reader(&rd);
    H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
    return st;
}

/* Converts staged /results rows into fr_ds_result. */
static fr_status convert_results(const char *path, ds_result_io *io, size_t n, fr_dataset *ds,
                                 fr_error *err)
{
    ds->results = calloc(capacity(n), sizeof *ds->results);
    if (!ds->results)
        return fr_fail(err, FR_E_NOMEM, "'%s': cannot allocate /results", path);
    for (size_t i = 0; i < n; i++) {
        fr_ds_result *r = &ds->results[i];
        *r = io[i].row;
        snprintf(r->device, sizeof r->device, "%s", io[i].device ? io[i].device : "");
    }
    ds->n_results = n;
    return FR_OK;
}

/* Converts staged /expert_results rows into fr_ds_expert_result. */
static fr_status convert_expert_results(const char *path, ds_expert_io *io, size_t n,
                                        fr_dataset *ds, fr_error *err)
{
    ds->expert_results = calloc(capacity(n), sizeof *ds->expert_results);
    if (!ds->expert_results)
        return fr_fail(err, FR_E_NOMEM, "'%s': cannot allocate /expert_results", path);
    for (size_t i = 0; i < n; i++) {
        fr_ds_expert_result *r = &ds->expert_results[i];
        r->row = io[i].io.row;
        r->expert = io[i].expert;
        snprintf(r->row.device, sizeof r->row.device, "%s", io[i].io.device ? io[i].io.device : "");
    }
    ds->n_expert_results = n;
    return FR_OK;
}

/* Ids referenced by rows must exist: the analysis commands rely on it. */
static fr_status check_references(const char *path, const fr_dataset *ds, fr_error *err)
{
    for (size_t i = 0; i < ds->n_tensors; i++) {
        int found = 0;
        for (size_t s = 0; s < ds->n_sources && !found; s++)
            found = ds->sources[s].source_id == ds->tensors[i].source_id;
        if (!found)
            return fr_fail(err, FR_E_FORMAT, "'%s': tensor '%s' names source_id %u, absent from /sources",
                           path, ds->tensors[i].name, ds->tensors[i].source_id);
    }
    for (size_t i = 0; i < ds->n_results; i++) {
        if (!fr_dataset_tensor(ds, ds->results[i].tensor_id))
            return fr_fail(err, FR_E_FORMAT, "'%s': /results row %zu names tensor_id %u, absent from /tensors",
                           path, i, ds->results[i].tensor_id);
        if (!fr_dataset_config(ds, ds->results[i].config_id))
            return fr_fail(err, FR_E_FORMAT, "'%s': /results row %zu names config_id %u, absent from /configs",
                           path, i, ds->results[i].config_id);
    }
    for (size_t i = 0; i < ds->n_expert_results; i++) {
        const fr_ds_result *r = &ds->expert_results[i].row;
        if (!fr_dataset_tensor(ds, r->tensor_id) || !fr_dataset_config(ds, r->config_id))
            return fr_fail(err, FR_E_FORMAT,
                           "'%s': /expert_results row %zu names tensor_id %u or config_id %u, "
                           "absent from /tensors or /configs",
                           path, i, r->tensor_id, r->config_id);
    }
    return FR_OK;
}

fr_status fr_dataset_read(const char *path, fr_dataset *ds, fr_error *err)
{
    reader rd;
    void *rows = NULL;
    size_t n = 0;
    memset(ds, 0, sizeof *ds);
    H5E_auto2_t old_func = NULL;
    void *old_data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);

    fr_status st = open_reader(path, &rd, err);
    if (st != FR_OK)
        goto done;
    st = check_format(&rd, &ds->format, &ds->schema_version, err);
    if (st != FR_OK)
        goto done;
    if (ds->schema_version != FR_SCHEMA_VERSION) {
        st = fr_fail(err, FR_E_FORMAT, "'%s' has schema version %lld; this frontier reads version %d",
                     path, (long long)ds->schema_version, FR_SCHEMA_VERSION);
        goto done;
    }
    if ((st = read_string_attr(&rd, "tool_version", &ds->tool_version, 0, err)) != FR_OK ||
        (st = read_string_attr(&rd, "created", &ds->created, 0, err)) != FR_OK ||
        (st = read_string_attr(&rd, "command_line", &ds->command_line, 0, err)) != FR_OK ||
        (st = read_string_attr(&rd, "host", &ds->host, 0, err)) != FR_OK ||
        (st = read_string_attr(&rd, "devices", &ds->devices, 0, err)) != FR_OK)
        goto done;
    {
        char stored[DS_CHECKSUM_TEXT], computed[DS_CHECKSUM_TEXT];
        int has = read_checksum(rd.file, stored);
        if (has < 0) {
            st = fr_fail(err, FR_E_FORMAT, "'%s': the root checksum attribute is unreadable", path);
            goto done;
        }
        if (has > 0) {
            ds_hash h;
            ds_hash_init(&h);
            ds_hash_root(&h, ds);
            ds_hash_text(&h, computed);
            if (strcmp(stored, computed) != 0) {
                st = damaged(&rd, "the root attributes", err);
                goto done;
            }
        }
    }
    st = read_table(&rd, &ds_sources_table, &rows, &n, err);
    ds->sources = rows, ds->n_sources = n;
    if (st != FR_OK)
        goto done;
    st = read_table(&rd, &ds_tensors_table, &rows, &n, err);
    ds->tensors = rows, ds->n_tensors = n;
    if (st != FR_OK)
        goto done;
    st = read_table(&rd, &ds_configs_table, &rows, &n, err);
    ds->configs = rows, ds->n_configs = n;
    if (st != FR_OK)
        goto done;
    st = read_table(&rd, &ds_skipped_table, &rows, &n, err);
    ds->skipped = rows, ds->n_skipped = n;
    if (st != FR_OK)
        goto done;
    st = read_table(&rd, &ds_results_table, &rows, &n, err);
    if (rows) {
        ds_result_io *io = rows;
        if (st == FR_OK)
            st = convert_results(path, io, n, ds, err);
        for (size_t i = 0; i < n; i++)
            free(io[i].device);
        free(io);
    }
    if (st != FR_OK)
        goto done;
    /* /expert_results is optional: only a --split-experts run writes it */
    if (H5Lexists(rd.file, ds_expert_results_table.name, H5P_DEFAULT) > 0) {
        rows = NULL;
        n = 0;
        st = read_table(&rd, &ds_expert_results_table, &rows, &n, err);
        if (rows) {
            ds_expert_io *io = rows;
            if (st == FR_OK)
                st = convert_expert_results(path, io, n, ds, err);
            for (size_t i = 0; i < n; i++)
                free(io[i].io.device);
            free(io);
        }
        if (st != FR_OK)
            goto done;
    }
    st = check_references(path, ds, err);
done:
    close_reader(&rd);
    H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
    if (st != FR_OK)
        fr_dataset_free(ds);
    return st;
}

int ds_has_derived(const char *path)
{
    H5E_auto2_t old_func = NULL;
    void *old_data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    int found = 0;
    hid_t fapl = ds_fapl();
    hid_t file = fapl >= 0 ? H5Fopen(path, H5F_ACC_RDONLY, fapl) : H5I_INVALID_HID;
    if (file >= 0) {
        found = H5Lexists(file, "frontier", H5P_DEFAULT) > 0;
        H5Fclose(file);
    }
    if (fapl >= 0)
        H5Pclose(fapl);
    H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
    return found;
}
