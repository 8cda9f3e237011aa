/*
 * The exact multiple-choice knapsack solver (frontier/analysis/mckp.h).
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
#include "frontier/analysis/mckp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

static fr_status out_of_memory(fr_error *err)
{
    return fr_fail(err, FR_E_NOMEM, "out of memory in the allocation search");
}

/* The hull increments of item i from hull[k] to hull[k + 1], appended to
 * incs: what the greedy LP (and the search's bound) take in slope order. */
static void add_increments(const mk_item *it, size_t i, const size_t *hull, size_t n_hull,
                           mk_inc *incs, size_t *n_incs)
{
    for (size_t k = 0; k + 1 < n_hull; k++) {
        const mk_opt *a = &it->opt[hull[k]], *b = &it->opt[hull[k + 1]];
        incs[(*n_incs)++] = (mk_inc){i, k, b->w - a->w, b->e - a->e,
                                     (b->e - a->e) / (double)(b->w - a->w)};
    }
}

/* Step 1, the efficient options. Afterwards items[i].opt holds the options
 * of in[i] that some solution may need (an option with no fewer bits and no
 * less error than another is swapped for the other), by increasing weight
 * and strictly decreasing cost; *total_opts counts them and *min_w is the
 * weight of the lightest solution. */
static fr_status load_items(const fr_mckp_item *in, size_t n_items, mk_item *items,
                            size_t *total_opts, uint64_t *min_w, fr_error *err)
{
    *total_opts = 0;
    *min_w = 0;
    for (size_t i = 0; i < n_items; i++) {
        const fr_mckp_item *src = &in[i];
        mk_item *it = &items[i];
        if (src->n_options == 0)
            return fr_fail(err, FR_E_FAIL, "knapsack item %zu has no option", i);
        it->opt = malloc(src->n_options * sizeof *it->opt);
        it->hull = malloc(src->n_options * sizeof *it->hull);
        it->order = malloc(src->n_options * sizeof *it->order);
        it->khull = malloc(src->n_options * sizeof *it->khull);
        if (!it->opt || !it->hull || !it->order || !it->khull)
            return out_of_memory(err);
        for (size_t j = 0; j < src->n_options; j++) {
            if (!isfinite(src->cost[j]) || src->cost[j] < 0)
                return fr_fail(err, FR_E_FAIL, "knapsack item %zu option %zu has cost %g", i, j,
                               src->cost[j]);
            it->opt[j] = (mk_opt){src->weight[j], src->cost[j], j, 0};
        }
        qsort(it->opt, src->n_options, sizeof *it->opt, cmp_opt);
        size_t n = 0;
        for (size_t j = 0; j < src->n_options; j++)
            if (n == 0 || it->opt[j].e < it->opt[n - 1].e)
                it->opt[n++] = it->opt[j];
        it->n = n;
        *total_opts += n;
        if (*min_w > UINT64_MAX - it->opt[0].w)
            return fr_fail(err, FR_E_FAIL, "knapsack weights overflow");
        *min_w += it->opt[0].w;
    }
    return FR_OK;
}

/* Step 2, the greedy LP. Starting from the lightest option of every item,
 * hull increments are taken by decreasing error saved per bit while they
 * fit. *lp is the LP optimum (interpolated at the first increment that does
 * not fit), *lambda that increment's error saved per bit (0 when all fit).
 * Items whose next increment did not fit stop there and the others keep
 * filling, which makes incumbent[] (option per item) a better first
 * solution; *ub is its cost. sorted and incs are scratch of total_opts
 * entries. Returns 0 when out of memory. */
static int greedy_lp(mk_item *items, size_t n_items, uint64_t capacity, size_t *sorted,
                     mk_inc *incs, size_t *incumbent, double *lp, double *lambda, double *ub)
{
    size_t *pos = calloc(n_items, sizeof *pos); /* hull position reached per item */
    unsigned char *blocked = calloc(n_items, 1);
    if (!pos || !blocked) {
        free(pos);
        free(blocked);
        return 0;
    }
    size_t n_incs = 0;
    uint64_t used = 0;
    double cost = 0;
    for (size_t i = 0; i < n_items; i++) {
        mk_item *it = &items[i];
        for (size_t j = 0; j < it->n; j++)
            sorted[j] = j;
        it->n_hull = lower_hull(it->opt, sorted, it->n, it->hull);
        add_increments(it, i, it->hull, it->n_hull, incs, &n_incs);
        used += it->opt[it->hull[0]].w;
        cost += it->opt[it->hull[0]].e;
    }
    qsort(incs, n_incs, sizeof *incs, cmp_inc);
    *lp = NAN;
    *lambda = 0;
    for (size_t k = 0; k < n_incs; k++) {
        const mk_inc *inc = &incs[k];
        if (blocked[inc->item] || pos[inc->item] != inc->k)
            continue;
        if (inc->dw <= capacity - used) {
            used += inc->dw;
            cost += inc->de;
            pos[inc->item]++;
        } else {
            if (isnan(*lp)) {
                *lp = cost + inc->de * ((double)(capacity - used) / (double)inc->dw);
                *lambda = -inc->slope;
            }
            /* keep filling with the other items: a better incumbent */
            blocked[inc->item] = 1;
        }
    }
    if (isnan(*lp))
        *lp = cost; /* everything fits: the most accurate option of each item */
    *ub = 0;
    for (size_t i = 0; i < n_items; i++) {
        incumbent[i] = items[i].hull[pos[i]];
        *ub += items[i].opt[incumbent[i]].e;
    }
    free(pos);
    free(blocked);
    return 1;
}

/* Step 3, the Lagrangian bound at lambda: sets every option's reduced cost
 * r = e + lambda w - min over the item of (e + lambda w) and returns the
 * bound sum of those minima - lambda capacity. */
static double reduced_costs(mk_item *items, size_t n_items, uint64_t capacity, double lambda)
{
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
    return lag;
}

/* Step 4, reduced-cost fixing. Any solution cheaper than the incumbent has
 * reduced costs summing below ub - lag (as cost = lag + sum r + lambda *
 * unused capacity), so each of its options has r below that: keep is the
 * gap with slack for rounding (keeping more is always safe). Afterwards
 * order[] lists each item's options by reduced cost, the first n_keep (at
 * least one) kept; returns the number of items left with several, and the
 * weight and cost of the others' single option. */
static size_t fix_options(mk_item *items, size_t n_items, double keep, uint64_t *fixed_w,
                          double *fixed_e)
{
    size_t n_free = 0;
    *fixed_w = 0;
    *fixed_e = 0;
    for (size_t i = 0; i < n_items; i++) {
        mk_item *it = &items[i];
        for (size_t j = 0; j < it->n; j++)
            it->order[j] = j;
        qsort_r(it->order, it->n, sizeof *it->order, cmp_reduced, it->opt);
        it->n_keep = 0;
        while (it->n_keep < it->n && it->opt[it->order[it->n_keep]].r < keep)
            it->n_keep++;
        if (it->n_keep == 0)
            it->n_keep = 1;
        if (it->n_keep == 1) {
            *fixed_w += it->opt[it->order[0]].w;
            *fixed_e += it->opt[it->order[0]].e;
        } else {
            n_free++;
        }
    }
    return n_free;
}

/* Step 5, the search's tables (s->items, n_free set). Afterwards
 * free_items lists the free items by rank (most kept options first), every
 * free item has the lower hull of its kept options in khull, incs holds
 * those hulls' increments by slope and suffix_w/suffix_e the lightest kept
 * option summed from each rank on; fixed items have rank SIZE_MAX. sorted
 * is scratch. Returns 0 when out of memory (what was allocated is in s). */
static int search_setup(mk_search *s, size_t n_items, size_t *sorted)
{
    mk_item *items = s->items;
    size_t n_free = s->n_free, n_free_incs = 0;
    s->free_items = malloc((n_free + 1) * sizeof *s->free_items);
    s->suffix_w = calloc(n_free + 1, sizeof *s->suffix_w);
    s->suffix_e = calloc(n_free + 1, sizeof *s->suffix_e);
    s->best_path = malloc((n_free + 1) * sizeof *s->best_path);
    if (!s->free_items || !s->suffix_w || !s->suffix_e || !s->best_path)
        return 0;
    n_free = 0;
    for (size_t i = 0; i < n_items; i++)
        if (items[i].n_keep > 1)
            s->free_items[n_free++] = i;
    qsort_r(s->free_items, n_free, sizeof *s->free_items, cmp_free, items);
    for (size_t r = 0; r < n_free; r++) {
        mk_item *it = &items[s->free_items[r]];
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
    s->incs = malloc((n_free_incs ? n_free_incs : 1) * sizeof *s->incs);
    if (!s->incs)
        return 0;
    s->n_incs = 0;
    for (size_t r = 0; r < n_free; r++) {
        size_t i = s->free_items[r];
        add_increments(&items[i], i, items[i].khull, items[i].n_khull, s->incs, &s->n_incs);
    }
    qsort(s->incs, s->n_incs, sizeof *s->incs, cmp_inc);
    for (size_t r = n_free; r-- > 0;) {
        const mk_item *it = &items[s->free_items[r]];
        s->suffix_w[r] = s->suffix_w[r + 1] + it->opt[it->khull[0]].w;
        s->suffix_e[r] = s->suffix_e[r + 1] + it->opt[it->khull[0]].e;
    }
    return 1;
}

/* Steps 4 to 6 when the bounds leave a gap: fix what reduced costs decide,
 * search the rest and, when the search found a cheaper solution, make it
 * the incumbent. Everything allocated is left in s for the caller. */
static fr_status close_gap(mk_search *s, mk_item *items, size_t n_items, uint64_t capacity,
                           uint64_t max_nodes, double lambda, double lag, double ub,
                           size_t *sorted, size_t *incumbent, fr_mckp_stats *stats,
                           fr_error *err)
{
    double gap = ub - lag;
    double slack = 1e-9 * (fabs(ub) + lambda * (double)capacity) + 1e-300;
    uint64_t fixed_w;
    double fixed_e;
    size_t n_free = fix_options(items, n_items, gap + slack, &fixed_w, &fixed_e);
    stats->n_free = n_free;
    if (fixed_w > capacity)
        return FR_OK;
    s->items = items;
    s->n_free = n_free;
    s->capacity = capacity - fixed_w;
    s->base_cost = fixed_e;
    s->best = ub;
    s->max_nodes = max_nodes;
    if (!search_setup(s, n_items, sorted) || !dp_search(s))
        return out_of_memory(err);
    stats->nodes = s->nodes;
    stats->optimal = !s->aborted;
    if (s->found) {
        for (size_t i = 0; i < n_items; i++)
            if (items[i].n_keep == 1)
                incumbent[i] = items[i].order[0];
        for (size_t r = 0; r < n_free; r++)
            incumbent[s->free_items[r]] = s->best_path[r];
    }
    return FR_OK;
}

fr_status fr_mckp_solve(const fr_mckp_item *in, size_t n_items, uint64_t capacity,
                        uint64_t max_nodes, size_t *choice, fr_mckp_stats *stats, fr_error *err)
{
    fr_status st = FR_OK;
    mk_item *items = NULL;
    mk_inc *incs = NULL;
    size_t *incumbent = NULL, *sorted = NULL;
    mk_search s;
    memset(&s, 0, sizeof s);
    memset(stats, 0, sizeof *stats);
    stats->optimal = 1;
    if (max_nodes == 0)
        max_nodes = FR_MCKP_DEFAULT_MAX_NODES;
    if (n_items == 0)
        return FR_OK;

    items = calloc(n_items, sizeof *items);
    incumbent = calloc(n_items, sizeof *incumbent);
    if (!items || !incumbent)
        goto nomem;
    size_t total_opts;
    uint64_t min_w;
    if ((st = load_items(in, n_items, items, &total_opts, &min_w, err)) != FR_OK)
        goto done;
    if (min_w > capacity) {
        st = fr_fail(err, FR_E_USAGE,
                     "budget of %llu bits is below the smallest achievable size, %llu bits",
                     (unsigned long long)capacity, (unsigned long long)min_w);
        goto done;
    }
    sorted = malloc(total_opts * sizeof *sorted);
    incs = malloc((total_opts ? total_opts : 1) * sizeof *incs);
    if (!sorted || !incs)
        goto nomem;
    double lp, lambda, ub;
    if (!greedy_lp(items, n_items, capacity, sorted, incs, incumbent, &lp, &lambda, &ub))
        goto nomem;
    double lag = reduced_costs(items, n_items, capacity, lambda);
    double lower = lp > lag ? lp : lag;
    stats->lambda = lambda;
    stats->lower_bound = lower < ub ? lower : ub;
    if (!prunes(lower, ub) && ub > 0 &&
        (st = close_gap(&s, items, n_items, capacity, max_nodes, lambda, lag, ub, sorted,
                        incumbent, stats, err)) != FR_OK)
        goto done;

    stats->cost = 0;
    stats->weight = 0;
    for (size_t i = 0; i < n_items; i++) {
        const mk_opt *o = &items[i].opt[incumbent[i]];
        choice[i] = o->orig;
        stats->cost += o->e;
        stats->weight += o->w;
    }
    if (stats->lower_bound > stats->cost)
        stats->lower_bound = stats->cost;
    goto done;

nomem:
    st = out_of_memory(err);
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
    free(incumbent);
    free(sorted);
    free(s.free_items);
    free(s.suffix_w);
    free(s.suffix_e);
    free(s.best_path);
    free(s.incs);
    return st;
}
