/*
 * Mixed-precision allocation as an exact multiple-choice knapsack
 * (docs/analysis.md, "allocate").
 *
 * The solver follows the classic route for the MCKP (Sinha & Zoltners 1979,
 * "The multiple-choice knapsack problem", Oper. Res. 27(3); Dyer, Kayal &
 * Walker 1984; Pisinger 1995): the LP relaxation is solved greedily on the
 * lower convex hull of each item's (weight, cost) options, its multiplier
 * lambda gives a Lagrangian lower bound and reduced costs, options whose
 * reduced cost is at least the gap to the incumbent cannot be in a better
 * solution and are removed, and dynamic programming over what is left
 * (undominated partial solutions, each dropped when the LP bound of the
 * undecided items shows it cannot beat the incumbent) proves optimality.
 */
#include "frontier/allocate.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/log.h"

/* Relative slack under which two error sums count as equal: the search
 * returns a solution within this of the optimum (double rounding of the
 * sums is ~1e-16 per term). */
#define REL_TOL 1e-12

typedef struct mk_opt {
    uint64_t w;
    double e;
    size_t orig;   /* index into the caller's option arrays */
    double r;      /* reduced cost at the LP multiplier */
} mk_opt;

typedef struct mk_item {
    size_t n;            /* efficient options, w increasing and e strictly decreasing */
    mk_opt *opt;
    size_t n_hull;
    size_t *hull;        /* indices into opt of the lower convex hull */
    size_t n_keep;       /* options left after reduced-cost fixing (a prefix of order) */
    size_t *order;       /* indices into opt by increasing reduced cost */
    size_t n_khull;      /* hull of the kept options (indices into opt) */
    size_t *khull;
    size_t rank;         /* position among the free items in the search order */
} mk_item;

typedef struct mk_inc {
    size_t item;
    size_t k;            /* from khull[k] to khull[k + 1] */
    uint64_t dw;
    double de;           /* < 0 */
    double slope;
} mk_inc;

static int cmp_opt(const void *a, const void *b)
{
    const mk_opt *x = a, *y = b;
    if (x->w != y->w)
        return x->w < y->w ? -1 : 1;
    if (x->e != y->e)
        return x->e < y->e ? -1 : 1;
    return x->orig < y->orig ? -1 : x->orig > y->orig;
}

static int cmp_inc(const void *a, const void *b)
{
    const mk_inc *x = a, *y = b;
    if (x->slope != y->slope)
        return x->slope < y->slope ? -1 : 1;
    if (x->item != y->item)
        return x->item < y->item ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

/* Lower convex hull of the options listed in idx (w increasing, e strictly
 * decreasing): slopes strictly increase along it. */
static size_t lower_hull(const mk_opt *opt, const size_t *idx, size_t n, size_t *hull)
{
    size_t h = 0;
    for (size_t k = 0; k < n; k++) {
        const mk_opt *p = &opt[idx[k]];
        while (h >= 2) {
            const mk_opt *a = &opt[hull[h - 2]], *b = &opt[hull[h - 1]];
            /* drop b when it is not strictly below the segment a-p */
            long double lhs = ((long double)b->e - a->e) * (long double)(p->w - b->w);
            long double rhs = ((long double)p->e - b->e) * (long double)(b->w - a->w);
            if (lhs >= rhs)
                h--;
            else
                break;
        }
        hull[h++] = idx[k];
    }
    return h;
}

/* The exact search over the items left undecided by reduced-cost fixing:
 * dynamic programming item by item over partial solutions (bits, error),
 * keeping only undominated ones (fewer bits or less error than every
 * other) and dropping any whose LP bound on the best completion cannot beat
 * the incumbent. Dominance removes the symmetric combinations a
 * depth-first search would enumerate. */
typedef struct mk_search {
    mk_item *items;
    size_t n_free;
    size_t *free_items;     /* item indices by rank */
    mk_inc *incs;           /* increments of the kept hulls of free items, by slope */
    size_t n_incs;
    uint64_t *suffix_w;     /* [n_free + 1]: sum of the lightest kept options from rank r */
    double *suffix_e;       /* their costs */
    uint64_t capacity;      /* for the free items */
    double base_cost;       /* cost of the fixed items */
    double best;            /* incumbent cost (all items) */
    size_t *best_path;      /* option (index into opt) per rank of a better solution */
    int found;
    uint64_t nodes, max_nodes;
    int aborted;
} mk_search;

typedef struct mk_state {
    uint64_t w;
    double e;
    uint32_t parent;        /* index in the previous stage */
    uint32_t opt;           /* option of this stage's item (index into opt) */
} mk_state;

static int cmp_state(const void *a, const void *b)
{
    const mk_state *x = a, *y = b;
    if (x->w != y->w)
        return x->w < y->w ? -1 : 1;
    return x->e < y->e ? -1 : x->e > y->e;
}

static int prunes(double bound, double best)
{
    return bound >= best - REL_TOL * best;
}

/* LP of the free items of rank >= r as a function of capacity: the
 * cumulative (bits, error change) of their hull increments in slope order;
 * the LP at capacity c interpolates where the cumulative bits reach c. */
static size_t suffix_greedy(const mk_search *s, size_t r, uint64_t *cw, double *ce)
{
    size_t k = 0;
    cw[0] = 0;
    ce[0] = 0;
    for (size_t i = 0; i < s->n_incs; i++)
        if (s->items[s->incs[i].item].rank >= r) {
            cw[k + 1] = cw[k] + s->incs[i].dw;
            ce[k + 1] = ce[k] + s->incs[i].de;
            k++;
        }
    return k;
}

static double lp_at(const uint64_t *cw, const double *ce, size_t K, uint64_t c)
{
    if (c >= cw[K])
        return ce[K];
    size_t lo = 0, hi = K; /* cw[lo] <= c < cw[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (cw[mid] <= c)
            lo = mid;
        else
            hi = mid;
    }
    return ce[lo] + (ce[hi] - ce[lo]) * ((double)(c - cw[lo]) / (double)(cw[hi] - cw[lo]));
}

/* Returns 0 when out of memory. */
static int dp_search(mk_search *s)
{
    int ok = 0;
    size_t n = s->n_free;
    mk_state **stage = calloc(n + 1, sizeof *stage);
    size_t *count = calloc(n + 1, sizeof *count);
    uint64_t *cw = malloc((s->n_incs + 1) * sizeof *cw);
    double *ce = malloc((s->n_incs + 1) * sizeof *ce);
    if (!stage || !count || !cw || !ce)
        goto done;
    stage[0] = malloc(sizeof **stage);
    if (!stage[0])
        goto done;
    stage[0][0] = (mk_state){0, 0.0, 0, 0};
    count[0] = 1;
    size_t r = 0;
    for (; r < n; r++) {
        const mk_item *it = &s->items[s->free_items[r]];
        size_t K = suffix_greedy(s, r + 1, cw, ce);
        uint64_t base_w = s->suffix_w[r + 1];
        double base_e = s->suffix_e[r + 1];
        size_t cap = count[r] * it->n_keep;
        if (s->nodes + cap > s->max_nodes) {
            s->aborted = 1;
            break;
        }
        mk_state *cand = malloc((cap ? cap : 1) * sizeof *cand);
        if (!cand)
            goto done;
        size_t m = 0;
        for (size_t j = 0; j < count[r]; j++) {
            const mk_state *st = &stage[r][j];
            for (size_t k = 0; k < it->n_keep; k++) {
                const mk_opt *o = &it->opt[it->order[k]];
                if (o->w > s->capacity - st->w || base_w > s->capacity - st->w - o->w)
                    continue;
                uint64_t w = st->w + o->w;
                double e = st->e + o->e;
                double bound = s->base_cost + e + base_e + lp_at(cw, ce, K, s->capacity - w - base_w);
                if (prunes(bound, s->best))
                    continue;
                cand[m++] = (mk_state){w, e, (uint32_t)j, (uint32_t)it->order[k]};
            }
        }
        s->nodes += m;
        qsort(cand, m, sizeof *cand, cmp_state);
        size_t kept = 0;
        for (size_t j = 0; j < m; j++)
            if (kept == 0 || cand[j].e < cand[kept - 1].e)
                cand[kept++] = cand[j];
        stage[r + 1] = cand;
        count[r + 1] = kept;
        if (kept == 0)
            break; /* nothing can beat the incumbent */
    }
    if (r == n && count[n] > 0) {
        /* states are by increasing bits and decreasing error: the last is best */
        size_t j = count[n] - 1;
        double total = s->base_cost + stage[n][j].e;
        if (total < s->best) {
            s->best = total;
            s->found = 1;
            for (size_t q = n; q-- > 0;) {
                s->best_path[q] = stage[q + 1][j].opt;
                j = stage[q + 1][j].parent;
            }
        }
    }
    ok = 1;
done:
    if (stage)
        for (size_t q = 0; q <= n; q++)
            free(stage[q]);
    free(stage);
    free(count);
    free(cw);
    free(ce);
    return ok;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* qsort_r (glibc, _GNU_SOURCE) keeps these comparisons reentrant. */
static int cmp_free(const void *a, const void *b, void *ctx)
{
    const mk_item *items = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    size_t nx = items[x].n_keep, ny = items[y].n_keep;
    if (nx != ny)
        return nx > ny ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int cmp_reduced(const void *a, const void *b, void *ctx)
{
    const mk_opt *opt = ctx;
    const mk_opt *x = &opt[*(const size_t *)a], *y = &opt[*(const size_t *)b];
    if (x->r != y->r)
        return x->r < y->r ? -1 : 1;
    return x->w < y->w ? -1 : x->w > y->w;
}

fr_status fr_mckp_solve(const fr_mckp_item *in, size_t n_items, uint64_t capacity,
                        uint64_t max_nodes, size_t *choice, fr_mckp_stats *stats, fr_error *err)
{
    fr_status st = FR_OK;
    mk_item *items = NULL;
    mk_inc *incs = NULL;
    size_t *pos = NULL, *incumbent = NULL, *sorted = NULL;
    mk_search s;
    memset(&s, 0, sizeof s);
    memset(stats, 0, sizeof *stats);
    stats->optimal = 1;
    if (max_nodes == 0)
        max_nodes = FR_MCKP_DEFAULT_MAX_NODES;
    if (n_items == 0)
        return FR_OK;

    items = calloc(n_items, sizeof *items);
    pos = calloc(n_items, sizeof *pos);
    incumbent = calloc(n_items, sizeof *incumbent);
    if (!items || !pos || !incumbent)
        goto nomem;

    /* Efficient options: an option with no fewer bits and no less error than
     * another is never needed (swap it for the other). */
    size_t total_opts = 0;
    uint64_t min_w = 0;
    for (size_t i = 0; i < n_items; i++) {
        const fr_mckp_item *src = &in[i];
        mk_item *it = &items[i];
        if (src->n_options == 0) {
            st = fr_fail(err, FR_E_FAIL, "knapsack item %zu has no option", i);
            goto done;
        }
        it->opt = malloc(src->n_options * sizeof *it->opt);
        it->hull = malloc(src->n_options * sizeof *it->hull);
        it->order = malloc(src->n_options * sizeof *it->order);
        it->khull = malloc(src->n_options * sizeof *it->khull);
        if (!it->opt || !it->hull || !it->order || !it->khull)
            goto nomem;
        for (size_t j = 0; j < src->n_options; j++) {
            if (!isfinite(src->cost[j]) || src->cost[j] < 0) {
                st = fr_fail(err, FR_E_FAIL, "knapsack item %zu option %zu has cost %g", i, j,
                             src->cost[j]);
                goto done;
            }
            it->opt[j] = (mk_opt){src->weight[j], src->cost[j], j, 0};
        }
        qsort(it->opt, src->n_options, sizeof *it->opt, cmp_opt);
        size_t n = 0;
        for (size_t j = 0; j < src->n_options; j++)
            if (n == 0 || it->opt[j].e < it->opt[n - 1].e)
                it->opt[n++] = it->opt[j];
        it->n = n;
        total_opts += n;
        if (min_w > UINT64_MAX - it->opt[0].w) {
            st = fr_fail(err, FR_E_FAIL, "knapsack weights overflow");
            goto done;
        }
        min_w += it->opt[0].w;
    }
    if (min_w > capacity) {
        st = fr_fail(err, FR_E_USAGE,
                     "budget of %llu bits is below the smallest achievable size, %llu bits",
                     (unsigned long long)capacity, (unsigned long long)min_w);
        goto done;
    }

    /* Hulls and the greedy LP: start from the lightest option of every item
     * and take hull increments by decreasing error saved per bit. */
    sorted = malloc(total_opts * sizeof *sorted);
    incs = malloc((total_opts ? total_opts : 1) * sizeof *incs);
    if (!sorted || !incs)
        goto nomem;
    size_t n_incs = 0;
    uint64_t used = 0;
    double cost = 0;
    for (size_t i = 0; i < n_items; i++) {
        mk_item *it = &items[i];
        for (size_t j = 0; j < it->n; j++)
            sorted[j] = j;
        it->n_hull = lower_hull(it->opt, sorted, it->n, it->hull);
        for (size_t k = 0; k + 1 < it->n_hull; k++) {
            const mk_opt *a = &it->opt[it->hull[k]], *b = &it->opt[it->hull[k + 1]];
            incs[n_incs++] = (mk_inc){i, k, b->w - a->w, b->e - a->e,
                                      (b->e - a->e) / (double)(b->w - a->w)};
        }
        used += it->opt[it->hull[0]].w;
        cost += it->opt[it->hull[0]].e;
    }
    qsort(incs, n_incs, sizeof *incs, cmp_inc);
    double lp = NAN, lambda = 0;
    unsigned char *blocked = calloc(n_items, 1);
    if (!blocked)
        goto nomem;
    for (size_t k = 0; k < n_incs; k++) {
        const mk_inc *inc = &incs[k];
        if (blocked[inc->item] || pos[inc->item] != inc->k)
            continue;
        if (inc->dw <= capacity - used) {
            used += inc->dw;
            cost += inc->de;
            pos[inc->item]++;
        } else {
            if (isnan(lp)) {
                lp = cost + inc->de * ((double)(capacity - used) / (double)inc->dw);
                lambda = -inc->slope;
            }
            /* keep filling with the other items: a better incumbent */
            blocked[inc->item] = 1;
        }
    }
    free(blocked);
    if (isnan(lp))
        lp = cost; /* everything fits: the most accurate option of each item */
    double ub = 0;
    uint64_t ub_w = 0;
    for (size_t i = 0; i < n_items; i++) {
        const mk_opt *o = &items[i].opt[items[i].hull[pos[i]]];
        incumbent[i] = items[i].hull[pos[i]];
        ub += o->e;
        ub_w += o->w;
    }

    /* Lagrangian bound and reduced costs at lambda. */
    double lag = -(double)capacity * lambda;
    for (size_t i = 0; i < n_items; i++) {
        mk_item *it = &items[i];
        double m = INFINITY;
        for (size_t j = 0; j < it->n; j++) {
            double v = it->opt[j].e + lambda * (double)it->opt[j].w;
            if (v < m)
                m = v;
        }
        for (size_t j = 0; j < it->n; j++)
            it->opt[j].r = it->opt[j].e + lambda * (double)it->opt[j].w - m;
        lag += m;
    }
    double lower = lp > lag ? lp : lag;
    stats->lambda = lambda;
    stats->lower_bound = lower < ub ? lower : ub;

    if (!prunes(lower, ub) && ub > 0) {
        /* Any solution cheaper than ub has reduced costs summing below
         * ub - lag (as cost = lag + sum r + lambda * unused capacity), so
         * each of its options has r < ub - lag. Keep those, with slack for
         * rounding (keeping more is always safe). */
        double gap = ub - lag;
        double slack = 1e-9 * (fabs(ub) + lambda * (double)capacity) + 1e-300;
        size_t n_free = 0, n_free_incs = 0;
        uint64_t fixed_w = 0;
        double fixed_e = 0;
        for (size_t i = 0; i < n_items; i++) {
            mk_item *it = &items[i];
            for (size_t j = 0; j < it->n; j++)
                it->order[j] = j;
            qsort_r(it->order, it->n, sizeof *it->order, cmp_reduced, it->opt);
            it->n_keep = 0;
            while (it->n_keep < it->n && it->opt[it->order[it->n_keep]].r < gap + slack)
                it->n_keep++;
            if (it->n_keep == 0)
                it->n_keep = 1;
            if (it->n_keep == 1) {
                fixed_w += it->opt[it->order[0]].w;
                fixed_e += it->opt[it->order[0]].e;
            } else {
                n_free++;
            }
        }
        stats->n_free = n_free;
        if (fixed_w <= capacity) {
            s.items = items;
            s.n_free = n_free;
            s.capacity = capacity - fixed_w;
            s.base_cost = fixed_e;
            s.best = ub;
            s.max_nodes = max_nodes;
            s.free_items = malloc((n_free + 1) * sizeof *s.free_items);
            s.suffix_w = calloc(n_free + 1, sizeof *s.suffix_w);
            s.suffix_e = calloc(n_free + 1, sizeof *s.suffix_e);
            s.best_path = malloc((n_free + 1) * sizeof *s.best_path);
            if (!s.free_items || !s.suffix_w || !s.suffix_e || !s.best_path)
                goto nomem;
            n_free = 0;
            for (size_t i = 0; i < n_items; i++)
                if (items[i].n_keep > 1)
                    s.free_items[n_free++] = i;
            qsort_r(s.free_items, n_free, sizeof *s.free_items, cmp_free, items);
            /* kept hulls (kept options in weight order) and their increments */
            s.n_incs = 0;
            for (size_t r = 0; r < n_free; r++) {
                mk_item *it = &items[s.free_items[r]];
                it->rank = r;
                /* opt is in weight order, so kept indices sorted are too */
                memcpy(sorted, it->order, it->n_keep * sizeof *sorted);
                qsort(sorted, it->n_keep, sizeof *sorted, cmp_size);
                it->n_khull = lower_hull(it->opt, sorted, it->n_keep, it->khull);
                n_free_incs += it->n_khull - 1;
            }
            for (size_t i = 0; i < n_items; i++)
                if (items[i].n_keep == 1)
                    items[i].rank = SIZE_MAX; /* never undecided */
            s.incs = malloc((n_free_incs ? n_free_incs : 1) * sizeof *s.incs);
            if (!s.incs)
                goto nomem;
            for (size_t r = 0; r < n_free; r++) {
                size_t i = s.free_items[r];
                const mk_item *it = &items[i];
                for (size_t k = 0; k + 1 < it->n_khull; k++) {
                    const mk_opt *a = &it->opt[it->khull[k]], *b = &it->opt[it->khull[k + 1]];
                    s.incs[s.n_incs++] = (mk_inc){i, k, b->w - a->w, b->e - a->e,
                                                  (b->e - a->e) / (double)(b->w - a->w)};
                }
            }
            qsort(s.incs, s.n_incs, sizeof *s.incs, cmp_inc);
            for (size_t r = n_free; r-- > 0;) {
                const mk_item *it = &items[s.free_items[r]];
                s.suffix_w[r] = s.suffix_w[r + 1] + it->opt[it->khull[0]].w;
                s.suffix_e[r] = s.suffix_e[r + 1] + it->opt[it->khull[0]].e;
            }
            if (!dp_search(&s))
                goto nomem;
            stats->nodes = s.nodes;
            stats->optimal = !s.aborted;
            if (s.found) {
                for (size_t i = 0; i < n_items; i++)
                    if (items[i].n_keep == 1)
                        incumbent[i] = items[i].order[0];
                for (size_t r = 0; r < n_free; r++)
                    incumbent[s.free_items[r]] = s.best_path[r];
            }
        }
    }

    stats->cost = 0;
    stats->weight = 0;
    for (size_t i = 0; i < n_items; i++) {
        const mk_opt *o = &items[i].opt[incumbent[i]];
        choice[i] = o->orig;
        stats->cost += o->e;
        stats->weight += o->w;
    }
    (void)ub_w;
    if (stats->lower_bound > stats->cost)
        stats->lower_bound = stats->cost;
    goto done;

nomem:
    st = fr_fail(err, FR_E_NOMEM, "out of memory in the allocation search");
done:
    if (items)
        for (size_t i = 0; i < n_items; i++) {
            free(items[i].opt);
            free(items[i].hull);
            free(items[i].order);
            free(items[i].khull);
        }
    free(items);
    free(incs);
    free(pos);
    free(incumbent);
    free(sorted);
    free(s.free_items);
    free(s.suffix_w);
    free(s.suffix_e);
    free(s.best_path);
    free(s.incs);
    return st;
}

/* ---- allocation over a dataset ---- */

static int cmp_alloc_option(const void *a, const void *b)
{
    const fr_alloc_option *x = a, *y = b;
    if (x->total_bits != y->total_bits)
        return x->total_bits < y->total_bits ? -1 : 1;
    if (x->err_term != y->err_term)
        return x->err_term < y->err_term ? -1 : 1;
    return x->config < y->config ? -1 : x->config > y->config;
}

fr_status fr_alloc_prepare(const fr_dataset *ds, const fr_result_index *ix,
                           const fr_alloc_options *opt, fr_alloc_problem *prob, fr_error *err)
{
    fr_status st = FR_OK;
    fr_selector sel;
    regex_t *fixed_re = NULL;
    int64_t *fixed_cfg = NULL;
    size_t n_re = 0;

    memset(prob, 0, sizeof *prob);
    prob->ds = ds;
    prob->ix = ix;
    prob->metric = opt->metric;
    prob->max_nodes = opt->max_nodes;
    if ((unsigned)opt->metric >= FR_METRIC_COUNT)
        return fr_fail(err, FR_E_USAGE, "unknown metric");
    if ((st = fr_selector_init(&sel, &opt->selection, err)) != FR_OK)
        return st;
    if (opt->n_fixed) {
        fixed_re = calloc(opt->n_fixed, sizeof *fixed_re);
        fixed_cfg = calloc(opt->n_fixed, sizeof *fixed_cfg);
        if (!fixed_re || !fixed_cfg)
            goto nomem;
    }
    for (size_t f = 0; f < opt->n_fixed; f++) {
        fixed_cfg[f] = fr_config_position(ds, opt->fixed[f].config);
        if (fixed_cfg[f] < 0) {
            st = fr_fail(err, FR_E_USAGE,
                         "unknown configuration '%s' in --fixed '%s=%s': it is not in the dataset",
                         opt->fixed[f].config, opt->fixed[f].pattern, opt->fixed[f].config);
            goto done;
        }
        if ((st = fr_regex_compile(&fixed_re[f], opt->fixed[f].pattern, "--fixed", err)) != FR_OK)
            goto done;
        n_re++;
    }

    prob->tensors = calloc(ds->n_tensors + 1, sizeof *prob->tensors);
    if (!prob->tensors)
        goto nomem;
    size_t *fixed_hits = calloc(opt->n_fixed + 1, sizeof *fixed_hits);
    if (!fixed_hits)
        goto nomem;
    for (size_t t = 0; t < ds->n_tensors; t++) {
        const fr_ds_tensor *ten = &ds->tensors[t];
        if (ten->numel == 0 || !fr_selector_tensor(&sel, ten->name))
            continue;
        int64_t pinned = -1;
        size_t pin_rule = 0;
        for (size_t f = 0; f < opt->n_fixed; f++)
            if (regexec(&fixed_re[f], ten->name, 0, NULL, 0) == 0) {
                pinned = fixed_cfg[f];
                pin_rule = f;
            }
        fr_alloc_tensor *at = &prob->tensors[prob->n_tensors];
        memset(at, 0, sizeof *at);
        at->tensor = t;
        at->numel = ten->numel;
        at->norm_term = NAN;
        at->options = malloc((ds->n_configs ? ds->n_configs : 1) * sizeof *at->options);
        if (!at->options) {
            free(fixed_hits);
            goto nomem;
        }
        prob->n_tensors++;
        for (size_t c = 0; c < ds->n_configs; c++) {
            if (pinned >= 0 ? (int64_t)c != pinned : !fr_selector_config(&sel, ds->configs[c].name))
                continue;
            const fr_ds_result *r = fr_result_at(ix, t, c);
            double e, n;
            if (!r || !fr_metric_terms(opt->metric, r, ten, &e, &n))
                continue;
            if (isnan(at->norm_term))
                at->norm_term = n;
            at->options[at->n_options++] = (fr_alloc_option){c, r->total_bits, e};
        }
        if (pinned >= 0) {
            fixed_hits[pin_rule]++;
            if (at->n_options == 0) {
                st = fr_fail(err, FR_E_USAGE, "--fixed '%s=%s' pins tensor '%s', which has no %s result under '%s'",
                             opt->fixed[pin_rule].pattern, opt->fixed[pin_rule].config, ten->name,
                             fr_metric_name(opt->metric), opt->fixed[pin_rule].config);
                free(fixed_hits);
                goto done;
            }
            at->fixed = 1;
        }
        if (at->n_options == 0) {
            /* nothing measured for this metric (no calibration for it, say) */
            if (!prob->dropped_example)
                prob->dropped_example = ten->name;
            prob->n_dropped++;
            free(at->options);
            prob->n_tensors--;
            continue;
        }
        qsort(at->options, at->n_options, sizeof *at->options, cmp_alloc_option);
        size_t n = 0;
        for (size_t j = 0; j < at->n_options; j++)
            if (n == 0 || at->options[j].err_term < at->options[n - 1].err_term)
                at->options[n++] = at->options[j];
        at->n_options = n;
        prob->numel += at->numel;
        prob->norm_sum += at->norm_term;
        prob->min_bits += at->options[0].total_bits;
        prob->max_bits += at->options[n - 1].total_bits;
    }
    for (size_t f = 0; f < opt->n_fixed; f++)
        if (fixed_hits[f] == 0)
            fr_warn("--fixed '%s=%s' matches no selected tensor", opt->fixed[f].pattern,
                    opt->fixed[f].config);
    free(fixed_hits);
    if (prob->n_tensors == 0) {
        if (opt->metric == FR_METRIC_OUT_REL_ERR)
            st = fr_fail(err, FR_E_FORMAT,
                         "no selected result has out_rel_err (sweep with --calib to measure it)");
        else
            st = fr_fail(err, FR_E_FORMAT, "no selected tensor has a result to allocate");
        goto done;
    }
    goto done;
nomem:
    st = fr_fail(err, FR_E_NOMEM, "out of memory");
done:
    for (size_t f = 0; f < n_re; f++)
        regfree(&fixed_re[f]);
    free(fixed_re);
    free(fixed_cfg);
    fr_selector_free(&sel);
    if (st != FR_OK)
        fr_alloc_problem_free(prob);
    return st;
}

void fr_alloc_problem_free(fr_alloc_problem *prob)
{
    if (prob->tensors)
        for (size_t i = 0; i < prob->n_tensors; i++)
            free(prob->tensors[i].options);
    free(prob->tensors);
    memset(prob, 0, sizeof *prob);
}

double fr_alloc_min_bpw(const fr_alloc_problem *prob)
{
    return prob->numel ? (double)prob->min_bits / (double)prob->numel : NAN;
}

/* floor(budget * numel) in long double: a budget like 3.5 is exact; the
 * product of a decimal budget is rounded down, never up. */
static uint64_t capacity_of(double budget, uint64_t numel)
{
    long double c = floorl((long double)budget * (long double)numel);
    if (c >= 18446744073709551615.0L)
        return UINT64_MAX;
    return c <= 0 ? 0 : (uint64_t)c;
}

/* The budget rounded up to 4 decimals, so the printed minimum is accepted. */
static double ceil4(double v)
{
    return ceil(v * 1e4 - 1e-6) / 1e4;
}

fr_status fr_alloc_solve(const fr_alloc_problem *prob, double budget, fr_allocation *out,
                         fr_error *err)
{
    fr_status st = FR_OK;
    fr_mckp_item *items = NULL;
    uint64_t *w = NULL;
    double *e = NULL;
    size_t *choice = NULL;

    memset(out, 0, sizeof *out);
    out->metric = prob->metric;
    out->budget = budget;
    if (!isfinite(budget) || budget <= 0)
        return fr_fail(err, FR_E_USAGE, "budget must be a positive number of bits per weight");
    out->capacity_bits = capacity_of(budget, prob->numel);
    if (out->capacity_bits < prob->min_bits)
        return fr_fail(err, FR_E_USAGE,
                       "budget %g bits per weight is below the smallest achievable size: "
                       "%.4f bits per weight (%llu bits over %zu tensors)",
                       budget, ceil4(fr_alloc_min_bpw(prob)), (unsigned long long)prob->min_bits,
                       prob->n_tensors);

    size_t total = 0;
    for (size_t i = 0; i < prob->n_tensors; i++)
        total += prob->tensors[i].n_options;
    items = calloc(prob->n_tensors + 1, sizeof *items);
    w = malloc((total + 1) * sizeof *w);
    e = malloc((total + 1) * sizeof *e);
    choice = calloc(prob->n_tensors + 1, sizeof *choice);
    out->choices = calloc(prob->n_tensors + 1, sizeof *out->choices);
    if (!items || !w || !e || !choice || !out->choices) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    size_t k = 0;
    for (size_t i = 0; i < prob->n_tensors; i++) {
        const fr_alloc_tensor *at = &prob->tensors[i];
        items[i] = (fr_mckp_item){at->n_options, w + k, e + k};
        for (size_t j = 0; j < at->n_options; j++, k++) {
            w[k] = at->options[j].total_bits;
            e[k] = at->options[j].err_term;
        }
    }
    if ((st = fr_mckp_solve(items, prob->n_tensors, out->capacity_bits, prob->max_nodes, choice,
                            &out->stats, err)) != FR_OK)
        goto done;
    out->n_choices = prob->n_tensors;
    out->numel = prob->numel;
    out->norm_sum = prob->norm_sum;
    for (size_t i = 0; i < prob->n_tensors; i++) {
        const fr_alloc_tensor *at = &prob->tensors[i];
        const fr_alloc_option *o = &at->options[choice[i]];
        out->choices[i] = (fr_alloc_choice){at->tensor, o->config, o->total_bits, at->numel,
                                            o->err_term, at->norm_term, at->fixed};
        out->total_bits += o->total_bits;
        out->err_sum += o->err_term;
    }
    out->bits_per_weight = (double)out->total_bits / (double)out->numel;
    out->value = fr_metric_value(prob->metric, out->err_sum, out->norm_sum);
    out->lower_bound_value = fr_metric_value(prob->metric, out->stats.lower_bound, out->norm_sum);
done:
    free(items);
    free(w);
    free(e);
    free(choice);
    if (st != FR_OK)
        fr_allocation_free(out);
    return st;
}

void fr_allocation_free(fr_allocation *a)
{
    free(a->choices);
    a->choices = NULL;
    a->n_choices = 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

fr_status fr_alloc_sweep(const fr_alloc_problem *prob, double lo, double hi, double step,
                         int uniform_too, fr_mixed_curve *out, fr_error *err)
{
    fr_status st = FR_OK;
    double *budgets = NULL;
    memset(out, 0, sizeof *out);
    out->metric = prob->metric;
    out->numel = prob->numel;
    out->n_tensors = prob->n_tensors;
    out->norm_sum = prob->norm_sum;
    if (!(lo > 0) || !(hi >= lo) || !(step > 0) || !isfinite(hi))
        return fr_fail(err, FR_E_USAGE, "bad budget range %g..%g:%g", lo, hi, step);
    double span = (hi - lo) / step;
    if (span > 1e6)
        return fr_fail(err, FR_E_USAGE, "budget range %g..%g:%g has more than a million steps",
                       lo, hi, step);
    size_t n_grid = (size_t)floor(span + 1e-9) + 1;
    size_t cap = n_grid + (uniform_too ? prob->ds->n_configs : 0);
    budgets = malloc(cap * sizeof *budgets);
    out->points = calloc(cap, sizeof *out->points);
    if (!budgets || !out->points) {
        st = fr_fail(err, FR_E_NOMEM, "out of memory");
        goto done;
    }
    size_t nb = 0;
    for (size_t k = 0; k < n_grid; k++)
        budgets[nb++] = lo + (double)k * step;
    for (size_t c = 0; uniform_too && c < prob->ds->n_configs; c++) {
        /* a uniform configuration: measured (for the metric) on every allocated tensor */
        uint64_t bits = 0;
        int all = 1;
        for (size_t i = 0; i < prob->n_tensors && all; i++) {
            size_t t = prob->tensors[i].tensor;
            const fr_ds_result *r = fr_result_at(prob->ix, t, c);
            double e, n;
            if (!r || !fr_metric_terms(prob->metric, r, &prob->ds->tensors[t], &e, &n))
                all = 0;
            else
                bits += r->total_bits;
        }
        if (!all)
            continue;
        double bpw = (double)bits / (double)prob->numel;
        if (bpw >= lo && bpw <= hi)
            budgets[nb++] = bpw;
    }
    qsort(budgets, nb, sizeof *budgets, cmp_double);
    for (size_t k = 0; k < nb; k++) {
        if (k > 0 && budgets[k] == budgets[k - 1])
            continue;
        if (capacity_of(budgets[k], prob->numel) < prob->min_bits)
            continue;
        fr_allocation a;
        if ((st = fr_alloc_solve(prob, budgets[k], &a, err)) != FR_OK)
            goto done;
        fr_curve_point *p = &out->points[out->n_points++];
        p->budget = budgets[k];
        p->bits_per_weight = a.bits_per_weight;
        p->total_bits = a.total_bits;
        p->err_sum = a.err_sum;
        p->value = a.value;
        p->rel_err = fr_metric_value(prob->metric == FR_METRIC_SQNR_DB ? FR_METRIC_REL_ERR
                                                                        : prob->metric,
                                     a.err_sum, a.norm_sum);
        p->lower_bound_value = a.lower_bound_value;
        p->optimal = a.stats.optimal;
        fr_allocation_free(&a);
    }
    if (out->n_points == 0)
        st = fr_fail(err, FR_E_USAGE,
                     "every budget in %g..%g is below the smallest achievable size: %.4f bits per "
                     "weight",
                     lo, hi, ceil4(fr_alloc_min_bpw(prob)));
done:
    free(budgets);
    if (st != FR_OK)
        fr_mixed_curve_free(out);
    return st;
}

void fr_mixed_curve_free(fr_mixed_curve *c)
{
    free(c->points);
    c->points = NULL;
    c->n_points = 0;
}

/* ---- llama.cpp names and types ---- */

/* Frontier configurations with the same storage as a GGML type
 * (ggml-common.h block layouts): block of 32 with an fp16 scale (Q8_0, Q4_0,
 * Q5_0) or an fp16 scale and fp16 minimum (Q4_1, Q5_1), and OCP MXFP4.
 * The rounding rules differ in detail (Q4_0 uses the 16 levels -8..7 with
 * d = max / -8; Q4_1/Q5_1 store an fp16 minimum where frontier stores a
 * b-bit zero point), so llama.cpp's error and size are close to, not
 * identical with, what frontier measured: see docs/analysis.md. */
static const struct {
    const char *config, *ggml;
} ggml_types[] = {
    {"int8-g32-sym", "q8_0"},
    {"int4-g32-sym", "q4_0"},
    {"int4-g32-asym", "q4_1"},
    {"int5-g32-sym", "q5_0"},
    {"int5-g32-asym", "q5_1"},
    {"mxfp4", "mxfp4"},
};

const char *fr_ggml_type_for(const char *config_name)
{
    for (size_t i = 0; i < sizeof ggml_types / sizeof ggml_types[0]; i++)
        if (!strcmp(config_name, ggml_types[i].config))
            return ggml_types[i].ggml;
    return NULL;
}

/* convert_hf_to_gguf.py's names for the Llama layout (gguf-py
 * tensor_mapping.py, MODEL_ARCH.LLAMA). */
static const struct {
    const char *hf, *gguf;
} gguf_block_names[] = {
    {"self_attn.q_proj", "attn_q"},
    {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"},
    {"mlp.gate_proj", "ffn_gate"},
    {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
    {"input_layernorm", "attn_norm"},
    {"post_attention_layernorm", "ffn_norm"},
};

void fr_gguf_tensor_name(const char *name, char *buf, size_t size)
{
    static const char *layers = "model.layers.";
    if (size == 0)
        return;
    if (!strcmp(name, "model.embed_tokens.weight")) {
        snprintf(buf, size, "token_embd.weight");
        return;
    }
    if (!strcmp(name, "lm_head.weight")) {
        snprintf(buf, size, "output.weight");
        return;
    }
    if (!strcmp(name, "model.norm.weight")) {
        snprintf(buf, size, "output_norm.weight");
        return;
    }
    if (!strncmp(name, layers, strlen(layers))) {
        const char *p = name + strlen(layers);
        char *end;
        unsigned long layer = strtoul(p, &end, 10);
        if (end != p && *end == '.') {
            const char *rest = end + 1;
            for (size_t i = 0; i < sizeof gguf_block_names / sizeof gguf_block_names[0]; i++) {
                size_t l = strlen(gguf_block_names[i].hf);
                if (!strncmp(rest, gguf_block_names[i].hf, l) && rest[l] == '.') {
                    snprintf(buf, size, "blk.%lu.%s%s", layer, gguf_block_names[i].gguf,
                             rest + l);
                    return;
                }
            }
        }
    }
    snprintf(buf, size, "%s", name);
}

/* ---- outputs ---- */

static cJSON *json_number(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static fr_status write_text_file(const char *path, const char *text, fr_error *err)
{
    char ebuf[128];
    FILE *f = fopen(path, "w");
    if (!f)
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                       fr_errno_text(errno, ebuf, sizeof ebuf));
    fputs(text, f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                       fr_errno_text(errno, ebuf, sizeof ebuf));
    return FR_OK;
}

fr_status fr_allocation_write_json(const fr_allocation *a, const fr_alloc_problem *prob,
                                   const char *dataset_path, const char *path, fr_error *err)
{
    fr_status st = FR_OK;
    const fr_dataset *ds = prob->ds;
    char *text = NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON *recipe = cJSON_CreateObject();
    cJSON *tensors = cJSON_CreateArray();
    if (!root || !recipe || !tensors) {
        cJSON_Delete(recipe);
        cJSON_Delete(tensors);
        goto nomem;
    }
    cJSON_AddItemToObject(root, "recipe", recipe);
    cJSON_AddItemToObject(root, "tensors", tensors);
    cJSON_AddStringToObject(root, "format", "frontier-recipe");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "dataset", dataset_path ? dataset_path : "");
    cJSON_AddStringToObject(root, "metric", fr_metric_name(a->metric));
    cJSON_AddItemToObject(root, "budget_bits_per_weight", json_number(a->budget));
    cJSON_AddNumberToObject(root, "capacity_bits", (double)a->capacity_bits);
    cJSON_AddNumberToObject(root, "total_bits", (double)a->total_bits);
    cJSON_AddNumberToObject(root, "numel", (double)a->numel);
    cJSON_AddItemToObject(root, "bits_per_weight", json_number(a->bits_per_weight));
    cJSON_AddItemToObject(root, fr_metric_name(a->metric), json_number(a->value));
    if (a->metric == FR_METRIC_SQNR_DB)
        cJSON_AddItemToObject(root, "rel_err",
                              json_number(fr_metric_value(FR_METRIC_REL_ERR, a->err_sum, a->norm_sum)));
    cJSON_AddItemToObject(root, "err_sum", json_number(a->err_sum));
    cJSON_AddItemToObject(root, "norm_sum", json_number(a->norm_sum));
    cJSON_AddItemToObject(root, "lower_bound", json_number(a->lower_bound_value));
    cJSON_AddBoolToObject(root, "optimal", a->stats.optimal);
    cJSON_AddNumberToObject(root, "search_states", (double)a->stats.nodes);
    cJSON_AddNumberToObject(root, "n_tensors", (double)a->n_choices);
    for (size_t i = 0; i < a->n_choices; i++) {
        const fr_alloc_choice *ch = &a->choices[i];
        const fr_ds_tensor *t = &ds->tensors[ch->tensor];
        const fr_ds_config *c = &ds->configs[ch->config];
        cJSON *o = cJSON_CreateObject();
        if (!o)
            goto nomem;
        cJSON_AddItemToArray(tensors, o);
        cJSON_AddStringToObject(recipe, t->name, c->name);
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddStringToObject(o, "class", t->cls);
        cJSON_AddStringToObject(o, "config", c->name);
        cJSON_AddStringToObject(o, "family", c->family);
        const char *ggml = fr_ggml_type_for(c->name);
        cJSON_AddItemToObject(o, "llama_cpp_type", ggml ? cJSON_CreateString(ggml) : cJSON_CreateNull());
        cJSON_AddNumberToObject(o, "numel", (double)ch->numel);
        cJSON_AddNumberToObject(o, "total_bits", (double)ch->total_bits);
        cJSON_AddItemToObject(o, "bits_per_weight",
                              json_number((double)ch->total_bits / (double)ch->numel));
        cJSON_AddItemToObject(o, fr_metric_name(a->metric == FR_METRIC_SQNR_DB ? FR_METRIC_REL_ERR : a->metric),
                              json_number(fr_metric_value(a->metric == FR_METRIC_SQNR_DB ? FR_METRIC_REL_ERR : a->metric,
                                                          ch->err_term, ch->norm_term)));
        cJSON_AddItemToObject(o, "err_term", json_number(ch->err_term));
        cJSON_AddBoolToObject(o, "fixed", ch->fixed);
    }
    text = cJSON_Print(root);
    if (!text)
        goto nomem;
    size_t len = strlen(text);
    char *with_nl = realloc(text, len + 2);
    if (!with_nl)
        goto nomem;
    text = with_nl;
    text[len] = '\n';
    text[len + 1] = '\0';
    st = write_text_file(path, text, err);
    goto done;
nomem:
    st = fr_fail(err, FR_E_NOMEM, "out of memory writing '%s'", path);
done:
    cJSON_free(text);
    cJSON_Delete(root);
    return st;
}

fr_status fr_allocation_write_tensor_types(const fr_allocation *a, const fr_alloc_problem *prob,
                                           const char *path, size_t *n_unmapped, fr_error *err)
{
    char ebuf[128];
    size_t unmapped = 0;
    FILE *f = fopen(path, "w");
    if (!f)
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                       fr_errno_text(errno, ebuf, sizeof ebuf));
    /* llama-quantize --tensor-type-file: `regex=type` per line, no comments;
     * the regex is lowercased and matched with std::regex_search, the last
     * match winning, so each name is escaped and anchored. */
    for (size_t i = 0; i < a->n_choices; i++) {
        const fr_alloc_choice *ch = &a->choices[i];
        const char *ggml = fr_ggml_type_for(prob->ds->configs[ch->config].name);
        if (!ggml) {
            unmapped++;
            continue;
        }
        char gguf[512];
        fr_gguf_tensor_name(prob->ds->tensors[ch->tensor].name, gguf, sizeof gguf);
        fputc('^', f);
        for (const char *p = gguf; *p; p++) {
            if (strchr(".^$|()[]{}*+?\\", *p))
                fputc('\\', f);
            fputc(*p, f);
        }
        fprintf(f, "$=%s\n", ggml);
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return fr_fail(err, FR_E_OUTPUT, "cannot write '%s': %s", path,
                       fr_errno_text(errno, ebuf, sizeof ebuf));
    if (n_unmapped)
        *n_unmapped = unmapped;
    return FR_OK;
}

void fr_allocation_print(FILE *out, const fr_allocation *a, const fr_alloc_problem *prob,
                         int per_tensor)
{
    const fr_dataset *ds = prob->ds;
    const char *m = fr_metric_name(a->metric);
    fprintf(out, "budget %.4g bits per weight over %zu tensors (%llu parameters): capacity %llu bits\n",
            a->budget, a->n_choices, (unsigned long long)a->numel,
            (unsigned long long)a->capacity_bits);
    fprintf(out, "achieved %.6f bits per weight (%llu bits), %s %.6g (lower bound %.6g)%s\n",
            a->bits_per_weight, (unsigned long long)a->total_bits, m, a->value,
            a->lower_bound_value,
            a->stats.optimal ? ", optimal" : ", NOT proven optimal: search limit reached");
    if (!per_tensor)
        return;
    size_t w = 6;
    for (size_t i = 0; i < a->n_choices; i++) {
        size_t l = strlen(ds->tensors[a->choices[i].tensor].name);
        if (l > w)
            w = l;
    }
    fprintf(out, "  %-*s %-20s %9s %12s\n", (int)w, "tensor", "config", "bits/w",
             a->metric == FR_METRIC_OUT_REL_ERR ? "out_rel_err" : "rel_err");
    for (size_t i = 0; i < a->n_choices; i++) {
        const fr_alloc_choice *ch = &a->choices[i];
        fr_metric shown = a->metric == FR_METRIC_SQNR_DB ? FR_METRIC_REL_ERR : a->metric;
        fprintf(out, "  %-*s %-20s %9.4f %12.4e%s\n", (int)w, ds->tensors[ch->tensor].name,
                ds->configs[ch->config].name, (double)ch->total_bits / (double)ch->numel,
                fr_metric_value(shown, ch->err_term, ch->norm_term), ch->fixed ? "  (fixed)" : "");
    }
}

void fr_mixed_curve_print(FILE *out, const fr_mixed_curve *c)
{
    fprintf(out, "# mixed-precision frontier, %s over %zu tensors (%llu parameters)\n",
            fr_metric_name(c->metric), c->n_tensors, (unsigned long long)c->numel);
    fprintf(out, "  %9s %9s %12s %12s %s\n", "budget", "bits/w", fr_metric_name(c->metric),
            "lower_bound", "optimal");
    for (size_t i = 0; i < c->n_points; i++) {
        const fr_curve_point *p = &c->points[i];
        fprintf(out, "  %9.4f %9.4f %12.6g %12.6g %s\n", p->budget, p->bits_per_weight, p->value,
                p->lower_bound_value, p->optimal ? "yes" : "no");
    }
}
