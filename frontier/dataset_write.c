/*
 * Writing a frontier dataset (docs/dataset.md): the whole file goes to
 * "<path>.tmp", is fsync()ed, and replaces path with one rename() (or
 * link() when path must not exist yet). path therefore always holds a
 * complete file: the previous commit or this one, whatever moment a
 * kill -9 or a power loss strikes. docs/dataset.md explains why this was
 * chosen over appending in place (HDF5 1.10 SWMR).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontier/dataset.h"
#include "frontier/dataset_schema.h"

hid_t ds_string_type(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0)
        return H5I_INVALID_HID;
    if (H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0 ||
        H5Tset_strpad(t, H5T_STR_NULLTERM) < 0) {
        H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

hid_t ds_fapl(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0)
        return H5I_INVALID_HID;
    /* file locking where the filesystem supports it, silently none where it
     * does not (NFS), instead of refusing to open */
    if (H5Pset_file_locking(fapl, 1, 1) < 0) {
        H5Pclose(fapl);
        return H5I_INVALID_HID;
    }
    return fapl;
}

static hid_t field_type(ds_field_type type, int for_file)
{
    switch (type) {
    case DS_U32: return H5Tcopy(for_file ? H5T_STD_U32LE : H5T_NATIVE_UINT32);
    case DS_U64: return H5Tcopy(for_file ? H5T_STD_U64LE : H5T_NATIVE_UINT64);
    case DS_I64: return H5Tcopy(for_file ? H5T_STD_I64LE : H5T_NATIVE_INT64);
    case DS_F64: return H5Tcopy(for_file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE);
    case DS_STR: return ds_string_type();
    }
    return H5I_INVALID_HID;
}

hid_t ds_table_type(const ds_table *table, int for_file)
{
    hid_t member[32];
    size_t total = 0;
    hid_t compound = H5I_INVALID_HID;
    size_t made = 0;
    if (table->n_fields > sizeof member / sizeof member[0])
        return H5I_INVALID_HID;
    for (; made < table->n_fields; made++) {
        member[made] = field_type(table->fields[made].type, for_file);
        if (member[made] < 0)
            goto done;
        total += H5Tget_size(member[made]);
    }
    compound = H5Tcreate(H5T_COMPOUND, for_file ? total : table->row_size);
    if (compound < 0)
        goto done;
    size_t offset = 0;
    for (size_t i = 0; i < table->n_fields; i++) {
        size_t at = for_file ? offset : table->fields[i].offset;
        if (H5Tinsert(compound, table->fields[i].name, at, member[i]) < 0) {
            H5Tclose(compound);
            compound = H5I_INVALID_HID;
            goto done;
        }
        offset += H5Tget_size(member[i]);
    }
done:
    for (size_t i = 0; i < made; i++)
        H5Tclose(member[i]);
    return compound;
}

/* The innermost message of the HDF5 error stack. */
typedef struct h5_walk {
    char msg[256];
} h5_walk;

static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    h5_walk *w = data;
    if (n == 0 && e->desc)
        snprintf(w->msg, sizeof w->msg, "%s", e->desc);
    return 0;
}

static void h5_message(char *buf, size_t len)
{
    h5_walk w = {{0}};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, &w);
    snprintf(buf, len, "%s", w.msg[0] ? w.msg : "hdf5 error");
}

/* A scalar root attribute: stored as file_type, value given as mem_type. */
static int write_attr(hid_t loc, const char *name, hid_t file_type, hid_t mem_type,
                      const void *value)
{
    int rc = -1;
    hid_t space = H5Screate(H5S_SCALAR), attr = H5I_INVALID_HID;
    if (space < 0)
        goto done;
    attr = H5Acreate2(loc, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || H5Awrite(attr, mem_type, value) < 0)
        goto done;
    rc = 0;
done:
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
    return rc;
}

static int write_string_attr(hid_t loc, const char *name, const char *value)
{
    hid_t type = ds_string_type();
    const char *v = value ? value : "";
    int rc = type >= 0 ? write_attr(loc, name, type, type, &v) : -1;
    if (type >= 0)
        H5Tclose(type);
    return rc;
}

/* Creates table->name as a chunked, extendible 1-D dataset of n rows.
 * rows is n in-memory rows; for /results (results != NULL, rows NULL) the
 * rows are staged block by block as ds_result_io first. */
static int write_table(hid_t file, const ds_table *table, const void *rows, size_t n,
                       const fr_ds_result *results)
{
    int rc = -1;
    hid_t mem_type = ds_table_type(table, 0), file_type = ds_table_type(table, 1);
    hid_t space = H5I_INVALID_HID, dcpl = H5I_INVALID_HID, dset = H5I_INVALID_HID;
    hid_t mspace = H5I_INVALID_HID;
    ds_result_io *stage = NULL;
    hsize_t dims[1] = {n}, maxdims[1] = {H5S_UNLIMITED}, chunk[1] = {table->chunk_rows};
    if (mem_type < 0 || file_type < 0)
        goto done;
    space = H5Screate_simple(1, dims, maxdims);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (space < 0 || dcpl < 0 || H5Pset_chunk(dcpl, 1, chunk) < 0)
        goto done;
    dset = H5Dcreate2(file, table->name, file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (dset < 0)
        goto done;
    if (n == 0) {
        rc = 0;
        goto done;
    }
    if (!results) {
        if (H5Dwrite(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0)
            goto done;
        rc = 0;
        goto done;
    }
    stage = malloc(sizeof *stage * DS_IO_BLOCK);
    if (!stage)
        goto done;
    for (size_t begin = 0; begin < n; begin += DS_IO_BLOCK) {
        size_t count = n - begin < DS_IO_BLOCK ? n - begin : DS_IO_BLOCK;
        for (size_t i = 0; i < count; i++) {
            const fr_ds_result *r = &results[begin + i];
            /* HDF5 only reads through the device pointer */
            stage[i] = (ds_result_io){.row = *r, .device = (char *)(uintptr_t)r->device};
        }
        hsize_t start[1] = {begin}, cnt[1] = {count};
        mspace = H5Screate_simple(1, cnt, NULL);
        if (mspace < 0 ||
            H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, cnt, NULL) < 0 ||
            H5Dwrite(dset, mem_type, mspace, space, H5P_DEFAULT, stage) < 0)
            goto done;
        H5Sclose(mspace);
        mspace = H5I_INVALID_HID;
    }
    rc = 0;
done:
    free(stage);
    if (mspace >= 0)
        H5Sclose(mspace);
    if (dset >= 0)
        H5Dclose(dset);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (space >= 0)
        H5Sclose(space);
    if (mem_type >= 0)
        H5Tclose(mem_type);
    if (file_type >= 0)
        H5Tclose(file_type);
    return rc;
}

/* Writes the whole dataset into a new HDF5 file at tmp. */
static fr_status write_file(const char *tmp, const char *path, const fr_dataset *ds, fr_error *err)
{
    fr_status st = FR_OK;
    hid_t fapl = ds_fapl(), file = H5I_INVALID_HID;
    char h5msg[256];
    if (fapl < 0) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': hdf5 property list", path);
        goto done;
    }
    file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (file < 0) {
        h5_message(h5msg, sizeof h5msg);
        st = fr_fail(err, FR_E_OUTPUT, "cannot create '%s': %s", tmp, h5msg);
        goto done;
    }
    if (write_string_attr(file, "format", DS_FORMAT) < 0 ||
        write_attr(file, "schema_version", H5T_STD_I64LE, H5T_NATIVE_INT64,
                   &(int64_t){FR_SCHEMA_VERSION}) < 0 ||
        write_string_attr(file, "tool_version", ds->tool_version ? ds->tool_version : FRONTIER_VERSION) < 0 ||
        write_string_attr(file, "created", ds->created) < 0 ||
        write_string_attr(file, "command_line", ds->command_line) < 0 ||
        write_string_attr(file, "host", ds->host) < 0 ||
        write_string_attr(file, "devices", ds->devices) < 0 ||
        write_table(file, &ds_sources_table, ds->sources, ds->n_sources, NULL) < 0 ||
        write_table(file, &ds_tensors_table, ds->tensors, ds->n_tensors, NULL) < 0 ||
        write_table(file, &ds_configs_table, ds->configs, ds->n_configs, NULL) < 0 ||
        write_table(file, &ds_results_table, NULL, ds->n_results, ds->results) < 0 ||
        write_table(file, &ds_skipped_table, ds->skipped, ds->n_skipped, NULL) < 0) {
        h5_message(h5msg, sizeof h5msg);
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", tmp, h5msg);
        goto done;
    }
done:
    if (file >= 0 && H5Fclose(file) < 0 && st == FR_OK) {
        h5_message(h5msg, sizeof h5msg);
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", tmp, h5msg);
    }
    if (fapl >= 0)
        H5Pclose(fapl);
    return st;
}

static int fsync_path(const char *p, int directory)
{
    int fd = open(p, directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    /* some filesystems cannot fsync a directory; the rename is still atomic */
    if (rc != 0 && directory && (errno == EINVAL || errno == EBADF))
        rc = 0;
    close(fd);
    return rc;
}

fr_status fr_dataset_write(const char *path, const fr_dataset *ds, fr_ds_write_mode mode,
                           fr_error *err)
{
    fr_status st = FR_OK;
    char *tmp = NULL, *dir_copy = NULL;
    char ebuf[128];
    int tmp_exists = 0;
    H5E_auto2_t old_func = NULL;
    void *old_data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);

    size_t len = strlen(path);
    tmp = malloc(len + 5);
    dir_copy = strdup(path);
    if (!tmp || !dir_copy) {
        st = fr_fail(err, FR_E_NOMEM, "cannot write '%s': out of memory", path);
        goto done;
    }
    memcpy(tmp, path, len);
    memcpy(tmp + len, ".tmp", 5);
    if (mode == FR_DS_CREATE && access(path, F_OK) == 0) {
        st = fr_fail(err, FR_E_OUTPUT, "'%s' already exists", path);
        goto done;
    }
    /* Probe with open() first: it gives a precise reason (no such
     * directory, permission denied) that HDF5's message buries. A stale
     * .tmp from a killed run is simply truncated. */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
        goto done;
    }
    close(fd);
    tmp_exists = 1;
    st = write_file(tmp, path, ds, err);
    if (st != FR_OK)
        goto done;
    if (fsync_path(tmp, 0) != 0) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot flush '%s': %s", tmp,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
        goto done;
    }
    if (mode == FR_DS_CREATE) {
        /* link() fails with EEXIST instead of replacing: no window in which
         * a file created meanwhile by someone else could be overwritten */
        if (link(tmp, path) != 0) {
            int e = errno;
            if (e == EEXIST) {
                st = fr_fail(err, FR_E_OUTPUT, "'%s' already exists", path);
                goto done;
            }
            /* filesystems without hard links: check, then rename */
            if ((e == EPERM || e == ENOTSUP || e == EOPNOTSUPP || e == EMLINK || e == ENOSYS) &&
                access(path, F_OK) != 0 && errno == ENOENT) {
                if (rename(tmp, path) != 0) {
                    st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                                 fr_errno_text(errno, ebuf, sizeof ebuf));
                    goto done;
                }
                tmp_exists = 0;
            } else {
                st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                             fr_errno_text(e, ebuf, sizeof ebuf));
                goto done;
            }
        }
    } else if (rename(tmp, path) != 0) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
        goto done;
    } else {
        tmp_exists = 0;
    }
    if (fsync_path(dirname(dir_copy), 1) != 0) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot flush the folder of '%s': %s", path,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
        goto done;
    }
done:
    if (tmp_exists)
        unlink(tmp); /* after link(): path keeps the data */
    free(tmp);
    free(dir_copy);
    H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
    return st;
}
