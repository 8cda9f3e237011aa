/*
 * Model-level points and Pareto sets (docs/analysis.md, "pareto").
 */
#include "frontier/analysis/pareto.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/pattern.h"
#include "frontier/analysis/units.h"

/* ---- metrics ---- */

static const char *const metric_names[FR_METRIC_COUNT] = {
    [FR_METRIC_REL_ERR] = "rel_err",
    [FR_METRIC_OUT_REL_ERR] = "out_rel_err",
    [FR_METRIC_SQNR_DB] = "sqnr_db",
};

const char *fr_metric_name(fr_metric metric)
{
    return (unsigned)metric < FR_METRIC_COUNT ? metric_names[metric] : "?";
}

int fr_metric_from_name(const char *name)
{
    for (int m = 0; m < FR_METRIC_COUNT; m++)
        if (name && !strcmp(name, metric_names[m]))
            return m;
    return -1;
}

int fr_metric_terms(fr_metric metric, const fr_ds_result *result, const fr_ds_tensor *tensor,
                    double *err_term, double *norm_term)
{
    double e, n;
    if (metric == FR_METRIC_OUT_REL_ERR) {
        e = result->out_sq_err;
        n = result->out_sq_ref;
    } else {
        e = result->sq_err;
        n = tensor->sq_norm;
    }
    if (!isfinite(e) || !isfinite(n) || e < 0 || n < 0)
        return 0;
    *err_term = e;
    *norm_term = n;
    return 1;
}

double fr_metric_value(fr_metric metric, double err_sum, double norm_sum)
{
    double rel;
    if (!isfinite(err_sum) || !isfinite(norm_sum))
        return NAN;
    if (norm_sum > 0)
        rel = sqrt(err_sum / norm_sum);
    else
        rel = err_sum == 0 ? 0.0 : INFINITY;
    if (metric == FR_METRIC_SQNR_DB)
        return rel == 0 ? INFINITY : -20.0 * log10(rel);
    return rel;
}

/* ---- selection ---- */

fr_status fr_selector_init(fr_selector *sel, const fr_selection *spec, fr_error *err)
{
    fr_status st = FR_OK;
    memset(sel, 0, sizeof *sel);
    if (!spec)
        return FR_OK;
    if (spec->include) {
        if ((st = fr_pattern_compile(&sel->include, spec->include, "--include", err)) != FR_OK)
            goto fail;
        sel->has_include = 1;
    }
    if (spec->exclude) {
        if ((st = fr_pattern_compile(&sel->exclude, spec->exclude, "--exclude", err)) != FR_OK)
            goto fail;
        sel->has_exclude = 1;
    }
    if (spec->configs) {
        if ((st = fr_pattern_compile(&sel->configs, spec->configs, "--configs", err)) != FR_OK)
            goto fail;
        sel->has_configs = 1;
    }
    return FR_OK;
fail:
    fr_selector_free(sel);
    return st;
}

void fr_selector_free(fr_selector *sel)
{
    if (sel->has_include)
        regfree(&sel->include);
    if (sel->has_exclude)
        regfree(&sel->exclude);
    if (sel->has_configs)
        regfree(&sel->configs);
    memset(sel, 0, sizeof *sel);
}

int fr_selector_tensor(const fr_selector *sel, const char *name)
{
    if (sel->has_include && regexec(&sel->include, name, 0, NULL, 0) != 0)
        return 0;
    if (sel->has_exclude && regexec(&sel->exclude, name, 0, NULL, 0) == 0)
        return 0;
    return 1;
}

int fr_selector_config(const fr_selector *sel, const char *name)
{
    return !sel->has_configs || regexec(&sel->configs, name, 0, NULL, 0) == 0;
}

/* ---- index of results ---- */

typedef struct id_pos {
    uint32_t id;
    size_t pos;
} id_pos;

static int cmp_id_pos(const void *a, const void *b)
{
    const id_pos *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int64_t find_id(const id_pos *map, size_t n, uint32_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (map[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && map[lo].id == id ? (int64_t)map[lo].pos : -1;
}

fr_status fr_result_index_build(const fr_dataset *ds, fr_result_index *ix, fr_error *err)
{
    fr_status st = FR_OK;
    id_pos *tmap = NULL, *cmap = NULL;
    memset(ix, 0, sizeof *ix);
    ix->ds = ds;
    ix->n_tensors = ds->n_tensors;
    ix->n_configs = ds->n_configs;
    size_t cells = ds->n_tensors * ds->n_configs;
    if (ds->n_configs && cells / ds->n_configs != ds->n_tensors) {
        st = fr_fail(err, FR_E_NOMEM, "too many tensors x configurations to index");
        goto done;
    }
    tmap = malloc((ds->n_tensors ? ds->n_tensors : 1) * sizeof *tmap);
    cmap = malloc((ds->n_configs ? ds->n_configs : 1) * sizeof *cmap);
    ix->cell = malloc((cells ? cells : 1) * sizeof *ix->cell);
    if (!tmap || !cmap || !ix->cell) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory indexing results");
        goto done;
    }
    for (size_t i = 0; i < ds->n_tensors; i++)
        tmap[i] = (id_pos){ds->tensors[i].tensor_id, i};
    for (size_t i = 0; i < ds->n_configs; i++)
        cmap[i] = (id_pos){ds->configs[i].config_id, i};
    qsort(tmap, ds->n_tensors, sizeof *tmap, cmp_id_pos);
    qsort(cmap, ds->n_configs, sizeof *cmap, cmp_id_pos);
    for (size_t i = 0; i < cells; i++)
        ix->cell[i] = -1;
    for (size_t r = 0; r < ds->n_results; r++) {
        const fr_ds_result *res = &ds->results[r];
        int64_t t = find_id(tmap, ds->n_tensors, res->tensor_id);
        int64_t c = find_id(cmap, ds->n_configs, res->config_id);
        if (t < 0 || c < 0) {
            st = fr_fail(err, FR_E_FORMAT, "result %zu names unknown %s id %u", r,
                         t < 0 ? "tensor" : "configuration",
                         t < 0 ? res->tensor_id : res->config_id);
            goto done;
        }
        int64_t *cell = &ix->cell[(size_t)t * ds->n_configs + (size_t)c];
        if (*cell >= 0) {
            st = fr_fail(err, FR_E_FORMAT, "two results for tensor '%s' under '%s'",
                         ds->tensors[t].name, ds->configs[c].name);
            goto done;
        }
        *cell = (int64_t)r;
    }
done:
    free(tmap);
    free(cmap);
    if (st != FR_OK)
        fr_result_index_free(ix);
    return st;
}

void fr_result_index_free(fr_result_index *ix)
{
    free(ix->cell);
    memset(ix, 0, sizeof *ix);
}

int64_t fr_config_position(const fr_dataset *ds, const char *name)
{
    for (size_t c = 0; c < ds->n_configs; c++)
        if (!strcmp(ds->configs[c].name, name))
            return (int64_t)c;
    return -1;
}

/* Bit-identical doubles, NaN equal to NaN: the same computation gave both. */
static int same_double(double a, double b)
{
    return isnan(a) ? isnan(b) : a == b && signbit(a) == signbit(b);
}

int fr_configs_same_rows(const fr_result_index *ix, size_t c1, size_t c2,
                         const unsigned char *tensors)
{
    for (size_t t = 0; t < ix->n_tensors; t++) {
        if (tensors && !tensors[t])
            continue;
        const fr_ds_result *a = fr_result_at(ix, t, c1), *b = fr_result_at(ix, t, c2);
        if (!a || !b) {
            if (a || b)
                return 0;
            continue;
        }
        if (a->total_bits != b->total_bits || !same_double(a->sq_err, b->sq_err) ||
            !same_double(a->max_abs_err, b->max_abs_err) ||
            !same_double(a->out_sq_err, b->out_sq_err) ||
            !same_double(a->out_sq_ref, b->out_sq_ref))
            return 0;
    }
    return 1;
}

/* ---- points and Pareto sets ---- */

static const char *const group_by_names[FR_BY_COUNT] = {
    [FR_BY_CONFIG] = "config",
    [FR_BY_FAMILY] = "family",
    [FR_BY_CLASS] = "class",
    [FR_BY_TENSOR] = "tensor",
};

const char *fr_group_by_name(fr_group_by by)
{
    return (unsigned)by < FR_BY_COUNT ? group_by_names[by] : "?";
}

int fr_group_by_from_name(const char *name)
{
    for (int b = 0; b < FR_BY_COUNT; b++)
        if (name && !strcmp(name, group_by_names[b]))
            return b;
    return -1;
}

double fr_point_metric(const fr_point *p, fr_metric metric)
{
    switch (metric) {
    case FR_METRIC_OUT_REL_ERR: return p->out_rel_err;
    case FR_METRIC_SQNR_DB: return p->sqnr_db;
    default: return p->rel_err;
    }
}

/* The quantity minimised along with bits: rel_err also stands for sqnr_db,
 * which is a decreasing function of it (and finite where sqnr is infinite). */
static double point_key(const fr_point *p, fr_metric metric)
{
    return metric == FR_METRIC_OUT_REL_ERR ? p->out_rel_err : p->rel_err;
}

/* qsort_r (glibc, _GNU_SOURCE): the metric travels as the context, so
 * sorting stays reentrant. */
static int cmp_points(const void *a, const void *b, void *ctx)
{
    const fr_point *x = a, *y = b;
    fr_metric sort_metric = *(const fr_metric *)ctx;
    if (x->bits_per_weight != y->bits_per_weight)
        return x->bits_per_weight < y->bits_per_weight ? -1 : 1;
    double kx = point_key(x, sort_metric), ky = point_key(y, sort_metric);
    int nx = !isfinite(kx), ny = !isfinite(ky);
    if (nx != ny)
        return nx - ny;
    if (!nx && kx != ky)
        return kx < ky ? -1 : 1;
    return x->config < y->config ? -1 : x->config > y->config;
}

void fr_pareto_mark(fr_point *points, size_t n, fr_metric metric)
{
    /* After sorting by (bits, key), a point is dominated exactly when an
     * earlier point has a strictly smaller key, or an equal key at strictly
     * fewer bits. */
    qsort_r(points, n, sizeof *points, cmp_points, &metric);
    double best = INFINITY, best_bits = NAN;
    int have = 0;
    for (size_t i = 0; i < n; i++) {
        double k = point_key(&points[i], metric);
        points[i].on_frontier = 0;
        if (isnan(k) || !isfinite(points[i].bits_per_weight))
            continue;
        if (!have || k < best) {
            points[i].on_frontier = 1;
            best = k;
            best_bits = points[i].bits_per_weight;
            have = 1;
        } else if (k == best && points[i].bits_per_weight == best_bits) {
            points[i].on_frontier = 1;
        }
    }
}

static void point_finish(fr_point *p)
{
    p->bits_per_weight = p->numel ? (double)p->total_bits / (double)p->numel : NAN;
    p->rel_err = fr_metric_value(FR_METRIC_REL_ERR, p->sq_err, p->sq_norm);
    p->sqnr_db = fr_metric_value(FR_METRIC_SQNR_DB, p->sq_err, p->sq_norm);
    p->out_rel_err = fr_metric_value(FR_METRIC_OUT_REL_ERR, p->out_sq_err, p->out_sq_ref);
}

/* Groups of tensors or configurations, keyed by a string, in order of first
 * appearance. */
typedef struct group_keys {
    size_t n;
    const char **keys;
} group_keys;

static int64_t keys_find(const group_keys *g, const char *key)
{
    for (size_t i = 0; i < g->n; i++)
        if (!strcmp(g->keys[i], key))
            return (int64_t)i;
    return -1;
}

static int valid_at(const fr_result_index *ix, fr_metric metric, size_t t, size_t c)
{
    const fr_ds_result *r = fr_result_at(ix, t, c);
    double e, n;
    return r && fr_metric_terms(metric, r, &ix->ds->tensors[t], &e, &n);
}

/* What fr_pareto_compute works on: the selection as masks, the allocation
 * units of the selected tensors and, for the group being built, which
 * configurations it compares and which units they are compared on. */
typedef struct pareto_work {
    const fr_dataset *ds;
    const fr_result_index *ix;
    fr_group_by by;
    fr_metric metric;
    fr_units units;        /* of the selected tensors */
    unsigned char *tsel;   /* tensors selected, with parameters */
    unsigned char *csel;   /* configurations selected */
    unsigned char *ccmp;   /* configurations compared in the group */
    unsigned char *tin;    /* the group's units: 1 measured by some compared
                              configuration, 2 by all of them */
    unsigned char *tsum;   /* the tensors the group's points sum (members of
                              its common units) */
    size_t *tgroup;        /* group of each unit (by class, by tensor) */
    size_t *cgroup;        /* group of each configuration (by family) */
    group_keys keys;       /* group names in order of first appearance */
    size_t cap_points;     /* room in out->points */
} pareto_work;

/* Configuration c measured on every member of unit u. */
static int unit_valid(const pareto_work *w, size_t u, size_t c)
{
    for (size_t i = w->units.first[u]; i < w->units.first[u + 1]; i++)
        if (!valid_at(w->ix, w->metric, w->units.member[i], c))
            return 0;
    return 1;
}

static uint64_t unit_numel(const pareto_work *w, size_t u)
{
    uint64_t n = 0;
    for (size_t i = w->units.first[u]; i < w->units.first[u + 1]; i++)
        n += w->ds->tensors[w->units.member[i]].numel;
    return n;
}

/* Step 1, the groups. Afterwards keys names them, tgroup gives each unit's
 * group (one "model" group unless by class or tensor) and, by family,
 * cgroup each selected configuration's. */
static void assign_groups(pareto_work *w)
{
    const fr_dataset *ds = w->ds;
    fr_group_by by = w->by;
    for (size_t u = 0; u < w->units.n_units; u++) {
        size_t t = w->units.member[w->units.first[u]];
        const char *key = by == FR_BY_CLASS ? ds->tensors[t].cls
                        : by == FR_BY_TENSOR ? w->units.name[u] : "model";
        if (by == FR_BY_FAMILY)
            key = "model";
        int64_t g = by == FR_BY_TENSOR ? -1 : keys_find(&w->keys, key);
        if (g < 0) {
            g = (int64_t)w->keys.n;
            w->keys.keys[w->keys.n++] = key;
        }
        w->tgroup[u] = (size_t)g;
    }
    if (by != FR_BY_FAMILY)
        return;
    w->keys.n = 0;
    for (size_t c = 0; c < ds->n_configs; c++) {
        if (!w->csel[c])
            continue;
        int64_t g = keys_find(&w->keys, ds->configs[c].family);
        if (g < 0) {
            g = (int64_t)w->keys.n;
            w->keys.keys[w->keys.n++] = ds->configs[c].family;
        }
        w->cgroup[c] = (size_t)g;
    }
}

/* Step 2, what group g compares. Afterwards ccmp marks its configurations
 * measured on any of its units, tin its units measured by any of those
 * (2: by all of them, the common set every point sums over), and grp counts
 * both and names a configuration that covers only part of the units. A
 * unit counts as measured by a configuration when all its members are. */
static void measure_group(pareto_work *w, size_t g, fr_pareto_group *grp)
{
    const fr_dataset *ds = w->ds;
    size_t nu = w->units.n_units, nc = ds->n_configs;
    fr_group_by by = w->by;
    for (size_t u = 0; u < nu; u++)
        w->tin[u] = by == FR_BY_FAMILY || by == FR_BY_CONFIG || w->tgroup[u] == g;
    for (size_t c = 0; c < nc; c++) {
        w->ccmp[c] = 0;
        if (!w->csel[c] || (by == FR_BY_FAMILY && w->cgroup[c] != g))
            continue;
        for (size_t u = 0; u < nu && !w->ccmp[c]; u++)
            if (w->tin[u] && unit_valid(w, u, c))
                w->ccmp[c] = 1;
        grp->n_configs += w->ccmp[c];
    }
    for (size_t u = 0; u < nu; u++) {
        if (!w->tin[u])
            continue;
        size_t n_valid = 0;
        for (size_t c = 0; c < nc; c++)
            if (w->ccmp[c] && unit_valid(w, u, c))
                n_valid++;
        if (n_valid == 0) {
            w->tin[u] = 0;
            continue;
        }
        uint64_t numel = unit_numel(w, u);
        grp->n_tensors++;
        grp->numel += numel;
        if (n_valid == grp->n_configs) {
            grp->n_common++;
            grp->common_numel += numel;
            w->tin[u] = 2;
        }
    }
    for (size_t c = 0; c < nc; c++) {
        if (!w->ccmp[c])
            continue;
        for (size_t u = 0; u < nu; u++)
            if (w->tin[u] == 1 && !unit_valid(w, u, c)) {
                if (!grp->partial_example)
                    grp->partial_example = ds->configs[c].name;
                grp->n_partial++;
                break;
            }
    }
}

/* Step 3, one point: configuration c of group g summed over the members of
 * the group's common units (in unit order, members in expert order),
 * appended to out. Returns 0 when out of memory. */
static int add_point(pareto_work *w, fr_pareto *out, size_t g, size_t c)
{
    const fr_dataset *ds = w->ds;
    const fr_units *un = &w->units;
    if (out->n_points == w->cap_points) {
        size_t ncap = w->cap_points ? 2 * w->cap_points : 64;
        fr_point *np = realloc(out->points, ncap * sizeof *np);
        if (!np)
            return 0;
        out->points = np;
        w->cap_points = ncap;
    }
    fr_point *p = &out->points[out->n_points++];
    memset(p, 0, sizeof *p);
    p->group = g;
    p->config = c;
    p->config_name = ds->configs[c].name;
    p->family = ds->configs[c].family;
    p->nominal_bits = ds->configs[c].nominal_bits;
    p->same_as = c;
    for (size_t u = 0; u < un->n_units; u++) {
        if (w->tin[u] != 2)
            continue;
        p->n_tensors++;
        for (size_t i = un->first[u]; i < un->first[u + 1]; i++) {
            size_t t = un->member[i];
            const fr_ds_result *r = fr_result_at(w->ix, t, c);
            p->total_bits += r->total_bits;
            p->numel += ds->tensors[t].numel;
            p->sq_err += r->sq_err;
            p->sq_norm += ds->tensors[t].sq_norm;
            p->out_sq_err += r->out_sq_err; /* NaN propagates: absent for the set */
            p->out_sq_ref += r->out_sq_ref;
        }
    }
    if (w->metric == FR_METRIC_OUT_REL_ERR) {
        /* the weight terms may be absent on rows kept for the output metric */
        double se = 0, sn = 0, e, n;
        for (size_t u = 0; u < un->n_units; u++)
            for (size_t i = un->first[u]; w->tin[u] == 2 && i < un->first[u + 1]; i++) {
                size_t t = un->member[i];
                const fr_ds_result *r = fr_result_at(w->ix, t, c);
                if (fr_metric_terms(FR_METRIC_REL_ERR, r, &ds->tensors[t], &e, &n)) {
                    se += e;
                    sn += n;
                } else {
                    se = sn = NAN;
                }
            }
        p->sq_err = se;
        p->sq_norm = sn;
    }
    point_finish(p);
    return 1;
}

/* Step 4, after the points of group g are sorted by bits: each point's
 * same_as, the first point before it with the same rows on the tensors they
 * sum. Such points have the same bits, so they sit in one run of equal
 * bits per weight, and the same sums, compared before the rows. */
static void mark_same(pareto_work *w, fr_point *pts, size_t n)
{
    const fr_units *un = &w->units;
    memset(w->tsum, 0, w->ds->n_tensors);
    for (size_t u = 0; u < un->n_units; u++)
        for (size_t i = un->first[u]; w->tin[u] == 2 && i < un->first[u + 1]; i++)
            w->tsum[un->member[i]] = 1;
    size_t run = 0; /* first point with this point's bits */
    for (size_t i = 0; i < n; i++) {
        fr_point *p = &pts[i];
        if (p->total_bits != pts[run].total_bits)
            run = i;
        for (size_t j = run; j < i; j++)
            if (pts[j].same_as == pts[j].config && same_double(pts[j].sq_err, p->sq_err) &&
                same_double(pts[j].out_sq_err, p->out_sq_err) &&
                fr_configs_same_rows(w->ix, pts[j].config, p->config, w->tsum)) {
                p->same_as = pts[j].config;
                break;
            }
    }
}

fr_status fr_pareto_compute(const fr_dataset *ds, const fr_result_index *ix,
                            const fr_selection *selection, fr_group_by by, fr_metric metric,
                            fr_pareto *out, fr_error *err)
{
    return fr_pareto_compute_units(ds, ix, selection, by, metric, 0, out, err);
}

fr_status fr_pareto_compute_units(const fr_dataset *ds, const fr_result_index *ix,
                                  const fr_selection *selection, fr_group_by by,
                                  fr_metric metric, int expert_units, fr_pareto *out,
                                  fr_error *err)
{
    fr_status st = FR_OK;
    fr_selector sel;
    size_t nt = ds->n_tensors, nc = ds->n_configs;
    pareto_work w;
    memset(&w, 0, sizeof w);
    w.ds = ds;
    w.ix = ix;
    w.by = by;
    w.metric = metric;

    memset(out, 0, sizeof *out);
    out->by = by;
    out->metric = metric;
    out->expert_units = expert_units;
    if ((unsigned)by >= FR_BY_COUNT || (unsigned)metric >= FR_METRIC_COUNT)
        return fr_fail(err, FR_E_USAGE, "unknown grouping or metric");
    if ((st = fr_selector_init(&sel, selection, err)) != FR_OK)
        return st;

    w.tsel = calloc(nt + 1, 1);
    w.csel = calloc(nc + 1, 1);
    w.ccmp = calloc(nc + 1, 1);
    w.tin = calloc(nt + 1, 1);
    w.tsum = calloc(nt + 1, 1);
    w.tgroup = calloc(nt + 1, sizeof *w.tgroup);
    w.cgroup = calloc(nc + 1, sizeof *w.cgroup);
    w.keys.keys = calloc((nt > nc ? nt : nc) + 1, sizeof *w.keys.keys);
    if (!w.tsel || !w.csel || !w.ccmp || !w.tin || !w.tsum || !w.tgroup || !w.cgroup ||
        !w.keys.keys)
        goto nomem;
    for (size_t t = 0; t < nt; t++)
        w.tsel[t] = ds->tensors[t].numel > 0 && fr_selector_tensor(&sel, ds->tensors[t].name);
    for (size_t c = 0; c < nc; c++)
        w.csel[c] = fr_selector_config(&sel, ds->configs[c].name);
    if ((st = fr_units_build(ds, w.tsel, expert_units, &w.units, err)) != FR_OK)
        goto done;
    assign_groups(&w);

    out->groups = calloc(w.keys.n + 1, sizeof *out->groups);
    if (!out->groups)
        goto nomem;
    for (size_t g = 0; g < w.keys.n; g++) {
        fr_pareto_group *grp = &out->groups[out->n_groups++];
        grp->name = strdup(w.keys.keys[g]);
        if (!grp->name)
            goto nomem;
        measure_group(&w, g, grp);
        grp->first_point = out->n_points;
        if (grp->n_common == 0)
            continue;
        for (size_t c = 0; c < nc; c++)
            if (w.ccmp[c] && !add_point(&w, out, g, c))
                goto nomem;
        grp->n_points = out->n_points - grp->first_point;
        fr_pareto_mark(out->points + grp->first_point, grp->n_points, metric);
        mark_same(&w, out->points + grp->first_point, grp->n_points);
    }
    if (out->n_points == 0) {
        if (metric == FR_METRIC_OUT_REL_ERR)
            st = fr_fail(err, FR_E_FORMAT,
                         "no selected result has out_rel_err (sweep with --calib to measure it)");
        else
            st = fr_fail(err, FR_E_FORMAT, "no selected tensor has a result to compare");
    }
    goto done;
nomem:
    st = fr_fail(err, FR_E_NOMEM, "out of memory");
done:
    free(w.tsel);
    free(w.csel);
    free(w.ccmp);
    free(w.tin);
    free(w.tsum);
    free(w.tgroup);
    free(w.cgroup);
    free(w.keys.keys);
    fr_units_free(&w.units);
    fr_selector_free(&sel);
    if (st != FR_OK)
        fr_pareto_free(out);
    return st;
}

void fr_pareto_free(fr_pareto *p)
{
    for (size_t g = 0; g < p->n_groups; g++)
        free(p->groups[g].name);
    free(p->groups);
    free(p->points);
    fr_group_by by = p->by;
    fr_metric metric = p->metric;
    memset(p, 0, sizeof *p);
    p->by = by;
    p->metric = metric;
}

static void print_value(FILE *out, double v, int width, const char *fmt)
{
    if (isnan(v))
        fprintf(out, " %*s", width, "-");
    else if (isinf(v))
        fprintf(out, " %*s", width, v > 0 ? "inf" : "-inf");
    else {
        char buf[64];
        snprintf(buf, sizeof buf, fmt, v);
        fprintf(out, " %*s", width, buf);
    }
}

void fr_pareto_print(FILE *out, const fr_pareto *p, int frontier_only)
{
    size_t name_w = 6;
    for (size_t i = 0; i < p->n_points; i++) {
        size_t l = strlen(p->points[i].config_name);
        if (l > name_w)
            name_w = l;
    }
    fprintf(out, "# metric %s, grouped by %s; * = Pareto-optimal (fewest bits for the error)\n",
            fr_metric_name(p->metric), fr_group_by_name(p->by));
    for (size_t g = 0; g < p->n_groups; g++) {
        const fr_pareto_group *grp = &p->groups[g];
        fprintf(out, "\n%s: %zu of %zu %s measured by all %zu configurations", grp->name,
                grp->n_common, grp->n_tensors, p->expert_units ? "units" : "tensors",
                grp->n_configs);
        if (grp->numel)
            fprintf(out, " (%.1f%% of the parameters)",
                    100.0 * (double)grp->common_numel / (double)grp->numel);
        fputc('\n', out);
        if (grp->n_partial)
            fprintf(out,
                    "  note: %zu configuration%s (e.g. '%s') cover only some tensors; every point "
                    "below uses the %zu %s all of them cover (select with --configs)\n",
                    grp->n_partial, grp->n_partial == 1 ? "" : "s", grp->partial_example,
                    grp->n_common, p->expert_units ? "units" : "tensors");
        if (grp->n_points == 0) {
            fprintf(out, "  no tensor is measured by every configuration: nothing to compare\n");
            continue;
        }
        fprintf(out, "  %-*s %-10s %9s %11s %8s %11s %8s %s\n", (int)name_w, "config", "family",
                "bits/w", "rel_err", "sqnr_db", "out_rel_err", p->expert_units ? "units" : "tensors",
                "pareto");
        for (size_t i = grp->first_point; i < grp->first_point + grp->n_points; i++) {
            const fr_point *pt = &p->points[i];
            if (frontier_only && !pt->on_frontier)
                continue;
            fprintf(out, "  %-*s %-10s", (int)name_w, pt->config_name, pt->family);
            print_value(out, pt->bits_per_weight, 9, "%.4f");
            print_value(out, pt->rel_err, 11, "%.4e");
            print_value(out, pt->sqnr_db, 8, "%.2f");
            print_value(out, pt->out_rel_err, 11, "%.4e");
            fprintf(out, " %8zu %s\n", pt->n_tensors, pt->on_frontier ? "*" : "");
        }
    }
}

/* ---- the compact table ---- */

static const double band_edges[FR_BPW_BANDS - 1] = {2, 3, 4, 5, 7};
static const char *const band_names[FR_BPW_BANDS] = {"< 2",    "[2, 3)", "[3, 4)",
                                                     "[4, 5)", "[5, 7)", ">= 7"};

int fr_bpw_band(double bits_per_weight)
{
    if (isnan(bits_per_weight))
        return -1;
    int b = 0;
    while (b < FR_BPW_BANDS - 1 && bits_per_weight >= band_edges[b])
        b++;
    return b;
}

const char *fr_bpw_band_name(int band)
{
    return band >= 0 && band < FR_BPW_BANDS ? band_names[band] : "-";
}

const fr_point *fr_pareto_band_best(const fr_pareto *p, size_t group, int band, int frontier_only)
{
    const fr_pareto_group *grp = &p->groups[group];
    const fr_point *best = NULL;
    for (size_t i = grp->first_point; i < grp->first_point + grp->n_points; i++) {
        const fr_point *pt = &p->points[i];
        double k = point_key(pt, p->metric);
        if (pt->same_as != pt->config || isnan(k) || fr_bpw_band(pt->bits_per_weight) != band ||
            (frontier_only && !pt->on_frontier))
            continue;
        if (!best || k < point_key(best, p->metric) ||
            (k == point_key(best, p->metric) && pt->bits_per_weight < best->bits_per_weight))
            best = pt;
    }
    return best;
}

void fr_pareto_print_bands(FILE *out, const fr_pareto *p, int frontier_only)
{
    const char *units = p->expert_units ? "units" : "tensors";
    /* one model-level group needs no group column */
    int group_col = p->by != FR_BY_CONFIG;
    size_t name_w = 6, group_w = group_col ? strlen(fr_group_by_name(p->by)) : 0, n_configs = 0;
    for (size_t g = 0; g < p->n_groups; g++) {
        const fr_pareto_group *grp = &p->groups[g];
        if (group_col && strlen(grp->name) > group_w)
            group_w = strlen(grp->name);
        if (grp->n_configs > n_configs)
            n_configs = grp->n_configs;
        for (int b = 0; b < FR_BPW_BANDS; b++) {
            const fr_point *pt = fr_pareto_band_best(p, g, b, frontier_only);
            if (pt && strlen(pt->config_name) > name_w)
                name_w = strlen(pt->config_name);
        }
    }
    const char *metric = fr_metric_name(p->metric);
    fprintf(out,
            "# metric %s, grouped by %s: the least %s%s in each band of bits per weight "
            "(--verbose: all %zu configurations)\n"
            "# * = Pareto-optimal; same rows = the other configurations with identical bits "
            "and errors on each %s\n",
            metric, fr_group_by_name(p->by),
            p->metric == FR_METRIC_SQNR_DB ? "error (highest sqnr_db)" : metric,
            frontier_only ? " of the Pareto-optimal points" : "", n_configs,
            p->expert_units ? "unit" : "tensor");
    if (group_col)
        fprintf(out, "%-*s  ", (int)group_w, fr_group_by_name(p->by));
    fprintf(out, "%-6s  %-*s %9s %11s %8s %11s %7s %s\n", "band", (int)name_w, "config", "bits/w",
            "rel_err", "sqnr_db", "out_rel_err", units, "pareto  same rows");
    for (size_t g = 0; g < p->n_groups; g++) {
        const fr_pareto_group *grp = &p->groups[g];
        const char *gname = group_col ? grp->name : "";
        for (int b = 0; b < FR_BPW_BANDS; b++) {
            const fr_point *pt = fr_pareto_band_best(p, g, b, frontier_only);
            if (!pt)
                continue;
            if (group_col)
                fprintf(out, "%-*s  ", (int)group_w, gname);
            fprintf(out, "%-6s  %-*s", fr_bpw_band_name(b), (int)name_w, pt->config_name);
            print_value(out, pt->bits_per_weight, 9, "%.4f");
            print_value(out, pt->rel_err, 11, "%.4e");
            print_value(out, pt->sqnr_db, 8, "%.2f");
            print_value(out, pt->out_rel_err, 11, "%.4e");
            fprintf(out, " %7zu %s", pt->n_tensors, pt->on_frontier ? "*" : " ");
            const char *sep = "       ";
            for (size_t i = grp->first_point; i < grp->first_point + grp->n_points; i++)
                if (p->points[i].same_as == pt->config && &p->points[i] != pt) {
                    fprintf(out, "%s%s", sep, p->points[i].config_name);
                    sep = " ";
                }
            fputc('\n', out);
        }
        /* what the verbose header says, when the group is not whole */
        if (group_col && grp->n_points == 0)
            fprintf(out, "%-*s  no %s is measured by every configuration: nothing to compare\n",
                    (int)group_w, gname, p->expert_units ? "unit" : "tensor");
        else if (grp->n_points == 0)
            fprintf(out, "no %s is measured by every configuration: nothing to compare\n",
                    p->expert_units ? "unit" : "tensor");
        else if (grp->n_partial)
            fprintf(out,
                    "%s%snote: %zu of %zu %s measured by all %zu configurations; %zu (e.g. '%s') "
                    "cover only some: every row uses the %zu (select with --configs)\n",
                    gname, group_col ? ": " : "", grp->n_common, grp->n_tensors, units,
                    grp->n_configs, grp->n_partial, grp->partial_example, grp->n_common);
    }
}
