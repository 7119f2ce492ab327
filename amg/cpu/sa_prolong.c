/* Smoothed-aggregation prolongators: the tentative P0 from an aggregate map
 * and its damped-Jacobi smoothing P = (I - omega D^-1 A) P0.
 *
 * The smoothing uses A itself, not a filtered matrix (weak entries lumped
 * into the diagonal): the interface carries no strength information, and on
 * M-matrices such as Poisson problems the unfiltered operator is the
 * standard choice. P keeps every entry of the product's pattern, even one
 * that cancels to zero, so the pattern depends only on the patterns of A and
 * P0 (a re-setup with new values gives the same structure). */
#include "amg_cpu.h"
#include "../../core/row_sort.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many rows a parallel region costs more than it saves. */
#define KS_SA_PAR_ROWS 4096

ks_error ks_amg_tentative_prolongator(ks_int n, const ks_int *agg, ks_int na, ks_csr *P0)
{
    if (!P0)
        return ks_seterr(KS_ERR_ARG, "ks_amg_tentative_prolongator: NULL output");
    memset(P0, 0, sizeof *P0);
    if (n < 0 || na < 0)
        return ks_seterr(KS_ERR_ARG, "ks_amg_tentative_prolongator: negative size (n %" PRId32
                         ", aggregates %" PRId32 ")", n, na);
    if (n > 0 && !agg)
        return ks_seterr(KS_ERR_ARG, "ks_amg_tentative_prolongator: NULL aggregate array");
    ks_int *size = ks_calloc(na > 0 ? (size_t)na : 1, sizeof *size, "aggregate sizes");
    if (!size)
        return KS_ERR_MEMORY;
    ks_int nnz = 0;
    for (ks_int i = 0; i < n; i++) {
        ks_int a = agg[i];
        if (a < -1 || a >= na) {
            free(size);
            return ks_seterr(KS_ERR_ARG, "ks_amg_tentative_prolongator: agg[%" PRId32 "] = %"
                             PRId32 " outside [-1, %" PRId32 ")", i, a, na);
        }
        if (a >= 0) {
            size[a]++;
            nnz++;
        }
    }
    for (ks_int a = 0; a < na; a++)
        if (size[a] == 0) {
            free(size);
            return ks_seterr(KS_ERR_ARG, "ks_amg_tentative_prolongator: aggregate %" PRId32
                             " has no points (P0 would have a zero column)", a);
        }
    ks_csr T;
    ks_error e = ks_csr_alloc(&T, n, na, nnz);
    if (e != KS_OK) {
        free(size);
        return e;
    }
    /* agg[i] == -1 (a point left out) gives an empty row. */
    T.rowptr[0] = 0;
    for (ks_int i = 0; i < n; i++)
        T.rowptr[i + 1] = T.rowptr[i] + (agg[i] >= 0);
#pragma omp parallel for schedule(static) if (n > KS_SA_PAR_ROWS)
    for (ks_int i = 0; i < n; i++) {
        ks_int a = agg[i];
        if (a >= 0) {
            T.colind[T.rowptr[i]] = a;
            T.val[T.rowptr[i]] = 1.0 / sqrt((double)size[a]);
        }
    }
    free(size);
    *P0 = T;
    return KS_OK;
}

/* One sort for rows of distinct columns (core/row_sort.h). */
KS_ROW_SORT_DEFINE(sort_cols_, ks_int, KS_ROW_SORT_SELF)
#define sort_cols(c, n) sort_cols_((c), (size_t)(n))

static ks_int find_diag(const ks_csr *A, ks_int i)
{
    ks_int lo = A->rowptr[i], hi = A->rowptr[i + 1];
    while (lo < hi) {
        ks_int mid = lo + (hi - lo) / 2;
        if (A->colind[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < A->rowptr[i + 1] && A->colind[lo] == i ? lo : -1;
}

ks_error ks_amg_smooth_prolongator(const ks_csr *A, const ks_csr *P0, double rho, ks_csr *P)
{
    if (!A || !P0 || !P)
        return ks_seterr(KS_ERR_ARG, "ks_amg_smooth_prolongator: NULL %s",
                         !A ? "matrix" : !P0 ? "tentative prolongator" : "output");
    if (P == A || P == P0)
        return ks_seterr(KS_ERR_ARG, "ks_amg_smooth_prolongator: output aliases an input");
    if (!(rho > 0.0) || !isfinite(rho))
        return ks_seterr(KS_ERR_ARG, "ks_amg_smooth_prolongator: spectral radius %g "
                         "(expected a finite positive number)", rho);
    ks_error e = ks_csr_validate(A);
    if (e != KS_OK)
        return ks_adderr(e, "ks_amg_smooth_prolongator: A");
    e = ks_csr_validate(P0);
    if (e != KS_OK)
        return ks_adderr(e, "ks_amg_smooth_prolongator: P0");
    if (A->nrows != A->ncols || P0->nrows != A->nrows)
        return ks_seterr(KS_ERR_SIZE, "ks_amg_smooth_prolongator: A is %" PRId32 " x %" PRId32
                         ", P0 is %" PRId32 " x %" PRId32 " (expected square A and "
                         "P0 rows = A rows)", A->nrows, A->ncols, P0->nrows, P0->ncols);
    const ks_int n = A->nrows, nc = P0->ncols;
    const double omega = 4.0 / (3.0 * rho);

    /* scale[i] = omega / a_ii; the first zero or missing diagonal is named. */
    double *scale = ks_malloc(((size_t)n + 1) * sizeof *scale, "smoothing scale");
    ks_int *cnt = ks_malloc(((size_t)n + 1) * sizeof *cnt, "P row counts");
    int nt = 1;
#ifdef _OPENMP
    nt = omp_get_max_threads();
#endif
    ks_int *marker = ks_malloc(((size_t)nt * (size_t)nc + 1) * sizeof *marker, "P markers");
    if (!scale || !cnt || !marker) {
        free(scale);
        free(cnt);
        free(marker);
        return KS_ERR_MEMORY;
    }
    for (ks_int i = 0; i < n; i++) {
        ks_int k = find_diag(A, i);
        double d = k >= 0 ? A->val[k] : 0.0;
        if (d == 0.0) {
            free(scale);
            free(cnt);
            free(marker);
            return ks_seterr(KS_ERR_NUMERIC, "ks_amg_smooth_prolongator: row %" PRId32
                             " has a %s diagonal (Jacobi smoothing needs a_ii != 0)",
                             i, k >= 0 ? "zero" : "missing");
        }
        scale[i] = omega / d;
    }
    for (size_t t = 0; t < (size_t)nt * (size_t)nc; t++)
        marker[t] = -1;

    const ks_int *arp = A->rowptr, *aci = A->colind, *prp = P0->rowptr, *pci = P0->colind;
    const double *av = A->val, *pv = P0->val;

    /* Symbolic pass: distinct columns of row i = P0 row i united with the
     * P0 rows of i's neighbours (marker holds the last row that saw a column). */
#pragma omp parallel if (n > KS_SA_PAR_ROWS)
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        ks_int *mk = marker + (size_t)tid * (size_t)nc;
#pragma omp for schedule(static)
        for (ks_int i = 0; i < n; i++) {
            ks_int c = 0;
            for (ks_int q = prp[i]; q < prp[i + 1]; q++)
                if (mk[pci[q]] != i) {
                    mk[pci[q]] = i;
                    c++;
                }
            for (ks_int k = arp[i]; k < arp[i + 1]; k++) {
                ks_int j = aci[k];
                for (ks_int q = prp[j]; q < prp[j + 1]; q++)
                    if (mk[pci[q]] != i) {
                        mk[pci[q]] = i;
                        c++;
                    }
            }
            cnt[i] = c;
        }
    }
    int64_t total = 0;
    for (ks_int i = 0; i < n; i++) {
        ks_int c = cnt[i];
        cnt[i] = (ks_int)total;
        total += c;
    }
    if (total > INT32_MAX) {
        free(scale);
        free(cnt);
        free(marker);
        return ks_seterr(KS_ERR_SIZE, "ks_amg_smooth_prolongator: P would have %" PRId64
                         " nonzeros (more than a 32-bit index holds)", total);
    }
    ks_csr T;
    e = ks_csr_alloc(&T, n, nc, (ks_int)total);
    if (e != KS_OK) {
        free(scale);
        free(cnt);
        free(marker);
        return e;
    }
    memcpy(T.rowptr, cnt, (size_t)n * sizeof *cnt);
    T.rowptr[n] = (ks_int)total;
    free(cnt);

    /* Numeric pass: gather the row's columns, sort them, then accumulate in a
     * fixed order (P0 row i, then A row i in column order), so the values do
     * not depend on the thread count. A marker entry is trusted only when it
     * points inside this row at the same column, so stale values from the
     * symbolic pass or earlier rows are harmless. */
#pragma omp parallel if (n > KS_SA_PAR_ROWS)
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        ks_int *mk = marker + (size_t)tid * (size_t)nc;
#pragma omp for schedule(static)
        for (ks_int i = 0; i < n; i++) {
            const ks_int start = T.rowptr[i];
            ks_int end = start;
#define KS_SA_ADD_COL(col)                                                       \
    do {                                                                         \
        ks_int c_ = (col), p_ = mk[c_];                                          \
        if (p_ < start || p_ >= end || T.colind[p_] != c_) {                     \
            mk[c_] = end;                                                        \
            T.colind[end++] = c_;                                                \
        }                                                                        \
    } while (0)
            for (ks_int q = prp[i]; q < prp[i + 1]; q++)
                KS_SA_ADD_COL(pci[q]);
            for (ks_int k = arp[i]; k < arp[i + 1]; k++)
                for (ks_int q = prp[aci[k]]; q < prp[aci[k] + 1]; q++)
                    KS_SA_ADD_COL(pci[q]);
#undef KS_SA_ADD_COL
            sort_cols(T.colind + start, end - start);
            for (ks_int p = start; p < end; p++) {
                mk[T.colind[p]] = p;
                T.val[p] = 0.0;
            }
            for (ks_int q = prp[i]; q < prp[i + 1]; q++)
                T.val[mk[pci[q]]] += pv[q];
            const double s = scale[i];
            for (ks_int k = arp[i]; k < arp[i + 1]; k++) {
                const double w = s * av[k];
                const ks_int j = aci[k];
                for (ks_int q = prp[j]; q < prp[j + 1]; q++)
                    T.val[mk[pci[q]]] -= w * pv[q];
            }
        }
    }
    free(scale);
    free(marker);
    *P = T;
    return KS_OK;
}
