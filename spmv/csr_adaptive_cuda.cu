/* "csr_adaptive" on the cuda backend, after Greathouse & Daga (SC'14): one
 * thread block per row block of the host layout (csr_adaptive.c says how
 * rows are grouped). Every block loads its (at most 2048) entries with all
 * its threads (coalesced, every load issued before any is used: one round
 * trip to memory for indices and values, one for x) and stages the val*x
 * products in shared memory. Then stream blocks (many rows) sum each row
 * there with T threads, a block of a single row ("CSR-vector") sums it with
 * all 256 threads, and rows longer than the shared capacity ("CSR-vectorL")
 * are split in chunks of the same size, one block each, that write partial
 * sums to a buffer allocated at setup; a second small kernel adds each long
 * row's partials in order.
 *
 * Why partials and not atomics (as the paper does): ksolve wants bitwise
 * reproducible applies. Why not one block per long row: a row of 10^5 to
 * 10^6 entries would then stream through a single SM. The fixup kernel runs
 * only when the matrix has long rows. Chunk blocks come first in the grid so
 * the longest work starts first. */
#include "csr_family.h"
#include "../vec/cuda_check.h"

namespace {

const int kThreads = KS_CSR_ADAPTIVE_THREADS;
const int kWarps = kThreads / 32;
const int kShared = KS_CSR_ADAPTIVE_SHARED;
const int kStage = kShared / kThreads; /* staged entries per thread, at most */

static_assert(kThreads % 32 == 0 && kShared % kThreads == 0, "block shape");
static_assert(KS_CSR_ADAPTIVE_CHUNK <= kShared, "a chunk is staged like a block");

struct adaptive_state {
    ks_csr_device A;
    ks_int nblocks, nchunks, nlong;
    int2 *blk;        /* nblocks + 1: {first row, first entry} */
    int2 *chunks;     /* nchunks: {first entry, end entry} */
    int2 *longs;      /* nlong + 1: {row, first chunk}; the last holds {-1, nchunks} */
    double *partials; /* nchunks */
};

__device__ __forceinline__ void put(double *__restrict__ y, int r, double alpha, double s,
                                    double beta)
{
    /* beta == 0 must not read y: it may hold garbage or NaN. */
    y[r] = beta == 0.0 ? alpha * s : alpha * s + beta * y[r];
}

/* Products val[j] * x[colind[j]] of entries [e0, e0 + n), 0 < n <= K *
 * kThreads, into stage[0, n): each thread loads K entries, coalesced. All
 * loads are unconditional (indices clamped to the last entry, which is read
 * anyway) and every x load is issued before any product is stored, so the
 * whole block costs one round trip to memory for the indices and values and
 * one for x; guarded loads would make each x load wait for the store
 * before it. */
template <int K>
__device__ __forceinline__ void stage_k(int e0, int n, const int *__restrict__ colind,
                                        const double *__restrict__ val,
                                        const double *__restrict__ x, double *stage)
{
    const int tid = (int)threadIdx.x;
    int c[K];
    double v[K], xv[K];
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int j = e0 + min(tid + k * kThreads, n - 1);
        c[k] = __ldg(colind + j);
        v[k] = __ldg(val + j);
    }
#pragma unroll
    for (int k = 0; k < K; k++)
        xv[k] = __ldg(x + c[k]);
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int j = tid + k * kThreads;
        if (j < n)
            stage[j] = v[k] * xv[k];
    }
}

/* Stage n <= kShared products with as few loads per thread as n needs (the
 * choice is uniform across the block, so no warp diverges). */
__device__ __forceinline__ void stage_products(int e0, int n, const int *__restrict__ colind,
                                               const double *__restrict__ val,
                                               const double *__restrict__ x, double *stage)
{
    static_assert(kStage == 8, "staging cases below assume 8 entries a thread");
    if (n <= 0)
        return;
    if (n <= kThreads)
        stage_k<1>(e0, n, colind, val, x, stage);
    else if (n <= 2 * kThreads)
        stage_k<2>(e0, n, colind, val, x, stage);
    else if (n <= 4 * kThreads)
        stage_k<4>(e0, n, colind, val, x, stage);
    else
        stage_k<8>(e0, n, colind, val, x, stage);
}

/* Sum of stage[0, n) by the whole block after the staging barrier: thread t
 * adds t, t + kThreads, ... in order, then a width-32 shuffle tree per warp
 * and a width-kWarps tree over the warp sums. The result is in thread 0.
 * Every thread of the block must call it (it synchronises). */
__device__ double block_sum(int n, const double *stage, double *wsum)
{
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < kStage; k++) {
        const int j = (int)threadIdx.x + k * kThreads;
        if (j < n)
            s += stage[j];
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, off, 32);
    const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
    if (lane == 0)
        wsum[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < kWarps ? wsum[lane] : 0.0;
#pragma unroll
        for (int off = kWarps / 2; off > 0; off >>= 1)
            s += __shfl_down_sync(0xffffffffu, s, off, kWarps);
    }
    return s;
}

__global__ void __launch_bounds__(kThreads)
    adaptive_kernel(int nchunks, const int2 *__restrict__ chunks, double *__restrict__ partials,
                    const int2 *__restrict__ blk, const int *__restrict__ rowptr,
                    const int *__restrict__ colind, const double *__restrict__ val,
                    const double *__restrict__ x, double alpha, double beta,
                    double *__restrict__ y)
{
    __shared__ double stage[kShared];
    __shared__ double wsum[kWarps];
    const int tid = (int)threadIdx.x;
    int b = (int)blockIdx.x;

    /* Everything that decides the path depends on b only: uniform across
     * the block, so the barriers below are reached by all its threads. */
    if (b < nchunks) { /* a chunk of a long row: its partial sum */
        const int2 c = chunks[b];
        stage_products(c.x, c.y - c.x, colind, val, x, stage);
        __syncthreads();
        const double s = block_sum(c.y - c.x, stage, wsum);
        if (tid == 0)
            partials[b] = s;
        return;
    }
    b -= nchunks;
    const int2 lo = blk[b], hi = blk[b + 1];
    const int r0 = lo.x, nr = hi.x - lo.x, e0 = lo.y, n = hi.y - lo.y;
    if (nr == 1) {
        if (n > kShared)
            return; /* long row: the chunks and the fixup kernel write it */
        stage_products(e0, n, colind, val, x, stage);
        __syncthreads();
        const double s = block_sum(n, stage, wsum);
        if (tid == 0)
            put(y, r0, alpha, s, beta);
        return;
    }

    /* stream: thread group g (T lanes) owns row r0 + g. Its bounds are read
     * before the staging so their latency overlaps it. */
    const int T = ks_csr_adaptive_stream_lanes(nr);
    const int g = tid / T, lane = tid & (T - 1);
    const bool has = g < nr;
    int rs = 0, re = 0;
    if (has) {
        rs = __ldg(rowptr + r0 + g) - e0;
        re = __ldg(rowptr + r0 + g + 1) - e0;
    }
    stage_products(e0, n, colind, val, x, stage);
    __syncthreads();
    double s = 0.0;
    for (int k = rs + lane; k < re; k += T)
        s += stage[k];
    /* All 32 lanes of every warp reach the shuffles (T is block-uniform). */
    for (int off = T / 2; off > 0; off >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, off, T);
    if (has && lane == 0)
        put(y, r0 + g, alpha, s, beta);
}

/* One warp per long row: lane i adds partials i, i + 32, ... of the row in
 * order, then a width-32 tree. */
__global__ void __launch_bounds__(kThreads)
    fixup_kernel(int nlong, const int2 *__restrict__ longs, const double *__restrict__ partials,
                 double alpha, double beta, double *__restrict__ y)
{
    const int w = (int)((blockIdx.x * (unsigned)kThreads + threadIdx.x) >> 5);
    const int lane = (int)threadIdx.x & 31;
    if (w >= nlong)
        return; /* the whole warp leaves together */
    const int2 a = longs[w], b = longs[w + 1];
    double s = 0.0;
    for (int g = a.y + lane; g < b.y; g += 32)
        s += partials[g];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, off, 32);
    if (lane == 0)
        put(y, a.x, alpha, s, beta);
}

void adaptive_destroy(ks_backend *be, void *state)
{
    adaptive_state *s = (adaptive_state *)state;
    if (!s)
        return;
    ks_csr_device_free(be, &s->A);
    void *ptrs[4] = {s->blk, s->chunks, s->longs, s->partials};
    for (int i = 0; i < 4; i++)
        if (ptrs[i])
            be->ops->free(be, ptrs[i]);
    free(s);
}

/* Pairs built on the host, then uploaded (n pairs; nothing when n == 0). */
ks_error upload_pairs(ks_backend *be, const int2 *h, ks_int n, int2 **d, const char *what)
{
    *d = NULL;
    if (n == 0)
        return KS_OK;
    return ks_be_upload_new(be, h, sizeof(int2) * (size_t)n, (void **)d, what);
}

ks_error build(ks_backend *be, const ks_csr_adaptive_layout *L, adaptive_state *s)
{
    const ks_csr *A = &L->A;
    KS_TRY(ks_csr_device_upload(be, A, "csr_adaptive", &s->A));
    size_t most = (size_t)L->nblocks + 1;
    if ((size_t)L->nchunks > most)
        most = (size_t)L->nchunks;
    int2 *h = (int2 *)ks_malloc(sizeof(int2) * most, "csr_adaptive descriptors");
    if (!h)
        return KS_ERR_MEMORY;
    for (ks_int b = 0; b <= L->nblocks; b++)
        h[b] = make_int2(L->block_row[b], A->rowptr[L->block_row[b]]);
    ks_error e = upload_pairs(be, h, L->nblocks + 1, &s->blk, "csr_adaptive blocks");
    /* Each upload waits for its copy (vec/cuda.cu), so h may be refilled
     * right after it. */
    if (e == KS_OK && L->nchunks > 0) {
        for (ks_int g = 0; g < L->nchunks; g++) {
            ks_int r = L->chunk_row[g], c0 = L->chunk_begin[g], end = A->rowptr[r + 1];
            h[g] = make_int2(c0, end - c0 > KS_CSR_ADAPTIVE_CHUNK ? c0 + KS_CSR_ADAPTIVE_CHUNK
                                                                   : end);
        }
        e = upload_pairs(be, h, L->nchunks, &s->chunks, "csr_adaptive chunks");
    }
    if (e == KS_OK && L->nlong > 0) {
        for (ks_int l = 0; l < L->nlong; l++)
            h[l] = make_int2(L->long_row[l], L->long_chunk[l]);
        h[L->nlong] = make_int2(-1, L->long_chunk[L->nlong]);
        e = upload_pairs(be, h, L->nlong + 1, &s->longs, "csr_adaptive long rows");
    }
    if (e == KS_OK && L->nchunks > 0)
        e = ks_be_alloc(be, sizeof(double) * (size_t)L->nchunks, (void **)&s->partials,
                        "csr_adaptive long-row partial sums");
    free(h);
    return e;
}

ks_error adaptive_setup(ks_backend *be, const void *layout, void **state)
{
    const ks_csr_adaptive_layout *L = (const ks_csr_adaptive_layout *)layout;
    *state = NULL;
    adaptive_state *s = (adaptive_state *)ks_calloc(1, sizeof *s, "csr_adaptive state");
    if (!s)
        return KS_ERR_MEMORY;
    s->nblocks = L->nblocks;
    s->nchunks = L->nchunks;
    s->nlong = L->nlong;
    ks_error e = build(be, L, s);
    if (e != KS_OK) {
        adaptive_destroy(be, s);
        return e;
    }
    *state = s;
    return KS_OK;
}

ks_error adaptive_apply(ks_backend *be, void *state, double alpha, const double *x,
                        double beta, double *y)
{
    const adaptive_state *s = (const adaptive_state *)state;
    if (s->A.nrows == 0)
        return KS_OK;
    cudaStream_t stream = (cudaStream_t)ks_cuda_stream(be);
    const unsigned grid = (unsigned)(s->nchunks + s->nblocks);
    adaptive_kernel<<<grid, kThreads, 0, stream>>>(s->nchunks, s->chunks, s->partials, s->blk,
                                                   s->A.rowptr, s->A.colind, s->A.val, x, alpha,
                                                   beta, y);
    KS_CUDA_LAUNCH_CHECK("csr_adaptive adaptive_kernel");
    if (s->nlong > 0) {
        const unsigned fgrid = (unsigned)((s->nlong + kWarps - 1) / kWarps);
        fixup_kernel<<<fgrid, kThreads, 0, stream>>>(s->nlong, s->longs, s->partials, alpha,
                                                     beta, y);
        KS_CUDA_LAUNCH_CHECK("csr_adaptive fixup_kernel");
    }
    return KS_OK;
}

} // namespace

extern "C" const ks_spmv_format_ops ks_format_csr_adaptive_cuda = {
    "csr_adaptive",
    KS_BACKEND_CUDA,
    "adaptive CSR (Greathouse-Daga): row blocks staged in shared memory, long rows split "
    "deterministically",
    ks_csr_adaptive_layout_build,
    ks_csr_adaptive_layout_apply,
    ks_csr_adaptive_layout_bytes,
    ks_csr_adaptive_layout_free,
    adaptive_setup,
    adaptive_apply,
    adaptive_destroy,
    NULL, /* gs_sweep */
    ks_csr_adaptive_layout_to_csr,
};
