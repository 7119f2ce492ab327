/* Re-setup projection on the device: a recomputed interpolation Pn onto
 * the saved pattern of P, in place in P's values, as the cpu's
 * cpu_interp_project (amg/cpu/amg_cpu.c) does: per row, P's entries take
 * Pn's values at their columns (0 where Pn has none); when Pn has entries
 * outside the pattern the kept ones are rescaled to Pn's row sum, which
 * is what truncation does with the kept set frozen. A row that loses
 * entries although P was not truncated, or keeps no weight, does not fit:
 * *changed = 1. One thread per row, the cpu's loop line for line (the same
 * sums in the same order), so the values are the same bits; like the cpu,
 * the values are written also when *changed comes back 1. */
#include "interp_device.cuh"

#include <inttypes.h>

namespace {

__global__ void project_rows(ks_int n, const ks_int *__restrict__ nrp,
                             const ks_int *__restrict__ nci, const double *__restrict__ nva,
                             const ks_int *__restrict__ prp, const ks_int *__restrict__ pci,
                             double *__restrict__ pva, int truncated, int *bad)
{
    KS_CU_FOR(ii, n) {
        const ks_int i = (ks_int)ii;
        ks_int a = nrp[i];
        const ks_int ae = nrp[i + 1], k0 = prp[i], k1 = prp[i + 1];
        double sum_all = 0.0, sum_kept = 0.0;
        bool dropped = false;
        for (ks_int j = a; j < ae; j++)
            sum_all += nva[j];
        for (ks_int k = k0; k < k1; k++) {
            while (a < ae && nci[a] < pci[k]) {
                a++;
                dropped = true;
            }
            const double v = a < ae && nci[a] == pci[k] ? nva[a++] : 0.0;
            pva[k] = v;
            sum_kept += v;
        }
        if (a < ae)
            dropped = true;
        if (!dropped)
            continue; /* same entries: no rescaling, exact */
        if (!truncated || sum_kept == 0.0) {
            *bad = 1; /* every writer stores the same value */
            continue;
        }
        const double scale = sum_all / sum_kept;
        for (ks_int k = k0; k < k1; k++)
            pva[k] *= scale;
    }
}

} // namespace

extern "C" ks_error ks_cu_interp_project(const ks_sparse *Pn, ks_sparse *P, int truncated,
                                         int *changed)
{
    static const char who[] = "interpolation projection";
    if (!Pn || !P || !changed)
        return ks_seterr(KS_ERR_ARG, "%s: NULL argument", who);
    if (!P->be || P->be->ops->kind != KS_BACKEND_CUDA || Pn->be != P->be)
        return ks_seterr(KS_ERR_ARG, "%s: both interpolations must live on one cuda backend",
                         who);
    if (Pn->nrows != P->nrows || P->nrows < 0)
        return ks_seterr(KS_ERR_SIZE, "%s: %" PRId32 " rows onto %" PRId32, who, Pn->nrows,
                         P->nrows);
    if ((Pn->nnz > 0 && !Pn->val) || (P->nnz > 0 && !P->val))
        return ks_seterr(KS_ERR_ARG, "%s: an interpolation has no values", who);
    *changed = 0;
    const ks_int n = P->nrows;
    if (n == 0)
        return KS_OK;
    ks_backend *be = P->be;
    cudaStream_t st = ks_cu_stream(be);
    int *bad = NULL, hbad = 0;
    KS_TRY(ks_be_alloc(be, sizeof *bad, (void **)&bad, "projection flag"));
    ks_error e = KS_OK; /* zeroed in the queue (an upload would wait) */
    if (cudaMemsetAsync(bad, 0, sizeof *bad, st) != cudaSuccess) {
        (void)cudaGetLastError();
        e = ks_seterr(KS_ERR_DEVICE, "%s: cudaMemsetAsync of the flag failed", who);
    }
    if (e == KS_OK) {
        project_rows<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, Pn->rowptr, Pn->colind,
                                                               Pn->val, P->rowptr, P->colind,
                                                               P->val, truncated, bad);
        e = ks_cu_launched("project_rows");
    }
    if (e == KS_OK) /* synchronises: faults in the kernel show here */
        e = be->ops->download(be, &hbad, bad, sizeof hbad);
    be->ops->free(be, bad);
    if (e == KS_OK)
        *changed = hbad != 0;
    return e;
}
