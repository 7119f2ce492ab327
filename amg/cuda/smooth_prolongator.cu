/* Smoothed-aggregation prolongator on the device, P = (I - omega D^-1 A) P0
 * with omega = 4 / (3 rho), as amg/cpu/sa_prolong.c's
 * ks_amg_smooth_prolongator: the same checks, the pattern of the product
 * (every entry kept, also one that cancels to zero, so the pattern depends
 * only on the patterns of A and P0), sorted columns, and the same values:
 * each entry starts at +0.0, gets P0's row i, then, for A's row i in
 * column order, -= (s a_ik) p0_kj with s = omega / a_ii; products are
 * rounded before the subtraction (__dmul_rn, __dsub_rn) since nvcc would
 * otherwise fuse them into FMAs, which the cpu does not.
 *
 * One thread per row, two passes. Row i's columns are the union of the
 * sorted P0 rows of i and of its neighbours in A, merged with a heap of
 * list heads (ks_cu_merge_unique; |A_i| + 1 lists, n + nnz(A) runs of
 * scratch in all); pass 2 merges into P's row and finds each term's entry
 * by binary search. P0 may have any number of entries per row (the
 * tentative prolongator has at most one). */
#include "amg_cuda.h"
#include "interp_device.cuh"

#include <inttypes.h>
#include <math.h>

namespace {

/* The columns of a P0 row (all of them count). */
struct p0_cols {
    const ks_int *pci;
    __device__ __forceinline__ bool next(ks_int &pos, ks_int end, ks_int &key) const
    {
        if (pos < end) {
            key = pci[pos];
            return true;
        }
        return false;
    }
};

/* The lists of row i into h (|A_i| + 1 slots): P0's row i, then the P0
 * row of each column of A's row i. */
__device__ __forceinline__ ks_int sa_lists(ks_int i, const ks_int *arp, const ks_int *aci,
                                           const ks_int *qrp, ks_cu_run *h)
{
    ks_int nh = 0;
    h[nh].pos = qrp[i];
    h[nh++].end = qrp[i + 1];
    for (ks_int k = arp[i]; k < arp[i + 1]; k++) {
        const ks_int j = aci[k];
        h[nh].pos = qrp[j];
        h[nh++].end = qrp[j + 1];
    }
    return nh;
}

/* bad[0] = first row whose stored diagonal is zero, bad[1] = first row
 * with no stored diagonal. */
__global__ void sa_diag_check(ks_int n, const ks_int *__restrict__ arp,
                              const ks_int *__restrict__ aci, const double *__restrict__ ava,
                              ks_int *bad)
{
    KS_CU_FOR(ii, n) {
        const ks_int i = (ks_int)ii;
        const ks_int k = ks_cu_find(aci + arp[i], arp[i + 1] - arp[i], i);
        if (k < 0)
            atomicMin(&bad[1], i);
        else if (ava[arp[i] + k] == 0.0)
            atomicMin(&bad[0], i);
    }
}

__global__ void sa_count(ks_int n, const ks_int *__restrict__ arp, const ks_int *__restrict__ aci,
                         const ks_int *__restrict__ qrp, const ks_int *__restrict__ qci,
                         ks_cu_run *heap, ks_int *cnt)
{
    KS_CU_FOR(ii, n) {
        const ks_int i = (ks_int)ii;
        ks_cu_run *h = heap + (size_t)arp[i] + (size_t)i;
        const ks_int nh = sa_lists(i, arp, aci, qrp, h);
        const p0_cols src = {qci};
        cnt[i] = ks_cu_merge_unique(src, h, nh, (ks_int *)NULL);
    }
}

__global__ void sa_fill(ks_int n, const ks_int *__restrict__ arp, const ks_int *__restrict__ aci,
                        const double *__restrict__ ava, const ks_int *__restrict__ qrp,
                        const ks_int *__restrict__ qci, const double *__restrict__ qva,
                        double omega, ks_cu_run *heap, const ks_int *__restrict__ prp,
                        ks_int *__restrict__ pci, double *__restrict__ pva)
{
    KS_CU_FOR(ii, n) {
        const ks_int i = (ks_int)ii;
        const ks_int p0 = prp[i], len = prp[i + 1] - p0;
        if (len == 0)
            continue;
        ks_int *col = pci + p0;
        double *val = pva + p0;
        ks_cu_run *h = heap + (size_t)arp[i] + (size_t)i;
        const ks_int nh = sa_lists(i, arp, aci, qrp, h);
        const p0_cols src = {qci};
        ks_cu_merge_unique(src, h, nh, col); /* len columns, as counted */
        for (ks_int t = 0; t < len; t++)
            val[t] = 0.0;
        for (ks_int q = qrp[i]; q < qrp[i + 1]; q++) {
            const ks_int p = ks_cu_find(col, len, qci[q]);
            val[p] += qva[q];
        }
        const ks_int a0 = arp[i], a1 = arp[i + 1];
        const double s = omega / ava[a0 + ks_cu_find(aci + a0, a1 - a0, i)]; /* checked */
        for (ks_int k = a0; k < a1; k++) {
            const double w = __dmul_rn(s, ava[k]);
            const ks_int j = aci[k];
            for (ks_int q = qrp[j]; q < qrp[j + 1]; q++) {
                const ks_int p = ks_cu_find(col, len, qci[q]);
                val[p] = __dsub_rn(val[p], __dmul_rn(w, qva[q]));
            }
        }
    }
}

/* A CSR's host fields and device structure, as ks_csr_validate checks them
 * (values finite too); `what` names it in the message. */
ks_error check_matrix(const char *who, const char *what, const ks_sparse *M)
{
    if (M->nrows < 0 || M->ncols < 0 || M->nnz < 0)
        return ks_seterr(KS_ERR_ARG, "%s: %s: negative size (%" PRId32 " x %" PRId32
                         ", nnz %" PRId32 ")", who, what, M->nrows, M->ncols, M->nnz);
    if (!M->rowptr || (M->nnz > 0 && (!M->colind || !M->val)))
        return ks_seterr(KS_ERR_ARG, "%s: %s: arrays not allocated (or no values)", who, what);
    ks_int bad[2];
    KS_TRY(ks_cu_check_csr(M->be, M->nrows, M->ncols, M->nnz, M->rowptr, M->colind, M->val, 0, 1,
                           bad));
    if (bad[0] < M->nrows)
        return ks_seterr(KS_ERR_ARG, "%s: %s: row %" PRId32 ": row pointers out of [0, nnz] "
                         "or decreasing, or columns out of range, unsorted or repeated", who,
                         what, bad[0]);
    if (bad[1] < M->nrows)
        return ks_seterr(KS_ERR_NUMERIC, "%s: %s: row %" PRId32 " holds a value that is not "
                         "finite", who, what, bad[1]);
    return KS_OK;
}

} // namespace

extern "C" ks_error ks_cu_smooth_prolongator(const ks_sparse *A, const ks_sparse *P0, double rho,
                                             ks_sparse *P)
{
    static const char who[] = "ks_amg_smooth_prolongator";
    if (!A || !P0 || !P)
        return ks_seterr(KS_ERR_ARG, "%s: NULL %s", who,
                         !A ? "matrix" : !P0 ? "tentative prolongator" : "output");
    if (P == A || P == P0)
        return ks_seterr(KS_ERR_ARG, "%s: output aliases an input", who);
    if (!(rho > 0.0) || !isfinite(rho))
        return ks_seterr(KS_ERR_ARG, "%s: spectral radius %g (expected a finite positive number)",
                         who, rho);
    if (!A->be || A->be->ops->kind != KS_BACKEND_CUDA || P0->be != A->be)
        return ks_seterr(KS_ERR_ARG, "%s: A and P0 must live on one cuda backend", who);
    KS_TRY(check_matrix(who, "A", A));
    KS_TRY(check_matrix(who, "P0", P0));
    if (A->nrows != A->ncols || P0->nrows != A->nrows)
        return ks_seterr(KS_ERR_SIZE, "%s: A is %" PRId32 " x %" PRId32 ", P0 is %" PRId32
                         " x %" PRId32 " (expected square A and P0 rows = A rows)", who,
                         A->nrows, A->ncols, P0->nrows, P0->ncols);
    ks_backend *be = A->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int n = A->nrows;
    const double omega = 4.0 / (3.0 * rho); /* as the cpu computes it */
    ks_error e = KS_OK;

    /* The first zero or missing diagonal is named, as on the cpu. */
    if (n > 0) {
        ks_int hbad[2] = {n, n}, *bad = NULL;
        KS_TRY(ks_be_alloc(be, sizeof hbad, (void **)&bad, "diagonal check"));
        e = ks_amg_cu_fill_int(be, (int *)bad, 2, n); /* queued: an upload would wait */
        if (e == KS_OK) {
            sa_diag_check<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->colind,
                                                                   A->val, bad);
            e = ks_cu_launched("sa_diag_check");
        }
        if (e == KS_OK)
            e = be->ops->download(be, hbad, bad, sizeof hbad);
        be->ops->free(be, bad);
        if (e != KS_OK)
            return e;
        const ks_int first = hbad[0] < hbad[1] ? hbad[0] : hbad[1];
        if (first < n)
            return ks_seterr(KS_ERR_NUMERIC, "%s: row %" PRId32 " has a %s diagonal (Jacobi "
                             "smoothing needs a_ii != 0)", who, first,
                             first == hbad[1] ? "missing" : "zero");
    }

    ks_sparse Q = {be, n, P0->ncols, 0, NULL, NULL, NULL, 0, 0};
    ks_cu_run *heap = (ks_cu_run *)ks_cu_alloc_if(
        be, &e, ((size_t)A->nnz + (size_t)n + 1) * sizeof(ks_cu_run), "smoothing heaps");
    Q.rowptr = (ks_int *)ks_cu_alloc_if(be, &e, ((size_t)n + 1) * sizeof(ks_int),
                                        "P row pointers");
    if (e == KS_OK) {
        sa_count<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->colind, P0->rowptr,
                                                           P0->colind, heap, Q.rowptr);
        e = ks_cu_launched("sa_count");
    }
    if (e == KS_OK)
        e = ks_cu_scan(be, Q.rowptr, n, Q.rowptr, &Q.nnz, "smoothed prolongator entries");
    Q.colind = (ks_int *)ks_cu_alloc_if(be, &e, (size_t)Q.nnz * sizeof(ks_int) + 1, "P columns");
    Q.val = (double *)ks_cu_alloc_if(be, &e, (size_t)Q.nnz * sizeof(double) + 1, "P values");
    if (e == KS_OK) {
        sa_fill<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->colind, A->val,
                                                          P0->rowptr, P0->colind, P0->val, omega,
                                                          heap, Q.rowptr, Q.colind, Q.val);
        e = ks_cu_launched("sa_fill");
    }
    if (e == KS_OK) /* kernel faults show here, in this step */
        e = be->ops->sync(be);
    be->ops->free(be, heap);
    if (e != KS_OK) {
        ks_sparse_free(&Q);
        return e;
    }
    *P = Q;
    return KS_OK;
}
