/* Aggregation for smoothed-aggregation AMG by distance-two maximal
 * independent sets (the parallel form of Vanek, Mandel and Brezina's greedy
 * aggregation, as in Kelley and Rajamanickam's MIS-2 aggregation). Every
 * step decides each point from its neighbours' state of the step before,
 * so the result is the same for any thread count and on the GPU
 * (amg/cuda/aggregate.cu computes exactly this). Neighbours are
 * S_i ∪ S^T_i (the symmetrized strength graph), the diagonal ignored.
 *   1. roots: a distance-two independent set, by rounds. A point's key is
 *      (hash(seed, i), i); in each round an undecided point whose key is the
 *      largest among the undecided points within distance two becomes a
 *      root, and every undecided point within distance two of a new root is
 *      out. The largest undecided key always wins, so each round makes
 *      progress; two roots are never within distance two. Each root's
 *      neighbours join it (a point neighbours at most one root).
 *   2. the same on the points still free, with distances counted inside
 *      that set: a new root with at least KS_AGG_PASS2_MIN free neighbours
 *      makes an aggregate with them (random keys pack roots less tightly
 *      than a sequential sweep, and without this second pass the aggregates
 *      grow large);
 *   3. every point still free has an aggregated neighbour: it joins the
 *      aggregate holding most of its links (ties: the first in its row
 *      order);
 *   4. points with no strong connection become singleton aggregates (their
 *      own coarse unknown) rather than empty P rows.
 * Aggregates are numbered by their roots, pass 1 then pass 2, each in
 * index order, then the singletons in index order. */
#include "coarsen_internal.h"

#include <inttypes.h>
#include <string.h>

typedef struct agg_ws {
    const ks_int *rp, *ci, *trp, *tci;
    const uint64_t *h;
    unsigned char *in;  /* 1: takes part in the current pass */
    unsigned char *st;  /* pass state */
    ks_int *m1;
    unsigned char *newroot;
} agg_ws;

enum { AG_UNDECIDED = 0, AG_ROOT = 1, AG_OUT = 2 };

/* A root of the second pass makes an aggregate only with at least this many
 * distinct free neighbours; its points otherwise join neighbouring
 * aggregates (step 3). Measured (PCG + SA, 7-point 40^3; BiCGStab + SA on
 * ../shared/matrices): 4 keeps the operator complexity of the sequential
 * greedy aggregation this replaces (1.48 vs 1.53 at 40^3, 9 iterations vs
 * 8; ani4 27 vs 30, poisson3Da 10 vs 13, watt_2 12 vs 8); 2 raised it to
 * 1.76 for no fewer iterations. */
#define KS_AGG_PASS2_MIN 4

/* Visit the neighbours j of i (S_i, then S^T_i; the diagonal skipped). */
#define FOR_NBR(w, i, j, body)                                                                \
    do {                                                                                      \
        for (ks_int k_ = (w)->rp[i]; k_ < (w)->rp[(i) + 1]; k_++) {                           \
            const ks_int j = (w)->ci[k_];                                                     \
            if (j != (i)) {                                                                   \
                body;                                                                         \
            }                                                                                 \
        }                                                                                     \
        for (ks_int k_ = (w)->trp[i]; k_ < (w)->trp[(i) + 1]; k_++) {                         \
            const ks_int j = (w)->tci[k_];                                                    \
            if (j != (i)) {                                                                   \
                body;                                                                         \
            }                                                                                 \
        }                                                                                     \
    } while (0)

/* The larger of the keys of points a and b (-1: none). */
static inline ks_int best_key(const uint64_t *h, ks_int a, ks_int b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    if (h[a] != h[b])
        return h[a] > h[b] ? a : b;
    return a > b ? a : b;
}

/* Distance-two independent roots among the points with in[i] = 1, paths
 * running through such points only: st[i] = AG_ROOT or AG_OUT for them
 * (AG_OUT also for those with no neighbour in the set). */
static ks_error mis2(agg_ws *w, ks_int n)
{
    ks_int undecided = 0;
#pragma omp parallel for schedule(static) reduction(+ : undecided)
    for (ks_int i = 0; i < n; i++) {
        int deg = 0;
        if (w->in[i])
            FOR_NBR(w, i, j, deg |= w->in[j]);
        w->st[i] = w->in[i] && deg ? AG_UNDECIDED : AG_OUT;
        undecided += w->st[i] == AG_UNDECIDED;
    }
    while (undecided > 0) {
        /* m1[x]: the largest undecided key in {x} and its neighbours in the set */
#pragma omp parallel for schedule(static)
        for (ks_int x = 0; x < n; x++) {
            ks_int b = -1;
            if (w->in[x]) {
                b = w->st[x] == AG_UNDECIDED ? x : -1;
                FOR_NBR(w, x, j, if (w->in[j] && w->st[j] == AG_UNDECIDED) b = best_key(w->h, b, j));
            }
            w->m1[x] = b;
        }
        ks_int roots = 0;
#pragma omp parallel for schedule(static) reduction(+ : roots)
        for (ks_int i = 0; i < n; i++) {
            w->newroot[i] = 0;
            if (w->st[i] != AG_UNDECIDED)
                continue;
            ks_int b = w->m1[i];
            FOR_NBR(w, i, j, if (w->in[j]) b = best_key(w->h, b, w->m1[j]));
            if (b == i) {
                w->newroot[i] = 1;
                roots++;
            }
        }
        if (roots == 0) /* impossible: the largest undecided key always wins */
            return ks_seterr(KS_ERR_NUMERIC, "ks_amg_aggregate: no progress with %" PRId32
                             " undecided points", undecided);
        /* m1[x] = 1: x is a new root or a neighbour of one (in the set) */
#pragma omp parallel for schedule(static)
        for (ks_int x = 0; x < n; x++) {
            int r = 0;
            if (w->in[x]) {
                r = w->newroot[x];
                FOR_NBR(w, x, j, r |= w->in[j] && w->newroot[j]);
            }
            w->m1[x] = r;
        }
        ks_int left = 0;
#pragma omp parallel for schedule(static) reduction(+ : left)
        for (ks_int i = 0; i < n; i++) {
            if (w->st[i] != AG_UNDECIDED)
                continue;
            if (w->newroot[i]) {
                w->st[i] = AG_ROOT;
                continue;
            }
            int near = (int)w->m1[i];
            FOR_NBR(w, i, j, near |= w->in[j] && w->m1[j]);
            if (near)
                w->st[i] = AG_OUT;
            else
                left++;
        }
        undecided = left;
    }
    return KS_OK;
}

/* Roots of the pass (in index order from *count) and their neighbours in
 * the set join them: agg[] of the set's points, -1 where none. A root with
 * fewer than min_nbrs neighbours in the set is dropped (its points stay
 * free). */
static void grow(agg_ws *w, ks_int n, ks_int *agg, ks_int *count, int min_nbrs)
{
    ks_int c = *count;
    if (min_nbrs > 1) {
#pragma omp parallel for schedule(static)
        for (ks_int i = 0; i < n; i++) {
            if (!w->in[i] || w->st[i] != AG_ROOT)
                continue;
            /* distinct neighbours in the set: S_i and S^T_i are sorted, so
             * a merge counts a neighbour in both once */
            int deg = 0;
            ks_int a = w->rp[i], ae = w->rp[i + 1], b = w->trp[i], be = w->trp[i + 1];
            while (a < ae || b < be) {
                ks_int j;
                if (b >= be || (a < ae && w->ci[a] < w->tci[b]))
                    j = w->ci[a++];
                else if (a >= ae || w->tci[b] < w->ci[a])
                    j = w->tci[b++];
                else {
                    j = w->ci[a++];
                    b++;
                }
                deg += j != i && w->in[j];
            }
            if (deg < min_nbrs)
                w->st[i] = AG_OUT;
        }
    }
    for (ks_int i = 0; i < n; i++)
        if (w->in[i] && w->st[i] == AG_ROOT)
            agg[i] = c++;
    *count = c;
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++) {
        if (!w->in[i] || w->st[i] == AG_ROOT)
            continue;
        ks_int a = -1;
        FOR_NBR(w, i, j, if (w->in[j] && w->st[j] == AG_ROOT && (a < 0 || agg[j] < a)) a = agg[j]);
        w->m1[i] = a;
    }
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++)
        if (w->in[i] && w->st[i] != AG_ROOT)
            agg[i] = w->m1[i];
}

ks_error ks_amg_aggregate_seeded(const ks_strength *S, unsigned long long seed, ks_int *agg,
                                 ks_int *na)
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
    if (S->rowptr[0] != 0)
        return ks_seterr(KS_ERR_ARG, "ks_amg_aggregate: strength rowptr[0] = %" PRId32,
                         S->rowptr[0]);
    /* The diagonal may be stored (it is skipped); anything else outside the
     * graph is refused before any index is used. */
    for (ks_int i = 0; i < n; i++) {
        if (S->rowptr[i + 1] < S->rowptr[i])
            return ks_seterr(KS_ERR_ARG, "ks_amg_aggregate: strength row %" PRId32
                             ": rowptr decreases", i);
        for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++)
            if (S->colind[k] < 0 || S->colind[k] >= n)
                return ks_seterr(KS_ERR_ARG, "ks_amg_aggregate: strength row %" PRId32
                                 ": column %" PRId32 " out of range [0, %" PRId32 ")",
                                 i, S->colind[k], n);
    }
    ks_strength ST;
    KS_TRY(ks_strength_transpose_unchecked(S, &ST));
    uint64_t *h = ks_malloc((size_t)n * sizeof *h, "aggregation keys");
    unsigned char *flags = ks_malloc(3 * (size_t)n, "aggregation states");
    ks_int *m1 = ks_malloc((size_t)n * sizeof *m1, "aggregation round maxima");
    ks_error e = h && flags && m1 ? KS_OK : KS_ERR_MEMORY;
    agg_ws w = {S->rowptr, S->colind, ST.rowptr, ST.colind, h, flags, flags + n,
                m1, flags + 2 * (size_t)n};
    ks_int count = 0;
    if (e == KS_OK) {
#pragma omp parallel for schedule(static)
        for (ks_int i = 0; i < n; i++) {
            h[i] = ks_coarsen_hash(seed, i);
            int deg = 0;
            FOR_NBR(&w, i, j, deg = 1; (void)j);
            w.in[i] = (unsigned char)deg; /* isolated points wait for step 4 */
            agg[i] = -1;
        }
        e = mis2(&w, n); /* 1 */
    }
    if (e == KS_OK) {
        grow(&w, n, agg, &count, 1);
#pragma omp parallel for schedule(static)
        for (ks_int i = 0; i < n; i++)
            w.in[i] = w.in[i] && agg[i] < 0;
        e = mis2(&w, n); /* 2 */
    }
    int bad = 0;
    if (e == KS_OK) {
        grow(&w, n, agg, &count, KS_AGG_PASS2_MIN);
        /* 3. free points join the aggregate with most links (m1 holds the
         * state before this step, so the order does not matter) */
#pragma omp parallel for schedule(static)
        for (ks_int i = 0; i < n; i++)
            m1[i] = agg[i];
#pragma omp parallel for schedule(static) reduction(| : bad)
        for (ks_int i = 0; i < n; i++) {
            int deg = 0;
            FOR_NBR(&w, i, j, deg = 1; (void)j);
            if (m1[i] >= 0 || !deg)
                continue;
            ks_int best = -1, best_links = 0;
            FOR_NBR(&w, i, j, {
                const ks_int a = m1[j];
                if (a >= 0 && a != best) {
                    ks_int links = 0;
                    FOR_NBR(&w, i, q, links += m1[q] == a);
                    if (links > best_links) {
                        best_links = links;
                        best = a;
                    }
                }
            });
            agg[i] = best;
            bad |= best < 0;
        }
        /* 4. singletons */
        for (ks_int i = 0; i < n; i++)
            if (agg[i] < 0 && !bad)
                agg[i] = count++;
    }
    ks_strength_free(&ST);
    free(h);
    free(flags);
    free(m1);
    if (e != KS_OK)
        return e;
    if (bad) /* impossible: a free point has a root within two steps */
        return ks_seterr(KS_ERR_NUMERIC, "ks_amg_aggregate: a point was left without an "
                                         "aggregate");
    *na = count;
    return KS_OK;
}

ks_error ks_amg_aggregate(const ks_strength *S, ks_int *agg, ks_int *na)
{
    return ks_amg_aggregate_seeded(S, 1, agg, na);
}
