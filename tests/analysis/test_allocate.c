/*
 * Allocation over datasets: a golden case worked by hand, optimality against
 * brute force on random 6-tensor x 5-configuration datasets (with missing
 * results and ties), --fixed and selections, bad inputs, the budget sweep
 * (the mixed curve on or below every uniform configuration), and the recipe
 * JSON and llama.cpp tensor-type file read back.
 */
#include <cjson/cJSON.h>
#include <unistd.h>

#include "fixture.h"
#include "frontier/analysis/allocate.h"
#include "frontier/analysis/allocate_output.h"
#include "frontier/recipe/recipe.h"
#include "quantizers/families.h"

static const char *choice_of(const fr_allocation *a, const fr_dataset *ds, const char *tensor)
{
    for (size_t i = 0; i < a->n_choices; i++)
        if (!strcmp(ds->tensors[a->choices[i].tensor].name, tensor))
            return ds->configs[a->choices[i].config].name;
    return "(none)";
}

static fr_status solve(const fr_dataset *ds, const fr_alloc_options *opt, double budget,
                       fr_allocation *a, fr_error *err)
{
    fr_result_index ix;
    fr_alloc_problem prob;
    fr_status st = fr_result_index_build(ds, &ix, err);
    if (st != FR_OK)
        return st;
    st = fr_alloc_prepare(ds, &ix, opt, &prob, err);
    if (st == FR_OK) {
        st = fr_alloc_solve(&prob, budget, a, err);
        fr_alloc_problem_free(&prob);
    }
    fr_result_index_free(&ix);
    return st;
}

/*
 * The golden dataset, worked by hand: two tensors, A (100 elements, norm^2
 * 10) and B (300, norm^2 30), int2/int4/int8 on both and "only-on-b" on B;
 * sq_err in fx_result's last argument.
 */
static void golden_dataset(fr_dataset *ds)
{
    fx_init(ds);
    uint32_t A = fx_tensor(ds, "model.layers.0.self_attn.q_proj.weight", "attn_q", 100, 10.0);
    uint32_t B = fx_tensor(ds, "model.layers.0.mlp.up_proj.weight", "mlp_up", 300, 30.0);
    uint32_t q2 = fx_config(ds, "int2-g32-sym", "int", 2);
    uint32_t q4 = fx_config(ds, "int4-g32-sym", "int", 4);
    uint32_t q8 = fx_config(ds, "int8-g32-sym", "int", 8);
    uint32_t qx = fx_config(ds, "only-on-b", "int", 3);
    fx_result(ds, A, q2, 200, 5.0);
    fx_result(ds, A, q4, 400, 1.0);
    fx_result(ds, A, q8, 800, 0.01);
    fx_result(ds, B, q2, 600, 3.0);
    fx_result(ds, B, q4, 1200, 0.6);
    fx_result(ds, B, q8, 2400, 0.006);
    fx_result(ds, B, qx, 900, 2.0);
}

/* Budgets of 3, 4, 5 and 64 bits, and sqnr_db as the metric. */
static void golden_budgets(const fr_dataset *ds, const fr_alloc_options *opt)
{
    fr_error err;
    fr_allocation a;
    /* 3 bits: 1200 bits; A int4 + B int2 (1000 bits, error 4) beats everything that fits */
    CHECK(solve(ds, opt, 3.0, &a, &err) == FR_OK);
    CHECK(a.capacity_bits == 1200 && a.total_bits == 1000 && a.numel == 400);
    CHECK(!strcmp(choice_of(&a, ds, "model.layers.0.self_attn.q_proj.weight"), "int4-g32-sym"));
    CHECK(!strcmp(choice_of(&a, ds, "model.layers.0.mlp.up_proj.weight"), "int2-g32-sym"));
    CHECK_NEAR(a.err_sum, 4.0, 1e-15);
    CHECK_NEAR(a.value, sqrt(4.0 / 40.0), 1e-15);
    CHECK(a.stats.optimal && a.lower_bound_value <= a.value);
    fr_allocation_free(&a);
    /* 4 bits: both int4 (error 1.6); 5 bits: A int8 + B int4 (error 0.61) */
    CHECK(solve(ds, opt, 4.0, &a, &err) == FR_OK);
    CHECK_NEAR(a.err_sum, 1.6, 1e-15);
    fr_allocation_free(&a);
    CHECK(solve(ds, opt, 5.0, &a, &err) == FR_OK);
    CHECK_NEAR(a.err_sum, 0.61, 1e-15);
    CHECK(a.total_bits == 2000);
    fr_allocation_free(&a);
    /* plenty of bits: the most accurate everywhere */
    CHECK(solve(ds, opt, 64.0, &a, &err) == FR_OK);
    CHECK_NEAR(a.err_sum, 0.016, 1e-15);
    fr_allocation_free(&a);

    /* sqnr_db minimises the same error and reports decibels */
    fr_alloc_options sq = *opt;
    sq.metric = FR_METRIC_SQNR_DB;
    CHECK(solve(ds, &sq, 3.0, &a, &err) == FR_OK);
    CHECK_NEAR(a.value, -20 * log10(sqrt(0.1)), 1e-12);
    fr_allocation_free(&a);
}

/* --fixed pins A to int8: at 4 bits B must take int2. */
static void golden_fixed(const fr_dataset *ds, const fr_alloc_options *opt)
{
    fr_error err;
    fr_allocation a;
    fr_alloc_fixed fix = {"q_proj", "int8-g32-sym"};
    fr_alloc_options fixed = *opt;
    fixed.n_fixed = 1;
    fixed.fixed = &fix;
    CHECK(solve(ds, &fixed, 4.0, &a, &err) == FR_OK);
    CHECK(!strcmp(choice_of(&a, ds, "model.layers.0.self_attn.q_proj.weight"), "int8-g32-sym"));
    CHECK(!strcmp(choice_of(&a, ds, "model.layers.0.mlp.up_proj.weight"), "int2-g32-sym"));
    CHECK(a.choices[0].fixed == 1 && a.choices[1].fixed == 0);
    fr_allocation_free(&a);
    /* ... and then 3 bits cannot be met: the error names the minimum */
    CHECK(solve(ds, &fixed, 3.0, &a, &err) == FR_E_USAGE);
    CHECK(strstr(err.msg, "3.5000 bits per weight") != NULL);
    /* --fixed with a configuration outside --configs still applies */
    fix.pattern = "up_proj";
    fix.config = "only-on-b";
    CHECK(solve(ds, &fixed, 3.0, &a, &err) == FR_OK);
    CHECK(!strcmp(choice_of(&a, ds, "model.layers.0.mlp.up_proj.weight"), "only-on-b"));
    fr_allocation_free(&a);
}

/* Bad budgets, --fixed and metrics: each a usage or format error with its message. */
static void golden_bad_inputs(const fr_dataset *ds, const fr_alloc_options *opt)
{
    fr_error err;
    fr_allocation a;
    CHECK(solve(ds, opt, 1.5, &a, &err) == FR_E_USAGE);
    CHECK(strstr(err.msg, "below the smallest achievable size: 2.0000 bits per weight") != NULL);
    CHECK(solve(ds, opt, -1, &a, &err) == FR_E_USAGE);
    fr_alloc_fixed fix = {".", "int3-nope"};
    fr_alloc_options fixed = *opt;
    fixed.n_fixed = 1;
    fixed.fixed = &fix;
    CHECK(solve(ds, &fixed, 4.0, &a, &err) == FR_E_USAGE);
    CHECK(strstr(err.msg, "unknown configuration 'int3-nope'") != NULL);
    fix.pattern = "q_proj";
    fix.config = "only-on-b";
    CHECK(solve(ds, &fixed, 4.0, &a, &err) == FR_E_USAGE);
    CHECK(strstr(err.msg, "tensor 'model.layers.0.self_attn.q_proj.weight'") != NULL);
    fix.pattern = "(";
    CHECK(solve(ds, &fixed, 4.0, &a, &err) == FR_E_USAGE);
    fr_alloc_options out = *opt;
    out.metric = FR_METRIC_OUT_REL_ERR;
    CHECK(solve(ds, &out, 4.0, &a, &err) == FR_E_FORMAT);
    CHECK(strstr(err.msg, "out_rel_err") != NULL);
}

/* --include / --exclude: only B. */
static void golden_selection(const fr_dataset *ds, const fr_alloc_options *opt)
{
    fr_error err;
    fr_allocation a;
    fr_alloc_options only_b = *opt;
    only_b.selection.exclude = "attn";
    CHECK(solve(ds, &only_b, 4.0, &a, &err) == FR_OK);
    CHECK(a.n_choices == 1 && a.numel == 300 && a.total_bits == 1200);
    fr_allocation_free(&a);
}

/* The one recipe reader (frontier/recipe/recipe.h) on what allocate wrote:
 * the map in order, each tensor's rel_err bit for bit, the totals; then the
 * untagged map annotate accepts and quantize refuses, and a missing file. */
static void recipe_read_back(const char *json_path, const fr_allocation *a, const fr_dataset *ds,
                             const char *dir)
{
    fr_error err;
    fr_recipe r;
    CHECK(fr_recipe_read(json_path, 0, &r, &err) == FR_OK);
    CHECK(r.n_tensors == a->n_choices);
    for (size_t i = 0; i < r.n_tensors && i < a->n_choices; i++) {
        const fr_alloc_choice *ch = &a->choices[i];
        CHECK(!strcmp(r.tensors[i].name, ds->tensors[ch->tensor].name));
        CHECK(!strcmp(r.tensors[i].config, ds->configs[ch->config].name));
        CHECK(r.tensors[i].error ==
              fr_metric_value(FR_METRIC_REL_ERR, ch->err_term, ch->norm_term));
    }
    CHECK(r.bits_per_weight == a->bits_per_weight);
    CHECK(!strcmp(r.error_name, "rel_err"));
    CHECK(r.objective && !strcmp(r.objective, "weight_error"));
    fr_recipe_free(&r);

    char bare[256];
    snprintf(bare, sizeof bare, "%s/bare.json", dir);
    FILE *f = fopen(bare, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"recipe\": {\"w\": 3, \"v\": \"int4-g32-sym\"}}\n", f);
        fclose(f);
    }
    CHECK(fr_recipe_read(bare, 0, &r, &err) == FR_E_FORMAT);
    CHECK(strstr(err.msg, "not a recipe") != NULL);
    CHECK(fr_recipe_read(bare, FR_RECIPE_UNTAGGED, &r, &err) == FR_OK);
    CHECK(r.n_tensors == 2 && !strcmp(r.tensors[0].name, "w") && r.tensors[0].config == NULL &&
          !strcmp(r.tensors[1].config, "int4-g32-sym") && isnan(r.tensors[1].error) &&
          isnan(r.bits_per_weight) && r.objective == NULL);
    fr_recipe_free(&r);
    unlink(bare);
    snprintf(bare, sizeof bare, "%s/none.json", dir);
    CHECK(fr_recipe_read(bare, FR_RECIPE_UNTAGGED, &r, &err) == FR_E_IO);
    CHECK(strstr(err.msg, "cannot open") != NULL);
}

/* The recipe JSON and tensor-type file, read back. */
static void golden_recipe_files(const fr_dataset *ds, const fr_alloc_options *opt)
{
    fr_error err;
    fr_allocation a;
    fr_result_index ix;
    fr_alloc_problem prob;
    char dir[] = "/tmp/frontier-alloc-XXXXXX", json_path[256], types_path[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(json_path, sizeof json_path, "%s/recipe.json", dir);
    snprintf(types_path, sizeof types_path, "%s/recipe.tensor-types.txt", dir);
    CHECK(fr_result_index_build(ds, &ix, &err) == FR_OK);
    CHECK(fr_alloc_prepare(ds, &ix, opt, &prob, &err) == FR_OK);
    CHECK(fr_alloc_solve(&prob, 3.0, &a, &err) == FR_OK);
    CHECK(fr_allocation_write_json(&a, &prob, "run.h5", json_path, &err) == FR_OK);
    size_t unmapped = 99;
    CHECK(fr_allocation_write_tensor_types(&a, &prob, types_path, &unmapped, &err) == FR_OK);
    CHECK(unmapped == 1); /* int2-g32-sym has no GGML type */
    char buf[8192];
    cJSON *root = cJSON_Parse(fx_read_text(json_path, buf, sizeof buf));
    CHECK(root != NULL);
    if (root) {
        cJSON *recipe = cJSON_GetObjectItem(root, "recipe");
        CHECK(cJSON_IsString(cJSON_GetObjectItem(recipe, "model.layers.0.self_attn.q_proj.weight")));
        CHECK(!strcmp(cJSON_GetObjectItem(recipe, "model.layers.0.self_attn.q_proj.weight")->valuestring,
                      "int4-g32-sym"));
        CHECK(cJSON_GetObjectItem(root, "total_bits")->valuedouble == 1000);
        CHECK_NEAR(cJSON_GetObjectItem(root, "bits_per_weight")->valuedouble, 2.5, 1e-15);
        CHECK_NEAR(cJSON_GetObjectItem(root, "rel_err")->valuedouble, sqrt(0.1), 1e-12);
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(root, "optimal")));
        /* the objective minimised, and no sensitivity behind it */
        CHECK(cJSON_IsString(cJSON_GetObjectItem(root, "objective")) &&
              !strcmp(cJSON_GetObjectItem(root, "objective")->valuestring, "weight_error"));
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(root, "sensitivity_source")));
        CHECK(cJSON_GetObjectItem(root, "predicted_kl") == NULL);
        cJSON *tensors = cJSON_GetObjectItem(root, "tensors");
        CHECK(cJSON_GetArraySize(tensors) == 2);
        cJSON *t0 = cJSON_GetArrayItem(tensors, 0);
        CHECK(!strcmp(cJSON_GetObjectItem(t0, "llama_cpp_type")->valuestring, "q4_0"));
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(tensors, 1), "llama_cpp_type")));
        cJSON_Delete(root);
    }
    CHECK(!strcmp(fx_read_text(types_path, buf, sizeof buf), "^blk\\.0\\.attn_q\\.weight$=q4_0\n"));
    recipe_read_back(json_path, &a, ds, dir);
    fr_allocation_free(&a);
    fr_alloc_problem_free(&prob);
    fr_result_index_free(&ix);
    unlink(json_path);
    unlink(types_path);
    rmdir(dir);
}

/* A dataset without results has nothing to allocate. */
static void golden_no_results(const fr_alloc_options *opt)
{
    fr_dataset ds;
    fr_error err;
    fr_allocation a;
    fx_init(&ds);
    fx_tensor(&ds, "w", "other", 10, 1.0);
    fx_config(&ds, "int4-g32-sym", "int", 4);
    CHECK(solve(&ds, opt, 4.0, &a, &err) == FR_E_FORMAT);
    fr_dataset_free(&ds);
}

static void golden(void)
{
    fr_dataset ds;
    golden_dataset(&ds);
    fr_alloc_options opt = {FR_METRIC_REL_ERR, {NULL, NULL, "^int"}, 0, NULL, 0, 0, NULL};
    golden_budgets(&ds, &opt);
    golden_fixed(&ds, &opt);
    golden_bad_inputs(&ds, &opt);
    golden_selection(&ds, &opt);
    golden_recipe_files(&ds, &opt);
    fr_dataset_free(&ds);
    golden_no_results(&opt);
}

/* GGUF names of the Llama layout, and names left alone */
static void names(void)
{
    char buf[128];
    fr_gguf_tensor_name("model.layers.12.self_attn.o_proj.weight", buf, sizeof buf);
    CHECK(!strcmp(buf, "blk.12.attn_output.weight"));
    fr_gguf_tensor_name("model.layers.3.mlp.down_proj.weight", buf, sizeof buf);
    CHECK(!strcmp(buf, "blk.3.ffn_down.weight"));
    fr_gguf_tensor_name("model.embed_tokens.weight", buf, sizeof buf);
    CHECK(!strcmp(buf, "token_embd.weight"));
    fr_gguf_tensor_name("lm_head.weight", buf, sizeof buf);
    CHECK(!strcmp(buf, "output.weight"));
    fr_gguf_tensor_name("blk.0.attn_q.weight", buf, sizeof buf);
    CHECK(!strcmp(buf, "blk.0.attn_q.weight"));
    fr_gguf_tensor_name("model.layers.x.self_attn.q_proj.weight", buf, sizeof buf);
    CHECK(!strcmp(buf, "model.layers.x.self_attn.q_proj.weight"));
    CHECK(!strcmp(fr_builtin_ggml_type("int8-g32-sym"), "q8_0"));
    CHECK(fr_builtin_ggml_type("int4-g128-asym") == NULL);
}

/* Random datasets: 6 tensors x 5 configurations, some results missing,
 * against every combination. */
static double brute(const fr_dataset *ds, const fr_result_index *ix, size_t t, uint64_t used,
                    uint64_t cap, double err)
{
    if (t == ds->n_tensors)
        return err;
    double best = INFINITY;
    for (size_t c = 0; c < ds->n_configs; c++) {
        const fr_ds_result *r = fr_result_at(ix, t, c);
        if (!r || used + r->total_bits > cap)
            continue;
        double v = brute(ds, ix, t + 1, used + r->total_bits, cap, err + r->sq_err);
        if (v < best)
            best = v;
    }
    return best;
}

static void random_datasets(void)
{
    fr_error err;
    int solved = 0;
    for (uint64_t seed = 1; seed <= 1500; seed++) {
        uint64_t rng = seed * 1000003;
        fr_dataset ds;
        fx_init(&ds);
        char name[32];
        uint32_t tid[6], cid[5];
        for (int t = 0; t < 6; t++) {
            snprintf(name, sizeof name, "t%d", t);
            tid[t] = fx_tensor(&ds, name, t % 2 ? "mlp_up" : "attn_q", 64 * (1 + fr_test_splitmix64(&rng) % 8),
                               1 + 10 * fr_test_uniform(&rng));
        }
        for (int c = 0; c < 5; c++) {
            snprintf(name, sizeof name, "c%d", c);
            cid[c] = fx_config(&ds, name, "int", 2 + c);
        }
        for (int t = 0; t < 6; t++) {
            uint64_t numel = ds.tensors[t].numel;
            int have = 0;
            for (int c = 0; c < 5; c++) {
                if (fr_test_splitmix64(&rng) % 6 == 0 && (have || c < 4))
                    continue; /* a missing result */
                double bits = 2 + c + (double)(fr_test_splitmix64(&rng) % 5) / 4; /* ties across configs */
                double sq = ds.tensors[t].sq_norm * pow(2.0, -2 * bits) * (0.3 + fr_test_uniform(&rng));
                if (fr_test_splitmix64(&rng) % 9 == 0)
                    sq = ds.tensors[t].sq_norm * 0.01; /* a dominated option */
                fx_result(&ds, tid[t], cid[c], (uint64_t)(bits * (double)numel), sq);
                have = 1;
            }
        }
        fr_result_index ix;
        fr_alloc_problem prob;
        fr_alloc_options opt = {FR_METRIC_REL_ERR, {NULL, NULL, NULL}, 0, NULL, 0, 0, NULL};
        CHECK(fr_result_index_build(&ds, &ix, &err) == FR_OK);
        CHECK(fr_alloc_prepare(&ds, &ix, &opt, &prob, &err) == FR_OK);
        double lo = fr_alloc_min_bpw(&prob), hi = (double)prob.max_bits / (double)prob.numel;
        double budget = lo + (hi - lo + 0.3) * fr_test_uniform(&rng);
        fr_allocation a;
        if (fr_alloc_solve(&prob, budget, &a, &err) != FR_OK) {
            fr_test_fail(__FILE__, __LINE__, "seed %llu: %s", (unsigned long long)seed, err.msg);
        } else {
            double best = brute(&ds, &ix, 0, 0, a.capacity_bits, 0.0);
            CHECK_NEAR(a.err_sum, best, 1e-9);
            CHECK(a.total_bits <= a.capacity_bits);
            CHECK(a.bits_per_weight <= budget);
            uint64_t bits = 0;
            double e = 0;
            for (size_t i = 0; i < a.n_choices; i++) {
                const fr_ds_result *r = fr_result_at(&ix, a.choices[i].tensor, a.choices[i].config);
                CHECK(r != NULL);
                if (r) {
                    bits += r->total_bits;
                    e += r->sq_err;
                }
            }
            CHECK(bits == a.total_bits);
            CHECK_NEAR(e, a.err_sum, 1e-12);
            fr_allocation_free(&a);
            solved++;
        }
        fr_alloc_problem_free(&prob);
        fr_result_index_free(&ix);
        fr_dataset_free(&ds);
    }
    printf("random datasets: %d allocations equal to brute force\n", solved);
}

/* The sweep: error never rises with the budget, and at every uniform
 * configuration's size the mixed curve is at or below it. */
static void sweep(void)
{
    fr_dataset ds;
    fr_error err;
    fx_init(&ds);
    uint64_t rng = 7;
    char name[64];
    for (int t = 0; t < 12; t++) {
        snprintf(name, sizeof name, "model.layers.%d.mlp.up_proj.weight", t);
        fx_tensor(&ds, name, "mlp_up", 256 * (1 + t % 4), 1 + t);
    }
    const char *cfg[] = {"int2-g32-sym", "int3-g32-sym", "int4-g32-sym", "nvfp4", "int8-g32-sym"};
    const double bits[] = {2.5, 3.5, 4.5, 4.5, 8.5};
    for (int c = 0; c < 5; c++)
        fx_config(&ds, cfg[c], c == 3 ? "nvfp4" : "int", floor(bits[c]));
    for (size_t t = 0; t < ds.n_tensors; t++)
        for (size_t c = 0; c < 5; c++) {
            double sens = 0.5 + fr_test_uniform(&rng) * (t % 3 == 0 ? 4 : 1);
            fx_result(&ds, ds.tensors[t].tensor_id, ds.configs[c].config_id,
                      (uint64_t)(bits[c] * (double)ds.tensors[t].numel),
                      ds.tensors[t].sq_norm * sens * pow(2.0, -2 * floor(bits[c])));
        }
    fr_result_index ix;
    fr_alloc_problem prob;
    fr_alloc_options opt = {FR_METRIC_REL_ERR, {NULL, NULL, NULL}, 0, NULL, 0, 0, NULL};
    fr_mixed_curve curve;
    CHECK(fr_result_index_build(&ds, &ix, &err) == FR_OK);
    CHECK(fr_alloc_prepare(&ds, &ix, &opt, &prob, &err) == FR_OK);
    CHECK(fr_alloc_sweep(&prob, 2, 8, 0.25, 1, &curve, &err) == FR_OK);
    /* 2, 2.25 are below the minimum; 2.5 .. 8 by 0.25; the uniform sizes 2.5,
     * 3.5, 4.5 fall on the grid and 8.5 outside the range */
    CHECK(curve.n_points == 23);
    for (size_t i = 1; i < curve.n_points; i++) {
        CHECK(curve.points[i].budget > curve.points[i - 1].budget);
        CHECK(curve.points[i].err_sum <= curve.points[i - 1].err_sum * (1 + 1e-12));
        CHECK(curve.points[i].bits_per_weight <= curve.points[i].budget);
    }
    for (size_t c = 0; c < 5; c++) {
        uint64_t tb = 0;
        double e = 0;
        for (size_t t = 0; t < ds.n_tensors; t++) {
            tb += fr_result_at(&ix, t, c)->total_bits;
            e += fr_result_at(&ix, t, c)->sq_err;
        }
        double bpw = (double)tb / (double)prob.numel, best = INFINITY;
        if (bpw > 8)
            continue;
        for (size_t i = 0; i < curve.n_points; i++)
            if (curve.points[i].bits_per_weight <= bpw && curve.points[i].err_sum < best)
                best = curve.points[i].err_sum;
        CHECK(best <= e * (1 + 1e-12));
    }
    fr_mixed_curve_free(&curve);
    /* a coarse grid gets the uniform sizes added: 3..8 plus 2.5, 3.5, 4.5 */
    CHECK(fr_alloc_sweep(&prob, 2, 8, 1, 1, &curve, &err) == FR_OK);
    CHECK(curve.n_points == 9);
    CHECK(curve.n_points > 0 && curve.points[0].budget == 2.5);
    fr_mixed_curve_free(&curve);
    CHECK(fr_alloc_sweep(&prob, 2, 8, 1, 0, &curve, &err) == FR_OK);
    CHECK(curve.n_points == 6);
    fr_mixed_curve_free(&curve);
    CHECK(fr_alloc_sweep(&prob, 1, 2, 0.25, 0, &curve, &err) == FR_E_USAGE);
    CHECK(strstr(err.msg, "below the smallest achievable size") != NULL);
    CHECK(fr_alloc_sweep(&prob, 3, 2, 0.25, 0, &curve, &err) == FR_E_USAGE);
    fr_alloc_problem_free(&prob);
    fr_result_index_free(&ix);
    fr_dataset_free(&ds);
}

int main(void)
{
    golden();
    names();
    random_datasets();
    sweep();
    return fr_test_finish("test_allocate");
}
