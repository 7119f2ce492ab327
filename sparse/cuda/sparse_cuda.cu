/* The cuda table of sparse/sparse.h: kernels on the backend's stream over
 * device CSR arrays. The small row operations live here; the transpose
 * (transpose.cu), the products (spgemm.cu, spgemm_cusparse.cu), validation
 * and row sorting (rows.cu) in their own files. An operation left NULL
 * would make ks_sparse_* report KS_ERR_UNSUPPORTED (the AMG setup then
 * runs that step on the host: amg/kernels.c). */
#include "sparse_cuda.cuh"
#include "../../vec/cuda_check.h"

#include <cuda_runtime.h>

extern "C" ks_error ks_cuda_row_stats(const ks_sparse *A, double dia_max_fill,
                                      ks_sparse_stats *st);

namespace {

const int kThreads = 256;

unsigned blocks_for(long n)
{
    long b = (n + kThreads - 1) / kThreads;
    return (unsigned)(b < 1 ? 1 : b > 65535L * 32 ? 65535L * 32 : b);
}

cudaStream_t stream_of(const ks_sparse *A) { return (cudaStream_t)ks_cuda_stream(A->be); }

__global__ void scale_rows_kernel(ks_int n, const ks_int *__restrict__ rp, double *val,
                                  const double *__restrict__ d)
{
    for (ks_int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        for (ks_int k = rp[i]; k < rp[i + 1]; k++)
            val[k] *= d[i];
}

/* d[i] = a_ii (0 when absent); s[i] = sum_{j != i} |a_ij|; either may be
 * NULL. */
__global__ void diag_kernel(ks_int n, const ks_int *__restrict__ rp, const ks_int *__restrict__ ci,
                            const double *__restrict__ val, double *d, double *s)
{
    for (ks_int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        double di = 0.0, si = 0.0;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
            if (ci[k] == i)
                di = val[k];
            else
                si += fabs(val[k]);
        }
        if (d)
            d[i] = di;
        if (s)
            s[i] = si;
    }
}

__global__ void differ_kernel(long n, const ks_int *__restrict__ a, const ks_int *__restrict__ b,
                              int *differ)
{
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        if (a[i] != b[i])
            *differ = 1; /* any thread that finds a difference writes the same value */
}

ks_error cuda_scale_rows(ks_sparse *A, const double *d)
{
    if (A->nrows == 0)
        return KS_OK;
    scale_rows_kernel<<<blocks_for(A->nrows), kThreads, 0, stream_of(A)>>>(A->nrows, A->rowptr,
                                                                          A->val, d);
    KS_CUDA_LAUNCH_CHECK("scale_rows_kernel");
    return KS_OK;
}

ks_error diag_parts(const ks_sparse *A, double *d, double *s)
{
    if (A->nrows == 0)
        return KS_OK;
    diag_kernel<<<blocks_for(A->nrows), kThreads, 0, stream_of(A)>>>(
        A->nrows, A->rowptr, A->colind, A->val, d, s);
    KS_CUDA_LAUNCH_CHECK("diag_kernel");
    return KS_OK;
}

ks_error cuda_diagonal(const ks_sparse *A, double *d) { return diag_parts(A, d, NULL); }

ks_error cuda_offdiag_abs_sums(const ks_sparse *A, double *s) { return diag_parts(A, NULL, s); }

/* *differ = 1 when n ints at a and b differ (flag in device memory). */
ks_error differ(const ks_sparse *A, long n, const ks_int *a, const ks_int *b, int *flag)
{
    if (n == 0)
        return KS_OK;
    differ_kernel<<<blocks_for(n), kThreads, 0, stream_of(A)>>>(n, a, b, flag);
    KS_CUDA_LAUNCH_CHECK("differ_kernel");
    return KS_OK;
}

ks_error cuda_same_pattern(const ks_sparse *A, const ks_sparse *B, int *same)
{
    *same = A->nrows == B->nrows && A->ncols == B->ncols && A->nnz == B->nnz;
    if (!*same)
        return KS_OK;
    int *flag = NULL;
    KS_TRY(ks_be_alloc(A->be, sizeof(int), (void **)&flag, "pattern comparison flag"));
    int h = 0;
    cudaStream_t st = stream_of(A);
    ks_error e = KS_OK;
    if (cudaMemsetAsync(flag, 0, sizeof(int), st) != cudaSuccess)
        e = ks_seterr(KS_ERR_DEVICE, "cudaMemsetAsync failed comparing patterns");
    if (e == KS_OK)
        e = differ(A, (long)A->nrows + 1, A->rowptr, B->rowptr, flag);
    if (e == KS_OK)
        e = differ(A, A->nnz, A->colind, B->colind, flag);
    if (e == KS_OK)
        e = A->be->ops->download(A->be, &h, flag, sizeof h);
    A->be->ops->free(A->be, flag);
    *same = e == KS_OK && !h;
    return e;
}

/* ks_sparse_ops.stack_rows's row pointers (cpu_stack_rows's rule) and
 * M's columns through the table. */
__global__ void stack_rowptr_kernel(ks_int n, ks_int nb, ks_int nm, const ks_int *__restrict__ frp,
                                    const ks_int *__restrict__ mrp, ks_int gb, ks_int ob,
                                    ks_int *brp)
{
    for (ks_int r = blockIdx.x * blockDim.x + threadIdx.x; r <= n; r += gridDim.x * blockDim.x)
        brp[r] = r <= nb ? frp[r] : r <= nb + nm ? gb + mrp[r - nb] : ob + frp[r - nm] - gb;
}

__global__ void map_cols_kernel(long n, const ks_int *__restrict__ tab,
                                const ks_int *__restrict__ in, ks_int *out)
{
    for (long k = blockIdx.x * (long)blockDim.x + threadIdx.x; k < n;
         k += (long)gridDim.x * blockDim.x)
        out[k] = tab[in[k]];
}

/* A device-to-device copy of n elements of size sz queued on st. */
ks_error d2d(void *dst, const void *src, size_t n, size_t sz, cudaStream_t st)
{
    if (n == 0)
        return KS_OK;
    if (cudaMemcpyAsync(dst, src, n * sz, cudaMemcpyDeviceToDevice, st) != cudaSuccess) {
        (void)cudaGetLastError();
        return ks_seterr(KS_ERR_DEVICE, "cudaMemcpyAsync (device to device, %zu bytes) failed "
                         "stacking rows", n * sz);
    }
    return KS_OK;
}

/* The table's entries are the caller's promise (ks_sparse_stack_rows): a
 * check here would cost a host wait on the setup's path. */
ks_error cuda_stack_rows(const ks_sparse *M, const ks_int *tab, const ks_sparse *F, ks_int nb,
                         ks_sparse *B)
{
    cudaStream_t st = stream_of(M);
    ks_int gb = 0; /* F's entries before M's rows: one value the host needs */
    KS_TRY(M->be->ops->download(M->be, &gb, F->rowptr + nb, sizeof gb));
    const ks_int fn = F->nnz, nm = M->nrows, n = B->nrows, ob = gb + M->nnz;
    stack_rowptr_kernel<<<blocks_for((long)n + 1), kThreads, 0, st>>>(n, nb, nm, F->rowptr,
                                                                       M->rowptr, gb, ob,
                                                                       B->rowptr);
    KS_CUDA_LAUNCH_CHECK("stack_rowptr_kernel");
    if (M->nnz > 0) {
        map_cols_kernel<<<blocks_for(M->nnz), kThreads, 0, st>>>(M->nnz, tab, M->colind,
                                                                  B->colind + gb);
        KS_CUDA_LAUNCH_CHECK("map_cols_kernel");
    }
    KS_TRY(d2d(B->colind, F->colind, (size_t)gb, sizeof(ks_int), st));
    KS_TRY(d2d(B->colind + ob, F->colind + gb, (size_t)(fn - gb), sizeof(ks_int), st));
    if (B->val) {
        KS_TRY(d2d(B->val, F->val, (size_t)gb, sizeof(double), st));
        KS_TRY(d2d(B->val + gb, M->val, (size_t)M->nnz, sizeof(double), st));
        KS_TRY(d2d(B->val + ob, F->val + gb, (size_t)(fn - gb), sizeof(double), st));
    }
    return KS_OK;
}

__global__ void row_len_kernel(ks_int n, const ks_int *__restrict__ idx,
                               const ks_int *__restrict__ rp, ks_int *len)
{
    for (ks_int q = blockIdx.x * blockDim.x + threadIdx.x; q < n; q += gridDim.x * blockDim.x)
        len[q] = rp[idx[q] + 1] - rp[idx[q]];
}

/* A warp a row: the rows are a product's (tens of entries). */
__global__ void copy_rows_kernel(ks_int n, const ks_int *__restrict__ idx,
                                 const ks_int *__restrict__ rp, const ks_int *__restrict__ ci,
                                 const double *__restrict__ val, const ks_int *__restrict__ brp,
                                 ks_int *bci, double *bval)
{
    const long long lane = threadIdx.x & 31, warps = (long long)gridDim.x * blockDim.x / 32;
    for (long long q = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32; q < n; q += warps) {
        const ks_int a = rp[idx[q]], b = brp[q], len = brp[q + 1] - b;
        for (ks_int k = (ks_int)lane; k < len; k += 32) {
            bci[b + k] = ci[a + k];
            if (bval)
                bval[b + k] = val[a + k];
        }
    }
}

ks_error cuda_extract_rows(const ks_sparse *A, const ks_int *idx, ks_int n, ks_sparse *B)
{
    ks_backend *be = A->be;
    cudaStream_t st = stream_of(A);
    B->be = be;
    B->nrows = n;
    B->ncols = A->ncols;
    KS_TRY(ks_be_alloc(be, ((size_t)n + 1) * sizeof(ks_int), (void **)&B->rowptr,
                       "extracted row pointers"));
    if (n > 0) {
        row_len_kernel<<<blocks_for(n), kThreads, 0, st>>>(n, idx, A->rowptr, B->rowptr);
        KS_CUDA_LAUNCH_CHECK("row_len_kernel");
    }
    ks_int nnz = 0;
    KS_TRY(ks_cu_scan(be, B->rowptr, n, B->rowptr, &nnz, "extracted rows"));
    B->nnz = nnz;
    KS_TRY(ks_be_alloc(be, (size_t)nnz * sizeof(ks_int) + 1, (void **)&B->colind,
                       "extracted columns"));
    if (A->val)
        KS_TRY(ks_be_alloc(be, (size_t)nnz * sizeof(double) + 1, (void **)&B->val,
                           "extracted values"));
    if (n > 0) {
        copy_rows_kernel<<<blocks_for(32L * n), kThreads, 0, st>>>(
            n, idx, A->rowptr, A->colind, A->val, B->rowptr, B->colind, B->val);
        KS_CUDA_LAUNCH_CHECK("copy_rows_kernel");
    }
    return KS_OK;
}

} // namespace

extern "C" const ks_sparse_ops ks_sparse_cuda_ops = {
    /* backend */ KS_BACKEND_CUDA,
    /* transpose */ ks_cu_transpose,
    /* spgemm */ ks_cu_spgemm,
    /* spgemm_numeric */ ks_cu_spgemm_numeric,
    /* rap */ ks_cu_rap,
    /* rap_numeric */ ks_cu_rap_numeric,
    /* validate */ ks_cu_validate,
    /* sort_rows */ ks_cu_sort_rows,
    /* scale_rows */ cuda_scale_rows,
    /* diagonal */ cuda_diagonal,
    /* offdiag_abs_sums */ cuda_offdiag_abs_sums,
    /* same_pattern */ cuda_same_pattern,
    /* row_stats */ ks_cuda_row_stats,
    /* stack_rows */ cuda_stack_rows,
    /* extract_rows */ cuda_extract_rows,
    /* mark_cols */ ks_cu_mark_cols,
    /* split_cols */ ks_cu_split_cols,
    /* merge_blocks */ ks_cu_merge_blocks,
};
