/* The classical strength rule of one row on the device (amg/cpu/strength.c's
 * classical_cut and classical_pick), for G lanes a row (G divides 32; G = 1
 * is one thread a row): what strength.cu (a matrix of one process) and
 * strength_blocks.cu (a distributed matrix's owned and ghost blocks) share.
 * A row is read in segments of column-ordered entries, in the order the
 * cpu adds them: one segment for a one-process row; for a distributed row
 * the ghosts below the rank's rows, the owned columns, the ghosts above.
 * The lanes load a chunk of G entries at a time, coalesced, instead of one
 * thread walking a whole row (a 45-80 entries a row Galerkin operator spent
 * 18 ms that way). What the cpu sums in order stays in order:
 *   row sum   each chunk's values are broadcast lane by lane (shuffles of
 *             width G) and every lane of the group adds them in column
 *             order: the cpu's sequential sum, bit for bit;
 *   diagonal  the chunk's diagonal entries (a ballot) are broadcast in
 *             lane order, i.e. column order, and added the same way;
 *   scale     a max (exact in any order): both signs' candidates are
 *             kept, max(-a_ij) for a positive diagonal and max(a_ij) for
 *             a negative one (-s * a is exact negation or identity), so
 *             one read gives the sums and the scale;
 *   picks     counted per lane and added (integers); the fill writes them
 *             in column order (ballot, popc of the lower lanes).
 * Every function holding a shuffle or ballot must be called by all 32
 * lanes, and its loops run the same number of times on all of them (the
 * warp's longest segment sets it; lanes past their row's end contribute
 * nothing), as the full-mask intrinsics require. For .cu files only. Not
 * installed. */
#ifndef KS_AMG_CUDA_STRENGTH_RULE_CUH
#define KS_AMG_CUDA_STRENGTH_RULE_CUH

#include "amg_cuda.h"

/* Up to 32 lanes: the largest of v over the warp. */
static __device__ __forceinline__ ks_int ks_cu_warp_max_int(ks_int v)
{
    for (int off = 16; off > 0; off >>= 1) {
        const ks_int o = __shfl_xor_sync(0xffffffffu, v, off);
        v = o > v ? o : v;
    }
    return v;
}

/* The sum of v over the lane's group of G. */
template <int G>
static __device__ __forceinline__ ks_int ks_cu_group_sum_int(ks_int v)
{
    for (int off = G / 2; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

/* What a lane gathers of its group's row: the row sum and the diagonal
 * (the same on every lane of the group) and its share of the two scales. */
typedef struct ks_cu_classical_acc {
    double rowsum, diag, spos, sneg;
} ks_cu_classical_acc;

/* Entries k0 .. k1 - 1 (columns ci, values val) of the lane's row into a:
 * the diagonal is the column `self` (-1: the segment has none); the row
 * sum only when need_sum (the max_row_sum test is on). */
template <int G>
static __device__ __forceinline__ void ks_cu_classical_gather(const ks_int *__restrict__ ci,
                                                              const double *__restrict__ val,
                                                              ks_int k0, ks_int k1, ks_int self,
                                                              bool need_sum,
                                                              ks_cu_classical_acc *a)
{
    const int wl = (int)(threadIdx.x & 31), lane = wl & (G - 1), first = wl - lane;
    const ks_int chunks = ks_cu_warp_max_int((k1 - k0 + G - 1) / G);
    for (ks_int ch = 0; ch < chunks; ch++) {
        const long long base = k0 + (long long)ch * G;
        const long long left = k1 - base; /* entries of the segment from base on */
        const bool in = lane < left;
        const ks_int col = in ? ci[base + lane] : -1;
        const double v = in ? val[base + lane] : 0.0;
        if (need_sum)
            for (int j = 0; j < G; j++) {
                const double x = __shfl_sync(0xffffffffu, v, j, G);
                if (j < left)
                    a->rowsum += x;
            }
        /* diagonal entries, in lane (= column) order over the warp; each
         * group adds its own */
        for (unsigned dm = __ballot_sync(0xffffffffu, in && col == self); dm; dm &= dm - 1) {
            const int src = __ffs(dm) - 1;
            const double x = __shfl_sync(0xffffffffu, v, src);
            if (src - first >= 0 && src - first < G)
                a->diag += x;
        }
        if (in && col != self) {
            if (-v > a->spos)
                a->spos = -v;
            if (v > a->sneg)
                a->sneg = v;
        }
    }
}

/* The row's sign *sg and threshold *cut from the gathered a (the scales
 * reduced over the group); live: the lane has a row. Returns whether the
 * row can have strong entries (else *sg = 1, *cut = 0). */
template <int G>
static __device__ __forceinline__ bool ks_cu_classical_cut(ks_cu_classical_acc a, bool live,
                                                           double theta, double max_row_sum,
                                                           double *sg, double *cut)
{
    for (int off = G / 2; off > 0; off >>= 1) {
        const double op = __shfl_xor_sync(0xffffffffu, a.spos, off);
        const double on = __shfl_xor_sync(0xffffffffu, a.sneg, off);
        if (op > a.spos)
            a.spos = op;
        if (on > a.sneg)
            a.sneg = on;
    }
    const bool need_sum = max_row_sum < 1.0;
    const double s = a.diag < 0.0 ? -1.0 : 1.0, scale = s < 0.0 ? a.sneg : a.spos;
    /* nothing of the right sign, or a row far from a zero row sum */
    const bool any = live && !(!(scale > 0.0) ||
                               (need_sum && fabs(a.rowsum) > max_row_sum * fabs(a.diag)));
    *sg = any ? s : 1.0;
    *cut = any ? theta * scale : 0.0;
    return any;
}

/* The lane's share of the strong entries among k0 .. k1 - 1 (skip: the
 * diagonal's column, or -1), each lane its entries (the segment was just
 * gathered: cached); ks_cu_group_sum_int adds the shares. */
template <int G>
static __device__ __forceinline__ ks_int ks_cu_classical_count(const ks_int *__restrict__ ci,
                                                               const double *__restrict__ val,
                                                               ks_int k0, ks_int k1, ks_int skip,
                                                               double sg, double cut)
{
    ks_int c = 0;
    for (long long k = k0 + (long long)(threadIdx.x & (G - 1)); k < k1; k += G) {
        const double v = -sg * val[k];
        c += ci[k] != skip && v > 0.0 && v >= cut;
    }
    return c;
}

/* The strong entries among k0 .. k1 - 1 written at *out in column order,
 * *out moved past them. A group with nothing to write passes an empty
 * range (it takes no rounds of its own). */
template <int G>
static __device__ __forceinline__ void ks_cu_classical_fill(const ks_int *__restrict__ ci,
                                                            const double *__restrict__ val,
                                                            ks_int k0, ks_int k1, ks_int skip,
                                                            double sg, double cut, ks_int **out)
{
    const int wl = (int)(threadIdx.x & 31), lane = wl & (G - 1), first = wl - lane;
    const unsigned below = (1u << lane) - 1u; /* the group's lanes before this one */
    const ks_int chunks = ks_cu_warp_max_int((k1 - k0 + G - 1) / G);
    ks_int *o = *out;
    for (ks_int ch = 0; ch < chunks; ch++) {
        const long long base = k0 + (long long)ch * G;
        const bool in = lane < k1 - base;
        const ks_int col = in ? ci[base + lane] : -1;
        const double v = in ? -sg * val[base + lane] : 0.0;
        const bool pick = in && col != skip && v > 0.0 && v >= cut;
        const unsigned gm = (__ballot_sync(0xffffffffu, pick) >> first) &
                            (G == 32 ? 0xffffffffu : (1u << G) - 1u);
        if (pick)
            o[__popc(gm & below)] = col;
        o += __popc(gm);
    }
    *out = o;
}

/* Lanes a row for a mean row length: about a chunk a row, so short rows
 * waste few lanes and long ones are read 32 entries at a time. */
static inline int ks_cu_classical_lanes(double mean)
{
    return mean >= 24.0 ? 32 : mean >= 12.0 ? 16 : mean >= 6.0 ? 8 : mean >= 3.0 ? 4 : 1;
}

#endif
