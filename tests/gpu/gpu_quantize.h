/*
 * What the tests of the host families' quantize_cuda share (test_gpu_clip.c,
 * test_gpu_ggml.c): one configuration's quantize_cpu and quantize_cuda on
 * the same tensor, and the same refusal from both.
 */
#ifndef FR_GPU_QUANTIZE_H
#define FR_GPU_QUANTIZE_H

#include "gpu_test.h"

#include "core/call.h"
#include "core/parallel.h"
#include "core/registry.h"

/* cpu[] = quantize_cpu of ref on t->f32, gpu[] = quantize_cuda (through the
 * registry) on t->bytes in t's dtype into a NaN-poisoned device output;
 * calib may be NULL. rows x cols floats each. */
static inline void gpu_quantize_both(const fr_registry *reg, const fr_config_ref *ref,
                                     const gpu_tensor *t, const frontier_calib *calib,
                                     fr_pool *pool, float *cpu, float *gpu)
{
    fr_error err;
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    const char *name = ref->cfg->name;
    const int64_t n = t->rows * t->cols;
    const size_t wbytes = (size_t)n * gpu_dtype_size(t->dtype);
    frontier_call call;
    fr_call_init(&call, pool, 1, q->name, name);
    call.quantizer = q->name;
    int rc = q->quantize_cpu(ref->cfg, t->f32, cpu, t->rows, t->cols, calib, &call);
    CHECK_MSG(rc == FRONTIER_OK, "%s: quantize_cpu: %s", name, call.error);
    fr_call_release(&call);
    void *w_dev = NULL;
    float *hat_dev = NULL;
    GPU_OK(fr_cuda_malloc(&w_dev, wbytes, &err));
    GPU_OK(fr_cuda_malloc((void **)&hat_dev, (size_t)n * sizeof(float), &err));
    GPU_OK(fr_cuda_upload(w_dev, t->bytes, wbytes, &err));
    GPU_OK(fr_cuda_fill32(hat_dev, GPU_POISON, (size_t)n, NULL, &err));
    fr_call_init(&call, pool, 1, q->name, name);
    call.quantizer = q->name;
    GPU_OK(fr_quantizer_quantize_cuda(reg, ref, w_dev, t->dtype, hat_dev, t->rows, t->cols, calib,
                                      q->name, NULL, &call, &err));
    fr_call_release(&call);
    GPU_OK(fr_cuda_sync(NULL, &err));
    GPU_OK(fr_cuda_download(gpu, hat_dev, (size_t)n * sizeof(float), &err));
    fr_cuda_free(w_dev);
    fr_cuda_free(hat_dev);
}

/* The family's own quantize_cpu and quantize_cuda (not the registry's
 * checks) on the float32 rows x cols w must both fail, with the same code
 * and the same message (printed). */
static inline void gpu_check_refusal(const fr_registry *reg, const char *name, const float *w,
                                     int64_t rows, int64_t cols, const frontier_calib *calib,
                                     fr_pool *pool)
{
    fr_error err;
    const fr_config_ref *ref = fr_registry_find_config(reg, name);
    CHECK_MSG(ref != NULL, "no configuration '%s'", name);
    if (!ref)
        return;
    const frontier_quantizer *q = fr_config_quantizer(reg, ref);
    const size_t bytes = (size_t)(rows * cols) * sizeof(float);
    float *out = malloc(bytes);
    frontier_call call;
    char cpu_msg[512];
    fr_call_init(&call, pool, 1, q->name, name);
    int rc_cpu = q->quantize_cpu(ref->cfg, w, out, rows, cols, calib, &call);
    snprintf(cpu_msg, sizeof cpu_msg, "%s", call.error);
    fr_call_release(&call);
    void *w_dev = NULL;
    float *hat_dev = NULL;
    GPU_OK(fr_cuda_malloc(&w_dev, bytes, &err));
    GPU_OK(fr_cuda_malloc((void **)&hat_dev, bytes, &err));
    GPU_OK(fr_cuda_upload(w_dev, w, bytes, &err));
    fr_call_init(&call, pool, 1, q->name, name);
    int rc_gpu = q->quantize_cuda(ref->cfg, w_dev, FRONTIER_DTYPE_F32, hat_dev, rows, cols, calib,
                                  NULL, &call);
    CHECK_MSG(rc_cpu != FRONTIER_OK && rc_gpu == rc_cpu && !strcmp(cpu_msg, call.error),
              "%s: cpu %d '%s', gpu %d '%s'", name, rc_cpu, cpu_msg, rc_gpu, call.error);
    printf("%s refused by both (%d): %s\n", name, rc_gpu, call.error);
    fr_call_release(&call);
    GPU_OK(fr_cuda_sync(NULL, &err));
    fr_cuda_free(w_dev);
    fr_cuda_free(hat_dev);
    free(out);
}

#endif
