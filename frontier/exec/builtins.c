/* The registration of the built-ins (builtins.h). */
#include "builtins.h"

#include "core/call.h"
#ifdef FRONTIER_HAVE_CUDA
#include "kernels/gpu_entries.h"
#endif

int fr_builtin_descriptor(int family, const frontier_host_api *host, frontier_quantizer *out)
{
    /* every built-in alike, by its index in the table's order: registration
     * is no per-family decision (quantizers/builtin.h's entry list) */
    if (family < 0 || (size_t)family >= fr_n_builtin_entries)
        return 0;
    const frontier_quantizer *q = fr_builtin_entries[family](host);
    if (!q)
        return 0;
    *out = *q;
#ifdef FRONTIER_HAVE_CUDA
    const fr_kernel_gpu_entry *gpu = &fr_kernel_gpu_entries[family];
    if (gpu->quantize_cuda || gpu->sweep_cuda) {
        out->quantize_cuda = gpu->quantize_cuda;
        out->sweep_cuda = gpu->sweep_cuda;
        out->flags |= FRONTIER_Q_HAS_CUDA;
    }
#endif
    return 1;
}

fr_status fr_registry_init(fr_registry *reg, fr_error *err)
{
    fr_registry_init_empty(reg);
    for (int f = 0; (size_t)f < fr_n_builtin_entries; f++) {
        frontier_quantizer q;
        /* NULL when the entry fails: registration reports it as any
         * descriptor-less entry */
        fr_status st = fr_registry_add_builtin(
            reg, fr_builtin_descriptor(f, fr_host_api(), &q) ? &q : NULL, f, err);
        if (st != FR_OK) {
            /* a broken built-in is a bug in this program, not in the input */
            if (st == FR_E_PLUGIN) {
                st = FR_E_FAIL;
                if (err)
                    err->code = st;
            }
            fr_registry_free(reg);
            return st;
        }
    }
    return FR_OK;
}
