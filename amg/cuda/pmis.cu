/* PMIS on the device: the splitting of amg/cpu/pmis.c (its comment has the
 * method), point for point.
 *
 *   S^T      a pattern transpose (count columns, scan, scatter). Atomic
 *            slots make the order inside a row of S^T schedule-dependent,
 *            which nothing sees: S^T gives the measures' counts |S^T_i|
 *            and "is there a neighbour such that ..." answers.
 *   measure  (|S^T_i|, ks_coarsen_hash(seed, i), i), compared exactly;
 *            the hash is the cpu's own function (amg/coarsen_hash.h).
 *   rounds   the cpu's two passes, one kernel each: select the undecided
 *            local maxima over S_i and S^T_i (reads cf, writes sel), then
 *            selected -> C and undecided neighbours of selected points -> F
 *            (reads sel, writes only its own cf). A pass never writes what
 *            it reads, so the rounds make the cpu's decisions. Two rounds
 *            are queued a wait (one download of their counters, the first
 *            time with the initial count): a round after the last
 *            undecided point is gone would change nothing (select passes
 *            only undecided points, update touches only them), and its
 *            kernels return at once on the count before them.
 *   isolated points (no S or S^T entries) are F from the start.
 *   fix-up   F points with strong connections but no C point in S_i are
 *            found on the device, the C points counted in the same pass
 *            (the splitting's nc when no fix-up follows); for a
 *            structurally symmetric S there are
 *            none (PMIS gives every such F point a C neighbour), and that
 *            is the usual case. Otherwise, rarely, the serial index-order
 *            pass runs on the host on copies of S and cf -- the cpu's own
 *            loop (ks_amg_pmis_fixup) -- and cf goes back up. */
#include "amg_cuda.h"
#include "../cpu/coarsen_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

namespace {

/* ---------------------------------------------------------- S transpose */

__global__ void count_columns(ks_int nnz, const ks_int *__restrict__ ci, ks_int *cnt)
{
    KS_CU_FOR(k, nnz)
    atomicAdd(&cnt[ci[k]], 1);
}

__global__ void scatter_columns(ks_int n, const ks_int *__restrict__ rp,
                                const ks_int *__restrict__ ci, const ks_int *__restrict__ trp,
                                ks_int *fill, ks_int *__restrict__ tci)
{
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
            const ks_int c = ci[k];
            tci[trp[c] + atomicAdd(&fill[c], 1)] = i;
        }
    }
}

/* ------------------------------------------------------------ the rounds */

/* Does j's measure beat i's? (pmis.c's beats) */
__device__ __forceinline__ bool beats(const ks_int *__restrict__ trp,
                                      const uint64_t *__restrict__ h, ks_int j, ks_int i)
{
    const ks_int cj = trp[j + 1] - trp[j], cnt_i = trp[i + 1] - trp[i];
    if (cj != cnt_i)
        return cj > cnt_i;
    if (h[j] != h[i])
        return h[j] > h[i];
    return j > i;
}

/* Measures, isolated points F, the rest undecided (counted). */
__global__ void pmis_init(ks_int n, const ks_int *__restrict__ rp, const ks_int *__restrict__ trp,
                          unsigned long long seed, uint64_t *__restrict__ h,
                          int *__restrict__ cf, int *undecided)
{
    int u = 0;
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        h[i] = ks_coarsen_hash(seed, (ks_gint)i);
        const bool isolated = rp[i] == rp[i + 1] && trp[i] == trp[i + 1];
        cf[i] = isolated ? KS_FPT : KS_UNDECIDED;
        u += !isolated;
    }
    ks_cu_warp_add_int(undecided, u);
}

/* The rounds' kernels do nothing when *before (the undecided points
 * before the round, counted on the device; NULL: known to be some) is 0. */
__device__ __forceinline__ bool round_idle(const int *before)
{
    return before && *before == 0; /* the same for every thread of the grid */
}

__global__ void pmis_select(ks_int n, const ks_int *__restrict__ rp,
                            const ks_int *__restrict__ ci, const ks_int *__restrict__ trp,
                            const ks_int *__restrict__ tci, const uint64_t *__restrict__ h,
                            const int *__restrict__ cf, unsigned char *__restrict__ sel,
                            const int *before, int *nsel)
{
    if (round_idle(before))
        return;
    int c = 0;
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        bool s = cf[i] == KS_UNDECIDED;
        for (ks_int k = rp[i]; s && k < rp[i + 1]; k++) {
            const ks_int j = ci[k];
            if (cf[j] == KS_UNDECIDED && beats(trp, h, j, i))
                s = false;
        }
        for (ks_int k = trp[i]; s && k < trp[i + 1]; k++) {
            const ks_int j = tci[k];
            if (cf[j] == KS_UNDECIDED && beats(trp, h, j, i))
                s = false;
        }
        sel[i] = s;
        c += s;
    }
    ks_cu_warp_add_int(nsel, c);
}

__global__ void pmis_update(ks_int n, const ks_int *__restrict__ rp,
                            const ks_int *__restrict__ ci, const ks_int *__restrict__ trp,
                            const ks_int *__restrict__ tci, const unsigned char *__restrict__ sel,
                            int *__restrict__ cf, const int *before, int *left)
{
    if (round_idle(before))
        return;
    int c = 0;
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        if (cf[i] != KS_UNDECIDED)
            continue;
        if (sel[i]) {
            cf[i] = KS_CPT;
            continue;
        }
        bool near = false;
        for (ks_int k = rp[i]; !near && k < rp[i + 1]; k++)
            near = sel[ci[k]] != 0;
        for (ks_int k = trp[i]; !near && k < trp[i + 1]; k++)
            near = sel[tci[k]] != 0;
        if (near)
            cf[i] = KS_FPT;
        else
            c++;
    }
    ks_cu_warp_add_int(left, c);
}

/* Fix-up candidates: F points with strong connections and no C point in
 * S_i (cand[i] = 1), counted, and the C points counted. */
__global__ void pmis_candidates(ks_int n, const ks_int *__restrict__ rp,
                                const ks_int *__restrict__ ci, const int *__restrict__ cf,
                                unsigned char *__restrict__ cand, int *ncand, int *ncpt)
{
    int c = 0, cp = 0;
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        const int fi = cf[i];
        bool need = fi == KS_FPT && rp[i] < rp[i + 1];
        for (ks_int k = rp[i]; need && k < rp[i + 1]; k++)
            need = cf[ci[k]] != KS_CPT;
        cand[i] = need;
        c += need;
        cp += fi == KS_CPT;
    }
    ks_cu_warp_add_int(ncand, c);
    ks_cu_warp_add_int(ncpt, cp);
}

/* One round of the fix-up, on the device. The serial pass (the cpu's, in
 * index order) promotes candidate i exactly when no candidate j < i in S_i
 * was promoted before it (S_i held no C point to begin with, and only
 * candidates change). So i is decided once every such j is: promoted if
 * none of them was. A state only goes from undecided (0) to promoted (1)
 * or not (2), so reading a neighbour's old or new state in the same round
 * is safe: at worst i waits a round. */
__global__ void fixup_round(ks_int n, const ks_int *__restrict__ rp,
                            const ks_int *__restrict__ ci, const unsigned char *__restrict__ cand,
                            int *state, int *__restrict__ cf, int *left)
{
    int l = 0;
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        if (!cand[i] || ((volatile int *)state)[i] != 0)
            continue;
        int pending = 0, hit = 0;
        for (ks_int k = rp[i]; k < rp[i + 1] && !hit; k++) {
            const ks_int j = ci[k];
            if (j < i && cand[j]) {
                const int sj = ((volatile int *)state)[j];
                hit = sj == 1;
                pending |= sj == 0;
            }
        }
        if (hit) {
            state[i] = 2;
        } else if (!pending) {
            state[i] = 1;
            cf[i] = KS_CPT;
        } else {
            l++;
        }
    }
    ks_cu_warp_add_int(left, l);
}

__global__ void fixup_clear_decided(ks_int n, const int *state, unsigned char *cand)
{
    KS_CU_FOR(i, n)
    if (state[i] != 0)
        cand[i] = 0;
}

/* Rounds of the device fix-up before the rest goes to the host loop (a
 * dependency chain this long among candidates is not seen in practice). */
const int kFixupRounds = 64;

/* ------------------------------------------------------------- the host */

/* The device counters (pmis_work.cnt). */
enum {
    CNT_INIT,                   /* undecided after pmis_init */
    CNT_SEL_A, CNT_LEFT_A,      /* a wait's first round: selected, undecided after it */
    CNT_SEL_B, CNT_LEFT_B,      /* its second round */
    CNT_CAND, CNT_CPT,          /* fix-up candidates, C points */
    CNT_FIXUP,                  /* undecided candidates after a fix-up round */
    CNT_N
};

/* Device temporaries (freed together). */
struct pmis_work {
    ks_int *trp, *tci, *fill;
    uint64_t *h;
    unsigned char *sel;
    int *cnt; /* CNT_N counters */
};

void free_work(ks_backend *be, pmis_work *w)
{
    void *p[] = {w->trp, w->tci, w->fill, w->h, w->sel, w->cnt};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        if (p[i])
            be->ops->free(be, p[i]);
    memset(w, 0, sizeof *w);
}

ks_error alloc_work(ks_backend *be, ks_int n, ks_int nnz, pmis_work *w)
{
    memset(w, 0, sizeof *w);
    KS_TRY(ks_be_alloc(be, ((size_t)n + 1) * sizeof(ks_int), (void **)&w->trp,
                       "PMIS transposed row pointers"));
    KS_TRY(ks_be_alloc(be, (size_t)nnz * sizeof(ks_int) + 1, (void **)&w->tci,
                       "PMIS transposed columns"));
    KS_TRY(ks_be_alloc(be, (size_t)n * sizeof(ks_int) + 1, (void **)&w->fill,
                       "PMIS transpose slots"));
    KS_TRY(ks_be_alloc(be, (size_t)n * sizeof(uint64_t) + 1, (void **)&w->h,
                       "PMIS random measures"));
    KS_TRY(ks_be_alloc(be, (size_t)n + 1, (void **)&w->sel, "PMIS selection flags"));
    KS_TRY(ks_be_alloc(be, CNT_N * sizeof(int), (void **)&w->cnt, "PMIS counters"));
    return KS_OK;
}

/* The serial fix-up on host copies (rare; see the file comment). */
ks_error fixup_on_host(const ks_sparse *S, int *cf, const unsigned char *cand, ks_int ncand)
{
    ks_backend *be = S->be;
    const ks_int n = S->nrows;
    ks_csr H;
    KS_TRY(ks_sparse_to_csr(S, &H));
    int *cfh = (int *)ks_malloc((size_t)n * sizeof(int) + 1, "PMIS fix-up splitting");
    unsigned char *ch = (unsigned char *)ks_malloc((size_t)n + 1, "PMIS fix-up candidates");
    ks_error e = cfh && ch ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK)
        e = be->ops->download(be, cfh, cf, (size_t)n * sizeof(int));
    if (e == KS_OK)
        e = be->ops->download(be, ch, cand, (size_t)n);
    if (e == KS_OK) {
        ks_strength s = {H.nrows, H.rowptr, H.colind};
        ks_amg_pmis_fixup(&s, ch, ncand, cfh, NULL);
        e = be->ops->upload(be, cf, cfh, (size_t)n * sizeof(int));
    }
    free(cfh);
    free(ch);
    ks_csr_free(&H);
    return e;
}

/* One round (select, update) counting into cnt[sel], cnt[left]; before:
 * the undecided count before it on the device (NULL: known nonzero). */
ks_error pmis_round(const ks_sparse *S, int *cf, pmis_work *w, const int *before, int sel,
                    int left)
{
    cudaStream_t st = ks_cu_stream(S->be);
    const ks_int n = S->nrows;
    const unsigned grid = ks_cu_blocks(n);
    pmis_select<<<grid, KS_CU_BLOCK, 0, st>>>(n, S->rowptr, S->colind, w->trp, w->tci, w->h, cf,
                                              w->sel, before, w->cnt + sel);
    KS_CUDA_LAUNCH_CHECK("pmis_select");
    pmis_update<<<grid, KS_CU_BLOCK, 0, st>>>(n, S->rowptr, S->colind, w->trp, w->tci, w->sel, cf,
                                              before, w->cnt + left);
    KS_CUDA_LAUNCH_CHECK("pmis_update");
    return KS_OK;
}

/* The splitting with the work arrays allocated (returns at the first
 * failure; the caller frees). *nc = the C points, or -1 when the host's
 * fix-up changed cf after they were counted. */
ks_error pmis_run(const ks_sparse *S, unsigned long long seed, int *cf, pmis_work *w, ks_int *nc)
{
    *nc = -1;
    ks_backend *be = S->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int n = S->nrows, nnz = S->nnz;
    const ks_int *rp = S->rowptr, *ci = S->colind;
    const unsigned grid = ks_cu_blocks(n);

    /* S^T */
    KS_CUDA_CHECK(cudaMemsetAsync(w->trp, 0, ((size_t)n + 1) * sizeof(ks_int), st));
    KS_CUDA_CHECK(cudaMemsetAsync(w->fill, 0, (size_t)n * sizeof(ks_int), st));
    count_columns<<<ks_cu_blocks(nnz), KS_CU_BLOCK, 0, st>>>(nnz, ci, w->trp);
    KS_CUDA_LAUNCH_CHECK("count_columns");
    KS_TRY(ks_cu_scan(be, w->trp, n, w->trp, NULL, "PMIS transpose"));
    scatter_columns<<<grid, KS_CU_BLOCK, 0, st>>>(n, rp, ci, w->trp, w->fill, w->tci);
    KS_CUDA_LAUNCH_CHECK("scatter_columns");

    /* measures and the isolated points */
    KS_CUDA_CHECK(cudaMemsetAsync(w->cnt, 0, CNT_N * sizeof(int), st));
    pmis_init<<<grid, KS_CU_BLOCK, 0, st>>>(n, rp, w->trp, seed, w->h, cf, w->cnt + CNT_INIT);
    KS_CUDA_LAUNCH_CHECK("pmis_init");

    /* Two rounds a wait; the first wait also brings the initial count, so
     * the first pair's first round reads it on the device. */
    for (int undecided = -1; undecided != 0;) {
        if (undecided > 0)
            KS_CUDA_CHECK(cudaMemsetAsync(w->cnt + CNT_SEL_A, 0, 4 * sizeof(int), st));
        KS_TRY(pmis_round(S, cf, w, undecided < 0 ? w->cnt + CNT_INIT : NULL, CNT_SEL_A,
                          CNT_LEFT_A));
        KS_TRY(pmis_round(S, cf, w, w->cnt + CNT_LEFT_A, CNT_SEL_B, CNT_LEFT_B));
        int c[CNT_LEFT_B + 1];
        KS_TRY(be->ops->download(be, c, w->cnt, sizeof c));
        if (undecided < 0 && (undecided = c[CNT_INIT]) == 0)
            break; /* every point isolated: the rounds did nothing */
        /* impossible: the largest undecided measure always wins (with no
         * selection the update pass changed nothing, as the cpu stops
         * before it) */
        if (c[CNT_SEL_A] == 0 || (c[CNT_LEFT_A] > 0 && c[CNT_SEL_B] == 0))
            return ks_seterr(KS_ERR_NUMERIC, "ks_amg_pmis: no progress with %d undecided points",
                             c[CNT_SEL_A] == 0 ? undecided : c[CNT_LEFT_A]);
        undecided = c[CNT_LEFT_A] == 0 ? 0 : c[CNT_LEFT_B];
    }

    /* fix-up, and the C points */
    int hc[2] = {0, 0};
    pmis_candidates<<<grid, KS_CU_BLOCK, 0, st>>>(n, rp, ci, cf, w->sel, w->cnt + CNT_CAND,
                                                  w->cnt + CNT_CPT);
    KS_CUDA_LAUNCH_CHECK("pmis_candidates");
    KS_TRY(be->ops->download(be, hc, w->cnt + CNT_CAND, sizeof hc));
    const int ncand = hc[0];
    *nc = hc[1];
    if (ncand == 0)
        return KS_OK;
    *nc = -1; /* the fix-up promotes F points to C */
    /* the serial fix-up's decisions, in rounds on the device (w->fill, the
     * transpose's slots, holds the candidates' states) */
    KS_CUDA_CHECK(cudaMemsetAsync(w->fill, 0, (size_t)n * sizeof(ks_int), st));
    for (int round = 0; round < kFixupRounds; round++) {
        int left = 0;
        KS_CUDA_CHECK(cudaMemsetAsync(w->cnt + CNT_FIXUP, 0, sizeof(int), st));
        fixup_round<<<grid, KS_CU_BLOCK, 0, st>>>(n, rp, ci, w->sel, w->fill, cf,
                                                  w->cnt + CNT_FIXUP);
        KS_CUDA_LAUNCH_CHECK("fixup_round");
        KS_TRY(be->ops->download(be, &left, w->cnt + CNT_FIXUP, sizeof left));
        if (left == 0)
            return KS_OK;
    }
    /* a long chain: the serial loop finishes it on the host (the decided
     * candidates are no longer candidates there: their cf is final) */
    fixup_clear_decided<<<grid, KS_CU_BLOCK, 0, st>>>(n, w->fill, w->sel);
    KS_CUDA_LAUNCH_CHECK("fixup_clear_decided");
    return fixup_on_host(S, cf, w->sel, ncand);
}

} // namespace

extern "C" ks_error ks_amg_cuda_pmis(const ks_sparse *S, unsigned long long seed, int *cf,
                                     ks_int *nc)
{
    static const char who[] = "ks_amg_pmis";
    if (!cf || !nc)
        return ks_seterr(KS_ERR_ARG, "%s: NULL %s", who, cf ? "nc" : "cf");
    /* ks_strength_check's rules: the host-side part here, the rows on the
     * device (columns in [0, n), never the row itself), described by the
     * host function on a copy when the device finds a bad row */
    if (!S)
        return ks_seterr(KS_ERR_ARG, "%s: NULL strength pattern", who);
    if (S->nrows < 0 || !S->rowptr || (S->nnz > 0 && !S->colind) || S->nnz < 0)
        return ks_seterr(KS_ERR_ARG, "%s: strength pattern is not allocated or has a negative "
                         "size", who);
    if (S->ncols != S->nrows)
        return ks_seterr(KS_ERR_SIZE, "%s: strength pattern is %" PRId32 " x %" PRId32
                         ", expected square", who, S->nrows, S->ncols);
    ks_backend *be = S->be;
    const ks_int n = S->nrows;
    ks_int bad = n;
    /* a strength step's graph (valid, KS_SPARSE_NO_DIAG) needs no look,
     * which is a pass over S and a wait */
    if (!(S->valid && (S->flags & KS_SPARSE_NO_DIAG)))
        KS_TRY(ks_amg_cu_first_bad_row(S, KS_CU_ROWS_NO_SELF, &bad));
    if (bad != n) {
        ks_csr H;
        KS_TRY(ks_sparse_to_csr(S, &H));
        ks_strength s = {H.nrows, H.rowptr, H.colind};
        ks_error e = ks_strength_check(&s, who);
        ks_csr_free(&H);
        if (e != KS_OK)
            return e;
        /* the cpu takes rowptr[n] as the entry count; here it must be nnz */
        return ks_seterr(KS_ERR_ARG, "%s: strength pattern row pointers end at a value other "
                         "than its %" PRId32 " entries, or row %" PRId32 " is malformed",
                         who, S->nnz, bad);
    }
    *nc = 0;
    if (n == 0)
        return KS_OK;
    pmis_work w;
    ks_int counted = -1;
    ks_error e = alloc_work(be, n, S->nnz, &w);
    if (e == KS_OK)
        e = pmis_run(S, seed, cf, &w, &counted);
    free_work(be, &w);
    if (e == KS_OK && counted >= 0)
        *nc = counted;
    else if (e == KS_OK)
        e = ks_cu_count_eq(be, cf, n, KS_CPT, nc);
    return e;
}
