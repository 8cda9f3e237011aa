/*
 * The HDF5 and file plumbing that the dataset's reader (dataset.c) and
 * writer (dataset_write.c), the derived tables (frontier/analysis/
 * frontier_store.c) and annotate share: the tables' compound types, file
 * access, in-memory files and their durable save, HDF5's messages.
 * Private to frontier/.
 */
#ifndef FR_DATASET_FILE_H
#define FR_DATASET_FILE_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "frontier/dataset/dataset_schema.h"

/* Compound types of a table: in memory (native, row struct offsets) or in
 * the file (little-endian, packed). Returns a type id or H5I_INVALID_HID. */
hid_t ds_table_type(const ds_table *table, int for_file);
/* The same without the fields whose bit is set in skip (bit i: field i):
 * the memory type of a file that lacks optional fields. */
hid_t ds_table_type_subset(const ds_table *table, int for_file, uint64_t skip);

/* A variable-length UTF-8 string type. */
hid_t ds_string_type(void);

/* File-access properties for reading a dataset from disk: file locking
 * that is ignored where the filesystem lacks it (NFS). */
hid_t ds_fapl(void);

/* The bytes of an in-memory HDF5 file, taken from HDF5 when it closes it. */
typedef struct ds_image {
    unsigned char *data; /* the core driver's buffer, ours after close */
    size_t capacity;     /* bytes allocated */
    size_t size;         /* bytes of the file (its end-of-file address) */
} ds_image;

/* File-access properties of a dataset built in memory (HDF5's core driver,
 * no backing store): HDF5 never writes to disk itself, so a full disk can
 * never leave it with a half-closed file (HDF5 1.10 then crashes in its
 * exit handler with a SIGSEGV); ds_save_image writes the bytes
 * with plain POSIX calls instead. The format is HDF5 1.8's (superblock 2,
 * object headers 2: checksummed), readable by HDF5 >= 1.8 and h5py. H5Fopen
 * with it reads an existing file into memory; changes stay there. image
 * (zeroed) receives the bytes when the file is closed: call ds_close_image. */
hid_t ds_memory_fapl(ds_image *image);

/* Closes an in-memory file opened with ds_memory_fapl(image) and sizes
 * image from the superblock's end-of-file address (why not
 * H5Fget_file_image: HDF5 1.10.8 then clears the superblock's "open for
 * writing" flag without updating its checksum, so readers refuse the
 * copy). FR_E_OUTPUT naming name when HDF5 fails. */
fr_status ds_close_image(hid_t file, ds_image *image, const char *name, fr_error *err);
void ds_image_free(ds_image *image);

/* Writes image to tmp, which is created or truncated (under an exclusive
 * flock: a second writer of the same tmp is refused) and fsync()ed;
 * *fd_out keeps the lock until the caller has renamed tmp and closes it.
 * FR_E_OUTPUT naming tmp on any failure (tmp is then removed unless
 * another process holds it, and *fd_out is -1). */
fr_status ds_save_image(const ds_image *image, const char *tmp, int *fd_out, fr_error *err);

/* Makes a rename in the folder of path durable. */
int ds_fsync_folder(const char *path);

/* The innermost message of HDF5's error stack ("hdf5 error" when empty),
 * on one line. */
void ds_h5_message(char *buf, size_t len);

#endif
