/*
 * The HDF5 and file plumbing of the dataset code (frontier/dataset/
 * dataset_file.h): compound types from the schema's field tables, file
 * access, the in-memory file and its durable save.
 */
#include "frontier/dataset/dataset_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

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
    if (H5Pset_file_locking(fapl, 1, 1) < 0 ||
        /* what is written through it gets checksummed headers (see below) */
        H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0) {
        H5Pclose(fapl);
        return H5I_INVALID_HID;
    }
    return fapl;
}

/* ---- the in-memory file and its bytes ---- */

/* HDF5 calls these for the core driver's buffer; the one it frees at
 * close is kept (ds_image). */
/* Only the file's own buffer (FILE_OPEN, FILE_RESIZE) is tracked, not the
 * copies a property list makes of an initial image. */
static int file_buffer_op(H5FD_file_image_op_t op)
{
    return op == H5FD_FILE_IMAGE_OP_FILE_OPEN || op == H5FD_FILE_IMAGE_OP_FILE_RESIZE;
}

static void *image_malloc(size_t size, H5FD_file_image_op_t op, void *udata)
{
    ds_image *im = udata;
    void *p = malloc(size ? size : 1);
    if (p && file_buffer_op(op)) {
        im->data = p;
        im->capacity = size;
    }
    return p;
}

static void *image_memcpy(void *dest, const void *src, size_t size, H5FD_file_image_op_t op,
                          void *udata)
{
    (void)op, (void)udata;
    return memcpy(dest, src, size);
}

static void *image_realloc(void *ptr, size_t size, H5FD_file_image_op_t op, void *udata)
{
    ds_image *im = udata;
    void *p = realloc(ptr, size ? size : 1);
    if (p && (file_buffer_op(op) || ptr == im->data)) {
        im->data = p;
        im->capacity = size;
    }
    return p;
}

static herr_t image_free(void *ptr, H5FD_file_image_op_t op, void *udata)
{
    ds_image *im = udata;
    if (op == H5FD_FILE_IMAGE_OP_FILE_CLOSE && ptr == im->data)
        return 0; /* the file's final bytes: ds_close_image takes them */
    if (ptr == im->data) {
        im->data = NULL;
        im->capacity = 0;
    }
    free(ptr);
    return 0;
}

static void *image_udata_copy(void *udata)
{
    return udata;
}

static herr_t image_udata_free(void *udata)
{
    (void)udata;
    return 0;
}

hid_t ds_memory_fapl(ds_image *image)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0)
        return H5I_INVALID_HID;
    H5FD_file_image_callbacks_t cb = {image_malloc,     image_memcpy,     image_realloc, image_free,
                                      image_udata_copy, image_udata_free, image};
    /* grows in steps of 1 MiB; backing_store 0: never written by HDF5.
     * Low bound 1.8: superblock 2 and object headers 2 carry checksums, so
     * HDF5 itself refuses damaged metadata before using it. */
    if (H5Pset_fapl_core(fapl, (size_t)1 << 20, 0) < 0 ||
        H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0 ||
        H5Pset_file_image_callbacks(fapl, &cb) < 0) {
        H5Pclose(fapl);
        return H5I_INVALID_HID;
    }
    return fapl;
}

void ds_image_free(ds_image *image)
{
    free(image->data);
    memset(image, 0, sizeof *image);
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

fr_status ds_close_image(hid_t file, ds_image *image, const char *name, fr_error *err)
{
    char h5msg[256];
    if (H5Fclose(file) < 0) {
        ds_h5_message(h5msg, sizeof h5msg);
        ds_image_free(image);
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", name, h5msg);
    }
    /* The superblock at offset 0 (HDF5 File Format Specification, II.A):
     * the signature, its version at byte 8, then (versions 0 and 1) the
     * size of offsets at byte 13, the base address at 24 / 28 and the
     * end-of-file address 16 bytes later, or (versions 2 and 3) at bytes
     * 9, 12 and 28. Only files with 8-byte addresses and base 0 (no user
     * block), as this tool writes them. */
    static const unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    const unsigned char *p = image->data;
    size_t eof_at = 0, offsets_at = 0, base_at = 0;
    if (p && image->capacity >= 56 && !memcmp(p, signature, 8)) {
        if (p[8] == 0 || p[8] == 1)
            offsets_at = 13, base_at = p[8] == 0 ? 24 : 28, eof_at = base_at + 16;
        else if (p[8] == 2 || p[8] == 3)
            offsets_at = 9, base_at = 12, eof_at = 28;
    }
    uint64_t eof = eof_at && p[offsets_at] == 8 && le64(p + base_at) == 0 ? le64(p + eof_at) : 0;
    if (!eof || eof > image->capacity) {
        ds_image_free(image);
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': unexpected HDF5 superblock in memory",
                       name);
    }
    image->size = (size_t)eof;
    return FR_OK;
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
    return ds_table_type_subset(table, for_file, 0);
}

hid_t ds_table_type_subset(const ds_table *table, int for_file, uint64_t skip)
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
        if (!(skip >> made & 1))
            total += H5Tget_size(member[made]);
    }
    compound = H5Tcreate(H5T_COMPOUND, for_file ? total : table->row_size);
    if (compound < 0)
        goto done;
    size_t offset = 0;
    for (size_t i = 0; i < table->n_fields; i++) {
        if (skip >> i & 1)
            continue;
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

void ds_h5_message(char *buf, size_t len)
{
    h5_walk w = {{0}};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, &w);
    snprintf(buf, len, "%s", w.msg[0] ? w.msg : "hdf5 error");
    /* HDF5's descriptions of system errors span lines: keep the first */
    buf[strcspn(buf, "\r\n")] = '\0';
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == ',' || buf[n - 1] == ' ' || buf[n - 1] == ':'))
        buf[--n] = '\0';
}

/* Writes all of buf (short writes and EINTR retried); -1 with errno. */
static int write_all(int fd, const unsigned char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) { /* a write that makes no progress is a full disk */
            errno = ENOSPC;
            return -1;
        }
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

fr_status ds_save_image(const ds_image *image, const char *tmp, int *fd_out, fr_error *err)
{
    fr_status st = FR_OK;
    char ebuf[128];
    int fd = -1;
    *fd_out = -1;
    for (int attempt = 0;; attempt++) {
        /* not O_TRUNC: a second writer must not truncate the first one's
         * file before it finds the lock taken */
        fd = open(tmp, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0) {
            st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", tmp,
                         fr_errno_text(errno, ebuf, sizeof ebuf));
            goto done;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno != ENOLCK && errno != ENOSYS &&
            errno != EOPNOTSUPP && errno != EINVAL) {
            int e = errno;
            close(fd);
            fd = -1;
            if (e == EWOULDBLOCK)
                st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': another process is writing it",
                             tmp);
            else
                st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", tmp,
                             fr_errno_text(e, ebuf, sizeof ebuf));
            goto done; /* the other writer's file: not removed */
        }
        /* the lock is ours, but the name may meanwhile have been renamed
         * away by the writer that held it (our descriptor is then its
         * finished file): only the file still named tmp may be truncated */
        struct stat held, named;
        if (fstat(fd, &held) == 0 && stat(tmp, &named) == 0 && held.st_dev == named.st_dev &&
            held.st_ino == named.st_ino)
            break;
        close(fd);
        fd = -1;
        if (attempt == 2) {
            st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': another process is writing it", tmp);
            goto done;
        }
    }
    if (ftruncate(fd, 0) != 0 || write_all(fd, image->data, image->size) != 0 || fsync(fd) != 0) {
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", tmp,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
        close(fd);
        fd = -1;
        unlink(tmp);
        goto done;
    }
    *fd_out = fd;
done:
    return st;
}

int ds_fsync_folder(const char *path)
{
    char *copy = strdup(path);
    if (!copy) {
        errno = ENOMEM;
        return -1;
    }
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(copy);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    /* some filesystems cannot fsync a directory; the rename is still atomic */
    if (rc != 0 && (errno == EINVAL || errno == EBADF || errno == EROFS))
        rc = 0;
    close(fd);
    return rc;
}
