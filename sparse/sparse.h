/* Sparse matrices on a backend: a CSR whose arrays live in the backend's
 * memory (host memory for cpu, device memory for cuda), and the sparse
 * operations the AMG setup needs, declared once here and implemented once
 * per backend (sparse/cpu/, sparse/cuda/), found through the backend the
 * matrix lives on. Callers never ask where the arrays are.
 *
 * ks_sparse is the setup's working type (strength graphs, interpolation,
 * Galerkin products); ks_matrix (spmv/) wraps one with an SpMV format for
 * the solve. Not installed. */
#ifndef KS_SPARSE_H
#define KS_SPARSE_H

#include "../vec/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks_sparse {
    ks_backend *be;  /* where the arrays live */
    ks_int nrows, ncols, nnz;
    ks_int *rowptr;  /* nrows + 1 */
    ks_int *colind;  /* nnz; sorted and unique within each row */
    double *val;     /* nnz; NULL for a pattern (a strength graph) */
    unsigned char valid; /* 1: the structure is known good (checked by ks_matrix_create,
                          * or made by an AMG setup step), so the device steps skip their
                          * structure checks of it; 0 (any new or hand-made CSR): checked */
    unsigned char flags; /* KS_SPARSE_*: what the step that made the structure vouches for
                          * beyond valid (read only with valid set); 0: nothing */
} ks_sparse;

/* ks_sparse.flags. */
enum {
    KS_SPARSE_NO_DIAG = 1 /* no row stores its diagonal entry (strength graphs) */
};

/* The operations, one table per backend kind. An entry may be NULL where
 * the backend lacks it: the ks_sparse_* call then fails with
 * KS_ERR_UNSUPPORTED naming the operation and the backend. Every output
 * lives on its inputs' backend. */
/* Row-length and band statistics (the SpMV format choice reads them):
 * integer sums, so the same on every backend and thread count. */
typedef struct ks_sparse_stats {
    ks_int nrows, ncols, nnz;
    ks_int max_row;
    uint64_t sum, sum2; /* of the row lengths and their squares */
    int64_t ndiag;      /* occupied diagonals (col - row offsets); -1 when not counted */
} ks_sparse_stats;

/* The statistics count the occupied diagonals (a pass over every column
 * index and a bitmap) only where the caller could use them: for a DIA fill
 * ndiag * nrows / nnz (in doubles, as the caller computes it) of at most
 * dia_max_fill (<= 0: never counted). This is the most diagonals such a
 * fill allows for a matrix of that shape, or -1 when the lower bound
 * ceil(nnz / min(nrows, ncols)) (a diagonal holds at most that many
 * entries) exceeds it already. The other bound, max_row <= ndiag (a row's
 * columns are distinct diagonals), is the statistics' own test. */
int64_t ks_sparse_stats_max_ndiag(ks_int nrows, ks_int ncols, ks_int nnz, double dia_max_fill);

typedef struct ks_sparse_ops {
    ks_backend_kind backend;
    /* AT = A^T, rows sorted (a pattern when A has no values). */
    ks_error (*transpose)(const ks_sparse *A, ks_sparse *AT);
    /* C = A B: symbolic pass (row sizes), exact allocation, numeric pass;
     * sorted columns, a fixed summation order (the same bits every run). */
    ks_error (*spgemm)(const ks_sparse *A, const ks_sparse *B, ks_sparse *C);
    /* Numeric pass only, into C's existing pattern (re-setup); an entry of
     * A B outside it is KS_ERR_ARG. */
    ks_error (*spgemm_numeric)(const ks_sparse *A, const ks_sparse *B, ks_sparse *C);
    /* Ac = R A P (the Galerkin product). */
    ks_error (*rap)(const ks_sparse *R, const ks_sparse *A, const ks_sparse *P, ks_sparse *Ac);
    /* Ac's values from R A P into Ac's pattern; *outside = 1 (and Ac
     * unspecified) when the product has an entry outside it. */
    ks_error (*rap_numeric)(const ks_sparse *R, const ks_sparse *A, const ks_sparse *P,
                            ks_sparse *Ac, int *outside);
    /* Structure (rowptr monotone from 0 to nnz, columns in range, sorted
     * and unique) and finite values; the message names the first bad row. */
    ks_error (*validate)(const ks_sparse *A);
    /* Sort each row's columns, values following (input of any order, no
     * duplicates). */
    ks_error (*sort_rows)(ks_sparse *A);
    /* A = diag(d) A: row i scaled by d[i] (d on A's backend). */
    ks_error (*scale_rows)(ks_sparse *A, const double *d);
    /* d[i] = a_ii (0 where row i stores no diagonal); d on A's backend. */
    ks_error (*diagonal)(const ks_sparse *A, double *d);
    /* s[i] = sum_{j != i} |a_ij| (the l1 smoothers' off-diagonal part). */
    ks_error (*offdiag_abs_sums)(const ks_sparse *A, double *s);
    /* *same = 1 when A and B have the same shape, rowptr and colind. */
    ks_error (*same_pattern)(const ks_sparse *A, const ks_sparse *B, int *same);
    /* Row statistics (ks_sparse_stats; ndiag as ks_sparse_stats_max_ndiag
     * says). */
    ks_error (*row_stats)(const ks_sparse *A, double dia_max_fill, ks_sparse_stats *st);
    /* Fill B (allocated by ks_sparse_stack_rows) with F's rows 0 .. nb - 1,
     * then M's rows with column c as tab[c], then F's rows nb and on. */
    ks_error (*stack_rows)(const ks_sparse *M, const ks_int *tab, const ks_sparse *F, ks_int nb,
                           ks_sparse *B);
    /* B = A's rows idx[0 .. n) (made here, B's be and ncols set). */
    ks_error (*extract_rows)(const ks_sparse *A, const ks_int *idx, ks_int n, ks_sparse *B);
    /* used[c] (T->ncols bytes on T's backend) = 1 where an entry uses
     * column c, else 0; *unsorted (host) = 1 when a row does not ascend. */
    ks_error (*mark_cols)(const ks_sparse *T, unsigned char *used, int *unsorted);
    /* L and G made (see ks_sparse_split_cols); *nonfinite on the host. */
    ks_error (*split_cols)(const ks_sparse *T, ks_int nb, ks_int nown, const ks_int *gnum,
                           ks_int nghost, ks_sparse *L, ks_sparse *G, ks_int *nonfinite);
    /* Fill M (allocated by ks_sparse_merge_blocks) with L and G (may be
     * NULL) merged. */
    ks_error (*merge_blocks)(const ks_sparse *L, const ks_sparse *G, ks_int nb, ks_sparse *M);
} ks_sparse_ops;

/* The table of be's kind (never NULL for a backend of this build). */
const ks_sparse_ops *ks_sparse_ops_of(const ks_backend *be);

/* ------------------------------------------------------ memory and copies */
/* Arrays for nrows x ncols with nnz entries on be; values unless pattern. */
ks_error ks_sparse_alloc(ks_backend *be, ks_int nrows, ks_int ncols, ks_int nnz, int pattern,
                         ks_sparse *A);
void ks_sparse_free(ks_sparse *A);
/* Bytes A's arrays take. */
double ks_sparse_bytes(const ks_sparse *A);
/* A copy of host CSR H on be (its values too unless pattern). */
ks_error ks_sparse_from_csr(ks_backend *be, const ks_csr *H, int pattern, ks_sparse *A);
/* A new host CSR with A's arrays (val NULL for a pattern). */
ks_error ks_sparse_to_csr(const ks_sparse *A, ks_csr *H);
/* A copy of A on be (the same backend or another one). */
ks_error ks_sparse_copy(const ks_sparse *A, ks_backend *be, ks_sparse *B);
/* Move A to be: a copy there, then A's arrays are freed (nothing happens
 * when A is on be already). */
ks_error ks_sparse_move(ks_sparse *A, ks_backend *be);
/* Host memory backends only (ks_backend_host_memory): H viewed as A on be
 * without copying (the arrays stay H's), and A viewed as a host CSR. */
ks_sparse ks_sparse_view_csr(ks_backend *be, const ks_csr *H);
ks_csr ks_sparse_as_csr(const ks_sparse *A);
/* Host memory backends only: A takes H's arrays (H is emptied). */
ks_error ks_sparse_adopt_csr(ks_backend *be, ks_csr *H, ks_sparse *A);

/* ------------------------------------------------------------ operations */
/* Each calls A's backend's table (see ks_sparse_ops), after checking that
 * the operands share a backend and their shapes agree. */
ks_error ks_sparse_transpose(const ks_sparse *A, ks_sparse *AT);
ks_error ks_sparse_spgemm(const ks_sparse *A, const ks_sparse *B, ks_sparse *C);
ks_error ks_sparse_spgemm_numeric(const ks_sparse *A, const ks_sparse *B, ks_sparse *C);
ks_error ks_sparse_rap(const ks_sparse *R, const ks_sparse *A, const ks_sparse *P, ks_sparse *Ac);
ks_error ks_sparse_rap_numeric(const ks_sparse *R, const ks_sparse *A, const ks_sparse *P,
                               ks_sparse *Ac, int *outside);
ks_error ks_sparse_validate(const ks_sparse *A);
ks_error ks_sparse_sort_rows(ks_sparse *A);
ks_error ks_sparse_scale_rows(ks_sparse *A, const double *d);
ks_error ks_sparse_diagonal(const ks_sparse *A, double *d);
ks_error ks_sparse_offdiag_abs_sums(const ks_sparse *A, double *s);
ks_error ks_sparse_same_pattern(const ks_sparse *A, const ks_sparse *B, int *same);
/* B = F's first nb rows, M's rows with column c renumbered tab[c], F's
 * other rows: the rows a distributed product's local part multiplies (A
 * P's own rows where the first product left them, the rows fetched from
 * other ranks around them), stacked where M lives without a host copy.
 * M, tab and F on one backend (tab: M->ncols entries; those M's entries
 * use in [0, ncols), F's columns too); B gets ncols columns, values where
 * both have them (a pattern where neither has), and is made here. A
 * monotone tab keeps sorted rows sorted. */
ks_error ks_sparse_stack_rows(const ks_sparse *M, const ks_int *tab, const ks_sparse *F, ks_int nb,
                              ks_int ncols, ks_sparse *B);
/* B = A's rows idx[0], ..., idx[n - 1] in that order (repeats allowed),
 * where A lives: the few rows of a product other ranks fetch, without the
 * whole product copied to the host. idx on A's backend, each in
 * [0, A->nrows) (a promise: not checked on the device). */
ks_error ks_sparse_extract_rows(const ks_sparse *A, const ks_int *idx, ks_int n, ks_sparse *B);
/* Which of T's columns its entries use: used (T->ncols bytes on T's
 * backend) gets 1 for those, 0 for the others; *unsorted = 1 when some
 * row's columns do not strictly ascend. */
ks_error ks_sparse_mark_cols(const ks_sparse *T, unsigned char *used, int *unsorted);
/* T's columns split in two blocks where T lives: columns nb .. nb + nown - 1
 * into L (T->nrows x nown, column c - nb), every other column c into G
 * (T->nrows x nghost, column gnum[c] below the range, gnum[c - nown] above
 * it; gnum on T's backend, T->ncols - nown entries, each in [0, nghost): a
 * promise, not checked on the device). Each row keeps its order, so
 * ascending rows stay ascending with a monotone gnum. Values where T has
 * them; *nonfinite = how many are not finite. The blocks of a distributed
 * matrix from rows with compact columns (the ghosts below, the owned
 * columns, the ghosts above), without a host copy. */
ks_error ks_sparse_split_cols(const ks_sparse *T, ks_int nb, ks_int nown, const ks_int *gnum,
                              ks_int nghost, ks_sparse *L, ks_sparse *G, ks_int *nonfinite);
/* M = a distributed matrix's local block L (nrows x nloc) and ghost block
 * G (nrows x nghost, may be NULL: no ghost entries) merged into one CSR
 * over the compact column numbers (the left factor of A P), where they
 * live: row i is G's entries of row i with columns below nb (kept), then
 * L's (column + nb), then G's others (column + L->ncols). M gets
 * L->ncols + G->ncols columns, values where both have them (a pattern
 * where neither has), and is made here; sorted rows stay sorted (valid
 * where both blocks are). 0 <= nb <= G->ncols (0 without G). */
ks_error ks_sparse_merge_blocks(const ks_sparse *L, const ks_sparse *G, ks_int nb, ks_sparse *M);
/* Statistics where A lives (a backend without the operation: from a host
 * copy); the diagonals counted only where a DIA fill of at most
 * dia_max_fill is possible (ks_sparse_stats_max_ndiag, and max_row within
 * it), else ndiag = -1. */
ks_error ks_sparse_row_stats(const ks_sparse *A, double dia_max_fill, ks_sparse_stats *st);
/* The same of a host CSR (the cpu implementation). */
void ks_csr_row_stats(const ks_csr *A, double dia_max_fill, ks_sparse_stats *st);

#ifdef __cplusplus
}
#endif
#endif
