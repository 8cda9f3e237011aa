#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *fr_errno_text(int errnum, char *buf, size_t len)
{
    if (len == 0)
        return "";
    snprintf(buf, len, "%s", strerror(errnum));
    if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z') && buf[1] != '/')
        buf[0] = (char)(buf[0] - 'A' + 'a');
    return buf;
}

fr_status fr_fail(fr_error *err, fr_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

void fr_error_prefix(fr_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    char prefix[FR_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    /* message truncation is acceptable here: keep as much as fits */
    size_t plen = strnlen(prefix, sizeof prefix - 1);
    size_t mlen = strnlen(err->msg, sizeof err->msg - 1);
    if (plen + mlen > sizeof err->msg - 1)
        mlen = sizeof err->msg - 1 - plen;
    memmove(err->msg + plen, err->msg, mlen);
    memcpy(err->msg, prefix, plen);
    err->msg[plen + mlen] = '\0';
}

void fr_error_clear(fr_error *err)
{
    if (err) {
        err->code = FR_OK;
        err->msg[0] = '\0';
    }
}

const char *fr_status_name(fr_status code)
{
    switch (code) {
    case FR_OK: return "ok";
    case FR_E_FAIL: return "failure";
    case FR_E_USAGE: return "usage error";
    case FR_E_IO: return "i/o error";
    case FR_E_FORMAT: return "format error";
    case FR_E_OUTPUT: return "output error";
    case FR_E_PLUGIN: return "plugin error";
    case FR_E_DEVICE: return "device error";
    case FR_E_NOMEM: return "out of memory";
    case FR_E_MISMATCH: return "mismatch";
    case FR_E_UNSUPPORTED: return "not in this build";
    case FR_E_INTERRUPT: return "interrupted";
    }
    return "unknown error";
}
