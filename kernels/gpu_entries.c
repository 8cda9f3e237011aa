/* The table of the built-ins' GPU entry points (gpu_entries.h). Plain C,
 * for its designated initialisers: a row per family index, and a new
 * kernel family gets its row from its line of the family table. */
#include "gpu_entries.h"

const fr_kernel_gpu_entry fr_kernel_gpu_entries[FR_FAMILY_COUNT] = {
#define FR_KFAMILY_ROW(ID, name, ggml)                                                       \
    [FR_FAMILY_##ID] = {.quantize_cuda = fr_##name##_quantize_cuda,                         \
                        .sweep_cuda = fr_##name##_sweep_cuda},
    FR_BUILTIN_FAMILIES(FR_KFAMILY_ROW)
#undef FR_KFAMILY_ROW
    /* the same searches on the device, bit for bit (docs/gpu.md, "mse-,
     * imat- and hqq- on the GPU") */
    [FR_FAMILY_MSE] = {.quantize_cuda = fr_mse_quantize_cuda},
    [FR_FAMILY_IMAT] = {.quantize_cuda = fr_imat_quantize_cuda},
    [FR_FAMILY_HQQ] = {.quantize_cuda = fr_hqq_quantize_cuda},
    /* the scales from the host, kernels for the scaled rounding and the
     * clipping search, the output errors with cuBLAS (OpenBLAS in the CPU
     * emulation; docs/gpu.md, "AWQ on the GPU") */
    [FR_FAMILY_AWQ] = {.quantize_cuda = fr_awq_quantize_cuda},
    /* cuSOLVER, cuBLAS and a kernel for the in-block column loop (LAPACKE
     * and OpenBLAS in the CPU emulation; docs/gpu.md, "GPTQ") */
    [FR_FAMILY_GPTQ] = {.quantize_cuda = fr_gptq_quantize_cuda},
    /* the rotation with the CPU's float32 operations around the base's
     * quantize_cuda, or GPTQ's device path (docs/gpu.md, "RHT on the GPU") */
    [FR_FAMILY_RHT] = {.quantize_cuda = fr_rht_quantize_cuda},
    [FR_FAMILY_RHT_GPTQ] = {.quantize_cuda = fr_rht_gptq_quantize_cuda},
    /* llama.cpp's blocks with the CPU's own FR_HD encoders, one thread per
     * block, bit for bit (docs/gpu.md, "ggml- and imat-ggml- on the GPU") */
    [FR_FAMILY_GGML] = {.quantize_cuda = fr_ggml_quantize_cuda},
    [FR_FAMILY_GGML_IMAT] = {.quantize_cuda = fr_ggml_imat_quantize_cuda},
    /* nvfp4_fused: host only (its rows go to the CPU executor) */
};
