/*
 * For the fuzz targets whose reader takes a path (the dataset reader, the
 * recipe reader inside fr_quantize): the input is written to one private
 * temporary file per process (under $TMPDIR, else /tmp), rewritten for
 * every input and removed at exit. Names come from mkstemp only.
 */
#ifndef FR_FUZZ_FILE_H
#define FR_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_file_path[4096];

static void fuzz_file_remove(void)
{
    if (fuzz_file_path[0])
        unlink(fuzz_file_path);
}

/* Writes data to the process's temporary file; its path, or NULL. */
static const char *fuzz_file_write(const uint8_t *data, size_t size, const char *suffix)
{
    if (!fuzz_file_path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(fuzz_file_path, sizeof fuzz_file_path, "%s/frontier-fuzz-XXXXXX%s",
                 dir && *dir ? dir : "/tmp", suffix);
        int fd = mkstemps(fuzz_file_path, (int)strlen(suffix));
        if (fd < 0) {
            fuzz_file_path[0] = '\0';
            return NULL;
        }
        close(fd);
        atexit(fuzz_file_remove);
    }
    FILE *f = fopen(fuzz_file_path, "wb");
    if (!f)
        return NULL;
    int ok = fwrite(data, 1, size, f) == size;
    ok &= fclose(f) == 0;
    return ok ? fuzz_file_path : NULL;
}

#endif
