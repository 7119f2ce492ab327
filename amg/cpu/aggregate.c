/* Greedy aggregation for smoothed-aggregation AMG (Vanek, Mandel, Brezina
 * 1996), serial and in natural row order so the result never depends on the
 * thread count. One pass over S per phase, O(nnz(S)) in all:
 *   1. a point whose strong neighbours are all unaggregated becomes a root:
 *      aggregate = root + its strong neighbours;
 *   2. every point still left joins the phase-1 aggregate holding most of
 *      its strong neighbours (S has no weights; on a tie, the aggregate that
 *      reaches the top count first in column order). Only phase-1
 *      aggregates are candidates, so a point attached here never pulls a
 *      further point in and aggregates stay compact (radius 2);
 *   3. anything still left starts an aggregate with its unaggregated strong
 *      neighbours. A point with a strong neighbour always has one aggregated
 *      in phase 1 (otherwise it would have been a root), so only points with
 *      no strong connections get here: they become singleton aggregates
 *      (their own coarse unknown, P0 row = 1) rather than an empty P row, so
 *      every point is covered exactly once and agg[i] is always in [0, na).
 * The diagonal (j == i), if present in S, is ignored. */
#include "amg_cpu.h"

#include <inttypes.h>
#include <string.h>

/* Phase-2 assignments are stored as -(a + 2) so they stay distinguishable
 * from phase-1 aggregates (>= 0) and from unaggregated points (-1). */
#define KS_AGG_NONE (-1)
#define KS_AGG_P2(a) (-(a) - 2)

ks_error ks_amg_aggregate(const ks_strength *S, ks_int *agg, ks_int *na)
{
    if (!S || !agg || !na)
        return ks_seterr(KS_ERR_ARG, "ks_amg_aggregate: NULL %s",
                         !S ? "strength graph" : !agg ? "aggregate array" : "count");
    const ks_int n = S->n;
    if (n < 0)
        return ks_seterr(KS_ERR_ARG, "ks_amg_aggregate: negative size %" PRId32, n);
    *na = 0;
    if (n == 0)
        return KS_OK;
    if (!S->rowptr || (S->rowptr[n] > 0 && !S->colind))
        return ks_seterr(KS_ERR_ARG, "ks_amg_aggregate: strength graph is not allocated");
    const ks_int *rp = S->rowptr, *ci = S->colind;
    if (rp[0] != 0)
        return ks_seterr(KS_ERR_ARG, "ks_amg_aggregate: strength rowptr[0] = %" PRId32, rp[0]);
    for (ks_int i = 0; i < n; i++) {
        if (rp[i + 1] < rp[i])
            return ks_seterr(KS_ERR_ARG, "ks_amg_aggregate: strength row %" PRId32
                             ": rowptr decreases", i);
        for (ks_int k = rp[i]; k < rp[i + 1]; k++)
            if (ci[k] < 0 || ci[k] >= n)
                return ks_seterr(KS_ERR_ARG, "ks_amg_aggregate: strength row %" PRId32
                                 ": column %" PRId32 " out of range [0, %" PRId32 ")",
                                 i, ci[k], n);
    }

    for (ks_int i = 0; i < n; i++)
        agg[i] = KS_AGG_NONE;

    /* Phase 1: roots with a free strong neighbourhood. */
    ks_int count = 0;
    for (ks_int i = 0; i < n; i++) {
        if (agg[i] != KS_AGG_NONE)
            continue;
        int free_nbhd = 1, has_nbr = 0;
        for (ks_int k = rp[i]; k < rp[i + 1] && free_nbhd; k++) {
            if (ci[k] == i)
                continue;
            has_nbr = 1;
            free_nbhd = agg[ci[k]] == KS_AGG_NONE;
        }
        if (!has_nbr || !free_nbhd)
            continue;
        agg[i] = count;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++)
            agg[ci[k]] = count;
        count++;
    }

    /* Phase 2: join the phase-1 aggregate with most strong links. hits[a]
     * counts i's neighbours in aggregate a; only touched entries are reset,
     * so the pass stays O(nnz(S)). */
    ks_int *hits = ks_calloc(count > 0 ? (size_t)count : 1, sizeof *hits, "aggregation counts");
    if (!hits)
        return KS_ERR_MEMORY;
    for (ks_int i = 0; i < n; i++) {
        if (agg[i] != KS_AGG_NONE)
            continue;
        ks_int best = -1, best_hits = 0;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
            ks_int a = agg[ci[k]];
            if (ci[k] == i || a < 0)
                continue;
            ks_int h = ++hits[a];
            if (h > best_hits) {
                best_hits = h;
                best = a;
            }
        }
        for (ks_int k = rp[i]; k < rp[i + 1]; k++)
            if (agg[ci[k]] >= 0)
                hits[agg[ci[k]]] = 0;
        if (best >= 0)
            agg[i] = KS_AGG_P2(best);
    }
    free(hits);

    /* Phase 3: leftovers (in practice the isolated points) start their own
     * aggregate together with their still unaggregated strong neighbours. */
    for (ks_int i = 0; i < n; i++) {
        if (agg[i] != KS_AGG_NONE)
            continue;
        agg[i] = count;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++)
            if (agg[ci[k]] == KS_AGG_NONE)
                agg[ci[k]] = count;
        count++;
    }

    for (ks_int i = 0; i < n; i++)
        if (agg[i] < KS_AGG_NONE)
            agg[i] = KS_AGG_P2(agg[i]); /* the map is its own inverse */
    *na = count;
    return KS_OK;
}
