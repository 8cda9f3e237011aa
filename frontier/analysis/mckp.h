/*
 * The exact multiple-choice knapsack solver behind `frontier allocate`
 * (frontier/analysis/allocate.h builds its input from a dataset).
 *
 * Item i takes exactly one option j of weight w_ij (an integer) and cost
 * e_ij; minimise sum e subject to sum w <= capacity. Lagrangian relaxation
 * on the convex hulls gives a lower bound and a near-optimal solution,
 * reduced-cost fixing removes every option that cannot be in a better
 * solution, and dynamic programming over undominated (bits, error) partial
 * solutions, pruned by the LP (hull) bound of the items still to decide,
 * finishes the search.
 */
#ifndef FR_MCKP_H
#define FR_MCKP_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct fr_mckp_item {
    size_t n_options;
    const uint64_t *weight; /* [n_options] */
    const double *cost;     /* [n_options], finite and >= 0 */
} fr_mckp_item;

typedef struct fr_mckp_stats {
    double lower_bound;   /* LP (Lagrangian) bound on the optimal cost */
    double cost;          /* cost of the returned solution */
    uint64_t weight;      /* its weight */
    double lambda;        /* the LP multiplier: error saved per bit at the margin */
    uint64_t nodes;       /* search states created */
    size_t n_free;        /* items still undecided after reduced-cost fixing */
    int optimal;          /* 1: proven optimal (to a relative 1e-12); 0: state limit hit */
} fr_mckp_stats;

/* Default limit on search states (fr_mckp_solve's max_nodes = 0); a state
 * takes 24 bytes, so the search stays under about 200 MB. */
#define FR_MCKP_DEFAULT_MAX_NODES 8000000ull

/* Writes the chosen option of every item into choice[n_items]. Fails with
 * FR_E_USAGE when even the lightest options exceed the capacity. With the
 * state limit reached the best solution found is returned with
 * stats->optimal = 0 and its distance to stats->lower_bound. */
fr_status fr_mckp_solve(const fr_mckp_item *items, size_t n_items, uint64_t capacity,
                        uint64_t max_nodes, size_t *choice, fr_mckp_stats *stats, fr_error *err);

#endif
