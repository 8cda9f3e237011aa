/*
 * An LD_PRELOAD shim for the write-failure tests (full_disk.sh), used
 * where no small filesystem can be mounted (not root): writes to files
 * whose path contains FR_FAILWRITE_PATTERN fail with FR_FAILWRITE_ERRNO
 * (default ENOSPC) once FR_FAILWRITE_AFTER bytes (default 0) have been
 * written to such files by this process; with FR_FAILWRITE_FSYNC=1 their
 * fsync fails too. The path of a descriptor is found through
 * /proc/self/fd, so files opened any way are caught; stdio streams opened
 * with fopen/fdopen write through write() only in part (glibc calls its
 * internal write), so fclose and fflush of a matching stream fail as well.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static long long written;

static int matches_fd(int fd)
{
    const char *pattern = getenv("FR_FAILWRITE_PATTERN");
    if (!pattern || !*pattern || fd < 0)
        return 0;
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
        return 0;
    target[n] = '\0';
    return strstr(target, pattern) != NULL;
}

static int fail_errno(void)
{
    const char *e = getenv("FR_FAILWRITE_ERRNO");
    return e ? atoi(e) : ENOSPC;
}

/* 1 when a write of n bytes to fd must fail (errno set) */
static int must_fail(int fd, size_t n)
{
    if (!matches_fd(fd))
        return 0;
    const char *a = getenv("FR_FAILWRITE_AFTER");
    long long after = a ? atoll(a) : 0;
    if (written + (long long)n > after) {
        errno = fail_errno();
        return 1;
    }
    written += (long long)n;
    return 0;
}

/* the next definition of name (libc's) */
#define REAL(name)                                                                      \
    static __typeof__(&name) real_##name;                                               \
    if (!real_##name)                                                                   \
    real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void *buf, size_t n)
{
    REAL(write);
    if (must_fail(fd, n))
        return -1;
    return real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite);
    if (must_fail(fd, n))
        return -1;
    return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite64);
    if (must_fail(fd, n))
        return -1;
    return real_pwrite64(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    REAL(writev);
    size_t n = 0;
    for (int i = 0; i < cnt; i++)
        n += iov[i].iov_len;
    if (must_fail(fd, n))
        return -1;
    return real_writev(fd, iov, cnt);
}

static int fsync_fails(int fd)
{
    const char *f = getenv("FR_FAILWRITE_FSYNC");
    if (f && *f == '1' && matches_fd(fd)) {
        errno = fail_errno();
        return 1;
    }
    return 0;
}

int fsync(int fd)
{
    REAL(fsync);
    return fsync_fails(fd) ? -1 : real_fsync(fd);
}

int fdatasync(int fd)
{
    REAL(fdatasync);
    return fsync_fails(fd) ? -1 : real_fdatasync(fd);
}

/* stdio: the bytes a stream buffered count when it is flushed */
int fflush(FILE *f)
{
    REAL(fflush);
    if (f && must_fail(fileno(f), (size_t)1)) {
        real_fflush(f);
        return EOF;
    }
    return real_fflush(f);
}

int fclose(FILE *f)
{
    REAL(fclose);
    int fail = must_fail(fileno(f), (size_t)1); /* glibc declares f non-NULL */
    int e = errno;
    int rc = real_fclose(f);
    if (fail) {
        errno = e;
        return EOF;
    }
    return rc;
}
