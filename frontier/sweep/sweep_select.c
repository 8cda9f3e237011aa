/* What a sweep measures: --bits, --quantizers, --fused-global-scale, --include
 * and --exclude. */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/sweep/sweep_select.h"
#include "core/pattern.h"
#include "quantizers/families.h"
#include "frontier/sweep/sweep.h"

/* Parses one number of a --bits term; *end past it. */
static int parse_number(const char *s, const char **end, double *v)
{
    char *e = NULL;
    if (!(*s >= '0' && *s <= '9'))
        return -1;
    errno = 0;
    *v = strtod(s, &e);
    if (errno || e == s || !isfinite(*v))
        return -1;
    /* "2..8": strtod would read "2." as a number; give the dot back */
    if (e > s && e[-1] == '.' && e[0] == '.')
        e--;
    *end = e;
    return 0;
}

fr_status fr_bits_parse(const char *text, fr_bits_filter *out, fr_error *err)
{
    memset(out, 0, sizeof *out);
    if (!text || !*text)
        return fr_fail(err, FR_E_USAGE, "empty --bits value");
    const char *p = text;
    for (;;) {
        const char *term = p, *e;
        double lo, hi;
        if (out->n == FR_BITS_MAX_TERMS)
            return fr_fail(err, FR_E_USAGE, "--bits '%s' has more than %d terms", text,
                           FR_BITS_MAX_TERMS);
        if (parse_number(p, &e, &lo) != 0)
            goto bad;
        p = e;
        hi = lo;
        if (p[0] == '.' && p[1] == '.') {
            if (parse_number(p + 2, &e, &hi) != 0)
                goto bad;
            p = e;
            if (hi < lo) {
                int len = (int)(p - term);
                return fr_fail(err, FR_E_USAGE, "empty bit range '%.*s' (the lower bound comes first)",
                               len, term);
            }
        }
        out->lo[out->n] = lo;
        out->hi[out->n] = hi;
        out->n++;
        if (*p == '\0')
            return FR_OK;
        if (*p != ',')
            goto bad;
        p++;
    }
bad:
    return fr_fail(err, FR_E_USAGE,
                   "invalid --bits '%s': expected a number, a range A..B or a list like 2,3,4,8",
                   text);
}

int fr_bits_match(const fr_bits_filter *f, double nominal_bits)
{
    for (size_t i = 0; i < f->n; i++)
        if (nominal_bits >= f->lo[i] && nominal_bits <= f->hi[i])
            return 1;
    return 0;
}

#define DATA_FLAGS (FRONTIER_Q_NEEDS_HESSIAN | FRONTIER_Q_NEEDS_ACT_STATS)

fr_status fr_sweep_select_configs(const fr_registry *reg, const char *bits, const char *quantizers,
                                  int calibrated, const fr_config_ref ***out, size_t *n_out,
                                  fr_error *err)
{
    fr_status st = FR_OK;
    fr_bits_filter filter;
    char *patterns = NULL;
    char **pattern = NULL;
    size_t n_patterns = 0;
    const fr_config_ref **chosen = NULL;
    size_t n = 0;
    *out = NULL;
    *n_out = 0;

    if (bits && (st = fr_bits_parse(bits, &filter, err)) != FR_OK)
        return st;
    if (quantizers) {
        if (!*quantizers)
            return fr_fail(err, FR_E_USAGE, "empty --quantizers value");
        patterns = strdup(quantizers);
        pattern = calloc(strlen(quantizers) / 2 + 2, sizeof *pattern);
        if (!patterns || !pattern) {
            st = fr_fail(err, FR_E_NOMEM, "out of memory");
            goto done;
        }
        for (char *save = NULL, *tok = strtok_r(patterns, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save))
            pattern[n_patterns++] = tok;
        if (n_patterns == 0) {
            st = fr_fail(err, FR_E_USAGE, "empty --quantizers value");
            goto done;
        }
        /* every pattern must name something registered, calibrated or not */
        for (size_t p = 0; p < n_patterns; p++) {
            int any = 0, data_free = 0;
            for (size_t i = 0; i < reg->n_configs; i++) {
                const frontier_quantizer *q = fr_config_quantizer(reg, &reg->configs[i]);
                const frontier_config_traits *t = fr_config_traits_of(&reg->configs[i]);
                if (t->needs_group_amax) {
                    if (!strcmp(pattern[p], reg->configs[i].cfg->name) ||
                        !strcmp(pattern[p], q->name)) {
                        if (t->fused_companion_of)
                            st = fr_fail(err, FR_E_USAGE,
                                         "'%s' is measured by --fused-global-scale (next to "
                                         "each %s configuration), not selected by --quantizers",
                                         pattern[p], t->fused_companion_of);
                        else
                            st = fr_fail(err, FR_E_USAGE,
                                         "'%s' needs the joint amax of a fused group, which "
                                         "no sweep hands it: not selected by --quantizers",
                                         pattern[p]);
                        goto done;
                    }
                    continue;
                }
                if (fnmatch(pattern[p], reg->configs[i].cfg->name, 0) == 0 ||
                    fnmatch(pattern[p], q->name, 0) == 0) {
                    any = 1;
                    data_free |= !(q->flags & DATA_FLAGS);
                }
            }
            if (!any) {
                st = fr_fail(err, FR_E_USAGE,
                             "no quantizer or configuration matches '%s' (see 'frontier quantizers')",
                             pattern[p]);
                goto done;
            }
            if (!data_free && !calibrated) {
                st = fr_fail(err, FR_E_USAGE,
                             "'%s' matches only configurations that need calibration "
                             "statistics (give them with --calib FILE)",
                             pattern[p]);
                goto done;
            }
        }
    }
    chosen = calloc(reg->n_configs ? reg->n_configs : 1, sizeof *chosen);
    if (!chosen) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < reg->n_configs; i++) {
        const fr_config_ref *ref = &reg->configs[i];
        const frontier_quantizer *q = fr_config_quantizer(reg, ref);
        if ((q->flags & DATA_FLAGS) && !calibrated)
            continue;
        /* needs the host's joint amax: only through --fused-global-scale */
        if (fr_config_traits_of(ref)->needs_group_amax)
            continue;
        if (bits && !fr_bits_match(&filter, ref->cfg->nominal_bits))
            continue;
        int match = !quantizers;
        for (size_t p = 0; p < n_patterns && !match; p++)
            match = fnmatch(pattern[p], ref->cfg->name, 0) == 0 || fnmatch(pattern[p], q->name, 0) == 0;
        if (match)
            chosen[n++] = ref;
    }
    if (n == 0) {
        if (reg->n_configs == 0)
            st = fr_fail(err, FR_E_USAGE, "no quantizer is registered");
        else if (bits && quantizers)
            st = fr_fail(err, FR_E_USAGE, "no configuration of '%s' has nominal bits in '%s'",
                         quantizers, bits);
        else if (bits)
            st = fr_fail(err, FR_E_USAGE, "no configuration has nominal bits in '%s'", bits);
        else
            st = fr_fail(err, FR_E_USAGE, "no data-free configuration is selected");
        goto done;
    }
    *out = chosen;
    *n_out = n;
    chosen = NULL;
done:
    free(chosen);
    free(pattern);
    free(patterns);
    return st;
}

/* Whether a configuration of quantizer `name` is among configs[0..n). */
static int quantizer_selected(const fr_registry *reg, const fr_config_ref *const *configs, size_t n,
                              const char *name)
{
    for (size_t j = 0; j < n; j++)
        if (!strcmp(fr_config_quantizer(reg, configs[j])->name, name))
            return 1;
    return 0;
}

fr_status fr_sweep_select_fused(const fr_registry *reg, const fr_config_ref ***configs,
                                size_t *n_configs, fr_error *err)
{
    const size_t n_selected = *n_configs;
    char wanted[512] = "", companions[512] = "";
    size_t n_fused = 0;
    for (size_t i = 0; i < reg->n_configs; i++) {
        const fr_config_ref *ref = &reg->configs[i];
        const frontier_config_traits *t = fr_config_traits_of(ref);
        if (!t->needs_group_amax || !t->fused_companion_of)
            continue;
        n_fused++;
        if (!quantizer_selected(reg, *configs, n_selected, t->fused_companion_of)) {
            size_t u = strlen(wanted), v = strlen(companions);
            snprintf(wanted + u, sizeof wanted - u, "%s%s next to %s", u ? ", " : "",
                     ref->cfg->name, t->fused_companion_of);
            snprintf(companions + v, sizeof companions - v, "%s%s", v ? " or " : "",
                     t->fused_companion_of);
            continue;
        }
        const fr_config_ref **grown = realloc(*configs, (*n_configs + 1) * sizeof *grown);
        if (!grown)
            return fr_fail(err, FR_E_NOMEM, "out of memory");
        *configs = grown;
        (*configs)[(*n_configs)++] = ref;
    }
    if (!n_fused)
        return fr_fail(err, FR_E_USAGE,
                       "--fused-global-scale: no registered configuration needs a fused group's "
                       "joint amax");
    if (*n_configs == n_selected)
        return fr_fail(err, FR_E_USAGE,
                       "--fused-global-scale measures %s, and %s is not selected (add it to "
                       "--quantizers, or check --bits)",
                       wanted, companions);
    return FR_OK;
}

fr_status fr_tensor_filter_compile(fr_tensor_filter *f, const char *include, const char *exclude,
                                   fr_error *err)
{
    fr_status st;
    f->has_include = f->has_exclude = 0;
    if (include && (st = fr_pattern_compile(&f->include, include, "--include", err)) != FR_OK)
        return st;
    f->has_include = include != NULL;
    if (exclude && (st = fr_pattern_compile(&f->exclude, exclude, "--exclude", err)) != FR_OK)
        return st;
    f->has_exclude = exclude != NULL;
    return FR_OK;
}

int fr_tensor_filter_selects(const fr_tensor_filter *f, const char *name)
{
    if (f->has_include && regexec(&f->include, name, 0, NULL, 0) != 0)
        return 0;
    if (f->has_exclude && regexec(&f->exclude, name, 0, NULL, 0) == 0)
        return 0;
    return 1;
}

void fr_tensor_filter_free(fr_tensor_filter *f)
{
    if (f->has_include)
        regfree(&f->include);
    if (f->has_exclude)
        regfree(&f->exclude);
    f->has_include = f->has_exclude = 0;
}
