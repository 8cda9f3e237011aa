/* What the analysis commands share: reading a dataset, the command line
 * recorded with stored tables, number parsing. */
#include "cli_analysis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* TRANSITIONAL: until frontier/dataset.c (the sweep issue) is merged, this
 * branch has no dataset reader; weak references let the binary link and
 * the commands say so. Remove these two lines once it is on main. */
#pragma weak fr_dataset_read
#pragma weak fr_dataset_free

fr_status cli_read_dataset(const char *path, fr_dataset *ds, fr_result_index *ix, fr_error *err)
{
    memset(ds, 0, sizeof *ds);
    memset(ix, 0, sizeof *ix);
    if (!fr_dataset_read || !fr_dataset_free)
        return fr_fail(err, FR_E_FAIL, "cannot read '%s': this build has no dataset reader yet", path);
    fr_status st = fr_dataset_read(path, ds, err);
    if (st != FR_OK)
        return st;
    if (ds->n_results == 0) {
        st = fr_fail(err, FR_E_FORMAT, "'%s' has no results (did the sweep finish?)", path);
    } else if ((st = fr_result_index_build(ds, ix, err)) != FR_OK) {
        fr_error_prefix(err, "'%s': ", path);
    }
    if (st != FR_OK)
        fr_dataset_free(ds);
    return st;
}

void cli_free_dataset(fr_dataset *ds)
{
    if (fr_dataset_free)
        fr_dataset_free(ds);
}

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

int cli_parse_double(const char *text, double *out)
{
    char *end;
    if (!text || !*text)
        return 0;
    double v = strtod(text, &end);
    if (*end || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

int cli_parse_range(const char *text, double default_step, double *lo, double *hi, double *step)
{
    char buf[128];
    if (!text || strlen(text) >= sizeof buf)
        return 0;
    strcpy(buf, text);
    char *dots = strstr(buf, "..");
    if (!dots)
        return 0;
    *dots = '\0';
    char *hi_text = dots + 2, *colon = strchr(hi_text, ':');
    *step = default_step;
    if (colon) {
        *colon = '\0';
        if (!cli_parse_double(colon + 1, step) || *step <= 0)
            return 0;
    }
    return cli_parse_double(buf, lo) && cli_parse_double(hi_text, hi) && *lo > 0 && *hi >= *lo;
}
