/* ks_sparse: memory, copies between backends, and the operation calls,
 * which check their operands and go to the table of the backend the
 * matrices live on. */
#include "sparse.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

extern const ks_sparse_ops ks_sparse_cpu_ops;
#ifdef KS_HAVE_CUDA
extern const ks_sparse_ops ks_sparse_cuda_ops;
#endif

static const ks_sparse_ops *const tables[] = {
    &ks_sparse_cpu_ops,
#ifdef KS_HAVE_CUDA
    &ks_sparse_cuda_ops,
#endif
    NULL};

const ks_sparse_ops *ks_sparse_ops_of(const ks_backend *be)
{
    for (int i = 0; be && tables[i]; i++)
        if (tables[i]->backend == be->ops->kind)
            return tables[i];
    return NULL;
}

/* ------------------------------------------------------------------ memory */
ks_error ks_sparse_alloc(ks_backend *be, ks_int nrows, ks_int ncols, ks_int nnz, int pattern,
                         ks_sparse *A)
{
    memset(A, 0, sizeof *A);
    if (!be || nrows < 0 || ncols < 0 || nnz < 0)
        return ks_seterr(KS_ERR_ARG, "ks_sparse_alloc: %s",
                         be ? "negative size" : "NULL backend");
    A->be = be;
    A->nrows = nrows;
    A->ncols = ncols;
    A->nnz = nnz;
    ks_error e = ks_be_alloc(be, ((size_t)nrows + 1) * sizeof(ks_int), (void **)&A->rowptr,
                             "sparse row pointers");
    if (e == KS_OK)
        e = ks_be_alloc(be, (size_t)nnz * sizeof(ks_int) + 1, (void **)&A->colind,
                        "sparse column indices");
    if (e == KS_OK && !pattern)
        e = ks_be_alloc(be, (size_t)nnz * sizeof(double) + 1, (void **)&A->val,
                        "sparse values");
    if (e != KS_OK)
        ks_sparse_free(A);
    return e;
}

void ks_sparse_free(ks_sparse *A)
{
    if (!A)
        return;
    if (A->be) {
        A->be->ops->free(A->be, A->rowptr);
        A->be->ops->free(A->be, A->colind);
        A->be->ops->free(A->be, A->val);
    }
    memset(A, 0, sizeof *A);
}

double ks_sparse_bytes(const ks_sparse *A)
{
    if (!A || !A->rowptr)
        return 0.0;
    return ((double)A->nrows + 1.0) * sizeof(ks_int) + (double)A->nnz * sizeof(ks_int) +
           (A->val ? (double)A->nnz * sizeof(double) : 0.0);
}

/* n bytes from src (in `from`'s memory, or the host when from is NULL) to
 * dst (in `to`'s memory, or the host). */
static ks_error move_bytes(ks_backend *from, const void *src, ks_backend *to, void *dst,
                           size_t n)
{
    if (n == 0)
        return KS_OK;
    int hsrc = !from || ks_backend_host_memory(from), hdst = !to || ks_backend_host_memory(to);
    if (hsrc && hdst) {
        ks_memcpy_par(dst, src, n);
        return KS_OK;
    }
    if (hsrc)
        return to->ops->upload(to, dst, src, n);
    if (hdst)
        return from->ops->download(from, dst, src, n);
    if (from == to)
        return from->ops->copy(from, dst, src, n);
    /* Two device backends: through the host. */
    void *tmp = ks_malloc(n, "staging buffer");
    if (!tmp)
        return KS_ERR_MEMORY;
    ks_error e = from->ops->download(from, tmp, src, n);
    if (e == KS_OK)
        e = to->ops->upload(to, dst, tmp, n);
    free(tmp);
    return e;
}

/* Copy the three arrays of the matrix (nrows, nnz, values when both have
 * them) between memories. */
static ks_error move_arrays(ks_backend *from, const ks_int *rp, const ks_int *ci,
                            const double *v, ks_backend *to, ks_int *rpo, ks_int *cio, double *vo,
                            ks_int nrows, ks_int nnz)
{
    KS_TRY(move_bytes(from, rp, to, rpo, ((size_t)nrows + 1) * sizeof(ks_int)));
    KS_TRY(move_bytes(from, ci, to, cio, (size_t)nnz * sizeof(ks_int)));
    if (v && vo)
        KS_TRY(move_bytes(from, v, to, vo, (size_t)nnz * sizeof(double)));
    return KS_OK;
}

ks_error ks_sparse_from_csr(ks_backend *be, const ks_csr *H, int pattern, ks_sparse *A)
{
    KS_TRY(ks_sparse_alloc(be, H->nrows, H->ncols, H->nnz, pattern || !H->val, A));
    ks_error e = move_arrays(NULL, H->rowptr, H->colind, H->val, be, A->rowptr, A->colind,
                             A->val, H->nrows, H->nnz);
    if (e != KS_OK) {
        ks_sparse_free(A);
        return ks_adderr(e, "copying a CSR matrix to %s", be->ops->name);
    }
    return KS_OK;
}

ks_error ks_sparse_to_csr(const ks_sparse *A, ks_csr *H)
{
    memset(H, 0, sizeof *H);
    KS_TRY(ks_csr_alloc(H, A->nrows, A->ncols, A->nnz));
    if (!A->val) {
        free(H->val);
        H->val = NULL;
    }
    ks_error e = move_arrays(A->be, A->rowptr, A->colind, A->val, NULL, H->rowptr, H->colind,
                             H->val, A->nrows, A->nnz);
    if (e != KS_OK) {
        ks_csr_free(H);
        return ks_adderr(e, "copying a CSR matrix from %s", A->be->ops->name);
    }
    return KS_OK;
}

ks_error ks_sparse_copy(const ks_sparse *A, ks_backend *be, ks_sparse *B)
{
    KS_TRY(ks_sparse_alloc(be, A->nrows, A->ncols, A->nnz, !A->val, B));
    ks_error e = move_arrays(A->be, A->rowptr, A->colind, A->val, be, B->rowptr, B->colind,
                             B->val, A->nrows, A->nnz);
    if (e != KS_OK) {
        ks_sparse_free(B);
        return ks_adderr(e, "copying a sparse matrix from %s to %s", A->be->ops->name,
                         be->ops->name);
    }
    return KS_OK;
}

ks_error ks_sparse_move(ks_sparse *A, ks_backend *be)
{
    if (A->be == be)
        return KS_OK;
    ks_sparse B;
    KS_TRY(ks_sparse_copy(A, be, &B));
    ks_sparse_free(A);
    *A = B;
    return KS_OK;
}

ks_sparse ks_sparse_view_csr(ks_backend *be, const ks_csr *H)
{
    ks_sparse A = {be, H->nrows, H->ncols, H->nnz, H->rowptr, H->colind, H->val, 0, 0};
    return A;
}

ks_csr ks_sparse_as_csr(const ks_sparse *A)
{
    ks_csr H = {A->nrows, A->ncols, A->nnz, A->rowptr, A->colind, A->val};
    return H;
}

ks_error ks_sparse_adopt_csr(ks_backend *be, ks_csr *H, ks_sparse *A)
{
    if (!ks_backend_host_memory(be))
        return ks_seterr(KS_ERR_ARG, "ks_sparse_adopt_csr: backend %s has no host memory",
                         be->ops->name);
    *A = ks_sparse_view_csr(be, H);
    memset(H, 0, sizeof *H);
    /* from now on the backend's arrays: counted, and freed by it */
    ks_be_track(be, A->rowptr, ((size_t)A->nrows + 1) * sizeof(ks_int));
    ks_be_track(be, A->colind, (size_t)A->nnz * sizeof(ks_int));
    ks_be_track(be, A->val, (size_t)A->nnz * sizeof(double));
    return KS_OK;
}

/* -------------------------------------------------------------- operations */
/* The table entry op of A's backend, or KS_ERR_UNSUPPORTED naming both. */
#define OP(A, op, what)                                                                      \
    const ks_sparse_ops *ops_ = ks_sparse_ops_of((A)->be);                                    \
    if (!ops_ || !ops_->op)                                                                   \
        return ks_seterr(KS_ERR_UNSUPPORTED, "sparse %s is not available on the %s backend", \
                         what, (A)->be ? (A)->be->ops->name : "(none)");

static ks_error same_backend(const char *what, const ks_sparse *A, const ks_sparse *B)
{
    if (!A || !B || !A->be)
        return ks_seterr(KS_ERR_ARG, "sparse %s: NULL or unallocated operand", what);
    if (A->be != B->be)
        return ks_seterr(KS_ERR_ARG, "sparse %s: operands on different backend objects (%s, %s)",
                         what, A->be->ops->name, B->be ? B->be->ops->name : "(none)");
    return KS_OK;
}

static ks_error shapes(const char *what, const ks_sparse *A, const ks_sparse *B)
{
    if (A->ncols != B->nrows)
        return ks_seterr(KS_ERR_SIZE, "sparse %s: %ld x %ld times %ld x %ld", what,
                         (long)A->nrows, (long)A->ncols, (long)B->nrows, (long)B->ncols);
    return KS_OK;
}

ks_error ks_sparse_transpose(const ks_sparse *A, ks_sparse *AT)
{
    if (!A || !A->be || !AT || A == AT)
        return ks_seterr(KS_ERR_ARG, "sparse transpose: NULL, unallocated or aliased operand");
    OP(A, transpose, "transpose");
    memset(AT, 0, sizeof *AT);
    return ops_->transpose(A, AT);
}

ks_error ks_sparse_spgemm(const ks_sparse *A, const ks_sparse *B, ks_sparse *C)
{
    KS_TRY(same_backend("product", A, B));
    if (!C || C == A || C == B || !A->val || !B->val)
        return ks_seterr(KS_ERR_ARG, "sparse product: %s",
                         !C ? "NULL output" : C == A || C == B ? "output aliases an input"
                                                               : "an operand has no values");
    KS_TRY(shapes("product", A, B));
    OP(A, spgemm, "product");
    memset(C, 0, sizeof *C);
    return ops_->spgemm(A, B, C);
}

ks_error ks_sparse_spgemm_numeric(const ks_sparse *A, const ks_sparse *B, ks_sparse *C)
{
    KS_TRY(same_backend("numeric product", A, B));
    KS_TRY(same_backend("numeric product", A, C));
    KS_TRY(shapes("numeric product", A, B));
    if (C->nrows != A->nrows || C->ncols != B->ncols || !C->val)
        return ks_seterr(KS_ERR_SIZE, "sparse numeric product: the output pattern is %ld x %ld%s,"
                         " the product %ld x %ld", (long)C->nrows, (long)C->ncols,
                         C->val ? "" : " without values", (long)A->nrows, (long)B->ncols);
    OP(A, spgemm_numeric, "numeric product");
    return ops_->spgemm_numeric(A, B, C);
}

ks_error ks_sparse_rap(const ks_sparse *R, const ks_sparse *A, const ks_sparse *P, ks_sparse *Ac)
{
    KS_TRY(same_backend("Galerkin product", R, A));
    KS_TRY(same_backend("Galerkin product", A, P));
    if (!Ac || Ac == R || Ac == A || Ac == P)
        return ks_seterr(KS_ERR_ARG, "sparse Galerkin product: NULL or aliased output");
    KS_TRY(shapes("Galerkin product R A", R, A));
    KS_TRY(shapes("Galerkin product A P", A, P));
    OP(A, rap, "Galerkin product");
    memset(Ac, 0, sizeof *Ac);
    return ops_->rap(R, A, P, Ac);
}

ks_error ks_sparse_rap_numeric(const ks_sparse *R, const ks_sparse *A, const ks_sparse *P,
                               ks_sparse *Ac, int *outside)
{
    KS_TRY(same_backend("numeric Galerkin product", R, A));
    KS_TRY(same_backend("numeric Galerkin product", A, P));
    KS_TRY(same_backend("numeric Galerkin product", A, Ac));
    OP(A, rap_numeric, "numeric Galerkin product");
    *outside = 0;
    return ops_->rap_numeric(R, A, P, Ac, outside);
}

ks_error ks_sparse_validate(const ks_sparse *A)
{
    if (!A || !A->be)
        return ks_seterr(KS_ERR_ARG, "invalid CSR: NULL or unallocated matrix");
    OP(A, validate, "validation");
    return ops_->validate(A);
}

ks_error ks_sparse_sort_rows(ks_sparse *A)
{
    if (!A || !A->be)
        return ks_seterr(KS_ERR_ARG, "sparse row sort: NULL or unallocated matrix");
    OP(A, sort_rows, "row sort");
    return ops_->sort_rows(A);
}

ks_error ks_sparse_scale_rows(ks_sparse *A, const double *d)
{
    if (!A || !A->be || !A->val || (!d && A->nrows > 0))
        return ks_seterr(KS_ERR_ARG, "sparse row scaling: NULL operand or no values");
    OP(A, scale_rows, "row scaling");
    return ops_->scale_rows(A, d);
}

ks_error ks_sparse_diagonal(const ks_sparse *A, double *d)
{
    if (!A || !A->be || !A->val || (!d && A->nrows > 0))
        return ks_seterr(KS_ERR_ARG, "sparse diagonal: NULL operand or no values");
    OP(A, diagonal, "diagonal");
    return ops_->diagonal(A, d);
}

ks_error ks_sparse_offdiag_abs_sums(const ks_sparse *A, double *s)
{
    if (!A || !A->be || !A->val || (!s && A->nrows > 0))
        return ks_seterr(KS_ERR_ARG, "sparse l1 row sums: NULL operand or no values");
    OP(A, offdiag_abs_sums, "l1 row sums");
    return ops_->offdiag_abs_sums(A, s);
}

/* The fill as the SpMV format choice computes it (spmv/auto.c). */
static double dia_fill(int64_t ndiag, ks_int nrows, ks_int nnz)
{
    return (double)ndiag * nrows / nnz;
}

int64_t ks_sparse_stats_max_ndiag(ks_int nrows, ks_int ncols, ks_int nnz, double dia_max_fill)
{
    if (!(dia_max_fill > 0.0) || nrows <= 0 || ncols <= 0 || nnz <= 0)
        return -1;
    /* every diagonal a matrix can have: the search below stays in range */
    const int64_t all = (int64_t)nrows + ncols - 1;
    const double est = floor(dia_max_fill * ((double)nnz / nrows));
    int64_t most = est >= (double)all ? all : (int64_t)est;
    /* the estimate's rounding put right with the exact expression: the
     * fill grows with ndiag, so the largest ndiag within it is found */
    while (most > 0 && dia_fill(most, nrows, nnz) > dia_max_fill)
        most--;
    while (most < all && dia_fill(most + 1, nrows, nnz) <= dia_max_fill)
        most++;
    const int64_t shortest = nrows < ncols ? nrows : ncols;
    const int64_t least = ((int64_t)nnz + shortest - 1) / shortest;
    return least <= most ? most : -1;
}

ks_error ks_sparse_row_stats(const ks_sparse *A, double dia_max_fill, ks_sparse_stats *st)
{
    if (!A || !A->be || !st)
        return ks_seterr(KS_ERR_ARG, "sparse row statistics: NULL operand");
    const ks_sparse_ops *ops = ks_sparse_ops_of(A->be);
    if (ops && ops->row_stats)
        return ops->row_stats(A, dia_max_fill, st);
    ks_csr H; /* no kernel for it there: count a host copy */
    KS_TRY(ks_sparse_to_csr(A, &H));
    ks_csr_row_stats(&H, dia_max_fill, st);
    ks_csr_free(&H);
    return KS_OK;
}

ks_error ks_sparse_stack_rows(const ks_sparse *M, const ks_int *tab, const ks_sparse *F, ks_int nb,
                              ks_int ncols, ks_sparse *B)
{
    static const char who[] = "row stacking";
    if (B)
        memset(B, 0, sizeof *B);
    KS_TRY(same_backend(who, M, F));
    if (!B || (!tab && M->ncols > 0))
        return ks_seterr(KS_ERR_ARG, "sparse %s: NULL %s", who, B ? "table" : "output");
    if (nb < 0 || nb > F->nrows || ncols < 0 || F->ncols > ncols || !M->val != !F->val)
        return ks_seterr(KS_ERR_ARG, "sparse %s: %lld rows before of %lld, %lld columns of "
                         "%lld, values %s", who, (long long)nb, (long long)F->nrows,
                         (long long)F->ncols, (long long)ncols,
                         !M->val != !F->val ? "in one operand only" : "in both or neither");
    const int64_t nnz = (int64_t)M->nnz + F->nnz, nrows = (int64_t)M->nrows + F->nrows;
    if (nnz > INT32_MAX || nrows >= INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "sparse %s: %lld rows, %lld entries (more than 2^31)", who,
                         (long long)nrows, (long long)nnz);
    OP(M, stack_rows, who);
    KS_TRY(ks_sparse_alloc(M->be, (ks_int)nrows, ncols, (ks_int)nnz, !M->val, B));
    ks_error e = ops_->stack_rows(M, tab, F, nb, B);
    if (e != KS_OK)
        ks_sparse_free(B);
    return e;
}

ks_error ks_sparse_extract_rows(const ks_sparse *A, const ks_int *idx, ks_int n, ks_sparse *B)
{
    static const char who[] = "row extraction";
    if (B)
        memset(B, 0, sizeof *B);
    if (!A || !A->be || !B || n < 0 || (!idx && n > 0))
        return ks_seterr(KS_ERR_ARG, "sparse %s: NULL operand or %lld rows", who, (long long)n);
    OP(A, extract_rows, who);
    ks_error e = ops_->extract_rows(A, idx, n, B);
    if (e != KS_OK)
        ks_sparse_free(B);
    return e;
}

ks_error ks_sparse_mark_cols(const ks_sparse *T, unsigned char *used, int *unsorted)
{
    static const char who[] = "column marking";
    if (!T || !T->be || !used || !unsorted)
        return ks_seterr(KS_ERR_ARG, "sparse %s: NULL operand", who);
    OP(T, mark_cols, who);
    return ops_->mark_cols(T, used, unsorted);
}

ks_error ks_sparse_split_cols(const ks_sparse *T, ks_int nb, ks_int nown, const ks_int *gnum,
                              ks_int nghost, ks_sparse *L, ks_sparse *G, ks_int *nonfinite)
{
    static const char who[] = "column split";
    if (L)
        memset(L, 0, sizeof *L);
    if (G)
        memset(G, 0, sizeof *G);
    if (!T || !T->be || !L || !G || !nonfinite || L == G)
        return ks_seterr(KS_ERR_ARG, "sparse %s: NULL or aliased operand", who);
    if (nb < 0 || nown < 0 || nghost < 0 || (int64_t)nb + nown > T->ncols ||
        (!gnum && T->ncols > nown))
        return ks_seterr(KS_ERR_ARG, "sparse %s: owned columns %lld .. %lld of %lld, %lld "
                         "ghosts%s", who, (long long)nb, (long long)nb + nown - 1,
                         (long long)T->ncols, (long long)nghost, gnum ? "" : ", no table");
    OP(T, split_cols, who);
    ks_error e = ops_->split_cols(T, nb, nown, gnum, nghost, L, G, nonfinite);
    if (e != KS_OK) {
        ks_sparse_free(L);
        ks_sparse_free(G);
    }
    return e;
}

ks_error ks_sparse_merge_blocks(const ks_sparse *L, const ks_sparse *G, ks_int nb, ks_sparse *M)
{
    static const char who[] = "block merge";
    if (!M || M == L || M == G)
        return ks_seterr(KS_ERR_ARG, "sparse %s: %s output", who, M ? "aliased" : "NULL");
    memset(M, 0, sizeof *M);
    KS_TRY(same_backend(who, L, G ? G : L));
    const ks_int ng = G ? G->ncols : 0;
    if ((G && (G->nrows != L->nrows || !G->val != !L->val)) || nb < 0 || nb > ng)
        return ks_seterr(KS_ERR_ARG, "sparse %s: %lld and %lld rows, %lld ghosts below of "
                         "%lld, values %s", who, (long long)L->nrows,
                         (long long)(G ? G->nrows : L->nrows), (long long)nb, (long long)ng,
                         G && !G->val != !L->val ? "in one operand only" : "in both or neither");
    const int64_t nnz = (int64_t)L->nnz + (G ? G->nnz : 0), ncols = (int64_t)L->ncols + ng;
    if (nnz > INT32_MAX || ncols > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "sparse %s: %lld columns, %lld entries (more than 2^31)",
                         who, (long long)ncols, (long long)nnz);
    OP(L, merge_blocks, who);
    KS_TRY(ks_sparse_alloc(L->be, L->nrows, (ks_int)ncols, (ks_int)nnz, !L->val, M));
    ks_error e = ops_->merge_blocks(L, G, nb, M);
    if (e != KS_OK) {
        ks_sparse_free(M);
        return e;
    }
    M->valid = L->valid && (!G || G->valid); /* sorted, in range: a copy of valid blocks */
    return KS_OK;
}

ks_error ks_sparse_same_pattern(const ks_sparse *A, const ks_sparse *B, int *same)
{
    KS_TRY(same_backend("pattern comparison", A, B));
    OP(A, same_pattern, "pattern comparison");
    return ops_->same_pattern(A, B, same);
}
