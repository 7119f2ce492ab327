/* The cpu table of sparse/sparse.h: each operation views its operands as
 * host CSRs (the cpu backend's memory is host memory) and calls the host
 * kernel of csr_kernels.h; results are adopted without a copy. */
#include "csr_kernels.h"
#include "../sparse.h"
#include "../../core/row_sort.h"
#include "../../matrices/csr_check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* merge.c */
ks_error ks_cpu_merge_blocks(const ks_sparse *L, const ks_sparse *G, ks_int nb, ks_sparse *M);

/* out (on be) takes the arrays of the host result H. */
static ks_error adopt(ks_backend *be, ks_error e, ks_csr *H, ks_sparse *out)
{
    if (e != KS_OK)
        return e;
    return ks_sparse_adopt_csr(be, H, out);
}

static ks_error cpu_transpose(const ks_sparse *A, ks_sparse *AT)
{
    ks_csr a = ks_sparse_as_csr(A), t;
    return adopt(A->be, ks_csr_transpose(&a, &t), &t, AT);
}

static ks_error cpu_spgemm(const ks_sparse *A, const ks_sparse *B, ks_sparse *C)
{
    ks_csr a = ks_sparse_as_csr(A), b = ks_sparse_as_csr(B), c;
    return adopt(A->be, ks_csr_spgemm(&a, &b, &c), &c, C);
}

static ks_error cpu_spgemm_numeric(const ks_sparse *A, const ks_sparse *B, ks_sparse *C)
{
    ks_csr a = ks_sparse_as_csr(A), b = ks_sparse_as_csr(B), c = ks_sparse_as_csr(C);
    return ks_csr_spgemm_numeric(&a, &b, &c);
}

static ks_error cpu_rap(const ks_sparse *R, const ks_sparse *A, const ks_sparse *P,
                        ks_sparse *Ac)
{
    ks_csr r = ks_sparse_as_csr(R), a = ks_sparse_as_csr(A), p = ks_sparse_as_csr(P), c;
    return adopt(A->be, ks_csr_rap(&r, &a, &p, &c), &c, Ac);
}

static ks_error cpu_rap_numeric(const ks_sparse *R, const ks_sparse *A, const ks_sparse *P,
                                ks_sparse *Ac, int *outside)
{
    ks_csr r = ks_sparse_as_csr(R), a = ks_sparse_as_csr(A), p = ks_sparse_as_csr(P);
    ks_csr c = ks_sparse_as_csr(Ac);
    return ks_csr_rap_numeric(&r, &a, &p, &c, outside);
}

static ks_error cpu_validate(const ks_sparse *A)
{
    ks_csr a = ks_sparse_as_csr(A);
    return ks_csr_check(&a, "invalid CSR", A->val != NULL);
}

typedef struct col_val {
    ks_int col;
    double val;
} col_val;
#define COL_VAL_KEY(x) ((x).col)
KS_ROW_SORT_DEFINE(sort_col_val, col_val, COL_VAL_KEY)
KS_ROW_SORT_DEFINE(sort_col, ks_int, KS_ROW_SORT_SELF)

static ks_error cpu_sort_rows(ks_sparse *A)
{
    ks_int maxlen = 0;
    for (ks_int i = 0; i < A->nrows; i++)
        if (A->rowptr[i + 1] - A->rowptr[i] > maxlen)
            maxlen = A->rowptr[i + 1] - A->rowptr[i];
    int nomem = 0;
#pragma omp parallel reduction(| : nomem)
    {
        col_val *t = A->val ? malloc(((size_t)maxlen + 1) * sizeof *t) : NULL;
        nomem = A->val && !t;
#pragma omp for schedule(dynamic, 256)
        for (ks_int i = 0; i < A->nrows; i++) {
            const ks_int k0 = A->rowptr[i], len = A->rowptr[i + 1] - k0;
            if (!A->val) {
                sort_col(A->colind + k0, (size_t)len);
                continue;
            }
            if (!t)
                continue;
            for (ks_int k = 0; k < len; k++)
                t[k] = (col_val){A->colind[k0 + k], A->val[k0 + k]};
            sort_col_val(t, (size_t)len);
            for (ks_int k = 0; k < len; k++) {
                A->colind[k0 + k] = t[k].col;
                A->val[k0 + k] = t[k].val;
            }
        }
        free(t);
    }
    if (nomem)
        return ks_seterr(KS_ERR_MEMORY, "sorting rows: out of host memory for a row of %ld",
                         (long)maxlen);
    return KS_OK;
}

static ks_error cpu_scale_rows(ks_sparse *A, const double *d)
{
#pragma omp parallel for schedule(static) if (A->nnz > 65536)
    for (ks_int i = 0; i < A->nrows; i++)
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            A->val[k] *= d[i];
    return KS_OK;
}

static ks_error cpu_diagonal(const ks_sparse *A, double *d)
{
#pragma omp parallel for schedule(static) if (A->nrows > 4096)
    for (ks_int i = 0; i < A->nrows; i++) {
        double v = 0.0;
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] == i) {
                v = A->val[k];
                break;
            }
        d[i] = v;
    }
    return KS_OK;
}

static ks_error cpu_offdiag_abs_sums(const ks_sparse *A, double *s)
{
#pragma omp parallel for schedule(static) if (A->nrows > 4096)
    for (ks_int i = 0; i < A->nrows; i++) {
        double v = 0.0;
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] != i)
                v += fabs(A->val[k]);
        s[i] = v;
    }
    return KS_OK;
}

static ks_error cpu_same_pattern(const ks_sparse *A, const ks_sparse *B, int *same)
{
    *same = A->nrows == B->nrows && A->ncols == B->ncols && A->nnz == B->nnz &&
            memcmp(A->rowptr, B->rowptr, sizeof(ks_int) * ((size_t)A->nrows + 1)) == 0 &&
            (A->nnz == 0 || memcmp(A->colind, B->colind, sizeof(ks_int) * (size_t)A->nnz) == 0);
    return KS_OK;
}

/* B's row r starts after F's rows before it and M's: F's first nb rows,
 * M's rows from F's nb-th entry on, F's other rows after M's entries. */
static ks_error cpu_stack_rows(const ks_sparse *M, const ks_int *tab, const ks_sparse *F, ks_int nb,
                               ks_sparse *B)
{
    const ks_int nm = M->nrows, n = B->nrows, gb = F->rowptr[nb], ob = gb + M->nnz;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (ks_int r = 0; r <= n; r++)
        B->rowptr[r] = r <= nb ? F->rowptr[r] : r <= nb + nm ? gb + M->rowptr[r - nb]
                                                               : ob + F->rowptr[r - nm] - gb;
    ks_int bad = -1;
#pragma omp parallel for schedule(static) reduction(max : bad) if (M->nnz > 65536)
    for (ks_int k = 0; k < M->nnz; k++) {
        const ks_int c = tab[M->colind[k]];
        B->colind[gb + k] = c;
        if (c < 0 || c >= B->ncols)
            bad = k > bad ? k : bad;
    }
    if (bad >= 0)
        return ks_seterr(KS_ERR_ARG, "sparse row stacking: entry %lld's column %lld goes to %lld, "
                         "outside 0 .. %lld", (long long)bad, (long long)M->colind[bad],
                         (long long)tab[M->colind[bad]], (long long)B->ncols - 1);
    memcpy(B->colind, F->colind, (size_t)gb * sizeof *B->colind);
    memcpy(B->colind + ob, F->colind + gb, (size_t)(F->nnz - gb) * sizeof *B->colind);
    if (B->val) {
        memcpy(B->val, F->val, (size_t)gb * sizeof *B->val);
        ks_memcpy_par(B->val + gb, M->val, (size_t)M->nnz * sizeof *B->val);
        memcpy(B->val + ob, F->val + gb, (size_t)(F->nnz - gb) * sizeof *B->val);
    }
    return KS_OK;
}

static ks_error cpu_extract_rows(const ks_sparse *A, const ks_int *idx, ks_int n, ks_sparse *B)
{
    int64_t nnz = 0;
    for (ks_int q = 0; q < n; q++) {
        if (idx[q] < 0 || idx[q] >= A->nrows)
            return ks_seterr(KS_ERR_ARG, "sparse row extraction: row %lld of %lld asked for "
                             "(entry %lld)", (long long)idx[q], (long long)A->nrows, (long long)q);
        nnz += A->rowptr[idx[q] + 1] - A->rowptr[idx[q]];
    }
    if (nnz > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "sparse row extraction: %lld entries (more than 2^31)",
                         (long long)nnz);
    KS_TRY(ks_sparse_alloc(A->be, n, A->ncols, (ks_int)nnz, !A->val, B));
    B->rowptr[0] = 0;
    for (ks_int q = 0; q < n; q++)
        B->rowptr[q + 1] = B->rowptr[q] + A->rowptr[idx[q] + 1] - A->rowptr[idx[q]];
#pragma omp parallel for schedule(static) if (nnz > 65536)
    for (ks_int q = 0; q < n; q++) {
        const ks_int a = A->rowptr[idx[q]], len = B->rowptr[q + 1] - B->rowptr[q];
        memcpy(B->colind + B->rowptr[q], A->colind + a, (size_t)len * sizeof *B->colind);
        if (B->val)
            memcpy(B->val + B->rowptr[q], A->val + a, (size_t)len * sizeof *B->val);
    }
    return KS_OK;
}

static ks_error cpu_mark_cols(const ks_sparse *T, unsigned char *used, int *unsorted)
{
    ks_csr t = ks_sparse_as_csr(T);
    return ks_csr_mark_cols(&t, used, unsorted);
}

static ks_error cpu_split_cols(const ks_sparse *T, ks_int nb, ks_int nown, const ks_int *gnum,
                               ks_int nghost, ks_sparse *L, ks_sparse *G, ks_int *nonfinite)
{
    ks_csr t = ks_sparse_as_csr(T), l, g;
    KS_TRY(ks_csr_split_cols(&t, nb, nown, gnum, nghost, &l, &g, nonfinite));
    ks_error e = ks_sparse_adopt_csr(T->be, &l, L);
    if (e == KS_OK)
        e = ks_sparse_adopt_csr(T->be, &g, G);
    ks_csr_free(&l);
    ks_csr_free(&g);
    return e;
}

/* A pass over the row pointers for the lengths, on all threads; then,
 * where the caller could use them (ks_sparse_stats_max_ndiag, max_row
 * within it), the occupied diagonals in a bitmap over the nrows + ncols - 1
 * offsets col - row, counted afterwards. Integer sums: exact, thread-count
 * independent. */
void ks_csr_row_stats(const ks_csr *A, double dia_max_fill, ks_sparse_stats *s)
{
    memset(s, 0, sizeof *s);
    s->nrows = A->nrows;
    s->ncols = A->ncols;
    s->nnz = A->nnz;
    s->ndiag = -1;
    if (A->nrows <= 0)
        return;
    uint64_t sum = 0, sum2 = 0;
    ks_int max_row = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum, sum2) reduction(max : max_row) \
    if (A->nrows > 200000)
    for (ks_int i = 0; i < A->nrows; i++) {
        ks_int len = A->rowptr[i + 1] - A->rowptr[i];
        sum += (uint64_t)len;
        sum2 += (uint64_t)len * (uint64_t)len;
        if (len > max_row)
            max_row = len;
    }
    s->max_row = max_row;
    s->sum = sum;
    s->sum2 = sum2;
    const int64_t most = ks_sparse_stats_max_ndiag(A->nrows, A->ncols, A->nnz, dia_max_fill);
    if (most < 0 || max_row > most)
        return; /* no fill within dia_max_fill is possible */
    int64_t noff = (int64_t)A->nrows + A->ncols - 1;
    size_t words = (size_t)((noff + 63) / 64);
    uint64_t *occupied = calloc(words, sizeof *occupied);
    if (!occupied)
        return; /* not counted */
#pragma omp parallel for schedule(static) if (A->nnz > 200000)
    for (ks_int i = 0; i < A->nrows; i++) {
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            int64_t off = (int64_t)A->colind[k] - i + (A->nrows - 1);
            uint64_t bit = (uint64_t)1 << (off & 63), word;
#pragma omp atomic read
            word = occupied[off >> 6];
            if (!(word & bit)) {
#pragma omp atomic update
                occupied[off >> 6] |= bit;
            }
        }
    }
    int64_t ndiag = 0;
    for (size_t w = 0; w < words; w++)
        ndiag += __builtin_popcountll(occupied[w]);
    free(occupied);
    s->ndiag = ndiag;
}

static ks_error cpu_row_stats(const ks_sparse *A, double dia_max_fill, ks_sparse_stats *st)
{
    ks_csr a = ks_sparse_as_csr(A);
    ks_csr_row_stats(&a, dia_max_fill, st);
    return KS_OK;
}

const ks_sparse_ops ks_sparse_cpu_ops = {
    .backend = KS_BACKEND_CPU,
    .transpose = cpu_transpose,
    .spgemm = cpu_spgemm,
    .spgemm_numeric = cpu_spgemm_numeric,
    .rap = cpu_rap,
    .rap_numeric = cpu_rap_numeric,
    .validate = cpu_validate,
    .sort_rows = cpu_sort_rows,
    .scale_rows = cpu_scale_rows,
    .diagonal = cpu_diagonal,
    .offdiag_abs_sums = cpu_offdiag_abs_sums,
    .same_pattern = cpu_same_pattern,
    .row_stats = cpu_row_stats,
    .stack_rows = cpu_stack_rows,
    .extract_rows = cpu_extract_rows,
    .mark_cols = cpu_mark_cols,
    .split_cols = cpu_split_cols,
    .merge_blocks = ks_cpu_merge_blocks,
};
