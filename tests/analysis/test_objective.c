/*
 * allocate --objective sensitivity (frontier/analysis/allocate.h): a hand-made
 * dataset where the weighting changes the optimum, the predicted KL
 * divergence of the answer and of uniform configurations, the refusal of
 * tensors without a sensitivity (named) unless a default is given, and the
 * objective named in the recipe.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <unistd.h>

#include "fixture.h"
#include "frontier/analysis/allocate.h"
#include "frontier/analysis/allocate_output.h"
#include "frontier/recipe/recipe.h"

/* Two tensors of 100 weights and ||W||^2 = 10; int2 (200 bits) and int4
 * (400 bits). At 3 bits per weight (600 bits) one of them gets int4.
 * Squared error: A 4 -> 1, B 5 -> 1, so the error objective upgrades B
 * (saves 4 > 3). With alpha_A = 10, alpha_B = 1 the costs alpha err^2 are
 * A 4 -> 1, B 0.5 -> 0.1: the sensitivity objective upgrades A. */
static void dataset(fr_dataset *ds)
{
    fx_init(ds);
    uint32_t A = fx_tensor(ds, "model.layers.0.self_attn.q_proj.weight", "attn_q", 100, 10.0);
    uint32_t B = fx_tensor(ds, "model.layers.1.mlp.up_proj.weight", "mlp_up", 100, 10.0);
    uint32_t q2 = fx_config(ds, "int2-g32-sym", "int", 2);
    uint32_t q4 = fx_config(ds, "int4-g32-sym", "int", 4);
    fx_result(ds, A, q2, 200, 4.0);
    fx_result(ds, A, q4, 400, 1.0);
    fx_result(ds, B, q2, 200, 5.0);
    fx_result(ds, B, q4, 400, 1.0);
}

static const char *choice_of(const fr_allocation *a, const fr_dataset *ds, const char *tensor)
{
    for (size_t i = 0; i < a->n_choices; i++)
        if (!strcmp(ds->tensors[a->choices[i].tensor].name, tensor))
            return ds->configs[a->choices[i].config].name;
    return "(none)";
}

/* The recipe of a sensitivity allocation names its objective, the file the
 * alphas came from, the default and the predicted KL divergence; read back,
 * the objective. */
static void sensitivity_recipe(const fr_allocation *a, fr_alloc_problem *prob)
{
    fr_error err;
    char dir[] = "/tmp/frontier-objective-XXXXXX", path[256], buf[8192];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/recipe.json", dir);
    prob->sensitivity_source = "sens.safetensors";
    CHECK(fr_allocation_write_json(a, prob, "run.h5", path, &err) == FR_OK);
    cJSON *root = cJSON_Parse(fx_read_text(path, buf, sizeof buf));
    CHECK(root != NULL);
    if (root) {
        const cJSON *o = cJSON_GetObjectItem(root, "objective");
        const cJSON *src = cJSON_GetObjectItem(root, "sensitivity_source");
        CHECK(cJSON_IsString(o) && !strcmp(o->valuestring, "sensitivity"));
        CHECK(cJSON_IsString(src) && !strcmp(src->valuestring, "sens.safetensors"));
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(root, "default_sensitivity")));
        CHECK(fabs(cJSON_GetObjectItem(root, "predicted_kl")->valuedouble - 1.5) < 1e-12);
        cJSON_Delete(root);
    }
    fr_recipe r;
    CHECK(fr_recipe_read(path, 0, &r, &err) == FR_OK);
    CHECK(r.objective && !strcmp(r.objective, "sensitivity"));
    fr_recipe_free(&r);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    fr_error err;
    fr_dataset ds;
    fr_result_index ix;
    fr_alloc_problem prob;
    fr_allocation a;
    dataset(&ds);
    CHECK(fr_result_index_build(&ds, &ix, &err) == FR_OK);
    fr_alloc_options opt = {FR_METRIC_REL_ERR, {NULL, NULL, NULL}, 0, NULL, 0, 0, NULL};
    const char *qa = "model.layers.0.self_attn.q_proj.weight", *qb = "model.layers.1.mlp.up_proj.weight";

    /* the error objective: B is upgraded */
    CHECK(fr_alloc_prepare(&ds, &ix, &opt, &prob, &err) == FR_OK);
    CHECK(fr_alloc_solve(&prob, 3.0, &a, &err) == FR_OK);
    CHECK(!strcmp(choice_of(&a, &ds, qb), "int4-g32-sym"));
    CHECK(!strcmp(choice_of(&a, &ds, qa), "int2-g32-sym"));
    CHECK(fabs(a.err_sum - 5.0) < 1e-12 && fabs(a.cost_sum - 5.0) < 1e-12);
    CHECK(!strcmp(fr_alloc_objective_name(&prob), "weight_error"));
    fr_allocation_free(&a);
    fr_alloc_problem_free(&prob);

    /* weighted: A is upgraded; predicted KL = 10 x 0.1 + 1 x 0.5 */
    double alpha[2] = {10.0, 1.0};
    fr_alloc_objective obj = {FR_OBJECTIVE_SENSITIVITY, alpha, NAN, 0};
    CHECK(fr_alloc_prepare_objective(&ds, &ix, &opt, &obj, &prob, &err) == FR_OK);
    CHECK(fr_alloc_solve(&prob, 3.0, &a, &err) == FR_OK);
    CHECK(!strcmp(choice_of(&a, &ds, qa), "int4-g32-sym"));
    CHECK(!strcmp(choice_of(&a, &ds, qb), "int2-g32-sym"));
    CHECK(fabs(a.cost_sum - 1.5) < 1e-12);
    CHECK(fabs(a.err_sum - 6.0) < 1e-12);   /* more weight error, less predicted loss */
    CHECK(isnan(a.lower_bound_value));
    CHECK(!strcmp(fr_alloc_objective_name(&prob), "sensitivity"));
    sensitivity_recipe(&a, &prob);
    fr_allocation_free(&a);
    /* enough bits: both at int4, predicted 1 + 0.1 */
    CHECK(fr_alloc_solve(&prob, 4.0, &a, &err) == FR_OK);
    CHECK(fabs(a.cost_sum - 1.1) < 1e-12);
    fr_allocation_free(&a);
    fr_alloc_problem_free(&prob);

    /* uniform predictions: int2 = 10 x 0.4 + 1 x 0.5, int4 = 1 + 0.1 */
    size_t n;
    CHECK(fabs(fr_alloc_predicted_uniform(&ds, &ix, FR_METRIC_REL_ERR, NULL, alpha, NAN, 0, &n) - 4.5) < 1e-12);
    CHECK(n == 2);
    CHECK(fabs(fr_alloc_predicted_uniform(&ds, &ix, FR_METRIC_REL_ERR, NULL, alpha, NAN, 1, &n) - 1.1) < 1e-12);

    /* what the default objective counts: tensors with a measured alpha */
    double partial[2] = {10.0, NAN}, none[2] = {NAN, NAN};
    CHECK(fr_alloc_count_sensitivity(&ds, alpha) == 2);
    CHECK(fr_alloc_count_sensitivity(&ds, partial) == 1);
    CHECK(fr_alloc_count_sensitivity(&ds, none) == 0 && fr_alloc_count_sensitivity(&ds, NULL) == 0);

    /* a tensor without a sensitivity is refused by name ... */
    obj.sensitivity = partial;
    CHECK(fr_alloc_prepare_objective(&ds, &ix, &opt, &obj, &prob, &err) == FR_E_USAGE);
    CHECK(strstr(err.msg, "1 tensor has no sensitivity: 'model.layers.1.mlp.up_proj.weight'") != NULL);
    CHECK(strstr(err.msg, "--default-sensitivity") != NULL);
    CHECK(isnan(fr_alloc_predicted_uniform(&ds, &ix, FR_METRIC_REL_ERR, NULL, partial, NAN, 0, &n)));
    /* ... unless a default is given (here 1, as alpha_B above) */
    obj.default_sensitivity = 1.0;
    CHECK(fr_alloc_prepare_objective(&ds, &ix, &opt, &obj, &prob, &err) == FR_OK);
    CHECK(fr_alloc_solve(&prob, 3.0, &a, &err) == FR_OK);
    CHECK(!strcmp(choice_of(&a, &ds, qa), "int4-g32-sym"));
    fr_allocation_free(&a);
    fr_alloc_problem_free(&prob);
    /* no calibrated output error in this dataset: out_rel_err has nothing */
    fr_alloc_options out = opt;
    out.metric = FR_METRIC_OUT_REL_ERR;
    CHECK(fr_alloc_prepare_objective(&ds, &ix, &out, &obj, &prob, &err) == FR_E_FORMAT);
    fr_alloc_problem named = {.metric = FR_METRIC_OUT_REL_ERR, .objective = FR_OBJECTIVE_ERROR};
    CHECK(!strcmp(fr_alloc_objective_name(&named), "output_error"));

    fr_result_index_free(&ix);
    fr_dataset_free(&ds);
    return fr_test_finish("test_objective");
}
