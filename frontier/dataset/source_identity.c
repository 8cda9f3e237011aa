/*
 * The identity of a model source, recorded in /sources so --resume and
 * merge can tell whether two runs measured the same checkpoint: sha256 of
 * its files (OpenSSL EVP, streamed with read(), so a 100 GB checkpoint
 * never has to fit in memory), total size and newest mtime.
 */
#include "frontier/dataset/source_identity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FRONTIER_HAVE_OPENSSL
#include <openssl/evp.h>

#define HASH_BUFFER ((size_t)1 << 20)

static void to_hex(const unsigned char *d, unsigned len, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < len; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[2 * len] = '\0';
}

/* sha256 of one file, as hex. */
static fr_status hash_file(const char *path, unsigned char *buf, char hex[65], fr_error *err)
{
    fr_status st = FR_OK;
    char ebuf[128];
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned dlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        st = fr_fail(err, FR_E_IO, "cannot open '%s': %s", path,
                     fr_errno_text(errno, ebuf, sizeof ebuf));
        goto done;
    }
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        st = fr_fail(err, FR_E_FAIL, "cannot start sha256 of '%s'", path);
        goto done;
    }
#ifdef POSIX_FADV_SEQUENTIAL
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    for (;;) {
        ssize_t got = read(fd, buf, HASH_BUFFER);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            st = fr_fail(err, FR_E_IO, "cannot read '%s': %s", path,
                         fr_errno_text(errno, ebuf, sizeof ebuf));
            goto done;
        }
        if (got == 0)
            break;
        if (EVP_DigestUpdate(ctx, buf, (size_t)got) != 1) {
            st = fr_fail(err, FR_E_FAIL, "sha256 of '%s' failed", path);
            goto done;
        }
    }
    if (EVP_DigestFinal_ex(ctx, digest, &dlen) != 1 || dlen != 32) {
        st = fr_fail(err, FR_E_FAIL, "sha256 of '%s' failed", path);
        goto done;
    }
    to_hex(digest, dlen, hex);
done:
    if (fd >= 0)
        close(fd);
    EVP_MD_CTX_free(ctx);
    return st;
}

static fr_status hash_source(const fr_source *src, char sha256[65], fr_error *err)
{
    fr_status st = FR_OK;
    unsigned char *buf = malloc(HASH_BUFFER);
    EVP_MD_CTX *ctx = NULL;
    if (!buf)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    if (src->n_files == 1) {
        st = hash_file(src->files[0].path, buf, sha256, err);
        goto done;
    }
    /* several files: the digest of their sha256sum-style lines */
    ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        st = fr_fail(err, FR_E_FAIL, "cannot start sha256 of '%s'", src->path);
        goto done;
    }
    for (size_t i = 0; i < src->n_files; i++) {
        char hex[65];
        st = hash_file(src->files[i].path, buf, hex, err);
        if (st != FR_OK)
            goto done;
        const char *base = strrchr(src->files[i].path, '/');
        base = base ? base + 1 : src->files[i].path;
        if (EVP_DigestUpdate(ctx, hex, 64) != 1 || EVP_DigestUpdate(ctx, "  ", 2) != 1 ||
            EVP_DigestUpdate(ctx, base, strlen(base)) != 1 || EVP_DigestUpdate(ctx, "\n", 1) != 1) {
            st = fr_fail(err, FR_E_FAIL, "sha256 of '%s' failed", src->path);
            goto done;
        }
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned dlen = 0;
    if (EVP_DigestFinal_ex(ctx, digest, &dlen) != 1 || dlen != 32) {
        st = fr_fail(err, FR_E_FAIL, "sha256 of '%s' failed", src->path);
        goto done;
    }
    to_hex(digest, dlen, sha256);
done:
    EVP_MD_CTX_free(ctx);
    free(buf);
    return st;
}
#endif

fr_status fr_source_identity(const fr_source *src, char sha256[65], uint64_t *size,
                             int64_t *mtime, fr_error *err)
{
    sha256[0] = '\0';
    *size = 0;
    *mtime = 0;
    if (src->kind == FR_SOURCE_SYNTHETIC || src->n_files == 0)
        return FR_OK;
    for (size_t i = 0; i < src->n_files; i++) {
        *size += src->files[i].size;
        if (src->files[i].mtime > *mtime)
            *mtime = src->files[i].mtime;
    }
#ifdef FRONTIER_HAVE_OPENSSL
    return hash_source(src, sha256, err);
#else
    (void)err;
    return FR_OK;
#endif
}

fr_status fr_file_sha256(const char *path, char sha256[65], fr_error *err)
{
    sha256[0] = '\0';
#ifdef FRONTIER_HAVE_OPENSSL
    unsigned char *buf = malloc(HASH_BUFFER);
    if (!buf)
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    fr_status st = hash_file(path, buf, sha256, err);
    free(buf);
    return st;
#else
    (void)path;
    (void)err;
    return FR_OK;
#endif
}

int fr_source_identity_same(const fr_ds_source *a, const fr_ds_source *b, int by_path)
{
    if (strcmp(a->kind, b->kind) != 0)
        return 0;
    if (!strcmp(a->kind, "synthetic"))
        return !strcmp(a->path, b->path);
    if (a->sha256[0] && b->sha256[0])
        return !strcmp(a->sha256, b->sha256) && a->size == b->size;
    return (!by_path || !strcmp(a->path, b->path)) && a->size == b->size &&
           a->mtime == b->mtime;
}
