/* Shared pieces of the cuda interpolation steps (interp_device.cuh): the
 * coarse numbering, the input checks the cpu builders make (so a bad input
 * is refused with the cpu's error code, and no kernel reads out of
 * bounds), and the compaction of rows that lost entries. First bad rows
 * are found with integer atomicMin: the minimum does not depend on the
 * order the threads arrive in. */
#include "amg_cuda.h"
#include "interp_device.cuh"

#include <inttypes.h>

namespace {

/* cmap[i] = 1 for C points, 0 otherwise (the scan's input); bad = the
 * first point that is neither C nor F. */
__global__ void cmap_flags(ks_int n, const int *__restrict__ cf, ks_int *cmap, ks_int *bad)
{
    KS_CU_FOR(ii, n) {
        const ks_int i = (ks_int)ii;
        const int c = cf[i];
        cmap[i] = c == KS_CPT;
        if (c != KS_CPT && c != KS_FPT)
            atomicMin(bad, i);
    }
}

/* After the exclusive scan: F points get -1. */
__global__ void cmap_finish(ks_int n, const int *__restrict__ cf, ks_int *cmap)
{
    KS_CU_FOR(i, n)
    if (cf[i] != KS_CPT)
        cmap[i] = -1;
}

/* Row i's pointers inside [0, nnz], not decreasing; the first and last
 * rows also start at 0 and end at nnz. */
__device__ __forceinline__ bool row_span_ok(ks_int i, ks_int n, ks_int nnz, ks_int r0, ks_int r1)
{
    return 0 <= r0 && r0 <= r1 && r1 <= nnz && (i != 0 || r0 == 0) && (i != n - 1 || r1 == nnz);
}

/* Columns of one row in [0, ncols), strictly increasing, and not the row
 * itself when no_diag. */
__device__ __forceinline__ bool row_cols_ok(ks_int i, ks_int ncols, const ks_int *ci, ks_int r0,
                                            ks_int r1, bool no_diag)
{
    for (ks_int k = r0; k < r1; k++) {
        const ks_int j = ci[k];
        if (j < 0 || j >= ncols || (k > r0 && j <= ci[k - 1]) || (no_diag && j == i))
            return false;
    }
    return true;
}

__global__ void check_csr_kernel(ks_int n, ks_int ncols, ks_int nnz, const ks_int *__restrict__ rp,
                                 const ks_int *__restrict__ ci, const double *__restrict__ val,
                                 int no_diag, int check_values, ks_int *bad)
{
    KS_CU_FOR(ii, n) {
        const ks_int i = (ks_int)ii;
        const ks_int r0 = rp[i], r1 = rp[i + 1];
        if (!row_span_ok(i, n, nnz, r0, r1) || !row_cols_ok(i, ncols, ci, r0, r1, no_diag)) {
            atomicMin(&bad[0], i);
            continue;
        }
        if (check_values && val)
            for (ks_int k = r0; k < r1; k++)
                if (!isfinite(val[k])) {
                    atomicMin(&bad[1], i);
                    break;
                }
    }
}

/* The interpolation inputs (ks_cu_interp_inputs): bad[0] = first row of A
 * or S with a bad structure, bad[1] = first point not C of the rows built
 * [r0, r1) whose diagonal is zero or missing (read only where the
 * structure is sound; the other rows are never built, and a rank's local
 * system has points without rows); diag (may be NULL) = a_ii. structure =
 * 0: A and S are known good (ks_sparse.valid), so only the diagonals are
 * read (the whole check reads every column of both, a few ms at 256^3). */
__global__ void interp_check_kernel(ks_int n, ks_int r0, ks_int r1, ks_int annz,
                                    const ks_int *__restrict__ arp,
                                    const ks_int *__restrict__ aci,
                                    const double *__restrict__ ava, ks_int snnz,
                                    const ks_int *__restrict__ srp, const ks_int *__restrict__ sci,
                                    const int *__restrict__ cf, int structure, double *diag,
                                    ks_int *bad)
{
    KS_CU_FOR(ii, n) {
        const ks_int i = (ks_int)ii;
        const ks_int a0 = arp[i], a1 = arp[i + 1];
        if (structure &&
            (!row_span_ok(i, n, annz, a0, a1) || !row_span_ok(i, n, snnz, srp[i], srp[i + 1]) ||
             !row_cols_ok(i, n, aci, a0, a1, false) ||
             !row_cols_ok(i, n, sci, srp[i], srp[i + 1], true))) {
            atomicMin(&bad[0], i);
            continue;
        }
        double d = 0.0;
        for (ks_int k = a0; k < a1; k++)
            if (aci[k] == i) {
                d = ava[k];
                break;
            }
        if (diag)
            diag[i] = d;
        if (cf[i] != KS_CPT && d == 0.0 && i >= r0 && i < r1)
            atomicMin(&bad[1], i);
    }
}

__global__ void compact_copy(ks_int n, const ks_int *__restrict__ rp, const ks_int *__restrict__ ci,
                             const double *__restrict__ va, const ks_int *__restrict__ nrp,
                             ks_int *__restrict__ ci2, double *__restrict__ va2)
{
    KS_CU_FOR(ii, n) {
        const ks_int i = (ks_int)ii;
        const ks_int r0 = rp[i], w = nrp[i], m = nrp[i + 1] - w;
        for (ks_int t = 0; t < m; t++) {
            ci2[w + t] = ci[r0 + t];
            if (va)
                va2[w + t] = va[r0 + t];
        }
    }
}

/* count ks_ints set to `value` on the device (the first-bad-row flags):
 * a kernel, queued (an upload of host values would wait). */
ks_error fill_flags(ks_backend *be, ks_int *d, int count, ks_int value)
{
    static_assert(sizeof(ks_int) == sizeof(int), "ks_int is an int");
    return ks_amg_cu_fill_int(be, (int *)d, count, value);
}

int is_cuda(const ks_backend *be) { return be && be->ops->kind == KS_BACKEND_CUDA; }

/* The coarse map's first pass: cmap flags, *bad (device, set to n first)
 * the first point neither C nor F. Queued. */
ks_error coarse_map_flags(ks_backend *be, ks_int n, const int *cf, ks_int *cmap, ks_int *bad)
{
    KS_TRY(fill_flags(be, bad, 1, n));
    cmap_flags<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(n, cf, cmap, bad);
    return ks_cu_launched("cmap_flags");
}

/* The rest, given the first pass's hbad (downloaded): the error, or the
 * scan (a wait: *nc) and the F points' -1. */
ks_error coarse_map_finish(ks_backend *be, ks_int n, const int *cf, ks_int *cmap, ks_int hbad,
                           ks_int *nc)
{
    cudaStream_t st = ks_cu_stream(be);
    if (hbad < n) {
        int v = 0;
        KS_TRY(be->ops->download(be, &v, cf + hbad, sizeof v));
        return ks_seterr(KS_ERR_ARG, "ks_amg_coarse_map: point %" PRId32 " is %s (cf = %d), "
                         "expected C (%d) or F (%d)", hbad,
                         v == KS_UNDECIDED ? "undecided" : "not marked", v, KS_CPT, KS_FPT);
    }
    ks_int total = 0;
    KS_TRY(ks_cu_scan(be, cmap, n, cmap, &total, "coarse points"));
    cmap_finish<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, cf, cmap);
    KS_TRY(ks_cu_launched("cmap_finish"));
    *nc = total;
    return KS_OK;
}

} // namespace

extern "C" ks_error ks_cu_coarse_map(ks_backend *be, ks_int n, const int *cf, ks_int *cmap,
                                     ks_int *nc)
{
    if (!is_cuda(be) || n < 0 || !nc || (n > 0 && !cf) || !cmap)
        return ks_seterr(KS_ERR_ARG, "ks_cu_coarse_map: %s",
                         !is_cuda(be) ? "not a cuda backend" : n < 0 ? "negative size"
                                                                     : "NULL array");
    *nc = 0;
    ks_int *bad = NULL, hbad = n;
    KS_TRY(ks_be_alloc(be, sizeof *bad, (void **)&bad, "coarse map check"));
    ks_error e = coarse_map_flags(be, n, cf, cmap, bad);
    if (e == KS_OK)
        e = be->ops->download(be, &hbad, bad, sizeof hbad);
    be->ops->free(be, bad);
    if (e != KS_OK)
        return e;
    return coarse_map_finish(be, n, cf, cmap, hbad, nc);
}

ks_error ks_cu_check_csr(ks_backend *be, ks_int n, ks_int ncols, ks_int nnz, const ks_int *rp,
                         const ks_int *ci, const double *val, int no_diag, int check_values,
                         ks_int bad[2])
{
    bad[0] = bad[1] = n;
    if (n == 0)
        return KS_OK;
    ks_int *d = NULL;
    KS_TRY(ks_be_alloc(be, 2 * sizeof *d, (void **)&d, "CSR check"));
    ks_error e = fill_flags(be, d, 2, n);
    if (e == KS_OK) {
        check_csr_kernel<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(
            n, ncols, nnz, rp, ci, val, no_diag, check_values, d);
        e = ks_cu_launched("check_csr_kernel");
    }
    if (e == KS_OK)
        e = be->ops->download(be, bad, d, 2 * sizeof *d);
    be->ops->free(be, d);
    return e;
}

ks_error ks_cu_interp_inputs(const char *who, const ks_sparse *A, const ks_sparse *S,
                             const int *cf, ks_int r0, ks_int r1, ks_int *cmap, double *diag,
                             ks_int *nc)
{
    if (!A || !S || !cf)
        return ks_seterr(KS_ERR_ARG, "%s: NULL %s", who,
                         !A ? "matrix" : !S ? "strength" : "C/F splitting");
    if (!is_cuda(A->be) || S->be != A->be)
        return ks_seterr(KS_ERR_ARG, "%s: the matrix and the strength graph must live on one "
                         "cuda backend", who);
    if (A->nrows < 0 || A->nrows != A->ncols)
        return ks_seterr(KS_ERR_SIZE, "%s: matrix is %" PRId32 " x %" PRId32 ", must be square",
                         who, A->nrows, A->ncols);
    if (S->nrows != A->nrows)
        return ks_seterr(KS_ERR_SIZE, "%s: strength has %" PRId32 " rows, matrix %" PRId32, who,
                         S->nrows, A->nrows);
    const ks_int n = A->nrows;
    if (!A->rowptr || !S->rowptr || (A->nnz > 0 && (!A->colind || !A->val)) ||
        (S->nnz > 0 && !S->colind))
        return ks_seterr(KS_ERR_ARG, "%s: matrix or strength arrays not allocated", who);
    if (r0 < 0 || r1 < r0 || r1 > n)
        return ks_seterr(KS_ERR_ARG, "%s: rows %" PRId32 " .. %" PRId32 " of %" PRId32, who, r0,
                         r1, n);
    if (!nc || !cmap)
        return ks_seterr(KS_ERR_ARG, "%s: ks_cu_coarse_map: NULL array", who);
    ks_backend *be = A->be;
    *nc = 0;
    /* The rows' check and the coarse map's first pass (it reads cf only,
     * so it may run on a bad structure) with one wait for both. */
    ks_int hbad[3] = {n, n, n};
    if (n > 0) {
        ks_int *bad = NULL;
        KS_TRY(ks_be_alloc(be, sizeof hbad, (void **)&bad, "interpolation input check"));
        ks_error e = fill_flags(be, bad, 2, n);
        if (e == KS_OK) {
            interp_check_kernel<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(
                n, r0, r1, A->nnz, A->rowptr, A->colind, A->val, S->nnz, S->rowptr, S->colind, cf,
                !(A->valid && S->valid), diag, bad);
            e = ks_cu_launched("interp_check_kernel");
        }
        if (e == KS_OK)
            e = coarse_map_flags(be, n, cf, cmap, bad + 2);
        if (e == KS_OK)
            e = be->ops->download(be, hbad, bad, sizeof hbad);
        be->ops->free(be, bad);
        if (e != KS_OK)
            return ks_adderr(e, "%s", who);
    }
    /* The cpu's order: structure, then the splitting, then the rows. */
    if (hbad[0] < n)
        return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 " of the matrix or strength has a "
                         "decreasing row pointer or an unsorted, repeated, diagonal (strength) "
                         "or out-of-range column", who, hbad[0]);
    ks_error e = coarse_map_finish(be, n, cf, cmap, hbad[2], nc);
    if (e != KS_OK)
        return ks_adderr(e, "%s", who);
    if (hbad[1] < n)
        return ks_seterr(KS_ERR_NUMERIC, "%s: zero diagonal at row %" PRId32, who, hbad[1]);
    return KS_OK;
}

ks_error ks_cu_rows_nnz(const ks_sparse *A, ks_int r0, ks_int r1, long long *nnz)
{
    *nnz = A->nnz;
    if (r0 == 0 && r1 == A->nrows)
        return KS_OK;
    *nnz = 0;
    if (r1 <= r0)
        return KS_OK;
    ks_int b = 0, e = 0;
    KS_TRY(A->be->ops->download(A->be, &b, A->rowptr + r0, sizeof b));
    KS_TRY(A->be->ops->download(A->be, &e, A->rowptr + r1, sizeof e));
    *nnz = (long long)e - b;
    return KS_OK;
}

ks_error ks_cu_compact_rows(ks_sparse *P, ks_int *keep)
{
    ks_backend *be = P->be;
    const ks_int n = P->nrows;
    ks_int *nrp = NULL, total = 0;
    KS_TRY(ks_be_alloc(be, ((size_t)n + 1) * sizeof *nrp, (void **)&nrp, "compacted row pointers"));
    ks_error e = ks_cu_scan(be, keep, n, nrp, &total, "compacted rows");
    if (e != KS_OK || total == P->nnz) { /* nothing dropped: P stays as it is */
        be->ops->free(be, nrp);
        return e;
    }
    ks_int *ci2 = (ks_int *)ks_cu_alloc_if(be, &e, (size_t)total * sizeof(ks_int) + 1,
                                           "compacted columns");
    double *va2 = P->val ? (double *)ks_cu_alloc_if(be, &e, (size_t)total * sizeof(double) + 1,
                                                    "compacted values")
                         : NULL;
    if (e == KS_OK) {
        compact_copy<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(
            n, P->rowptr, P->colind, P->val, nrp, ci2, va2);
        e = ks_cu_launched("compact_copy");
    }
    if (e != KS_OK) {
        be->ops->free(be, nrp);
        be->ops->free(be, ci2);
        be->ops->free(be, va2);
        return e;
    }
    /* Stream-ordered frees: the copy above has read the old arrays first. */
    be->ops->free(be, P->rowptr);
    be->ops->free(be, P->colind);
    be->ops->free(be, P->val);
    P->rowptr = nrp;
    P->colind = ci2;
    P->val = va2;
    P->nnz = total;
    return KS_OK;
}
