/* Row statistics of a device CSR (ks_sparse_stats) without a host copy:
 * what "auto" reads to choose an AMG level's SpMV format. Integer sums and
 * a bitmap of occupied diagonals: the same numbers as the cpu's. */
#include "../sparse.h"
#include "cuda_util.cuh"

namespace {

struct counts {
    unsigned long long sum, sum2;
    unsigned int max_row;
};

__global__ void row_stats_kernel(ks_int n, ks_int ncols, const ks_int *__restrict__ rp,
                                 const ks_int *__restrict__ ci, unsigned int *bitmap,
                                 counts *out)
{
    unsigned long long sum = 0, sum2 = 0;
    unsigned int mx = 0;
    KS_CU_FOR(i, n)
    {
        const ks_int a = rp[i], b = rp[i + 1];
        const unsigned long long len = (unsigned long long)(b - a);
        sum += len;
        sum2 += len * len;
        mx = len > mx ? (unsigned int)len : mx;
        if (!bitmap)
            continue;
        for (ks_int k = a; k < b; k++) {
            const long long off = (long long)ci[k] - i + (n - 1);
            const unsigned int bit = 1u << (off & 31);
            /* most diagonals are set already: read first, so the few
             * words of a banded matrix are not hammered by atomics */
            if (!(__ldcg(bitmap + (off >> 5)) & bit))
                atomicOr(bitmap + (off >> 5), bit);
        }
    }
    (void)ncols;
    __shared__ unsigned long long s_sum[KS_CU_BLOCK], s_sum2[KS_CU_BLOCK];
    __shared__ unsigned int s_max[KS_CU_BLOCK];
    s_sum[threadIdx.x] = sum;
    s_sum2[threadIdx.x] = sum2;
    s_max[threadIdx.x] = mx;
    __syncthreads();
    for (int h = KS_CU_BLOCK / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) {
            s_sum[threadIdx.x] += s_sum[threadIdx.x + h];
            s_sum2[threadIdx.x] += s_sum2[threadIdx.x + h];
            s_max[threadIdx.x] = max(s_max[threadIdx.x], s_max[threadIdx.x + h]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        atomicAdd(&out->sum, s_sum[0]);
        atomicAdd(&out->sum2, s_sum2[0]);
        atomicMax(&out->max_row, s_max[0]);
    }
}

__global__ void popcount_kernel(const unsigned int *bitmap, long long words,
                                unsigned long long *count)
{
    unsigned long long c = 0;
    KS_CU_FOR(w, words)
    c += (unsigned long long)__popc(bitmap[w]);
    __shared__ unsigned long long s[KS_CU_BLOCK];
    s[threadIdx.x] = c;
    __syncthreads();
    for (int h = KS_CU_BLOCK / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h)
            s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(count, s[0]);
}

} // namespace

extern "C" ks_error ks_cuda_row_stats(const ks_sparse *A, ks_sparse_stats *st)
{
    memset(st, 0, sizeof *st);
    st->nrows = A->nrows;
    st->ncols = A->ncols;
    st->nnz = A->nnz;
    st->ndiag = -1;
    if (A->nrows <= 0)
        return KS_OK;
    ks_backend *be = A->be;
    cudaStream_t s = ks_cu_stream(be);
    const long long noff = (long long)A->nrows + A->ncols - 1;
    const long long words = (noff + 31) / 32;
    /* device scratch: the counts, the diagonal count, the bitmap */
    size_t bytes = sizeof(counts) + sizeof(unsigned long long) + (size_t)words * 4;
    char *buf = NULL;
    KS_TRY(ks_be_alloc(be, bytes, (void **)&buf, "row statistics"));
    counts *c = (counts *)buf;
    unsigned long long *nd = (unsigned long long *)(buf + sizeof(counts));
    unsigned int *bm = (unsigned int *)(nd + 1);
    ks_error e = KS_OK;
    if (cudaMemsetAsync(buf, 0, bytes, s) != cudaSuccess)
        e = ks_seterr(KS_ERR_DEVICE, "row statistics: cudaMemsetAsync failed");
    if (e == KS_OK) {
        unsigned nb = ks_cu_blocks(A->nrows);
        row_stats_kernel<<<nb < 65535 ? nb : 65535, KS_CU_BLOCK, 0, s>>>(
            A->nrows, A->ncols, A->rowptr, A->colind, bm, c);
        unsigned pb = ks_cu_blocks(words);
        popcount_kernel<<<pb < 4096 ? pb : 4096, KS_CU_BLOCK, 0, s>>>(bm, words, nd);
        cudaError_t ce = cudaGetLastError();
        if (ce != cudaSuccess)
            e = ks_seterr(KS_ERR_DEVICE, "row statistics kernels: %s", cudaGetErrorString(ce));
    }
    struct {
        counts c;
        unsigned long long nd;
    } h;
    if (e == KS_OK)
        e = be->ops->download(be, &h, buf, sizeof h);
    be->ops->free(be, buf);
    KS_TRY(e);
    st->sum = h.c.sum;
    st->sum2 = h.c.sum2;
    st->max_row = (ks_int)h.c.max_row;
    st->ndiag = (int64_t)h.nd;
    return KS_OK;
}
