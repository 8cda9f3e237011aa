/* The text files the analysis writes (frontier/output_file.h). */
#include "frontier/output_file.h"

#include <errno.h>

static fr_status cannot_write(const char *path, fr_error *err)
{
    char ebuf[128];
    return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                   fr_errno_text(errno, ebuf, sizeof ebuf));
}

fr_status fr_output_open(const char *path, FILE **f, fr_error *err)
{
    *f = fopen(path, "w");
    return *f ? FR_OK : cannot_write(path, err);
}

fr_status fr_output_close(FILE *f, const char *path, fr_error *err)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return cannot_write(path, err);
    return FR_OK;
}
