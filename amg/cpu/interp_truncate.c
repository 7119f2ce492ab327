/* Interpolation truncation (hypre's trunc_factor and P_max_elmts), in place.
 *
 * Per row: drop |w| < factor * max|w| (factor > 0), then keep the
 * max_elements largest |w| (ties: lower column first, so the result does not
 * depend on anything but the row), then scale the kept entries so the row
 * sum is what it was before (unless the kept sum is 0: left unscaled). The
 * row sum is kept because with zero-row-sum operators it is 1 and P must
 * still interpolate constants. hypre applies the two criteria one after the
 * other, rescaling after each; one rescale at the end gives the same row
 * except when the first stage alone would leave a zero sum.
 *
 * Pass 1 (row-parallel) compacts each row inside its own slot; pass 2 copies
 * the rows into right-sized arrays (row-parallel). The distributed rows
 * (mpi/prows_dist.c) run the same passes on their 64-bit columns, ties
 * broken by position in the row: their columns ascend, so it is the same
 * order, and one code path keeps them the serial rows by construction. */
#include "amg_cpu.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct cand {
    double mag;
    ks_int col;
    ks_int pos; /* offset in the row */
} cand;

/* Larger |w| first, then lower column. */
static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->mag != y->mag)
        return x->mag > y->mag ? -1 : 1;
    return (x->col > y->col) - (x->col < y->col);
}

static int cand_better(const cand *x, const cand *y)
{
    return cand_cmp(x, y) < 0;
}

/* The max_elements best candidates: for the usual small caps a running
 * top-k by insertion (O(m k), no callback), qsort otherwise. The order is
 * total (columns are distinct), so both give the same set. */
#define KS_TRUNC_TOPK_MAX 16

/* Which entries of one row of m entries survive: keep[k], and the scale
 * of the kept ones (*scale); returns the kept count (m: the row stays as
 * it is, keep unset). Ties between equal |w| go to the lower key[k], or
 * with key NULL to the lower position, which is the same order in a row
 * whose columns ascend. keep is scratch for m flags, cs for m candidates. */
static ks_int select_row(const ks_int *key, const double *v, ks_int m, int max_elements,
                         double factor, unsigned char *keep, cand *cs, double *scale)
{
    if (!(factor > 0.0) && m <= max_elements)
        return m; /* nothing can be dropped */
    double sum = 0.0, mx = 0.0;
    for (ks_int k = 0; k < m; k++) {
        sum += v[k];
        if (fabs(v[k]) > mx)
            mx = fabs(v[k]);
    }
    const double cut = factor * mx;
    ks_int nk = 0;
    for (ks_int k = 0; k < m; k++) {
        keep[k] = !(factor > 0.0 && fabs(v[k]) < cut);
        nk += keep[k];
    }
    if (max_elements > 0 && nk > max_elements) {
        if (max_elements <= KS_TRUNC_TOPK_MAX) {
            ks_int nt = 0; /* cs[0..nt) sorted best first */
            for (ks_int k = 0; k < m; k++) {
                if (!keep[k])
                    continue;
                cand c = {fabs(v[k]), key ? key[k] : k, k};
                keep[k] = 0;
                if (nt == max_elements && !cand_better(&c, &cs[nt - 1]))
                    continue;
                ks_int q = nt < max_elements ? nt++ : nt - 1;
                for (; q > 0 && cand_better(&c, &cs[q - 1]); q--)
                    cs[q] = cs[q - 1];
                cs[q] = c;
            }
            for (ks_int q = 0; q < nt; q++)
                keep[cs[q].pos] = 1;
        } else {
            ks_int nc = 0;
            for (ks_int k = 0; k < m; k++)
                if (keep[k])
                    cs[nc++] = (cand){fabs(v[k]), key ? key[k] : k, k};
            qsort(cs, (size_t)nc, sizeof *cs, cand_cmp);
            for (ks_int q = max_elements; q < nc; q++)
                keep[cs[q].pos] = 0;
        }
        nk = max_elements;
    }
    if (nk == m)
        return m; /* nothing dropped: the row is unchanged */
    double kept = 0.0;
    for (ks_int k = 0; k < m; k++)
        if (keep[k])
            kept += v[k];
    *scale = kept != 0.0 ? sum / kept : 1.0;
    return nk;
}

/* The kept entries of a row to its front, values scaled. */
#define KS_TRUNC_COMPACT(T, col, v, m, keep, scale)  \
    do {                                             \
        T *c_ = (T *)(col);                          \
        ks_int w_ = 0;                               \
        for (ks_int k_ = 0; k_ < (m); k_++)          \
            if ((keep)[k_]) {                        \
                c_[w_] = c_[k_];                     \
                (v)[w_] = (v)[k_] * (scale);         \
                w_++;                                \
            }                                        \
    } while (0)

/* Truncate one row in place; returns the kept count. */
static ks_int truncate_row(const ks_int *key, void *col, size_t csz, double *v, ks_int m,
                           int max_elements, double factor, unsigned char *keep, cand *cs)
{
    double scale = 1.0;
    const ks_int nk = select_row(key, v, m, max_elements, factor, keep, cs, &scale);
    if (nk == m)
        return m;
    if (csz == sizeof(ks_gint))
        KS_TRUNC_COMPACT(ks_gint, col, v, m, keep, scale);
    else
        KS_TRUNC_COMPACT(ks_int, col, v, m, keep, scale);
    return nk;
}

static ks_error check_params(int max_elements, double factor)
{
    if (max_elements < 0)
        return ks_seterr(KS_ERR_ARG, "ks_amg_interp_truncate: max_elements = %d must be >= 0 "
                         "(0: no limit)", max_elements);
    if (!(factor >= 0.0 && factor <= 1.0))
        return ks_seterr(KS_ERR_ARG, "ks_amg_interp_truncate: factor = %g must be in [0, 1] "
                         "(0: no drop)", factor);
    return KS_OK;
}

ks_error ks_amg_truncate_rows(ks_int n, ks_int *rp, void **colp, size_t csz, int col_keys,
                              double **valp, int max_elements, double factor)
{
    KS_TRY(check_params(max_elements, factor));
    if (csz != sizeof(ks_int) && (csz != sizeof(ks_gint) || col_keys))
        return ks_seterr(KS_ERR_ARG, "ks_amg_truncate_rows: columns of %zu bytes", csz);
    if (max_elements == 0 && factor == 0.0)
        return KS_OK;
    char *ci = *colp;
    double *va = *valp;
    const ks_int nnz = rp[n];

    ks_int maxlen = 0, bad = n;
#pragma omp parallel for schedule(static) reduction(max : maxlen) reduction(min : bad)
    for (ks_int i = 0; i < n; i++) {
        ks_int m = rp[i + 1] - rp[i];
        if (m < 0 && i < bad)
            bad = i;
        if (m > maxlen)
            maxlen = m;
    }
    if (bad < n)
        return ks_seterr(KS_ERR_ARG, "ks_amg_interp_truncate: decreasing rowptr at row %" PRId32,
                         bad);
    ks_int *newrp = ks_malloc(((size_t)n + 1) * sizeof *newrp, "truncation row pointers");
    if (!newrp)
        return KS_ERR_MEMORY;

    /* Scratch for every thread up front, so nothing is modified unless the
     * whole truncation can run. */
    int nt = 1;
#ifdef _OPENMP
    nt = omp_get_max_threads();
#endif
    const size_t slot = (size_t)maxlen + 1;
    unsigned char *keep = ks_malloc((size_t)nt * slot, "truncation flags");
    cand *cs = ks_malloc((size_t)nt * slot * sizeof *cs, "truncation candidates");
    if (!keep || !cs) {
        free(keep);
        free(cs);
        free(newrp);
        return KS_ERR_MEMORY;
    }
    /* Count pass: each row truncated inside its own slot. */
#pragma omp parallel for schedule(dynamic, 256) num_threads(nt)
    for (ks_int i = 0; i < n; i++) {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        newrp[i + 1] = truncate_row(col_keys ? (const ks_int *)ci + rp[i] : NULL,
                                    ci + (size_t)rp[i] * csz, csz, va + rp[i], rp[i + 1] - rp[i],
                                    max_elements, factor, keep + (size_t)t * slot,
                                    cs + (size_t)t * slot);
    }
    free(keep);
    free(cs);

    /* Row counts -> offsets, then the kept entries (at the front of each
     * old row) move into right-sized arrays, row-parallel. With one thread
     * (fresh arrays cost page faults that one thread does not win back), or
     * if those arrays cannot be had, the rows slide together in place. */
    const ks_int w = (ks_int)ks_rowptr_scan(newrp, n); /* at most nnz */
    if (w == nnz) {
        free(newrp); /* nothing dropped anywhere */
        return KS_OK;
    }
    char *c2 = nt > 1 ? malloc((size_t)(w ? w : 1) * csz) : NULL;
    double *v2 = nt > 1 ? malloc((size_t)(w ? w : 1) * sizeof *v2) : NULL;
    if (c2 && v2) {
#pragma omp parallel for schedule(static)
        for (ks_int i = 0; i < n; i++) {
            const ks_int m = newrp[i + 1] - newrp[i];
            memcpy(c2 + (size_t)newrp[i] * csz, ci + (size_t)rp[i] * csz, (size_t)m * csz);
            memcpy(v2 + newrp[i], va + rp[i], (size_t)m * sizeof *v2);
        }
        free(ci);
        free(va);
        *colp = c2;
        *valp = v2;
    } else {
        free(c2);
        free(v2);
        for (ks_int i = 0; i < n; i++) {
            const ks_int m = newrp[i + 1] - newrp[i];
            if (newrp[i] != rp[i] && m > 0) {
                memmove(ci + (size_t)newrp[i] * csz, ci + (size_t)rp[i] * csz, (size_t)m * csz);
                memmove(va + newrp[i], va + rp[i], (size_t)m * sizeof *va);
            }
        }
    }
    ks_memcpy_par(rp, newrp, ((size_t)n + 1) * sizeof *rp);
    free(newrp);
    if (*colp == ci && w > 0) { /* slid in place: shrink (keep the old block on failure) */
        char *c3 = realloc(ci, (size_t)w * csz);
        double *v3 = realloc(va, (size_t)w * sizeof *va);
        if (c3)
            *colp = c3;
        if (v3)
            *valp = v3;
    }
    return KS_OK;
}

ks_error ks_amg_interp_truncate(ks_csr *P, int max_elements, double factor)
{
    if (!P)
        return ks_seterr(KS_ERR_ARG, "ks_amg_interp_truncate: NULL matrix");
    KS_TRY(check_params(max_elements, factor));
    if (P->nrows < 0 || !P->rowptr || (P->nnz > 0 && (!P->colind || !P->val)) ||
        P->rowptr[0] != 0 || P->rowptr[P->nrows] != P->nnz)
        return ks_seterr(KS_ERR_ARG, "ks_amg_interp_truncate: matrix is not a valid CSR "
                         "(arrays missing or rowptr not from 0 to nnz)");
    void *col = P->colind;
    KS_TRY(ks_amg_truncate_rows(P->nrows, P->rowptr, &col, sizeof(ks_int), 1, &P->val,
                                max_elements, factor));
    P->colind = col;
    P->nnz = P->rowptr[P->nrows];
    return KS_OK;
}
