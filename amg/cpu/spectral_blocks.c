/* The row-wise part of a distributed level's rho(D^-1 A) estimate on one
 * rank's blocks (the cpu table's spectral_prepare_blocks and
 * spectral_scale_start; the caller is mpi/amg_dist_smoother.c, the cuda
 * entries amg/cuda/spectral_blocks.cu): the diagonal, its checks and
 * signs, the bound ||D^-1 A||_inf, then the scaling and the start vector. */
#include "amg_cpu.h"
#include "../spectral_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>

static const char who[] = "ks_amg_spectral_prepare_blocks";

ks_error ks_amg_spectral_blocks_args(const ks_sparse *L, const ks_sparse *G, const double *d,
                                     const ks_spectral_prep *out)
{
    if (!L || !out)
        return ks_seterr(KS_ERR_ARG, "%s: NULL %s", who, L ? "output" : "matrix");
    if (L->nrows < 0 || L->nnz < 0 || !L->rowptr || (L->nnz > 0 && (!L->colind || !L->val)))
        return ks_seterr(KS_ERR_ARG, "%s: matrix is not allocated, has a negative size or no "
                         "values", who);
    if (L->nrows != L->ncols)
        return ks_seterr(KS_ERR_SIZE, "%s: matrix is %" PRId32 " x %" PRId32 ", expected square",
                         who, L->nrows, L->ncols);
    if (G && (G->nrows != L->nrows || G->ncols < 0 || G->nnz < 0 || !G->rowptr ||
              (G->nnz > 0 && (!G->colind || !G->val))))
        return ks_seterr(KS_ERR_ARG, "%s: the ghost block is not allocated, has no values or "
                         "does not have the owned block's %" PRId32 " rows", who, L->nrows);
    if (G && G->be != L->be)
        return ks_seterr(KS_ERR_ARG, "%s: the blocks live on different backends", who);
    if (!d && L->nrows > 0)
        return ks_seterr(KS_ERR_ARG, "%s: NULL diagonal", who);
    return KS_OK;
}

ks_error ks_amg_spectral_blocks_malformed(ks_int bad, int ghost)
{
    if (bad < 0)
        return ks_seterr(KS_ERR_ARG, "%s: the %s block's row pointers do not run from 0 to "
                         "nnz", who, ghost ? "ghost" : "owned");
    return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 " of the %s block has row pointers "
                     "outside [0, nnz] or decreasing, or a column outside the block", who, bad,
                     ghost ? "ghost" : "owned");
}

/* The cuda check's rule (amg/cuda/util.cu, ks_amg_cu_first_bad_row with no
 * flags): -1 when the row pointers do not span [0, nnz], else the first row
 * with pointers out of order or a column out of range, A->nrows if none. */
static ks_int first_bad_row(const ks_csr *A)
{
    if (A->rowptr[0] != 0 || A->rowptr[A->nrows] != A->nnz)
        return -1;
    ks_int bad = A->nrows;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (ks_int i = 0; i < A->nrows; i++) {
        const ks_int k0 = A->rowptr[i], k1 = A->rowptr[i + 1];
        int ok = k0 >= 0 && k0 <= k1 && k1 <= A->nnz;
        for (ks_int k = k0; ok && k < k1; k++)
            ok = A->colind[k] >= 0 && A->colind[k] < A->ncols;
        if (!ok && i < bad)
            bad = i;
    }
    return bad;
}

ks_error ks_amg_spectral_prepare_csr(const ks_csr *L, const ks_csr *G, int check, double *d,
                                     ks_spectral_prep *out)
{
    const ks_int n = L->nrows;
    if (check) {
        ks_int b = first_bad_row(L);
        if (b != n)
            return ks_amg_spectral_blocks_malformed(b, 0);
        if (G && (b = first_bad_row(G)) != n)
            return ks_amg_spectral_blocks_malformed(b, 1);
    }
    ks_int bad = n, pos = 0, neg = 0;
    double bound = 0.0;
#pragma omp parallel for schedule(static) reduction(min : bad) reduction(+ : pos, neg) \
    reduction(max : bound)
    for (ks_int i = 0; i < n; i++) {
        double di = 0.0;
        for (ks_int k = L->rowptr[i]; k < L->rowptr[i + 1]; k++)
            if (L->colind[k] == i)
                di = L->val[k];
        d[i] = di;
        pos += di > 0.0;
        neg += di < 0.0;
        if (di == 0.0 || !isfinite(di)) {
            if (i < bad)
                bad = i;
            continue;
        }
        double r = 0.0;
        for (ks_int k = L->rowptr[i]; k < L->rowptr[i + 1]; k++)
            r += fabs(L->val[k]);
        for (ks_int k = G ? G->rowptr[i] : 0; G && k < G->rowptr[i + 1]; k++)
            r += fabs(G->val[k]);
        const double q = r / fabs(di);
        if (q > bound) /* a NaN row sum is left out, as fmax leaves it */
            bound = q;
    }
    out->bad = bad;
    out->npos = pos;
    out->nneg = neg;
    out->bound = bound;
    return KS_OK;
}

void ks_amg_spectral_scale_start(ks_int n, ks_gint row_begin, int sym, double *d, double *start)
{
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++) {
        d[i] = sym ? 1.0 / sqrt(fabs(d[i])) : 1.0 / d[i];
        start[i] = ks_spectral_start((uint64_t)(row_begin + i));
    }
}

ks_int ks_amg_csr_find(const ks_csr *X, ks_int i, ks_int c)
{
    const ks_int a = X->rowptr[i], len = X->rowptr[i + 1] - a;
    const ks_int k = ks_lower_bound(X->colind + a, len, c);
    return k < len && X->colind[a + k] == c ? a + k : -1;
}

void ks_amg_symmetry_counts_csr(const ks_csr *L, const double *d, int64_t cnt[4])
{
    int64_t up = 0, low = 0, bad = 0, differ = 0;
#pragma omp parallel for schedule(static) reduction(+ : up, low, bad, differ)
    for (ks_int i = 0; i < L->nrows; i++) {
        for (ks_int k = L->rowptr[i]; k < L->rowptr[i + 1]; k++) {
            const ks_int j = L->colind[k];
            if (j < i) {
                low++;
            } else if (j > i) {
                up++;
                const ks_int kt = ks_amg_csr_find(L, j, i);
                bad += kt < 0 || !(fabs(L->val[k] - L->val[kt]) <=
                                   KS_SPEC_SYM_TOL * sqrt(fabs(d[i] * d[j])));
                differ += kt < 0 || L->val[k] != L->val[kt];
            }
        }
    }
    cnt[0] = up;
    cnt[1] = low;
    cnt[2] = bad;
    cnt[3] = differ;
}
