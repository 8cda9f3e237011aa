/* What every subcommand may share: the command line recorded in a dataset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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
