/* Galerkin coarse operator Ac = R * A * P by two sparse products.
 *
 * Association: the total work of both orders is bounded by the same count
 * of paths (I, i, k, J) through R, A and P; what differs is the first
 * product, whose merged result feeds the second. We therefore count the
 * multiply-adds of A*P and of R*A exactly (O(nnz), from patterns only) and
 * start with the cheaper one, R*(A*P) on ties. With R = P^T and a
 * structurally symmetric A the counts are equal, so AMG gets R*(A*P): the
 * first product runs over the many fine rows (good balance), the second
 * has few, long coarse rows.
 *
 * Nothing is dropped, not even exact zeros from cancellation: Ac's pattern
 * is the structural product pattern, which is the same for either order,
 * so a re-setup can refill it with ks_csr_spgemm_numeric. The choice
 * depends on the patterns only, so it is the same for new values. */
#include "csr_kernels.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>

/* Multiply-adds of X*Y: sum over X's entries (i, k) of nnz(Y row k).
 * Indices are trusted only as far as needed to stay in bounds; malformed
 * input is reported by ks_csr_spgemm afterwards. */
static int64_t product_flops(const ks_csr *X, const ks_csr *Y)
{
    const ks_int n = X->nrows, nnz = X->nnz, ny = Y->nrows;
    const ks_int *xr = X->rowptr, *xc = X->colind, *yr = Y->rowptr;
    int64_t f = 0;
#pragma omp parallel for schedule(static) reduction(+ : f) if (nnz > 65536)
    for (ks_int i = 0; i < n; i++) {
        ks_int lo = xr[i] < 0 ? 0 : xr[i], hi = xr[i + 1] > nnz ? nnz : xr[i + 1];
        for (ks_int k = lo; k < hi; k++) {
            ks_int c = xc[k];
            if (c >= 0 && c < ny)
                f += yr[c + 1] - yr[c];
        }
    }
    return f;
}

static int shaped(const ks_csr *M)
{
    return M && M->nrows >= 0 && M->ncols >= 0 && M->nnz >= 0 && M->rowptr &&
           (M->nnz == 0 || (M->colind && M->val));
}

ks_error ks_csr_rap(const ks_csr *R, const ks_csr *A, const ks_csr *P, ks_csr *Ac)
{
    if (!shaped(R) || !shaped(A) || !shaped(P))
        return ks_seterr(KS_ERR_ARG, "ks_csr_rap: %s is NULL, not allocated or of negative size",
                         !shaped(R) ? "R" : !shaped(A) ? "A" : "P");
    if (!Ac || Ac == R || Ac == A || Ac == P)
        return ks_seterr(KS_ERR_ARG, "ks_csr_rap: %s", Ac ? "output aliases an input"
                                                          : "NULL output");
    if (R->ncols != A->nrows || A->ncols != P->nrows)
        return ks_seterr(KS_ERR_SIZE, "ks_csr_rap: R is %" PRId32 " x %" PRId32 ", A is %" PRId32
                         " x %" PRId32 ", P is %" PRId32 " x %" PRId32,
                         R->nrows, R->ncols, A->nrows, A->ncols, P->nrows, P->ncols);

    const int64_t f_ap = product_flops(A, P), f_ra = product_flops(R, A);
    const int ra_first = f_ra < f_ap;
    ks_csr T;
    ks_error e = ra_first ? ks_csr_spgemm(R, A, &T) : ks_csr_spgemm(A, P, &T);
    if (e != KS_OK)
        return ks_adderr(e, "ks_csr_rap: %s", ra_first ? "R*A" : "A*P");
    e = ra_first ? ks_csr_spgemm(&T, P, Ac) : ks_csr_spgemm(R, &T, Ac);
    if (e != KS_OK)
        ks_adderr(e, "ks_csr_rap: %s", ra_first ? "(R*A)*P" : "R*(A*P)");
    ks_csr_free(&T);
    return e;
}

/* Ac = R A P numerically into Ac's pattern (re-setup), one coarse row at a
 * time (rows in parallel, each summed in a fixed order: thread-count
 * independent). No symbolic pass and no A P intermediate: the pattern is
 * known, and A P would take more memory than A. *outside = 1 when the
 * product has an entry outside the pattern (a mismatch of shapes counts as
 * one: the saved pattern cannot hold the product). */
ks_error ks_csr_rap_numeric(const ks_csr *R, const ks_csr *A, const ks_csr *P, ks_csr *Ac,
                            int *outside)
{
    if (R->nrows != Ac->nrows || P->ncols != Ac->ncols || R->ncols != A->nrows ||
        A->ncols != P->nrows) {
        *outside = 1;
        return KS_OK;
    }
    const ks_int nc = Ac->ncols;
    int bad = 0, nomem = 0;
#pragma omp parallel reduction(| : bad, nomem)
    {
        ks_int *pos = malloc(sizeof(ks_int) * ((size_t)nc + 1));
        if (!pos)
            nomem = 1;
        else
            for (ks_int m = 0; m < nc; m++)
                pos[m] = -1;
#pragma omp for schedule(dynamic, 64)
        for (ks_int i = 0; i < Ac->nrows; i++) {
            if (!pos)
                continue;
            for (ks_int k = Ac->rowptr[i]; k < Ac->rowptr[i + 1]; k++) {
                pos[Ac->colind[k]] = k;
                Ac->val[k] = 0.0;
            }
            for (ks_int rk = R->rowptr[i]; rk < R->rowptr[i + 1]; rk++) {
                const ks_int k = R->colind[rk];
                for (ks_int ak = A->rowptr[k]; ak < A->rowptr[k + 1]; ak++) {
                    const ks_int j = A->colind[ak];
                    const double ra = R->val[rk] * A->val[ak];
                    for (ks_int pk = P->rowptr[j]; pk < P->rowptr[j + 1]; pk++) {
                        const ks_int q = pos[P->colind[pk]];
                        if (q < 0)
                            bad = 1;
                        else
                            Ac->val[q] += ra * P->val[pk];
                    }
                }
            }
            for (ks_int k = Ac->rowptr[i]; k < Ac->rowptr[i + 1]; k++)
                pos[Ac->colind[k]] = -1;
        }
        free(pos);
    }
    if (nomem)
        return ks_seterr(KS_ERR_MEMORY, "ks_csr_rap_numeric: out of host memory for %ld coarse columns",
                         (long)nc);
    *outside = bad;
    return KS_OK;
}
