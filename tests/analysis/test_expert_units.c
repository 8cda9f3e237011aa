/*
 * allocate / pareto --expert-units (frontier/analysis/units.h fr_units): the 2-D
 * experts of one (layer, projection) as one allocation unit, on a
 * hand-made dataset: the unit key, expert order (10 after 2), one
 * configuration per unit with summed bits and error terms, the answer
 * against brute force for the error objective, the sensitivity objective
 * (sum of alpha_m err_m / norm_m) and out_rel_err, --fixed that splits a
 * unit refused, and pareto counting units.
 */
#include "fixture.h"
#include "frontier/analysis/allocate.h"
#include "frontier/analysis/units.h"

static uint32_t tensor2d(fr_dataset *ds, const char *name, const char *cls, int64_t rows,
                         int64_t cols, double sq_norm)
{
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lld", (long long)rows, (long long)cols);
    fr_ds_tensor t = {
        .tensor_id = 200 + 5 * (uint32_t)ds->n_tensors,
        .name = (char *)name, .cls = (char *)cls, .dtype = "F32", .shape = shape,
        .numel = (uint64_t)(rows * cols), .rows = rows, .cols = cols, .sq_norm = sq_norm,
    };
    fr_error err = {0};
    fx_ok(fr_dataset_add_tensor(ds, &t, &err), &err);
    return t.tensor_id;
}

#define NT 7
static const char *names[NT] = {
    "model.layers.0.mlp.experts.0.gate_proj.weight",
    "model.layers.0.mlp.experts.10.gate_proj.weight",
    "model.layers.0.mlp.experts.2.gate_proj.weight",
    "model.layers.0.mlp.experts.0.down_proj.weight",
    "model.layers.0.mlp.experts.2.down_proj.weight",
    "model.layers.0.mlp.shared_expert.gate_proj.weight",
    "model.layers.0.self_attn.q_proj.weight",
};
static const char *classes[NT] = {"expert", "expert", "expert", "expert", "expert", "expert", "attn_q"};
/* sq_norm, and sq_err / out_sq_err under configs a (4 bits/w) and b (8 bits/w):
 * without units, expert 10 of gate_proj is worth upgrading alone */
static const double norm[NT] = {1.0, 2.0, 0.5, 1.5, 1.0, 3.0, 4.0};
static const double err_a[NT] = {0.010, 0.400, 0.020, 0.050, 0.060, 0.100, 0.300};
static const double err_b[NT] = {0.001, 0.010, 0.002, 0.004, 0.005, 0.010, 0.020};
static const double alpha[NT] = {1.0, 0.1, 5.0, 2.0, 2.0, 1.0, 0.5};

static void dataset(fr_dataset *ds)
{
    fx_init(ds);
    uint32_t id[NT];
    for (int t = 0; t < NT; t++)
        id[t] = tensor2d(ds, names[t], classes[t], 8, 8, norm[t]);
    uint32_t a = fx_config(ds, "a", "int", 4), b = fx_config(ds, "b", "int", 8);
    for (int t = 0; t < NT; t++) {
        fx_result_out(ds, id[t], a, 4 * 64, err_a[t], 3 * err_a[t], 2 * norm[t]);
        fx_result_out(ds, id[t], b, 8 * 64, err_b[t], 3 * err_b[t], 2 * norm[t]);
    }
}

static const char *choice_of(const fr_allocation *al, const fr_dataset *ds, const char *tensor)
{
    for (size_t i = 0; i < al->n_choices; i++)
        if (!strcmp(ds->tensors[al->choices[i].tensor].name, tensor))
            return ds->configs[al->choices[i].config].name;
    return "(none)";
}

/* The units by hand: gate_proj {0, 2, 10}, down_proj {0, 2}, shared, q. */
static const int unit_of[NT] = {0, 0, 0, 1, 1, 2, 3};
#define NU 4

/* Brute force over 2^NU unit choices: least cost within capacity. */
static double brute(int objective, int out, uint64_t capacity, unsigned *best_mask)
{
    double best = INFINITY;
    for (unsigned m = 0; m < (1u << NU); m++) {
        uint64_t bits = 0;
        double cost = 0;
        for (int t = 0; t < NT; t++) {
            int up = (m >> unit_of[t]) & 1;
            double e = (up ? err_b[t] : err_a[t]) * (out ? 3 : 1), n = norm[t] * (out ? 2 : 1);
            bits += up ? 8 * 64 : 4 * 64;
            cost += objective ? alpha[t] * e / n : e;
        }
        if (bits <= capacity && cost < best) {
            best = cost;
            *best_mask = m;
        }
    }
    return best;
}

static void check_allocation(const fr_dataset *ds, const fr_result_index *ix, fr_metric metric,
                             const fr_alloc_objective *obj, double budget)
{
    fr_error err;
    fr_alloc_problem prob;
    fr_allocation al;
    fr_alloc_options opt = {metric, {NULL, NULL, NULL}, 0, NULL, 0, 1, NULL};
    CHECK_OK(fr_alloc_prepare_objective(ds, ix, &opt, obj, &prob, &err), err);
    CHECK(prob.n_tensors == NU);
    CHECK(prob.numel == NT * 64);
    CHECK_OK(fr_alloc_solve(&prob, budget, &al, &err), err);
    CHECK(al.n_choices == NT);
    unsigned mask = 0;
    int sens = obj && obj->objective == FR_OBJECTIVE_SENSITIVITY;
    double want = brute(sens, metric == FR_METRIC_OUT_REL_ERR, (uint64_t)(budget * NT * 64), &mask);
    CHECK_NEAR(al.cost_sum, want, 1e-12);
    double e = 0;
    for (int t = 0; t < NT; t++) {
        const char *c = ((mask >> unit_of[t]) & 1) ? "b" : "a";
        CHECK_MSG(!strcmp(choice_of(&al, ds, names[t]), c), "%s: %s, want %s", names[t],
                  choice_of(&al, ds, names[t]), c);
        e += (!strcmp(c, "b") ? err_b[t] : err_a[t]) * (metric == FR_METRIC_OUT_REL_ERR ? 3 : 1);
    }
    CHECK_NEAR(al.err_sum, e, 1e-12);
    /* the experts of one unit carry one configuration, each its own terms */
    for (size_t i = 0; i < al.n_choices; i++)
        CHECK(al.choices[i].total_bits == al.choices[i].numel *
                                               (!strcmp(ds->configs[al.choices[i].config].name, "b") ? 8 : 4));
    fr_allocation_free(&al);
    fr_alloc_problem_free(&prob);
}

int main(void)
{
    char key[256];
    uint64_t idx = 0;
    CHECK(fr_expert_unit_key("model.layers.3.mlp.experts.17.up_proj.weight", "expert", "64x32", key,
                             sizeof key, &idx));
    CHECK_STR(key, "model.layers.3.mlp.experts.*.up_proj.weight");
    CHECK(idx == 17);
    CHECK(fr_expert_unit_key("model.layers.1.block_sparse_moe.experts.7.w1.weight", "expert", "8x8",
                             key, sizeof key, &idx));
    CHECK_STR(key, "model.layers.1.block_sparse_moe.experts.*.w1.weight");
    CHECK(fr_expert_unit_key("m.experts.gate_up_proj.3", "expert", "8x8", key, sizeof key, &idx) == 0);
    CHECK(fr_expert_unit_key("model.layers.0.mlp.experts.gate_up_proj", "expert", "4x8x8", key,
                             sizeof key, &idx) == 0); /* a stack is a unit already */
    CHECK(fr_expert_unit_key("model.layers.0.mlp.shared_expert.up_proj.weight", "expert", "8x8", key,
                             sizeof key, &idx) == 0);
    CHECK(fr_expert_unit_key("model.layers.0.mlp.experts.3.up_proj.weight", "mlp_up", "8x8", key,
                             sizeof key, &idx) == 0);
    CHECK(fr_expert_unit_key("model.layers.0.mlp.experts.3.up_proj.bias", "expert", "8", key,
                             sizeof key, &idx) == 0);

    fr_error err;
    fr_dataset ds;
    fr_result_index ix;
    dataset(&ds);
    CHECK_OK(fr_result_index_build(&ds, &ix, &err), err);

    /* units: stored order of the first member, experts by index (10 last) */
    fr_units u;
    CHECK_OK(fr_units_build(&ds, NULL, 1, &u, &err), err);
    CHECK(u.n_units == NU);
    CHECK_STR(u.name[0], "model.layers.0.mlp.experts.*.gate_proj.weight");
    CHECK(u.first[1] - u.first[0] == 3 && u.member[0] == 0 && u.member[1] == 2 && u.member[2] == 1);
    CHECK_STR(u.name[2], "model.layers.0.mlp.shared_expert.gate_proj.weight");
    fr_units_free(&u);
    CHECK_OK(fr_units_build(&ds, NULL, 0, &u, &err), err);
    CHECK(u.n_units == NT);
    fr_units_free(&u);

    /* default: expert 10 alone gets b at 4.6 bits per weight */
    {
        fr_alloc_options opt = {FR_METRIC_REL_ERR, {NULL, NULL, NULL}, 0, NULL, 0, 0, NULL};
        fr_alloc_problem prob;
        fr_allocation al;
        CHECK_OK(fr_alloc_prepare(&ds, &ix, &opt, &prob, &err), err);
        CHECK_OK(fr_alloc_solve(&prob, 4.6, &al, &err), err);
        CHECK_STR(choice_of(&al, &ds, names[1]), "b");
        CHECK_STR(choice_of(&al, &ds, names[0]), "a");
        fr_allocation_free(&al);
        fr_alloc_problem_free(&prob);
    }
    /* units: the whole gate_proj unit or none of it, against brute force */
    for (double budget = 4.0; budget <= 8.0; budget += 0.25) {
        check_allocation(&ds, &ix, FR_METRIC_REL_ERR, NULL, budget);
        check_allocation(&ds, &ix, FR_METRIC_OUT_REL_ERR, NULL, budget);
        double al_by_tensor[NT];
        for (size_t t = 0; t < ds.n_tensors; t++)
            for (int k = 0; k < NT; k++)
                if (!strcmp(ds.tensors[t].name, names[k]))
                    al_by_tensor[t] = alpha[k];
        fr_alloc_objective obj = {FR_OBJECTIVE_SENSITIVITY, al_by_tensor, NAN, 0};
        check_allocation(&ds, &ix, FR_METRIC_REL_ERR, &obj, budget);
        check_allocation(&ds, &ix, FR_METRIC_OUT_REL_ERR, &obj, budget);
    }
    /* a sensitivity missing on one expert names that expert */
    {
        double partial[NT];
        for (int t = 0; t < NT; t++)
            partial[t] = 1.0;
        partial[1] = NAN; /* dataset position 1: experts.10.gate_proj */
        fr_alloc_objective obj = {FR_OBJECTIVE_SENSITIVITY, partial, NAN, 0};
        fr_alloc_options opt = {FR_METRIC_REL_ERR, {NULL, NULL, NULL}, 0, NULL, 0, 1, NULL};
        fr_alloc_problem prob;
        CHECK(fr_alloc_prepare_objective(&ds, &ix, &opt, &obj, &prob, &err) == FR_E_USAGE);
        CHECK(strstr(err.msg, "'model.layers.0.mlp.experts.10.gate_proj.weight'") != NULL);
    }
    /* --fixed over a whole unit pins it; over part of one is refused */
    {
        fr_alloc_fixed all = {"experts\\.[0-9]+\\.gate_proj", "b"}, part = {"experts\\.10\\.", "b"};
        fr_alloc_options opt = {FR_METRIC_REL_ERR, {NULL, NULL, NULL}, 1, &all, 0, 1, NULL};
        fr_alloc_problem prob;
        fr_allocation al;
        CHECK_OK(fr_alloc_prepare(&ds, &ix, &opt, &prob, &err), err);
        CHECK_OK(fr_alloc_solve(&prob, 5.8, &al, &err), err);
        for (int t = 0; t < 3; t++)
            CHECK_STR(choice_of(&al, &ds, names[t]), "b");
        fr_allocation_free(&al);
        fr_alloc_problem_free(&prob);
        opt.fixed = &part;
        CHECK(fr_alloc_prepare(&ds, &ix, &opt, &prob, &err) == FR_E_USAGE);
        CHECK(strstr(err.msg, "model.layers.0.mlp.experts.*.gate_proj.weight") != NULL);
    }
    /* pareto: units by tensor and by class */
    {
        fr_selection sel = {NULL, NULL, NULL};
        fr_pareto p;
        CHECK_OK(fr_pareto_compute_units(&ds, &ix, &sel, FR_BY_TENSOR, FR_METRIC_REL_ERR, 1, &p, &err), err);
        CHECK(p.n_groups == NU);
        CHECK_STR(p.groups[0].name, "model.layers.0.mlp.experts.*.gate_proj.weight");
        CHECK(p.groups[0].numel == 3 * 64);
        /* its point sums the experts in expert order: 0, 2, 10 */
        const fr_point *pt = &p.points[p.groups[0].first_point];
        CHECK(pt->sq_err == (0.0 + err_a[0]) + err_a[2] + err_a[1] || pt->sq_err == (0.0 + err_b[0]) + err_b[2] + err_b[1]);
        fr_pareto_free(&p);
        CHECK_OK(fr_pareto_compute_units(&ds, &ix, &sel, FR_BY_CLASS, FR_METRIC_REL_ERR, 1, &p, &err), err);
        CHECK(p.n_groups == 2);
        CHECK_STR(p.groups[0].name, "expert");
        CHECK(p.groups[0].n_tensors == 3 && p.groups[0].n_common == 3);
        fr_pareto_free(&p);
        CHECK_OK(fr_pareto_compute_units(&ds, &ix, &sel, FR_BY_CLASS, FR_METRIC_REL_ERR, 0, &p, &err), err);
        CHECK(p.groups[0].n_tensors == 6);
        fr_pareto_free(&p);
    }
    fr_result_index_free(&ix);
    fr_dataset_free(&ds);

    /* a configuration missing on one expert is no option of its unit */
    fx_init(&ds);
    uint32_t e0 = tensor2d(&ds, names[0], "expert", 8, 8, 1.0);
    uint32_t e2 = tensor2d(&ds, names[2], "expert", 8, 8, 1.0);
    uint32_t ca = fx_config(&ds, "a", "int", 4), cb = fx_config(&ds, "b", "int", 8);
    fx_result(&ds, e0, ca, 256, 0.1);
    fx_result(&ds, e2, ca, 256, 0.1);
    fx_result(&ds, e0, cb, 512, 0.01);
    CHECK_OK(fr_result_index_build(&ds, &ix, &err), err);
    {
        fr_alloc_options opt = {FR_METRIC_REL_ERR, {NULL, NULL, NULL}, 0, NULL, 0, 1, NULL};
        fr_alloc_problem prob;
        fr_allocation al;
        CHECK_OK(fr_alloc_prepare(&ds, &ix, &opt, &prob, &err), err);
        CHECK(prob.n_tensors == 1 && prob.tensors[0].n_options == 1);
        CHECK_OK(fr_alloc_solve(&prob, 8.0, &al, &err), err);
        CHECK_STR(choice_of(&al, &ds, names[0]), "a");
        CHECK_STR(choice_of(&al, &ds, names[2]), "a");
        fr_allocation_free(&al);
        fr_alloc_problem_free(&prob);
        fr_selection sel = {NULL, NULL, NULL};
        fr_pareto p;
        CHECK_OK(fr_pareto_compute_units(&ds, &ix, &sel, FR_BY_CONFIG, FR_METRIC_REL_ERR, 1, &p, &err), err);
        /* b covers one expert only: not a configuration of the unit */
        CHECK(p.groups[0].n_tensors == 1 && p.groups[0].n_common == 1 && p.groups[0].n_configs == 1);
        fr_pareto_free(&p);
    }
    fr_result_index_free(&ix);
    fr_dataset_free(&ds);

    /* out_rel_err with the weight-error fallback (allocate
     * --sensitivity-reference): a unit none of whose members has an output
     * error is allocated on rel_err, its choices' terms NaN; a unit with an
     * output error on some members only is left out, since their alphas
     * were rescaled for it */
    fx_init(&ds);
    uint32_t g0 = tensor2d(&ds, names[0], "expert", 8, 8, 1.0);  /* gate_proj: mixed */
    uint32_t g2 = tensor2d(&ds, names[2], "expert", 8, 8, 1.0);
    uint32_t d0 = tensor2d(&ds, names[3], "expert", 8, 8, 1.0);  /* down_proj: none */
    uint32_t d2 = tensor2d(&ds, names[4], "expert", 8, 8, 1.0);
    uint32_t q = tensor2d(&ds, names[6], "attn_q", 8, 8, 1.0);   /* q: has one */
    ca = fx_config(&ds, "a", "int", 4);
    cb = fx_config(&ds, "b", "int", 8);
    fx_result_out(&ds, g0, ca, 256, 0.1, 0.3, 2.0);
    fx_result_out(&ds, g0, cb, 512, 0.01, 0.03, 2.0);
    fx_result(&ds, g2, ca, 256, 0.1);
    fx_result(&ds, g2, cb, 512, 0.01);
    fx_result(&ds, d0, ca, 256, 0.2);
    fx_result(&ds, d0, cb, 512, 0.02);
    fx_result(&ds, d2, ca, 256, 0.4);
    fx_result(&ds, d2, cb, 512, 0.04);
    fx_result_out(&ds, q, ca, 256, 0.1, 0.5, 4.0);
    fx_result_out(&ds, q, cb, 512, 0.01, 0.05, 4.0);
    CHECK_OK(fr_result_index_build(&ds, &ix, &err), err);
    {
        double ones[5] = {1.0, 1.0, 1.0, 1.0, 1.0};
        fr_alloc_objective obj = {FR_OBJECTIVE_SENSITIVITY, ones, NAN, 1};
        fr_alloc_options opt = {FR_METRIC_OUT_REL_ERR, {NULL, NULL, NULL}, 0, NULL, 0, 1, NULL};
        fr_alloc_problem prob;
        fr_allocation al;
        CHECK_OK(fr_alloc_prepare_objective(&ds, &ix, &opt, &obj, &prob, &err), err);
        CHECK(prob.n_tensors == 2);  /* down_proj on rel_err, q on out_rel_err */
        CHECK(prob.n_fallback == 1 && prob.n_dropped == 1);
        CHECK_STR(prob.fallback_example, names[3]);
        CHECK_STR(prob.dropped_example, names[0]);
        CHECK(prob.norm_sum == 4.0);  /* q's out_sq_ref alone */
        CHECK_OK(fr_alloc_solve(&prob, 8.0, &al, &err), err);
        CHECK_STR(choice_of(&al, &ds, names[3]), "b");
        CHECK_STR(choice_of(&al, &ds, names[6]), "b");
        for (size_t i = 0; i < al.n_choices; i++) {
            int fallback = al.choices[i].tensor != (size_t)(fr_dataset_tensor(&ds, q) - ds.tensors);
            CHECK(fallback ? isnan(al.choices[i].err_term) && isnan(al.choices[i].norm_term)
                           : al.choices[i].err_term == 0.05 && al.choices[i].norm_term == 4.0);
        }
        /* the predicted KL: 0.02/1 + 0.04/1 (rel_err terms) + 0.05/4 */
        CHECK(fabs(al.cost_sum - (0.02 + 0.04 + 0.05 / 4.0)) < 1e-15);
        CHECK(al.err_sum == 0.05);
        fr_allocation_free(&al);
        fr_alloc_problem_free(&prob);
        /* without the fallback both expert units are left out */
        obj.weight_fallback = 0;
        CHECK_OK(fr_alloc_prepare_objective(&ds, &ix, &opt, &obj, &prob, &err), err);
        CHECK(prob.n_tensors == 1 && prob.n_fallback == 0 && prob.n_dropped == 2);
        fr_alloc_problem_free(&prob);
    }
    fr_result_index_free(&ix);
    fr_dataset_free(&ds);
    return fr_test_finish("test_expert_units");
}
