/* "csr_adaptive" on the cuda backend, after Greathouse & Daga (SC'14): one
 * thread block per row block of the host layout (csr_adaptive.c says how
 * rows are grouped). Every block loads its (at most 2048) entries with all
 * its threads (coalesced, every load issued before any is used: one round
 * trip to memory for indices and values, one for x) and stages the val*x
 * products in shared memory. Then stream blocks (many rows) sum each row
 * there with T threads, a block of a single row ("CSR-vector") sums it with
 * all 256 threads, and rows longer than the shared capacity ("CSR-vectorL")
 * are split in chunks of the same size, one block each, that write partial
 * sums to a buffer allocated at setup. The block that finishes a long row's
 * last chunk (whichever it is: a per-row counter says) adds that row's
 * partials in chunk order and writes y, in the same launch: an apply is
 * always one kernel.
 *
 * Why partials and not atomics on y (as the paper does): ksolve wants
 * bitwise reproducible applies. The sum of a long row's partials has a
 * fixed order (lane i of one warp adds partials i, i + 32, ... then a
 * width-32 tree), so which block adds them does not change the result. Why
 * not one block per long row: a row of 10^5 to 10^6 entries would then
 * stream through a single SM. Chunk blocks come first in the grid so the
 * longest work starts first.
 *
 * Memory ordering of the long-row path: a chunk block's thread 0 stores its
 * partial (ordinary store), __threadfence(), then atomicAdd on the row's
 * counter; the block that brings the counter to the row's chunk count
 * fences again, so every partial of the row happens-before its reads, which
 * go through L2 (__ldcg: the partials were written in this launch, so
 * neither the read-only path nor a possibly stale L1 line may serve them).
 * That block resets the counter to 0 for the next apply (the next launch on
 * the stream sees it), so no memset launch is needed. Counters and partials
 * belong to the matrix: two applies of one matrix must not run concurrently
 * (on one backend stream they never do). */
#include "csr_block_pair.h"
#include "csr_family.h"
#include "format_cuda.h"
#include "../vec/cuda_check.h"

#include <string.h>

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
    int4 *chunks;     /* nchunks: {first entry, end entry, long row index, 0} */
    int2 *longs;      /* nlong + 1: {row, first chunk}; the last holds {-1, nchunks} */
    double *partials; /* nchunks */
    unsigned *counts; /* nlong: chunks of the row finished in this apply; 0 between applies */
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

/* The end of a long row's chunk block, after its partial s is in thread 0:
 * publish s; the block that finishes the row's last chunk adds the row's
 * partials in the fixed order and writes y[row]. Every thread of the block
 * must call it (it synchronises). l is the long row's index; a and b are
 * longs[l] and longs[l + 1], valid in warp 0. */
__device__ void finish_chunk(int g, int l, int2 a, int2 b, double s, double *partials,
                             unsigned *counts, double alpha, double beta,
                             double *__restrict__ y)
{
    __shared__ int last;
    const int tid = (int)threadIdx.x;
    if (tid == 0) {
        partials[g] = s;
        __threadfence(); /* the partial is visible before the count says so */
        const unsigned n = (unsigned)(b.y - a.y);
        const bool done = atomicAdd(counts + l, 1u) == n - 1u;
        if (done) {
            __threadfence(); /* acquire: the other blocks' partials before our reads */
            counts[l] = 0u;  /* ready for the next apply; no block of this one adds again */
        }
        last = done;
    }
    __syncthreads();
    if (!last || tid >= 32)
        return; /* block-uniform, then the whole of warp 0 continues */
    double t = 0.0;
    for (int k = a.y + tid; k < b.y; k += 32)
        t += __ldcg(partials + k);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        t += __shfl_down_sync(0xffffffffu, t, off, 32);
    if (tid == 0)
        put(y, a.x, alpha, t, beta);
}

__global__ void __launch_bounds__(kThreads)
    adaptive_kernel(int nchunks, const int4 *__restrict__ chunks,
                    const int2 *__restrict__ longs, double *partials, unsigned *counts,
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
    if (b < nchunks) { /* a chunk of a long row */
        const int4 c = __ldg(chunks + b);
        /* The row's descriptors, for the block that may finish it: loaded
         * now so their latency hides behind the staging. */
        int2 la = make_int2(0, 0), lb = make_int2(0, 0);
        if (tid < 32) {
            la = __ldg(longs + c.z);
            lb = __ldg(longs + c.z + 1);
        }
        stage_products(c.x, c.y - c.x, colind, val, x, stage);
        __syncthreads();
        const double s = block_sum(c.y - c.x, stage, wsum);
        finish_chunk(b, c.z, la, lb, s, partials, counts, alpha, beta, y);
        return;
    }
    b -= nchunks;
    const int2 lo = blk[b], hi = blk[b + 1];
    const int r0 = lo.x, nr = hi.x - lo.x, e0 = lo.y, n = hi.y - lo.y;
    if (nr == 1) {
        if (n > kShared)
            return; /* long row: its chunk blocks write it */
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

void adaptive_destroy(ks_backend *be, void *state)
{
    adaptive_state *s = (adaptive_state *)state;
    if (!s)
        return;
    ks_csr_device_free(be, &s->A);
    void *p[] = {s->blk, s->chunks, s->longs, s->partials, s->counts};
    ks_cufmt_free(be, p, KS_CUFMT_COUNT(p));
    free(s);
}

/* The CSR arrays, the descriptors (built on the host in one buffer) and
 * the long rows' partial-sum scratch. Arrays of 0 bytes (no long rows)
 * stay NULL. */
ks_error build(ks_backend *be, const ks_csr_adaptive_layout *L, adaptive_state *s)
{
    const ks_csr *A = &L->A;
    KS_TRY(ks_csr_device_upload(be, A, "csr_adaptive", &s->A));
    KS_TRY(ks_csr_block_pair_get(&s->A.block_pair));
    const size_t nb = (size_t)L->nblocks + 1, nc = (size_t)L->nchunks, nl = (size_t)L->nlong;
    /* chunks first: int4 wants the 16-byte alignment malloc gives */
    void *h = ks_malloc(sizeof(int4) * nc + sizeof(int2) * (nb + nl + 1) + sizeof(unsigned) * nl,
                        "csr_adaptive descriptors");
    if (!h)
        return KS_ERR_MEMORY;
    int4 *h4 = (int4 *)h;
    int2 *hb = (int2 *)(h4 + nc), *hl = hb + nb;
    unsigned *hc = (unsigned *)(hl + nl + 1);
    for (ks_int b = 0; b <= L->nblocks; b++)
        hb[b] = make_int2(L->block_row[b], A->rowptr[L->block_row[b]]);
    if (L->nchunks > 0) {
        for (ks_int l = 0; l < L->nlong; l++) {
            ks_int end = A->rowptr[L->long_row[l] + 1];
            for (ks_int g = L->long_chunk[l]; g < L->long_chunk[l + 1]; g++) {
                ks_int c0 = L->chunk_begin[g];
                h4[g] = make_int4(c0, end - c0 > KS_CSR_ADAPTIVE_CHUNK ? c0 + KS_CSR_ADAPTIVE_CHUNK
                                                                       : end,
                                  l, 0);
            }
        }
    }
    if (L->nlong > 0) {
        for (ks_int l = 0; l < L->nlong; l++)
            hl[l] = make_int2(L->long_row[l], L->long_chunk[l]);
        hl[L->nlong] = make_int2(-1, L->long_chunk[L->nlong]);
    }
    /* Counters start at 0 (uploaded zeros: no memset kernel). */
    memset(hc, 0, sizeof(unsigned) * nl);
    const ks_cufmt_array a[] = {
        {(void **)&s->blk, hb, sizeof(int2) * nb, "csr_adaptive blocks"},
        {(void **)&s->chunks, h4, sizeof(int4) * nc, "csr_adaptive chunks"},
        {(void **)&s->longs, hl, nl > 0 ? sizeof(int2) * (nl + 1) : 0, "csr_adaptive long rows"},
        {(void **)&s->partials, NULL, sizeof(double) * nc, "csr_adaptive long-row partial sums"},
        {(void **)&s->counts, hc, sizeof(unsigned) * nl, "csr_adaptive long-row counters"},
    };
    ks_error e = ks_cufmt_upload(be, a, KS_CUFMT_COUNT(a), KS_CUFMT_EMPTY_NULL);
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
    return ks_cufmt_done(be, e, s, adaptive_destroy, state);
}

ks_error adaptive_apply(ks_backend *be, void *state, double alpha, const double *x,
                        double beta, double *y)
{
    const adaptive_state *s = (const adaptive_state *)state;
    if (s->A.nrows == 0)
        return KS_OK;
    cudaStream_t stream = ks_cufmt_stream(be);
    const unsigned grid = (unsigned)(s->nchunks + s->nblocks);
    adaptive_kernel<<<grid, kThreads, 0, stream>>>(s->nchunks, s->chunks, s->longs, s->partials,
                                                   s->counts, s->blk, s->A.rowptr, s->A.colind,
                                                   s->A.val, x, alpha, beta, y);
    KS_CUDA_LAUNCH_CHECK("csr_adaptive adaptive_kernel");
    return KS_OK;
}

/* SpMM: the row blocks balance one vector's work; k columns give every
 * row k threads already, so the plain CSR SpMM serves. */
ks_error adaptive_spmm(ks_backend *be, void *state, int k, double alpha, const double *X,
                       double beta, double *Y)
{
    return ks_csr_device_spmm(be, &((const adaptive_state *)state)->A, k, alpha, X, beta, Y);
}

ks_error adaptive_fused_block(ks_backend *be, void *state, int k, const ks_fused_step *f)
{
    return ks_csr_device_fused_block(be, &((const adaptive_state *)state)->A, k, f);
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
    NULL, /* fused_step */
    0,    /* float_values */
    NULL, /* setup_sparse */
    NULL, /* state_bytes */
    NULL, /* reads_values */
    adaptive_spmm,
    adaptive_fused_block,
    NULL, /* spmm_dot */
    NULL, /* fused_block_dot */
    NULL, /* fused_ghost */
};
