/* Interpolation truncation on the device: amg/cpu/interp_truncate.c's rule
 * (drop |w| < factor max|w|, keep the max_elements largest |w|, ties to
 * the lower column, then one rescale so the row sum is unchanged), one
 * thread per row, the same kept entries and the same bits.
 *
 * The cpu picks the max_elements best by a running top-k or a sort; the
 * order (larger |w|, then lower column) is total, so the kept set is the
 * same whichever way it is found. Here the max_elements-th best candidate
 * is found by max_elements passes over the row (each finds the best one
 * below the previous), no scratch, O(m max_elements) per row; an entry is
 * kept when it is not below that threshold. Sums run in row order as on
 * the cpu.
 *
 * Pass 1 counts the kept entries per row (and checks the row pointers),
 * scanned before one wait reads the check and the total; when nothing
 * goes, P is left as it is. Otherwise the new row pointers
 * come from a scan, pass 2 writes the kept entries, rescaled, into new
 * arrays and the old ones are freed: P is untouched until everything it
 * needs has been allocated. */
#include "amg_cuda.h"
#include "interp_device.cuh"

#include <inttypes.h>
#include <math.h>

namespace {

/* Candidate (am, ac) better than (bm, bc): larger magnitude, then lower
 * column (the cpu's cand_cmp). */
__device__ __forceinline__ bool better(double am, ks_int ac, double bm, ks_int bc)
{
    return am != bm ? am > bm : ac < bc;
}

/* FILL = false: cnt[i] = kept entries of row i; bad[0] = first row whose
 * pointers decrease or leave [0, nnz], bad[1] = 1 when rowptr does not
 * run from 0 to nnz. FILL = true: the kept entries, rescaled, at nrp[i]
 * of (ci2, va2). */
template <bool FILL>
__global__ void trunc_rows(ks_int n, ks_int nnz, const ks_int *__restrict__ rp,
                           const ks_int *__restrict__ ci, const double *__restrict__ va,
                           int max_elements, double factor, ks_int *cnt, ks_int *bad,
                           const ks_int *__restrict__ nrp, ks_int *__restrict__ ci2,
                           double *__restrict__ va2)
{
    KS_CU_FOR(ii, n) {
        const ks_int i = (ks_int)ii;
        const ks_int r0 = rp[i], r1 = rp[i + 1];
        if (!FILL) {
            if ((i == 0 && r0 != 0) || (i == n - 1 && r1 != nnz))
                bad[1] = 1; /* every writer stores the same value */
            if (!(0 <= r0 && r0 <= r1 && r1 <= nnz)) {
                atomicMin(&bad[0], i);
                cnt[i] = 0;
                continue;
            }
        }
        const ks_int m = r1 - r0;
        const ks_int *c = ci + r0;
        const double *v = va + r0;
        const bool by_factor = factor > 0.0;
        bool same = !by_factor && m <= max_elements; /* nothing can be dropped */
        bool capped = false;
        double cut = 0.0, scale = 1.0, tm = 0.0; /* tm, tc: the threshold candidate */
        ks_int tc = 0, nk = m;
        if (!same) {
            double sum = 0.0, mx = 0.0;
            for (ks_int k = 0; k < m; k++) {
                sum += v[k];
                if (fabs(v[k]) > mx)
                    mx = fabs(v[k]);
            }
            cut = factor * mx;
            nk = 0;
            for (ks_int k = 0; k < m; k++)
                nk += !(by_factor && fabs(v[k]) < cut);
            capped = max_elements > 0 && nk > max_elements;
            if (capped) {
                /* The max_elements-th best of the entries passing the
                 * factor: each pass takes the best strictly below the
                 * previous one (nk > max_elements, so every pass finds
                 * one). */
                for (int t = 0; t < max_elements; t++) {
                    bool found = false;
                    double bm = 0.0;
                    ks_int bc = 0;
                    for (ks_int k = 0; k < m; k++) {
                        const double am = fabs(v[k]);
                        if (by_factor && am < cut)
                            continue;
                        if (t > 0 && !better(tm, tc, am, c[k]))
                            continue;
                        if (!found || better(am, c[k], bm, bc)) {
                            bm = am;
                            bc = c[k];
                            found = true;
                        }
                    }
                    tm = bm;
                    tc = bc;
                }
                nk = max_elements;
            }
            same = nk == m;
            if (!same) {
                double kept = 0.0;
                for (ks_int k = 0; k < m; k++) {
                    const double am = fabs(v[k]);
                    if (!(by_factor && am < cut) && (!capped || !better(tm, tc, am, c[k])))
                        kept += v[k];
                }
                scale = kept != 0.0 ? sum / kept : 1.0;
            }
        }
        if (!FILL) {
            cnt[i] = nk;
            continue;
        }
        ks_int w = nrp[i];
        for (ks_int k = 0; k < m; k++) {
            const double am = fabs(v[k]);
            if (same || (!(by_factor && am < cut) && (!capped || !better(tm, tc, am, c[k])))) {
                ci2[w] = c[k];
                va2[w] = same ? v[k] : v[k] * scale;
                w++;
            }
        }
    }
}

} // namespace

extern "C" ks_error ks_cu_interp_truncate(ks_sparse *P, int max_elements, double factor)
{
    static const char who[] = "ks_amg_interp_truncate";
    if (!P)
        return ks_seterr(KS_ERR_ARG, "%s: NULL matrix", who);
    if (max_elements < 0)
        return ks_seterr(KS_ERR_ARG, "%s: max_elements = %d must be >= 0 (0: no limit)", who,
                         max_elements);
    if (!(factor >= 0.0 && factor <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: factor = %g must be in [0, 1] (0: no drop)", who,
                         factor);
    if (!P->be || P->be->ops->kind != KS_BACKEND_CUDA || P->nrows < 0 || !P->rowptr ||
        P->nnz < 0 || (P->nnz > 0 && (!P->colind || !P->val)))
        return ks_seterr(KS_ERR_ARG, "%s: matrix is not a valid CSR on a cuda backend (arrays "
                         "missing or rowptr not from 0 to nnz)", who);
    if ((max_elements == 0 && factor == 0.0) || P->nrows == 0)
        return KS_OK;
    ks_backend *be = P->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int n = P->nrows;
    /* hbad: the row check's two flags (as trunc_rows), then the kept total */
    ks_int *nrp = NULL, *bad = NULL, hbad[3] = {n, 0, 0};
    ks_error e = KS_OK;
    nrp = (ks_int *)ks_cu_alloc_if(be, &e, ((size_t)n + 1) * sizeof *nrp,
                                   "truncation row pointers");
    bad = (ks_int *)ks_cu_alloc_if(be, &e, sizeof hbad, "truncation check");
    if (e == KS_OK)
        e = ks_amg_cu_fill_int(be, (int *)bad, 1, n);
    if (e == KS_OK && cudaMemsetAsync(bad + 1, 0, 2 * sizeof *bad, st) != cudaSuccess) {
        (void)cudaGetLastError();
        e = ks_seterr(KS_ERR_DEVICE, "%s: cudaMemsetAsync of the check failed", who);
    }
    if (e == KS_OK) {
        trunc_rows<false><<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(
            n, P->nnz, P->rowptr, P->colind, P->val, max_elements, factor, nrp, bad, NULL, NULL,
            NULL);
        e = ks_cu_launched("trunc_rows (count)");
    }
    /* The scan before the check is read (one wait for both): it reads only
     * the counts, and its total is read only for a sound structure, where
     * the kept entries number at most nnz (no overflow to check). */
    if (e == KS_OK)
        e = ks_cu_scan(be, nrp, n, nrp, NULL, "truncated interpolation entries");
    if (e == KS_OK &&
        cudaMemcpyAsync(bad + 2, nrp + n, sizeof *bad, cudaMemcpyDeviceToDevice, st) !=
            cudaSuccess) {
        (void)cudaGetLastError();
        e = ks_seterr(KS_ERR_DEVICE, "%s: cudaMemcpyAsync of the total failed", who);
    }
    if (e == KS_OK)
        e = be->ops->download(be, hbad, bad, sizeof hbad);
    if (e == KS_OK && hbad[1])
        e = ks_seterr(KS_ERR_ARG, "%s: matrix is not a valid CSR (arrays missing or rowptr not "
                      "from 0 to nnz)", who);
    else if (e == KS_OK && hbad[0] < n)
        e = ks_seterr(KS_ERR_ARG, "%s: decreasing rowptr at row %" PRId32, who, hbad[0]);
    const ks_int total = hbad[2];
    if (e != KS_OK || total == P->nnz) { /* nothing dropped anywhere: P unchanged */
        be->ops->free(be, nrp);
        be->ops->free(be, bad);
        return e;
    }
    ks_int *ci2 = (ks_int *)ks_cu_alloc_if(be, &e, (size_t)total * sizeof(ks_int) + 1,
                                           "truncated columns");
    double *va2 = (double *)ks_cu_alloc_if(be, &e, (size_t)total * sizeof(double) + 1,
                                           "truncated values");
    if (e == KS_OK) {
        trunc_rows<true><<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(
            n, P->nnz, P->rowptr, P->colind, P->val, max_elements, factor, NULL, NULL, nrp, ci2,
            va2);
        e = ks_cu_launched("trunc_rows (fill)");
    }
    if (e == KS_OK) /* kernel faults show here, before P is changed */
        e = be->ops->sync(be);
    be->ops->free(be, bad);
    if (e != KS_OK) {
        be->ops->free(be, nrp);
        be->ops->free(be, ci2);
        be->ops->free(be, va2);
        return e;
    }
    be->ops->free(be, P->rowptr);
    be->ops->free(be, P->colind);
    be->ops->free(be, P->val);
    P->rowptr = nrp;
    P->colind = ci2;
    P->val = va2;
    P->nnz = total;
    return KS_OK;
}
