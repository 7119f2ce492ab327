/* The scan and count of cuda_util.cuh: a block of KS_CU_BLOCK threads
 * scans 4 entries a thread (1024 a block) and writes its sum; one block
 * scans the block sums (64-bit, so an overflow is seen, not wrapped); a
 * last pass adds each block's offset. Integer sums: the same result in any
 * order. */
#include "cuda_util.cuh"

#include <inttypes.h>

namespace {

const int kItems = 4;
const int kTile = KS_CU_BLOCK * kItems;

/* Exclusive scan of v over the block (shared memory, Hillis-Steele on the
 * per-thread sums); returns the thread's offset, *block_sum the total. */
__device__ long long block_exclusive(long long v, long long *block_sum)
{
    __shared__ long long s[KS_CU_BLOCK];
    const int t = threadIdx.x;
    s[t] = v;
    __syncthreads();
    for (int off = 1; off < KS_CU_BLOCK; off <<= 1) {
        long long add = t >= off ? s[t - off] : 0;
        __syncthreads();
        s[t] += add;
        __syncthreads();
    }
    long long incl = s[t];
    *block_sum = s[KS_CU_BLOCK - 1];
    __syncthreads();
    return incl - v;
}

__global__ void tile_scan(const ks_int *in, ks_int n, ks_int *out, long long *bsum)
{
    const long long base = (long long)blockIdx.x * kTile + (long long)threadIdx.x * kItems;
    ks_int v[kItems];
    long long sum = 0;
#pragma unroll
    for (int k = 0; k < kItems; k++) {
        v[k] = base + k < n ? in[base + k] : 0;
        sum += v[k];
    }
    long long total;
    long long off = block_exclusive(sum, &total);
    /* values first, then writes: in and out may alias */
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kItems; k++) {
        if (base + k < n)
            out[base + k] = (ks_int)off; /* the tile-local offset fits: <= 1024 * INT_MAX checked later */
        off += v[k];
    }
    if (threadIdx.x == 0)
        bsum[blockIdx.x] = total;
}

/* One block: exclusive scan of nb block sums in place; *grand = total. */
__global__ void sums_scan(long long *bsum, long long nb, long long *grand)
{
    long long carry = 0;
    for (long long start = 0; start < nb; start += KS_CU_BLOCK) {
        long long i = start + threadIdx.x;
        long long v = i < nb ? bsum[i] : 0, total;
        long long off = block_exclusive(v, &total);
        if (i < nb)
            bsum[i] = carry + off;
        carry += total;
    }
    if (threadIdx.x == 0)
        *grand = carry;
}

/* Tile offsets added; out[n] = grand total. The tile-local values can pass
 * ks_int only when the grand total does, which the host checks. */
__global__ void add_offsets(ks_int *out, ks_int n, const long long *bsum, const long long *grand)
{
    KS_CU_FOR(i, n)
    out[i] = (ks_int)((long long)out[i] + bsum[i / kTile]);
    if (blockIdx.x == 0 && threadIdx.x == 0)
        out[n] = (ks_int)*grand;
}

__global__ void count_eq(const int *x, ks_int n, int value, ks_int *count)
{
    __shared__ ks_int s;
    if (threadIdx.x == 0)
        s = 0;
    __syncthreads();
    ks_int c = 0;
    KS_CU_FOR(i, n)
    c += x[i] == value;
    atomicAdd(&s, c); /* integers: any order gives the same sum */
    __syncthreads();
    if (threadIdx.x == 0)
        atomicAdd(count, s);
}

} // namespace

extern "C" ks_error ks_cu_scan(ks_backend *be, const ks_int *in, ks_int n, ks_int *out,
                               ks_int *total, const char *what)
{
    cudaStream_t st = ks_cu_stream(be);
    long long nb = ((long long)n + kTile - 1) / kTile;
    if (nb < 1)
        nb = 1;
    long long *bsum = NULL;
    KS_TRY(ks_be_alloc(be, sizeof(long long) * (size_t)(nb + 1), (void **)&bsum,
                       "scan block sums"));
    long long *grand = bsum + nb;
    ks_error e = KS_OK;
    tile_scan<<<(unsigned)nb, KS_CU_BLOCK, 0, st>>>(in, n, out, bsum);
    sums_scan<<<1, KS_CU_BLOCK, 0, st>>>(bsum, nb, grand);
    add_offsets<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(out, n, bsum, grand);
    cudaError_t ce = cudaGetLastError();
    if (ce != cudaSuccess)
        e = ks_seterr(KS_ERR_DEVICE, "scan kernels (%s): %s", what, cudaGetErrorString(ce));
    long long g = 0;
    if (e == KS_OK && total)
        e = be->ops->download(be, &g, grand, sizeof g);
    be->ops->free(be, bsum);
    if (e != KS_OK)
        return e;
    if (total) {
        if (g > INT32_MAX)
            return ks_seterr(KS_ERR_SIZE, "%s: %lld entries exceed the 32-bit index range", what,
                             g);
        *total = (ks_int)g;
    }
    return KS_OK;
}

extern "C" ks_error ks_cu_count_eq(ks_backend *be, const int *x, ks_int n, int value,
                                   ks_int *count)
{
    ks_int *d = NULL;
    *count = 0;
    KS_TRY(ks_be_alloc(be, sizeof *d, (void **)&d, "count"));
    /* zeroed in the queue: an upload of the host's zero would wait */
    cudaError_t ce = cudaMemsetAsync(d, 0, sizeof *d, ks_cu_stream(be));
    if (ce == cudaSuccess)
        count_eq<<<ks_cu_blocks(n) < 1024 ? ks_cu_blocks(n) : 1024, KS_CU_BLOCK, 0,
                   ks_cu_stream(be)>>>(x, n, value, d);
    ks_error e = KS_OK;
    if (ce == cudaSuccess)
        ce = cudaGetLastError();
    if (ce != cudaSuccess)
        e = ks_seterr(KS_ERR_DEVICE, "count kernel: %s", cudaGetErrorString(ce));
    if (e == KS_OK)
        e = be->ops->download(be, count, d, sizeof *count);
    be->ops->free(be, d);
    return e;
}
