/*
 * Times the allocation solver on a Llama-shaped synthetic sweep: L layers of
 * 7 matrices (4096 hidden, 1024 kv, 14336 MLP) x the 50 configurations of
 * synth.h, budgets 2.3 to 8.5 by 0.1. Not a test: a measurement for
 * docs/analysis.md (build/tests/analysis/bench_allocate [LAYERS]).
 */
#include <time.h>

#include "frontier/analysis/allocate.h"
#include "synth.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int layers = argc > 1 ? atoi(argv[1]) : 32;
    if (layers <= 0 || layers > 1000) {
        fprintf(stderr, "usage: bench_allocate [LAYERS 1..1000]\n");
        return 2;
    }
    static const char *cls[7] = {"attn_q", "attn_k", "attn_v", "attn_o", "mlp_gate", "mlp_up", "mlp_down"};
    static const uint64_t numel[7] = {4096ull * 4096, 1024ull * 4096, 1024ull * 4096, 4096ull * 4096,
                                      14336ull * 4096, 14336ull * 4096, 14336ull * 4096};
    fr_dataset ds;
    fr_error err;
    fr_result_index ix;
    fr_alloc_problem prob;
    synth_config cfg[64];
    size_t nc = synth_configs(cfg, 64);
    uint64_t rng = 5;
    fx_init(&ds);
    for (int l = 0; l < layers; l++)
        for (int k = 0; k < 7; k++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, cls[k]);
            fx_tensor(&ds, name, cls[k], numel[k], (double)numel[k] * 1e-4 * (0.5 + fr_test_uniform(&rng)));
        }
    for (size_t c = 0; c < nc; c++)
        fx_config(&ds, cfg[c].name, cfg[c].family, floor(cfg[c].bits));
    for (size_t t = 0; t < ds.n_tensors; t++) {
        double tensor_noise = 0.8 + 0.4 * fr_test_uniform(&rng);
        for (size_t c = 0; c < nc; c++) {
            double rel = cfg[c].rel_err * tensor_noise * (0.95 + 0.1 * fr_test_uniform(&rng));
            fx_result(&ds, ds.tensors[t].tensor_id, ds.configs[c].config_id,
                      (uint64_t)llround(cfg[c].bits * (double)ds.tensors[t].numel),
                      rel * rel * ds.tensors[t].sq_norm);
        }
    }
    fr_alloc_options opt = {FR_METRIC_REL_ERR, {NULL, NULL, NULL}, 0, NULL, 0, 0, NULL};
    if (fr_result_index_build(&ds, &ix, &err) != FR_OK || fr_alloc_prepare(&ds, &ix, &opt, &prob, &err) != FR_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double start = now(), worst = 0;
    uint64_t states = 0, worst_states = 0;
    int n = 0, not_optimal = 0;
    for (int k = 0; k <= 62; k++) {
        fr_allocation a;
        double t0 = now();
        if (fr_alloc_solve(&prob, 2.3 + 0.1 * k, &a, &err) != FR_OK) {
            fprintf(stderr, "%s\n", err.msg);
            continue;
        }
        double dt = now() - t0;
        states += a.stats.nodes;
        not_optimal += !a.stats.optimal;
        if (dt > worst) {
            worst = dt;
            worst_states = a.stats.nodes;
        }
        n++;
        fr_allocation_free(&a);
    }
    printf("%zu tensors x %zu configurations: %d budgets in %.3f s (worst %.3f s, %llu states), "
           "%llu search states in all, %d not proven optimal\n",
           ds.n_tensors, nc, n, now() - start, worst, (unsigned long long)worst_states,
           (unsigned long long)states, not_optimal);
    fr_alloc_problem_free(&prob);
    fr_result_index_free(&ix);
    fr_dataset_free(&ds);
    return 0;
}
