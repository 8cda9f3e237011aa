/* The text files the analysis writes (frontier/dataset/output_file.h). */
#include "frontier/dataset/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The temporary names of the files open now. The commands are single
 * threaded and open one or two at a time. */
#define MAX_OPEN 16

static struct open_output {
    FILE *f;
    char *tmp;
} open_outputs[MAX_OPEN];

static fr_status cannot_write(const char *path, int errnum, fr_error *err)
{
    char ebuf[128];
    return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                   fr_errno_text(errnum, ebuf, sizeof ebuf));
}

static struct open_output *find(FILE *f)
{
    for (size_t i = 0; f && i < MAX_OPEN; i++)
        if (open_outputs[i].f == f)
            return &open_outputs[i];
    return NULL;
}

fr_status fr_output_open(const char *path, FILE **f, fr_error *err)
{
    *f = NULL;
    struct open_output *slot = NULL;
    for (size_t i = 0; !slot && i < MAX_OPEN; i++)
        if (!open_outputs[i].f)
            slot = &open_outputs[i];
    if (!slot)
        return fr_fail(err, FR_E_FAIL, "cannot write '%s': too many open outputs", path);
    /* a device, a FIFO (/dev/stdout, a pipe a user named): written in
     * place, there is no file to replace */
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        FILE *direct = fopen(path, "w");
        if (!direct)
            return cannot_write(path, errno, err);
        slot->f = direct;
        slot->tmp = NULL;
        *f = direct;
        return FR_OK;
    }
    size_t n = strlen(path) + 12;
    char *tmp = malloc(n);
    if (!tmp)
        return fr_fail(err, FR_E_NOMEM, "cannot write '%s': out of memory", path);
    snprintf(tmp, n, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return cannot_write(path, e, err);
    }
    /* mkstemp makes 0600; a file fopen() would make is 0666 less the umask */
    mode_t mask = umask(0);
    umask(mask);
    FILE *file = fchmod(fd, 0666 & ~mask) == 0 ? fdopen(fd, "w") : NULL;
    if (!file) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return cannot_write(path, e, err);
    }
    slot->f = file;
    slot->tmp = tmp;
    *f = file;
    return FR_OK;
}

static void forget(struct open_output *o)
{
    free(o->tmp);
    o->tmp = NULL;
    o->f = NULL;
}

fr_status fr_output_close(FILE *f, const char *path, fr_error *err)
{
    struct open_output *o = find(f);
    if (!o) {
        fclose(f);
        return fr_fail(err, FR_E_FAIL, "cannot write '%s': not opened by fr_output_open", path);
    }
    int e = 0;
    errno = 0;
    if (fflush(f) != 0 || ferror(f)) {
        e = errno;
        /* the write that failed may have been long ago, its errno lost:
         * a full disk, the usual reason, still tells itself */
        struct stat sb;
        if (!e && fstat(fileno(f), &sb) == 0)
            e = posix_fallocate(fileno(f), sb.st_size, 4096);
        if (!e)
            e = EIO;
    }
    else if (o->tmp && fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS)
        e = errno;
    if (fclose(f) != 0 && !e)
        e = errno;
    if (!e && o->tmp && rename(o->tmp, path) != 0)
        e = errno;
    if (e) {
        if (o->tmp)
            unlink(o->tmp);
        forget(o);
        return cannot_write(path, e, err);
    }
    forget(o);
    return FR_OK;
}

void fr_output_abort(FILE *f)
{
    struct open_output *o = find(f);
    if (!f)
        return;
    fclose(f);
    if (o) {
        if (o->tmp)
            unlink(o->tmp);
        forget(o);
    }
}
