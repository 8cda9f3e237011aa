/*
 * The allocation solver against exhaustive search: on thousands of small
 * random multiple-choice knapsacks (brute force over every combination) and
 * on larger ones with small integer weights (an exact DP over capacity), the
 * solver's cost must equal the optimum and its solution must fit.
 */
#include "fixture.h"
#include "frontier/analysis/allocate.h"

#define MAX_ITEMS 24
#define MAX_OPTS 9

typedef struct instance {
    size_t n_items;
    size_t n_opts[MAX_ITEMS];
    uint64_t w[MAX_ITEMS][MAX_OPTS];
    double e[MAX_ITEMS][MAX_OPTS];
    fr_mckp_item items[MAX_ITEMS];
} instance;

static void make_instance(instance *in, uint64_t *rng, size_t n_items, size_t max_opts,
                          uint64_t max_w)
{
    in->n_items = n_items;
    for (size_t i = 0; i < n_items; i++) {
        in->n_opts[i] = 1 + fr_test_splitmix64(rng) % max_opts;
        double scale = 0.1 + 10 * fr_test_uniform(rng); /* tensors differ in size of error */
        for (size_t j = 0; j < in->n_opts[i]; j++) {
            in->w[i][j] = 1 + fr_test_splitmix64(rng) % max_w;
            /* errors fall with bits like 2^-b, plus noise; some exact ties */
            double e = scale * pow(2.0, -(double)in->w[i][j] / 4.0) * (0.5 + fr_test_uniform(rng));
            if (fr_test_splitmix64(rng) % 7 == 0)
                e = floor(e * 4) / 4;
            in->e[i][j] = e;
        }
        in->items[i] = (fr_mckp_item){in->n_opts[i], in->w[i], in->e[i]};
    }
}

static double brute_force(const instance *in, uint64_t cap, size_t i, uint64_t used, double cost)
{
    if (i == in->n_items)
        return cost;
    double best = INFINITY;
    for (size_t j = 0; j < in->n_opts[i]; j++)
        if (used + in->w[i][j] <= cap) {
            double v = brute_force(in, cap, i + 1, used + in->w[i][j], cost + in->e[i][j]);
            if (v < best)
                best = v;
        }
    return best;
}

static double dp_optimum(const instance *in, uint64_t cap)
{
    double *dp = malloc((cap + 1) * sizeof *dp), *next = malloc((cap + 1) * sizeof *next);
    for (uint64_t c = 0; c <= cap; c++)
        dp[c] = 0;
    for (size_t i = 0; i < in->n_items; i++) {
        for (uint64_t c = 0; c <= cap; c++) {
            next[c] = INFINITY;
            for (size_t j = 0; j < in->n_opts[i]; j++)
                if (in->w[i][j] <= c && dp[c - in->w[i][j]] + in->e[i][j] < next[c])
                    next[c] = dp[c - in->w[i][j]] + in->e[i][j];
        }
        double *tmp = dp;
        dp = next;
        next = tmp;
    }
    double v = dp[cap];
    free(dp);
    free(next);
    return v;
}

static void check_solution(const instance *in, uint64_t cap, const size_t *choice,
                           const fr_mckp_stats *st, double optimum)
{
    uint64_t w = 0;
    double e = 0;
    for (size_t i = 0; i < in->n_items; i++) {
        CHECK(choice[i] < in->n_opts[i]);
        w += in->w[i][choice[i]];
        e += in->e[i][choice[i]];
    }
    CHECK(w <= cap);
    CHECK(w == st->weight);
    CHECK_NEAR(e, st->cost, 1e-12);
    CHECK(st->optimal);
    CHECK_NEAR(e, optimum, 1e-9);
    CHECK(st->lower_bound <= e * (1 + 1e-9));
}

static void bounds(const instance *in, uint64_t *lo, uint64_t *hi)
{
    *lo = *hi = 0;
    for (size_t i = 0; i < in->n_items; i++) {
        uint64_t mn = UINT64_MAX, mx = 0;
        for (size_t j = 0; j < in->n_opts[i]; j++) {
            if (in->w[i][j] < mn)
                mn = in->w[i][j];
            if (in->w[i][j] > mx)
                mx = in->w[i][j];
        }
        *lo += mn;
        *hi += mx;
    }
}

int main(void)
{
    fr_error err;
    size_t choice[MAX_ITEMS];
    fr_mckp_stats st;
    instance in;

    /* small instances: 6 tensors x 5 configurations and smaller, vs brute force */
    int n_small = 0;
    for (uint64_t seed = 1; seed <= 3000; seed++) {
        uint64_t rng = seed;
        make_instance(&in, &rng, 1 + fr_test_splitmix64(&rng) % 6, 5, 40);
        uint64_t lo, hi;
        bounds(&in, &lo, &hi);
        uint64_t cap = lo + fr_test_splitmix64(&rng) % (hi - lo + 2); /* sometimes above hi */
        double opt = brute_force(&in, cap, 0, 0, 0.0);
        if (fr_mckp_solve(in.items, in.n_items, cap, 0, choice, &st, &err) != FR_OK) {
            fr_test_fail(__FILE__, __LINE__, "seed %llu: %s", (unsigned long long)seed, err.msg);
            continue;
        }
        check_solution(&in, cap, choice, &st, opt);
        n_small++;
    }

    /* larger instances with small integer weights, vs an exact DP over capacity */
    uint64_t total_nodes = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        uint64_t rng = seed * 7919;
        make_instance(&in, &rng, 8 + fr_test_splitmix64(&rng) % (MAX_ITEMS - 8), MAX_OPTS, 60);
        uint64_t lo, hi;
        bounds(&in, &lo, &hi);
        uint64_t cap = lo + fr_test_splitmix64(&rng) % (hi - lo + 1);
        double opt = dp_optimum(&in, cap);
        if (fr_mckp_solve(in.items, in.n_items, cap, 0, choice, &st, &err) != FR_OK) {
            fr_test_fail(__FILE__, __LINE__, "dp seed %llu: %s", (unsigned long long)seed, err.msg);
            continue;
        }
        check_solution(&in, cap, choice, &st, opt);
        total_nodes += st.nodes;
    }

    /* below the smallest achievable size: a usage error, nothing chosen */
    {
        uint64_t rng = 42;
        make_instance(&in, &rng, 4, 3, 10);
        uint64_t lo, hi;
        bounds(&in, &lo, &hi);
        CHECK(fr_mckp_solve(in.items, in.n_items, lo - 1, 0, choice, &st, &err) == FR_E_USAGE);
        CHECK(strstr(err.msg, "smallest achievable") != NULL);
        CHECK(fr_mckp_solve(in.items, in.n_items, lo, 0, choice, &st, &err) == FR_OK);
        CHECK(st.weight == lo);
    }

    /* a state limit of 1 stops the search: still a feasible solution, flagged */
    {
        int stopped = 0;
        for (uint64_t seed = 1; seed <= 50 && !stopped; seed++) {
            uint64_t rng = seed * 31;
            make_instance(&in, &rng, MAX_ITEMS, MAX_OPTS, 60);
            uint64_t lo, hi;
            bounds(&in, &lo, &hi);
            uint64_t cap = (lo + hi) / 2;
            CHECK(fr_mckp_solve(in.items, in.n_items, cap, 1, choice, &st, &err) == FR_OK);
            CHECK(st.weight <= cap);
            if (!st.optimal) {
                stopped = 1;
                CHECK(st.lower_bound <= st.cost);
            }
        }
        CHECK(stopped);
    }

    /* no items: nothing to do */
    CHECK(fr_mckp_solve(NULL, 0, 0, 0, choice, &st, &err) == FR_OK && st.cost == 0);

    printf("test_mckp: %d brute-force and 300 DP instances (%llu search states in all)\n", n_small,
           (unsigned long long)total_nodes);
    return fr_test_finish("test_mckp");
}
