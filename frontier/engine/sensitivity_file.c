/* The calibration file of a sensitivity run: [alpha, residual] per module. */
#include "frontier/engine/sensitivity_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/calib.h"
#include "core/safetensors_write.h"

static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *format(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

/* Appends key = value (value NULL or "": nothing). */
static void put(char **kv, size_t cap, size_t *n, const char *key, char *value)
{
    if (!value || !value[0] || *n + 2 > cap) {
        free(value);
        return;
    }
    kv[(*n)++] = strdup(key);
    kv[(*n)++] = value;
}

static char *dup_or_null(const char *s)
{
    return s && s[0] ? strdup(s) : NULL;
}

/* "0.025,0.05,0.1", or the configuration's own error. */
static char *levels_text(const fr_sens_options *o)
{
    if (o->n_levels == 0)
        return strdup("the configuration's own error (one point per tensor)");
    char buf[FR_SENS_MAX_LEVELS * 24] = "";
    size_t at = 0;
    for (size_t j = 0; j < o->n_levels && at < sizeof buf; j++)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%g", j ? "," : "", o->levels[j]);
    return strdup(buf);
}

/* The tied tensors measured, and the skipped ones with their reasons. */
static char *tensor_notes(const fr_lm *lm, const fr_sens_result *res, int tied)
{
    char *out = strdup("");
    for (size_t k = 0; k < lm->n_tensors && out; k++) {
        if (tied ? !(res[k].measured && lm->tensors[k].tied) : !res[k].skipped)
            continue;
        char *next = tied ? format("%s%s%s", out, out[0] ? ", " : "", lm->tensors[k].name)
                          : format("%s%s%s: %s", out, out[0] ? "; " : "", lm->tensors[k].name,
                                   res[k].skipped);
        free(out);
        out = next;
    }
    if (out && tied && out[0]) {
        char *next = format("%s: also the output layer (the file has no output.weight); its "
                            "perturbation moved both uses, so its alpha is that matrix's",
                            out);
        free(out);
        out = next;
    }
    return out;
}

size_t fr_sens_meta_pairs(const fr_lm *lm, const fr_sens_result *res, const fr_sens_options *o,
                          const fr_sens_summary *sum, const fr_sens_meta *m, char **kv,
                          size_t cap)
{
    size_t n = 0;
    long long S = (long long)o->n_sequences, T = (long long)o->seq_len;
    put(kv, cap, &n, "token_count", format("%lld", S * T));
    put(kv, cap, &n, "model", dup_or_null(m->model));
    put(kv, cap, &n, "n_sequences", format("%lld", S));
    put(kv, cap, &n, "seq_len", format("%lld", T));
    put(kv, cap, &n, "sampling",
        m->text ? format("the first %lld tokens of %s, as %lld consecutive sequences of %lld", S * T,
                         m->text, S, T)
                : NULL);
    put(kv, cap, &n, "forward", dup_or_null(m->engine));
    put(kv, cap, &n, "tool", dup_or_null(m->tool));
    put(kv, cap, &n, "sensitivity",
        format("mean next-token KL(ref || perturbed) over %lld sequences of %lld tokens per unit "
               "squared relative error of one weight tensor at a time; %s; slope through the "
               "origin of KL against the realised r^2, relative residual",
               S, T, m->noise ? m->noise : "?"));
    put(kv, cap, &n, "sensitivity_engine", dup_or_null(m->engine));
    put(kv, cap, &n, "sensitivity_text", dup_or_null(m->text));
    put(kv, cap, &n, "sensitivity_noise", dup_or_null(m->noise));
    put(kv, cap, &n, "sensitivity_levels", levels_text(o));
    put(kv, cap, &n, "sensitivity_seed", format("%llu", m->seed));
    put(kv, cap, &n, "sensitivity_kl_repeat", format("%.6g", sum->kl_repeat));
    put(kv, cap, &n, "sensitivity_fidelity", dup_or_null(m->fidelity));
    put(kv, cap, &n, "sensitivity_tied", tensor_notes(lm, res, 1));
    put(kv, cap, &n, "sensitivity_skipped", tensor_notes(lm, res, 0));
    put(kv, cap, &n, "sensitivity_seconds", format("%.1f", sum->seconds));
    return n;
}

void fr_sens_meta_free(char **kv, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(kv[i]);
}

/* The plan: one [2] F32 entry per measured tensor, named <module>.sensitivity. */
static fr_status plan(const fr_lm *lm, const fr_sens_result *res, fr_st_entry *e, size_t *n,
                      fr_error *err)
{
    *n = 0;
    for (size_t k = 0; k < lm->n_tensors; k++) {
        if (!res[k].measured)
            continue;
        char module[1024];
        if (!fr_calib_module_of(lm->tensors[k].name, module, sizeof module))
            return fr_fail(err, FR_E_USAGE, "tensor name '%.200s...' is too long", lm->tensors[k].name);
        char *name = format("%s.sensitivity", module);
        if (!name)
            return fr_fail(err, FR_E_NOMEM, "out of memory");
        e[*n] = (fr_st_entry){.name = name, .dtype = "F32", .ndim = 1, .shape = {2}, .nbytes = 8};
        (*n)++;
    }
    if (*n == 0)
        return fr_fail(err, FR_E_USAGE, "no tensor was measured: nothing to write");
    return FR_OK;
}

static fr_status write_file(const char *tmp, const fr_lm *lm, const fr_sens_result *res,
                            const fr_st_entry *e, size_t n, char **kv, size_t n_kv, fr_error *err)
{
    fr_st_writer *w;
    fr_status st = fr_st_writer_begin(tmp, e, n, (const char *const *)kv, n_kv / 2, &w, err);
    if (st != FR_OK)
        return st;
    for (size_t k = 0; k < lm->n_tensors && st == FR_OK; k++) {
        if (!res[k].measured)
            continue;
        float v[2] = {(float)res[k].alpha, (float)res[k].residual};
        st = fr_st_writer_write(w, v, sizeof v, err);
    }
    if (st != FR_OK) {
        fr_st_writer_abort(w);
        return st;
    }
    return fr_st_writer_finish(w, err);
}

fr_status fr_sens_write(const char *path, const fr_lm *lm, const fr_sens_result *res,
                        const fr_sens_options *o, const fr_sens_summary *sum,
                        const fr_sens_meta *m, fr_error *err)
{
    enum { CAP = 40 };
    char *kv[CAP];
    fr_st_entry *e = calloc(lm->n_tensors ? lm->n_tensors : 1, sizeof *e);
    char *tmp = format("%s.tmp-%ld", path, (long)getpid());
    size_t n = 0, n_kv = 0;
    fr_status st = e && tmp ? plan(lm, res, e, &n, err) : fr_fail(err, FR_E_NOMEM, "out of memory");
    if (st == FR_OK) {
        n_kv = fr_sens_meta_pairs(lm, res, o, sum, m, kv, CAP);
        st = write_file(tmp, lm, res, e, n, kv, n_kv, err);
    }
    if (st == FR_OK && rename(tmp, path) != 0) {
        char why[128];
        st = fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                     fr_errno_text(errno, why, sizeof why));
    }
    if (st != FR_OK && tmp)
        unlink(tmp);
    fr_sens_meta_free(kv, n_kv);
    for (size_t i = 0; e && i < n; i++)
        free((char *)e[i].name);
    free(e);
    free(tmp);
    return st;
}
