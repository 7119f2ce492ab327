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
 * A fresh product C = X Y (ours) in two passes over the products:
 *   rows:    one pass over X's rows: ub = the row's products (sum over k
 *            in X's row of nnz(Y row k)), its count bin by ub and
 *            bound = min(ub, Y.ncols) (the most distinct columns the row
 *            can have), the rows per bin, the total (the flop count R A P
 *            chooses its association by) -> one download;
 *   count:   exact row sizes of C, by bin (hash tables of keys only):
 *     ub <= 32          one thread, the distinct columns in a list in
 *                       registers;
 *     bound <= 512      one warp, a table of 2 bound slots in shared memory;
 *     bound <= 4096     a warp with 1024 slots first (most such rows have
 *                       many products but few columns), then one block,
 *                       up to 8192 slots in shared memory, for the rows
 *                       with more than 512 columns;
 *     larger            one block, a table in global memory (a pool of at
 *                       most 256 MB, blocks loop over rows);
 *   then each row's value bin by ub and its exact size len, the 64-bit
 *   total (> INT32_MAX -> KS_ERR_SIZE) and the scan into row pointers ->
 *   one download, and C's exact allocation;
 *   values:  each row summed into a hash table (key = column, value = the
 *            sum so far), sorted by column and written once:
 *     ub <= 32          one thread, the columns in registers, the sums
 *                       in shared memory, each entry written at its rank;
 *     len <= 32, 128, 512   one warp, a table of 2 len .. 4 len slots in
 *                       shared memory (three kernels by table size, so
 *                       small rows do not pay for the largest table), the
 *                       entries compacted and sorted in the warp (bitonic:
 *                       in registers up to 32 entries, else in the table);
 *     larger            one warp, the table in global memory (a pool of at
 *                       most 256 MB), the entries written unsorted, then
 *                       these rows only through the segmented sort.
 *   A warp takes the row's products 32 at a time in order; lanes of a
 *   batch hitting the same column (the same slot: __match_any_sync) form a
 *   group whose lowest lane adds the group's products in lane order, so
 *   every sum is sequential: batches in order, lanes in order. A slot
 *   created in the batch starts at 0.0.
 * Syncs: two downloads (the bins, then the sizes), and the segmented
 * sort's where rows of over 512 entries exist; the rows are binned on the
 * device (each fill kernel turns the counts into bin offsets itself).
 * The public operations' input checks (ks_cu_check's tests and messages)
 * set a flag that comes with the first download instead of syncing on
 * their own; the row pass before it reads only within the arrays, so a
 * malformed input cannot fault before it is reported.
 *
 * The numeric pass into a known sorted pattern (spgemm_numeric, and
 * rap_numeric's second step): one pass over the rows (ub, len: the bin)
 * -> one download, then
 *     ub <= 32          one thread walks the products in order, finding
 *                       each column by binary search in C's row;
 *     len <= 512        one warp: C's row (column -> position) in a shared
 *                       hash table, the sums in shared memory by position
 *                       (groups as above), written once, coalesced;
 *     larger            one warp, binary searches in C's row, the sums
 *                       added into C's values (groups as above);
 *   and a last download: the first product outside the pattern.
 *
 * Everywhere every C(i,j) starts at 0.0 and adds X(i,k)*Y(k,j) in the
 * order of X's row i then Y's row k, exactly as the cpu does
 * (sparse/cpu/spgemm.c), with __dmul_rn/__dadd_rn so nvcc cannot fuse
 * them into an FMA (the cpu build does not either). No floating-point
 * atomics anywhere: the same bits on every run.
 *
 * R A P: the cheaper first product by the exact multiply-add counts of A*P
 * and R*A, R*(A*P) on ties (sparse/cpu/rap.c's rule, so the patterns and
 * the roundings match the cpu). Both counts come from the row passes of
 * both candidate products (one download for the two), and the chosen one's
 * row pass is the first product's. Its numeric pass follows the cpu's
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
const int kThreadRows = 128;   /* threads per block of values_thread */
const int kWarpBound = 512;    /* count pass: distinct columns a warp's table takes */
const int kWarpLg = 10;        /* its largest size: 1024 */
const int kBlockBound = 4096;  /* count pass: distinct columns a block's shared table takes */
const int kBlockLg = 13;       /* its largest size: 8192 */
const int kBlockMinLg = 10;
const int kMinLg = 5;          /* smallest warp table: a slot per lane */
const int kWarps = 4;          /* warps per block of the warp kernels */
const int kThreads = 256;      /* threads per block of the block kernels */
const int kPassBlocks = 1024;  /* blocks of the row passes (their counters are flushed per block) */
const size_t kGlobalTables = (size_t)256 << 20; /* bytes of a global table pool */

/* Count bins (by ub and bound) and value bins (by ub and the row's size
 * len: the fresh product's value pass, and the numeric pass). A thread
 * row is in bin 0 of both, so the count pass leaves its byte as it is. */
enum { S_THREAD, S_WARP, S_BLOCK, S_GLOBAL, S_BINS };
enum { V_THREAD, V_W64, V_W256, V_W1024, V_LONG, V_BINS };
const int kNoBin = 0xff;       /* rows without products (nor entries) */
const int kW64 = 32, kW256 = 128, kW1024 = 512; /* largest len of the warp value bins */

/* Counters of one product, on the device; downloaded whole. */
typedef struct prod_stats {
    unsigned long long flops; /* products of X*Y, exact */
    unsigned long long nnz;   /* entries of C, exact (after the count pass) */
    unsigned long long bad;   /* numeric pass: ~key of the first product outside the
                                 pattern (bad_key), 0 for none (atomicMax of ~key) */
    int bad_input;            /* bit k: input k failed its check (ks_cu_check_async) */
    ks_int sym[S_BINS];       /* rows per count bin */
    ks_int max_bound;         /* largest bound of an S_GLOBAL row */
    ks_int val[V_BINS];       /* rows per value bin */
    ks_int max_long;          /* largest len of a V_LONG row */
    ks_int cursor[2][KS_CU_MAX_BINS]; /* fill_bins' cursors: count bins, value bins */
} prod_stats;

/* ============================================================== helpers */
__device__ __forceinline__ int warp_sum(int v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(KS_CU_FULL_MASK, v, o);
    return v;
}

__device__ __forceinline__ unsigned lanes_below()
{
    return (1u << (threadIdx.x & 31)) - 1u;
}

/* Smallest lg >= 1 with 2^lg >= x (x <= 2^30). */
__host__ __device__ __forceinline__ int lg_for(long long x)
{
    int lg = 1;
    while ((1LL << lg) < x)
        lg++;
    return lg;
}

/* A warp's table for a row of len entries: >= 2 len slots, >= 32. */
__host__ __device__ __forceinline__ int warp_lg(ks_int len)
{
    const int lg = lg_for(2LL * len);
    return lg < kMinLg ? kMinLg : lg;
}

__device__ __forceinline__ int val_bin(ks_int ub, ks_int len)
{
    return ub <= kThreadMax ? V_THREAD
           : len <= kW64    ? V_W64
           : len <= kW256   ? V_W256
           : len <= kW1024  ? V_W1024
                            : V_LONG;
}

/* Open-addressing tables of 2^lg slots (-1 = empty, linear probing). They
 * never fill: a row's table has at least twice its distinct columns. */
__device__ __forceinline__ unsigned hash_of(ks_int key, int lg)
{
    return ((unsigned)key * 2654435761u) >> (32 - lg); /* high bits: strided keys spread */
}

/* Slot of key, inserted if absent (*made = 1 then). Lanes inserting the
 * same key at once get the same slot: slots only ever change from empty
 * to a key, and they all probe the same sequence. */
__device__ __forceinline__ unsigned hash_slot(ks_int *tab, int lg, ks_int key, int *made)
{
    const unsigned mask = (1u << lg) - 1u;
    unsigned h = hash_of(key, lg);
    for (;;) {
        const ks_int prev = atomicCAS(&tab[h], -1, key);
        if (prev == -1) {
            *made = 1;
            return h;
        }
        if (prev == key)
            return h;
        h = (h + 1u) & mask;
    }
}

/* 1 when key was not in the table yet. */
__device__ __forceinline__ int hash_insert(ks_int *tab, int lg, ks_int key)
{
    int made = 0;
    hash_slot(tab, lg, key, &made);
    return made;
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
 * lowest row (each row reports at most one: its first in product order).
 * Stored complemented (atomicMax of ~key on a zeroed counter). */
__device__ __forceinline__ unsigned long long bad_key(ks_int i, ks_int j)
{
    return ((unsigned long long)(unsigned)i << 32) | (unsigned)j;
}

/* cnt[b] += the lanes with bin b (b < 0: none), one atomic per bin. All
 * lanes of the warp call it. */
__device__ __forceinline__ void tally_bins(ks_int *cnt, int b)
{
    const unsigned peers = __match_any_sync(KS_CU_FULL_MASK, b);
    if (b >= 0 && (peers & lanes_below()) == 0)
        atomicAdd(&cnt[b], __popc(peers));
}

__device__ __forceinline__ unsigned long long warp_sum64(unsigned long long v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(KS_CU_FULL_MASK, v, o);
    return v;
}

/* Table accesses: a global table is written by atomics at L2, so it is
 * read past L1 (__ldcg); a shared one directly. */
template <bool G>
__device__ __forceinline__ ks_int ld_key(const ks_int *p)
{
    return G ? __ldcg(p) : *(const volatile ks_int *)p;
}
template <bool G>
__device__ __forceinline__ double ld_val(const double *p)
{
    return G ? __ldcg(p) : *p;
}
template <bool G>
__device__ __forceinline__ void st_val(double *p, double v)
{
    if (G)
        __stcg(p, v);
    else
        *p = v;
}

/* =========================================================== row passes */
/* The products of row i of X*Y, reading only within X's and Y's arrays
 * (the inputs' checks may still be running: a malformed input gives a
 * wrong count, never a fault, and is reported before the count is used). */
__device__ __forceinline__ long long row_count(long long i, const ks_int *__restrict__ xrp,
                                               const ks_int *__restrict__ xci, ks_int xnnz,
                                               const ks_int *__restrict__ yrp, ks_int yrows)
{
    const ks_int a = xrp[i], b = xrp[i + 1];
    long long s = 0;
    if (a >= 0 && b <= xnnz)
        for (ks_int k = a; k < b; k++) {
            const ks_int c = xci[k];
            if (c >= 0 && c < yrows)
                s += yrp[c + 1] - yrp[c];
        }
    return s;
}

/* The rows pass of X*Y: ub[i] (capped at INT32_MAX) and the count bin of
 * each row (kNoBin without products), the rows per bin, the largest bound
 * of the global bin, the exact total of products. Trip counts are uniform
 * per block (warp intrinsics). */
__global__ void prep_rows(ks_int n, const ks_int *__restrict__ xrp, const ks_int *__restrict__ xci,
                          ks_int xnnz, const ks_int *__restrict__ yrp, ks_int yrows,
                          ks_int ycols, ks_int *ub, unsigned char *bin, prod_stats *st)
{
    __shared__ ks_int hist[S_BINS], smax;
    __shared__ unsigned long long sflops;
    if (threadIdx.x < S_BINS)
        hist[threadIdx.x] = 0;
    if (threadIdx.x == 0) {
        smax = 0;
        sflops = 0;
    }
    __syncthreads();
    unsigned long long mine = 0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long base = (long long)blockIdx.x * blockDim.x; base < n; base += stride) {
        const long long i = base + threadIdx.x;
        int b = -1;
        if (i < n) {
            const long long s = row_count(i, xrp, xci, xnnz, yrp, yrows);
            const ks_int u = s > INT32_MAX ? INT32_MAX : (ks_int)s, bound = u < ycols ? u : ycols;
            b = u <= 0                  ? -1
                : u <= kThreadMax       ? S_THREAD
                : bound <= kWarpBound   ? S_WARP
                : bound <= kBlockBound  ? S_BLOCK
                                        : S_GLOBAL;
            ub[i] = u;
            bin[i] = (unsigned char)(b < 0 ? kNoBin : b);
            if (b == S_GLOBAL)
                atomicMax(&smax, bound);
            mine += (unsigned long long)s;
        }
        tally_bins(hist, b);
    }
    mine = warp_sum64(mine);
    if ((threadIdx.x & 31) == 0 && mine > 0)
        atomicAdd(&sflops, mine); /* integers: order-free */
    __syncthreads();
    if (threadIdx.x < S_BINS && hist[threadIdx.x] > 0)
        atomicAdd(&st->sym[threadIdx.x], hist[threadIdx.x]);
    if (threadIdx.x == 0) {
        if (smax > 0)
            atomicMax(&st->max_bound, smax);
        if (sflops > 0)
            atomicAdd(&st->flops, sflops);
    }
}

/* After the count pass (len[i] = row i's size, before the scan): the
 * value bin of each row with products, the rows per bin, the largest long
 * row, the exact 64-bit total of the sizes. */
__global__ void classify_rows(ks_int n, const ks_int *__restrict__ ub,
                              const ks_int *__restrict__ len, unsigned char *bin, prod_stats *st)
{
    __shared__ ks_int hist[V_BINS], smax;
    __shared__ unsigned long long snnz;
    if (threadIdx.x < V_BINS)
        hist[threadIdx.x] = 0;
    if (threadIdx.x == 0) {
        smax = 0;
        snnz = 0;
    }
    __syncthreads();
    unsigned long long mine = 0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long base = (long long)blockIdx.x * blockDim.x; base < n; base += stride) {
        const long long i = base + threadIdx.x;
        int b = -1;
        if (i < n) {
            const ks_int u = ub[i];
            if (u > 0) {
                const ks_int l = len[i];
                b = val_bin(u, l);
                bin[i] = (unsigned char)b;
                if (b == V_LONG)
                    atomicMax(&smax, l);
                mine += (unsigned long long)l;
            }
        }
        tally_bins(hist, b);
    }
    mine = warp_sum64(mine);
    if ((threadIdx.x & 31) == 0 && mine > 0)
        atomicAdd(&snnz, mine);
    __syncthreads();
    if (threadIdx.x < V_BINS && hist[threadIdx.x] > 0)
        atomicAdd(&st->val[threadIdx.x], hist[threadIdx.x]);
    if (threadIdx.x == 0) {
        if (smax > 0)
            atomicMax(&st->max_long, smax);
        if (snnz > 0)
            atomicAdd(&st->nnz, snnz);
    }
}

/* The numeric pass's rows pass (C's pattern given): the value bin of each
 * row by its products and its size in C (kNoBin with neither), the rows
 * per bin. */
__global__ void numeric_rows(ks_int n, const ks_int *__restrict__ xrp,
                             const ks_int *__restrict__ xci, ks_int xnnz,
                             const ks_int *__restrict__ yrp, ks_int yrows,
                             const ks_int *__restrict__ crp, unsigned char *bin, prod_stats *st)
{
    __shared__ ks_int hist[V_BINS];
    if (threadIdx.x < V_BINS)
        hist[threadIdx.x] = 0;
    __syncthreads();
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long base = (long long)blockIdx.x * blockDim.x; base < n; base += stride) {
        const long long i = base + threadIdx.x;
        int b = -1;
        if (i < n) {
            const long long s = row_count(i, xrp, xci, xnnz, yrp, yrows);
            const ks_int u = s > INT32_MAX ? INT32_MAX : (ks_int)s, l = crp[i + 1] - crp[i];
            /* a row without products still has its entries zeroed */
            b = u <= 0 && l == 0 ? -1 : val_bin(u, l);
            bin[i] = (unsigned char)(b < 0 ? kNoBin : b);
        }
        tally_bins(hist, b);
    }
    __syncthreads();
    if (threadIdx.x < V_BINS && hist[threadIdx.x] > 0)
        atomicAdd(&st->val[threadIdx.x], hist[threadIdx.x]);
}

/* rows = the n rows grouped by bin (bin[i] < nbins; others skipped), bin b
 * from the sum of count[0 .. b): the offsets come from the device counts,
 * so no download is needed between counting and filling. cursor: nbins
 * zeroed counters. zero (may be NULL): zero[i] = 0 for the skipped rows
 * (their size in C). The order inside a bin is arbitrary (each row is
 * handled on its own). One atomic per warp and bin (__match_any_sync);
 * trip counts uniform per block. */
__global__ void fill_bins(ks_int n, const unsigned char *__restrict__ bin, int nbins,
                          const ks_int *__restrict__ count, ks_int *cursor, ks_int *rows,
                          ks_int *zero)
{
    __shared__ ks_int start[KS_CU_MAX_BINS];
    if (threadIdx.x == 0) {
        ks_int s = 0;
        for (int b = 0; b < nbins; b++) {
            start[b] = s;
            s += count[b];
        }
    }
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long base = (long long)blockIdx.x * blockDim.x; base < n; base += stride) {
        const long long i = base + threadIdx.x;
        int b = -1;
        if (i < n) {
            b = bin[i];
            if (b >= nbins) {
                b = -1;
                if (zero)
                    zero[i] = 0;
            }
        }
        const unsigned peers = __match_any_sync(KS_CU_FULL_MASK, b);
        const int leader = __ffs(peers) - 1;
        ks_int pos = 0;
        if (b >= 0 && lane == leader)
            pos = atomicAdd(&cursor[b], __popc(peers));
        pos = __shfl_sync(KS_CU_FULL_MASK, pos, leader);
        if (b >= 0)
            rows[start[b] + pos + __popc(peers & lanes_below())] = (ks_int)i;
    }
}

/* ub[i] = products of row i of X*Y (capped at INT32_MAX). */
__global__ void row_products(ks_int n, const ks_int *__restrict__ xrp,
                             const ks_int *__restrict__ xci, const ks_int *__restrict__ yrp,
                             ks_int *ub)
{
    KS_CU_FOR(i, n)
    {
        long long s = 0;
        for (ks_int k = xrp[i]; k < xrp[i + 1]; k++) {
            const ks_int b = xci[k];
            s += yrp[b + 1] - yrp[b];
        }
        ub[i] = s > INT32_MAX ? INT32_MAX : (ks_int)s;
    }
}

/* ============================================================ products */
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
 * on lanes past the end, q the Y entry and xv the X value (0.0 without
 * VALS); body returns the same bool on all lanes, true to stop. The
 * caller syncs the warp before reusing s. */
template <bool VALS, class Body>
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
            if (VALS)
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
        if (VALS)
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
                if (VALS)
                    v = s->xv[lo];
            }
            if (body(done + p, act, v, q))
                return;
        }
        done += total;
        __syncwarp(); /* s is rewritten by the next chunk */
    }
}

/* ======================================================= thread lists */
/* The thread kernels' lists (the distinct columns of a row of at most
 * kThreadMax products, and their sums) live in registers: every index
 * below is a constant once the loops are unrolled. Indexed by a variable,
 * the arrays went to local memory, 384 bytes a thread in the value pass:
 * with a full SM's threads that is several times L1, so a search over the
 * list went to L2 (or DRAM) once per element, on the path products like
 * A*P of millions of rows (28 products each) take. The loops stop at
 * cnt (a branch per element, as the loads of the local version). */

/* Position of j in cols[0 .. cnt), or -1. */
__device__ __forceinline__ int list_find(const ks_int (&cols)[kThreadMax], int cnt, ks_int j)
{
    int at = -1;
#pragma unroll
    for (int u = 0; u < kThreadMax; u++) {
        if (u >= cnt)
            break;
        if (cols[u] == j) {
            at = u;
            break;
        }
    }
    return at;
}

/* The number of columns below j in cols[0 .. cnt). */
__device__ __forceinline__ int list_rank(const ks_int (&cols)[kThreadMax], int cnt, ks_int j)
{
    int r = 0;
#pragma unroll
    for (int u = 0; u < kThreadMax; u++) {
        if (u >= cnt)
            break;
        r += cols[u] < j;
    }
    return r;
}

/* An empty list (every element defined: the selects read them all). */
__device__ __forceinline__ void list_clear(ks_int (&cols)[kThreadMax])
{
#pragma unroll
    for (int u = 0; u < kThreadMax; u++)
        cols[u] = -1;
}

/* cols[at] = j (at < kThreadMax): a select per element (see values_thread). */
__device__ __forceinline__ void list_put(ks_int (&cols)[kThreadMax], int at, ks_int j)
{
#pragma unroll
    for (int u = 0; u < kThreadMax; u++)
        cols[u] = u == at ? j : cols[u];
}

/* ========================================================== count pass */
/* crp[i] = the number of distinct columns of row i (before the scan). */

__global__ void count_thread(const ks_int *__restrict__ rows, ks_int count,
                             const ks_int *__restrict__ xrp, const ks_int *__restrict__ xci,
                             const ks_int *__restrict__ yrp, const ks_int *__restrict__ yci,
                             ks_int *crp)
{
    KS_CU_FOR(t, count)
    {
        const ks_int i = rows[t];
        ks_int cols[kThreadMax]; /* registers: see list_find */
        int cnt = 0;             /* <= ub <= kThreadMax */
        list_clear(cols);
        for (ks_int k = xrp[i]; k < xrp[i + 1]; k++) {
            const ks_int b = xci[k];
            for (ks_int q = yrp[b]; q < yrp[b + 1]; q++) {
                const ks_int j = yci[q];
                if (list_find(cols, cnt, j) < 0 && cnt < kThreadMax)
                    list_put(cols, cnt++, j);
            }
        }
        crp[i] = cnt;
    }
}

/* One warp per row, its products 32 at a time (all lanes busy however
 * short Y's rows), a shared table of 2 bound slots (at least 32).
 * TRY: the block bin's rows (bound > kWarpBound), first tried in the
 * warp's largest table: a row whose distinct columns pass kWarpBound stops
 * (checked every batch of 32 products, so the table is never over 544 /
 * 1024 full) and gets crp[i] = -1, for count_block to redo. The Galerkin
 * products' rows have many products but few columns (R (AP) at 7-point
 * 256^3: about 1500 products, 45 columns), and a block's table of 2 ub
 * slots cleared and scanned per row cost more than the products. */
template <bool TRY>
__global__ void __launch_bounds__(kWarps * 32)
    count_warp(const ks_int *__restrict__ rows, ks_int count, const ks_int *__restrict__ ub,
               ks_int ycols, const ks_int *__restrict__ xrp, const ks_int *__restrict__ xci,
               const ks_int *__restrict__ yrp, const ks_int *__restrict__ yci, ks_int *crp)
{
    __shared__ ks_int tabs[kWarps][1 << kWarpLg];
    __shared__ wp_smem sm[kWarps];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    ks_int *tab = tabs[w];
    for (long long t = (long long)blockIdx.x * kWarps + w; t < count;
         t += (long long)gridDim.x * kWarps) {
        const ks_int i = rows[t], u = ub[i], bound = u < ycols ? u : ycols;
        /* bound <= kWarpBound (TRY: any): lg <= kWarpLg */
        const int lg = TRY ? kWarpLg : warp_lg(bound);
        for (int s = lane; s < (1 << lg); s += 32)
            tab[s] = -1;
        __syncwarp();
        int cnt = 0;
        auto body = [&](long long, bool act, double, ks_int q) -> bool {
            if (act)
                cnt += hash_insert(tab, lg, yci[q]);
            return TRY && warp_sum(cnt) > kWarpBound;
        };
        warp_products<false>(xrp[i], xrp[i + 1], xci, NULL, yrp, &sm[w], body);
        cnt = warp_sum(cnt);
        if (lane == 0)
            crp[i] = TRY && cnt > kWarpBound ? -1 : cnt;
        __syncwarp(); /* the table and the staging are reused by the next row */
    }
}

/* One row by the whole block, table of 2^lg slots at tab (shared or
 * global memory); *s_cnt a shared counter. */
__device__ void count_block_row(ks_int i, ks_int *tab, int lg, ks_int *s_cnt,
                                const ks_int *__restrict__ xrp, const ks_int *__restrict__ xci,
                                const ks_int *__restrict__ yrp, const ks_int *__restrict__ yci,
                                ks_int *crp)
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
    cnt = warp_sum(cnt);
    if (lane == 0 && cnt > 0)
        atomicAdd(s_cnt, cnt);
    __syncthreads();
    if (threadIdx.x == 0)
        crp[i] = *s_cnt;
    __syncthreads(); /* the table and the counter are reused by the next row */
}

/* The rows count_warp<true> gave up on (crp[i] < 0). */
__global__ void __launch_bounds__(kThreads)
    count_block(const ks_int *__restrict__ rows, ks_int count, const ks_int *__restrict__ ub,
                ks_int ycols, const ks_int *__restrict__ xrp, const ks_int *__restrict__ xci,
                const ks_int *__restrict__ yrp, const ks_int *__restrict__ yci, ks_int *crp)
{
    __shared__ ks_int tab[1 << kBlockLg];
    __shared__ ks_int s_cnt;
    for (ks_int t = blockIdx.x; t < count; t += gridDim.x) {
        const ks_int i = rows[t], u = ub[i], bound = u < ycols ? u : ycols;
        if (crp[i] >= 0) /* the same value in every thread: uniform */
            continue;
        int lg = lg_for(2LL * bound);
        lg = lg < kBlockMinLg ? kBlockMinLg : lg;
        count_block_row(i, tab, lg, &s_cnt, xrp, xci, yrp, yci, crp);
    }
}

/* Block b owns table gtab + b * 2^region_lg and takes rows b, b + grid, ... */
__global__ void __launch_bounds__(kThreads)
    count_global(const ks_int *__restrict__ rows, ks_int count, const ks_int *__restrict__ ub,
                 ks_int ycols, ks_int *gtab, int region_lg, const ks_int *__restrict__ xrp,
                 const ks_int *__restrict__ xci, const ks_int *__restrict__ yrp,
                 const ks_int *__restrict__ yci, ks_int *crp)
{
    __shared__ ks_int s_cnt;
    ks_int *tab = gtab + ((size_t)blockIdx.x << region_lg);
    for (ks_int t = blockIdx.x; t < count; t += gridDim.x) {
        const ks_int i = rows[t], u = ub[i], bound = u < ycols ? u : ycols;
        count_block_row(i, tab, lg_for(2LL * bound), &s_cnt, xrp, xci, yrp, yci, crp);
    }
}

/* ========================================================== value pass */
/* Row x0 .. x1 of X times Y summed into the table keys/vals of 2^lg slots
 * (>= twice the row's distinct columns) in the cpu's order: each batch of
 * 32 products in order, lanes hitting the same column grouped by their
 * slot, the group's lowest lane adding its products in lane order; a slot
 * made in this batch (exactly one lane of its group made it) starts at
 * 0.0, as the cpu's accumulator. G: the table is in global memory. */
template <bool G>
__device__ __forceinline__ void sum_row(ks_int x0, ks_int x1, ks_int *keys, double *vals, int lg, wp_smem *s,
                        const ks_int *__restrict__ xci, const double *__restrict__ xval,
                        const ks_int *__restrict__ yrp, const ks_int *__restrict__ yci,
                        const double *__restrict__ yval)
{
    const int lane = threadIdx.x & 31;
    for (int e = lane; e < (1 << lg); e += 32)
        keys[e] = -1;
    __syncwarp();
    auto body = [&](long long, bool act, double xv, ks_int q) -> bool {
        int slot = -1, made = 0;
        double prod = 0.0;
        if (act) {
            prod = __dmul_rn(xv, yval[q]);
            slot = (int)hash_slot(keys, lg, yci[q], &made);
        }
        /* inactive lanes get keys of their own (slots are >= 0) */
        const unsigned grp = __match_any_sync(KS_CU_FULL_MASK, act ? slot : -1 - lane);
        const unsigned fresh = __ballot_sync(KS_CU_FULL_MASK, made);
        s->prod[lane] = prod;
        __syncwarp();
        if (act && (grp & lanes_below()) == 0) {
            double acc = (fresh & grp) ? 0.0 : ld_val<G>(&vals[slot]);
            for (unsigned g = grp; g; g &= g - 1u)
                acc = __dadd_rn(acc, s->prod[__ffs(g) - 1]);
            st_val<G>(&vals[slot], acc);
        }
        __syncwarp(); /* vals and s->prod: this batch before the next */
        return false;
    };
    warp_products<true>(x0, x1, xci, xval, yrp, s, body);
    __syncwarp();
}

/* Ascending sort of one (key, value) per lane across the warp: a bitonic
 * network on shuffles. Equal keys (padding) may swap; real keys are
 * distinct. */
__device__ __forceinline__ void warp_sort32(ks_int &k, double &v)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int size = 2; size <= 32; size <<= 1)
#pragma unroll
        for (int j = size >> 1; j > 0; j >>= 1) {
            const ks_int ok = __shfl_xor_sync(KS_CU_FULL_MASK, k, j);
            const double ov = __shfl_xor_sync(KS_CU_FULL_MASK, v, j);
            /* the lower lane of a pair keeps the min in an ascending run */
            const bool up = (lane & size) == 0, low = (lane & j) == 0;
            if (low == up ? ok < k : ok > k) {
                k = ok;
                v = ov;
            }
        }
}

/* Ascending bitonic sort of keys[0 .. P) (P a power of two >= 64; values
 * following) by one warp in shared memory: each step, every pair
 * (t, t | j) by one lane. */
__device__ __forceinline__ void warp_sort_smem(ks_int *keys, double *vals, int P)
{
    const int lane = threadIdx.x & 31;
    for (int size = 2; size <= P; size <<= 1)
        for (int j = size >> 1; j > 0; j >>= 1) {
            for (int p = lane; p < P / 2; p += 32) {
                const int t = ((p & ~(j - 1)) << 1) | (p & (j - 1)), u = t | j;
                const ks_int a = keys[t], b = keys[u];
                if ((a > b) == ((t & size) == 0)) {
                    keys[t] = b;
                    keys[u] = a;
                    const double x = vals[t];
                    vals[t] = vals[u];
                    vals[u] = x;
                }
            }
            __syncwarp();
        }
}

/* The table's entries (a shared table of 2^lg slots) sorted by column
 * into the row's len places at cci/cval: compacted in place to the front
 * (a chunk's slots are all read before any is written, and an entry only
 * moves down), then sorted in registers (<= 32 entries) or in the table
 * (padded with INT_MAX to a power of two, which fits: the table holds at
 * least twice the entries). */
__device__ __forceinline__ void write_sorted(ks_int *keys, double *vals, int lg, ks_int len, ks_int *cci,
                             double *cval)
{
    const int lane = threadIdx.x & 31, size = 1 << lg;
    int m = 0;
    for (int s0 = 0; s0 < size; s0 += 32) {
        const ks_int k = keys[s0 + lane];
        const double v = k >= 0 ? vals[s0 + lane] : 0.0;
        const unsigned occ = __ballot_sync(KS_CU_FULL_MASK, k >= 0);
        __syncwarp();
        if (k >= 0) {
            const int p = m + __popc(occ & lanes_below());
            keys[p] = k;
            vals[p] = v;
        }
        m += __popc(occ);
        __syncwarp();
    }
    /* m == len (the count pass counted the same columns); never write
     * past the row */
    const int w = m < len ? m : (int)len;
    if (m <= 32) {
        ks_int k = lane < m ? keys[lane] : INT_MAX;
        double v = lane < m ? vals[lane] : 0.0;
        warp_sort32(k, v);
        if (lane < w) {
            cci[lane] = k;
            cval[lane] = v;
        }
    } else {
        int P = 64;
        while (P < m)
            P <<= 1;
        for (int e = m + lane; e < P; e += 32)
            keys[e] = INT_MAX;
        __syncwarp();
        warp_sort_smem(keys, vals, P);
        for (int e = lane; e < w; e += 32) {
            cci[e] = keys[e];
            cval[e] = vals[e];
        }
    }
    __syncwarp(); /* the table is reused by the next row */
}

/* Row i of X*Y by one thread (at most kThreadMax products): its distinct
 * columns in cols (registers, see list_find), their sums (new columns
 * start at 0.0) at my[u * kThreadRows] in shared memory by the list's
 * position (a variable index: registers would need a select per element
 * and product, and 64 more registers a thread, a third of the
 * occupancy). Returns the number of columns. */
__device__ __forceinline__ int thread_row(ks_int i, const ks_int *__restrict__ xrp,
                                          const ks_int *__restrict__ xci,
                                          const double *__restrict__ xval,
                                          const ks_int *__restrict__ yrp,
                                          const ks_int *__restrict__ yci,
                                          const double *__restrict__ yval,
                                          ks_int (&cols)[kThreadMax], double *my)
{
    int cnt = 0; /* <= ub <= kThreadMax */
    list_clear(cols);
    for (ks_int k = xrp[i]; k < xrp[i + 1]; k++) {
        const ks_int b = xci[k];
        const double xv = xval[k];
        for (ks_int q = yrp[b]; q < yrp[b + 1]; q++) {
            const ks_int j = yci[q];
            const double p = __dmul_rn(xv, yval[q]);
            const int at = list_find(cols, cnt, j);
            if (at >= 0) {
                my[at * kThreadRows] = __dadd_rn(my[at * kThreadRows], p);
            } else if (cnt < kThreadMax) { /* always: cnt <= products <= kThreadMax */
                /* as the cpu: the sum starts at 0.0 (0.0 + -0.0 is 0.0) */
                my[cnt * kThreadRows] = __dadd_rn(0.0, p);
                list_put(cols, cnt++, j);
            }
        }
    }
    return cnt;
}

/* thread_row's entries written sorted: the entry of rank r goes to place
 * c0 + r; never past the row's len places. */
__device__ __forceinline__ void thread_row_store(const ks_int (&cols)[kThreadMax], int cnt,
                                                 const double *my, ks_int c0, ks_int len,
                                                 ks_int *cci, double *cval)
{
#pragma unroll
    for (int u = 0; u < kThreadMax; u++) {
        if (u >= cnt)
            break;
        const int r = list_rank(cols, cnt, cols[u]);
        if (r < len) {
            cci[c0 + r] = cols[u];
            cval[c0 + r] = my[u * kThreadRows];
        }
    }
}

/* Rows of at most kThreadMax products: one thread (thread_row), each entry
 * written at its rank among the row's columns (the sorted order).
 * kThreadRows threads a block: 32 KB of sums, a thread's in a column (no
 * bank conflicts). */
__global__ void __launch_bounds__(kThreadRows)
    values_thread(const ks_int *__restrict__ rows, ks_int count, const ks_int *__restrict__ xrp,
                  const ks_int *__restrict__ xci, const double *__restrict__ xval,
                  const ks_int *__restrict__ yrp, const ks_int *__restrict__ yci,
                  const double *__restrict__ yval, const ks_int *__restrict__ crp, ks_int *cci,
                  double *cval)
{
    __shared__ double sums[kThreadMax][kThreadRows];
    double *my = &sums[0][threadIdx.x]; /* element u at my[u * kThreadRows] */
    KS_CU_FOR(t, count)
    {
        const ks_int i = rows[t];
        ks_int cols[kThreadMax];
        const int cnt = thread_row(i, xrp, xci, xval, yrp, yci, yval, cols, my);
        /* cnt == len: the count pass counted the same columns */
        thread_row_store(cols, cnt, my, crp[i], crp[i + 1] - crp[i], cci, cval);
    }
}

/* The one-pass product, for a product whose rows all have at most
 * kThreadMax products, into arrays sized by the product count (an upper
 * bound of nnz(C)): the count pass, the bins and the scan of the two-pass
 * product are skipped. Block b (in launch order, by ticket, so that every
 * block it waits for runs) takes rows b * kThreadRows ..: it builds its
 * rows as values_thread does, scans their sizes, and finds its offset by
 * a decoupled look-back over the blocks before it (state[b]: the flag in
 * the top two bits, the block's total (kAggregate) or inclusive prefix
 * (kPrefix) below). crp[i] = the offsets; crp[n] = nnz(C). */
const unsigned long long kAggregate = 1ull << 62, kPrefix = 2ull << 62,
                         kValueMask = (1ull << 62) - 1;

__device__ __forceinline__ unsigned long long state_read(const unsigned long long *s)
{
    return *(const volatile unsigned long long *)s;
}

__global__ void __launch_bounds__(kThreadRows)
    values_onepass(ks_int n, const ks_int *__restrict__ xrp, const ks_int *__restrict__ xci,
                   const double *__restrict__ xval, const ks_int *__restrict__ yrp,
                   const ks_int *__restrict__ yci, const double *__restrict__ yval,
                   unsigned int *ticket, unsigned long long *state, ks_int *crp, ks_int *cci,
                   double *cval)
{
    __shared__ double sums[kThreadMax][kThreadRows];
    __shared__ int warp_tot[kThreadRows / 32];
    __shared__ unsigned int sb;
    __shared__ long long sprefix;
    double *my = &sums[0][threadIdx.x];
    if (threadIdx.x == 0)
        sb = atomicAdd(ticket, 1u);
    __syncthreads();
    const unsigned b = sb;
    const ks_int i = (ks_int)((long long)b * kThreadRows + threadIdx.x);
    ks_int cols[kThreadMax];
    const int cnt = i < n ? thread_row(i, xrp, xci, xval, yrp, yci, yval, cols, my) : 0;
    /* the block's exclusive scan of cnt */
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    int inc = cnt;
    for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(KS_CU_FULL_MASK, inc, o);
        if (lane >= o)
            inc += v;
    }
    if (lane == 31)
        warp_tot[wid] = inc;
    __syncthreads();
    int before = 0, total = 0;
#pragma unroll
    for (int w = 0; w < kThreadRows / 32; w++) {
        before += w < wid ? warp_tot[w] : 0;
        total += warp_tot[w];
    }
    const long long excl = before + inc - cnt;
    if (threadIdx.x == 0) {
        long long prefix = 0;
        if (b == 0) {
            atomicExch(&state[0], kPrefix | (unsigned long long)total);
        } else {
            atomicExch(&state[b], kAggregate | (unsigned long long)total);
            for (long long j = (long long)b - 1; j >= 0;) {
                const unsigned long long s = state_read(&state[j]);
                if (!(s & ~kValueMask))
                    continue; /* block j has not scanned yet */
                prefix += (long long)(s & kValueMask);
                if (s & kPrefix)
                    break;
                j--;
            }
            __threadfence();
            atomicExch(&state[b], kPrefix | (unsigned long long)(prefix + total));
        }
        sprefix = prefix;
    }
    __syncthreads();
    if (i < n) {
        const ks_int c0 = (ks_int)(sprefix + excl);
        crp[i] = c0;
        if (i == n - 1)
            crp[n] = c0 + cnt;
        thread_row_store(cols, cnt, my, c0, cnt, cci, cval);
    }
}

/* Rows of up to 2^(LG-1) entries: one warp each, WARPS per block, the
 * table in shared memory sized to the row (2^warp_lg(len) <= 2^LG). */
template <int LG, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
    values_warp(const ks_int *__restrict__ rows, ks_int count, const ks_int *__restrict__ xrp,
                const ks_int *__restrict__ xci, const double *__restrict__ xval,
                const ks_int *__restrict__ yrp, const ks_int *__restrict__ yci,
                const double *__restrict__ yval, const ks_int *__restrict__ crp, ks_int *cci,
                double *cval)
{
    __shared__ double vals[WARPS][1 << LG];
    __shared__ ks_int keys[WARPS][1 << LG];
    __shared__ wp_smem sm[WARPS];
    const int w = threadIdx.x >> 5;
    for (long long t = (long long)blockIdx.x * WARPS + w; t < count;
         t += (long long)gridDim.x * WARPS) {
        const ks_int i = rows[t], c0 = crp[i], len = crp[i + 1] - c0;
        int lg = warp_lg(len);
        lg = lg < LG ? lg : LG; /* len <= 2^(LG-1) by the bin */
        sum_row<false>(xrp[i], xrp[i + 1], keys[w], vals[w], lg, &sm[w], xci, xval, yrp, yci,
                       yval);
        write_sorted(keys[w], vals[w], lg, len, cci + c0, cval + c0);
    }
}

/* Longer rows: one warp each, warp g of nwarps owning the global table
 * gkeys/gvals + g * 2^region_lg; the entries are written unsorted (the
 * segmented sort follows). */
__global__ void __launch_bounds__(kWarps * 32)
    values_long(const ks_int *__restrict__ rows, ks_int count, ks_int *gkeys, double *gvals,
                int region_lg, long long nwarps, const ks_int *__restrict__ xrp,
                const ks_int *__restrict__ xci, const double *__restrict__ xval,
                const ks_int *__restrict__ yrp, const ks_int *__restrict__ yci,
                const double *__restrict__ yval, const ks_int *__restrict__ crp, ks_int *cci,
                double *cval)
{
    __shared__ wp_smem sm[kWarps];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const long long g = (long long)blockIdx.x * kWarps + w;
    if (g >= nwarps)
        return; /* no table (nothing below syncs the block) */
    ks_int *keys = gkeys + ((size_t)g << region_lg);
    double *vals = gvals + ((size_t)g << region_lg);
    for (long long t = g; t < count; t += nwarps) {
        const ks_int i = rows[t], c0 = crp[i], len = crp[i + 1] - c0;
        const int lg = warp_lg(len); /* <= region_lg: len <= the bin's largest */
        sum_row<true>(xrp[i], xrp[i + 1], keys, vals, lg, &sm[w], xci, xval, yrp, yci, yval);
        ks_int m = 0;
        for (int s0 = 0; s0 < (1 << lg); s0 += 32) {
            const ks_int k = ld_key<true>(&keys[s0 + lane]);
            const unsigned occ = __ballot_sync(KS_CU_FULL_MASK, k >= 0);
            const ks_int p = m + __popc(occ & lanes_below());
            if (k >= 0 && p < len) {
                cci[c0 + p] = k;
                cval[c0 + p] = ld_val<true>(&vals[s0 + lane]);
            }
            m += __popc(occ);
        }
        __syncwarp(); /* the table is cleared for the next row */
    }
}

/* ======================================================= numeric pass */
/* Rows of at most kThreadMax products: one thread, in order. */
__global__ void num_thread(const ks_int *__restrict__ rows, ks_int count,
                           const ks_int *__restrict__ xrp, const ks_int *__restrict__ xci,
                           const double *__restrict__ xval, const ks_int *__restrict__ yrp,
                           const ks_int *__restrict__ yci, const double *__restrict__ yval,
                           const ks_int *__restrict__ crp, const ks_int *__restrict__ cci,
                           double *cval, prod_stats *st)
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
                    atomicMax(&st->bad, ~bad_key(i, j));
                    ok = false;
                    break;
                }
                cval[s] = __dadd_rn(cval[s], __dmul_rn(xv, yval[q]));
            }
        }
    }
}

/* Position of column key in a table built from C's row, or -1. */
__device__ __forceinline__ ks_int hash_find(const ks_int *keys, const ks_int *pos, int lg,
                                            ks_int key)
{
    const unsigned mask = (1u << lg) - 1u;
    for (unsigned h = hash_of(key, lg);; h = (h + 1u) & mask) {
        const ks_int k = keys[h];
        if (k == key)
            return pos[h];
        if (k < 0)
            return -1;
    }
}

/* One batch of 32 products of a numeric pass. The first product outside
 * C's pattern (slot < 0) is recorded and true returned (the row stops;
 * C's values are then unspecified, as on the cpu); otherwise each group of
 * lanes with the same slot adds its products into sums[slot] in lane
 * order (the cpu's order), by its lowest lane. Every lane calls it. */
__device__ __forceinline__ bool num_batch(bool act, ks_int i, ks_int j, double prod, ks_int slot,
                                          double *sums, wp_smem *s, prod_stats *st)
{
    const int lane = threadIdx.x & 31;
    const unsigned badm = __ballot_sync(KS_CU_FULL_MASK, act && slot < 0);
    if (badm) { /* the first in order is the lowest lane */
        const ks_int bj = __shfl_sync(KS_CU_FULL_MASK, j, __ffs(badm) - 1);
        if (lane == 0)
            atomicMax(&st->bad, ~bad_key(i, bj));
        return true;
    }
    const unsigned grp = __match_any_sync(KS_CU_FULL_MASK, act ? slot : -1 - lane);
    s->prod[lane] = prod;
    __syncwarp();
    if (act && (grp & lanes_below()) == 0) {
        double a = sums[slot];
        for (unsigned g = grp; g; g &= g - 1u)
            a = __dadd_rn(a, s->prod[__ffs(g) - 1]);
        sums[slot] = a;
    }
    __syncwarp(); /* sums and s->prod: this batch before the next */
    return false;
}

/* Rows of up to 2^(LG-1) entries in C: one warp each. C's row goes into a
 * shared table (column -> position; a repeated column, which no valid
 * pattern has, keeps its last position as the cpu's dense map does), the
 * sums into shared memory by position, groups as in sum_row, and the row's
 * values are written once. */
template <int LG, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
    num_hash(const ks_int *__restrict__ rows, ks_int count, const ks_int *__restrict__ xrp,
             const ks_int *__restrict__ xci, const double *__restrict__ xval,
             const ks_int *__restrict__ yrp, const ks_int *__restrict__ yci,
             const double *__restrict__ yval, const ks_int *__restrict__ crp,
             const ks_int *__restrict__ cci, double *cval, prod_stats *st)
{
    __shared__ double sums[WARPS][1 << (LG - 1)];
    __shared__ ks_int keys[WARPS][1 << LG], pos[WARPS][1 << LG];
    __shared__ wp_smem sm[WARPS];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    ks_int *kt = keys[w], *pt = pos[w];
    double *acc = sums[w];
    wp_smem *s = &sm[w];
    for (long long t = (long long)blockIdx.x * WARPS + w; t < count;
         t += (long long)gridDim.x * WARPS) {
        const ks_int i = rows[t], c0 = crp[i], len = crp[i + 1] - c0;
        int lg = warp_lg(len);
        lg = lg < LG ? lg : LG; /* len <= 2^(LG-1) by the bin */
        for (int e = lane; e < (1 << lg); e += 32) {
            kt[e] = -1;
            pt[e] = -1;
        }
        for (int e = lane; e < len; e += 32)
            acc[e] = 0.0;
        __syncwarp();
        for (int e = lane; e < len; e += 32) {
            int made = 0;
            atomicMax(&pt[hash_slot(kt, lg, cci[c0 + e], &made)], e);
        }
        __syncwarp();
        bool bad = false;
        auto body = [&](long long, bool act, double xv, ks_int q) -> bool {
            ks_int j = -1, p = -1;
            double prod = 0.0;
            if (act) {
                j = yci[q];
                prod = __dmul_rn(xv, yval[q]);
                p = hash_find(kt, pt, lg, j);
            }
            bad = num_batch(act, i, j, prod, p, acc, s, st);
            return bad;
        };
        warp_products<true>(xrp[i], xrp[i + 1], xci, xval, yrp, s, body);
        __syncwarp();
        if (!bad) /* C's values are unspecified after a bad entry, as on the cpu */
            for (int e = lane; e < len; e += 32)
                cval[c0 + e] = acc[e];
        __syncwarp(); /* the tables are reused by the next row */
    }
}

/* Rows with more entries: one warp, 32 products at a time, in order, each
 * found by binary search in C's row and added into C's values. */
__global__ void __launch_bounds__(kWarps * 32)
    num_warp(const ks_int *__restrict__ rows, ks_int count, const ks_int *__restrict__ xrp,
             const ks_int *__restrict__ xci, const double *__restrict__ xval,
             const ks_int *__restrict__ yrp, const ks_int *__restrict__ yci,
             const double *__restrict__ yval, const ks_int *__restrict__ crp,
             const ks_int *__restrict__ cci, double *cval, prod_stats *st)
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
            return num_batch(act, i, j, prod, slot, cval, s, st);
        };
        warp_products<true>(xrp[i], xrp[i + 1], xci, xval, yrp, s, body);
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
        warp_products<true>(xrp[i], xrp[i + 1], xci, xval, yrp, s, body);
        __syncwarp();
    }
}

/* ======================================================= host helpers */
/* An input's values and structure (the cpu checks its inputs too: a bad
 * index would read out of bounds), with a sync. */
ks_error check_input(const ks_sparse *M, const char *who, const char *name)
{
    char what[96];
    snprintf(what, sizeof what, "%s: %s", who, name);
    if (M->nnz > 0 && !M->val)
        return ks_seterr(KS_ERR_ARG, "%s: no values", what);
    return ks_cu_check(M, what, 0);
}

/* The inputs of an operation, checked in this order (the first bad one is
 * reported, with ks_cu_check's message). */
typedef struct checks {
    const char *who;
    int n;
    const ks_sparse *m[4];
    const char *name[4];
} checks;

/* Launches the checks: bit k of *flag (device memory) for input k. No
 * sync; a missing array or a bad size fails at once (once the inputs
 * before it are checked in full, so that the report keeps their order). */
ks_error checks_launch(const checks *c, int *flag)
{
    for (int k = 0; k < c->n; k++) {
        char what[96];
        snprintf(what, sizeof what, "%s: %s", c->who, c->name[k]);
        const ks_sparse *M = c->m[k];
        ks_error e = M->nnz > 0 && !M->val ? KS_ERR_ARG : ks_cu_check_async(M, what, flag, 1 << k);
        if (e != KS_OK) {
            for (int j = 0; j <= k; j++)
                KS_TRY(check_input(c->m[j], c->who, c->name[j]));
            return e;
        }
    }
    return KS_OK;
}

/* After the download of a nonzero flag: the first flagged input's error. */
ks_error checks_report(const checks *c, int flag)
{
    for (int k = 0; k < c->n; k++)
        if (flag & (1 << k))
            KS_TRY(check_input(c->m[k], c->who, c->name[k]));
    return ks_seterr(KS_ERR_DEVICE, "internal error: %s: the input check flagged an input the "
                     "full check passes", c->who);
}

/* The checks with one sync (where no download of the operation can carry
 * the flag). */
ks_error checks_now(const checks *c, ks_backend *be)
{
    int *d = NULL, h = 0;
    KS_TRY(ks_be_alloc(be, sizeof h, (void **)&d, "input check flag"));
    ks_error e = ks_cu_memset(be, d, 0, sizeof h, "input check flag");
    if (e == KS_OK)
        e = checks_launch(c, d);
    if (e == KS_OK)
        e = be->ops->download(be, &h, d, sizeof h);
    be->ops->free(be, d);
    KS_TRY(e);
    return h ? checks_report(c, h) : KS_OK;
}

/* A product's row pass: row bounds, bins (count bins, then value bins)
 * and the counters, on the device (temporaries of the caller's tmp), and
 * the counters' host copy once downloaded. */
typedef struct plan {
    ks_int *ub;
    unsigned char *bin;
    prod_stats *d;
    prod_stats h;
} plan;

unsigned pass_blocks(long long n)
{
    const unsigned b = ks_cu_blocks(n);
    return b < (unsigned)kPassBlocks ? b : (unsigned)kPassBlocks;
}

/* Launches the row pass of X*Y (d zeroed by the caller). No sync. */
ks_error plan_rows(ks_cu_tmp *tmp, const ks_sparse *X, const ks_sparse *Y, prod_stats *d,
                   plan *p)
{
    memset(p, 0, sizeof *p);
    p->d = d;
    const ks_int n = X->nrows;
    KS_TRY(ks_cu_tmp_alloc(tmp, sizeof(ks_int) * ((size_t)n + 1), (void **)&p->ub,
                           "product row bounds"));
    KS_TRY(ks_cu_tmp_alloc(tmp, (size_t)n + 1, (void **)&p->bin, "product row bins"));
    if (n == 0)
        return KS_OK;
    prep_rows<<<pass_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(X->be)>>>(
        n, X->rowptr, X->colind, X->nnz, Y->rowptr, Y->nrows, Y->ncols, p->ub, p->bin, d);
    return ks_cu_launched("prep_rows");
}

/* The row pass of X*Y with its own counters, downloaded; chk (may be
 * NULL): the inputs' checks, whose flag comes with the counters (a bad
 * input is reported here). */
ks_error plan_product(ks_cu_tmp *tmp, const ks_sparse *X, const ks_sparse *Y, const checks *chk,
                      plan *p)
{
    prod_stats *d = NULL;
    KS_TRY(ks_cu_tmp_alloc(tmp, sizeof *d, (void **)&d, "product counters"));
    KS_TRY(ks_cu_memset(tmp->be, d, 0, sizeof *d, "product counters"));
    if (chk)
        KS_TRY(checks_launch(chk, &d->bad_input));
    KS_TRY(plan_rows(tmp, X, Y, d, p));
    KS_TRY(tmp->be->ops->download(tmp->be, &p->h, d, sizeof p->h));
    return p->h.bad_input ? checks_report(chk, p->h.bad_input) : KS_OK;
}

/* Offsets of the bins in a row list from their host counts. */
void bin_starts(const ks_int *count, int nbins, ks_int *start)
{
    start[0] = 0;
    for (int b = 0; b < nbins; b++)
        start[b + 1] = start[b] + count[b];
}

/* A pool of global tables for rows of up to `most` entries: region_lg,
 * and *units of them (at most `rows`, at most bytes_per_slot << region_lg
 * per unit, about kGlobalTables in all). */
ks_error plan_pool(ks_int most, ks_int rows, size_t bytes_per_slot, int *region_lg,
                   long long *units)
{
    if (most > (1 << 29))
        return ks_seterr(KS_ERR_SIZE, "sparse product (cuda): a row may have %" PRId32
                         " entries; its hash table exceeds the 32-bit index range", most);
    *region_lg = warp_lg(most);
    const size_t region = bytes_per_slot << *region_lg;
    size_t pool = kGlobalTables / region;
    pool = pool < 1 ? 1 : pool > 4096 ? 4096 : pool;
    *units = (long long)(pool < (size_t)rows ? pool : (size_t)rows);
    return KS_OK;
}

/* The count pass over the bins of p (host counts p->h.sym): crp[i] = the
 * size of row i. */
ks_error count_pass(ks_cu_tmp *tmp, const ks_sparse *X, const ks_sparse *Y, const plan *p,
                    const ks_int *rows, ks_int *crp, ks_int **gtab)
{
    ks_backend *be = X->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int *xrp = X->rowptr, *xci = X->colind, *yrp = Y->rowptr, *yci = Y->colind;
    const ks_int ycols = Y->ncols;
    ks_int start[S_BINS + 1];
    bin_starts(p->h.sym, S_BINS, start);
    ks_int n = p->h.sym[S_THREAD];
    if (n > 0) {
        count_thread<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(rows + start[S_THREAD], n, xrp, xci,
                                                              yrp, yci, crp);
        KS_TRY(ks_cu_launched("count_thread"));
    }
    n = p->h.sym[S_WARP];
    if (n > 0) {
        count_warp<false><<<ks_cu_grid(n, kWarps), kWarps * 32, 0, st>>>(
            rows + start[S_WARP], n, p->ub, ycols, xrp, xci, yrp, yci, crp);
        KS_TRY(ks_cu_launched("count_warp"));
    }
    n = p->h.sym[S_BLOCK];
    if (n > 0) {
        /* a warp first, a block for the rows that need more (no download:
         * count_block skips the rows the warps counted) */
        count_warp<true><<<ks_cu_grid(n, kWarps), kWarps * 32, 0, st>>>(
            rows + start[S_BLOCK], n, p->ub, ycols, xrp, xci, yrp, yci, crp);
        KS_TRY(ks_cu_launched("count_warp (block bin)"));
        count_block<<<ks_cu_grid(n, 1) < 8192u ? ks_cu_grid(n, 1) : 8192u, kThreads, 0, st>>>(
            rows + start[S_BLOCK], n, p->ub, ycols, xrp, xci, yrp, yci, crp);
        KS_TRY(ks_cu_launched("count_block"));
    }
    n = p->h.sym[S_GLOBAL];
    if (n > 0) {
        int lg = 0;
        long long units = 0;
        KS_TRY(plan_pool(p->h.max_bound, n, sizeof(ks_int), &lg, &units));
        KS_TRY(ks_cu_tmp_alloc(tmp, (sizeof(ks_int) << lg) * (size_t)units, (void **)gtab,
                               "product hash tables"));
        count_global<<<(unsigned)units, kThreads, 0, st>>>(rows + start[S_GLOBAL], n, p->ub, ycols,
                                                          *gtab, lg, xrp, xci, yrp, yci, crp);
        KS_TRY(ks_cu_launched("count_global"));
    }
    return KS_OK;
}

/* The value pass over the value bins of p (host counts p->h.val): C's
 * columns and values, sorted. */
ks_error value_pass(ks_cu_tmp *tmp, const ks_sparse *X, const ks_sparse *Y, const plan *p,
                    const ks_int *rows, ks_sparse *C)
{
    ks_backend *be = X->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int *xrp = X->rowptr, *xci = X->colind, *yrp = Y->rowptr, *yci = Y->colind;
    const double *xv = X->val, *yv = Y->val;
    const ks_int *crp = C->rowptr;
    ks_int *cci = C->colind;
    double *cv = C->val;
    ks_int start[V_BINS + 1];
    bin_starts(p->h.val, V_BINS, start);
    ks_int n = p->h.val[V_THREAD];
    if (n > 0) {
        values_thread<<<ks_cu_grid(n, kThreadRows), kThreadRows, 0, st>>>(
            rows + start[V_THREAD], n, xrp, xci, xv, yrp, yci, yv, crp, cci, cv);
        KS_TRY(ks_cu_launched("values_thread"));
    }
    n = p->h.val[V_W64];
    if (n > 0) {
        values_warp<6, 4><<<ks_cu_grid(n, 4), 4 * 32, 0, st>>>(rows + start[V_W64], n, xrp, xci,
                                                                xv, yrp, yci, yv, crp, cci, cv);
        KS_TRY(ks_cu_launched("values_warp<64>"));
    }
    n = p->h.val[V_W256];
    if (n > 0) {
        values_warp<8, 4><<<ks_cu_grid(n, 4), 4 * 32, 0, st>>>(rows + start[V_W256], n, xrp, xci,
                                                                xv, yrp, yci, yv, crp, cci, cv);
        KS_TRY(ks_cu_launched("values_warp<256>"));
    }
    n = p->h.val[V_W1024];
    if (n > 0) {
        values_warp<10, 2><<<ks_cu_grid(n, 2), 2 * 32, 0, st>>>(
            rows + start[V_W1024], n, xrp, xci, xv, yrp, yci, yv, crp, cci, cv);
        KS_TRY(ks_cu_launched("values_warp<1024>"));
    }
    n = p->h.val[V_LONG];
    if (n > 0) {
        int lg = 0;
        long long units = 0;
        double *pool = NULL;
        KS_TRY(plan_pool(p->h.max_long, n, sizeof(double) + sizeof(ks_int), &lg, &units));
        KS_TRY(ks_cu_tmp_alloc(tmp, ((sizeof(double) + sizeof(ks_int)) << lg) * (size_t)units,
                               (void **)&pool, "product hash tables"));
        ks_int *keys = (ks_int *)(pool + ((size_t)units << lg));
        values_long<<<ks_cu_grid(units, kWarps), kWarps * 32, 0, st>>>(
            rows + start[V_LONG], n, keys, pool, lg, units, xrp, xci, xv, yrp, yci, yv, crp, cci,
            cv);
        KS_TRY(ks_cu_launched("values_long"));
        KS_TRY(ks_cu_seg_sort_rows(be, rows + start[V_LONG], n, crp, cci, cv));
    }
    return KS_OK;
}

/* C = X*Y in one pass (values_onepass): every row of p has at most
 * kThreadMax products. C's arrays hold p's product count (C is a
 * temporary: see product's transient). */
ks_error product_onepass(ks_cu_tmp *tmp, const ks_sparse *X, const ks_sparse *Y, const plan *p,
                         ks_sparse *C)
{
    ks_backend *be = X->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int n = X->nrows;
    const size_t cap = (size_t)p->h.flops;
    const unsigned blocks = (unsigned)(((long long)n + kThreadRows - 1) / kThreadRows);
    unsigned int *ticket = NULL;
    KS_TRY(ks_cu_tmp_alloc(tmp, sizeof(unsigned long long) * ((size_t)blocks + 1),
                           (void **)&ticket, "one-pass product scan state"));
    unsigned long long *state = (unsigned long long *)ticket + 1;
    KS_TRY(ks_cu_memset(be, ticket, 0, sizeof(unsigned long long) * ((size_t)blocks + 1),
                        "one-pass product scan state"));
    KS_TRY(ks_be_alloc(be, sizeof(ks_int) * cap + 1, (void **)&C->colind, "sparse column indices"));
    KS_TRY(ks_be_alloc(be, sizeof(double) * cap + 1, (void **)&C->val, "sparse values"));
    values_onepass<<<blocks, kThreadRows, 0, st>>>(n, X->rowptr, X->colind, X->val, Y->rowptr,
                                                   Y->colind, Y->val, ticket, state, C->rowptr,
                                                   C->colind, C->val);
    KS_TRY(ks_cu_launched("values_onepass"));
    ks_int nnz = 0;
    KS_TRY(be->ops->download(be, &nnz, C->rowptr + n, sizeof nnz));
    C->nnz = nnz;
    return KS_OK;
}

/* C = X*Y by our kernels. given: X*Y's row pass, done and downloaded (R A
 * P's), or NULL; chk: the inputs' checks to make (with the row pass), or
 * NULL (trusted inputs). transient: C is a temporary the caller frees
 * soon (R A P's first product), so when every row has at most kThreadMax
 * products C may be made in one pass into arrays sized by the product
 * count (at most kThreadMax n entries) instead of counted first. */
ks_error product(const ks_sparse *X, const ks_sparse *Y, ks_sparse *C, const plan *given,
                 const checks *chk, int transient)
{
    ks_backend *be = X->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int n = X->nrows;
    memset(C, 0, sizeof *C);
    C->be = be;
    C->nrows = n;
    C->ncols = Y->ncols;
    ks_cu_tmp tmp;
    ks_cu_tmp_init(&tmp, be);
    plan own;
    const plan *p = given;
    ks_error e = KS_OK;
    if (!p) {
        e = plan_product(&tmp, X, Y, chk, &own);
        p = &own;
    }
    ks_int *rows = NULL, *gtab = NULL;
    if (e == KS_OK)
        e = ks_be_alloc(be, sizeof(ks_int) * ((size_t)n + 1), (void **)&C->rowptr,
                        "sparse row pointers");
    if (e == KS_OK && transient && n > 0 && p->h.sym[S_WARP] == 0 && p->h.sym[S_BLOCK] == 0 &&
        p->h.sym[S_GLOBAL] == 0 && p->h.flops <= (unsigned long long)INT32_MAX) {
        e = product_onepass(&tmp, X, Y, p, C);
        ks_cu_tmp_free(&tmp);
        if (e != KS_OK)
            ks_sparse_free(C);
        return e;
    }
    if (e == KS_OK)
        e = ks_cu_tmp_alloc(&tmp, sizeof(ks_int) * ((size_t)n + 1), (void **)&rows,
                            "product row bins");
    /* count bins -> rows; the rows without products get size 0 */
    if (e == KS_OK && n > 0) {
        fill_bins<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, p->bin, S_BINS, p->d->sym,
                                                           p->d->cursor[0], rows, C->rowptr);
        e = ks_cu_launched("fill_bins");
    }
    if (e == KS_OK)
        e = count_pass(&tmp, X, Y, p, rows, C->rowptr, &gtab);
    if (e == KS_OK && n > 0) {
        classify_rows<<<pass_blocks(n), KS_CU_BLOCK, 0, st>>>(n, p->ub, C->rowptr, p->bin, p->d);
        e = ks_cu_launched("classify_rows");
    }
    if (e == KS_OK) /* the 64-bit total is checked below: no sync here */
        e = ks_cu_scan(be, C->rowptr, n, C->rowptr, NULL, "sparse product (cuda): nnz(C)");
    prod_stats h;
    if (e == KS_OK)
        e = be->ops->download(be, &h, p->d, sizeof h);
    if (e == KS_OK && h.nnz > INT32_MAX)
        e = ks_seterr(KS_ERR_SIZE, "sparse product (cuda): nnz(C): %llu entries exceed the "
                      "32-bit index range", h.nnz);
    if (gtab) /* the count tables' memory for C */
        ks_cu_tmp_release(&tmp, gtab);
    if (e == KS_OK) {
        C->nnz = (ks_int)h.nnz;
        e = ks_be_alloc(be, sizeof(ks_int) * (size_t)C->nnz + 1, (void **)&C->colind,
                        "sparse column indices");
    }
    if (e == KS_OK)
        e = ks_be_alloc(be, sizeof(double) * (size_t)C->nnz + 1, (void **)&C->val,
                        "sparse values");
    if (e == KS_OK && C->nnz > 0) {
        /* value bins -> rows (the count pass is done with the list) */
        fill_bins<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, p->bin, V_BINS, p->d->val,
                                                           p->d->cursor[1], rows, NULL);
        e = ks_cu_launched("fill_bins");
    }
    if (e == KS_OK && C->nnz > 0) {
        plan ph = *p;
        ph.h = h;
        e = value_pass(&tmp, X, Y, &ph, rows, C);
    }
    ks_cu_tmp_free(&tmp);
    if (e != KS_OK)
        ks_sparse_free(C);
    return e;
}

/* C's values from X*Y into its sorted pattern (C: X->nrows rows). *bad =
 * 0, or the complemented key (~bad_key) of the first product outside the
 * pattern in the lowest such row. chk: the inputs' checks to make (their
 * flag comes with the bin counts), or NULL. */
ks_error numeric(const ks_sparse *X, const ks_sparse *Y, ks_sparse *C, const checks *chk,
                 unsigned long long *bad)
{
    ks_backend *be = X->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int n = X->nrows;
    *bad = 0;
    if (n == 0)
        return chk ? checks_now(chk, be) : KS_OK;
    ks_cu_tmp tmp;
    ks_cu_tmp_init(&tmp, be);
    unsigned char *bin = NULL;
    ks_int *rows = NULL;
    prod_stats *d = NULL, h;
    ks_error e = ks_cu_tmp_alloc(&tmp, sizeof *d, (void **)&d, "numeric product counters");
    if (e == KS_OK)
        e = ks_cu_memset(be, d, 0, sizeof *d, "numeric product counters");
    if (e == KS_OK && chk)
        e = checks_launch(chk, &d->bad_input);
    if (e == KS_OK)
        e = ks_cu_tmp_alloc(&tmp, (size_t)n, (void **)&bin, "numeric product bins");
    if (e == KS_OK)
        e = ks_cu_tmp_alloc(&tmp, sizeof(ks_int) * (size_t)n, (void **)&rows,
                            "numeric product rows");
    if (e == KS_OK) {
        numeric_rows<<<pass_blocks(n), KS_CU_BLOCK, 0, st>>>(
            n, X->rowptr, X->colind, X->nnz, Y->rowptr, Y->nrows, C->rowptr, bin, d);
        e = ks_cu_launched("numeric_rows");
    }
    if (e == KS_OK) {
        fill_bins<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, bin, V_BINS, d->val, d->cursor[1],
                                                           rows, NULL);
        e = ks_cu_launched("fill_bins");
    }
    if (e == KS_OK) /* the bin sizes, for the grids; the inputs' checks */
        e = be->ops->download(be, &h, d, sizeof h);
    if (e == KS_OK && h.bad_input)
        e = checks_report(chk, h.bad_input);
    ks_int start[V_BINS + 1];
    if (e == KS_OK)
        bin_starts(h.val, V_BINS, start);
    const ks_int *xrp = X->rowptr, *xci = X->colind, *yrp = Y->rowptr, *yci = Y->colind;
    const double *xv = X->val, *yv = Y->val;
    const ks_int *crp = C->rowptr, *cci = C->colind;
    double *cv = C->val;
    ks_int cnt = e == KS_OK ? h.val[V_THREAD] : 0;
    if (cnt > 0) {
        num_thread<<<ks_cu_blocks(cnt), KS_CU_BLOCK, 0, st>>>(rows + start[V_THREAD], cnt, xrp, xci,
                                                              xv, yrp, yci, yv, crp, cci, cv, d);
        e = ks_cu_launched("num_thread");
    }
    cnt = e == KS_OK ? h.val[V_W64] : 0;
    if (cnt > 0) {
        num_hash<6, 4><<<ks_cu_grid(cnt, 4), 4 * 32, 0, st>>>(rows + start[V_W64], cnt, xrp, xci,
                                                               xv, yrp, yci, yv, crp, cci, cv, d);
        e = ks_cu_launched("num_hash<64>");
    }
    cnt = e == KS_OK ? h.val[V_W256] : 0;
    if (cnt > 0) {
        num_hash<8, 4><<<ks_cu_grid(cnt, 4), 4 * 32, 0, st>>>(rows + start[V_W256], cnt, xrp, xci,
                                                               xv, yrp, yci, yv, crp, cci, cv, d);
        e = ks_cu_launched("num_hash<256>");
    }
    cnt = e == KS_OK ? h.val[V_W1024] : 0;
    if (cnt > 0) {
        num_hash<10, 2><<<ks_cu_grid(cnt, 2), 2 * 32, 0, st>>>(
            rows + start[V_W1024], cnt, xrp, xci, xv, yrp, yci, yv, crp, cci, cv, d);
        e = ks_cu_launched("num_hash<1024>");
    }
    cnt = e == KS_OK ? h.val[V_LONG] : 0;
    if (cnt > 0) {
        num_warp<<<ks_cu_grid(cnt, kWarps), kWarps * 32, 0, st>>>(
            rows + start[V_LONG], cnt, xrp, xci, xv, yrp, yci, yv, crp, cci, cv, d);
        e = ks_cu_launched("num_warp");
    }
    if (e == KS_OK)
        e = be->ops->download(be, bad, &d->bad, sizeof *bad);
    ks_cu_tmp_free(&tmp);
    return e;
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

/* X*Y (inputs checked); p: its row pass, done and downloaded (ours only;
 * may be NULL). */
ks_error multiply(int cusparse, const ks_sparse *X, const ks_sparse *Y, ks_sparse *Z,
                  const plan *p, int transient)
{
    return cusparse ? ks_cu_spgemm_cusparse(X, Y, Z, NULL) : product(X, Y, Z, p, NULL, transient);
}

/* (row, column) of a complemented bad key. */
ks_int bad_row(unsigned long long bad)
{
    return (ks_int)(~bad >> 32);
}
ks_int bad_col(unsigned long long bad)
{
    return (ks_int)(~bad & 0xffffffffu);
}

} // namespace

/* ====================================================== the operations */
extern "C" ks_error ks_cu_spgemm_ours(const ks_sparse *A, const ks_sparse *B, ks_sparse *C)
{
    return product(A, B, C, NULL, NULL, 0);
}

extern "C" ks_error ks_cu_spgemm(const ks_sparse *A, const ks_sparse *B, ks_sparse *C)
{
    const checks c = {"sparse product (cuda)", 2, {A, B}, {"A", "B"}};
    int cus = 0;
    if (use_cusparse(&cus) == KS_OK && !cus) /* the checks ride on our first download */
        return product(A, B, C, NULL, &c, 0);
    KS_TRY(checks_now(&c, A->be));
    KS_TRY(use_cusparse(&cus));
    return multiply(cus, A, B, C, NULL, 0);
}

extern "C" ks_error ks_cu_spgemm_numeric(const ks_sparse *A, const ks_sparse *B, ks_sparse *C)
{
    static const char who[] = "sparse numeric product (cuda)";
    const checks c = {who, 3, {A, B, C}, {"A", "B", "C"}};
    unsigned long long bad;
    KS_TRY(numeric(A, B, C, &c, &bad));
    if (bad != 0)
        return ks_seterr(KS_ERR_ARG, "%s: A * B has entry (%" PRId32 ", %" PRId32 ") outside "
                         "the pattern of C (C's values are now unspecified)", who, bad_row(bad),
                         bad_col(bad));
    return KS_OK;
}

extern "C" ks_error ks_cu_rap(const ks_sparse *R, const ks_sparse *A, const ks_sparse *P,
                              ks_sparse *Ac)
{
    static const char who[] = "sparse Galerkin product (cuda)";
    const checks c = {who, 3, {R, A, P}, {"R", "A", "P"}};
    /* the inputs' checks and the row passes of both candidates (for their
     * flop counts), one download; the chosen one's row pass is the first
     * product's (ours) */
    ks_backend *be = A->be;
    ks_cu_tmp tmp;
    ks_cu_tmp_init(&tmp, be);
    prod_stats *d = NULL, h[2];
    plan pap, pra;
    memset(&pap, 0, sizeof pap);
    memset(&pra, 0, sizeof pra);
    int cus = 0;
    ks_error e = ks_cu_tmp_alloc(&tmp, sizeof h, (void **)&d, "Galerkin product counters");
    if (e == KS_OK)
        e = ks_cu_memset(be, d, 0, sizeof h, "Galerkin product counters");
    if (e == KS_OK)
        e = checks_launch(&c, &d[0].bad_input);
    if (e == KS_OK)
        e = plan_rows(&tmp, A, P, &d[0], &pap);
    if (e == KS_OK)
        e = plan_rows(&tmp, R, A, &d[1], &pra);
    if (e == KS_OK)
        e = be->ops->download(be, h, d, sizeof h);
    if (e == KS_OK && h[0].bad_input)
        e = checks_report(&c, h[0].bad_input);
    if (e == KS_OK)
        e = use_cusparse(&cus);
    if (e != KS_OK) {
        ks_cu_tmp_free(&tmp);
        return e;
    }
    pap.h = h[0];
    pra.h = h[1];
    const int ra_first = pra.h.flops < pap.h.flops;
    const plan *first = ra_first ? &pra : &pap;
    /* the other candidate's arrays make room for the products */
    const plan *other = ra_first ? &pap : &pra;
    ks_cu_tmp_release(&tmp, other->ub);
    ks_cu_tmp_release(&tmp, other->bin);
    ks_sparse T;
    e = ra_first ? multiply(cus, R, A, &T, first, 1) : multiply(cus, A, P, &T, first, 1);
    ks_cu_tmp_free(&tmp);
    if (e != KS_OK)
        return ks_adderr(e, "%s: %s", who, ra_first ? "R*A" : "A*P");
    e = ra_first ? multiply(cus, &T, P, Ac, NULL, 0) : multiply(cus, R, &T, Ac, NULL, 0);
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
    const checks c = {who, 4, {R, A, P, Ac}, {"R", "A", "P", "Ac"}};
    ks_backend *be = A->be;
    KS_TRY(checks_now(&c, be)); /* before the expansion indexes with R and A */
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
            U.nrows, R->rowptr, R->colind, A->rowptr, U.rowptr);
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
    unsigned long long bad = 0;
    if (e == KS_OK)
        e = numeric(&U, P, Ac, NULL, &bad);
    ks_cu_tmp_free(&tmp);
    if (e == KS_OK)
        *outside = bad != 0;
    return e;
}
