/*
 * A call up the layers, for layering.catches_symbol: catches_symbol.py adds
 * this object to a copy of a layer's archive (never to the real one, and it
 * is linked into nothing) and requires check_layers.py --symbols to name
 * the calls into higher layers, and only those. The functions are declared
 * here, without their headers, so the source stays out of the include
 * check; their signatures do not matter to nm.
 */
int fr_registry_init(void *reg, void *err);      /* frontier/exec/builtins.c */
int fr_fail(void *err, int code, const char *fmt, ...); /* core/error.c */
#ifdef FRONTIER_HAVE_CUDA
extern const char fr_kernel_gpu_entries[]; /* kernels/gpu_entries.c */
#endif

int fr_layering_planted(void);

int fr_layering_planted(void)
{
    int r = fr_registry_init((void *)0, (void *)0) + fr_fail((void *)0, 0, "%s", "allowed");
#ifdef FRONTIER_HAVE_CUDA
    r += fr_kernel_gpu_entries[0];
#endif
    return r;
}
