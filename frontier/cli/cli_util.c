/* What every subcommand may share: usage errors, the command line recorded
 * in a dataset. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/error.h"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "frontier %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see 'frontier %s --help')\n", cmd);
    va_end(ap);
    return FR_E_USAGE;
}

/* Quoted for a POSIX shell so that the recorded line can be pasted back:
 * an argument holding a shell metacharacter (or empty) goes in single
 * quotes, an embedded ' as '\''. Each argument costs at most 4x its length
 * (every byte a ') plus a space and two quotes. */
char *cli_command_line(int argc, char **argv)
{
    size_t len = strlen("frontier") + 1;
    for (int i = 0; i < argc; i++)
        len += 4 * strlen(argv[i]) + 3;
    char *out = malloc(len), *p = out;
    if (!out)
        return NULL;
    p += sprintf(p, "frontier");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        *p++ = ' ';
        if (*a && !strpbrk(a, " \t\n'\"\\$`*?[]{}()<>|&;#~")) {
            p += sprintf(p, "%s", a);
            continue;
        }
        *p++ = '\'';
        for (; *a; a++) {
            if (*a == '\'') {
                memcpy(p, "'\\''", 4);
                p += 4;
            } else {
                *p++ = *a;
            }
        }
        *p++ = '\'';
        *p = '\0';
    }
    return out;
}
