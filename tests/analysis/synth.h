/*
 * A dataset shaped like a sweep of data/stories260K (its 36 weight matrices,
 * the built-in configuration names and their exact sizes), with errors from
 * the textbook model of round-to-nearest on Gaussian weights: rel_err ~
 * amax / (qmax sqrt(12) sigma) with amax / sigma ~ sqrt(2 ln g), plus
 * per-tensor noise. For exercising export and figures before a real sweep
 * is at hand; the numbers are NOT measurements.
 */
#ifndef FR_TEST_SYNTH_H
#define FR_TEST_SYNTH_H

#include "fixture.h"

typedef struct synth_config {
    const char *name, *family;
    double bits;      /* bits per weight for a 64-column tensor */
    double rel_err;   /* model relative error */
} synth_config;

static inline size_t synth_configs(synth_config *out, size_t max)
{
    size_t n = 0;
    static const int groups[] = {32, 64, 128};
    for (int b = 2; b <= 8; b++)
        for (int gi = 0; gi < 3; gi++)
            for (int asym = 0; asym < 2; asym++) {
                if (n >= max)
                    return n;
                static char names[7 * 3 * 2][32];
                int g = groups[gi];
                char *nm = names[n];
                snprintf(nm, 32, "int%d-g%d-%s", b, g, asym ? "asym" : "sym");
                double qmax = asym ? (pow(2, b) - 1) / 2 : pow(2, b - 1) - 1;
                out[n] = (synth_config){nm, "int", b + 16.0 / g + (asym ? (double)b / g : 0),
                                        sqrt(2 * log(g)) / (qmax * sqrt(12.0)) * (asym ? 0.9 : 1)};
                n++;
            }
    const synth_config fp[] = {
        {"nvfp4", "nvfp4", 4.5, 0.095},          {"mxfp4", "mxfp", 4.25, 0.115},
        {"mxfp6-e3m2", "mxfp", 6.25, 0.045},     {"mxfp6-e2m3", "mxfp", 6.25, 0.030},
        {"mxfp8-e4m3", "mxfp", 8.25, 0.021},     {"fp8-e4m3-channel", "fp8", 8.5, 0.022},
        {"fp8-e5m2-channel", "fp8", 8.5, 0.043}, {"nf4-g64", "nf4", 4.5, 0.092},
    };
    for (size_t i = 0; i < sizeof fp / sizeof fp[0] && n < max; i++)
        out[n++] = fp[i];
    return n;
}

static inline void synth_stories(fr_dataset *ds, uint64_t seed)
{
    static const struct {
        const char *suffix, *cls;
        int rows, cols;
    } layer[] = {
        {"self_attn.q_proj.weight", "attn_q", 64, 64}, {"self_attn.k_proj.weight", "attn_k", 32, 64},
        {"self_attn.v_proj.weight", "attn_v", 32, 64}, {"self_attn.o_proj.weight", "attn_o", 64, 64},
        {"mlp.gate_proj.weight", "mlp_gate", 172, 64}, {"mlp.up_proj.weight", "mlp_up", 172, 64},
        {"mlp.down_proj.weight", "mlp_down", 64, 172},
    };
    synth_config cfg[64];
    size_t nc = synth_configs(cfg, 64);
    uint64_t rng = seed;
    fx_init(ds);
    fx_tensor(ds, "model.embed_tokens.weight", "embed", 512 * 64, 512 * 64 * 0.01);
    for (int l = 0; l < 5; l++)
        for (size_t k = 0; k < sizeof layer / sizeof layer[0]; k++) {
            char name[96];
            snprintf(name, sizeof name, "model.layers.%d.%s", l, layer[k].suffix);
            uint64_t numel = (uint64_t)layer[k].rows * (uint64_t)layer[k].cols;
            fx_tensor(ds, name, layer[k].cls, numel, (double)numel * 0.01);
            ds->tensors[ds->n_tensors - 1].rows = layer[k].rows;
            ds->tensors[ds->n_tensors - 1].cols = layer[k].cols;
        }
    for (size_t c = 0; c < nc; c++)
        fx_config(ds, cfg[c].name, cfg[c].family, floor(cfg[c].bits));
    for (size_t t = 0; t < ds->n_tensors; t++) {
        /* heavier-tailed tensors (attention here) quantize worse */
        double tail = strstr(ds->tensors[t].cls, "attn") ? 1.25 : 1.0;
        double noise_t = 0.85 + 0.3 * fr_test_uniform(&rng);
        for (size_t c = 0; c < nc; c++) {
            double rel = cfg[c].rel_err * tail * noise_t * (0.95 + 0.1 * fr_test_uniform(&rng));
            uint64_t numel = ds->tensors[t].numel;
            fx_result(ds, ds->tensors[t].tensor_id, ds->configs[c].config_id,
                      (uint64_t)llround(cfg[c].bits * (double)numel),
                      rel * rel * ds->tensors[t].sq_norm);
        }
    }
}

#endif
