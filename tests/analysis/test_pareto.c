/*
 * Golden Pareto sets on a hand-made dataset: model-level aggregation
 * (bits = sum total_bits / sum numel, rel_err = sqrt(sum sq_err / sum
 * sq_norm)), the common-tensor rule for configurations measured on only
 * some tensors, grouping by family / class / tensor, the output metric, and
 * malformed datasets.
 */
#include "fixture.h"
#include "frontier/analysis/pareto.h"

static const fr_point *find_point(const fr_pareto *p, const char *group, const char *config)
{
    for (size_t i = 0; i < p->n_points; i++)
        if (!strcmp(p->groups[p->points[i].group].name, group) &&
            !strcmp(p->points[i].config_name, config))
            return &p->points[i];
    return NULL;
}

/* "name:F" for frontier points in the group, in bits order, joined by spaces */
static void frontier_string(const fr_pareto *p, const char *group, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t g = 0; g < p->n_groups; g++) {
        if (strcmp(p->groups[g].name, group))
            continue;
        for (size_t i = p->groups[g].first_point; i < p->groups[g].first_point + p->groups[g].n_points; i++)
            if (p->points[i].on_frontier) {
                if (buf[0])
                    strncat(buf, " ", size - strlen(buf) - 1);
                strncat(buf, p->points[i].config_name, size - strlen(buf) - 1);
            }
    }
}

/* Three tensors (A 100, B 300, C 200 elements; norms 10, 30, 40), five
 * configurations measured on all of them and "partial" on A alone; output
 * terms on B and C. */
static void pareto_dataset(fr_dataset *ds, uint32_t *tensor_a, uint32_t *config_int2)
{
    fx_init(ds);
    uint32_t A = fx_tensor(ds, "layers.0.attn.q", "attn_q", 100, 10.0);
    uint32_t B = fx_tensor(ds, "layers.0.mlp.up", "mlp_up", 300, 30.0);
    uint32_t C = fx_tensor(ds, "layers.0.mlp.down", "mlp_down", 200, 40.0);
    uint32_t int2 = fx_config(ds, "int2", "int", 2);
    uint32_t int4 = fx_config(ds, "int4", "int", 4);
    uint32_t nvfp4 = fx_config(ds, "nvfp4", "fp", 4);
    uint32_t int8 = fx_config(ds, "int8", "int", 8);
    uint32_t fp8 = fx_config(ds, "fp8-bad", "fp", 8);
    uint32_t partial = fx_config(ds, "partial", "int", 3);
    fx_result_out(ds, A, int2, 250, 2.0, NAN, NAN);
    fx_result_out(ds, B, int2, 750, 6.0, 3.0, 10.0);
    fx_result_out(ds, C, int2, 500, 8.0, 2.0, 10.0);
    fx_result_out(ds, A, int4, 450, 0.1, NAN, NAN);
    fx_result_out(ds, B, int4, 1350, 0.3, 0.1, 10.0);
    fx_result_out(ds, C, int4, 900, 0.4, 0.1, 10.0);
    fx_result_out(ds, A, nvfp4, 450, 0.2, NAN, NAN);
    fx_result_out(ds, B, nvfp4, 1350, 0.2, 0.3, 10.0);
    fx_result_out(ds, C, nvfp4, 900, 0.2, 0.3, 10.0);
    fx_result(ds, A, int8, 850, 0.001);
    fx_result(ds, B, int8, 2550, 0.001);
    fx_result(ds, C, int8, 1700, 0.001);
    fx_result(ds, A, fp8, 850, 0.5);
    fx_result(ds, B, fp8, 2550, 0.5);
    fx_result(ds, C, fp8, 1700, 0.5);
    fx_result(ds, A, partial, 300, 0.5);
    *tensor_a = A;
    *config_int2 = int2;
}

/* (a) Every configuration measured everywhere: the model-level frontier,
 * and the same under sqnr_db (maximised). */
static void check_model_frontier(const fr_dataset *ds, const fr_result_index *ix)
{
    fr_pareto p;
    fr_error err;
    char front[512];
    const fr_point *pt;
    fr_selection full = {NULL, NULL, "^(int2|int4|nvfp4|int8|fp8-bad)$"};
    CHECK(fr_pareto_compute(ds, ix, &full, FR_BY_CONFIG, FR_METRIC_REL_ERR, &p, &err) == FR_OK);
    CHECK(p.n_groups == 1 && p.n_points == 5);
    CHECK(p.groups[0].n_common == 3 && p.groups[0].n_partial == 0);
    pt = find_point(&p, "model", "int2");
    CHECK(pt && pt->total_bits == 1500 && pt->numel == 600 && pt->n_tensors == 3);
    CHECK_NEAR(pt->bits_per_weight, 2.5, 1e-15);
    CHECK_NEAR(pt->rel_err, sqrt(16.0 / 80.0), 1e-15);
    CHECK_NEAR(pt->sqnr_db, -20 * log10(sqrt(16.0 / 80.0)), 1e-12);
    CHECK(isnan(pt->out_rel_err)); /* A has no calibration */
    pt = find_point(&p, "model", "nvfp4");
    CHECK(pt && fabs(pt->rel_err - sqrt(0.6 / 80)) < 1e-15);
    frontier_string(&p, "model", front, sizeof front);
    CHECK(!strcmp(front, "int2 nvfp4 int8"));
    fr_pareto_free(&p);

    /* the same frontier under sqnr_db (maximised) */
    CHECK(fr_pareto_compute(ds, ix, &full, FR_BY_CONFIG, FR_METRIC_SQNR_DB, &p, &err) == FR_OK);
    frontier_string(&p, "model", front, sizeof front);
    CHECK(!strcmp(front, "int2 nvfp4 int8"));
    fr_pareto_free(&p);
}

/* (b) A configuration measured on one tensor restricts every point to it. */
static void check_common_tensors(const fr_dataset *ds, const fr_result_index *ix)
{
    fr_pareto p;
    fr_error err;
    char front[512];
    const fr_point *pt;
    CHECK(fr_pareto_compute(ds, ix, NULL, FR_BY_CONFIG, FR_METRIC_REL_ERR, &p, &err) == FR_OK);
    CHECK(p.groups[0].n_common == 1 && p.groups[0].n_tensors == 3);
    CHECK(p.groups[0].common_numel == 100 && p.groups[0].numel == 600);
    CHECK(p.groups[0].n_partial == 1 && !strcmp(p.groups[0].partial_example, "partial"));
    pt = find_point(&p, "model", "int4");
    CHECK(pt && pt->numel == 100 && fabs(pt->rel_err - 0.1) < 1e-15);
    frontier_string(&p, "model", front, sizeof front);
    CHECK(!strcmp(front, "int2 partial int4 int8"));
    fr_pareto_free(&p);
}

/* (c) By family, each family's own frontier; (d) by class, and a tensor
 * filter. */
static void check_groupings(const fr_dataset *ds, const fr_result_index *ix)
{
    fr_pareto p;
    fr_error err;
    char front[512];
    const fr_point *pt;
    /* (c) by family: each family's own frontier */
    fr_selection no_partial = {NULL, NULL, "^[^p]"};
    CHECK(fr_pareto_compute(ds, ix, &no_partial, FR_BY_FAMILY, FR_METRIC_REL_ERR, &p, &err) == FR_OK);
    CHECK(p.n_groups == 2);
    frontier_string(&p, "int", front, sizeof front);
    CHECK(!strcmp(front, "int2 int4 int8"));
    frontier_string(&p, "fp", front, sizeof front);
    CHECK(!strcmp(front, "nvfp4"));
    fr_pareto_free(&p);

    /* (d) by class, and a tensor filter */
    CHECK(fr_pareto_compute(ds, ix, &no_partial, FR_BY_CLASS, FR_METRIC_REL_ERR, &p, &err) == FR_OK);
    CHECK(p.n_groups == 3);
    frontier_string(&p, "attn_q", front, sizeof front);
    CHECK(!strcmp(front, "int2 int4 int8")); /* on A alone int4 beats nvfp4 */
    frontier_string(&p, "mlp_down", front, sizeof front);
    CHECK(!strcmp(front, "int2 nvfp4 int8"));
    fr_pareto_free(&p);
    fr_selection mlp_only = {"mlp", "down", "^[^p]"};
    CHECK(fr_pareto_compute(ds, ix, &mlp_only, FR_BY_TENSOR, FR_METRIC_REL_ERR, &p, &err) == FR_OK);
    CHECK(p.n_groups == 1 && !strcmp(p.groups[0].name, "layers.0.mlp.up"));
    pt = find_point(&p, "layers.0.mlp.up", "int4");
    CHECK(pt && pt->total_bits == 1350 && fabs(pt->rel_err - sqrt(0.01)) < 1e-15);
    fr_pareto_free(&p);
}

/* (e) The output metric uses the tensors with calibration terms (B and C);
 * without any, a clear error. */
static void check_output_metric(const fr_dataset *ds, const fr_result_index *ix)
{
    fr_pareto p;
    fr_error err;
    char front[512];
    const fr_point *pt;
    CHECK(fr_pareto_compute(ds, ix, NULL, FR_BY_CONFIG, FR_METRIC_OUT_REL_ERR, &p, &err) == FR_OK);
    CHECK(p.groups[0].n_common == 2 && p.n_points == 3);
    pt = find_point(&p, "model", "int2");
    CHECK(pt && pt->numel == 500);
    CHECK_NEAR(pt->out_rel_err, sqrt(5.0 / 20.0), 1e-15);
    CHECK_NEAR(pt->rel_err, sqrt(14.0 / 70.0), 1e-15); /* weight error over the same tensors */
    frontier_string(&p, "model", front, sizeof front);
    CHECK(!strcmp(front, "int2 int4"));
    fr_pareto_free(&p);
    /* ... and without any, a clear error */
    fr_selection attn_only = {"attn", NULL, NULL};
    CHECK(fr_pareto_compute(ds, ix, &attn_only, FR_BY_CONFIG, FR_METRIC_OUT_REL_ERR, &p, &err) == FR_E_FORMAT);
    CHECK(strstr(err.msg, "out_rel_err") && strstr(err.msg, "--calib"));
}

/* A bad regex is a usage error naming it; selecting no tensor is a format
 * error. */
static void check_bad_selections(const fr_dataset *ds, const fr_result_index *ix)
{
    fr_pareto p;
    fr_error err;
    /* bad regex: usage error naming it */
    fr_selection bad = {"(", NULL, NULL};
    CHECK(fr_pareto_compute(ds, ix, &bad, FR_BY_CONFIG, FR_METRIC_REL_ERR, &p, &err) == FR_E_USAGE);
    CHECK(strstr(err.msg, "invalid regex '('") != NULL);

    /* no tensor selected */
    fr_selection none = {"no-such-tensor", NULL, NULL};
    CHECK(fr_pareto_compute(ds, ix, &none, FR_BY_CONFIG, FR_METRIC_REL_ERR, &p, &err) == FR_E_FORMAT);
}

/* Ties: equal points are both on the frontier. */
static void check_ties(void)
{
    fr_point pts[4];
    memset(pts, 0, sizeof pts);
    double b[4] = {4, 4, 3, 5}, e[4] = {0.1, 0.1, 0.2, 0.1};
    for (int i = 0; i < 4; i++) {
        pts[i].config = (size_t)i;
        pts[i].bits_per_weight = b[i];
        pts[i].rel_err = e[i];
    }
    fr_pareto_mark(pts, 4, FR_METRIC_REL_ERR);
    /* sorted: (3,.2) (4,.1)#0 (4,.1)#1 (5,.1) */
    CHECK(pts[0].on_frontier && pts[1].on_frontier && pts[2].on_frontier && !pts[3].on_frontier);
}

/* Malformed: a duplicate result and a result naming an unknown tensor. */
static void check_malformed(fr_dataset *ds, uint32_t tensor_a, uint32_t config_int2)
{
    fr_error err;
    fr_result_index ix;
    fx_result(ds, tensor_a, config_int2, 250, 2.0);
    CHECK(fr_result_index_build(ds, &ix, &err) == FR_E_FORMAT);
    CHECK(strstr(err.msg, "two results for tensor 'layers.0.attn.q' under 'int2'") != NULL);
    ds->results[ds->n_results - 1].tensor_id = 9999;
    CHECK(fr_result_index_build(ds, &ix, &err) == FR_E_FORMAT);
    CHECK(strstr(err.msg, "unknown tensor id 9999") != NULL);
}

int main(void)
{
    fr_dataset ds;
    fr_error err;
    fr_result_index ix;
    uint32_t tensor_a, config_int2;
    pareto_dataset(&ds, &tensor_a, &config_int2);
    CHECK(fr_result_index_build(&ds, &ix, &err) == FR_OK);
    check_model_frontier(&ds, &ix);
    check_common_tensors(&ds, &ix);
    check_groupings(&ds, &ix);
    check_output_metric(&ds, &ix);
    check_bad_selections(&ds, &ix);
    fr_result_index_free(&ix);
    check_ties();
    check_malformed(&ds, tensor_a, config_int2);
    fr_dataset_free(&ds);
    return fr_test_finish("test_pareto");
}
