/*
 * Writing a frontier dataset (docs/dataset.md) in one durable step:
 * frontier/dataset/dataset_write.c.
 */
#ifndef FR_DATASET_WRITE_H
#define FR_DATASET_WRITE_H

#include "core/error.h"
#include "frontier/dataset/dataset.h"

/* How fr_dataset_write treats an existing file at path. */
typedef enum fr_ds_write_mode {
    FR_DS_CREATE = 0, /* path must not exist (checked atomically): else FR_E_OUTPUT */
    FR_DS_REPLACE = 1 /* path is replaced in one step */
} fr_ds_write_mode;

/*
 * Writes ds as a complete frontier dataset: everything goes to
 * "<path>.tmp", which is flushed (fsync) and then renamed over path (or
 * hard-linked to it for FR_DS_CREATE), so path always holds either the
 * previous complete file or the new one, even after kill -9 or a power
 * loss. FR_E_OUTPUT names path when it cannot be written.
 */
fr_status fr_dataset_write(const char *path, const fr_dataset *ds, fr_ds_write_mode mode,
                           fr_error *err);

#endif
