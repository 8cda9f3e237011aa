/*
 * Golden Pareto sets on a hand-made dataset: model-level aggregation
 * (bits = sum total_bits / sum numel, rel_err = sqrt(sum sq_err / sum
 * sq_norm)), the common-tensor rule for configurations measured on only
 * some tensors, grouping by family / class / tensor, the output metric,
 * configurations with the same rows and the compact table's bands, and
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
    CHECK(strstr(err.msg, "invalid --include regex '('") != NULL);

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

/* Configurations with the same rows on a group's tensors are one point of
 * the compact table, which names the others: g64, g128 and gC agree on the
 * 100-element tensor A (one group per row there) and g128 and gC also on
 * B; "twin" has g128's sums but not its rows; "part" is measured on A only. */
static void check_same_rows(void)
{
    fr_dataset ds;
    fr_error err;
    fr_result_index ix;
    fr_pareto p;
    fx_init(&ds);
    uint32_t A = fx_tensor(&ds, "layers.0.attn.q", "attn_q", 100, 10.0);
    uint32_t B = fx_tensor(&ds, "layers.0.mlp.down", "mlp_down", 300, 30.0);
    uint32_t int2 = fx_config(&ds, "int2", "int", 2);
    uint32_t g64 = fx_config(&ds, "g64", "int", 4);
    uint32_t g128 = fx_config(&ds, "g128", "int", 4);
    uint32_t gC = fx_config(&ds, "gC", "int", 4);
    uint32_t twin = fx_config(&ds, "twin", "int", 4);
    uint32_t part = fx_config(&ds, "part", "int", 4);
    fx_result(&ds, A, int2, 250, 2.0);
    fx_result(&ds, B, int2, 750, 6.0);
    fx_result(&ds, A, g64, 450, 0.125);
    fx_result(&ds, B, g64, 1400, 0.25);
    fx_result(&ds, A, g128, 450, 0.125);
    fx_result(&ds, B, g128, 1380, 0.375);
    fx_result(&ds, A, gC, 450, 0.125);
    fx_result(&ds, B, gC, 1380, 0.375);
    fx_result(&ds, A, twin, 450, 0.25); /* sums 1830 bits and 0.5, as g128 */
    fx_result(&ds, B, twin, 1380, 0.25);
    fx_result(&ds, A, part, 450, 0.125);
    CHECK(fr_result_index_build(&ds, &ix, &err) == FR_OK);
    /* positions follow fx_config's order */
    const size_t P_INT2 = 0, P_G64 = 1, P_G128 = 2, P_GC = 3, P_TWIN = 4, P_PART = 5;
    unsigned char only_a[2] = {1, 0};
    CHECK(fr_configs_same_rows(&ix, P_G128, P_GC, NULL));
    CHECK(!fr_configs_same_rows(&ix, P_G64, P_G128, NULL));
    CHECK(fr_configs_same_rows(&ix, P_G64, P_G128, only_a));
    CHECK(!fr_configs_same_rows(&ix, P_G128, P_TWIN, NULL));
    CHECK(!fr_configs_same_rows(&ix, P_G64, P_PART, NULL));
    CHECK(fr_configs_same_rows(&ix, P_G64, P_PART, only_a));

    /* the model: gC is g128's, twin and g64 their own */
    fr_selection all = {NULL, NULL, "^(int2|g64|g128|gC|twin)$"};
    CHECK(fr_pareto_compute(&ds, &ix, &all, FR_BY_CONFIG, FR_METRIC_REL_ERR, &p, &err) == FR_OK);
    const fr_point *pt = find_point(&p, "model", "gC");
    CHECK(pt && pt->same_as == P_G128);
    CHECK((pt = find_point(&p, "model", "twin")) && pt->same_as == P_TWIN);
    CHECK((pt = find_point(&p, "model", "g64")) && pt->same_as == P_G64);
    CHECK((pt = find_point(&p, "model", "g128")) && pt->same_as == P_G128);
    /* bands: int2 at 2.5 bits; g64 (4.625 bits, error 0.375) the least in [4, 5) */
    CHECK((pt = fr_pareto_band_best(&p, 0, fr_bpw_band(2.5), 0)) && pt->config == P_INT2);
    CHECK((pt = fr_pareto_band_best(&p, 0, fr_bpw_band(4.5), 0)) && pt->config == P_G64);
    CHECK(fr_pareto_band_best(&p, 0, fr_bpw_band(3.5), 0) == NULL);
    fr_pareto_free(&p);

    /* by class: on A, g128 and gC are g64's; on B, gC is g128's */
    CHECK(fr_pareto_compute(&ds, &ix, &all, FR_BY_CLASS, FR_METRIC_REL_ERR, &p, &err) == FR_OK);
    CHECK((pt = find_point(&p, "attn_q", "g128")) && pt->same_as == P_G64);
    CHECK((pt = find_point(&p, "attn_q", "gC")) && pt->same_as == P_G64);
    CHECK((pt = find_point(&p, "attn_q", "twin")) && pt->same_as == P_TWIN);
    CHECK((pt = find_point(&p, "mlp_down", "gC")) && pt->same_as == P_G128);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    CHECK(mem != NULL);
    fr_pareto_print_bands(mem, &p, 0);
    fclose(mem);
    /* one row per group and band, the others named beside the first */
    CHECK(strstr(text, "\nattn_q    [4, 5)  g64 ") != NULL);
    CHECK(strstr(text, " g128 gC\n") != NULL);
    CHECK(strstr(text, "\nattn_q    [2, 3)  int2 ") != NULL);
    /* on B, twin ties g64's error with fewer bits */
    CHECK_MSG(strstr(text, "\nmlp_down  [4, 5)  twin ") != NULL, "%s", text);
    size_t rows = 0;
    for (const char *c = text; (c = strchr(c, '\n')) != NULL; c++)
        rows++;
    CHECK_MSG(rows == 3 + 4, "%zu lines:\n%s", rows, text);
    free(text);
    fr_pareto_free(&p);

    CHECK(fr_bpw_band(1.99) == 0 && fr_bpw_band(2) == 1 && fr_bpw_band(4.999) == 3);
    CHECK(fr_bpw_band(5) == 4 && fr_bpw_band(6.99) == 4 && fr_bpw_band(7) == 5);
    CHECK(fr_bpw_band(16) == 5 && fr_bpw_band(NAN) == -1);
    CHECK(!strcmp(fr_bpw_band_name(1), "[2, 3)") && !strcmp(fr_bpw_band_name(5), ">= 7"));
    fr_result_index_free(&ix);
    fr_dataset_free(&ds);
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
    check_same_rows();
    check_malformed(&ds, tensor_a, config_int2);
    fr_dataset_free(&ds);
    return fr_test_finish("test_pareto");
}
