/*
 * GPTQ benchmark (docs/gpu.md, "GPTQ"): int4-g128-sym GPTQ of a
 * 4096 x 4096 and a 14336 x 4096 layer (rows x input columns) with H from
 * 8192 correlated random tokens, on the GPU (kernels/gptq.cu): time per
 * layer (median of --reps CUDA-event timings after one warm-up, H already
 * on the device, the whole fr_cuda_gptq call: factorisation, column loop,
 * lazy updates) and the output error out_rel_err = sqrt(tr(dW H dW^T) /
 * tr(W H W^T)) with rel_err.
 *
 *   bench_gptq [--tokens T] [--reps N] [--shapes 4096x4096,14336x4096]
 *              [--dir DIR] [--json FILE] [--phases]
 *              [--loops warp8,warp4,block,serial]
 *
 * --loops times each named column-loop kernel (kernels/gptq.h,
 * FR_GPTQ_LOOP_*; the first is the default, warp8) on every shape, one
 * line and one JSON entry ("loop") each; their results are equal bit for
 * bit, which the benchmark checks. "serial" is warp8 without the lookahead
 * (fr_gptq_params.serial: each block's lazy update as one GEMM after its
 * column loop); its w^ may differ in values on a rounding boundary, and
 * the count is printed ("w_hat_differ").
 *
 * After the timed calls, one more call with phase timing
 * (fr_cuda_gptq_timed: setup, factorisation, preparation, the block loop's
 * wall time, the column-loop kernels' and the lazy-update GEMMs' sums) goes into the JSON ("phases") and, with --phases, the output.
 *
 * --dir writes, per shape, DIR/w_RxC.f32 and DIR/h_C.f32 (raw little-endian
 * float32, row-major) for bench/peers/torch_gptq.py, which runs the eager
 * PyTorch GPTQ on the same data and prints the comparison.
 *
 * Tokens: x_t = s o a_t with a_t an AR(1) sequence over the features
 * (a_j = 0.9 a_{j-1} + sqrt(1 - 0.81) z_j) and per-feature scales s_j =
 * exp(N(0, 0.5)) with 1% of features x8 (outlier channels); W ~ N(0, 0.02^2).
 * Deterministic (fixed seed).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>
#include <algorithm>

#include <cublas_v2.h>
#include <cjson/cJSON.h>

#include "kernels/kcommon.cuh"
#include "kernels/gptq.h"
#include "kernels/outerr.h"

#define CU(call)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "bench_gptq: %s failed at %s:%d: %s\n", #call, __FILE__, __LINE__, \
                    cudaGetErrorString(e_));                                                  \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)
#define FR(expr)                                                                              \
    do {                                                                                      \
        fr_status s_ = (expr);                                                                \
        if (s_ != FR_OK) {                                                                    \
            fprintf(stderr, "bench_gptq: %s failed: %s\n", #expr, err.msg);                  \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return ((double)(rng_state >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double normal(void)
{
    return sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform());
}

static __global__ void upper_from_lower(float *h, int64_t n)
{
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n * n;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e / n, j = e % n;
        if (j > i)
            h[e] = h[j * n + i];
    }
}

static void write_file(const char *path, const void *p, size_t bytes)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, bytes, f) != bytes) {
        fprintf(stderr, "bench_gptq: cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    int64_t tokens = 8192;
    int reps = 5, show_phases = 0;
    const char *shapes = "4096x4096,14336x4096", *dir = NULL, *json = NULL, *loops = "warp8";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tokens") && i + 1 < argc)
            tokens = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--shapes") && i + 1 < argc)
            shapes = argv[++i];
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--phases"))
            show_phases = 1;
        else if (!strcmp(argv[i], "--loops") && i + 1 < argc)
            loops = argv[++i];
        else {
            fprintf(stderr, "usage: bench_gptq [--tokens T] [--reps N] [--shapes RxC,...] "
                            "[--dir DIR] [--json FILE] [--phases] "
                            "[--loops warp8,warp4,block,serial]\n");
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;
    fr_error err;
    fr_error_clear(&err);
    if (fr_cuda_device_count() <= 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    char desc[256] = "unknown";
    fr_cuda_device_describe(0, desc, sizeof desc, &err);
    printf("device: %s\nGPTQ int4-g128-sym, H from %lld correlated tokens, median of %d\n", desc,
           (long long)tokens, reps);
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cublasHandle_t blas;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "bench_gptq: cublasCreate failed\n");
        return 1;
    }
    cublasSetStream(blas, s);
    cublasSetMathMode(blas, CUBLAS_PEDANTIC_MATH);
    fr_cuda_blas *ob = NULL;
    FR(fr_cuda_blas_create((void *)s, 0, &ob, &err));
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "device", desc);
    cJSON_AddNumberToObject(root, "tokens", (double)tokens);
    cJSON_AddStringToObject(root, "config", "gptq-int4-g128-sym");
    cJSON *arr = cJSON_AddArrayToObject(root, "layers");
    /* "serial": warp8 with each block's lazy update as one GEMM after its
     * column loop (fr_gptq_params.serial), the default before the lookahead */
    static const char *const loop_names[] = {"warp8", "warp4", "block", "serial"};
    const int loop_serial = 3; /* its index: not an FR_GPTQ_LOOP_* value */
    std::vector<int> loop_ids;
    for (const char *q = loops; *q;) {
        size_t len = strcspn(q, ",");
        int id = -1;
        for (int k = 0; k < 4; k++)
            if (strlen(loop_names[k]) == len && !strncmp(q, loop_names[k], len))
                id = k;
        if (id < 0) {
            fprintf(stderr,
                    "bench_gptq: unknown column loop in '%s' (warp8, warp4, block, serial)\n",
                    loops);
            return 2;
        }
        loop_ids.push_back(id);
        q += len;
        if (*q == ',')
            q++;
    }
    if (loop_ids.empty())
        loop_ids.push_back(FR_GPTQ_LOOP_WARP8);
    printf("%-12s %-6s %12s %12s %12s %8s\n", "shape", "loop", "gpu ms", "out_rel_err", "rel_err",
           "retries");

    int64_t h_cols = -1;
    float *h_d = NULL;
    const char *p = shapes;
    while (*p) {
        long long R = 0, C = 0;
        int used = 0;
        if (sscanf(p, "%lldx%lld%n", &R, &C, &used) != 2 || R <= 0 || C <= 0) {
            fprintf(stderr, "bench_gptq: bad shape list '%s'\n", shapes);
            return 2;
        }
        p += used;
        if (*p == ',')
            p++;
        const int64_t rows = R, n = C;
        if (h_cols != n) {
            /* H = X^T X / T from T correlated tokens */
            std::vector<float> x((size_t)(tokens * n)), scale((size_t)n);
            for (int64_t j = 0; j < n; j++)
                scale[(size_t)j] = (float)(exp(0.5 * normal()) * (uniform() < 0.01 ? 8.0 : 1.0));
            for (int64_t t = 0; t < tokens; t++) {
                double a = normal();
                for (int64_t j = 0; j < n; j++) {
                    a = 0.9 * a + 0.4358898943540674 * normal();
                    x[(size_t)(t * n + j)] = (float)a * scale[(size_t)j];
                }
            }
            float *x_d = NULL;
            cudaFree(h_d);
            CU(cudaMalloc((void **)&x_d, x.size() * sizeof(float)));
            CU(cudaMalloc((void **)&h_d, (size_t)(n * n) * sizeof(float)));
            CU(cudaMemcpy(x_d, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
            const float inv_t = 1.0f / (float)tokens, zero = 0.0f;
            /* column-major: X^T is n x T (ld n); H = X^T (X^T)^T */
            if (cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)n, (int)n, (int)tokens, &inv_t,
                            x_d, (int)n, x_d, (int)n, &zero, h_d, (int)n) != CUBLAS_STATUS_SUCCESS) {
                fprintf(stderr, "bench_gptq: H gemm failed\n");
                return 1;
            }
            upper_from_lower<<<4096, 256, 0, s>>>(h_d, n);
            CU(cudaGetLastError());
            CU(cudaStreamSynchronize(s));
            cudaFree(x_d);
            h_cols = n;
            if (dir) {
                std::vector<float> h((size_t)(n * n));
                CU(cudaMemcpy(h.data(), h_d, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
                char path[4096];
                snprintf(path, sizeof path, "%s/h_%lld.f32", dir, (long long)n);
                write_file(path, h.data(), h.size() * sizeof(float));
            }
        }
        std::vector<float> w((size_t)(rows * n));
        for (auto &v : w)
            v = (float)(0.02 * normal());
        if (dir) {
            char path[4096];
            snprintf(path, sizeof path, "%s/w_%lldx%lld.f32", dir, (long long)rows, (long long)n);
            write_file(path, w.data(), w.size() * sizeof(float));
        }
        float *w_d = NULL, *q_d = NULL;
        CU(cudaMalloc((void **)&w_d, w.size() * sizeof(float)));
        CU(cudaMalloc((void **)&q_d, w.size() * sizeof(float)));
        CU(cudaMemcpy(w_d, w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
        std::vector<float> first_q;
        for (int loop : loop_ids) {
        const int serial = loop == loop_serial;
        fr_gptq_params gp = {4, 1, 0, 128, FR_GPTQ_PLAIN, serial ? FR_GPTQ_LOOP_WARP8 : loop,
                             serial, 0};
        int retries = 0;
        double damp = 0.0;
        cudaEvent_t e0, e1;
        CU(cudaEventCreate(&e0));
        CU(cudaEventCreate(&e1));
        std::vector<double> ms;
        for (int r = 0; r <= reps; r++) {
            CU(cudaEventRecord(e0, s));
            FR(fr_cuda_gptq(w_d, FRONTIER_DTYPE_F32, q_d, rows, n, h_d, 1, &gp, (void *)s,
                            &retries, &damp, &err));
            CU(cudaEventRecord(e1, s));
            CU(cudaEventSynchronize(e1));
            float t = 0.0f;
            CU(cudaEventElapsedTime(&t, e0, e1));
            if (r > 0) /* the first is the warm-up */
                ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        /* where the time goes: the median of the phases of --reps timed calls */
        std::vector<fr_gptq_phases> phs;
        for (int r = 0; r < reps; r++) {
            fr_gptq_phases ph;
            FR(fr_cuda_gptq_timed(w_d, FRONTIER_DTYPE_F32, q_d, rows, n, h_d, 1, &gp, (void *)s,
                                  &retries, &damp, &ph, &err));
            phs.push_back(ph);
        }
        std::sort(phs.begin(), phs.end(), [](const fr_gptq_phases &x, const fr_gptq_phases &y) {
            return x.loop_ms + x.factor_ms < y.loop_ms + y.factor_ms;
        });
        const fr_gptq_phases ph = phs[phs.size() / 2];
        const double med = ms.size() % 2 ? ms[ms.size() / 2]
                                         : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
        double ref = 0.0, out = 0.0;
        FR(fr_cuda_output_term(ob, w_d, FRONTIER_DTYPE_F32, NULL, rows, n, h_d, &ref, &err));
        FR(fr_cuda_output_term(ob, w_d, FRONTIER_DTYPE_F32, q_d, rows, n, h_d, &out, &err));
        frontier_error_sums sums;
        FR(fr_cuda_error_sums(w_d, FRONTIER_DTYPE_F32, q_d, rows * n, &sums, (void *)s, &err));
        const double out_rel = sqrt(out / ref), rel = sqrt(sums.sq_err / sums.sq_ref);
        /* the kernels must agree bit for bit */
        std::vector<float> qh(w.size());
        CU(cudaMemcpy(qh.data(), q_d, qh.size() * sizeof(float), cudaMemcpyDeviceToHost));
        long long differ = 0;
        if (first_q.empty()) {
            first_q = qh;
        } else if (serial) {
            /* the same products split otherwise: cuBLAS may sum them in
             * another order, so a value on a rounding boundary may flip */
            for (size_t i = 0; i < qh.size(); i++)
                differ += memcmp(&first_q[i], &qh[i], sizeof(float)) != 0;
        } else if (memcmp(first_q.data(), qh.data(), qh.size() * sizeof(float)) != 0) {
            fprintf(stderr, "bench_gptq: column loop '%s' gives other w^ than '%s'\n",
                    loop_names[loop], loop_names[loop_ids[0]]);
            return 1;
        }
        char name[64];
        snprintf(name, sizeof name, "%lldx%lld", (long long)rows, (long long)n);
        printf("%-12s %-6s %12.3f %12.6g %12.6g %8d", name, loop_names[loop], med, out_rel, rel,
               retries);
        if (serial && loop != loop_ids[0])
            printf("  (w^ differ from %s's in %lld of %zu)", loop_names[loop_ids[0]], differ,
                   qh.size());
        printf("\n");
        if (show_phases)
            printf("  phases (ms): setup %.3f, factor %.3f (A + potrf %.3f), prep %.3f, loop %.3f "
                   "(column kernels %.3f, lazy GEMMs %.3f), tries %d\n",
                   ph.setup_ms, ph.factor_ms, ph.potrf_ms, ph.prep_ms, ph.loop_ms, ph.block_ms,
                   ph.update_ms, ph.factor_tries);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "shape", name);
        cJSON_AddStringToObject(o, "loop", loop_names[loop]);
        cJSON_AddNumberToObject(o, "rows", (double)rows);
        cJSON_AddNumberToObject(o, "cols", (double)n);
        cJSON_AddNumberToObject(o, "gpu_seconds", med * 1e-3);
        cJSON_AddNumberToObject(o, "gpu_seconds_min", ms.front() * 1e-3);
        cJSON_AddNumberToObject(o, "out_rel_err", out_rel);
        cJSON_AddNumberToObject(o, "rel_err", rel);
        cJSON_AddNumberToObject(o, "damp_retries", retries);
        if (serial && loop != loop_ids[0])
            cJSON_AddNumberToObject(o, "w_hat_differ", (double)differ);
        cJSON *po = cJSON_AddObjectToObject(o, "phases_ms");
        cJSON_AddNumberToObject(po, "setup", ph.setup_ms);
        cJSON_AddNumberToObject(po, "factor", ph.factor_ms);
        cJSON_AddNumberToObject(po, "factor_potrf", ph.potrf_ms);
        cJSON_AddNumberToObject(po, "prep", ph.prep_ms);
        cJSON_AddNumberToObject(po, "loop", ph.loop_ms);
        cJSON_AddNumberToObject(po, "column_kernels", ph.block_ms);
        cJSON_AddNumberToObject(po, "lazy_gemms", ph.update_ms);
        cJSON_AddItemToArray(arr, o);
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        }
        cudaFree(w_d);
        cudaFree(q_d);
    }
    cudaFree(h_d);
    fr_cuda_blas_destroy(ob);
    cublasDestroy(blas);
    if (json) {
        char *text = cJSON_Print(root);
        FILE *f = fopen(json, "w");
        if (!f || fputs(text, f) < 0) {
            fprintf(stderr, "bench_gptq: cannot write %s\n", json);
            return 1;
        }
        fclose(f);
        free(text);
    }
    cJSON_Delete(root);
    return 0;
}
