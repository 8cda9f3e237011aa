/*
 * The sweep engine with test quantizers: selection (--bits, --quantizers),
 * rows and their metrics, every kind of quantizer misbehaviour recorded in
 * /skipped while the run continues, and an interruption at a known point
 * followed by --resume giving the rows of an uninterrupted run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/call.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/synthetic.h"
#include "frontier/model/tensors.h"
#include "frontier/sweep/sweep.h"
#include "frontier/sweep/sweep_select.h"
#include "check.h"

static volatile sig_atomic_t stop_flag;
static int stop_after = -1; /* the stopper config sets stop_flag after this many calls */
static int stopper_calls;

static int size_bits_4(const frontier_config *cfg, int64_t rows, int64_t cols, uint64_t *bits,
                       frontier_call *call)
{
    (void)call;
    *bits = (uint64_t)(rows * cols) * (uint64_t)cfg->nominal_bits + 32;
    return FRONTIER_OK;
}

static int size_bits_zero(const frontier_config *cfg, int64_t rows, int64_t cols, uint64_t *bits,
                          frontier_call *call)
{
    (void)cfg, (void)rows, (void)cols, (void)call;
    *bits = 0;
    return FRONTIER_OK;
}

/* A real (if simple) quantizer: symmetric per-tensor rounding to
 * 2^(bits-1) - 1 levels. */
static int quantize_round(const frontier_config *cfg, const float *w, float *w_hat, int64_t rows,
                          int64_t cols, const frontier_calib *calib, frontier_call *call)
{
    (void)calib, (void)call;
    int64_t n = rows * cols;
    float amax = 0;
    for (int64_t i = 0; i < n; i++)
        amax = fabsf(w[i]) > amax ? fabsf(w[i]) : amax;
    float qmax = (float)((1 << ((int)cfg->nominal_bits - 1)) - 1);
    float s = amax / qmax;
    for (int64_t i = 0; i < n; i++)
        w_hat[i] = s > 0 ? rintf(w[i] / s) * s : 0.0f;
    if (!strcmp(cfg->name, "stopper-4") && ++stopper_calls == stop_after)
        stop_flag = 1;
    return FRONTIER_OK;
}

static int quantize_bad(const frontier_config *cfg, const float *w, float *w_hat, int64_t rows,
                        int64_t cols, const frontier_calib *calib, frontier_call *call)
{
    int64_t n = rows * cols;
    quantize_round(&(frontier_config){.name = "x", .nominal_bits = 4}, w, w_hat, rows, cols, calib,
                   call);
    if (!strcmp(cfg->name, "bad-error")) {
        fr_host_api()->set_error(call, "refuses %lldx%lld", (long long)rows, (long long)cols);
        return FRONTIER_ERR_INVALID;
    }
    if (!strcmp(cfg->name, "bad-nan"))
        w_hat[5] = NAN;
    if (!strcmp(cfg->name, "bad-unwritten")) {
        /* the host poisoned the output before the call: restore that
         * poison in the last element, as if it had never been written */
        uint32_t poison = 0x7fc0dead;
        memcpy(&w_hat[n - 1], &poison, sizeof poison);
    }
    if (!strcmp(cfg->name, "bad-overrun"))
        w_hat[n] = 1.0f;
    return FRONTIER_OK;
}

static const frontier_config good_configs[] = {
    {"good-4", 4, "{\"bits\":4}", NULL},
    {"good-8", 8, "{\"bits\":8}", NULL},
};
static const frontier_config stopper_configs[] = {{"stopper-4", 4, "{}", NULL}};
static const frontier_config bad_configs[] = {
    {"bad-error", 4, "{}", NULL},   {"bad-nan", 4, "{}", NULL},  {"bad-unwritten", 4, "{}", NULL},
    {"bad-overrun", 4, "{}", NULL}, {"bad-size0", 4, "{}", NULL},
};
static const frontier_config calib_configs[] = {{"calib-4", 4, "{}", NULL}};

static frontier_quantizer good = {FRONTIER_PLUGIN_ABI_VERSION, sizeof(frontier_quantizer), "good",
                                  "test", "1", FRONTIER_Q_DETERMINISTIC, 2, good_configs,
                                  size_bits_4, quantize_round, NULL, NULL, NULL};
static frontier_quantizer stopper = {FRONTIER_PLUGIN_ABI_VERSION, sizeof(frontier_quantizer),
                                     "stopper", "test", "1", 0, 1, stopper_configs, size_bits_4,
                                     quantize_round, NULL, NULL, NULL};
static frontier_quantizer bad = {FRONTIER_PLUGIN_ABI_VERSION, sizeof(frontier_quantizer), "bad",
                                 "test", "1", 0, 5, bad_configs, size_bits_4, quantize_bad, NULL, NULL,
                                 NULL};
static frontier_quantizer calib = {FRONTIER_PLUGIN_ABI_VERSION, sizeof(frontier_quantizer), "calib",
                                   "test", "1", FRONTIER_Q_NEEDS_HESSIAN, 1, calib_configs,
                                   size_bits_4, quantize_round, NULL, NULL, NULL};

static fr_qentry entries[4];
static fr_config_ref refs[16];
static fr_registry reg;

static void build_registry(void)
{
    /* size0 needs its own size function: a copy of bad with another config list
     * would be a second family; instead patch at call time via a wrapper */
    const frontier_quantizer *qs[] = {&good, &stopper, &bad, &calib};
    size_t n = 0;
    for (size_t e = 0; e < 4; e++) {
        entries[e] = (fr_qentry){.q = qs[e], .origin = "builtin", .dl = NULL, .family = -1};
        for (size_t c = 0; c < qs[e]->n_configs; c++)
            refs[n++] = (fr_config_ref){.quantizer = e, .cfg = &qs[e]->configs[c]};
    }
    reg = (fr_registry){entries, 4, refs, n, 0};
}

static int bad_size_bits(const frontier_config *cfg, int64_t rows, int64_t cols, uint64_t *bits,
                         frontier_call *call)
{
    if (!strcmp(cfg->name, "bad-size0"))
        return size_bits_zero(cfg, rows, cols, bits, call);
    return size_bits_4(cfg, rows, cols, bits, call);
}

static char dir[256];
static const char *path_in(const char *name)
{
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static fr_status run(const char *output, const char *quantizers, const char *bits, int threads,
                     int resume, fr_sweep **out, fr_error *err)
{
    fr_source *src = NULL;
    fr_status st = fr_synthetic_open("gaussian:64x96*3,laplace:200,student-t3:33x65", 5, &src, err);
    if (st != FR_OK)
        return st;
    fr_sweep_options opt = {.output = output, .quantizers = quantizers, .bits = bits,
                            .threads = threads, .resume = resume, .quiet = 1, .stop = &stop_flag,
                            .command_line = "test", .device = "cpu"};
    fr_sweep *sw = NULL;
    st = fr_sweep_create(&reg, &opt, &sw, err);
    if (st == FR_OK)
        st = fr_sweep_add_source(sw, src, err);
    if (st == FR_OK)
        st = fr_sweep_execute(sw, err);
    if (out)
        *out = sw;
    else
        fr_sweep_destroy(sw);
    fr_synthetic_close(src);
    return st;
}

static void test_bits(void)
{
    fr_bits_filter f;
    fr_error err = {0};
    CHECK_OK(fr_bits_parse("2..8", &f, &err), err);
    CHECK(f.n == 1 && f.lo[0] == 2 && f.hi[0] == 8);
    CHECK(fr_bits_match(&f, 4.5) && fr_bits_match(&f, 8) && !fr_bits_match(&f, 8.25));
    CHECK_OK(fr_bits_parse("2,3,4,8", &f, &err), err);
    CHECK(f.n == 4 && fr_bits_match(&f, 3) && !fr_bits_match(&f, 5));
    CHECK_OK(fr_bits_parse("2..4,8,4.5..6.5", &f, &err), err);
    CHECK(f.n == 3 && fr_bits_match(&f, 6.25));
    CHECK_OK(fr_bits_parse("4", &f, &err), err);
    CHECK(fr_bits_match(&f, 4) && !fr_bits_match(&f, 4.5));
    static const char *const malformed[] = {"", "8..2", "a", "2..", "..8", "2...8", "2,,3", "2-8",
                                             "2..8,", "-1", "inf"};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++)
        CHECK_EQ_U64(fr_bits_parse(malformed[i], &f, &err), FR_E_USAGE);
    fr_bits_parse("8..2", &f, &err);
    CHECK_STR(err.msg, "empty bit range '8..2' (the lower bound comes first)");
}

static void test_select(void)
{
    const fr_config_ref **sel = NULL;
    size_t n = 0;
    fr_error err = {0};
    /* default: every data-free configuration, in registry order */
    CHECK_OK(fr_sweep_select_configs(&reg, NULL, NULL, 0, &sel, &n, &err), err);
    CHECK_EQ_U64(n, 8);
    free(sel);
    CHECK_OK(fr_sweep_select_configs(&reg, "8", NULL, 0, &sel, &n, &err), err);
    CHECK(n == 1 && !strcmp(sel[0]->cfg->name, "good-8"));
    free(sel);
    /* a family name selects its configurations; globs over config names */
    CHECK_OK(fr_sweep_select_configs(&reg, NULL, "good,bad-n*", 0, &sel, &n, &err), err);
    CHECK_EQ_U64(n, 3);
    free(sel);
    CHECK_EQ_U64(fr_sweep_select_configs(&reg, NULL, "good,nosuch*", 0, &sel, &n, &err), FR_E_USAGE);
    CHECK_STR(err.msg, "no quantizer or configuration matches 'nosuch*' (see 'frontier quantizers')");
    CHECK_EQ_U64(fr_sweep_select_configs(&reg, NULL, "calib*", 0, &sel, &n, &err), FR_E_USAGE);
    CHECK_STR(err.msg, "'calib*' matches only configurations that need calibration statistics "
                       "(give them with --calib FILE)");
    /* with statistics (--calib) they are selected */
    CHECK_OK(fr_sweep_select_configs(&reg, NULL, "calib*", 1, &sel, &n, &err), err);
    CHECK(n >= 1);
    free(sel);
    CHECK_EQ_U64(fr_sweep_select_configs(&reg, "3", "good", 0, &sel, &n, &err), FR_E_USAGE);
    CHECK_STR(err.msg, "no configuration of 'good' has nominal bits in '3'");
    CHECK_EQ_U64(fr_sweep_select_configs(&reg, "8..2", NULL, 0, &sel, &n, &err), FR_E_USAGE);
    CHECK_EQ_U64(fr_sweep_select_configs(&reg, NULL, "", 0, &sel, &n, &err), FR_E_USAGE);
    CHECK_EQ_U64(fr_sweep_select_configs(&reg, NULL, ",", 0, &sel, &n, &err), FR_E_USAGE);

    /* skip reasons */
    fr_tensor t = {.dtype = FR_DTYPE_F32, .ndim = 1, .shape = {10}, .numel = 10};
    char buf[160];
    CHECK(fr_sweep_skip_reason(&t, 0, buf, sizeof buf) != NULL);
    t.ndim = 2, t.shape[1] = 1;
    CHECK(fr_sweep_skip_reason(&t, 0, buf, sizeof buf) == NULL);
    CHECK_STR(fr_sweep_skip_reason(&t, 11, buf, sizeof buf), "10 elements, fewer than --min-numel 11");
    t.dtype = FR_DTYPE_I32;
    snprintf(t.dtype_name, sizeof t.dtype_name, "I32");
    CHECK_STR(fr_sweep_skip_reason(&t, 0, buf, sizeof buf), "not a floating-point tensor (I32)");
    int64_t rows, cols;
    fr_tensor t4 = {.ndim = 4, .shape = {8, 3, 5, 7}, .numel = 840};
    fr_sweep_matrix(&t4, &rows, &cols);
    CHECK(rows == 8 && cols == 105);
}

static const fr_ds_skipped *find_skipped(const fr_dataset *ds, const char *name, const char *config)
{
    for (size_t i = 0; i < ds->n_skipped; i++)
        if (!strcmp(ds->skipped[i].name, name) && !strcmp(ds->skipped[i].config, config))
            return &ds->skipped[i];
    return NULL;
}

static void test_failures_recorded(void)
{
    fr_error err = {0};
    fr_sweep *sw = NULL;
    fr_status st = run(path_in("bad.h5"), "good,bad", NULL, 2, 0, &sw, &err);
    CHECK_EQ_U64(st, FR_E_FAIL);
    CHECK(strstr(err.msg, "20 (tensor, configuration) pairs failed") != NULL);
    const fr_dataset *ds = fr_sweep_dataset(sw);
    /* 4 measured tensors (3 gaussian + the t3), the 1-D laplace skipped */
    CHECK_EQ_U64(ds->n_tensors, 4);
    CHECK_EQ_U64(ds->n_results, 4 * 2);
    CHECK(find_skipped(ds, "synthetic.3.laplace", "") != NULL);
    const char *t = "synthetic.4.student-t3";
    const fr_ds_skipped *s;
    /* the registry's checked calls word these; the overrun is the executor's */
    CHECK((s = find_skipped(ds, t, "bad-error")) && strstr(s->reason, "quantize_cpu failed") &&
          strstr(s->reason, "refuses 33x65"));
    CHECK((s = find_skipped(ds, t, "bad-nan")) && strstr(s->reason, "nan at row 0, col 5"));
    CHECK((s = find_skipped(ds, t, "bad-unwritten")) && strstr(s->reason, "nan at row 32, col 64"));
    CHECK((s = find_skipped(ds, t, "bad-overrun")) && strstr(s->reason, "wrote past the end"));
    CHECK((s = find_skipped(ds, t, "bad-size0")) && strstr(s->reason, "size_bits returned 0 bits"));
    for (size_t i = 0; i < ds->n_skipped; i++)
        if (ds->skipped[i].config[0])
            CHECK(strstr(ds->skipped[i].reason, ds->skipped[i].config) != NULL);
    /* the good rows: bits and error as defined */
    for (size_t i = 0; i < ds->n_results; i++) {
        const fr_ds_result *r = &ds->results[i];
        const fr_ds_tensor *ten = fr_dataset_tensor(ds, r->tensor_id);
        const fr_ds_config *cfg = fr_dataset_config(ds, r->config_id);
        CHECK(ten && cfg);
        if (!ten || !cfg)
            continue;
        CHECK(r->total_bits == ten->numel * (uint64_t)cfg->nominal_bits + 32);
        CHECK(fabs(r->rel_err - sqrt(r->sq_err / ten->sq_norm)) <= 1e-15 * r->rel_err);
        CHECK(fabs(r->sqnr_db + 20 * log10(r->rel_err)) < 1e-9);
        CHECK(r->cosine > 0.0 && r->cosine <= 1.0);
        CHECK(isnan(r->out_rel_err));
        CHECK_STR(r->device, "cpu");
    }
    fr_sweep_destroy(sw);
    /* the file holds the same */
    fr_dataset back;
    CHECK_OK(fr_dataset_read(path_in("bad.h5"), &back, &err), err);
    CHECK_EQ_U64(back.n_results, 8);
    CHECK_EQ_U64(back.n_skipped, 1 + 4 * 5);
    fr_dataset_free(&back);
}

static int same_rows(const fr_dataset *a, const fr_dataset *b)
{
    if (a->n_results != b->n_results || a->n_tensors != b->n_tensors || a->n_skipped != b->n_skipped)
        return 0;
    for (size_t i = 0; i < a->n_results; i++) {
        const fr_ds_result *x = &a->results[i], *y = &b->results[i];
        if (x->tensor_id != y->tensor_id || x->config_id != y->config_id ||
            x->total_bits != y->total_bits || x->sq_err != y->sq_err || x->rel_err != y->rel_err ||
            x->max_abs_err != y->max_abs_err || x->cosine != y->cosine)
            return 0;
    }
    for (size_t i = 0; i < a->n_tensors; i++)
        if (a->tensors[i].sq_norm != b->tensors[i].sq_norm)
            return 0;
    return 1;
}

static void test_interrupt_resume(void)
{
    fr_error err = {0};
    fr_dataset full, resumed;
    stop_after = -1;
    CHECK_OK(run(path_in("full.h5"), "good,stopper", NULL, 1, 0, NULL, &err), err);
    /* stop during the third tensor: the first rows are committed */
    stop_flag = 0;
    stopper_calls = 0;
    stop_after = 3;
    CHECK_EQ_U64(run(path_in("part.h5"), "good,stopper", NULL, 1, 0, NULL, &err), FR_E_INTERRUPT);
    CHECK(strstr(err.msg, "run again with --resume") != NULL);
    fr_dataset part;
    CHECK_OK(fr_dataset_read(path_in("part.h5"), &part, &err), err);
    CHECK(part.n_results >= 3 * 2 && part.n_results < 4 * 3);
    fr_dataset_free(&part);
    /* without --resume the partial output is refused and kept */
    stop_flag = 0;
    stop_after = -1;
    CHECK_EQ_U64(run(path_in("part.h5"), "good,stopper", NULL, 1, 0, NULL, &err), FR_E_OUTPUT);
    CHECK_OK(run(path_in("part.h5"), "good,stopper", NULL, 3, 1, NULL, &err), err);
    CHECK_OK(fr_dataset_read(path_in("full.h5"), &full, &err), err);
    CHECK_OK(fr_dataset_read(path_in("part.h5"), &resumed, &err), err);
    CHECK(same_rows(&full, &resumed));
    fr_dataset_free(&resumed);
    /* resuming with an extra configuration adds only its rows */
    CHECK_EQ_U64(run(path_in("part.h5"), "good,stopper,bad-nan", NULL, 2, 1, NULL, &err), FR_E_FAIL);
    CHECK_OK(fr_dataset_read(path_in("part.h5"), &resumed, &err), err);
    CHECK_EQ_U64(resumed.n_results, full.n_results);
    CHECK_EQ_U64(resumed.n_configs, full.n_configs + 1);
    fr_dataset_free(&resumed);
    fr_dataset_free(&full);
}

int main(void)
{
    fr_log_set_level(FRONTIER_LOG_ERROR); /* the failures below are expected */
    bad.size_bits = bad_size_bits;
    build_registry();
    snprintf(dir, sizeof dir, "%s/frontier-test-engine-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char d[32];
    fr_format_duration(3725, d, sizeof d);
    CHECK_STR(d, "1:02:05");
    fr_format_duration(65.4, d, sizeof d);
    CHECK_STR(d, "1:05");
    fr_format_duration(4, d, sizeof d);
    CHECK_STR(d, "4s");
    fr_format_duration(NAN, d, sizeof d);
    CHECK_STR(d, "?");
    CHECK(fr_progress_start("tensors", 10, 100, 1) == NULL); /* quiet: no progress at all */
    test_bits();
    test_select();
    test_failures_recorded();
    test_interrupt_resume();
    int rc = fr_test_finish("test_engine");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (rc == 0 && system(cmd) != 0)
        rc = 1;
    return rc;
}
