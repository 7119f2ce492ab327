/* Direct interpolation (D1) on the device: amg/cpu/interp_direct.c's rule
 * (see there for the formula), one thread per row.
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

/* FILL = false: cnt[i] = the length of row i. FILL = true: row i written
 * at prp[i] (rows counted empty are skipped: the walk would find entries
 * only to drop them). */
template <bool FILL>
__global__ void direct_rows(ks_int n, const ks_int *__restrict__ arp, const ks_int *__restrict__ aci,
                            const double *__restrict__ ava, const ks_int *__restrict__ srp,
                            const ks_int *__restrict__ sci, const ks_int *__restrict__ cmap,
                            ks_int *cnt, const ks_int *__restrict__ prp, ks_int *__restrict__ pci,
                            double *__restrict__ pva)
{
    KS_CU_FOR(ii, n) {
        const ks_int i = (ks_int)ii;
        if (cmap[i] >= 0) { /* C point: identity row */
            if (FILL) {
                pci[prp[i]] = cmap[i];
                pva[prp[i]] = 1.0;
            } else {
                cnt[i] = 1;
            }
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

} // namespace

extern "C" ks_error ks_cu_interp_direct(const ks_sparse *A, const ks_sparse *S, const int *cf,
                                        ks_sparse *P)
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
    ks_error e = ks_cu_interp_inputs(who, A, S, cf, cmap, NULL, &nc);
    cudaStream_t st = e == KS_OK ? ks_cu_stream(be) : 0;
    /* Row counts go straight into the row pointers, scanned in place. */
    ks_sparse Q = {be, n, nc, 0, NULL, NULL, NULL};
    Q.rowptr = (ks_int *)ks_cu_alloc_if(be, &e, ((size_t)n + 1) * sizeof(ks_int),
                                        "interpolation row pointers");
    if (e == KS_OK) {
        direct_rows<false><<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(
            n, A->rowptr, A->colind, A->val, S->rowptr, S->colind, cmap, Q.rowptr, NULL, NULL,
            NULL);
        e = ks_cu_launched("direct_rows (count)");
    }
    if (e == KS_OK)
        e = ks_cu_scan(be, Q.rowptr, n, Q.rowptr, &Q.nnz, "interpolation entries");
    Q.colind = (ks_int *)ks_cu_alloc_if(be, &e, (size_t)Q.nnz * sizeof(ks_int) + 1,
                                        "interpolation columns");
    Q.val = (double *)ks_cu_alloc_if(be, &e, (size_t)Q.nnz * sizeof(double) + 1,
                                     "interpolation values");
    if (e == KS_OK) {
        direct_rows<true><<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(
            n, A->rowptr, A->colind, A->val, S->rowptr, S->colind, cmap, NULL, Q.rowptr,
            Q.colind, Q.val);
        e = ks_cu_launched("direct_rows (fill)");
    }
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
