/* "csr_vector" on the cuda backend: T consecutive lanes of a warp share one
 * row (T in 1..32, a power of two), stride through its entries, then combine
 * their partial sums with a warp-shuffle tree of width T. T follows the mean
 * row length (about four entries a lane, see choose_threads_per_row), so
 * short rows do not leave most of a warp idle and long rows still get
 * coalesced loads. ks_csr_device_upload, the device CSR copy, lives here
 * and serves the other CSR-family formats too; with float32 values this
 * format uploads only the row pointers through it and keeps (column, value)
 * pairs of its own. */
#include "csr_block_pair.h"
#include "csr_family.h"
#include "format_cuda.h"
#include "spmm_cuda.h"
#include "../vec/cuda_check.h"

#include <climits>
#include <cstdio>
#include <cstring>

namespace {

const int kBlock = 256; /* threads per block: a multiple of 32, so no warp is partial */
/* Blocks a multiprocessor must hold at once: 8 x 256 threads is its
 * maximum, so the kernels are held to 32 registers. They wait on memory,
 * and only more warps in flight hide that: at 40 registers (75 %
 * occupancy) the float32 fused pass of a 175k-row AMG level took 52 us,
 * at 32 registers 39 us (H100). */
const int kMinBlocks = 8;

struct csr_vector_state {
    ks_csr_device A; /* float32 values: A.colind and A.val NULL, pairs in cv */
    int borrowed;    /* A's arrays are the matrix's CSR (setup_sparse): not freed here */
    int2 *cv;
    int tpr;
};

/* Entry k of the matrix: column and value. float64 values come from two
 * arrays. float32 values are stored with their column as one 8-byte word
 * (column, value bits), so a warp's load of 32 entries brings 256 bytes in
 * one request: with separate 4-byte loads a warp needs twice the requests
 * in flight for the same bytes, and a float32 AMG level ran at about 55 %
 * of the memory bandwidth (H100, ncu). */
struct entries_f64 {
    const ks_int *__restrict__ col;
    const double *__restrict__ val;
    typedef double value_type;
    __device__ __forceinline__ void load(ks_int k, ks_int &c, double &v) const
    {
        c = __ldg(col + k);
        v = __ldg(val + k);
    }
};

struct entries_f32 {
    const int2 *__restrict__ cv;
    typedef float value_type;
    __device__ __forceinline__ void load(ks_int k, ks_int &c, float &v) const
    {
        const int2 q = __ldg(cv + k);
        c = q.x;
        v = __int_as_float(q.y);
    }
};

/* Threads the device runs at once, about: 132 SMs x 2048 on an H100 or
 * H200. A launch of fewer is latency-bound rather than bandwidth-bound. */
const double kFullDevice = 262144.0;

/* Lanes per row: the smallest power of two >= mean/4, so a lane has about
 * kUnroll = 4 entries of a mean-length row and loads them all before using
 * any (one round trip to memory for indices and values, one for x), and a
 * warp covers 32/T rows. That keeps every lane busy and many rows in
 * flight, which is what bandwidth-bound sizes need. When even then the
 * launch would not fill the device (a small matrix is latency-bound), T
 * doubles once: shorter chains per lane, more threads.
 * Measured on an H200 with bench_spmv (median apply, speed vs cuSPARSE
 * ALG1): poisson3d_27 256^3 (26.8 a row) T=8: 1.39x, where the previous
 * rule (mean/2, hypre's 4/8/16/32 for means up to 8/16/32/64) gave T=16:
 * 0.97x; poisson3d_7 256^3 (7.0 a row) T=2: 1.55x, previous T=4: 1.19x;
 * cage11, poisson3Da and cavity26 ran fastest with the doubled T. */
int choose_threads_per_row(const ks_csr *A)
{
    double mean = A->nrows > 0 ? (double)A->nnz / (double)A->nrows : 0.0;
    int t = 1;
    while (t < 32 && 4.0 * t < mean)
        t *= 2;
    if (t < 32 && (double)A->nrows * t < kFullDevice)
        t *= 2;
    return t;
}

/* Entries a lane loads before it uses any (see above). The sums keep the
 * lane's entry order, so results equal those of the plain strided loop. */
const int kUnroll = 4;

/* x_c, or the scaled iterate (xs xw_c) b_c of a step from zero (fused.h). */
template <bool S>
__device__ __forceinline__ double gather_x(const double *__restrict__ x,
                                           const double *__restrict__ xw, double xs, ks_int c)
{
    return S ? xs * __ldg(xw + c) * __ldg(x + c) : __ldg(x + c);
}

/* Row `row`'s sum A(row,:) x over the T lanes of its group; the full sum
 * is in lane 0. Every lane of the warp must call it (the shuffles use the
 * full mask), rows past the end included. S: x is made from b (fused.h). */
template <int T, typename E, bool S>
__device__ __forceinline__ double row_sum(unsigned row, int lane, ks_int nrows,
                                          const ks_int *__restrict__ rowptr, const E a,
                                          const double *__restrict__ x,
                                          const double *__restrict__ xw, double xs)
{
    double sum = 0.0;
    if (row < (unsigned)nrows) {
        const ks_int end = __ldg(rowptr + row + 1);
        for (ks_int j = __ldg(rowptr + row) + lane; j < end; j += kUnroll * T) {
            /* All loads unconditional (indices clamped to the row's last
             * entry, already being read) and every x load issued before any
             * product: a guarded load per entry would make each x load wait
             * for the previous entry's multiply-add. */
            ks_int c[kUnroll];
            /* float32 values stay narrow until used: fewer registers */
            typename E::value_type v[kUnroll];
            double xv[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                a.load(min(j + u * T, end - 1), c[u], v[u]);
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                xv[u] = gather_x<S>(x, xw, xs, c[u]);
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                if (j + u * T < end)
                    sum += (double)v[u] * xv[u];
        }
    }
    /* Width T keeps each row's group separate. */
#pragma unroll
    for (int off = T / 2; off > 0; off >>= 1)
        sum += __shfl_down_sync(0xffffffffu, sum, off, T);
    return sum;
}

/* 32-bit row math: the launch has nrows * T / kBlock blocks, so this cannot
 * overflow while nrows fits ks_int. */
template <int T>
__device__ __forceinline__ unsigned my_row()
{
    return blockIdx.x * (unsigned)(kBlock / T) + threadIdx.x / T;
}

template <int T, typename E>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
    csr_vector_kernel(ks_int nrows, const ks_int *__restrict__ rowptr, const E a,
                      const double *__restrict__ x, double alpha, double beta,
                      double *__restrict__ y)
{
    const unsigned row = my_row<T>();
    const int lane = (int)(threadIdx.x & (T - 1));
    const double sum = row_sum<T, E, false>(row, lane, nrows, rowptr, a, x, NULL, 0.0);
    /* beta == 0 must not read y: it may hold garbage or NaN. */
    if (lane == 0 && row < (unsigned)nrows)
        y[row] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[row];
}

/* The fused residual / smoother pass (fused.h). */
template <int T, typename E, bool S>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
    csr_vector_fused_kernel(ks_int nrows, const ks_int *__restrict__ rowptr, const E a,
                            const ks_fused_step f)
{
    const unsigned row = my_row<T>();
    const int lane = (int)(threadIdx.x & (T - 1));
    const bool mine = lane == 0 && row < (unsigned)nrows;
    const double sum = row_sum<T, E, S>(row, lane, nrows, rowptr, a, f.x, f.xw, f.xs);
    if (mine) {
        const ks_fused_in in = ks_fused_load(&f, (ks_int)row, 1);
        ks_fused_store(&f, (ks_int)row, &in, sum, in.w);
    }
}

template <int T>
unsigned grid_of(const csr_vector_state *s)
{
    return ks_cufmt_blocks((long long)s->A.nrows * T, kBlock);
}

/* apply (f == NULL) or the fused pass, entries of type E */
template <int T, typename E>
ks_error launch_e(const csr_vector_state *s, const E a, cudaStream_t stream, double alpha,
                  const double *x, double beta, double *y, const ks_fused_step *f)
{
    if (f) {
        if (f->xw)
            csr_vector_fused_kernel<T, E, true>
                <<<grid_of<T>(s), kBlock, 0, stream>>>(s->A.nrows, s->A.rowptr, a, *f);
        else
            csr_vector_fused_kernel<T, E, false>
                <<<grid_of<T>(s), kBlock, 0, stream>>>(s->A.nrows, s->A.rowptr, a, *f);
        KS_CUDA_LAUNCH_CHECK("csr_vector_fused_kernel");
        return KS_OK;
    }
    csr_vector_kernel<T, E><<<grid_of<T>(s), kBlock, 0, stream>>>(s->A.nrows, s->A.rowptr, a,
                                                                   x, alpha, beta, y);
    KS_CUDA_LAUNCH_CHECK("csr_vector_kernel");
    return KS_OK;
}

template <int T>
ks_error launch(const csr_vector_state *s, cudaStream_t stream, double alpha, const double *x,
                double beta, double *y, const ks_fused_step *f)
{
    if (s->cv)
        return launch_e<T>(s, entries_f32{s->cv}, stream, alpha, x, beta, y, f);
    return launch_e<T>(s, entries_f64{s->A.colind, s->A.val}, stream, alpha, x, beta, y, f);
}

ks_error dispatch(ks_backend *be, const csr_vector_state *s, double alpha, const double *x,
                  double beta, double *y, const ks_fused_step *f)
{
    if (s->A.nrows == 0)
        return KS_OK;
    cudaStream_t stream = ks_cufmt_stream(be);
    switch (s->tpr) {
    case 1: return launch<1>(s, stream, alpha, x, beta, y, f);
    case 2: return launch<2>(s, stream, alpha, x, beta, y, f);
    case 4: return launch<4>(s, stream, alpha, x, beta, y, f);
    case 8: return launch<8>(s, stream, alpha, x, beta, y, f);
    case 16: return launch<16>(s, stream, alpha, x, beta, y, f);
    case 32: return launch<32>(s, stream, alpha, x, beta, y, f);
    }
    return ks_seterr(KS_ERR_ARG, "csr_vector: threads_per_row %d is not a divisor of 32",
                     s->tpr);
}

/* The parameters and sizes this format takes (layout and sparse setup). */
ks_error check_params(ks_int nnz, const ks_spmv_params *prm)
{
    int tpr = prm ? prm->threads_per_row : 0;
    if (tpr < 0 || (tpr > 0 && (tpr > 32 || 32 % tpr != 0)))
        return ks_seterr(KS_ERR_ARG,
                         "csr_vector: threads_per_row = %d; use 0 (automatic) or a divisor of "
                         "32 (1, 2, 4, 8, 16, 32)",
                         tpr);
    /* The lane loop looks up to kUnroll * 32 entries past the row end in
     * 32-bit ints. */
    if (nnz > INT_MAX - 2 * kUnroll * 32)
        return ks_seterr(KS_ERR_UNSUPPORTED, "csr_vector: %d nonzeros exceed the 32-bit range",
                         (int)nnz);
    return KS_OK;
}

ks_error csr_vector_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    *layout = NULL;
    int tpr = prm ? prm->threads_per_row : 0;
    KS_TRY(check_params(A ? A->nnz : 0, prm));
    KS_TRY(ks_csr_layout_build(A, prm, layout));
    ks_csr_layout *L = (ks_csr_layout *)*layout;
    L->threads_per_row = tpr > 0 ? tpr : choose_threads_per_row(A);
    return KS_OK;
}

void csr_vector_destroy(ks_backend *be, void *state)
{
    csr_vector_state *s = (csr_vector_state *)state;
    if (!s)
        return;
    if (!s->borrowed)
        ks_csr_device_free(be, &s->A);
    if (s->cv)
        be->ops->free(be, s->cv);
    free(s);
}

/* float32 values: (column, value bits) pairs, uploaded. */
ks_error upload_pairs(ks_backend *be, const ks_csr *A, const float *valf, int2 **cv)
{
    int2 *h = (int2 *)ks_malloc(sizeof(int2) * (size_t)A->nnz + 1, "csr_vector float32 entries");
    if (!h)
        return KS_ERR_MEMORY;
#pragma omp parallel for schedule(static) if (A->nnz > 65536)
    for (ks_int k = 0; k < A->nnz; k++) {
        h[k].x = A->colind[k];
        memcpy(&h[k].y, &valf[k], sizeof(float));
    }
    ks_error e = ks_be_upload_new(be, h, sizeof(int2) * (size_t)A->nnz, (void **)cv,
                                  "csr_vector float32 entries");
    free(h);
    return e;
}

ks_error csr_vector_setup(ks_backend *be, const void *layout, void **state)
{
    const ks_csr_layout *L = (const ks_csr_layout *)layout;
    *state = NULL;
    csr_vector_state *s = (csr_vector_state *)ks_calloc(1, sizeof *s, "csr_vector state");
    if (!s)
        return KS_ERR_MEMORY;
    s->tpr = L->threads_per_row;
    ks_csr H = L->A;
    if (L->valf) {
        /* only the row pointers here; columns and values go as pairs */
        H.val = NULL;
        H.colind = NULL;
    }
    ks_error e = ks_csr_device_upload(be, &H, "csr_vector", &s->A);
    if (e == KS_OK)
        e = ks_csr_block_pair_get(&s->A.block_pair);
    if (e == KS_OK && L->valf && H.nnz > 0)
        e = upload_pairs(be, &L->A, L->valf, &s->cv);
    return ks_cufmt_done(be, e, s, csr_vector_destroy, state);
}

/* (column, float32 value bits) pairs from a device CSR; *bad gets the
 * first entry whose value overflows float (atomicMin: the same entry for
 * any schedule), nnz when none. */
__global__ void pairs_kernel(ks_int nnz, const ks_int *__restrict__ col,
                             const double *__restrict__ val, int2 *cv, ks_int *bad)
{
    for (ks_int k = blockIdx.x * blockDim.x + threadIdx.x; k < nnz;
         k += gridDim.x * blockDim.x) {
        const float f = (float)val[k];
        cv[k] = make_int2(col[k], __float_as_int(f));
        if (isinf(f) && !isinf(val[k]))
            atomicMin(bad, k);
    }
}

/* The state straight from the matrix's device CSR: float64 values are read
 * in place (the arrays are borrowed); float32 values become pairs, made on
 * the device. */
ks_error csr_vector_setup_sparse(ks_backend *be, const ks_sparse *A, const ks_spmv_params *prm,
                                 void **state, double *bytes)
{
    *state = NULL;
    KS_TRY(check_params(A->nnz, prm));
    csr_vector_state *s = (csr_vector_state *)ks_calloc(1, sizeof *s, "csr_vector state");
    if (!s)
        return KS_ERR_MEMORY;
    const int f32 = prm && prm->float_values;
    ks_csr sizes = {A->nrows, A->ncols, A->nnz, NULL, NULL, NULL};
    s->tpr = prm && prm->threads_per_row > 0 ? prm->threads_per_row
                                             : choose_threads_per_row(&sizes);
    s->borrowed = 1;
    s->A.nrows = A->nrows;
    s->A.ncols = A->ncols;
    s->A.nnz = A->nnz;
    s->A.rowptr = A->rowptr;
    s->A.colind = f32 ? NULL : A->colind;
    s->A.val = f32 ? NULL : A->val;
    *bytes = f32 ? ks_csr_bytes_per_apply_float(A->nrows, A->nnz)
                 : ks_csr_bytes_per_apply(A->nrows, A->nnz);
    ks_error e = ks_csr_block_pair_get(&s->A.block_pair);
    if (e == KS_OK && f32 && A->nnz > 0) {
        ks_int *bad = NULL, hbad = A->nnz;
        e = ks_be_alloc(be, sizeof(int2) * (size_t)A->nnz, (void **)&s->cv,
                        "csr_vector float32 entries");
        if (e == KS_OK)
            e = ks_be_upload_new(be, &hbad, sizeof hbad, (void **)&bad, "csr_vector range flag");
        if (e == KS_OK) {
            cudaStream_t st = ks_cufmt_stream(be);
            unsigned nb = ks_cufmt_blocks(A->nnz, kBlock);
            pairs_kernel<<<nb < 65535u * 16 ? nb : 65535u * 16, kBlock, 0, st>>>(
                A->nnz, A->colind, A->val, s->cv, bad);
            cudaError_t ce = cudaGetLastError();
            if (ce != cudaSuccess)
                e = ks_seterr(KS_ERR_DEVICE, "launch of pairs_kernel failed: %s",
                              cudaGetErrorString(ce));
        }
        if (e == KS_OK)
            e = be->ops->download(be, &hbad, bad, sizeof hbad);
        if (bad)
            be->ops->free(be, bad);
        if (e == KS_OK && hbad < A->nnz)
            e = ks_seterr(KS_ERR_UNSUPPORTED,
                          "float32 values: csr value %ld exceeds the float range", (long)hbad);
    }
    return ks_cufmt_done(be, e, s, csr_vector_destroy, state);
}

/* What the state holds beyond a borrowed CSR: the float32 pairs; a state
 * made from a layout holds its own device CSR. */
double csr_vector_state_bytes(const void *state)
{
    const csr_vector_state *s = (const csr_vector_state *)state;
    double b = s->cv ? 8.0 * (double)s->A.nnz : 0.0;
    if (!s->borrowed)
        b += 4.0 * ((double)s->A.nrows + 1.0) + (s->A.colind ? 4.0 * (double)s->A.nnz : 0.0) +
             (s->A.val ? 8.0 * (double)s->A.nnz : 0.0);
    return b;
}

/* Float32 pairs and a state with its own device CSR never read the
 * matrix's values. */
int csr_vector_reads_values(const void *state)
{
    const csr_vector_state *s = (const csr_vector_state *)state;
    return s->borrowed && s->A.val != NULL;
}

ks_error csr_vector_apply(ks_backend *be, void *state, double alpha, const double *x,
                          double beta, double *y)
{
    return dispatch(be, (const csr_vector_state *)state, alpha, x, beta, y, NULL);
}

ks_error csr_vector_fused_step(ks_backend *be, void *state, const ks_fused_step *f)
{
    return dispatch(be, (const csr_vector_state *)state, 0.0, NULL, 0.0, NULL, f);
}

/* Lanes an entry of Y (L, a power of two to 32, a compile-time constant):
 * thread g is lane g % L of entry (or pair) g / L. Lane l sums the row's
 * entries l, l + L, ... in order, then the lanes' sums meet by shuffles in
 * a fixed tree: row_sum's order with T = L, so with the format's lanes a
 * column has its SpMV's bits. L = 1 is the one-thread-an-entry walk, the
 * code it always was (a run-time lane stride there cost the big levels a
 * fifth: H200, 7-point 256^3, k = 8, 2026-11-29). `valid`: the entry's row
 * exists; past the last row the threads still join the shuffles. */
template <int L>
struct ks_block_lanes {
    int lane;
    bool valid;
};

template <int L>
__device__ __forceinline__ ks_block_lanes<L> ks_block_lanes_of(long long g, bool valid)
{
    ks_block_lanes<L> ln;
    ln.lane = (int)(g & (L - 1));
    ln.valid = valid;
    return ln;
}

template <int L>
__device__ __forceinline__ double ks_block_lanes_sum(double sum)
{
#pragma unroll
    for (int off = L / 2; off > 0; off >>= 1)
        sum += __shfl_down_sync(0xffffffffu, sum, off, L);
    return sum;
}

/* Column q.j of row q.i's product over this lane's entries of the row in
 * order (all of them at L = 1), the lanes then summed; S: the iterate made
 * from X as the fused pass makes it (xs xw_c X(c, j)). The rounding is
 * spelled out (the scale xs xw_c rounded, then its product with X(c, j),
 * then one fused multiply-add a term: what nvcc makes of row_sum's
 * sum += v * (xs * xw_c * x)), so block_row_sum2 can repeat it exactly. */
template <typename E, bool S, int L>
__device__ __forceinline__ double block_row_sum(const ks_spmm_pos &q, const ks_block_lanes<L> &ln,
                                                const ks_int *__restrict__ rowptr, E ent,
                                                const double *__restrict__ X,
                                                const double *__restrict__ xw, double xs)
{
    double sum = 0.0;
    const ks_int end = ln.valid ? __ldg(rowptr + q.i + 1) : 0;
    for (ks_int p = ln.valid ? __ldg(rowptr + q.i) + ln.lane : 0; p < end; p += L) {
        ks_int c;
        typename E::value_type v;
        ent.load(p, c, v);
        double x = __ldg(X + (long long)c * q.kk + q.j);
        if (S)
            x = __dmul_rn(__dmul_rn(xs, __ldg(xw + c)), x);
        sum = __fma_rn((double)v, x, sum);
    }
    return ks_block_lanes_sum<L>(sum);
}

/* Columns j and j + 1 (j even) of row i of a block of kk columns (X
 * 16-byte aligned): one load of each matrix entry and one 16-byte load of
 * X's pair serve both columns. Each column is summed as block_row_sum sums
 * it (the same entries in the same order, the same rounded operations), so
 * both sums have the one-column kernels' bits; tests/test_spmm.c and
 * tests/test_fused_block.c check that with exact equality on the GPU. */
template <typename E, bool S, int L>
__device__ __forceinline__ double2 block_row_sum2(long long i, long long kk, int j,
                                                  const ks_block_lanes<L> &ln,
                                                  const ks_int *__restrict__ rowptr, E ent,
                                                  const double *__restrict__ X,
                                                  const double *__restrict__ xw, double xs)
{
    double2 sum = make_double2(0.0, 0.0);
    const ks_int end = ln.valid ? __ldg(rowptr + i + 1) : 0;
    for (ks_int p = ln.valid ? __ldg(rowptr + i) + ln.lane : 0; p < end; p += L) {
        ks_int c;
        typename E::value_type v;
        ent.load(p, c, v);
        double2 x = __ldg((const double2 *)(X + (long long)c * kk + j));
        if (S) {
            const double sc = __dmul_rn(xs, __ldg(xw + c));
            x.x = __dmul_rn(sc, x.x);
            x.y = __dmul_rn(sc, x.y);
        }
        sum.x = __fma_rn((double)v, x.x, sum.x);
        sum.y = __fma_rn((double)v, x.y, sum.y);
    }
    sum.x = ks_block_lanes_sum<L>(sum.x);
    sum.y = ks_block_lanes_sum<L>(sum.y);
    return sum;
}

/* SpMM (spmm_cuda.h): thread e = i*k + j (L lanes each) sums column j of
 * row i; the row's k threads share each entry load. */
template <typename E, int K, int L>
__global__ void __launch_bounds__(256)
    csr_spmm_kernel(ks_int nrows, const ks_int *__restrict__ rowptr, E ent, int k,
                    const double *__restrict__ X, double alpha, double beta,
                    double *__restrict__ Y)
{
    const long long g = (long long)blockIdx.x * 256 + threadIdx.x;
    const ks_spmm_pos q = ks_spmm_at<K>(g / L, k);
    const ks_block_lanes<L> ln = ks_block_lanes_of<L>(g, q.i < nrows);
    if (L == 1 && !ln.valid)
        return;
    const double sum = block_row_sum<E, false, L>(q, ln, rowptr, ent, X, NULL, 0.0);
    if (ln.valid && ln.lane == 0)
        ks_spmm_store(Y, q.e, alpha, sum, beta);
}

/* The SpMM two columns a thread (k even, KS_CSR_BLOCK_PAIR): thread
 * p = i*(k/2) + h (L lanes each) sums columns 2h and 2h + 1 of row i (H:
 * k / 2 as a constant, 0 at run time), so the row's k / 2 threads load each
 * entry once for two columns and half as many threads run. Results equal
 * csr_spmm_kernel's bit for bit (block_row_sum2, ks_spmm_store2). */
template <typename E, int H, int L>
__global__ void __launch_bounds__(256)
    csr_spmm_pair_kernel(ks_int nrows, const ks_int *__restrict__ rowptr, E ent, int k,
                         const double *__restrict__ X, double alpha, double beta,
                         double *__restrict__ Y)
{
    const long long g = (long long)blockIdx.x * 256 + threadIdx.x;
    const ks_spmm_pos q = ks_spmm_at<H>(g / L, k / 2);
    const ks_block_lanes<L> ln = ks_block_lanes_of<L>(g, q.i < nrows);
    if (L == 1 && !ln.valid)
        return;
    const double2 s =
        block_row_sum2<E, false, L>(q.i, 2LL * q.kk, 2 * q.j, ln, rowptr, ent, X, NULL, 0.0);
    if (ln.valid && ln.lane == 0)
        ks_spmm_store2(Y, 2 * q.e, alpha, s.x, s.y, beta);
}

/* The fused pass on k columns (fused.h, ks_fused_bload): the SpMM's sum
 * for entry (i, j), then the entry's epilogue (lane 0), so the k threads
 * of a row read its matrix entries once for all the columns and the update
 * reads B, X, Xprev and writes Xo in the same pass. S: the iterate made
 * from B (xw). */
template <typename E, int K, bool S, int L>
__global__ void __launch_bounds__(256)
    csr_fused_block_kernel(ks_int nrows, const ks_int *__restrict__ rowptr, E ent, int k,
                           const ks_fused_step f)
{
    const long long g = (long long)blockIdx.x * 256 + threadIdx.x;
    const ks_spmm_pos q = ks_spmm_at<K>(g / L, k);
    const ks_block_lanes<L> ln = ks_block_lanes_of<L>(g, q.i < nrows);
    if (L == 1 && !ln.valid)
        return;
    const double sum = block_row_sum<E, S, L>(q, ln, rowptr, ent, f.x, f.xw, f.xs);
    if (!ln.valid || ln.lane != 0)
        return;
    const ks_fused_in in = ks_fused_bload(&f, (ks_int)q.i, q.kk, q.j);
    ks_fused_store(&f, (ks_int)q.e, &in, sum, in.w);
}

/* ks_fused_bload and ks_fused_store on entries e and e + 1 of row i (e
 * even, every block 16-byte aligned), ax their row sums: the same operands
 * and the same expressions a column (ks_smooth_value_v), with 16-byte
 * loads and stores. Xprev may be Xo: read before it is written. */
__device__ __forceinline__ void fused_store2(const ks_fused_step &f, long long i, long long e,
                                             double2 ax)
{
    const double2 b = *(const double2 *)(f.b + e);
    double2 x = make_double2(0.0, 0.0), xp = make_double2(0.0, 0.0);
    double w = 0.0;
    if (f.xo) {
        x = *(const double2 *)(f.x + e);
        if (f.xw) {
            x.x = f.xs * f.xw[i] * x.x;
            x.y = f.xs * f.xw[i] * x.y;
        }
        if (f.a != 0.0 && f.xprev)
            xp = *(const double2 *)(f.xprev + e);
        w = f.w[i];
    }
    const double t0 = b.x - ax.x, t1 = b.y - ax.y;
    if (f.r)
        *(double2 *)(f.r + e) = make_double2(t0, t1);
    if (f.xo)
        *(double2 *)(f.xo + e) = make_double2(ks_smooth_value_v(f.a, f.c, w, x.x, xp.x, t0),
                                              ks_smooth_value_v(f.a, f.c, w, x.y, xp.y, t1));
    if (f.x1)
        *(double2 *)(f.x1 + e) = x;
}

/* The fused block pass two columns a thread (k even, KS_CSR_BLOCK_PAIR),
 * threads as in csr_spmm_pair_kernel: each column's sum and update equal
 * csr_fused_block_kernel's bit for bit. */
template <typename E, int H, bool S, int L>
__global__ void __launch_bounds__(256)
    csr_fused_pair_kernel(ks_int nrows, const ks_int *__restrict__ rowptr, E ent, int k,
                          const ks_fused_step f)
{
    const long long g = (long long)blockIdx.x * 256 + threadIdx.x;
    const ks_spmm_pos q = ks_spmm_at<H>(g / L, k / 2);
    const ks_block_lanes<L> ln = ks_block_lanes_of<L>(g, q.i < nrows);
    if (L == 1 && !ln.valid)
        return;
    const double2 s =
        block_row_sum2<E, S, L>(q.i, 2LL * q.kk, 2 * q.j, ln, rowptr, ent, f.x, f.xw, f.xs);
    if (ln.valid && ln.lane == 0)
        fused_store2(f, q.i, 2 * q.e, s);
}

/* Whether the blocks of this call allow the pair kernels: X, Y of the
 * SpMM, or the fused pass's blocks (w and xw are read a row, 8 bytes). */
int blocks_aligned(const double *X, const double *Y, const ks_fused_step *f)
{
    if (!f) {
        const void *p[] = {X, Y};
        return ks_csr_block_pair_aligned(p, 2);
    }
    const void *p[] = {f->b, f->x, f->r, f->xprev, f->xo, f->x1};
    return ks_csr_block_pair_aligned(p, 6);
}

/* The pair kernels' launch (nrows * k / 2 * L threads); K: k / 2 fixed, or
 * 0 (run time). */
template <typename E, int H, int L>
void launch_pair(const ks_cufmt_launch &lc, ks_int nrows, const ks_int *rowptr, E ent, int k,
                 double alpha, const double *X, double beta, double *Y, const ks_fused_step *f)
{
    if (!f)
        csr_spmm_pair_kernel<E, H, L>
            <<<lc.blocks, 256, 0, lc.stream>>>(nrows, rowptr, ent, k, X, alpha, beta, Y);
    else if (f->xw)
        csr_fused_pair_kernel<E, H, true, L>
            <<<lc.blocks, 256, 0, lc.stream>>>(nrows, rowptr, ent, k, *f);
    else
        csr_fused_pair_kernel<E, H, false, L>
            <<<lc.blocks, 256, 0, lc.stream>>>(nrows, rowptr, ent, k, *f);
}

/* One thread an entry (L lanes each). */
template <typename E, int K, int L>
void launch_one(const ks_cufmt_launch &lc, ks_int nrows, const ks_int *rowptr, E ent, int k,
                double alpha, const double *X, double beta, double *Y, const ks_fused_step *f)
{
    if (!f)
        csr_spmm_kernel<E, K, L>
            <<<lc.blocks, 256, 0, lc.stream>>>(nrows, rowptr, ent, k, X, alpha, beta, Y);
    else if (f->xw)
        csr_fused_block_kernel<E, K, true, L>
            <<<lc.blocks, 256, 0, lc.stream>>>(nrows, rowptr, ent, k, *f);
    else
        csr_fused_block_kernel<E, K, false, L>
            <<<lc.blocks, 256, 0, lc.stream>>>(nrows, rowptr, ent, k, *f);
}

/* L > 1: k at run time (the lanes, not the column count, are what the
 * small levels need), L from the choice. */
#define KS_CSR_LANES_DISPATCH(lsh, LAUNCH)                                                    \
    do {                                                                                      \
        switch (lsh) {                                                                        \
        case 1: LAUNCH(2); break;                                                             \
        case 2: LAUNCH(4); break;                                                             \
        case 3: LAUNCH(8); break;                                                             \
        case 4: LAUNCH(16); break;                                                            \
        default: LAUNCH(32); break;                                                           \
        }                                                                                     \
    } while (0)

/* The SpMM (f NULL) or the fused block pass f: two columns a thread where
 * pair_on (KS_CSR_BLOCK_PAIR at setup), k and the blocks allow it
 * (csr_block_pair.h), else one thread an entry; 1 << lsh lanes an entry
 * (ks_csr_block_lanes_shift). */
template <typename E>
ks_error csr_block(ks_backend *be, ks_int nrows, const ks_int *rowptr, E ent, int k, int lsh,
                   double alpha, const double *X, double beta, double *Y,
                   const ks_fused_step *f, int pair_on)
{
    const int pair = ks_csr_block_pair_use(pair_on, k, blocks_aligned(X, Y, f));
    ks_cufmt_launch lc;
    if (!ks_cufmt_launch_for(be, ((long long)nrows * (pair ? k / 2 : k)) << lsh, 256, &lc))
        return KS_OK;
#define KS_CSR_PAIR1(H) launch_pair<E, H, 1>(lc, nrows, rowptr, ent, k, alpha, X, beta, Y, f)
#define KS_CSR_ONE1(K) launch_one<E, K, 1>(lc, nrows, rowptr, ent, k, alpha, X, beta, Y, f)
#define KS_CSR_PAIRL(L) launch_pair<E, 0, L>(lc, nrows, rowptr, ent, k, alpha, X, beta, Y, f)
#define KS_CSR_ONEL(L) launch_one<E, 0, L>(lc, nrows, rowptr, ent, k, alpha, X, beta, Y, f)
    if (lsh == 0 && pair)
        KS_SPMM_DISPATCH(k / 2, KS_CSR_PAIR1);
    else if (lsh == 0)
        KS_SPMM_DISPATCH(k, KS_CSR_ONE1);
    else if (pair)
        KS_CSR_LANES_DISPATCH(lsh, KS_CSR_PAIRL);
    else
        KS_CSR_LANES_DISPATCH(lsh, KS_CSR_ONEL);
#undef KS_CSR_PAIR1
#undef KS_CSR_ONE1
#undef KS_CSR_PAIRL
#undef KS_CSR_ONEL
    KS_CUDA_LAUNCH_CHECK(f ? (pair ? "csr_fused_pair_kernel" : "csr_fused_block_kernel")
                           : (pair ? "csr_spmm_pair_kernel" : "csr_spmm_kernel"));
    return KS_OK;
}

/* The lanes of a block call on this matrix: KS_CSR_BLOCK_LANES, or chosen
 * (ks_csr_block_lanes_shift) with spmv_lanes the format's SpMV lanes (0:
 * none, csr_adaptive's rows). */
ks_error block_lanes(ks_int nrows, ks_int nnz, int k, int spmv_lanes, int *lsh)
{
    static int nsm = -1; /* the device's; threads that race store the same value */
    if (nsm < 0)
        nsm = ks_cufmt_sm_count();
    int lanes = 0;
    KS_TRY(ks_csr_block_lanes_get(&lanes));
    *lsh = ks_csr_block_lanes_shift(lanes, nrows, nnz, k, nsm, spmv_lanes);
    return KS_OK;
}

ks_error csr_vector_spmm(ks_backend *be, void *state, int k, double alpha, const double *X,
                         double beta, double *Y)
{
    const csr_vector_state *s = (const csr_vector_state *)state;
    int lsh = 0;
    KS_TRY(block_lanes(s->A.nrows, s->A.nnz, k, s->tpr, &lsh));
    if (s->cv) {
        entries_f32 ent = {s->cv};
        return csr_block(be, s->A.nrows, s->A.rowptr, ent, k, lsh, alpha, X, beta, Y, NULL,
                         s->A.block_pair);
    }
    entries_f64 ent = {s->A.colind, s->A.val};
    return csr_block(be, s->A.nrows, s->A.rowptr, ent, k, lsh, alpha, X, beta, Y, NULL,
                     s->A.block_pair);
}

ks_error csr_vector_fused_block(ks_backend *be, void *state, int k, const ks_fused_step *f)
{
    const csr_vector_state *s = (const csr_vector_state *)state;
    int lsh = 0;
    KS_TRY(block_lanes(s->A.nrows, s->A.nnz, k, s->tpr, &lsh));
    if (s->cv) {
        entries_f32 ent = {s->cv};
        return csr_block(be, s->A.nrows, s->A.rowptr, ent, k, lsh, 0.0, NULL, 0.0, NULL, f,
                         s->A.block_pair);
    }
    entries_f64 ent = {s->A.colind, s->A.val};
    return csr_block(be, s->A.nrows, s->A.rowptr, ent, k, lsh, 0.0, NULL, 0.0, NULL, f,
                     s->A.block_pair);
}

} // namespace

extern "C" void ks_csr_device_free(ks_backend *be, ks_csr_device *d)
{
    void *p[] = {d->rowptr, d->colind, d->val};
    ks_cufmt_free(be, p, KS_CUFMT_COUNT(p));
    d->rowptr = d->colind = NULL;
    d->val = NULL;
}

extern "C" ks_error ks_csr_device_upload(ks_backend *be, const ks_csr *A, const char *what,
                                         ks_csr_device *d)
{
    memset(d, 0, sizeof *d);
    d->nrows = A->nrows;
    d->ncols = A->ncols;
    d->nnz = A->nnz;
    char label[3][96];
    snprintf(label[0], sizeof label[0], "%s row pointers", what);
    snprintf(label[1], sizeof label[1], "%s column indices", what);
    snprintf(label[2], sizeof label[2], "%s values", what);
    /* NULL columns or values: the format uploads its own. An empty matrix
     * has no entries to read (no arrays of 0 bytes). */
    const size_t nnz = (size_t)A->nnz;
    const ks_cufmt_array a[] = {
        {(void **)&d->rowptr, A->rowptr, sizeof(ks_int) * ((size_t)A->nrows + 1), label[0]},
        {(void **)&d->colind, A->colind, A->colind ? sizeof(ks_int) * nnz : 0, label[1]},
        {(void **)&d->val, A->val, A->val ? sizeof(double) * nnz : 0, label[2]},
    };
    return ks_cufmt_upload(be, a, KS_CUFMT_COUNT(a), KS_CUFMT_EMPTY_NULL);
}

extern "C" ks_error ks_csr_device_spmm(ks_backend *be, const ks_csr_device *A, int k,
                                       double alpha, const double *X, double beta, double *Y)
{
    entries_f64 ent = {A->colind, A->val};
    int lsh = 0;
    KS_TRY(block_lanes(A->nrows, A->nnz, k, 0, &lsh));
    return csr_block(be, A->nrows, A->rowptr, ent, k, lsh, alpha, X, beta, Y, NULL,
                     A->block_pair);
}

extern "C" ks_error ks_csr_device_fused_block(ks_backend *be, const ks_csr_device *A, int k,
                                             const ks_fused_step *f)
{
    entries_f64 ent = {A->colind, A->val};
    int lsh = 0;
    KS_TRY(block_lanes(A->nrows, A->nnz, k, 0, &lsh));
    return csr_block(be, A->nrows, A->rowptr, ent, k, lsh, 0.0, NULL, 0.0, NULL, f,
                     A->block_pair);
}

extern "C" const ks_spmv_format_ops ks_format_csr_vector_cuda = {
    "csr_vector",
    KS_BACKEND_CUDA,
    "vector CSR: 1-32 lanes per row by mean row length, warp-shuffle reduction",
    csr_vector_layout_build,
    ks_csr_layout_apply,
    ks_csr_layout_bytes,
    ks_csr_layout_free,
    csr_vector_setup,
    csr_vector_apply,
    csr_vector_destroy,
    NULL, /* gs_sweep */
    ks_csr_layout_to_csr,
    csr_vector_fused_step,
    1, /* float_values */
    csr_vector_setup_sparse,
    csr_vector_state_bytes,
    csr_vector_reads_values,
    csr_vector_spmm,
    csr_vector_fused_block,
    NULL, /* spmm_dot */
    NULL, /* fused_block_dot */
    NULL, /* fused_ghost */
};
