/* The cuda column marking and column split of sparse/sparse.h (the cpu's
 * are sparse/cpu/split.c, with the same results): a thread a row, since
 * the rows are a Galerkin product's (tens of entries) and each row's
 * entries are written in their order, which a thread keeps without a
 * scan inside the row. Each operation waits once, for its counts. */
#include "sparse_cuda.cuh"

#include <cuda_runtime.h>
#include <math.h>

namespace {

/* used[c] = 1 for each column an entry uses (every writer stores 1, so
 * the races are harmless); flag[0] set when a row does not ascend. */
__global__ void mark_kernel(ks_int n, const ks_int *__restrict__ rp,
                            const ks_int *__restrict__ ci, unsigned char *used, int *flag)
{
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        ks_int prev = -1;
        bool bad = false;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
            const ks_int j = ci[k];
            bad |= j <= prev;
            prev = j;
            used[j] = 1;
        }
        if (bad)
            atomicOr(flag, 1);
    }
}

/* lrp[i] = row i's entries in the owned range (scanned into row pointers
 * after). */
__global__ void count_owned(ks_int n, const ks_int *__restrict__ rp, const ks_int *__restrict__ ci,
                            ks_int nb, ks_int nown, ks_int *lrp)
{
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        ks_int c = 0;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++)
            c += ci[k] >= nb && ci[k] < nb + nown;
        lrp[i] = c;
    }
}

/* Both blocks' entries; G's row pointers from T's and L's. */
__global__ void split_fill(ks_int n, const ks_int *__restrict__ rp, const ks_int *__restrict__ ci,
                           const double *__restrict__ val, ks_int nb, ks_int nown,
                           const ks_int *__restrict__ gnum, const ks_int *__restrict__ lrp,
                           ks_int *__restrict__ lci, double *__restrict__ lval,
                           ks_int *__restrict__ grp, ks_int *__restrict__ gci,
                           double *__restrict__ gval, int *nonfinite)
{
    int bad = 0;
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        ks_int ql = lrp[i], qg = rp[i] - lrp[i];
        grp[i + 1] = rp[i + 1] - lrp[i + 1];
        if (i == 0)
            grp[0] = 0;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
            const ks_int j = ci[k];
            const double v = val ? val[k] : 0.0;
            bad += !isfinite(v);
            if (j >= nb && j < nb + nown) {
                lci[ql] = j - nb;
                if (val)
                    lval[ql] = v;
                ql++;
            } else {
                gci[qg] = gnum[j < nb ? j : j - nown];
                if (val)
                    gval[qg] = v;
                qg++;
            }
        }
    }
    if (bad)
        atomicAdd(nonfinite, bad);
}

/* B's shape and arrays on be (rowptr given or allocated here). */
ks_error block_alloc(ks_backend *be, ks_int n, ks_int ncols, ks_int nnz, int values,
                     ks_sparse *B, const char *what)
{
    B->be = be;
    B->nrows = n;
    B->ncols = ncols;
    B->nnz = nnz;
    if (!B->rowptr)
        KS_TRY(ks_be_alloc(be, ((size_t)n + 1) * sizeof(ks_int), (void **)&B->rowptr, what));
    KS_TRY(ks_be_alloc(be, (size_t)nnz * sizeof(ks_int) + 1, (void **)&B->colind, what));
    if (values)
        KS_TRY(ks_be_alloc(be, (size_t)nnz * sizeof(double) + 1, (void **)&B->val, what));
    return KS_OK;
}

} // namespace

extern "C" ks_error ks_cu_mark_cols(const ks_sparse *T, unsigned char *used, int *unsorted)
{
    ks_backend *be = T->be;
    cudaStream_t st = ks_cu_stream(be);
    ks_cu_tmp tmp;
    ks_cu_tmp_init(&tmp, be);
    int *flag = NULL;
    ks_error e = ks_cu_tmp_alloc(&tmp, sizeof(int), (void **)&flag, "column marking flag");
    if (e == KS_OK)
        e = ks_cu_memset(be, flag, 0, sizeof(int), "column marking flag");
    if (e == KS_OK)
        e = ks_cu_memset(be, used, 0, (size_t)T->ncols, "used columns");
    if (e == KS_OK && T->nrows > 0) {
        mark_kernel<<<ks_cu_blocks(T->nrows), KS_CU_BLOCK, 0, st>>>(T->nrows, T->rowptr,
                                                                     T->colind, used, flag);
        e = ks_cu_launched("mark_kernel");
    }
    int h = 0;
    if (e == KS_OK)
        e = be->ops->download(be, &h, flag, sizeof h);
    *unsorted = h != 0;
    ks_cu_tmp_free(&tmp);
    return e;
}

extern "C" ks_error ks_cu_split_cols(const ks_sparse *T, ks_int nb, ks_int nown,
                                     const ks_int *gnum, ks_int nghost, ks_sparse *L,
                                     ks_sparse *G, ks_int *nonfinite)
{
    ks_backend *be = T->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int n = T->nrows;
    const int values = T->val != NULL;
    ks_cu_tmp tmp;
    ks_cu_tmp_init(&tmp, be);
    int *bad = NULL;
    ks_error e = ks_cu_tmp_alloc(&tmp, sizeof(int), (void **)&bad, "column split count");
    if (e == KS_OK)
        e = ks_cu_memset(be, bad, 0, sizeof(int), "column split count");
    if (e == KS_OK)
        e = ks_be_alloc(be, ((size_t)n + 1) * sizeof(ks_int), (void **)&L->rowptr,
                        "local block row pointers");
    if (e == KS_OK && n > 0) {
        count_owned<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, T->rowptr, T->colind, nb, nown,
                                                             L->rowptr);
        e = ks_cu_launched("count_owned");
    }
    ks_int nl = 0;
    if (e == KS_OK)
        e = ks_cu_scan(be, L->rowptr, n, L->rowptr, &nl, "local block entries");
    if (e == KS_OK)
        e = block_alloc(be, n, nown, nl, values, L, "local block");
    if (e == KS_OK)
        e = block_alloc(be, n, nghost, T->nnz - nl, values, G, "ghost block");
    if (e == KS_OK && n > 0) {
        split_fill<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(
            n, T->rowptr, T->colind, T->val, nb, nown, gnum, L->rowptr, L->colind, L->val,
            G->rowptr, G->colind, G->val, bad);
        e = ks_cu_launched("split_fill");
    } else if (e == KS_OK) {
        e = ks_cu_memset(be, G->rowptr, 0, sizeof(ks_int), "ghost block row pointers");
    }
    int h = 0;
    if (e == KS_OK)
        e = be->ops->download(be, &h, bad, sizeof h);
    *nonfinite = h;
    ks_cu_tmp_free(&tmp);
    return e;
}
