/* Row statistics of a device CSR (ks_sparse_stats) without a host copy:
 * what "auto" reads to choose an AMG level's SpMV format. Integer sums and
 * a bitmap of occupied diagonals, counted under the same bounds: the same
 * numbers as the cpu's. */
#include "../sparse.h"
#include "cuda_util.cuh"

namespace {

struct counts {
    unsigned long long sum, sum2;
    unsigned int max_row;
};

/* The row lengths (the row pointers only). */
__global__ void row_lengths_kernel(ks_int n, const ks_int *__restrict__ rp, counts *out)
{
    unsigned long long sum = 0, sum2 = 0;
    unsigned int mx = 0;
    KS_CU_FOR(i, n)
    {
        const unsigned long long len = (unsigned long long)(rp[i + 1] - rp[i]);
        sum += len;
        sum2 += len * len;
        mx = len > mx ? (unsigned int)len : mx;
    }
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

/* The bitmap of occupied diagonals, unless the longest row (the lengths
 * kernel's, before it on the stream) has more entries than `most`
 * diagonals allow: then nothing is read (the host sees the same max). */
__global__ void diag_bitmap_kernel(ks_int n, const ks_int *__restrict__ rp,
                                   const ks_int *__restrict__ ci, const counts *c,
                                   long long most, unsigned int *bitmap)
{
    if ((long long)c->max_row > most)
        return;
    KS_CU_FOR(i, n)
    {
        for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
            const long long off = (long long)ci[k] - i + (n - 1);
            const unsigned int bit = 1u << (off & 31);
            /* most diagonals are set already: read first, so the few
             * words of a banded matrix are not hammered by atomics */
            if (!(__ldcg(bitmap + (off >> 5)) & bit))
                atomicOr(bitmap + (off >> 5), bit);
        }
    }
}

__global__ void popcount_kernel(const unsigned int *bitmap, long long words, const counts *c,
                                long long most, unsigned long long *count)
{
    if ((long long)c->max_row > most)
        return;
    unsigned long long k = 0;
    KS_CU_FOR(w, words)
    k += (unsigned long long)__popc(bitmap[w]);
    __shared__ unsigned long long s[KS_CU_BLOCK];
    s[threadIdx.x] = k;
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

/* One download either way: the lengths, and the diagonals when counted.
 * The diagonals' pass (every column index, a bitmap) runs only where a
 * fill of at most dia_max_fill is possible: the host's bound from the
 * shape, the device's from the longest row. */
extern "C" ks_error ks_cuda_row_stats(const ks_sparse *A, double dia_max_fill,
                                      ks_sparse_stats *st)
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
    const long long most = ks_sparse_stats_max_ndiag(A->nrows, A->ncols, A->nnz, dia_max_fill);
    const long long noff = (long long)A->nrows + A->ncols - 1;
    const long long words = most >= 0 ? (noff + 31) / 32 : 0;
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
        nb = nb < 65535 ? nb : 65535;
        row_lengths_kernel<<<nb, KS_CU_BLOCK, 0, s>>>(A->nrows, A->rowptr, c);
        if (words > 0) {
            diag_bitmap_kernel<<<nb, KS_CU_BLOCK, 0, s>>>(A->nrows, A->rowptr, A->colind, c,
                                                         most, bm);
            unsigned pb = ks_cu_blocks(words);
            popcount_kernel<<<pb < 4096 ? pb : 4096, KS_CU_BLOCK, 0, s>>>(bm, words, c, most, nd);
        }
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
    if (words > 0 && (long long)h.c.max_row <= most)
        st->ndiag = (int64_t)h.nd;
    return KS_OK;
}
