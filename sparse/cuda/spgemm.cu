/* Sparse products on the device: C = A B, its numeric pass into a given
 * pattern, and the Galerkin product R A P with its numeric pass.
 *
 * Which implementation: ours (below) by default; KS_SPGEMM=cusparse in the
 * environment makes spgemm and rap use cuSPARSE's SpGEMM instead
 * (spgemm_cusparse.cu), so both can be measured in one build
 * (bench/bench_spgemm). Ours is the default because it reproduces the cpu
 * product bit for bit (the same pattern, the same summation order, no
 * contraction into FMA), so a GPU setup gives the cpu's hierarchy and
 * re-setups (the numeric passes, ours in both cases) refill exactly what
 * the symbolic pass built; cuSPARSE agrees only to rounding. Whether ours
 * is also the faster one is for the benchmark to confirm.
 *
 * Ours (the clBool / cuBool design): rows are binned by their upper bound
 * of products ub = sum over k in A's row of nnz(B row k), and by
 * bound = min(ub, B.ncols), the most distinct columns the row can have;
 *   symbolic: exact row sizes of C, by bin:
 *     ub <= 32          one thread, the distinct columns in a local list;
 *     bound <= 512      one warp, hash table of 1024 in shared memory;
 *     bound <= 4096     one block, hash table of up to 8192 in shared memory;
 *     larger            one block, hash table in global memory (a pool of
 *                       tables of 256 MB at most, blocks loop over rows);
 *   then a scan into row pointers (32-bit overflow -> KS_ERR_SIZE), exact
 *   allocation, the same kernels again writing the columns, and a
 *   segmented sort of each row (the hash tables' order depends on timing);
 *   numeric: C's values from the known sorted pattern, by bin:
 *     ub <= 32          one thread walks the products in order;
 *     otherwise         one warp walks them 32 at a time in order; lanes
 *                       hitting the same entry of C are grouped
 *                       (__match_any_sync) and their lowest lane adds the
 *                       group's products in lane order.
 *   Either way every C(i,j) starts at 0.0 and adds A(i,k)*B(k,j) in the
 *   order of A's row i then B's row k, exactly as the cpu does
 *   (sparse/cpu/spgemm.c), with __dmul_rn/__dadd_rn so nvcc cannot fuse
 *   them into an FMA (the cpu build does not either). No floating-point
 *   atomics anywhere: the same bits on every run.
 *
 * R A P: the cheaper first product by the exact multiply-add counts of A*P
 * and R*A, R*(A*P) on ties (sparse/cpu/rap.c's rule, so the patterns and
 * the roundings match the cpu). Its numeric pass follows the cpu's
 * ks_csr_rap_numeric order ((R(i,k) A(k,j)) P(j,J), by R's row, A's row,
 * P's row): the products R(i,k) A(k,j) are expanded, unmerged and in order,
 * into a temporary U, and U P is summed into Ac's pattern by the numeric
 * kernels above. */
#include "sparse_cuda.cuh"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

namespace {

const int kThreadMax = 32;     /* products a thread handles */
const int kWarpBound = 512;    /* distinct columns a warp's table takes */
const int kWarpLg = 10;        /* its size: 1024 */
const int kBlockBound = 4096;  /* distinct columns a block's shared table takes */
const int kBlockLg = 13;       /* its largest size: 8192 */
const int kBlockMinLg = 10;
const int kWarps = 4;          /* warps per block of the warp kernels */
const int kThreads = 256;      /* threads per block of the block kernels */
const size_t kGlobalTables = (size_t)256 << 20; /* bytes of the global table pool */

enum { SYM_NONE, SYM_THREAD, SYM_WARP, SYM_BLOCK, SYM_GLOBAL, SYM_BINS };
enum { NUM_THREAD, NUM_WARP, NUM_BINS };

const unsigned long long kNoBad = ~0ULL;

/* ============================================================== helpers */
__device__ __forceinline__ int warp_sum(int v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(KS_CU_FULL_MASK, v, o);
    return v;
}

/* Smallest lg >= 1 with 2^lg >= x (x <= 2^30). */
__host__ __device__ __forceinline__ int lg_for(long long x)
{
    int lg = 1;
    while ((1LL << lg) < x)
        lg++;
    return lg;
}

/* Insert key into the open-addressing table of 2^lg slots (-1 = empty,
 * linear probing); 1 when it was not there. The table never fills: it has
 * at least twice the row's distinct columns. */
__device__ __forceinline__ int hash_insert(ks_int *tab, int lg, ks_int key)
{
    const unsigned mask = (1u << lg) - 1u;
    unsigned h = ((unsigned)key * 2654435761u) >> (32 - lg); /* high bits: strided keys spread */
    for (;;) {
        const ks_int prev = atomicCAS(&tab[h], -1, key);
        if (prev == -1)
            return 1;
        if (prev == key)
            return 0;
        h = (h + 1u) & mask;
    }
}

/* Position of column j in the sorted cci[c0 .. c1), or -1. */
__device__ __forceinline__ ks_int find_slot(const ks_int *__restrict__ cci, ks_int c0, ks_int c1,
                                            ks_int j)
{
    ks_int lo = c0, hi = c1;
    while (lo < hi) {
        const ks_int mid = lo + (hi - lo) / 2;
        if (cci[mid] < j)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c1 && cci[lo] == j ? lo : -1;
}

/* An entry (i, j) outside C's pattern, as a key whose minimum is the
 * lowest row (each row reports at most one: its first in product order). */
__device__ __forceinline__ unsigned long long bad_key(ks_int i, ks_int j)
{
    return ((unsigned long long)(unsigned)i << 32) | (unsigned)j;
}

/* ================================================== counts and bins */
/* ub[i] = products of row i of X*Y (capped at INT32_MAX; may be NULL);
 * *flops (may be NULL) += their exact total. */
__global__ void row_products(ks_int n, const ks_int *__restrict__ xrp,
                             const ks_int *__restrict__ xci, const ks_int *__restrict__ yrp,
                             ks_int *ub, unsigned long long *flops)
{
    long long mine = 0;
    KS_CU_FOR(i, n)
    {
        long long s = 0;
        for (ks_int k = xrp[i]; k < xrp[i + 1]; k++) {
            const ks_int b = xci[k];
            s += yrp[b + 1] - yrp[b];
        }
        if (ub)
            ub[i] = s > INT32_MAX ? INT32_MAX : (ks_int)s;
        mine += s;
    }
    if (flops) { /* every lane is here: the loop above has no early exit */
        for (int o = 16; o > 0; o >>= 1)
            mine += __shfl_xor_sync(KS_CU_FULL_MASK, mine, o);
        if ((threadIdx.x & 31) == 0 && mine > 0)
            atomicAdd(flops, (unsigned long long)mine); /* integers: order-free */
    }
}

__global__ void sym_bins(ks_int n, const ks_int *__restrict__ ub, ks_int ycols,
                         unsigned char *bin)
{
    KS_CU_FOR(i, n)
    {
        const ks_int u = ub[i], bound = u < ycols ? u : ycols;
        bin[i] = u == 0                ? SYM_NONE
                 : u <= kThreadMax     ? SYM_THREAD
                 : bound <= kWarpBound ? SYM_WARP
                 : bound <= kBlockBound ? SYM_BLOCK
                                        : SYM_GLOBAL;
    }
}

__global__ void num_bins(ks_int n, const ks_int *__restrict__ ub, unsigned char *bin)
{
    KS_CU_FOR(i, n)
    bin[i] = ub[i] <= kThreadMax ? NUM_THREAD : NUM_WARP;
}

__global__ void max_bound(const ks_int *__restrict__ rows, ks_int count,
                          const ks_int *__restrict__ ub, ks_int ycols, ks_int *out)
{
    ks_int m = 0;
    KS_CU_FOR(t, count)
    {
        const ks_int u = ub[rows[t]], b = u < ycols ? u : ycols;
        m = b > m ? b : m;
    }
    atomicMax(out, m);
}

/* ============================================================ symbolic */
/* FILL = false: crp[i] = number of distinct columns of row i.
 * FILL = true:  the columns written to cci + crp[i] (crp scanned by then),
 *               in no particular order. */

template <bool FILL>
__global__ void sym_thread(const ks_int *__restrict__ rows, ks_int count,
                           const ks_int *__restrict__ xrp, const ks_int *__restrict__ xci,
                           const ks_int *__restrict__ yrp, const ks_int *__restrict__ yci,
                           ks_int *crp, ks_int *cci)
{
    KS_CU_FOR(t, count)
    {
        const ks_int i = rows[t];
        ks_int cols[kThreadMax];
        int cnt = 0; /* <= ub <= kThreadMax */
        for (ks_int k = xrp[i]; k < xrp[i + 1]; k++) {
            const ks_int b = xci[k];
            for (ks_int q = yrp[b]; q < yrp[b + 1]; q++) {
                const ks_int j = yci[q];
                int seen = 0;
                for (int u = 0; u < cnt; u++)
                    seen |= cols[u] == j;
                if (!seen)
                    cols[cnt++] = j;
            }
        }
        if (FILL) {
            ks_int *o = cci + crp[i];
            for (int u = 0; u < cnt; u++)
                o[u] = cols[u];
        } else {
            crp[i] = cnt;
        }
    }
}

template <bool FILL>
__global__ void __launch_bounds__(kWarps * 32)
    sym_warp(const ks_int *__restrict__ rows, ks_int count, const ks_int *__restrict__ xrp,
             const ks_int *__restrict__ xci, const ks_int *__restrict__ yrp,
             const ks_int *__restrict__ yci, ks_int *crp, ks_int *cci)
{
    __shared__ ks_int tabs[kWarps][1 << kWarpLg];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    ks_int *tab = tabs[w];
    for (long long t = (long long)blockIdx.x * kWarps + w; t < count;
         t += (long long)gridDim.x * kWarps) {
        const ks_int i = rows[t];
        for (int s = lane; s < (1 << kWarpLg); s += 32)
            tab[s] = -1;
        __syncwarp();
        int cnt = 0;
        for (ks_int k = xrp[i]; k < xrp[i + 1]; k++) {
            const ks_int b = xci[k];
            for (ks_int q = yrp[b] + lane; q < yrp[b + 1]; q += 32)
                cnt += hash_insert(tab, kWarpLg, yci[q]);
        }
        __syncwarp();
        if (FILL) {
            ks_int *o = cci + crp[i];
            int base = 0;
            for (int s0 = 0; s0 < (1 << kWarpLg); s0 += 32) {
                const ks_int key = ((volatile ks_int *)tab)[s0 + lane];
                const unsigned m = __ballot_sync(KS_CU_FULL_MASK, key >= 0);
                if (key >= 0)
                    o[base + __popc(m & ((1u << lane) - 1u))] = key;
                base += __popc(m);
            }
        } else {
            cnt = warp_sum(cnt);
            if (lane == 0)
                crp[i] = cnt;
        }
        __syncwarp(); /* the table is cleared for the next row */
    }
}

/* One row by the whole block, table of 2^lg slots at tab (shared or
 * global memory); *s_cnt a shared counter. */
template <bool FILL>
__device__ void sym_block_row(ks_int i, ks_int *tab, int lg, ks_int *s_cnt,
                              const ks_int *__restrict__ xrp, const ks_int *__restrict__ xci,
                              const ks_int *__restrict__ yrp, const ks_int *__restrict__ yci,
                              ks_int *crp, ks_int *cci)
{
    const int size = 1 << lg;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int s = threadIdx.x; s < size; s += blockDim.x)
        tab[s] = -1;
    if (threadIdx.x == 0)
        *s_cnt = 0;
    __syncthreads();
    int cnt = 0;
    for (ks_int k = xrp[i] + warp; k < xrp[i + 1]; k += nw) {
        const ks_int b = xci[k];
        for (ks_int q = yrp[b] + lane; q < yrp[b + 1]; q += 32)
            cnt += hash_insert(tab, lg, yci[q]);
    }
    __syncthreads();
    if (FILL) {
        ks_int *o = cci + crp[i];
        for (int s0 = 0; s0 < size; s0 += blockDim.x) {
            const int s = s0 + threadIdx.x;
            /* volatile: the slots were written by other threads' atomics */
            const ks_int key = s < size ? ((volatile ks_int *)tab)[s] : -1;
            const unsigned m = __ballot_sync(KS_CU_FULL_MASK, key >= 0);
            ks_int base = 0;
            if (lane == 0 && m)
                base = atomicAdd(s_cnt, __popc(m));
            base = __shfl_sync(KS_CU_FULL_MASK, base, 0);
            if (key >= 0)
                o[base + __popc(m & ((1u << lane) - 1u))] = key;
        }
    } else {
        cnt = warp_sum(cnt);
        if (lane == 0 && cnt > 0)
            atomicAdd(s_cnt, cnt);
        __syncthreads();
        if (threadIdx.x == 0)
            crp[i] = *s_cnt;
    }
    __syncthreads(); /* the table and the counter are reused by the next row */
}

template <bool FILL>
__global__ void __launch_bounds__(kThreads)
    sym_block(const ks_int *__restrict__ rows, ks_int count, const ks_int *__restrict__ ub,
              ks_int ycols, const ks_int *__restrict__ xrp, const ks_int *__restrict__ xci,
              const ks_int *__restrict__ yrp, const ks_int *__restrict__ yci, ks_int *crp,
              ks_int *cci)
{
    __shared__ ks_int tab[1 << kBlockLg];
    __shared__ ks_int s_cnt;
    for (ks_int t = blockIdx.x; t < count; t += gridDim.x) {
        const ks_int i = rows[t], u = ub[i], bound = u < ycols ? u : ycols;
        int lg = lg_for(2LL * bound);
        lg = lg < kBlockMinLg ? kBlockMinLg : lg;
        sym_block_row<FILL>(i, tab, lg, &s_cnt, xrp, xci, yrp, yci, crp, cci);
    }
}

/* Block b owns table gtab + b * 2^region_lg and takes rows b, b + grid, ... */
template <bool FILL>
__global__ void __launch_bounds__(kThreads)
    sym_global(const ks_int *__restrict__ rows, ks_int count, const ks_int *__restrict__ ub,
               ks_int ycols, ks_int *gtab, int region_lg, const ks_int *__restrict__ xrp,
               const ks_int *__restrict__ xci, const ks_int *__restrict__ yrp,
               const ks_int *__restrict__ yci, ks_int *crp, ks_int *cci)
{
    __shared__ ks_int s_cnt;
    ks_int *tab = gtab + ((size_t)blockIdx.x << region_lg);
    for (ks_int t = blockIdx.x; t < count; t += gridDim.x) {
        const ks_int i = rows[t], u = ub[i], bound = u < ycols ? u : ycols;
        sym_block_row<FILL>(i, tab, lg_for(2LL * bound), &s_cnt, xrp, xci, yrp, yci, crp, cci);
    }
}

/* ============================================================= numeric */
/* A warp's staging of one chunk of 32 entries of X's row. */
typedef struct wp_smem {
    long long incl[32]; /* inclusive prefix sums of the Y row lengths */
    ks_int ystart[32];
    double xv[32];
    double prod[32];
} wp_smem;

/* The products of one row of X*Y (X's entries x0 .. x1) in the cpu's order
 * (X's row, then each Y row), 32 at a time: every lane calls body(p, act,
 * xv, q) for each batch, p numbering the row's products from 0, act = 0
 * on lanes past the end, q the Y entry and xv the X value; body returns
 * the same bool on all lanes, true to stop. The caller syncs the warp
 * before reusing s. */
template <class Body>
__device__ __forceinline__ void warp_products(ks_int x0, ks_int x1, const ks_int *__restrict__ xci,
                                              const double *__restrict__ xval,
                                              const ks_int *__restrict__ yrp, wp_smem *s,
                                              Body &body)
{
    const int lane = threadIdx.x & 31;
    long long done = 0; /* products of the earlier chunks */
    for (long long a0 = x0; a0 < x1; a0 += 32) {
        const long long e = a0 + lane;
        long long len = 0;
        ks_int ys = 0;
        double xv = 0.0;
        if (e < x1) {
            const ks_int b = xci[e];
            ys = yrp[b];
            len = yrp[b + 1] - ys;
            xv = xval[e];
        }
        long long incl = len;
        for (int o = 1; o < 32; o <<= 1) {
            const long long v = __shfl_up_sync(KS_CU_FULL_MASK, incl, o);
            if (lane >= o)
                incl += v;
        }
        s->incl[lane] = incl;
        s->ystart[lane] = ys;
        s->xv[lane] = xv;
        __syncwarp();
        const long long total = __shfl_sync(KS_CU_FULL_MASK, incl, 31);
        for (long long p0 = 0; p0 < total; p0 += 32) {
            const long long p = p0 + lane;
            const bool act = p < total;
            ks_int q = -1;
            double v = 0.0;
            if (act) { /* the chunk entry holding product p: first incl > p */
                int lo = 0, hi = 31;
                while (lo < hi) {
                    const int mid = (lo + hi) >> 1;
                    if (s->incl[mid] > p)
                        hi = mid;
                    else
                        lo = mid + 1;
                }
                const long long before = lo > 0 ? s->incl[lo - 1] : 0;
                q = s->ystart[lo] + (ks_int)(p - before);
                v = s->xv[lo];
            }
            if (body(done + p, act, v, q))
                return;
        }
        done += total;
        __syncwarp(); /* s is rewritten by the next chunk */
    }
}

/* Rows of at most kThreadMax products: one thread, in order. */
__global__ void num_thread(const ks_int *__restrict__ rows, ks_int count,
                           const ks_int *__restrict__ xrp, const ks_int *__restrict__ xci,
                           const double *__restrict__ xval, const ks_int *__restrict__ yrp,
                           const ks_int *__restrict__ yci, const double *__restrict__ yval,
                           const ks_int *__restrict__ crp, const ks_int *__restrict__ cci,
                           double *cval, unsigned long long *bad)
{
    KS_CU_FOR(t, count)
    {
        const ks_int i = rows[t], c0 = crp[i], c1 = crp[i + 1];
        for (ks_int p = c0; p < c1; p++)
            cval[p] = 0.0;
        bool ok = true;
        for (ks_int k = xrp[i]; k < xrp[i + 1] && ok; k++) {
            const ks_int b = xci[k];
            const double xv = xval[k];
            for (ks_int q = yrp[b]; q < yrp[b + 1]; q++) {
                const ks_int j = yci[q], s = find_slot(cci, c0, c1, j);
                if (s < 0) {
                    atomicMin(bad, bad_key(i, j));
                    ok = false;
                    break;
                }
                cval[s] = __dadd_rn(cval[s], __dmul_rn(xv, yval[q]));
            }
        }
    }
}

/* Other rows: one warp, 32 products at a time, in order. */
__global__ void __launch_bounds__(kWarps * 32)
    num_warp(const ks_int *__restrict__ rows, ks_int count, const ks_int *__restrict__ xrp,
             const ks_int *__restrict__ xci, const double *__restrict__ xval,
             const ks_int *__restrict__ yrp, const ks_int *__restrict__ yci,
             const double *__restrict__ yval, const ks_int *__restrict__ crp,
             const ks_int *__restrict__ cci, double *cval, unsigned long long *bad)
{
    __shared__ wp_smem sm[kWarps];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    wp_smem *s = &sm[w];
    for (long long t = (long long)blockIdx.x * kWarps + w; t < count;
         t += (long long)gridDim.x * kWarps) {
        const ks_int i = rows[t], c0 = crp[i], c1 = crp[i + 1];
        for (ks_int p = c0 + lane; p < c1; p += 32)
            cval[p] = 0.0;
        __syncwarp();
        auto body = [&](long long, bool act, double xv, ks_int q) -> bool {
            ks_int j = -1, slot = -1;
            double prod = 0.0;
            if (act) {
                j = yci[q];
                prod = __dmul_rn(xv, yval[q]);
                slot = find_slot(cci, c0, c1, j);
            }
            const unsigned badm = __ballot_sync(KS_CU_FULL_MASK, act && slot < 0);
            if (badm) { /* the first in order is the lowest lane */
                const ks_int bj = __shfl_sync(KS_CU_FULL_MASK, j, __ffs(badm) - 1);
                if (lane == 0)
                    atomicMin(bad, bad_key(i, bj));
                return true;
            }
            /* lanes adding to the same entry: the lowest adds them all, in
             * lane (= product) order; inactive lanes get keys of their own */
            const unsigned grp = __match_any_sync(KS_CU_FULL_MASK, act ? slot : -1 - lane);
            s->prod[lane] = prod;
            __syncwarp();
            if (act && (grp & ((1u << lane) - 1u)) == 0) {
                double acc = cval[slot];
                for (unsigned g = grp; g; g &= g - 1u)
                    acc = __dadd_rn(acc, s->prod[__ffs(g) - 1]);
                cval[slot] = acc;
            }
            __syncwarp(); /* cval and s->prod: this batch before the next */
            return false;
        };
        warp_products(xrp[i], xrp[i + 1], xci, xval, yrp, s, body);
        __syncwarp();
    }
}

/* U = the products X(i,k) Y(k,j) of each row of X*Y, unmerged and in
 * order, as entries (j, X(i,k) Y(k,j)) from urp[i]: one warp per row. */
__global__ void __launch_bounds__(kWarps * 32)
    expand_warp(ks_int n, const ks_int *__restrict__ xrp, const ks_int *__restrict__ xci,
                const double *__restrict__ xval, const ks_int *__restrict__ yrp,
                const ks_int *__restrict__ yci, const double *__restrict__ yval,
                const ks_int *__restrict__ urp, ks_int *uci, double *uval)
{
    __shared__ wp_smem sm[kWarps];
    const int w = threadIdx.x >> 5;
    wp_smem *s = &sm[w];
    for (long long i = (long long)blockIdx.x * kWarps + w; i < n;
         i += (long long)gridDim.x * kWarps) {
        const size_t u0 = (size_t)urp[i];
        auto body = [&](long long p, bool act, double xv, ks_int q) -> bool {
            if (act) {
                uci[u0 + p] = yci[q];
                uval[u0 + p] = __dmul_rn(xv, yval[q]);
            }
            return false;
        };
        warp_products(xrp[i], xrp[i + 1], xci, xval, yrp, s, body);
        __syncwarp();
    }
}

/* ======================================================= host helpers */
/* ub[i] for the rows of X*Y, a temporary of tmp. */
ks_error row_bounds(ks_cu_tmp *tmp, const ks_sparse *X, const ks_sparse *Y, ks_int **ub)
{
    KS_TRY(ks_cu_tmp_alloc(tmp, sizeof(ks_int) * ((size_t)X->nrows + 1), (void **)ub,
                           "product row bounds"));
    if (X->nrows == 0)
        return KS_OK;
    row_products<<<ks_cu_blocks(X->nrows), KS_CU_BLOCK, 0, ks_cu_stream(X->be)>>>(
        X->nrows, X->rowptr, X->colind, Y->rowptr, *ub, NULL);
    return ks_cu_launched("row_products");
}

/* The exact multiply-add count of X*Y (sparse/cpu/rap.c's product_flops). */
ks_error count_flops(const ks_sparse *X, const ks_sparse *Y, long long *flops)
{
    *flops = 0;
    if (X->nrows == 0)
        return KS_OK;
    ks_backend *be = X->be;
    unsigned long long *d = NULL, h = 0;
    KS_TRY(ks_be_alloc(be, sizeof h, (void **)&d, "product flop count"));
    ks_error e = ks_cu_memset(be, d, 0, sizeof h, "product flop count");
    if (e == KS_OK) {
        row_products<<<ks_cu_blocks(X->nrows), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(
            X->nrows, X->rowptr, X->colind, Y->rowptr, NULL, d);
        e = ks_cu_launched("row_products");
    }
    if (e == KS_OK)
        e = be->ops->download(be, &h, d, sizeof h);
    be->ops->free(be, d);
    *flops = (long long)h;
    return e;
}

/* The global tables for the rows of the last symbolic bin. */
typedef struct global_plan {
    ks_int *tab;
    int region_lg;
    unsigned pool;
} global_plan;

ks_error plan_global(ks_cu_tmp *tmp, const ks_int *ub, ks_int ycols, const ks_cu_bins *bins,
                     global_plan *g)
{
    memset(g, 0, sizeof *g);
    const ks_int count = bins->start[SYM_GLOBAL + 1] - bins->start[SYM_GLOBAL];
    if (count == 0)
        return KS_OK;
    ks_backend *be = tmp->be;
    ks_int *d = NULL, mb = 0;
    KS_TRY(ks_cu_tmp_alloc(tmp, sizeof(ks_int), (void **)&d, "largest product row"));
    KS_TRY(ks_cu_memset(be, d, 0, sizeof(ks_int), "largest product row"));
    max_bound<<<ks_cu_grid(count, KS_CU_BLOCK) < 1024 ? ks_cu_grid(count, KS_CU_BLOCK) : 1024,
                KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(bins->rows + bins->start[SYM_GLOBAL], count,
                                                    ub, ycols, d);
    KS_TRY(ks_cu_launched("max_bound"));
    KS_TRY(be->ops->download(be, &mb, d, sizeof mb));
    if (mb > (1 << 29))
        return ks_seterr(KS_ERR_SIZE, "sparse product (cuda): a row may have %" PRId32
                         " entries; its hash table exceeds the 32-bit index range", mb);
    g->region_lg = lg_for(2LL * mb);
    const size_t region = sizeof(ks_int) << g->region_lg;
    size_t pool = kGlobalTables / region;
    pool = pool < 1 ? 1 : pool > 4096 ? 4096 : pool;
    g->pool = (unsigned)(pool < (size_t)count ? pool : (size_t)count);
    return ks_cu_tmp_alloc(tmp, region * g->pool, (void **)&g->tab, "product hash tables");
}

/* One symbolic pass (count, or fill) over every bin. */
ks_error symbolic(bool fill, const ks_sparse *X, const ks_sparse *Y, const ks_int *ub,
                  const ks_cu_bins *b, const global_plan *g, ks_int *crp, ks_int *cci)
{
    cudaStream_t st = ks_cu_stream(X->be);
    const ks_int *xrp = X->rowptr, *xci = X->colind, *yrp = Y->rowptr, *yci = Y->colind;
    const ks_int ycols = Y->ncols;
    ks_int n = b->start[SYM_THREAD + 1] - b->start[SYM_THREAD];
    const ks_int *rows = b->rows + b->start[SYM_THREAD];
    if (n > 0) {
        if (fill)
            sym_thread<true><<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(rows, n, xrp, xci, yrp,
                                                                      yci, crp, cci);
        else
            sym_thread<false><<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(rows, n, xrp, xci, yrp,
                                                                       yci, crp, cci);
        KS_TRY(ks_cu_launched("sym_thread"));
    }
    n = b->start[SYM_WARP + 1] - b->start[SYM_WARP];
    rows = b->rows + b->start[SYM_WARP];
    if (n > 0) {
        if (fill)
            sym_warp<true><<<ks_cu_grid(n, kWarps), kWarps * 32, 0, st>>>(rows, n, xrp, xci, yrp,
                                                                         yci, crp, cci);
        else
            sym_warp<false><<<ks_cu_grid(n, kWarps), kWarps * 32, 0, st>>>(rows, n, xrp, xci,
                                                                          yrp, yci, crp, cci);
        KS_TRY(ks_cu_launched("sym_warp"));
    }
    n = b->start[SYM_BLOCK + 1] - b->start[SYM_BLOCK];
    rows = b->rows + b->start[SYM_BLOCK];
    if (n > 0) {
        if (fill)
            sym_block<true><<<ks_cu_grid(n, 1), kThreads, 0, st>>>(rows, n, ub, ycols, xrp, xci,
                                                                   yrp, yci, crp, cci);
        else
            sym_block<false><<<ks_cu_grid(n, 1), kThreads, 0, st>>>(rows, n, ub, ycols, xrp, xci,
                                                                    yrp, yci, crp, cci);
        KS_TRY(ks_cu_launched("sym_block"));
    }
    n = b->start[SYM_GLOBAL + 1] - b->start[SYM_GLOBAL];
    rows = b->rows + b->start[SYM_GLOBAL];
    if (n > 0) {
        if (fill)
            sym_global<true><<<g->pool, kThreads, 0, st>>>(rows, n, ub, ycols, g->tab,
                                                           g->region_lg, xrp, xci, yrp, yci, crp,
                                                           cci);
        else
            sym_global<false><<<g->pool, kThreads, 0, st>>>(rows, n, ub, ycols, g->tab,
                                                            g->region_lg, xrp, xci, yrp, yci,
                                                            crp, cci);
        KS_TRY(ks_cu_launched("sym_global"));
    }
    return KS_OK;
}

/* C's values from X*Y into its sorted pattern (C: X->nrows rows). *bad =
 * kNoBad, or the key (row << 32 | column) of the first product outside the
 * pattern in the lowest such row. ub: X*Y's row bounds if known, or NULL. */
ks_error numeric(const ks_sparse *X, const ks_sparse *Y, ks_sparse *C, const ks_int *ub,
                 unsigned long long *bad)
{
    ks_backend *be = X->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int n = X->nrows;
    *bad = kNoBad;
    if (n == 0)
        return KS_OK;
    ks_cu_tmp tmp;
    ks_cu_tmp_init(&tmp, be);
    ks_int *myub = NULL;
    unsigned char *bin = NULL;
    unsigned long long *dbad = NULL;
    ks_cu_bins bins;
    ks_error e = KS_OK;
    if (!ub) {
        e = row_bounds(&tmp, X, Y, &myub);
        ub = myub;
    }
    if (e == KS_OK)
        e = ks_cu_tmp_alloc(&tmp, (size_t)n, (void **)&bin, "numeric product bins");
    if (e == KS_OK) {
        num_bins<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, ub, bin);
        e = ks_cu_launched("num_bins");
    }
    if (e == KS_OK)
        e = ks_cu_bin_rows(&tmp, n, bin, NUM_BINS, &bins);
    if (e == KS_OK)
        e = ks_cu_tmp_alloc(&tmp, sizeof *dbad, (void **)&dbad, "numeric product flag");
    if (e == KS_OK)
        e = ks_cu_memset(be, dbad, 0xff, sizeof *dbad, "numeric product flag");
    ks_int cnt = e == KS_OK ? bins.start[NUM_THREAD + 1] - bins.start[NUM_THREAD] : 0;
    if (cnt > 0) {
        num_thread<<<ks_cu_blocks(cnt), KS_CU_BLOCK, 0, st>>>(
            bins.rows + bins.start[NUM_THREAD], cnt, X->rowptr, X->colind, X->val, Y->rowptr,
            Y->colind, Y->val, C->rowptr, C->colind, C->val, dbad);
        e = ks_cu_launched("num_thread");
    }
    cnt = e == KS_OK ? bins.start[NUM_WARP + 1] - bins.start[NUM_WARP] : 0;
    if (cnt > 0) {
        num_warp<<<ks_cu_grid(cnt, kWarps), kWarps * 32, 0, st>>>(
            bins.rows + bins.start[NUM_WARP], cnt, X->rowptr, X->colind, X->val, Y->rowptr,
            Y->colind, Y->val, C->rowptr, C->colind, C->val, dbad);
        e = ks_cu_launched("num_warp");
    }
    if (e == KS_OK)
        e = be->ops->download(be, bad, dbad, sizeof *bad);
    ks_cu_tmp_free(&tmp);
    return e;
}

/* An input's values and structure (the cpu checks its inputs too: a bad
 * index would read out of bounds). */
ks_error check_input(const ks_sparse *M, const char *who, const char *name)
{
    char what[96];
    snprintf(what, sizeof what, "%s: %s", who, name);
    if (M->nnz > 0 && !M->val)
        return ks_seterr(KS_ERR_ARG, "%s: no values", what);
    return ks_cu_check(M, what, 0);
}

/* 1 when KS_SPGEMM asks for cuSPARSE. */
ks_error use_cusparse(int *yes)
{
    const char *s = getenv("KS_SPGEMM");
    *yes = 0;
    if (!s || !*s || strcmp(s, "ours") == 0)
        return KS_OK;
    if (strcmp(s, "cusparse") == 0) {
        *yes = 1;
        return KS_OK;
    }
    return ks_seterr(KS_ERR_ARG, "KS_SPGEMM=%s: expected \"ours\" or \"cusparse\"", s);
}

ks_error multiply(int cusparse, const ks_sparse *X, const ks_sparse *Y, ks_sparse *Z)
{
    return cusparse ? ks_cu_spgemm_cusparse(X, Y, Z, NULL) : ks_cu_spgemm_ours(X, Y, Z);
}

} // namespace

/* ====================================================== the operations */
extern "C" ks_error ks_cu_spgemm_ours(const ks_sparse *A, const ks_sparse *B, ks_sparse *C)
{
    ks_backend *be = A->be;
    const ks_int n = A->nrows;
    memset(C, 0, sizeof *C);
    C->be = be;
    C->nrows = n;
    C->ncols = B->ncols;
    ks_error e = ks_be_alloc(be, sizeof(ks_int) * ((size_t)n + 1), (void **)&C->rowptr,
                             "sparse row pointers");
    if (e != KS_OK) {
        memset(C, 0, sizeof *C);
        return e;
    }
    ks_cu_tmp tmp;
    ks_cu_tmp_init(&tmp, be);
    ks_int *ub = NULL, total = 0;
    unsigned char *bin = NULL;
    ks_cu_bins bins;
    global_plan g;
    memset(&g, 0, sizeof g);
    /* rows skipped by every bin (no products) keep the count 0 */
    e = ks_cu_memset(be, C->rowptr, 0, sizeof(ks_int) * ((size_t)n + 1),
                     "product row counts");
    if (e == KS_OK)
        e = row_bounds(&tmp, A, B, &ub);
    if (e == KS_OK)
        e = ks_cu_tmp_alloc(&tmp, (size_t)n + 1, (void **)&bin, "product row bins");
    if (e == KS_OK && n > 0) {
        sym_bins<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(n, ub, B->ncols, bin);
        e = ks_cu_launched("sym_bins");
    }
    if (e == KS_OK)
        e = ks_cu_bin_rows(&tmp, n, bin, SYM_BINS, &bins);
    if (e == KS_OK)
        e = plan_global(&tmp, ub, B->ncols, &bins, &g);
    if (e == KS_OK)
        e = symbolic(false, A, B, ub, &bins, &g, C->rowptr, NULL);
    if (e == KS_OK)
        e = ks_cu_scan(be, C->rowptr, n, C->rowptr, &total, "sparse product (cuda): nnz(C)");
    if (e == KS_OK) {
        C->nnz = total;
        e = ks_be_alloc(be, sizeof(ks_int) * (size_t)total + 1, (void **)&C->colind,
                        "sparse column indices");
    }
    if (e == KS_OK)
        e = ks_be_alloc(be, sizeof(double) * (size_t)total + 1, (void **)&C->val,
                        "sparse values");
    if (e == KS_OK && total > 0)
        e = symbolic(true, A, B, ub, &bins, &g, C->rowptr, C->colind);
    if (e == KS_OK && total > 0)
        e = ks_cu_seg_sort(be, n, C->rowptr, C->colind, NULL);
    unsigned long long bad = kNoBad;
    if (e == KS_OK && total > 0)
        e = numeric(A, B, C, ub, &bad);
    if (e == KS_OK && bad != kNoBad)
        e = ks_seterr(KS_ERR_DEVICE, "internal error: sparse product (cuda): the numeric pass "
                      "found entry (%" PRId32 ", %" PRId32 ") outside the symbolic pattern",
                      (ks_int)(bad >> 32), (ks_int)(bad & 0xffffffffu));
    ks_cu_tmp_free(&tmp);
    if (e != KS_OK)
        ks_sparse_free(C);
    return e;
}

extern "C" ks_error ks_cu_spgemm(const ks_sparse *A, const ks_sparse *B, ks_sparse *C)
{
    static const char who[] = "sparse product (cuda)";
    KS_TRY(check_input(A, who, "A"));
    KS_TRY(check_input(B, who, "B"));
    int cus;
    KS_TRY(use_cusparse(&cus));
    return multiply(cus, A, B, C);
}

extern "C" ks_error ks_cu_spgemm_numeric(const ks_sparse *A, const ks_sparse *B, ks_sparse *C)
{
    static const char who[] = "sparse numeric product (cuda)";
    KS_TRY(check_input(A, who, "A"));
    KS_TRY(check_input(B, who, "B"));
    KS_TRY(check_input(C, who, "C"));
    unsigned long long bad;
    KS_TRY(numeric(A, B, C, NULL, &bad));
    if (bad != kNoBad)
        return ks_seterr(KS_ERR_ARG, "%s: A * B has entry (%" PRId32 ", %" PRId32 ") outside "
                         "the pattern of C (C's values are now unspecified)", who,
                         (ks_int)(bad >> 32), (ks_int)(bad & 0xffffffffu));
    return KS_OK;
}

extern "C" ks_error ks_cu_rap(const ks_sparse *R, const ks_sparse *A, const ks_sparse *P,
                              ks_sparse *Ac)
{
    static const char who[] = "sparse Galerkin product (cuda)";
    KS_TRY(check_input(R, who, "R"));
    KS_TRY(check_input(A, who, "A"));
    KS_TRY(check_input(P, who, "P"));
    int cus;
    KS_TRY(use_cusparse(&cus));
    long long f_ap, f_ra;
    KS_TRY(count_flops(A, P, &f_ap));
    KS_TRY(count_flops(R, A, &f_ra));
    const int ra_first = f_ra < f_ap;
    ks_sparse T;
    ks_error e = ra_first ? multiply(cus, R, A, &T) : multiply(cus, A, P, &T);
    if (e != KS_OK)
        return ks_adderr(e, "%s: %s", who, ra_first ? "R*A" : "A*P");
    e = ra_first ? multiply(cus, &T, P, Ac) : multiply(cus, R, &T, Ac);
    if (e != KS_OK)
        ks_adderr(e, "%s: %s", who, ra_first ? "(R*A)*P" : "R*(A*P)");
    ks_sparse_free(&T);
    return e;
}

extern "C" ks_error ks_cu_rap_numeric(const ks_sparse *R, const ks_sparse *A, const ks_sparse *P,
                                      ks_sparse *Ac, int *outside)
{
    static const char who[] = "sparse numeric Galerkin product (cuda)";
    /* as the cpu: shapes that do not fit the saved pattern are "outside" */
    if (R->nrows != Ac->nrows || P->ncols != Ac->ncols || R->ncols != A->nrows ||
        A->ncols != P->nrows) {
        *outside = 1;
        return KS_OK;
    }
    if (Ac->nnz > 0 && !Ac->val)
        return ks_seterr(KS_ERR_ARG, "%s: the output pattern has no values", who);
    KS_TRY(check_input(R, who, "R"));
    KS_TRY(check_input(A, who, "A"));
    KS_TRY(check_input(P, who, "P"));
    KS_TRY(check_input(Ac, who, "Ac"));
    ks_backend *be = A->be;
    ks_cu_tmp tmp;
    ks_cu_tmp_init(&tmp, be);
    ks_sparse U;
    memset(&U, 0, sizeof U);
    U.be = be;
    U.nrows = R->nrows;
    U.ncols = A->ncols;
    /* U's row pointers: the products of each row of R*A */
    ks_error e = ks_cu_tmp_alloc(&tmp, sizeof(ks_int) * ((size_t)U.nrows + 1),
                                 (void **)&U.rowptr, "R*A expansion row pointers");
    if (e == KS_OK && U.nrows > 0) {
        row_products<<<ks_cu_blocks(U.nrows), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(
            U.nrows, R->rowptr, R->colind, A->rowptr, U.rowptr, NULL);
        e = ks_cu_launched("row_products");
    }
    if (e == KS_OK)
        e = ks_cu_scan(be, U.rowptr, U.nrows, U.rowptr, &U.nnz, "R*A expansion");
    if (e == KS_OK && U.nnz == INT32_MAX) /* a row's count may have been capped there */
        e = ks_seterr(KS_ERR_SIZE, "%s: R*A has 2^31 - 1 or more products", who);
    if (e == KS_OK)
        e = ks_cu_tmp_alloc(&tmp, sizeof(ks_int) * (size_t)U.nnz + 1, (void **)&U.colind,
                            "R*A expansion columns");
    if (e == KS_OK)
        e = ks_cu_tmp_alloc(&tmp, sizeof(double) * (size_t)U.nnz + 1, (void **)&U.val,
                            "R*A expansion values");
    if (e == KS_OK && U.nnz > 0) {
        expand_warp<<<ks_cu_grid(U.nrows, kWarps), kWarps * 32, 0, ks_cu_stream(be)>>>(
            U.nrows, R->rowptr, R->colind, R->val, A->rowptr, A->colind, A->val, U.rowptr,
            U.colind, U.val);
        e = ks_cu_launched("expand_warp");
    }
    unsigned long long bad = kNoBad;
    if (e == KS_OK)
        e = numeric(&U, P, Ac, NULL, &bad);
    ks_cu_tmp_free(&tmp);
    if (e == KS_OK)
        *outside = bad != kNoBad;
    return e;
}
