/* dia's SpMM and fused block pass on the cuda backend: the kernels and
 * their launches, for the files that compile the walks (dia_spmm_b256.cu,
 * dia_spmm_b512.cu, dia_spmm_b1024.cu: one block size each, so that the
 * build compiles them side by side; dia_spmm_cuda.cu picks one by the
 * variant). For those files only. Not installed.
 *
 * Every variant sums
 * each column over the diagonals in the SpMV's order (dia_cuda.cu's
 * dia_row_sum), so a column equals the SpMV's result up to contraction.
 * Bytes below: 7-point n^3 with n = 256 at k = 8 (an X row is 64 bytes).
 *
 *  old:  thread e = i*k + j sums entry (i, j). A 256-thread block covers
 *        256 / k rows (32 at k = 8), so a row's X rows at +-n and +-n^2
 *        belong to other blocks on other multiprocessors: all come from
 *        L2, 7 x 64 + 56 (values) + 64 (Y) = 568 bytes a row through L2
 *        for the 184 the floor counts from memory.
 *  tile: the same threads, but each 512-thread block walks a tile of rows
 *        (4096 by default) in steps of 512 / k rows, so an X row fetched
 *        for one row's +n is still in L1 when it serves later rows as
 *        their 0, +-1 and -n (a window of 2n + 512 / k rows, 36 KB); only
 *        the +-n^2 rows come from L2 again: 56 + 64 + 128 + 64 = 312 bytes
 *        a row through L2, memory still 184. The blocks of a wave sit a
 *        tile apart, each at about the same point of its tile, so the
 *        +-n^2 uses of an X row (tiles n^2 / tile apart) come close in
 *        time and hit L2; only where they fall in different waves (about
 *        2 (n^2 / tile) / (tiles a wave) of them, 12 % at 4096 rows and
 *        264 tiles a wave) is memory read again. Longer tiles: fewer of
 *        those, fewer halos (2n rows a tile), a longer last wave.
 *  vec:  tile with two columns a thread (one 16-byte load of X and one
 *        store of Y for the pair; k / 2 threads a row, so a warp's load of
 *        one diagonal is 8 whole rows at k = 8, 512 contiguous bytes):
 *        half the load instructions and L1 wavefronts. k even and X, Y
 *        16-byte aligned; otherwise it runs as tile. The default.
 *  vec256, vec1024: vec in 256- or 1024-thread blocks: 4 or 1 blocks a
 *        multiprocessor (each block's L1 window 2n + B / (k / 2) rows;
 *        a lone block leaves its multiprocessor idle while its last warps
 *        finish a tile).
 *
 * The tile kernels load a chunk of kUnroll diagonals' values and X rows
 * before they use any (the last chunk's spare slots clamp to the last
 * diagonal and are masked), so that many loads are in flight a thread
 * (64 registers: 1024 threads a multiprocessor). What no other row of the
 * tile reads goes through the evict-first path (__ldcs), so that it does
 * not push X's window out of L1: the values, Y, and the X rows of a
 * diagonal with no other within a tile of it (+-n^2 at 4096-row tiles).
 * The window then holds about 2n X rows a block, 32 KB at k = 8, where
 * everything read over the 2n / rows-a-step steps between an X row's +n
 * and -n uses would be 2n x 248 bytes, 127 KB.
 *
 * The fused block pass (fused.h) is the same tile kernel with another
 * epilogue (fused_op in place of spmm_op): the row's column sums, then
 * each entry's residual / smoother update, so a column sums as the SpMM
 * sums it. `old` has no fused form: the pass runs as `tile` there. */
#ifndef KS_DIA_SPMM_WALK_CUH
#define KS_DIA_SPMM_WALK_CUH

#include "dia_spmm_cuda.h"
#include "format_cuda.h"
#include "spmm_cuda.h"
#include "../vec/cuda_check.h"

#include <stdint.h>

namespace {

const int kOldBlock = 256;
/* Diagonals whose loads a thread issues before it sums any. */
const int kUnroll = 8;

/* ---------------------------------------------------------------- old */
template <typename V, int K>
__global__ void __launch_bounds__(kOldBlock)
    dia_spmm_kernel(ks_int nrows, ks_int ncols, ks_int ndiag, const ks_int *__restrict__ offset,
                    const V *__restrict__ val, int k, const double *__restrict__ X,
                    double alpha, double beta, double *__restrict__ Y)
{
    const ks_spmm_pos q = ks_spmm_at<K>((long long)blockIdx.x * kOldBlock + threadIdx.x, k);
    if (q.i >= nrows)
        return;
    double sum = 0.0;
    for (ks_int d = 0; d < ndiag; d++) {
        const long long c = q.i + __ldg(offset + d);
        const V v = __ldg(val + (long long)d * nrows + q.i);
        const double xv = __ldg(X + (c < 0 ? 0 : c >= ncols ? ncols - 1 : c) * q.kk + q.j);
        if (c >= 0 && c < ncols)
            sum += (double)v * xv;
    }
    ks_spmm_store(Y, q.e, alpha, sum, beta);
}

template <typename V>
ks_error run_old(const ks_dia_spmm_args *a, const V *val)
{
    const unsigned blocks = ks_cufmt_blocks((long long)a->nrows * a->k, kOldBlock);
#define KS_DIA_SPMM_OLD_LAUNCH(K)                                                             \
    dia_spmm_kernel<V, K><<<blocks, kOldBlock, 0, a->stream>>>(                               \
        a->nrows, a->ncols, a->ndiag, a->offset, val, a->k, a->X, a->alpha, a->beta, a->Y)
    KS_SPMM_DISPATCH(a->k, KS_DIA_SPMM_OLD_LAUNCH);
#undef KS_DIA_SPMM_OLD_LAUNCH
    KS_CUDA_LAUNCH_CHECK("dia_spmm_kernel");
    return KS_OK;
}

/* ------------------------------------------------------- tile and vec */
/* C consecutive columns of one block row (C = 2: one 16-byte load); ONCE:
 * on the evict-first path, for rows the block will not read again. */
template <int C, bool ONCE>
__device__ __forceinline__ void load_cols(const double *__restrict__ p, double *x)
{
    if (C == 1) {
        x[0] = ONCE ? __ldcs(p) : __ldg(p);
    } else {
        const double2 t = ONCE ? __ldcs((const double2 *)p) : __ldg((const double2 *)p);
        x[0] = t.x;
        x[C - 1] = t.y;
    }
}

/* The loads of load_cols, and a value's evict-first load, with a 256-byte
 * L2 prefetch (PTX .L2::256B): an L2 miss brings the whole 256-byte block,
 * so a stream keeps more bytes in flight a request (KS_DIA_SPMM_L2PF). */
__device__ __forceinline__ double2 ld2_pf(const double *p, bool once)
{
    double2 t;
    if (once)
        asm("ld.global.cs.L2::256B.v2.f64 {%0, %1}, [%2];" : "=d"(t.x), "=d"(t.y) : "l"(p));
    else
        asm("ld.global.nc.L2::256B.v2.f64 {%0, %1}, [%2];" : "=d"(t.x), "=d"(t.y) : "l"(p));
    return t;
}

__device__ __forceinline__ double ld1_pf(const double *p, bool once)
{
    double t;
    if (once)
        asm("ld.global.cs.L2::256B.f64 %0, [%1];" : "=d"(t) : "l"(p));
    else
        asm("ld.global.nc.L2::256B.f64 %0, [%1];" : "=d"(t) : "l"(p));
    return t;
}

__device__ __forceinline__ double ldval_pf(const double *p)
{
    return ld1_pf(p, true);
}

__device__ __forceinline__ float ldval_pf(const float *p)
{
    float t;
    asm("ld.global.cs.L2::256B.f32 %0, [%1];" : "=f"(t) : "l"(p));
    return t;
}

template <int C>
__device__ __forceinline__ void load_cols_pf(const double *__restrict__ p, double *x, bool once)
{
    if (C == 1) {
        x[0] = ld1_pf(p, once);
    } else {
        const double2 t = ld2_pf(p, once);
        x[0] = t.x;
        x[C - 1] = t.y;
    }
}

/* C entries at p, on the evict-first path: outputs are touched once and
 * should not push X's rows out of L2 before their +-n^2 uses. */
template <int C>
__device__ __forceinline__ void put_cols(double *p, const double *v)
{
    if (C == 1)
        __stcs(p, v[0]);
    else
        __stcs((double2 *)p, make_double2(v[0], v[C - 1]));
}

bool aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

/* What the tile kernel does around its row sums. The SpMM: X as stored,
 * Y = alpha sum + beta Y (beta == 0: Y not read; Y on the evict-first
 * path, as it is touched once). */
struct spmm_op {
    static const bool is_spmm = true;
    static const bool prefetch_pays = false;
    static const bool dots = false;
    const double *X;
    double alpha, beta;
    double *Y;
    __device__ const double *x() const { return X; }
    template <int C>
    __device__ void scale(long long, double *) const
    {
    }
    /* What finish reads of entry e besides the sums (Y when beta != 0),
     * loaded early where the kernel prefetches it. */
    template <int C>
    __device__ void pre(long long e, double *y) const
    {
        if (beta != 0.0)
            load_cols<C, true>(Y + e, y);
    }
    template <int C>
    __device__ void finish(long long e, long long, const double *sum, double *y, double *) const
    {
        if (beta == 0.0) {
#pragma unroll
            for (int q = 0; q < C; q++)
                y[q] = alpha * sum[q];
        } else {
#pragma unroll
            for (int q = 0; q < C; q++)
                y[q] = alpha * sum[q] + beta * y[q];
        }
        put_cols<C>(Y + e, y);
    }
    bool pairs_ok() const { return aligned16(X) && aligned16(Y); }
};

/* CG's SpMM with its p'Ap: Y = A X as spmm_op makes it with alpha 1 and
 * beta 0 (the same bits), and each thread's X(i, j) Y(i, j) summed over
 * its rows in acc; the kernel then sums acc over the block into part
 * (dot_flush). X row i comes from L1: diagonal 0 of the sum read it. The
 * dots cost no pass over X and Y of their own (2 x 8 k bytes a row). */
struct spmm_dot_op {
    static const bool is_spmm = true;
    static const bool prefetch_pays = false;
    static const bool dots = true;
    const double *X;
    double *Y;
    double *part; /* column j of block b at part[j * gridDim.x + b] */
    __device__ const double *x() const { return X; }
    template <int C>
    __device__ void scale(long long, double *) const
    {
    }
    template <int C>
    __device__ void pre(long long, double *) const
    {
    }
    template <int C>
    __device__ void finish(long long e, long long, const double *sum, double *y,
                           double *acc) const
    {
        double x[C];
        load_cols<C, false>(X + e, x);
#pragma unroll
        for (int q = 0; q < C; q++) {
            y[q] = sum[q]; /* alpha sum with alpha = 1 */
            acc[q] = __fma_rn(x[q], y[q], acc[q]);
        }
        put_cols<C>(Y + e, y);
    }
    bool pairs_ok() const { return aligned16(X) && aligned16(Y); }
};

/* The end of a kernel whose op sums dots: each column's acc over the
 * block's rows by a fixed tree (the same bits on every run), into the
 * op's part. Threads past the block's last whole row (r >= rows) add 0. */
template <bool DOTS>
struct dot_flush {
    template <int C, int B, typename Op>
    __device__ static void run(const Op &, const double *, int, int, int, int)
    {
    }
};

template <>
struct dot_flush<true> {
    template <int C, int B, typename Op>
    __device__ static void run(const Op &op, const double *acc, int r, int rows, int tpr, int j)
    {
        __shared__ double sh[B * C];
        const int t = threadIdx.x;
#pragma unroll
        for (int q = 0; q < C; q++)
            sh[t * C + q] = r < rows ? acc[q] : 0.0;
        __syncthreads();
        int half = 1;
        while (2 * half < rows)
            half *= 2;
        for (int h = half; h >= 1; h /= 2) {
            if (r < h && r + h < rows)
#pragma unroll
                for (int q = 0; q < C; q++)
                    sh[t * C + q] += sh[(t + h * tpr) * C + q];
            __syncthreads();
        }
        if (r == 0)
#pragma unroll
            for (int q = 0; q < C; q++)
                op.part[(long long)(j + q) * gridDim.x + blockIdx.x] = sh[t * C + q];
    }
};

/* The fused block pass (fused.h, ks_fused_bload / ks_fused_store with the
 * same expressions, on C columns at once). S: the iterate made from B
 * (f.xw): X(c, j) = (xs xw_c) B(c, j), as ks_fused_bx makes it. B and
 * Xprev are read once (evict-first; Xprev may be Xo, read before the same
 * thread writes it, so not through the read-only path); X row i comes
 * from L1 (the sum's diagonal 0 read it). */
template <bool S, bool D = false>
struct fused_op {
    static const bool is_spmm = false;
    static const bool prefetch_pays = !S;
    /* D: each thread also sums B(i, j) Xo(i, j) over its rows into acc
     * (dot_flush), CG's r'z where the cycle's last step makes z */
    static const bool dots = D;
    ks_fused_step f;
    double *part; /* D: column j of block b at part[j * gridDim.x + b] */
    __device__ const double *x() const { return f.x; }
    template <int C>
    __device__ void scale(long long c, double *x) const
    {
        if (S) {
            const double s = f.xs * __ldg(f.xw + c);
#pragma unroll
            for (int q = 0; q < C; q++)
                x[q] = s * x[q];
        }
    }
    /* B's entries, loaded early where the kernel prefetches them: the
     * one read of the epilogue that comes from memory on every pass. */
    template <int C>
    __device__ void pre(long long e, double *b) const
    {
        load_cols<C, true>(f.b + e, b);
    }
    template <int C>
    __device__ void finish(long long e, long long i, const double *sum, double *b,
                           double *acc) const
    {
        double x[C], xp[C], v[C], b0[C];
#pragma unroll
        for (int q = 0; q < C; q++)
            b0[q] = b[q];
        double w = 0.0;
#pragma unroll
        for (int q = 0; q < C; q++)
            x[q] = xp[q] = 0.0;
        if (f.xo) {
            load_cols<C, false>(f.x + e, x);
            scale<C>(i, x);
            if (f.a != 0.0 && f.xprev)
                load_cols<C, true>(f.xprev + e, xp);
            w = __ldg(f.w + i);
        }
#pragma unroll
        for (int q = 0; q < C; q++)
            b[q] -= sum[q]; /* t */
        if (f.r)
            put_cols<C>(f.r + e, b);
        if (f.xo) {
#pragma unroll
            for (int q = 0; q < C; q++) {
                v[q] = ks_smooth_value_v(f.a, f.c, w, x[q], xp[q], b[q]);
                if (D)
                    acc[q] = __fma_rn(b0[q], v[q], acc[q]);
            }
            put_cols<C>(f.xo + e, v);
        }
        if (f.x1)
            put_cols<C>(f.x1 + e, x);
    }
    bool pairs_ok() const
    {
        const void *p[] = {f.b, f.x, f.r, f.xprev, f.xo, f.x1};
        for (int u = 0; u < 6; u++)
            if (!aligned16(p[u])) /* NULL is aligned */
                return false;
        return true;
    }
};

/* Block of B threads: k / C threads a row (thread t: row t / (k / C) of
 * each step, columns C * (t % (k / C)) on), B / (k / C) rows a step,
 * rows [blockIdx.x * tile, + tile) in all. Threads past the last whole
 * row of a step (B % (k / C) of them) have nothing to do. Op: the SpMM or
 * the fused pass (what X is, what becomes of the sums). */
template <typename V, int K, int C, int B, typename Op>
__global__ void __launch_bounds__(B, 1024 / B)
    dia_spmm_tile_kernel(ks_int nrows, ks_int ncols, ks_int ndiag,
                         const ks_int *__restrict__ offset, const V *__restrict__ val, int k,
                         long long tile, const Op op)
{
    const int kk = K ? K : k, tpr = kk / C, rows = B / tpr;
    const int r = threadIdx.x / tpr;
    if (r >= rows && !Op::dots) /* a kernel with dots keeps them for its barriers */
        return;
    const int j = (threadIdx.x - r * tpr) * C;
    const double *__restrict__ X = op.x();
    const long long t0 = (long long)blockIdx.x * tile;
    const long long end = r < rows ? (t0 + tile < nrows ? t0 + tile : nrows) : t0;
    double acc[C];
#pragma unroll
    for (int q = 0; q < C; q++)
        acc[q] = 0.0;
    for (long long i = t0 + r; i < end; i += rows) {
        double sum[C];
#pragma unroll
        for (int q = 0; q < C; q++)
            sum[q] = 0.0;
        for (ks_int d0 = 0; d0 < ndiag; d0 += kUnroll) {
            V a[kUnroll];
            double x[kUnroll][C];
            unsigned use = 0; /* bit u: diagonal d0 + u exists and its column is in range */
            ks_int off[kUnroll + 2]; /* off[u + 1]: diagonal d0 + u's (clamped into range) */
#pragma unroll
            for (int u = -1; u <= kUnroll; u++) {
                const ks_int d = d0 + u;
                off[u + 1] = __ldg(offset + (d < 0 ? 0 : d < ndiag ? d : ndiag - 1));
            }
            /* bit u: diagonal d0 + u's neighbours (offsets sorted) are a tile
             * or more away, so no other row of the tile reads its X rows */
            unsigned once = 0;
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                if ((d0 + u == 0 || (long long)off[u + 1] - off[u] >= tile) &&
                    (d0 + u + 1 >= ndiag || (long long)off[u + 2] - off[u + 1] >= tile))
                    once |= 1u << u;
#pragma unroll
            for (int u = 0; u < kUnroll; u++) {
                const ks_int d = d0 + u < ndiag ? d0 + u : ndiag - 1;
                const long long c = i + off[u + 1];
                const long long cc = c < 0 ? 0 : c >= ncols ? ncols - 1 : c;
                use |= (d0 + u < ndiag && c >= 0 && c < ncols ? 1u : 0u) << u;
                a[u] = __ldcs(val + (long long)d * nrows + i);
                const double *p = X + cc * kk + j;
                if (once >> u & 1u)
                    load_cols<C, true>(p, x[u]);
                else
                    load_cols<C, false>(p, x[u]);
                op.template scale<C>(cc, x[u]);
            }
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                if (use >> u & 1u)
#pragma unroll
                    for (int q = 0; q < C; q++)
                        sum[q] += (double)a[u] * x[u][q];
        }
        double pb[C];
        op.template pre<C>(i * kk + j, pb);
        op.template finish<C>(i * kk + j, i, sum, pb, acc);
    }
    dot_flush<Op::dots>::template run<C, B>(op, acc, r, rows, tpr, j);
}

/* One chunk of row i's sum for the hoisted kernel: diagonals d0 ..
 * d0 + U - 1 (those below ndiag), off[u] the offset of diagonal d0 + u,
 * `once` their read-once bits; the loads first, then the sums in the
 * diagonals' order, as the tile kernel sums them. */
template <typename V, int C, int U, typename Op>
__device__ __forceinline__ void chunk_sum(long long i, ks_int nrows, ks_int ncols, ks_int d0,
                                          ks_int ndiag, const ks_int *off, unsigned once,
                                          const V *__restrict__ val,
                                          const double *__restrict__ Xj, int kk, const Op &op,
                                          double *sum, bool pf)
{
    V a[U];
    double x[U][C];
    unsigned use = 0;
#pragma unroll
    for (int u = 0; u < U; u++) {
        const ks_int d = d0 + u;
        if (d >= ndiag)
            break;
        const long long c = i + off[u];
        a[u] = pf ? ldval_pf(val + (long long)d * nrows + i) : __ldcs(val + (long long)d * nrows + i);
        if (c >= 0 && c < ncols) {
            use |= 1u << u;
            const double *p = Xj + c * kk;
            if (pf)
                load_cols_pf<C>(p, x[u], once >> u & 1u);
            else if (once >> u & 1u)
                load_cols<C, true>(p, x[u]);
            else
                load_cols<C, false>(p, x[u]);
            op.template scale<C>(c, x[u]);
        }
    }
#pragma unroll
    for (int u = 0; u < U; u++)
        if (use >> u & 1u)
#pragma unroll
            for (int q = 0; q < C; q++)
                sum[q] += (double)a[u] * x[u][q];
}

/* The tile kernel's walk when every diagonal fits one chunk (ndiag <=
 * kUnroll: 5- and 7-point stencils). The offsets and which diagonals are
 * read once are the same for every row, so they are read and derived
 * before the row loop, where the tile kernel derives them again a row; a
 * load outside the columns is skipped instead of clamped. ncu of the tile
 * kernel (H200, 7-point 256^3, k = 8): SM throughput 80 %, DRAM 44 %, so
 * those per-row instructions, not memory, bounded it. The sums are the
 * tile kernel's, term for term.
 *
 * U: the diagonals whose loads go out before their sums (KS_DIA_SPMM_HOIST).
 * All 7 of a 7-point row at once (U = 8) needs 14 doubles of X and 7
 * values live; with the fused pass's epilogue that is past the 64
 * registers a thread of a 1024-thread block has: ncu (H200, 256^3, k = 8)
 * counted 16.8M local-memory spill requests in a fused residual pass and
 * 56.6M in the pre-smoothing pass (X scaled by D^-1), whose L1 and L2
 * traffic then bounded them (L2 throughput 78-83 %, DRAM 30-47 %). Smaller
 * chunks keep fewer loads in flight a thread and nothing spilled. */
template <typename V, int K, int C, int B, int U, bool PRE, typename Op>
__global__ void __launch_bounds__(B, 1024 / B)
    dia_spmm_one_kernel(ks_int nrows, ks_int ncols, ks_int ndiag,
                        const ks_int *__restrict__ offset, const V *__restrict__ val, int k,
                        long long tile, int pf, const Op op)
{
    const int kk = K ? K : k, tpr = kk / C, rows = B / tpr;
    const int r = threadIdx.x / tpr;
    if (r >= rows && !Op::dots)
        return;
    const int j = (threadIdx.x - r * tpr) * C;
    const double *__restrict__ X = op.x();
    ks_int off[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; u++)
        off[u] = u < ndiag ? __ldg(offset + u) : 0;
    unsigned once = 0; /* as the tile kernel's: no other row of the tile reads these X rows */
#pragma unroll
    for (int u = 0; u < kUnroll; u++)
        if (u < ndiag && (u == 0 || (long long)off[u] - off[u - 1] >= tile) &&
            (u + 1 >= ndiag || (long long)off[u + 1] - off[u] >= tile))
            once |= 1u << u;
    const long long t0 = (long long)blockIdx.x * tile;
    const long long end = r < rows ? (t0 + tile < nrows ? t0 + tile : nrows) : t0;
    double acc[C];
#pragma unroll
    for (int q = 0; q < C; q++)
        acc[q] = 0.0;
    for (long long i = t0 + r; i < end; i += rows) {
        double sum[C], pb[C];
#pragma unroll
        for (int q = 0; q < C; q++)
            sum[q] = 0.0;
        if (PRE) /* the epilogue's memory read in flight with the sums' */
            op.template pre<C>(i * kk + j, pb);
#pragma unroll
        for (int d0 = 0; d0 < kUnroll; d0 += U)
            if (d0 < ndiag)
                chunk_sum<V, C, U>(i, nrows, ncols, d0, ndiag, off + d0, once >> d0, val, X + j,
                                   kk, op, sum, pf != 0);
        if (!PRE)
            op.template pre<C>(i * kk + j, pb);
        op.template finish<C>(i * kk + j, i, sum, pb, acc);
    }
    dot_flush<Op::dots>::template run<C, B>(op, acc, r, rows, tpr, j);
}

/* The hoisted kernel with chunks of `chunk` diagonals (2, 4 or 8). */
template <typename V, int K, int C, int B, bool PRE, typename Op>
void launch_chunk(int chunk, unsigned blocks, const ks_dia_spmm_args *a, const V *val,
                  long long tile, const Op &op)
{
    if (chunk == 2)
        dia_spmm_one_kernel<V, K, C, B, 2, PRE, Op><<<blocks, B, 0, a->stream>>>(
            a->nrows, a->ncols, a->ndiag, a->offset, val, a->k, tile, a->how.l2pf, op);
    else if (chunk == 4)
        dia_spmm_one_kernel<V, K, C, B, 4, PRE, Op><<<blocks, B, 0, a->stream>>>(
            a->nrows, a->ncols, a->ndiag, a->offset, val, a->k, tile, a->how.l2pf, op);
    else
        dia_spmm_one_kernel<V, K, C, B, kUnroll, PRE, Op><<<blocks, B, 0, a->stream>>>(
            a->nrows, a->ncols, a->ndiag, a->offset, val, a->k, tile, a->how.l2pf, op);
}

/* The hoisted kernel, the epilogue's read prefetched or not (how.prefetch). */
template <typename V, int K, int C, int B, typename Op>
void launch_one(int chunk, unsigned blocks, const ks_dia_spmm_args *a, const V *val,
                long long tile, const Op &op)
{
    /* 2 (the default): where measured faster (H200, 7-point 256^3, k = 8):
     * the fused passes whose X is stored (residual 1.37 -> 1.24 ms,
     * post-smoothing 3.20 -> 2.98 ms a cycle), not the pre-smoothing pass
     * that scales X by D^-1 as it reads it (1.58 -> 1.66 ms) nor the SpMM */
    const bool pre = a->how.prefetch == 1 || (a->how.prefetch == 2 && Op::prefetch_pays);
    if (pre)
        launch_chunk<V, K, C, B, true, Op>(chunk, blocks, a, val, tile, op);
    else
        launch_chunk<V, K, C, B, false, Op>(chunk, blocks, a, val, tile, op);
}

/* One tile-kernel launch: two columns a thread when `pairs` allows it. */
template <typename V, int K, int B, typename Op>
ks_error run_tile(const ks_dia_spmm_args *a, const V *val, bool pairs, const Op &op)
{
    const int kk = K ? K : a->k;
    const bool two = pairs && kk % 2 == 0 && op.pairs_ok();
    const int tpr = two ? kk / 2 : kk, rows = B / tpr;
    const long long tile = (long long)((a->how.tile_rows + rows - 1) / rows) * rows;
    const unsigned blocks = ks_cufmt_blocks(a->nrows, (int)tile);
    if (a->blocks_used)
        *a->blocks_used = blocks;
    /* 1: the chunk measured fastest for the op (H200, 7-point 256^3, k = 8):
     * the SpMM, with nothing live past its sums, all 8 at once (1.09 ms
     * against 1.19 at 4); the fused passes 4 (1.50-1.86 ms against
     * 2.04-2.78 at 8, which spilled) */
    const int hoist = a->ndiag > kUnroll ? 0
                      : a->how.hoist == 1 ? (Op::is_spmm ? kUnroll : 4)
                                          : a->how.hoist;
    /* K == 1 never pairs; its C = 2 instance would divide by 0 */
    if (two && hoist)
        launch_one<V, K, K == 1 ? 1 : 2, B, Op>(hoist, blocks, a, val, tile, op);
    else if (two)
        dia_spmm_tile_kernel<V, K, K == 1 ? 1 : 2, B, Op><<<blocks, B, 0, a->stream>>>(
            a->nrows, a->ncols, a->ndiag, a->offset, val, a->k, tile, op);
    else if (hoist)
        launch_one<V, K, 1, B, Op>(hoist, blocks, a, val, tile, op);
    else
        dia_spmm_tile_kernel<V, K, 1, B, Op><<<blocks, B, 0, a->stream>>>(
            a->nrows, a->ncols, a->ndiag, a->offset, val, a->k, tile, op);
    KS_CUDA_LAUNCH_CHECK(Op::is_spmm ? "dia_spmm_tile_kernel" : "dia_spmm_tile_kernel (fused)");
    return KS_OK;
}

template <typename V, int B, typename Op>
ks_error run_tiles(const ks_dia_spmm_args *a, const V *val, bool pairs, const Op &op)
{
    ks_error e = KS_OK;
#define KS_DIA_SPMM_TILE_LAUNCH(K) e = run_tile<V, K, B, Op>(a, val, pairs, op)
    KS_SPMM_DISPATCH(a->k, KS_DIA_SPMM_TILE_LAUNCH);
#undef KS_DIA_SPMM_TILE_LAUNCH
    return e;
}

/* The passes with dots (the SpMM's X'Y, the fused pass's B'Xo): compiled
 * into the default walk's file only (DOTS: B = 1024), which
 * ks_dia_spmm_run sends every call with dots to whatever KS_DIA_SPMM names
 * (every walk gives the same sums; the dots' epilogues in every variant
 * made the device build run past 336 s). 1 in *ran when it ran one. */
template <typename V, int B, bool DOTS = (B == 1024)>
struct dot_walk {
    static ks_error run(const ks_dia_spmm_args *, const V *, bool, int *ran)
    {
        *ran = 0;
        return KS_OK;
    }
};

template <typename V, int B>
struct dot_walk<V, B, true> {
    static ks_error run(const ks_dia_spmm_args *a, const V *val, bool pairs, int *ran)
    {
        *ran = 1;
        if (!a->f) {
            const spmm_dot_op op = {a->X, a->Y, a->dot_part};
            return run_tiles<V, B>(a, val, pairs, op);
        }
        const fused_op<false, true> op = {*a->f, a->dot_part}; /* no xw: dia_cuda.cu */
        return run_tiles<V, B>(a, val, pairs, op);
    }
};

/* The op a call asks for (the SpMM, the SpMM or fused pass with dots, the
 * fused pass with or without X made from B), on B-thread blocks: two
 * columns a thread where `pairs` and the blocks allow it. */
template <typename V, int B>
ks_error walk_v(const ks_dia_spmm_args *a, const V *val, bool pairs)
{
    if (a->dot_part) {
        int ran = 0;
        ks_error e = dot_walk<V, B>::run(a, val, pairs, &ran);
        if (ran)
            return e;
        return ks_seterr(KS_ERR_ARG, "dia SpMM: a pass with dots outside the default walk");
    }
    if (!a->f) {
        const spmm_op op = {a->X, a->alpha, a->beta, a->Y};
        return run_tiles<V, B>(a, val, pairs, op);
    }
    if (a->f->xw) {
        const fused_op<true> op = {*a->f, NULL};
        return run_tiles<V, B>(a, val, pairs, op);
    }
    const fused_op<false> op = {*a->f, NULL};
    return run_tiles<V, B>(a, val, pairs, op);
}

template <int B>
ks_error walk(const ks_dia_spmm_args *a, bool pairs)
{
    return a->valf ? walk_v<float, B>(a, a->valf, pairs) : walk_v<double, B>(a, a->val, pairs);
}

} // namespace

#endif
