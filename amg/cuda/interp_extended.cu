/* Extended+i interpolation (D2, hypre interp_type 6) on the device:
 * amg/cpu/interp_extended.c's rule (the formula and its sources are there),
 * one thread per row, the same values bit for bit.
 *
 * The interpolatory set Chat_i (the strong C points of i and of its strong
 * F neighbours) is the union of sorted lists: S's row i and the S rows of
 * the strong F neighbours, each filtered to C points, whose coarse numbers
 * increase with the fine index. A k-way merge (ks_cu_merge_unique) gives
 * it sorted and without repeats: pass 1 counts it, the scan makes the row
 * pointers, pass 2 merges again into P's row, then computes the weights
 * there, membership of Chat_i being a binary search in that row.
 *
 * The values follow the cpu's plain row builder (extended_i_row) step by
 * step: every entry starts at +0.0 and receives, in the order of the walk
 * of A's row i, i's own coupling a_ij and the spread terms (a_ik / D_k)
 * ahat_kj; D_k sums row k's kept entries in row order; atil_ii starts at
 * a_ii and receives the lumped couplings and i's own spread term in the
 * same order. Products are rounded before they are added (__dmul_rn,
 * __dadd_rn): nvcc would otherwise fuse them into FMAs, which the cpu
 * (ISO C, no contraction) does not. A row whose atil_ii comes out 0 is left
 * empty, as on the cpu: pass 2 marks it and the rows are compacted after.
 *
 * Scratch: a heap of list heads per row, 1 + |S_i| runs (12 bytes each),
 * n + nnz(S) in all, freed before returning. */
#include "interp_device.cuh"

namespace {

/* Lists of S entries, filtered to C points, keyed by the coarse number. */
struct c_points {
    const ks_int *sci, *cmap;
    __device__ __forceinline__ bool next(ks_int &pos, ks_int end, ks_int &key) const
    {
        for (; pos < end; pos++) {
            const ks_int c = cmap[sci[pos]];
            if (c >= 0) {
                key = c;
                return true;
            }
        }
        return false;
    }
};

/* The lists of F row i into its heap h (1 + |S_i| slots): S's row i, then
 * the S row of each strong F neighbour, in S's order. Returns how many. */
__device__ __forceinline__ ks_int chat_lists(ks_int i, const ks_int *srp, const ks_int *sci,
                                             const ks_int *cmap, ks_cu_run *h)
{
    const ks_int ss = srp[i], se = srp[i + 1];
    ks_int nh = 0;
    h[nh].pos = ss;
    h[nh++].end = se;
    for (ks_int s = ss; s < se; s++) {
        const ks_int k = sci[s];
        if (cmap[k] < 0) {
            h[nh].pos = srp[k];
            h[nh++].end = srp[k + 1];
        }
    }
    return nh;
}

/* Pass 1: cnt[i] = |Chat_i| for F rows (0 when empty), 1 for C rows. */
__global__ void ext_count(ks_int n, const ks_int *__restrict__ srp, const ks_int *__restrict__ sci,
                          const ks_int *__restrict__ cmap, ks_cu_run *heap, ks_int *cnt)
{
    KS_CU_FOR(ii, n) {
        const ks_int i = (ks_int)ii;
        if (cmap[i] >= 0) {
            cnt[i] = 1;
            continue;
        }
        ks_cu_run *h = heap + (size_t)srp[i] + (size_t)i;
        const ks_int nh = chat_lists(i, srp, sci, cmap, h);
        const c_points src = {sci, cmap};
        cnt[i] = ks_cu_merge_unique(src, h, nh, (ks_int *)NULL);
    }
}

/* a_kl is of the sign ahat keeps in row k: opposite to a_kk (a_kk >= 0
 * counts as positive); zeros never. */
__device__ __forceinline__ bool ahat_sign(double a_kk, double v)
{
    return a_kk < 0 ? v > 0 : v < 0;
}

/* Pass 2: the rows. keep[i] = the row's final length (0 when atil_ii is
 * 0, then *dropped = 1). */
__global__ void ext_fill(ks_int n, const ks_int *__restrict__ arp, const ks_int *__restrict__ aci,
                         const double *__restrict__ ava, const ks_int *__restrict__ srp,
                         const ks_int *__restrict__ sci, const ks_int *__restrict__ cmap,
                         const double *__restrict__ diag, ks_cu_run *heap,
                         const ks_int *__restrict__ prp, ks_int *__restrict__ pci,
                         double *__restrict__ pva, ks_int *keep, int *dropped)
{
    KS_CU_FOR(ii, n) {
        const ks_int i = (ks_int)ii;
        const ks_int p0 = prp[i], len = prp[i + 1] - p0;
        if (cmap[i] >= 0) {
            pci[p0] = cmap[i];
            pva[p0] = 1.0;
            keep[i] = 1;
            continue;
        }
        keep[i] = len;
        if (len == 0) /* nothing to interpolate from */
            continue;
        ks_int *col = pci + p0;
        double *val = pva + p0;
        ks_cu_run *h = heap + (size_t)srp[i] + (size_t)i;
        const ks_int nh = chat_lists(i, srp, sci, cmap, h);
        const c_points src = {sci, cmap};
        ks_cu_merge_unique(src, h, nh, col); /* len entries, as counted */
        for (ks_int t = 0; t < len; t++)
            val[t] = 0.0;

        double atil = diag[i];
        ks_int s = srp[i];
        const ks_int se = srp[i + 1];
        for (ks_int q = arp[i]; q < arp[i + 1]; q++) {
            const ks_int j = aci[q];
            const double a = ava[q];
            if (j == i)
                continue;
            while (s < se && sci[s] < j)
                s++;
            const bool strong = s < se && sci[s] == j;
            const ks_int cj = cmap[j];
            const ks_int pj = cj >= 0 ? ks_cu_find(col, len, cj) : -1;
            if (pj >= 0) {
                val[pj] += a; /* i's own coupling to a point of Chat_i */
            } else if (strong && cj < 0) {
                /* Strong F neighbour k = j: a_ik spread over Chat_i U {i}
                 * in proportion to ahat_kl. First D_k over the kept
                 * entries in row order, then the spreading over the same
                 * entries (the cpu keeps them in a list; here the test is
                 * repeated, with the same outcome). */
                const ks_int k = j, k0 = arp[k], k1 = arp[k + 1];
                const double dk = diag[k];
                double D = 0.0;
                for (ks_int m = k0; m < k1; m++) {
                    const ks_int l = aci[m];
                    const double v = ava[m];
                    if (!ahat_sign(dk, v))
                        continue;
                    const ks_int cl = l == i ? -1 : cmap[l];
                    if (l == i || (cl >= 0 && ks_cu_find(col, len, cl) >= 0))
                        D += v;
                }
                if (D == 0.0) { /* nothing to spread over: a_ik lumped */
                    atil += a;
                    continue;
                }
                const double dist = a / D;
                double own = -0.0; /* the cpu's spare slot, which starts at -0.0 */
                for (ks_int m = k0; m < k1; m++) {
                    const ks_int l = aci[m];
                    const double v = ava[m];
                    if (!ahat_sign(dk, v))
                        continue;
                    if (l == i) {
                        own = __dadd_rn(own, __dmul_rn(dist, v));
                        continue;
                    }
                    const ks_int cl = cmap[l];
                    const ks_int p = cl >= 0 ? ks_cu_find(col, len, cl) : -1;
                    if (p >= 0)
                        val[p] = __dadd_rn(val[p], __dmul_rn(dist, v));
                }
                atil += own;
            } else {
                atil += a; /* weak and outside Chat_i: lumped */
            }
        }
        if (atil == 0.0) {
            keep[i] = 0;
            *dropped = 1; /* every writer stores the same value */
            continue;
        }
        for (ks_int t = 0; t < len; t++)
            val[t] = -val[t] / atil;
    }
}

} // namespace

extern "C" ks_error ks_cu_interp_extended_i(const ks_sparse *A, const ks_sparse *S,
                                            const int *cf, ks_sparse *P)
{
    static const char who[] = "ks_amg_interp_extended_i";
    if (!P)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    if (!A)
        return ks_seterr(KS_ERR_ARG, "%s: NULL matrix", who);
    ks_backend *be = A->be;
    const ks_int n = A->nrows;
    ks_int *cmap = NULL, nc = 0;
    double *diag = NULL;
    ks_error e = KS_OK;
    if (n >= 0 && be) {
        cmap = (ks_int *)ks_cu_alloc_if(be, &e, ((size_t)n + 1) * sizeof *cmap, "coarse map");
        diag = (double *)ks_cu_alloc_if(be, &e, ((size_t)n + 1) * sizeof *diag,
                                        "interpolation diagonal");
    }
    if (e == KS_OK)
        e = ks_cu_interp_inputs(who, A, S, cf, cmap, diag, &nc);
    cudaStream_t st = e == KS_OK ? ks_cu_stream(be) : 0;
    ks_sparse Q = {be, n, nc, 0, NULL, NULL, NULL};
    ks_cu_run *heap = NULL;
    ks_int *keep = NULL;
    int *dropped = NULL, hdropped = 0;
    if (e == KS_OK)
        heap = (ks_cu_run *)ks_cu_alloc_if(
            be, &e, ((size_t)S->nnz + (size_t)n + 1) * sizeof(ks_cu_run), "interpolation heaps");
    Q.rowptr = (ks_int *)ks_cu_alloc_if(be, &e, ((size_t)n + 1) * sizeof(ks_int),
                                        "interpolation row pointers");
    if (e == KS_OK) {
        ext_count<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, S->rowptr, S->colind, cmap, heap,
                                                            Q.rowptr);
        e = ks_cu_launched("ext_count");
    }
    if (e == KS_OK)
        e = ks_cu_scan(be, Q.rowptr, n, Q.rowptr, &Q.nnz, "interpolation entries");
    Q.colind = (ks_int *)ks_cu_alloc_if(be, &e, (size_t)Q.nnz * sizeof(ks_int) + 1,
                                        "interpolation columns");
    Q.val = (double *)ks_cu_alloc_if(be, &e, (size_t)Q.nnz * sizeof(double) + 1,
                                     "interpolation values");
    keep = (ks_int *)ks_cu_alloc_if(be, &e, ((size_t)n + 1) * sizeof(ks_int),
                                    "interpolation row lengths");
    dropped = (int *)ks_cu_alloc_if(be, &e, sizeof(int), "interpolation drop flag");
    if (e == KS_OK && cudaMemsetAsync(dropped, 0, sizeof(int), st) != cudaSuccess) {
        (void)cudaGetLastError();
        e = ks_seterr(KS_ERR_DEVICE, "%s: cudaMemsetAsync of the drop flag failed", who);
    }
    if (e == KS_OK) {
        ext_fill<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(
            n, A->rowptr, A->colind, A->val, S->rowptr, S->colind, cmap, diag, heap, Q.rowptr,
            Q.colind, Q.val, keep, dropped);
        e = ks_cu_launched("ext_fill");
    }
    if (e == KS_OK) /* synchronises: kernel faults show here */
        e = be->ops->download(be, &hdropped, dropped, sizeof hdropped);
    if (e == KS_OK && hdropped)
        e = ks_cu_compact_rows(&Q, keep);
    if (e == KS_OK)
        e = be->ops->sync(be);
    if (be) {
        be->ops->free(be, cmap);
        be->ops->free(be, diag);
        be->ops->free(be, heap);
        be->ops->free(be, keep);
        be->ops->free(be, dropped);
    }
    if (e != KS_OK) {
        if (Q.be)
            ks_sparse_free(&Q);
        return e;
    }
    *P = Q;
    return KS_OK;
}
