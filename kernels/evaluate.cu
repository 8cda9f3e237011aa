/*
 * One whole tensor already on the device, evaluated synchronously: what the
 * built-in descriptors' quantize_cuda / sweep_cuda do, and what the tests
 * and benchmarks call. (The executor streams instead; exec_cuda.cu.)
 */
#include <stdlib.h>
#include <string.h>

#include "kcommon.cuh"

extern "C" {
#include "core/call.h"
}

int fr_kspec_of_ref(const fr_registry *reg, const fr_config_ref *ref, fr_kspec *out)
{
    if (!reg || !ref || ref->quantizer >= reg->n_entries)
        return 0;
    const fr_qentry *e = &reg->entries[ref->quantizer];
    /* only built-ins: a plugin's impl is not one of the families' structs */
    if (e->family < 0)
        return 0;
    const frontier_quantizer *q = e->q;
    if (ref->cfg < q->configs || ref->cfg >= q->configs + q->n_configs)
        return 0;
    return fr_kspec_of(e->family, ref->cfg, out);
}

extern "C" int fr_cuda_has_kernel(const fr_registry *reg, const fr_config_ref *ref)
{
    fr_kspec s;
    return fr_kspec_of_ref(reg, ref, &s);
}

/* Shape and dtype checks every entry point shares. */
static fr_status fr_kcheck(const void *w, int dtype, int64_t rows, int64_t cols, fr_error *err)
{
    if (!w)
        return fr_fail(err, FR_E_USAGE, "no device tensor");
    if (!fr_kdtype_size(dtype))
        return fr_fail(err, FR_E_USAGE, "the kernels read f32, f16 and bf16, not dtype %d",
                       dtype);
    if (rows < 1 || cols < 1 || rows > INT64_MAX / cols)
        return fr_fail(err, FR_E_USAGE, "bad shape %lld x %lld", (long long)rows,
                       (long long)cols);
    return FR_OK;
}

/*
 * n specs over the whole device tensor: statistics once, then one fused
 * launch per FR_K_MAX_SPECS specs. Fills sums[n] (sq_ref from the tensor's
 * own sum), *sq_norm and *nonfinite; synchronises the stream.
 */
static fr_status fr_kevaluate(const fr_kspec *specs, size_t n, const void *w, int dtype,
                              int64_t rows, int64_t cols, frontier_error_sums *sums,
                              double *sq_norm, int64_t *nonfinite, cudaStream_t stream,
                              fr_error *err)
{
    fr_status st = FR_OK;
    fr_kwork work;
    fr_kpart *host = NULL;
    fr_kneeds needs = fr_kneeds_of(specs, n);
    fr_kview view = {w, dtype, rows, cols, 0, rows};
    fr_kwork_init(&work, stream);
    FR_TRY(fr_kcheck(w, dtype, rows, cols, err));
    host = (fr_kpart *)malloc((FR_K_MAX_SPECS + 1) * sizeof *host);
    if (!host) {
        st = fr_fail(err, FR_E_NOMEM, "cannot allocate error sums");
        goto cleanup;
    }
    FR_TRY(fr_kwork_reserve(&work, &needs, rows, cols, err));
    FR_TRY(fr_kstats_chunk(&work, &needs, &view, err));
    FR_TRY(fr_kstats_finish(&work, &needs, rows, cols, err));
    for (size_t first = 0; first < n; first += FR_K_MAX_SPECS) {
        int batch = (int)(n - first < FR_K_MAX_SPECS ? n - first : FR_K_MAX_SPECS);
        FR_TRY(fr_kfused(&work, specs + first, batch, &view, NULL, err));
        FR_CU(cudaMemcpyAsync(host, work.results.p, (size_t)(batch + 1) * sizeof *host,
                              cudaMemcpyDeviceToHost, stream));
        FR_CU(cudaStreamSynchronize(stream));
        for (int i = 0; i < batch; i++) {
            frontier_error_sums *o = &sums[first + (size_t)i];
            o->sq_err = host[i].sq_err;
            o->sq_ref = host[batch].sq_err;
            o->sq_hat = host[i].sq_hat;
            o->dot = host[i].dot;
            o->max_abs_err = host[i].max_abs;
        }
        if (sq_norm)
            *sq_norm = host[batch].sq_err;
        if (nonfinite)
            *nonfinite = (int64_t)(host[batch].sq_hat + host[batch].dot);
    }
cleanup:
    fr_kwork_free(&work);
    cudaStreamSynchronize(stream); /* the frees, and nothing left in flight on error */
    free(host);
    return st;
}

extern "C" fr_status fr_cuda_sweep(const fr_registry *reg, const fr_config_ref *const *cfgs,
                                   size_t n, const void *w, int dtype, int64_t rows, int64_t cols,
                                   frontier_error_sums *sums, double *sq_norm, int64_t *nonfinite,
                                   void *stream, fr_error *err)
{
    fr_status st = FR_OK;
    fr_kspec *specs = (fr_kspec *)calloc(n ? n : 1, sizeof *specs);
    if (!specs)
        return fr_fail(err, FR_E_NOMEM, "cannot allocate %zu kernel configurations", n);
    for (size_t i = 0; i < n; i++) {
        if (!fr_kspec_of_ref(reg, cfgs[i], &specs[i])) {
            st = fr_fail(err, FR_E_USAGE, "configuration '%s' has no built-in kernel",
                         cfgs[i] && cfgs[i]->cfg ? cfgs[i]->cfg->name : "(null)");
            goto cleanup;
        }
    }
    st = fr_kevaluate(specs, n, w, dtype, rows, cols, sums, sq_norm, nonfinite,
                      (cudaStream_t)stream, err);
cleanup:
    free(specs);
    return st;
}

static fr_status fr_kquantize_spec(const fr_kspec *spec, const void *w, int dtype, float *w_hat,
                                   int64_t rows, int64_t cols, cudaStream_t stream, fr_error *err)
{
    fr_status st = FR_OK;
    fr_kwork work;
    fr_kneeds needs = fr_kneeds_of(spec, 1);
    fr_kview view = {w, dtype, rows, cols, 0, rows};
    fr_kwork_init(&work, stream);
    FR_TRY(fr_kcheck(w, dtype, rows, cols, err));
    if (!w_hat) {
        st = fr_fail(err, FR_E_USAGE, "no device output");
        goto cleanup;
    }
    FR_TRY(fr_kwork_reserve(&work, &needs, rows, cols, err));
    FR_TRY(fr_kstats_chunk(&work, &needs, &view, err));
    FR_TRY(fr_kstats_finish(&work, &needs, rows, cols, err));
    FR_TRY(fr_kfused(&work, spec, 1, &view, w_hat, err));
cleanup:
    /* stream-ordered frees: nothing waits, as quantize_cuda promises */
    fr_kwork_free(&work);
    return st;
}

extern "C" fr_status fr_cuda_quantize(const fr_registry *reg, const fr_config_ref *ref,
                                      const void *w, int dtype, float *w_hat, int64_t rows,
                                      int64_t cols, void *stream, fr_error *err)
{
    fr_kspec spec;
    if (!fr_kspec_of_ref(reg, ref, &spec))
        return fr_fail(err, FR_E_USAGE, "configuration '%s' has no built-in kernel",
                       ref && ref->cfg ? ref->cfg->name : "(null)");
    return fr_kquantize_spec(&spec, w, dtype, w_hat, rows, cols, (cudaStream_t)stream, err);
}

/* ---- the built-in descriptors' quantize_cuda / sweep_cuda ---- */

int fr_kfamily_quantize(int family, const frontier_config *cfg, const void *w, int dtype,
                        float *w_hat, int64_t rows, int64_t cols, void *stream,
                        frontier_call *call)
{
    fr_error err;
    fr_kspec spec;
    fr_error_clear(&err);
    if (!fr_kspec_of(family, cfg, &spec)) {
        fr_fail(&err, FR_E_PLUGIN, "%s: configuration '%s' has no kernel",
                fr_builtin_families[family].name,
                cfg && cfg->name ? cfg->name : "(null)");
        return fr_kreport(call, FR_E_PLUGIN, &err);
    }
    fr_status st = fr_kquantize_spec(&spec, w, dtype, w_hat, rows, cols, (cudaStream_t)stream,
                                     &err);
    return fr_kreport(call, st, &err);
}

int fr_kfamily_sweep(int family, const frontier_config *const *cfgs, size_t n, const void *w,
                     int dtype, int64_t rows, int64_t cols, frontier_error_sums *sums,
                     void *stream, frontier_call *call)
{
    fr_error err;
    fr_status st = FR_OK;
    fr_error_clear(&err);
    fr_kspec *specs = (fr_kspec *)calloc(n ? n : 1, sizeof *specs);
    if (!specs) {
        fr_fail(&err, FR_E_NOMEM, "cannot allocate %zu kernel configurations", n);
        return fr_kreport(call, FR_E_NOMEM, &err);
    }
    for (size_t i = 0; i < n; i++) {
        if (!fr_kspec_of(family, cfgs[i], &specs[i])) {
            st = fr_fail(&err, FR_E_PLUGIN, "%s: configuration '%s' has no kernel",
                         fr_builtin_families[family].name,
                         cfgs[i] && cfgs[i]->name ? cfgs[i]->name : "(null)");
            goto cleanup;
        }
    }
    st = fr_kevaluate(specs, n, w, dtype, rows, cols, sums, NULL, NULL, (cudaStream_t)stream,
                      &err);
cleanup:
    free(specs);
    return fr_kreport(call, st, &err);
}
