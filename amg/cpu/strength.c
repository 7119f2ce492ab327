/* Strength of connection: the classical (Ruge-Stueben, hypre sign
 * convention) and the symmetric (aggregation) measures, the transpose of a
 * pattern, and its structure check. Each builder counts strong entries per
 * row, takes the prefix sum, then fills: row-parallel and deterministic,
 * and the rows come out sorted because A's rows are. */
#include "coarsen_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

void ks_strength_free(ks_strength *S)
{
    if (!S)
        return;
    free(S->rowptr);
    free(S->colind);
    memset(S, 0, sizeof *S);
}

static ks_error check_csr(const ks_csr *A, const char *who)
{
    if (!A)
        return ks_seterr(KS_ERR_ARG, "%s: NULL matrix", who);
    if (A->nrows < 0 || A->nnz < 0 || !A->rowptr || (A->nnz > 0 && (!A->colind || !A->val)))
        return ks_seterr(KS_ERR_ARG, "%s: matrix is not allocated or has a negative size", who);
    if (A->nrows != A->ncols)
        return ks_seterr(KS_ERR_SIZE, "%s: matrix is %" PRId32 " x %" PRId32 ", expected square",
                         who, A->nrows, A->ncols);
    if (A->rowptr[0] != 0 || A->rowptr[A->nrows] != A->nnz)
        return ks_seterr(KS_ERR_ARG, "%s: row pointers span [%" PRId32 ", %" PRId32
                         "], expected [0, nnz = %" PRId32 "]", who, A->rowptr[0],
                         A->rowptr[A->nrows], A->nnz);
    ks_int n = A->nrows, bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (ks_int i = 0; i < n; i++) {
        int ok = A->rowptr[i] <= A->rowptr[i + 1];
        for (ks_int k = A->rowptr[i]; ok && k < A->rowptr[i + 1]; k++)
            ok = A->colind[k] >= 0 && A->colind[k] < n;
        if (!ok && i < bad)
            bad = i;
    }
    if (bad < n)
        return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 " has decreasing row pointers or a "
                         "column index outside [0, %" PRId32 ")", who, bad, n);
    return KS_OK;
}

ks_error ks_strength_check(const ks_strength *S, const char *who)
{
    if (!S)
        return ks_seterr(KS_ERR_ARG, "%s: NULL strength pattern", who);
    ks_int n = S->n;
    if (n < 0 || !S->rowptr || (S->rowptr[n] > 0 && !S->colind))
        return ks_seterr(KS_ERR_ARG, "%s: strength pattern is not allocated or has a negative "
                         "size", who);
    if (S->rowptr[0] != 0)
        return ks_seterr(KS_ERR_ARG, "%s: strength pattern row pointers start at %" PRId32,
                         who, S->rowptr[0]);
    ks_int bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (ks_int i = 0; i < n; i++) {
        int ok = S->rowptr[i] <= S->rowptr[i + 1];
        for (ks_int k = S->rowptr[i]; ok && k < S->rowptr[i + 1]; k++)
            ok = S->colind[k] >= 0 && S->colind[k] < n && S->colind[k] != i;
        if (!ok && i < bad)
            bad = i;
    }
    if (bad < n)
        return ks_seterr(KS_ERR_ARG, "%s: strength row %" PRId32 " has decreasing row pointers, "
                         "a column outside [0, %" PRId32 ") or its own index", who, bad, n);
    return KS_OK;
}

/* Rows hold counts at rowptr[i+1]; turn them into offsets and allocate
 * colind. */
static ks_error finish_counts(ks_strength *S, const char *who)
{
    ks_rowptr_scan(S->rowptr, S->n); /* a row's count is at most n */
    S->colind = ks_malloc((size_t)S->rowptr[S->n] * sizeof *S->colind, who);
    return S->colind ? KS_OK : KS_ERR_MEMORY;
}

static ks_error start_pattern(ks_strength *S, ks_int n, const char *who)
{
    S->n = n;
    S->rowptr = ks_calloc((size_t)n + 1, sizeof *S->rowptr, who);
    return S->rowptr ? KS_OK : KS_ERR_MEMORY;
}

/* ------------------------------------------------------------ classical */

/* Threshold of row i: strong entries are the j != i with v = -s a_ij > 0
 * and v >= *cut, s = sign(a_ii) with a zero (or missing) diagonal counted
 * as positive, as hypre does (only the sign is used, so nothing divides).
 * Returns 0 when the row has no strong entries at all. */
static int classical_cut(const ks_csr *A, ks_int i, double theta, double max_row_sum,
                         double *s_out, double *cut)
{
    const ks_int k0 = A->rowptr[i], k1 = A->rowptr[i + 1];
    double diag = 0.0, rowsum = 0.0, scale = 0.0;
    for (ks_int k = k0; k < k1; k++) {
        rowsum += A->val[k];
        if (A->colind[k] == i)
            diag += A->val[k];
    }
    const double s = diag < 0.0 ? -1.0 : 1.0;
    for (ks_int k = k0; k < k1; k++)
        if (A->colind[k] != i && -s * A->val[k] > scale)
            scale = -s * A->val[k];
    /* Nothing of the right sign, or a row far from a zero row sum (hypre's
     * max_row_sum: such rows are nearly diagonal and need no coarse help). */
    if (!(scale > 0.0) || (max_row_sum < 1.0 && fabs(rowsum) > max_row_sum * fabs(diag)))
        return 0;
    *s_out = s;
    *cut = theta * scale;
    return 1;
}

/* Strong entries of row i for sign s and threshold cut (written to out
 * when non-NULL); returns their count. */
static ks_int classical_pick(const ks_csr *A, ks_int i, double s, double cut, ks_int *out)
{
    ks_int cnt = 0;
    for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
        const double v = -s * A->val[k];
        if (A->colind[k] != i && v > 0.0 && v >= cut) {
            if (out)
                out[cnt] = A->colind[k];
            cnt++;
        }
    }
    return cnt;
}

ks_error ks_amg_strength_classical(const ks_csr *A, double theta, double max_row_sum,
                                   ks_strength *S)
{
    static const char who[] = "ks_amg_strength_classical";
    if (!S)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(S, 0, sizeof *S);
    if (!(theta >= 0.0 && theta <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: strength_threshold = %g, expected a value in [0, 1]",
                         who, theta);
    if (!(max_row_sum > 0.0 && max_row_sum <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: max_row_sum = %g, expected a value in (0, 1] "
                         "(1 disables the test)", who, max_row_sum);
    KS_TRY(check_csr(A, who));
    ks_int n = A->nrows;
    KS_TRY(start_pattern(S, n, "strength row pointers"));
    /* Pass 1 keeps each row's sign and threshold, so pass 2 only filters. */
    double *rs = ks_malloc(2 * ((size_t)n + 1) * sizeof *rs, "strength row thresholds");
    if (!rs) {
        ks_strength_free(S);
        return KS_ERR_MEMORY;
    }
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++) {
        double sg = 1.0, cut = 0.0;
        ks_int c = 0;
        if (classical_cut(A, i, theta, max_row_sum, &sg, &cut))
            c = classical_pick(A, i, sg, cut, NULL);
        rs[2 * (size_t)i] = sg;
        rs[2 * (size_t)i + 1] = cut;
        S->rowptr[i + 1] = c;
    }
    ks_error e = finish_counts(S, "strength columns");
    if (e != KS_OK) {
        free(rs);
        ks_strength_free(S);
        return e;
    }
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++)
        if (S->rowptr[i + 1] > S->rowptr[i])
            classical_pick(A, i, rs[2 * (size_t)i], rs[2 * (size_t)i + 1],
                           S->colind + S->rowptr[i]);
    free(rs);
    return KS_OK;
}

/* ------------------------------------------------------------ symmetric */

static ks_int symmetric_row(const ks_csr *A, ks_int i, double theta, const double *sqd,
                            ks_int *out)
{
    ks_int cnt = 0;
    for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
        ks_int j = A->colind[k];
        double a = fabs(A->val[k]);
        /* sqrt of each diagonal separately: a_ii * a_jj could overflow. */
        if (j != i && a > 0.0 && a >= theta * sqd[i] * sqd[j]) {
            if (out)
                out[cnt] = j;
            cnt++;
        }
    }
    return cnt;
}

ks_error ks_amg_strength_symmetric(const ks_csr *A, double theta, ks_strength *S)
{
    static const char who[] = "ks_amg_strength_symmetric";
    if (!S)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(S, 0, sizeof *S);
    if (!(theta >= 0.0 && theta <= 1.0))
        return ks_seterr(KS_ERR_ARG, "%s: strength_threshold = %g, expected a value in [0, 1]",
                         who, theta);
    KS_TRY(check_csr(A, who));
    ks_int n = A->nrows, zero = n;
    double *sqd = ks_malloc((size_t)n * sizeof *sqd, "sqrt|diag|");
    if (!sqd)
        return KS_ERR_MEMORY;
#pragma omp parallel for schedule(static) reduction(min : zero)
    for (ks_int i = 0; i < n; i++) {
        double d = 0.0;
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] == i)
                d += A->val[k];
        sqd[i] = sqrt(fabs(d));
        if (d == 0.0 && i < zero)
            zero = i;
    }
    if (zero < n) {
        free(sqd);
        return ks_seterr(KS_ERR_NUMERIC, "%s: zero diagonal at row %" PRId32
                         " (the symmetric measure divides by sqrt|a_ii a_jj|)", who, zero);
    }
    ks_error e = start_pattern(S, n, "strength row pointers");
    if (e == KS_OK) {
#pragma omp parallel for schedule(static)
        for (ks_int i = 0; i < n; i++)
            S->rowptr[i + 1] = symmetric_row(A, i, theta, sqd, NULL);
        e = finish_counts(S, "strength columns");
    }
    if (e == KS_OK) {
#pragma omp parallel for schedule(static)
        for (ks_int i = 0; i < n; i++)
            symmetric_row(A, i, theta, sqd, S->colind + S->rowptr[i]);
    } else {
        ks_strength_free(S);
    }
    free(sqd);
    return e;
}

/* ------------------------------------------------------------ transpose */

/* Below this many entries one block (serial) beats the extra histogram
 * pass and fork/join. */
#define KS_STRENGTH_TRANSPOSE_PAR_NNZ 32768

/* Counting sort by column, rows cut into nb contiguous blocks with one
 * column histogram each (as in transpose.c): blocks and the rows inside a
 * block go in ascending order, so every transposed row comes out sorted and
 * the same for any nb. nb is one per thread, fewer when the histograms
 * (nb * n counters) would outweigh the pattern. */
ks_error ks_strength_transpose_unchecked(const ks_strength *S, ks_strength *ST)
{
    memset(ST, 0, sizeof *ST);
    const ks_int n = S->n, nnz = S->rowptr[n];
    KS_TRY(start_pattern(ST, n, "transposed strength row pointers"));
    ST->colind = ks_malloc(((size_t)nnz + 1) * sizeof *ST->colind, "transposed strength columns");
    if (!ST->colind) {
        ks_strength_free(ST);
        return KS_ERR_MEMORY;
    }
    int nb = 1;
#ifdef _OPENMP
    if (nnz > KS_STRENGTH_TRANSPOSE_PAR_NNZ) {
        const int64_t cap = (int64_t)nnz / ((int64_t)n + 1);
        nb = omp_get_max_threads();
        if (cap < nb)
            nb = cap < 1 ? 1 : (int)cap;
    }
#endif
    const size_t n1 = (size_t)n + 1;
    ks_int *hist = ks_calloc((size_t)nb * n1, sizeof *hist, "strength transpose histograms");
    if (!hist) {
        ks_strength_free(ST);
        return KS_ERR_MEMORY;
    }
    ks_int *trp = ST->rowptr;
#pragma omp parallel num_threads(nb) if (nb > 1)
    {
#pragma omp for schedule(static)
        for (int b = 0; b < nb; b++) {
            const ks_int lo = (ks_int)((int64_t)n * b / nb), hi = (ks_int)((int64_t)n * (b + 1) / nb);
            ks_int *h = hist + (size_t)b * n1;
            for (ks_int k = S->rowptr[lo]; k < S->rowptr[hi]; k++)
                h[S->colind[k]]++;
        }
        /* Per column: block counts -> offsets within the column. */
#pragma omp for schedule(static)
        for (ks_int c = 0; c < n; c++) {
            ks_int run = 0;
            for (int b = 0; b < nb; b++) {
                ks_int *h = hist + (size_t)b * n1 + c;
                const ks_int t = *h;
                *h = run;
                run += t;
            }
            trp[c + 1] = run;
        }
#pragma omp single
        for (ks_int c = 0; c < n; c++)
            trp[c + 1] += trp[c];
#pragma omp for schedule(static)
        for (int b = 0; b < nb; b++) {
            const ks_int lo = (ks_int)((int64_t)n * b / nb), hi = (ks_int)((int64_t)n * (b + 1) / nb);
            ks_int *h = hist + (size_t)b * n1;
            for (ks_int i = lo; i < hi; i++)
                for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++) {
                    const ks_int c = S->colind[k];
                    ST->colind[trp[c] + h[c]++] = i;
                }
        }
    }
    free(hist);
    return KS_OK;
}

ks_error ks_strength_transpose(const ks_strength *S, ks_strength *ST)
{
    static const char who[] = "ks_strength_transpose";
    if (!ST || ST == S)
        return ks_seterr(KS_ERR_ARG, "%s: %s", who, ST ? "output is the input" : "NULL output");
    memset(ST, 0, sizeof *ST);
    KS_TRY(ks_strength_check(S, who));
    return ks_strength_transpose_unchecked(S, ST);
}
