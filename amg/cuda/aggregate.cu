/* The aggregation of amg/cpu/aggregate.c on the device: the same two
 * passes of distance-two independent roots (keys hashed from the seed by
 * amg/coarsen_hash.h), the same joins and numbering, so the aggregates are
 * the cpu's exactly. Every kernel decides each point from the state of the
 * step before; integer counts only. Neighbours are S_i and S^T_i (the
 * transpose made on the device), the diagonal skipped. */
#include "amg_cuda.h"
#include "../coarsen_hash.h"

#include <inttypes.h>

namespace {

enum { AG_UNDECIDED = 0, AG_ROOT = 1, AG_OUT = 2 };

/* Second-pass roots need this many distinct free neighbours (the cpu's
 * KS_AGG_PASS2_MIN). */
const int kPass2Min = 4;

struct graph {
    const ks_int *rp, *ci, *trp, *tci;
};

#define FOR_NBR(g, i, j, body)                                                                \
    do {                                                                                      \
        for (ks_int k_ = (g).rp[i]; k_ < (g).rp[(i) + 1]; k_++) {                             \
            const ks_int j = (g).ci[k_];                                                      \
            if (j != (ks_int)(i)) {                                                           \
                body;                                                                         \
            }                                                                                 \
        }                                                                                     \
        for (ks_int k_ = (g).trp[i]; k_ < (g).trp[(i) + 1]; k_++) {                           \
            const ks_int j = (g).tci[k_];                                                     \
            if (j != (ks_int)(i)) {                                                           \
                body;                                                                         \
            }                                                                                 \
        }                                                                                     \
    } while (0)

__device__ __forceinline__ ks_int best_key(const uint64_t *h, ks_int a, ks_int b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    if (h[a] != h[b])
        return h[a] > h[b] ? a : b;
    return a > b ? a : b;
}

__global__ void init_kernel(graph g, ks_int n, unsigned long long seed, uint64_t *h,
                            unsigned char *in, ks_int *agg)
{
    KS_CU_FOR(i, n)
    {
        h[i] = ks_coarsen_hash(seed, i);
        int deg = 0;
        FOR_NBR(g, i, j, deg = 1; (void)j);
        in[i] = (unsigned char)deg;
        agg[i] = -1;
    }
}

/* st: undecided for points of the set with a neighbour in it, else out. */
__global__ void start_kernel(graph g, ks_int n, const unsigned char *in, int *st)
{
    KS_CU_FOR(i, n)
    {
        int deg = 0;
        if (in[i])
            FOR_NBR(g, i, j, deg |= in[j]);
        st[i] = in[i] && deg ? AG_UNDECIDED : AG_OUT;
    }
}

__global__ void max1_kernel(graph g, ks_int n, const uint64_t *h, const unsigned char *in,
                            const int *st, ks_int *m1)
{
    KS_CU_FOR(x, n)
    {
        ks_int b = -1;
        if (in[x]) {
            b = st[x] == AG_UNDECIDED ? (ks_int)x : -1;
            FOR_NBR(g, x, j, if (in[j] && st[j] == AG_UNDECIDED) b = best_key(h, b, j));
        }
        m1[x] = b;
    }
}

__global__ void roots_kernel(graph g, ks_int n, const uint64_t *h, const unsigned char *in,
                             const int *st, const ks_int *m1, int *newroot)
{
    KS_CU_FOR(i, n)
    {
        int r = 0;
        if (st[i] == AG_UNDECIDED) {
            ks_int b = m1[i];
            FOR_NBR(g, i, j, if (in[j]) b = best_key(h, b, m1[j]));
            r = b == (ks_int)i;
        }
        newroot[i] = r;
    }
}

__global__ void near_kernel(graph g, ks_int n, const unsigned char *in, const int *newroot,
                            ks_int *m1)
{
    KS_CU_FOR(x, n)
    {
        int r = 0;
        if (in[x]) {
            r = newroot[x];
            FOR_NBR(g, x, j, r |= in[j] && newroot[j]);
        }
        m1[x] = r;
    }
}

__global__ void decide_kernel(graph g, ks_int n, const unsigned char *in, const int *newroot,
                              const ks_int *m1, int *st)
{
    KS_CU_FOR(i, n)
    {
        if (st[i] != AG_UNDECIDED)
            continue;
        if (newroot[i]) {
            st[i] = AG_ROOT;
            continue;
        }
        int near = (int)m1[i];
        FOR_NBR(g, i, j, near |= in[j] && m1[j]);
        if (near)
            st[i] = AG_OUT;
    }
}

/* Roots with fewer than min distinct neighbours in the set are dropped;
 * flag[i] = 1 for the roots kept (numbered by a scan). */
__global__ void keep_roots_kernel(graph g, ks_int n, const unsigned char *in, int *st, int min,
                                  ks_int *flag)
{
    KS_CU_FOR(i, n)
    {
        int root = in[i] && st[i] == AG_ROOT;
        if (root && min > 1) {
            int deg = 0;
            ks_int a = g.rp[i], ae = g.rp[i + 1], b = g.trp[i], be = g.trp[i + 1];
            while (a < ae || b < be) {
                ks_int j;
                if (b >= be || (a < ae && g.ci[a] < g.tci[b]))
                    j = g.ci[a++];
                else if (a >= ae || g.tci[b] < g.ci[a])
                    j = g.tci[b++];
                else {
                    j = g.ci[a++];
                    b++;
                }
                deg += j != (ks_int)i && in[j];
            }
            if (deg < min) {
                st[i] = AG_OUT;
                root = 0;
            }
        }
        flag[i] = root;
    }
}

/* Roots get their numbers (offset + rank); the others of the set join the
 * adjacent root with the smallest number. */
__global__ void number_roots_kernel(ks_int n, const unsigned char *in, const int *st,
                                    const ks_int *rank, ks_int offset, ks_int *agg)
{
    KS_CU_FOR(i, n)
    if (in[i] && st[i] == AG_ROOT)
        agg[i] = offset + rank[i];
}

__global__ void join_kernel(graph g, ks_int n, const unsigned char *in, const int *st,
                            ks_int *agg, ks_int *tmp)
{
    KS_CU_FOR(i, n)
    {
        ks_int a = agg[i];
        if (in[i] && st[i] != AG_ROOT) {
            a = -1;
            FOR_NBR(g, i, j, if (in[j] && st[j] == AG_ROOT && (a < 0 || agg[j] < a)) a = agg[j]);
        }
        tmp[i] = a;
    }
}

__global__ void copy_join_kernel(ks_int n, const unsigned char *in, const int *st,
                                 const ks_int *tmp, ks_int *agg)
{
    KS_CU_FOR(i, n)
    if (in[i] && st[i] != AG_ROOT)
        agg[i] = tmp[i];
}

__global__ void next_set_kernel(ks_int n, unsigned char *in, const ks_int *agg)
{
    KS_CU_FOR(i, n)
    in[i] = in[i] && agg[i] < 0;
}

/* Step 3: a free point joins the aggregate with most links among its
 * neighbours' (before is agg before this step); *bad = 1 if one cannot. */
__global__ void links_kernel(graph g, ks_int n, const ks_int *before, ks_int *agg, int *bad)
{
    KS_CU_FOR(i, n)
    {
        int deg = 0;
        FOR_NBR(g, i, j, deg = 1; (void)j);
        if (before[i] >= 0 || !deg)
            continue;
        ks_int best = -1, best_links = 0;
        FOR_NBR(g, i, j, {
            const ks_int a = before[j];
            if (a >= 0 && a != best) {
                ks_int links = 0;
                FOR_NBR(g, i, q, links += before[q] == a);
                if (links > best_links) {
                    best_links = links;
                    best = a;
                }
            }
        });
        agg[i] = best;
        if (best < 0)
            *bad = 1;
    }
}

__global__ void single_flag_kernel(ks_int n, const ks_int *agg, ks_int *flag)
{
    KS_CU_FOR(i, n)
    flag[i] = agg[i] < 0;
}

__global__ void number_singles_kernel(ks_int n, const ks_int *rank, ks_int offset, ks_int *agg)
{
    KS_CU_FOR(i, n)
    if (agg[i] < 0)
        agg[i] = offset + rank[i];
}

struct work {
    ks_backend *be;
    cudaStream_t st;
    unsigned nb;
    graph g;
    ks_int n;
    uint64_t *h;
    unsigned char *in;
    int *state, *newroot;
    ks_int *m1, *flag;
};

#define LAUNCH(e, name, ...)                                                                  \
    do {                                                                                      \
        if ((e) == KS_OK) {                                                                   \
            name<<<w->nb, KS_CU_BLOCK, 0, w->st>>>(__VA_ARGS__);                              \
            KS_CU_LAUNCHED(e, #name);                                                         \
        }                                                                                     \
    } while (0)

/* One pass of distance-two independent roots in the set (the cpu's mis2). */
ks_error mis2(work *w)
{
    ks_error e = KS_OK;
    LAUNCH(e, start_kernel, w->g, w->n, w->in, w->state);
    ks_int undecided = 0;
    if (e == KS_OK)
        e = ks_cu_count_eq(w->be, w->state, w->n, AG_UNDECIDED, &undecided);
    while (e == KS_OK && undecided > 0) {
        LAUNCH(e, max1_kernel, w->g, w->n, w->h, w->in, w->state, w->m1);
        LAUNCH(e, roots_kernel, w->g, w->n, w->h, w->in, w->state, w->m1, w->newroot);
        ks_int roots = 0;
        if (e == KS_OK)
            e = ks_cu_count_eq(w->be, w->newroot, w->n, 1, &roots);
        if (e == KS_OK && roots == 0) /* impossible: the largest key always wins */
            return ks_seterr(KS_ERR_NUMERIC, "ks_amg_aggregate: no progress with %" PRId32
                             " undecided points", undecided);
        LAUNCH(e, near_kernel, w->g, w->n, w->in, w->newroot, w->m1);
        LAUNCH(e, decide_kernel, w->g, w->n, w->in, w->newroot, w->m1, w->state);
        if (e == KS_OK)
            e = ks_cu_count_eq(w->be, w->state, w->n, AG_UNDECIDED, &undecided);
    }
    return e;
}

/* Roots of the pass numbered from *count, their neighbours joined. */
ks_error grow(work *w, ks_int *agg, ks_int *count, int min)
{
    ks_error e = KS_OK;
    LAUNCH(e, keep_roots_kernel, w->g, w->n, w->in, w->state, min, w->flag);
    ks_int roots = 0;
    if (e == KS_OK)
        e = ks_cu_scan(w->be, w->flag, w->n, w->flag, &roots, "aggregation roots");
    LAUNCH(e, number_roots_kernel, w->n, w->in, w->state, w->flag, *count, agg);
    LAUNCH(e, join_kernel, w->g, w->n, w->in, w->state, agg, w->m1);
    LAUNCH(e, copy_join_kernel, w->n, w->in, w->state, w->m1, agg);
    if (e == KS_OK)
        *count += roots;
    return e;
}

} // namespace

extern "C" ks_error ks_amg_cuda_aggregate(const ks_sparse *S, unsigned long long seed,
                                         ks_int *agg, ks_int *na)
{
    if (!S || !agg || !na)
        return ks_seterr(KS_ERR_ARG, "ks_amg_aggregate: NULL %s",
                         !S ? "strength graph" : !agg ? "aggregate array" : "count");
    const ks_int n = S->nrows;
    *na = 0;
    if (n == 0)
        return KS_OK;
    ks_backend *be = S->be;
    /* a bad column would be read out of bounds: the cpu's checks first (the
     * diagonal may be stored) */
    ks_int bad_row;
    KS_TRY(ks_amg_cu_first_bad_row(S, 0, &bad_row));
    if (bad_row != n)
        return ks_seterr(KS_ERR_ARG, "ks_amg_aggregate: strength row %" PRId32
                         ": rowptr decreases or a column is out of range [0, %" PRId32 ")",
                         bad_row < 0 ? 0 : bad_row, n);
    ks_sparse ST;
    KS_TRY(ks_sparse_transpose(S, &ST));
    work wk, *w = &wk;
    memset(w, 0, sizeof *w);
    w->be = be;
    w->st = ks_cu_stream(be);
    w->nb = ks_cu_blocks(n);
    w->n = n;
    w->g.rp = S->rowptr;
    w->g.ci = S->colind;
    w->g.trp = ST.rowptr;
    w->g.tci = ST.colind;
    char *buf = NULL;
    const size_t sz = (size_t)n * (sizeof(uint64_t) + 1 + 2 * sizeof(int) + 2 * sizeof(ks_int)) + 64;
    ks_error e = ks_be_alloc(be, sz, (void **)&buf, "aggregation work arrays");
    int *dbad = NULL;
    if (e == KS_OK) {
        w->h = (uint64_t *)buf;
        w->state = (int *)(buf + (size_t)n * sizeof(uint64_t));
        w->newroot = w->state + n;
        w->m1 = (ks_int *)(w->newroot + n);
        w->flag = w->m1 + n;
        w->in = (unsigned char *)(w->flag + n + 1);
    }
    LAUNCH(e, init_kernel, w->g, n, seed, w->h, w->in, agg);
    ks_int count = 0;
    if (e == KS_OK)
        e = mis2(w); /* 1 */
    if (e == KS_OK)
        e = grow(w, agg, &count, 1);
    LAUNCH(e, next_set_kernel, n, w->in, agg);
    if (e == KS_OK)
        e = mis2(w); /* 2 */
    if (e == KS_OK)
        e = grow(w, agg, &count, kPass2Min);
    /* 3: m1 holds agg before the step */
    if (e == KS_OK && cudaMemcpyAsync(w->m1, agg, sizeof(ks_int) * (size_t)n,
                                      cudaMemcpyDeviceToDevice, w->st) != cudaSuccess)
        e = ks_seterr(KS_ERR_DEVICE, "aggregation: cudaMemcpyAsync failed");
    int hbad = 0;
    if (e == KS_OK)
        e = ks_be_alloc(be, sizeof hbad, (void **)&dbad, "aggregation flag");
    /* zeroed in the queue (an upload of the host's zero would wait) */
    if (e == KS_OK && cudaMemsetAsync(dbad, 0, sizeof hbad, w->st) != cudaSuccess)
        e = ks_seterr(KS_ERR_DEVICE, "aggregation: cudaMemsetAsync failed");
    LAUNCH(e, links_kernel, w->g, n, w->m1, agg, dbad);
    if (e == KS_OK)
        e = be->ops->download(be, &hbad, dbad, sizeof hbad);
    /* 4: singletons */
    LAUNCH(e, single_flag_kernel, n, agg, w->flag);
    ks_int singles = 0;
    if (e == KS_OK && !hbad)
        e = ks_cu_scan(be, w->flag, n, w->flag, &singles, "aggregation singletons");
    LAUNCH(e, number_singles_kernel, n, w->flag, count, agg);
    if (dbad)
        be->ops->free(be, dbad);
    be->ops->free(be, buf);
    ks_sparse_free(&ST);
    KS_TRY(e);
    if (hbad) /* impossible: a free point has a root within two steps */
        return ks_seterr(KS_ERR_NUMERIC, "ks_amg_aggregate: a point was left without an "
                                         "aggregate");
    *na = count + singles;
    return KS_OK;
}
