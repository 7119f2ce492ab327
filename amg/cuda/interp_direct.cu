/* Direct interpolation (D1) on the device: amg/cpu/interp_direct.c's rule
 * (see there for the formula), one thread a row on levels of short rows, a
 * warp a row where rows are long (direct_rows_warp). Either all rows or a
 * range r0 .. r1 - 1 (a rank's own rows of its local system): the kernels
 * visit the range only, the other rows stay empty.
 *
 * Pass 1 counts each row: an F row walks A's row merged with S's (both
 * sorted) exactly as the cpu's direct_row does, so it knows the strong C
 * neighbours, the sign sums and whether lumping cancels the diagonal (then
 * the row is empty, as on the cpu). The scan makes the row pointers; pass 2
 * walks the row again, writes (cmap[j], a_ij) in A's column order, which is
 * already P's column order since the coarse numbering is increasing, and
 * turns the couplings into weights with the same expressions as the cpu,
 * in the same order: the same bits. Exact zeros among strong C couplings
 * are kept as zero weights, as on the cpu. */
#include "interp_device.cuh"

namespace {

/* A C point's row: the identity (its own coarse number, weight 1). */
template <bool FILL>
__device__ __forceinline__ void direct_identity(ks_int i, const ks_int *__restrict__ cmap,
                                                ks_int *cnt, const ks_int *__restrict__ prp,
                                                ks_int *__restrict__ pci, double *__restrict__ pva)
{
    if (FILL) {
        pci[prp[i]] = cmap[i];
        pva[prp[i]] = 1.0;
    } else {
        cnt[i] = 1;
    }
}

/* Rows i = r0 .. r0 + nr - 1. FILL = false: cnt[i] = the length of row i.
 * FILL = true: row i written at prp[i] (rows counted empty are skipped:
 * the walk would find entries only to drop them). */
template <bool FILL>
__global__ void direct_rows(ks_int r0, ks_int nr, const ks_int *__restrict__ arp,
                            const ks_int *__restrict__ aci,
                            const double *__restrict__ ava, const ks_int *__restrict__ srp,
                            const ks_int *__restrict__ sci, const ks_int *__restrict__ cmap,
                            ks_int *cnt, const ks_int *__restrict__ prp, ks_int *__restrict__ pci,
                            double *__restrict__ pva)
{
    KS_CU_FOR(ii, nr) {
        const ks_int i = r0 + (ks_int)ii;
        if (cmap[i] >= 0) { /* C point: identity row */
            direct_identity<FILL>(i, cmap, cnt, prp, pci, pva);
            continue;
        }
        const ks_int w = FILL ? prp[i] : 0;
        if (FILL && prp[i + 1] == w)
            continue;
        double diag = 0.0, n_neg = 0.0, n_pos = 0.0, p_neg = 0.0, p_pos = 0.0;
        ks_int m = 0, s = srp[i];
        const ks_int se = srp[i + 1];
        for (ks_int k = arp[i]; k < arp[i + 1]; k++) {
            const ks_int j = aci[k];
            const double a = ava[k];
            if (j == i) {
                diag = a;
                continue;
            }
            if (a < 0)
                n_neg += a;
            else
                n_pos += a;
            while (s < se && sci[s] < j)
                s++;
            if (s < se && sci[s] == j && cmap[j] >= 0) {
                if (FILL) {
                    pci[w + m] = cmap[j];
                    pva[w + m] = a;
                }
                m++;
                if (a < 0)
                    p_neg += a;
                else
                    p_pos += a;
            }
        }
        /* diag != 0 here: ks_cu_interp_inputs refused zero F diagonals. */
        double d = diag;
        if (p_neg == 0.0)
            d += n_neg;
        if (p_pos == 0.0)
            d += n_pos;
        if (!FILL) {
            cnt[i] = m == 0 || d == 0.0 ? 0 : m; /* no strong C neighbour, or lumping cancelled */
            continue;
        }
        const double alpha = p_neg != 0.0 ? n_neg / p_neg : 0.0;
        const double beta = p_pos != 0.0 ? n_pos / p_pos : 0.0;
        for (ks_int t = 0; t < m; t++) {
            const double a = pva[w + t];
            pva[w + t] = a < 0 ? -alpha * a / d : (a > 0 ? -beta * a / d : 0.0);
        }
    }
}

/* direct_rows with a warp a row, for long rows (a thread walking a row of
 * 40 entries alone reads a cache line an entry: at 7-point 256^3 the
 * second aggressive stage's D1 took 17 ms that way). The lanes load and
 * classify a chunk of 32 entries at once and write the strong C ones in
 * row order (ballot); the sums then take the chunk's values one by one in
 * row order by broadcast: the thread kernel's additions in its order, the
 * same bits. */
template <bool FILL>
__global__ void direct_rows_warp(ks_int r0, ks_int nr, const ks_int *__restrict__ arp,
                                 const ks_int *__restrict__ aci, const double *__restrict__ ava,
                                 const ks_int *__restrict__ srp, const ks_int *__restrict__ sci,
                                 const ks_int *__restrict__ cmap, ks_int *cnt,
                                 const ks_int *__restrict__ prp, ks_int *__restrict__ pci,
                                 double *__restrict__ pva)
{
    const unsigned full = 0xffffffffu;
    const int lane = (int)(threadIdx.x & 31);
    const long long nw = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long ii = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5; ii < nr;
         ii += nw) {
        const ks_int i = r0 + (ks_int)ii;
        if (cmap[i] >= 0) { /* C point: identity row */
            if (lane == 0)
                direct_identity<FILL>(i, cmap, cnt, prp, pci, pva);
            continue;
        }
        const ks_int w = FILL ? prp[i] : 0;
        if (FILL && prp[i + 1] == w)
            continue;
        double diag = 0.0, n_neg = 0.0, n_pos = 0.0, p_neg = 0.0, p_pos = 0.0;
        ks_int m = 0;
        const ks_int a1 = arp[i + 1], s0 = srp[i], s1 = srp[i + 1];
        for (ks_int q0 = arp[i]; q0 < a1; q0 += 32) {
            const ks_int q = q0 + lane;
            int kind = 0; /* 0 none, 1 the diagonal, 2 other, 3 strong C */
            double a = 0.0;
            ks_int j = 0;
            if (q < a1) {
                j = aci[q];
                a = ava[q];
                kind = j == i ? 1 : cmap[j] >= 0 && (ks_cu_find(sci + s0, s1 - s0, j) >= 0) ? 3 : 2;
            }
            const unsigned strong = __ballot_sync(full, kind == 3);
            if (FILL && kind == 3) {
                const ks_int at = w + m + __popc(strong & ((1u << lane) - 1));
                pci[at] = cmap[j];
                pva[at] = a;
            }
            m += __popc(strong);
            const int nq = a1 - q0 < 32 ? (int)(a1 - q0) : 32;
            for (int t = 0; t < nq; t++) {
                const int kt = __shfl_sync(full, kind, t);
                const double at = __shfl_sync(full, a, t);
                if (kt == 1) {
                    diag = at;
                    continue;
                }
                if (at < 0)
                    n_neg += at;
                else
                    n_pos += at;
                if (kt == 3) {
                    if (at < 0)
                        p_neg += at;
                    else
                        p_pos += at;
                }
            }
        }
        double d = diag;
        if (p_neg == 0.0)
            d += n_neg;
        if (p_pos == 0.0)
            d += n_pos;
        if (!FILL) {
            if (lane == 0)
                cnt[i] = m == 0 || d == 0.0 ? 0 : m;
            continue;
        }
        __syncwarp(); /* the couplings written above are read by other lanes */
        const double alpha = p_neg != 0.0 ? n_neg / p_neg : 0.0;
        const double beta = p_pos != 0.0 ? n_pos / p_pos : 0.0;
        for (ks_int t = lane; t < m; t += 32) {
            const double a = pva[w + t];
            pva[w + t] = a < 0 ? -alpha * a / d : (a > 0 ? -beta * a / d : 0.0);
        }
        __syncwarp();
    }
}

/* Mean row length from which rows get a warp each. */
#define DIRECT_WARP_MEAN 16

/* Rows r0 .. r0 + nr - 1, holding rnnz entries of A. */
template <bool FILL>
ks_error direct_launch(const ks_sparse *A, const ks_sparse *S, ks_int r0, ks_int nr,
                       long long rnnz, const ks_int *cmap, ks_int *cnt, const ks_int *prp,
                       ks_int *pci, double *pva, cudaStream_t st)
{
    if (nr == 0)
        return KS_OK;
    if (rnnz >= (long long)DIRECT_WARP_MEAN * nr)
        direct_rows_warp<FILL><<<ks_cu_blocks(32LL * nr), KS_CU_BLOCK, 0, st>>>(
            r0, nr, A->rowptr, A->colind, A->val, S->rowptr, S->colind, cmap, cnt, prp, pci,
            pva);
    else
        direct_rows<FILL><<<ks_cu_blocks(nr), KS_CU_BLOCK, 0, st>>>(
            r0, nr, A->rowptr, A->colind, A->val, S->rowptr, S->colind, cmap, cnt, prp, pci, pva);
    return ks_cu_launched(FILL ? "direct_rows (fill)" : "direct_rows (count)");
}

} // namespace

extern "C" ks_error ks_cu_interp_direct_rows(const ks_sparse *A, const ks_sparse *S,
                                             const int *cf, ks_int r0, ks_int r1, ks_sparse *P)
{
    static const char who[] = "ks_amg_interp_direct";
    if (!P)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    if (!A)
        return ks_seterr(KS_ERR_ARG, "%s: NULL matrix", who);
    ks_backend *be = A->be;
    const ks_int n = A->nrows;
    ks_int *cmap = NULL, nc = 0;
    if (n >= 0 && be)
        KS_TRY(ks_be_alloc(be, ((size_t)n + 1) * sizeof *cmap, (void **)&cmap, "coarse map"));
    ks_error e = ks_cu_interp_inputs(who, A, S, cf, r0, r1, cmap, NULL, &nc);
    cudaStream_t st = e == KS_OK ? ks_cu_stream(be) : 0;
    const ks_int nr = e == KS_OK ? r1 - r0 : 0;
    long long rnnz = 0;
    if (e == KS_OK)
        e = ks_cu_rows_nnz(A, r0, r1, &rnnz);
    /* Row counts go straight into the row pointers, scanned in place; the
     * rows not built count 0. */
    ks_sparse Q = {be, n, nc, 0, NULL, NULL, NULL, 0, 0};
    Q.rowptr = (ks_int *)ks_cu_alloc_if(be, &e, ((size_t)n + 1) * sizeof(ks_int),
                                        "interpolation row pointers");
    if (e == KS_OK && nr < n &&
        cudaMemsetAsync(Q.rowptr, 0, ((size_t)n + 1) * sizeof(ks_int), st) != cudaSuccess) {
        (void)cudaGetLastError();
        e = ks_seterr(KS_ERR_DEVICE, "%s: cudaMemsetAsync of the row counts failed", who);
    }
    if (e == KS_OK)
        e = direct_launch<false>(A, S, r0, nr, rnnz, cmap, Q.rowptr, NULL, NULL, NULL, st);
    if (e == KS_OK)
        e = ks_cu_scan(be, Q.rowptr, n, Q.rowptr, &Q.nnz, "interpolation entries");
    Q.colind = (ks_int *)ks_cu_alloc_if(be, &e, (size_t)Q.nnz * sizeof(ks_int) + 1,
                                        "interpolation columns");
    Q.val = (double *)ks_cu_alloc_if(be, &e, (size_t)Q.nnz * sizeof(double) + 1,
                                     "interpolation values");
    if (e == KS_OK)
        e = direct_launch<true>(A, S, r0, nr, rnnz, cmap, NULL, Q.rowptr, Q.colind, Q.val, st);
    if (e == KS_OK) /* a fault inside the kernels shows here, in this step */
        e = be->ops->sync(be);
    if (be)
        be->ops->free(be, cmap);
    if (e != KS_OK) {
        if (Q.be)
            ks_sparse_free(&Q);
        return e;
    }
    *P = Q;
    return KS_OK;
}

extern "C" ks_error ks_cu_interp_direct(const ks_sparse *A, const ks_sparse *S, const int *cf,
                                        ks_sparse *P)
{
    return ks_cu_interp_direct_rows(A, S, cf, 0, A ? A->nrows : 0, P);
}
