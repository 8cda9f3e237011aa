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
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontier/dataset/dataset_write.h"

#include "frontier/dataset/dataset_checksum.h"
#include "frontier/dataset/dataset_file.h"
#include "frontier/dataset/dataset_schema.h"

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

/* Creates table->name as a chunked, extendible 1-D dataset of n rows with
 * the Fletcher32 filter and a "checksum" attribute (dataset_checksum.c).
 * rows is n in-memory rows; for /results (results != NULL, rows NULL) the
 * rows are staged block by block as ds_result_io first. */
static int write_table(hid_t file, const ds_table *table, const void *rows, size_t n,
                       const fr_ds_result *results, const fr_ds_expert_result *experts)
{
    int rc = -1;
    hid_t mem_type = ds_table_type(table, 0), file_type = ds_table_type(table, 1);
    hid_t space = H5I_INVALID_HID, dcpl = H5I_INVALID_HID, dset = H5I_INVALID_HID;
    hid_t mspace = H5I_INVALID_HID;
    ds_result_io *stage = NULL;
    ds_expert_io *estage = NULL;
    ds_hash hash;
    char sum[DS_CHECKSUM_TEXT];
    hsize_t dims[1] = {n}, maxdims[1] = {H5S_UNLIMITED}, chunk[1] = {table->chunk_rows};
    ds_hash_init(&hash);
    if (mem_type < 0 || file_type < 0)
        goto done;
    space = H5Screate_simple(1, dims, maxdims);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (space < 0 || dcpl < 0 || H5Pset_chunk(dcpl, 1, chunk) < 0 || H5Pset_fletcher32(dcpl) < 0)
        goto done;
    dset = H5Dcreate2(file, table->name, file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (dset < 0)
        goto done;
    if (n > 0 && !results && !experts) {
        if (H5Dwrite(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0)
            goto done;
        ds_hash_rows(&hash, table, rows, n);
    }
    if (n > 0 && results) {
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
            ds_hash_rows(&hash, table, stage, count);
            H5Sclose(mspace);
            mspace = H5I_INVALID_HID;
        }
    }
    /* /expert_results: the same staging, each row with its expert */
    if (n > 0 && experts) {
        estage = malloc(sizeof *estage * DS_IO_BLOCK);
        if (!estage)
            goto done;
        for (size_t begin = 0; begin < n; begin += DS_IO_BLOCK) {
            size_t count = n - begin < DS_IO_BLOCK ? n - begin : DS_IO_BLOCK;
            for (size_t i = 0; i < count; i++) {
                const fr_ds_expert_result *r = &experts[begin + i];
                estage[i] = (ds_expert_io){
                    .io = {.row = r->row, .device = (char *)(uintptr_t)r->row.device},
                    .expert = r->expert};
            }
            hsize_t start[1] = {begin}, cnt[1] = {count};
            mspace = H5Screate_simple(1, cnt, NULL);
            if (mspace < 0 ||
                H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, cnt, NULL) < 0 ||
                H5Dwrite(dset, mem_type, mspace, space, H5P_DEFAULT, estage) < 0)
                goto done;
            ds_hash_rows(&hash, table, estage, count);
            H5Sclose(mspace);
            mspace = H5I_INVALID_HID;
        }
    }
    ds_hash_text(&hash, sum);
    if (write_string_attr(dset, DS_CHECKSUM_ATTR, sum) < 0)
        goto done;
    rc = 0;
done:
    free(stage);
    free(estage);
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

/* Builds the whole dataset as an HDF5 file in memory (ds_memory_fapl);
 * *file_out is the open file, whose bytes go to image when it is closed.
 * Nothing here touches the disk. */
static fr_status build_file(const char *tmp, const fr_dataset *ds, ds_image *image,
                            hid_t *file_out, fr_error *err)
{
    fr_status st = FR_OK;
    hid_t fapl = ds_memory_fapl(image), file = H5I_INVALID_HID;
    char h5msg[256];
    *file_out = H5I_INVALID_HID;
    if (fapl < 0) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': hdf5 property list", tmp);
        goto done;
    }
    file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (file < 0) {
        ds_h5_message(h5msg, sizeof h5msg);
        st = fr_fail(err, FR_E_OUTPUT, "cannot create '%s': %s", tmp, h5msg);
        goto done;
    }
    /* the root checksum covers the attributes exactly as written */
    fr_dataset root = *ds;
    if (!root.tool_version)
        root.tool_version = (char *)(uintptr_t)FRONTIER_VERSION;
    ds_hash hash;
    char sum[DS_CHECKSUM_TEXT];
    ds_hash_init(&hash);
    ds_hash_root(&hash, &root);
    ds_hash_text(&hash, sum);
    if (write_string_attr(file, "format", DS_FORMAT) < 0 ||
        write_attr(file, "schema_version", H5T_STD_I64LE, H5T_NATIVE_INT64,
                   &(int64_t){FR_SCHEMA_VERSION}) < 0 ||
        write_string_attr(file, "tool_version", root.tool_version) < 0 ||
        write_string_attr(file, "created", ds->created) < 0 ||
        write_string_attr(file, "command_line", ds->command_line) < 0 ||
        write_string_attr(file, "host", ds->host) < 0 ||
        write_string_attr(file, "devices", ds->devices) < 0 ||
        write_string_attr(file, DS_CHECKSUM_ATTR, sum) < 0 ||
        write_table(file, &ds_sources_table, ds->sources, ds->n_sources, NULL, NULL) < 0 ||
        write_table(file, &ds_tensors_table, ds->tensors, ds->n_tensors, NULL, NULL) < 0 ||
        write_table(file, &ds_configs_table, ds->configs, ds->n_configs, NULL, NULL) < 0 ||
        write_table(file, &ds_results_table, NULL, ds->n_results, ds->results, NULL) < 0 ||
        write_table(file, &ds_skipped_table, ds->skipped, ds->n_skipped, NULL, NULL) < 0 ||
        /* only a --split-experts run has the table (older readers never see it) */
        (ds->n_expert_results &&
         write_table(file, &ds_expert_results_table, NULL, ds->n_expert_results, NULL,
                     ds->expert_results) < 0)) {
        ds_h5_message(h5msg, sizeof h5msg);
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", tmp, h5msg);
        goto done;
    }
    *file_out = file;
    file = H5I_INVALID_HID;
done:
    if (file >= 0) {
        H5Fclose(file);
        ds_image_free(image);
    }
    if (fapl >= 0)
        H5Pclose(fapl);
    return st;
}


/* Closes the locked tmp descriptor: on NFS a close can report a failed write. */
static fr_status close_tmp(int fd, const char *tmp, fr_error *err)
{
    char ebuf[128];
    if (fd >= 0 && close(fd) != 0)
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", tmp,
                       fr_errno_text(errno, ebuf, sizeof ebuf));
    return FR_OK;
}

fr_status fr_dataset_write(const char *path, const fr_dataset *ds, fr_ds_write_mode mode,
                           fr_error *err)
{
    fr_status st = FR_OK;
    char *tmp = NULL;
    char ebuf[128];
    int tmp_exists = 0, fd = -1;
    hid_t file = H5I_INVALID_HID;
    ds_image image = {0};
    H5E_auto2_t old_func = NULL;
    void *old_data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);

    size_t len = strlen(path);
    tmp = malloc(len + 5);
    if (!tmp) {
        st = fr_fail(err, FR_E_NOMEM, "cannot write '%s': out of memory", path);
        goto done;
    }
    memcpy(tmp, path, len);
    memcpy(tmp + len, ".tmp", 5);
    if (mode == FR_DS_CREATE && access(path, F_OK) == 0) {
        st = fr_fail(err, FR_E_OUTPUT, "'%s' already exists", path);
        goto done;
    }
    /* Probe the folder first: a precise reason (no such directory,
     * permission denied, read-only) before any work. A stale .tmp from a
     * killed run is simply overwritten. */
    {
        char *dir_copy = strdup(path);
        int ok = dir_copy && access(dirname(dir_copy), W_OK | X_OK) == 0;
        int e = dir_copy ? errno : ENOMEM;
        free(dir_copy);
        if (!ok) {
            st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                         fr_errno_text(e, ebuf, sizeof ebuf));
            goto done;
        }
    }
    if ((st = build_file(tmp, ds, &image, &file, err)) != FR_OK ||
        (st = ds_close_image(file, &image, tmp, err)) != FR_OK ||
        (st = ds_save_image(&image, tmp, &fd, err)) != FR_OK)
        goto done;
    tmp_exists = 1;
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
    if (ds_fsync_folder(path) != 0) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot flush the folder of '%s': %s", path,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
        goto done;
    }
done:
    if (tmp_exists)
        unlink(tmp); /* after link(): path keeps the data */
    {
        fr_status cst = close_tmp(fd, tmp, err);
        if (st == FR_OK)
            st = cst;
    }
    free(tmp);
    ds_image_free(&image);
    H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
    return st;
}
