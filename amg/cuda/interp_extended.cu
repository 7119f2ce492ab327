/* Extended+i interpolation (D2, hypre interp_type 6) on the device:
 * amg/cpu/interp_extended.c's rule (the formula and its sources are there),
 * the same pattern and the same values bit for bit.
 *
 * A row is built by a group of G lanes of one warp (G = 4 .. 32: the
 * level's row length for short sets, a whole warp for long ones), which
 * owns a region of shared memory holding an open-addressing hash set of
 * the row's interpolatory set Chat_i (the strong C points of i and of its
 * strong F neighbours, by fine index). Rows are binned by the hash size
 * they need, H = max(32, the power of two >= 2 |set|) (load <= 1/2: short
 * probes, and never full); sets of more than 2048 points get their region
 * in global memory instead (EXT_FB), with the same code. On levels whose
 * rows of A are short (at most EXT_TPR_MEAN entries on average: the fine
 * levels of stencil matrices, where rows are tiny and numerous) the
 * smallest sets are built one thread a row instead (ext_*_row_thread: a
 * sorted array in shared memory and the cpu's loops as they are), so that
 * a warp works on 32 rows with no collective between its lanes.
 *
 *   sizes   one thread a row: a bound of |Chat_i| (the C points of S_i
 *           and of the S rows of its strong F neighbours, repeats
 *           counted; at most nc);
 *   count   rows binned by the bound; the group inserts the candidates
 *           with atomicCAS (a set: the order of insertion does not
 *           matter) and counts them;
 *   scan    P's row pointers;
 *   fill    rows binned again, by their exact length; the group rebuilds
 *           the set, sorts it (bitonic) and writes the columns (coarse
 *           numbers, which increase with the fine index: the cpu's
 *           order), keeping each point's position in P's row next to its
 *           hash slot, so a membership test is one probe; then the
 *           weights.
 *
 * The weights follow the cpu's plain row builder (extended_i_row) step by
 * step: every entry starts at +0.0 and receives, in the order of the walk
 * of A's row i, i's own coupling a_ij and the spread terms (a_ik / D_k)
 * ahat_kj; D_k sums row k's kept entries in row order; atil_ii starts at
 * a_ii and receives the lumped couplings and i's own spread term in the
 * same order. The walk of row i is sequential (the lanes classify a chunk
 * of entries at once, then the group takes them one by one); for a strong
 * F neighbour k the lanes take row k's entries in parallel: D_k is summed
 * by every lane from broadcast values, one at a time in row order (the
 * same additions in the same order: the same bits in every lane), and the
 * spread terms go to distinct positions (a row holds a column once), the
 * steps of consecutive k being ordered by __syncwarp. Products are rounded
 * before they are added (__dmul_rn, __dadd_rn): nvcc would otherwise fuse
 * them into FMAs, which the cpu (ISO C, no contraction) does not. A row
 * whose atil_ii comes out 0 is left empty, as on the cpu: the fill marks it
 * and the rows are compacted after.
 *
 * All rows are built, or a range r0 .. r1 - 1 (a rank's own rows of its
 * local system, mpi/interp_local.c): the per-row kernels and the bins see
 * only the range, the other rows stay empty (their counts and lengths are
 * zeroed once); the C counts of the strength rows (ext_cstrong) cover
 * every row, since the strong F neighbours of the range may lie outside.
 *
 * The per-row functions come first, between the two marker comments, and
 * use nothing but the CUDA intrinsics: they can be compiled on the host
 * with emulated warps to test them without a device. */
#include "interp_device.cuh"

#include <inttypes.h>
#include <limits.h>
#include <string.h>

namespace {

/* ---------------------------------------------------- device: per row */

/* Hash sizes: 2^lg slots, lg >= EXT_LG_MIN (so a region is a multiple of
 * any group's width). Shared-memory bins b = lg - EXT_LG_MIN < EXT_NSHARED
 * (H = 32 .. 4096: sets up to 2048 points); the last bin, EXT_FB, is the
 * global-memory one. */
#define EXT_LG_MIN 5
#define EXT_NSHARED 8
#define EXT_FB EXT_NSHARED
#define EXT_NBINS (EXT_NSHARED + 1)

/* Internal errors (flags[1]), which the count/fill agreement and the
 * load bound rule out; checked so that a bug shows as an error. */
enum { EXT_ERR_FULL = 1, EXT_ERR_COUNT = 2 };

/* log2 of the hash size for a set of at most s points. */
__host__ __device__ __forceinline__ int ext_lg(long long s)
{
    int lg = EXT_LG_MIN;
    while ((1LL << lg) < 2 * s)
        lg++;
    return lg;
}

/* Bin of a row with a set of at most s > 0 points. */
__host__ __device__ __forceinline__ int ext_bin(long long s)
{
    const int b = ext_lg(s) - EXT_LG_MIN;
    return b < EXT_NSHARED ? b : EXT_FB;
}

/* What the row functions read and write (device arrays). */
struct ext_args {
    const ks_int *arp, *aci, *srp, *sci, *cmap, *prp;
    const double *ava, *diag;
    const ks_int *size; /* count pass: the bound of the row's set */
    ks_int *cnt;        /* count pass: |Chat_i| */
    ks_int *pci;        /* fill pass: P's columns, values, final lengths */
    double *pva;
    ks_int *keep;
    int *flags; /* [0]: a row was dropped (atil_ii = 0); [1]: EXT_ERR_* */
};

/* G consecutive lanes of a warp building one row (G divides 32). The
 * masks name the group only, so the groups of a warp may diverge. */
template <int G>
struct ext_group {
    unsigned mask; /* the group's lanes in the warp */
    int r;         /* lane in the group */
    int base;      /* the group's first lane in the warp */
    __device__ ext_group()
    {
        const int lane = (int)(threadIdx.x & 31);
        r = lane % G;
        base = lane - r;
        mask = (0xffffffffu >> (32 - G)) << base;
    }
    __device__ void sync() const { __syncwarp(mask); }
    /* bit t: p of lane t of the group */
    __device__ unsigned ballot(bool p) const { return (__ballot_sync(mask, p) & mask) >> base; }
    /* v of lane t of the group */
    template <class T>
    __device__ T bcast(T v, int t) const
    {
        return __shfl_sync(mask, v, t, G);
    }
    __device__ int sum(int v) const
    {
        for (int o = G / 2; o > 0; o >>= 1)
            v += __shfl_xor_sync(mask, v, o, G);
        return v;
    }
};

__device__ __forceinline__ unsigned ext_hash(ks_int key, int lg)
{
    return ((unsigned)key * 2654435761u) >> (32 - lg); /* Fibonacci hashing */
}

/* key into the set keys[0, 2^lg) (free slots hold -1): 1 when new, 0 when
 * there already, -1 when no slot is free (the load bound rules it out; the
 * probes are counted all the same, so that a bug cannot hang the kernel).
 * A slot changes once, from -1 to its key, so a key read is final and the
 * atomicCAS settles the races. */
__device__ __forceinline__ int ext_insert(int *keys, int lg, ks_int key)
{
    const unsigned m = (1u << lg) - 1;
    unsigned h = ext_hash(key, lg);
    for (unsigned t = 0; t <= m; t++, h = (h + 1) & m) {
        int cur = ((volatile int *)keys)[h];
        if (cur < 0) {
            cur = atomicCAS(&keys[h], -1, (int)key);
            if (cur < 0)
                return 1;
        }
        if (cur == key)
            return 0;
    }
    return -1;
}

/* Slot of key in the set, or -1 (while nobody inserts). */
__device__ __forceinline__ int ext_slot(const int *keys, int lg, ks_int key)
{
    const unsigned m = (1u << lg) - 1;
    unsigned h = ext_hash(key, lg);
    for (unsigned t = 0; t <= m; t++, h = (h + 1) & m) {
        const int cur = keys[h];
        if (cur == key)
            return (int)h;
        if (cur < 0)
            return -1;
    }
    return -1;
}

/* Chat_i into the group's set keys[0, 2^lg): the C points of S's row i and
 * of the S rows of its F entries (fine indices). Returns |Chat_i| in every
 * lane, or -1 when the set ran full. */
template <int G>
__device__ __forceinline__ int ext_set(const ext_group<G> &g, ks_int i, const ext_args &p,
                                       int *keys, int lg)
{
    const ks_int *srp = p.srp, *sci = p.sci, *cmap = p.cmap;
    const int H = 1 << lg;
    g.sync(); /* the previous row's readers are done with the region */
    for (int t = g.r; t < H; t += G)
        keys[t] = -1;
    g.sync();
    int added = 0, full = 0;
    const ks_int ss = srp[i], se = srp[i + 1];
    for (ks_int s0 = ss; s0 < se; s0 += G) {
        const ks_int s = s0 + g.r;
        ks_int k0 = 0, k1 = 0; /* an F neighbour's S row, loaded by its lane */
        bool f = false;
        if (s < se) {
            const ks_int k = sci[s];
            if (cmap[k] >= 0) {
                const int x = ext_insert(keys, lg, k);
                added += x > 0;
                full |= x < 0;
            } else {
                f = true;
                k0 = srp[k];
                k1 = srp[k + 1];
            }
        }
        /* the strong F neighbours of this chunk, one after the other, their
         * S rows taken by all lanes */
        for (unsigned fm = g.ballot(f); fm; fm &= fm - 1) {
            const int t = __ffs((int)fm) - 1;
            const ks_int t1 = g.bcast(k1, t);
            for (ks_int u = g.bcast(k0, t) + g.r; u < t1; u += G) {
                const ks_int l = sci[u];
                if (cmap[l] >= 0) {
                    const int x = ext_insert(keys, lg, l);
                    added += x > 0;
                    full |= x < 0;
                }
            }
        }
    }
    g.sync();
    added = g.sum(added);
    return g.ballot(full != 0) ? -1 : added;
}

/* Bitonic sort of a[0, L), L a power of two, ascending. */
template <int G>
__device__ __forceinline__ void ext_sort(const ext_group<G> &g, int *a, int L)
{
    for (int k = 2; k <= L; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int t = g.r; t < L; t += G) {
                const int u = t ^ j;
                if (u > t) {
                    const int x = a[t], y = a[u];
                    if ((x > y) == ((t & k) == 0)) {
                        a[t] = y;
                        a[u] = x;
                    }
                }
            }
            g.sync();
        }
}

/* The set (len points) sorted into P's row: col[0, len) = the coarse
 * numbers, pos[slot] = each point's position; then vals[0, len) = +0.0.
 * sorted: room for H / 2 ints, the same as vals' (the sort is done
 * before vals are written). */
template <int G>
__device__ __forceinline__ void ext_columns(const ext_group<G> &g, const int *keys, int *pos,
                                            int *sorted, int lg, int len, const ks_int *cmap,
                                            ks_int *col, double *vals)
{
    const int H = 1 << lg; /* a multiple of G */
    int n = 0;
    for (int t0 = 0; t0 < H; t0 += G) {
        const int key = keys[t0 + g.r];
        const unsigned b = g.ballot(key >= 0);
        if (key >= 0)
            sorted[n + __popc(b & ((1u << g.r) - 1))] = key;
        n += __popc(b);
    }
    int L = 1; /* <= H / 2, as H >= 2 len */
    while (L < len)
        L <<= 1;
    for (int t = len + g.r; t < L; t += G)
        sorted[t] = INT_MAX;
    g.sync();
    ext_sort(g, sorted, L);
    for (int t = g.r; t < len; t += G) {
        const int key = sorted[t];
        col[t] = cmap[key];
        pos[ext_slot(keys, lg, key)] = t;
    }
    g.sync();
    for (int t = g.r; t < len; t += G)
        vals[t] = 0.0;
    g.sync();
}

/* a_kl is of the sign ahat keeps in row k: opposite to a_kk (a_kk >= 0
 * counts as positive); zeros never. */
__device__ __forceinline__ bool ahat_sign(double a_kk, double v)
{
    return a_kk < 0 ? v > 0 : v < 0;
}

/* Strong F neighbour k of row i (row k of A at [k0, k1), a_kk = dk),
 * coupling a = a_ik: a spread over Chat_i U {i} in proportion to ahat_kl
 * (or lumped when D_k = 0). Returns atil with i's own term added (the
 * cpu's spare slot, which starts at -0.0). */
template <int G>
__device__ __forceinline__ double ext_spread(const ext_group<G> &g, ks_int i, ks_int k0,
                                             ks_int k1, double dk, double a, double atil,
                                             const ext_args &p, const int *keys, const int *pos,
                                             int lg, double *vals)
{
    double D = 0.0;
    for (ks_int m0 = k0; m0 < k1; m0 += G) {
        const ks_int m = m0 + g.r;
        double v = 0.0;
        bool kept = false;
        if (m < k1) {
            v = p.ava[m];
            const ks_int l = p.aci[m];
            kept = ahat_sign(dk, v) && (l == i || ext_slot(keys, lg, l) >= 0);
        }
        for (unsigned b = g.ballot(kept); b; b &= b - 1) /* in row order */
            D += g.bcast(v, __ffs((int)b) - 1);
    }
    if (D == 0.0) /* nothing to spread over: a_ik lumped */
        return atil + a;
    const double dist = a / D;
    double own = 0.0;
    bool has_own = false;
    g.sync(); /* the previous steps' updates of vals are done */
    for (ks_int m = k0 + g.r; m < k1; m += G) {
        const double v = p.ava[m];
        const ks_int l = p.aci[m];
        if (!ahat_sign(dk, v))
            continue;
        const double term = __dmul_rn(dist, v);
        if (l == i) {
            own = term;
            has_own = true;
            continue;
        }
        const int sl = ext_slot(keys, lg, l);
        if (sl >= 0) { /* a column once a row: no other lane has this position */
            const int x = pos[sl];
            vals[x] = __dadd_rn(vals[x], term);
        }
    }
    const unsigned ob = g.ballot(has_own);
    g.sync();
    return atil + (ob ? __dadd_rn(-0.0, g.bcast(own, __ffs((int)ob) - 1)) : -0.0);
}

/* What the walk of row i does with an entry. */
enum { EXT_SKIP, EXT_OWN, EXT_SPREAD, EXT_LUMP };

/* The walk of A's row i (its set built and sorted, vals zero): the
 * weights' numerators into vals; returns atil_ii (in every lane). */
template <int G>
__device__ __forceinline__ double ext_weights(const ext_group<G> &g, ks_int i, const ext_args &p,
                                              const int *keys, const int *pos, int lg,
                                              double *vals)
{
    double atil = p.diag[i];
    const ks_int a1 = p.arp[i + 1], ss = p.srp[i], se = p.srp[i + 1];
    for (ks_int q0 = p.arp[i]; q0 < a1; q0 += G) {
        const ks_int q = q0 + g.r;
        int kind = EXT_SKIP, pj = -1;
        ks_int k0 = 0, k1 = 0; /* a strong F neighbour's row, loaded by its lane */
        double a = 0.0, dk = 0.0;
        if (q < a1) {
            const ks_int j = p.aci[q];
            a = p.ava[q];
            if (j != i) {
                const int sl = ext_slot(keys, lg, j);
                if (sl >= 0) {
                    pj = pos[sl];
                    kind = EXT_OWN; /* i's own coupling to a point of Chat_i */
                } else if (p.cmap[j] < 0 && (ks_cu_find(p.sci + ss, se - ss, j) >= 0)) {
                    kind = EXT_SPREAD; /* strong F neighbour */
                    k0 = p.arp[j];
                    k1 = p.arp[j + 1];
                    dk = p.diag[j];
                } else {
                    kind = EXT_LUMP; /* weak and outside Chat_i */
                }
            }
        }
        const int nq = a1 - q0 < G ? (int)(a1 - q0) : G;
        for (int t = 0; t < nq; t++) { /* in row order */
            const int kt = g.bcast(kind, t);
            if (kt == EXT_SKIP)
                continue;
            const double at = g.bcast(a, t);
            if (kt == EXT_OWN) {
                if (g.r == t) /* ordered after the spreads by their closing sync */
                    vals[pj] += a;
            } else if (kt == EXT_LUMP) {
                atil += at;
            } else {
                atil = ext_spread(g, i, g.bcast(k0, t), g.bcast(k1, t), g.bcast(dk, t), at, atil,
                                  p, keys, pos, lg, vals);
            }
        }
    }
    g.sync();
    return atil;
}

/* Count pass, row i (an F row whose bound p.size[i] > 0). */
template <int G>
__device__ __forceinline__ void ext_count_row(const ext_group<G> &g, ks_int i, const ext_args &p,
                                              int *region)
{
    const int c = ext_set(g, i, p, region, ext_lg(p.size[i]));
    if (g.r == 0) {
        p.cnt[i] = c < 0 ? 0 : c;
        if (c < 0)
            atomicOr(&p.flags[1], EXT_ERR_FULL);
    }
}

/* Fill pass, row i (an F row of len > 0 entries, p.keep[i] = len): the
 * columns and weights; keep[i] = 0 when atil_ii comes out 0. The region:
 * the keys (H ints), the positions (H ints), then the sort's room, which
 * becomes the values (H / 2 doubles). */
template <int G>
__device__ __forceinline__ void ext_fill_row(const ext_group<G> &g, ks_int i, const ext_args &p,
                                             int *region)
{
    const ks_int p0 = p.prp[i];
    const int len = (int)(p.prp[i + 1] - p0);
    const int lg = ext_lg(len), H = 1 << lg;
    int *keys = region, *pos = region + H;
    double *vals = (double *)(region + 2 * H);
    const int c = ext_set(g, i, p, keys, lg);
    if (c != len) {
        if (g.r == 0) {
            p.keep[i] = 0;
            atomicOr(&p.flags[1], c < 0 ? EXT_ERR_FULL : EXT_ERR_COUNT);
        }
        return;
    }
    ext_columns(g, keys, pos, region + 2 * H, lg, len, p.cmap, p.pci + p0, vals);
    const double atil = ext_weights(g, i, p, keys, pos, lg, vals);
    if (atil == 0.0) {
        if (g.r == 0) {
            p.keep[i] = 0;
            p.flags[0] = 1; /* every writer stores the same value */
        }
        return;
    }
    for (int t = g.r; t < len; t += G)
        p.pva[p0 + t] = -vals[t] / atil;
}

/* One thread a row, for the small sets of levels with short rows (a
 * group's lanes would mostly idle there, and the group's serial steps, a
 * broadcast, a ballot and a sync for each strong F neighbour and each
 * kept entry, cost more than the thread's own loop over the same few
 * entries; without collectives the lanes of a warp stay independent, so a
 * warp keeps 32 rows' loads in flight instead of 32 / G). The set is a
 * sorted array of fine indices in shared memory, interleaved with the
 * other threads' (element s of a thread at s * stride: a warp's lanes hit
 * distinct banks), the weights next to it; the walk is the cpu's plain
 * one, step for step (extended_i_row). */
#define EXT_TPR_CAP 16
/* The count pass keeps no weights: a thread's set may be twice as large
 * for the same shared memory a block (the first two bins). */
#define EXT_TPR_CAP_COUNT 32

/* Position of key in the sorted keys[0, len) (element s at s * stride),
 * or -1. */
__device__ __forceinline__ int ext_tfind(const int *keys, int stride, int len, int key)
{
    int lo = 0, hi = len;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (keys[mid * stride] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < len && keys[lo * stride] == key ? lo : -1;
}

/* key into the sorted set keys[0, *len): 1 when new, 0 when there
 * already, -1 when the set holds CAP points already. */
template <int CAP>
__device__ __forceinline__ int ext_tinsert(int *keys, int stride, int *len, int key)
{
    int lo = 0, hi = *len;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (keys[mid * stride] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < *len && keys[lo * stride] == key)
        return 0;
    if (*len == CAP)
        return -1;
    for (int t = *len; t > lo; t--)
        keys[t * stride] = keys[(t - 1) * stride];
    keys[lo * stride] = key;
    (*len)++;
    return 1;
}

/* Chat_i, sorted, into keys: |Chat_i|, or -1 when it has more than CAP
 * points. */
template <int CAP>
__device__ __forceinline__ int ext_tset(ks_int i, const ext_args &p, int *keys, int stride)
{
    const ks_int *srp = p.srp, *sci = p.sci, *cmap = p.cmap;
    int len = 0;
    for (ks_int s = srp[i]; s < srp[i + 1]; s++) {
        const ks_int k = sci[s];
        if (cmap[k] >= 0) {
            if (ext_tinsert<CAP>(keys, stride, &len, k) < 0)
                return -1;
            continue;
        }
        for (ks_int u = srp[k]; u < srp[k + 1]; u++) {
            const ks_int l = sci[u];
            if (cmap[l] >= 0 && ext_tinsert<CAP>(keys, stride, &len, l) < 0)
                return -1;
        }
    }
    return len;
}

/* Count pass, row i (a bound p.size[i] <= EXT_TPR_CAP_COUNT), one
 * thread. */
__device__ __forceinline__ void ext_count_row_thread(ks_int i, const ext_args &p, int *keys,
                                                     int stride)
{
    const int c = ext_tset<EXT_TPR_CAP_COUNT>(i, p, keys, stride);
    p.cnt[i] = c < 0 ? 0 : c;
    if (c < 0)
        atomicOr(&p.flags[1], EXT_ERR_FULL);
}

/* Fill pass, row i (len = p.keep[i] <= EXT_TPR_CAP), one thread: the
 * cpu's walk of row i. The strong test merges S's row with A's (both
 * sorted: the inputs were checked), as the cpu does. */
__device__ __forceinline__ void ext_fill_row_thread(ks_int i, const ext_args &p, int *keys,
                                                    double *vals, int stride)
{
    const ks_int p0 = p.prp[i];
    const int len = (int)(p.prp[i + 1] - p0);
    const int c = ext_tset<EXT_TPR_CAP>(i, p, keys, stride);
    if (c != len) {
        p.keep[i] = 0;
        atomicOr(&p.flags[1], c < 0 ? EXT_ERR_FULL : EXT_ERR_COUNT);
        return;
    }
    for (int t = 0; t < len; t++)
        vals[t * stride] = 0.0;
    const ks_int *arp = p.arp, *aci = p.aci, *sci = p.sci;
    const double *ava = p.ava;
    double atil = p.diag[i];
    ks_int s = p.srp[i];
    const ks_int se = p.srp[i + 1];
    for (ks_int q = arp[i]; q < arp[i + 1]; q++) {
        const ks_int j = aci[q];
        const double a = ava[q];
        if (j == i)
            continue;
        while (s < se && sci[s] < j)
            s++;
        const int pj = ext_tfind(keys, stride, len, j);
        if (pj >= 0) { /* i's own coupling to a point of Chat_i */
            vals[pj * stride] = __dadd_rn(vals[pj * stride], a);
            continue;
        }
        if (!(s < se && sci[s] == j) || p.cmap[j] >= 0) { /* weak, outside Chat_i: lumped */
            atil = __dadd_rn(atil, a);
            continue;
        }
        /* strong F neighbour k = j: D_k over Chat_i U {i}, in row order */
        const ks_int k0 = arp[j], k1 = arp[j + 1];
        const double dk = p.diag[j];
        double D = 0.0;
        for (ks_int m = k0; m < k1; m++) {
            const double v = ava[m];
            const ks_int l = aci[m];
            if (ahat_sign(dk, v) && (l == i || ext_tfind(keys, stride, len, l) >= 0))
                D = __dadd_rn(D, v);
        }
        if (D == 0.0) { /* nothing to spread over: a_ik lumped */
            atil = __dadd_rn(atil, a);
            continue;
        }
        const double dist = a / D;
        double own = -0.0; /* the cpu's spare slot */
        for (ks_int m = k0; m < k1; m++) {
            const double v = ava[m];
            const ks_int l = aci[m];
            if (!ahat_sign(dk, v))
                continue;
            const double term = __dmul_rn(dist, v);
            if (l == i) {
                own = __dadd_rn(own, term);
                continue;
            }
            const int x = ext_tfind(keys, stride, len, l);
            if (x >= 0)
                vals[x * stride] = __dadd_rn(vals[x * stride], term);
        }
        atil = __dadd_rn(atil, own);
    }
    if (atil == 0.0) {
        p.keep[i] = 0;
        p.flags[0] = 1; /* every writer stores the same value */
        return;
    }
    for (int t = 0; t < len; t++) {
        p.pci[p0 + t] = p.cmap[keys[t * stride]];
        p.pva[p0 + t] = -vals[t * stride] / atil;
    }
}

/* ------------------------------------------------------------- kernels */

/* Bins (ext_bin_rows): rows per bin, the scatter cursors, and the largest
 * size in the global-memory bin. */
struct ext_bins {
    ks_int count[EXT_NBINS];
    ks_int next[EXT_NBINS];
    ks_int maxfb;
};

/* Group kernels: G lanes a row, blockDim.x / G groups a block, each owning
 * `region` ints of dynamic shared memory, or of scratch (global memory,
 * one region a group of the grid) when not NULL; the rows list[0, nrows). */
#define EXT_BLOCK 128
template <int G, bool FILL>
__global__ void ext_rows(const ks_int *__restrict__ list, ks_int nrows, long long region,
                         int *scratch, ext_args p)
{
    extern __shared__ double ext_smem[];
    const ext_group<G> g;
    const int gpb = (int)(blockDim.x / G), gb = (int)(threadIdx.x / G);
    const long long gid = (long long)blockIdx.x * gpb + gb;
    int *reg = scratch ? scratch + gid * region : (int *)ext_smem + gb * region;
    for (long long t = gid; t < nrows; t += (long long)gridDim.x * gpb) {
        if (FILL)
            ext_fill_row(g, list[t], p, reg);
        else
            ext_count_row(g, list[t], p, reg);
    }
}

/* One thread a row (ext_*_row_thread): the rows list[0, nrows), each
 * thread's set (and, filling, its weights before it) interleaved in
 * dynamic shared memory, EXT_TPR_CAP (count: EXT_TPR_CAP_COUNT) elements a
 * thread. */
template <bool FILL>
__global__ void ext_rows_thread(const ks_int *__restrict__ list, ks_int nrows, ext_args p)
{
    extern __shared__ double ext_smem[];
    const int T = (int)blockDim.x;
    double *vals = ext_smem + threadIdx.x;
    int *keys = (int *)(ext_smem + (FILL ? EXT_TPR_CAP * T : 0)) + threadIdx.x;
    for (long long t = (long long)blockIdx.x * T + threadIdx.x; t < nrows;
         t += (long long)gridDim.x * T) {
        if (FILL)
            ext_fill_row_thread(list[t], p, keys, vals, T);
        else
            ext_count_row_thread(list[t], p, keys, T);
    }
}

/* cs[i] = the C points of S's row i (F rows; what they add to a bound). */
__global__ void ext_cstrong(ks_int n, const ks_int *__restrict__ srp,
                            const ks_int *__restrict__ sci, const ks_int *__restrict__ cmap,
                            ks_int *cs)
{
    KS_CU_FOR(ii, n) {
        const ks_int i = (ks_int)ii;
        ks_int c = 0;
        if (cmap[i] < 0)
            for (ks_int s = srp[i]; s < srp[i + 1]; s++)
                c += cmap[sci[s]] >= 0;
        cs[i] = c;
    }
}

/* Count pass, one thread a row of r0 .. r0 + nr - 1: C rows get 1; F rows
 * 0 and size[i] = a bound of |Chat_i| (cs[i] plus cs[k] for every strong
 * F neighbour k; at most nc), the rows with a bound > 0 being built by
 * ext_rows. */
__global__ void ext_sizes(ks_int r0, ks_int nr, const ks_int *__restrict__ srp,
                          const ks_int *__restrict__ sci, const ks_int *__restrict__ cmap,
                          const ks_int *__restrict__ cs, ks_int nc, ks_int *size, ks_int *cnt)
{
    KS_CU_FOR(ii, nr) {
        const ks_int i = r0 + (ks_int)ii;
        if (cmap[i] >= 0) {
            cnt[i] = 1;
            size[i] = 0;
            continue;
        }
        long long b = cs[i];
        for (ks_int s = srp[i]; s < srp[i + 1]; s++) {
            const ks_int k = sci[s];
            if (cmap[k] < 0)
                b += cs[k];
        }
        cnt[i] = 0;
        size[i] = (ks_int)(b < nc ? b : nc);
    }
}

/* Fill pass, one thread a row of r0 .. r0 + nr - 1: C rows get their unit
 * entry; F rows keep[i] = size[i] = their length, the rows with entries
 * being built by ext_rows. */
__global__ void ext_lengths(ks_int r0, ks_int nr, const ks_int *__restrict__ cmap,
                            const ks_int *__restrict__ prp, ks_int *__restrict__ pci,
                            double *__restrict__ pva, ks_int *keep, ks_int *size)
{
    KS_CU_FOR(ii, nr) {
        const ks_int i = r0 + (ks_int)ii;
        const ks_int p0 = prp[i];
        if (cmap[i] >= 0) {
            pci[p0] = cmap[i];
            pva[p0] = 1.0;
            keep[i] = 1;
            size[i] = 0;
        } else {
            keep[i] = size[i] = prp[i + 1] - p0;
        }
    }
}

/* The binning kernels run whole warps (the loop bound is the warp's), so
 * that __match_any_sync can aggregate the atomics of a warp per bin. They
 * read size[0, n) of the rows r0 .. r0 + n - 1 (size points at row r0's). */
__global__ void ext_hist(ks_int n, const ks_int *__restrict__ size, ext_bins *bins)
{
    const int lane = (int)(threadIdx.x & 31);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long w = blockIdx.x * (long long)blockDim.x + (threadIdx.x - lane); w < n;
         w += stride) {
        const long long i = w + lane;
        const ks_int s = i < n ? size[i] : 0;
        const int b = s > 0 ? ext_bin(s) : -1;
        const unsigned peers = __match_any_sync(0xffffffffu, b);
        if (b >= 0 && lane == __ffs((int)peers) - 1)
            atomicAdd(&bins->count[b], (ks_int)__popc(peers));
        if (b == EXT_FB)
            atomicMax(&bins->maxfb, s);
    }
}

/* The cursors at the bins' starts. */
__global__ void ext_starts(ext_bins *bins)
{
    ks_int at = 0;
    for (int b = 0; b < EXT_NBINS; b++) {
        bins->next[b] = at;
        at += bins->count[b];
    }
}

/* Rows into their bin's part of list (the order within a bin does not
 * matter: every row is built alone). */
__global__ void ext_scatter(ks_int r0, ks_int n, const ks_int *__restrict__ size,
                            ext_bins *bins, ks_int *__restrict__ list)
{
    const int lane = (int)(threadIdx.x & 31);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long w = blockIdx.x * (long long)blockDim.x + (threadIdx.x - lane); w < n;
         w += stride) {
        const long long i = w + lane;
        const ks_int s = i < n ? size[i] : 0;
        const int b = s > 0 ? ext_bin(s) : -1;
        const unsigned peers = __match_any_sync(0xffffffffu, b);
        const int leader = __ffs((int)peers) - 1;
        ks_int at = 0;
        if (b >= 0 && lane == leader)
            at = atomicAdd(&bins->next[b], (ks_int)__popc(peers));
        at = __shfl_sync(0xffffffffu, at, leader);
        if (b >= 0)
            list[at + __popc(peers & ((1u << lane) - 1))] = r0 + (ks_int)i;
    }
}

/* ----------------------------------------------------------- host side */

/* Launch limits: dynamic shared memory a block (the default limit, no
 * opt-in: a fill region of the largest shared bin, 3 * 4096 ints, fits
 * once), blocks a launch (grid-stride beyond), and the global-memory bin's
 * regions: at most this many bytes in all (one region at least) and this
 * many warps. */
#define EXT_SMEM_BLOCK 49152
#define EXT_MAX_BLOCKS (1 << 20)
#define EXT_FB_BYTES ((size_t)256 << 20)
#define EXT_FB_WARPS 1024
#define EXT_LG_MAX 28 /* sets of up to 2^27 points */

/* Rows i of r0 .. r0 + nr - 1 with size[i] > 0, listed by bin:
 * h->count[b] rows of bin b at list + h->next[b]; h->maxfb. Synchronises
 * (the host needs the counts). */
ks_error ext_bin_rows(ks_backend *be, cudaStream_t st, ks_int r0, ks_int nr, const ks_int *size,
                      ext_bins *d, ks_int *list, ext_bins *h)
{
    if (cudaMemsetAsync(d, 0, sizeof *d, st) != cudaSuccess) {
        (void)cudaGetLastError();
        return ks_seterr(KS_ERR_DEVICE, "ks_amg_interp_extended_i: cudaMemsetAsync of the bin "
                         "counters failed");
    }
    if (nr > 0) {
        ext_hist<<<ks_cu_blocks(nr), KS_CU_BLOCK, 0, st>>>(nr, size + r0, d);
        KS_TRY(ks_cu_launched("ext_hist"));
    }
    ext_starts<<<1, 1, 0, st>>>(d);
    KS_TRY(ks_cu_launched("ext_starts"));
    if (nr > 0) {
        ext_scatter<<<ks_cu_blocks(nr), KS_CU_BLOCK, 0, st>>>(r0, nr, size + r0, d, list);
        KS_TRY(ks_cu_launched("ext_scatter"));
    }
    KS_TRY(be->ops->download(be, h, d, sizeof *h));
    for (int b = 0; b < EXT_NBINS; b++) /* the cursors stopped at the bins' ends */
        h->next[b] -= h->count[b];
    return KS_OK;
}

template <int G>
void ext_launch_g(bool fill, unsigned blocks, int gpb, size_t smem, cudaStream_t st,
                  const ks_int *list, ks_int rows, long long region, int *scratch,
                  const ext_args &p)
{
    if (fill)
        ext_rows<G, true><<<blocks, gpb * G, smem, st>>>(list, rows, region, scratch, p);
    else
        ext_rows<G, false><<<blocks, gpb * G, smem, st>>>(list, rows, region, scratch, p);
}

ks_error ext_launch(int G, bool fill, long long groups, int gpb, size_t smem, cudaStream_t st,
                    const ks_int *list, ks_int rows, long long region, int *scratch,
                    const ext_args &p)
{
    long long blocks = (groups + gpb - 1) / gpb;
    if (blocks > EXT_MAX_BLOCKS)
        blocks = EXT_MAX_BLOCKS;
    switch (G) {
    case 4:
        ext_launch_g<4>(fill, (unsigned)blocks, gpb, smem, st, list, rows, region, scratch, p);
        break;
    case 8:
        ext_launch_g<8>(fill, (unsigned)blocks, gpb, smem, st, list, rows, region, scratch, p);
        break;
    case 16:
        ext_launch_g<16>(fill, (unsigned)blocks, gpb, smem, st, list, rows, region, scratch, p);
        break;
    default:
        ext_launch_g<32>(fill, (unsigned)blocks, gpb, smem, st, list, rows, region, scratch, p);
        break;
    }
    return ks_cu_launched(fill ? "ext_rows (fill)" : "ext_rows (count)");
}

/* Lanes a row for the bins up to H = 2^EXT_LG_SMALL: the mean length of
 * the rows of A built (rounded up to a power of two, 4 to 32), the width
 * of the walks of rows k; larger sets come from longer rows and get a
 * warp. */
#define EXT_LG_SMALL 8
int ext_group_size(ks_int n, long long nnz)
{
    const long long mean = n > 0 ? (nnz + n - 1) / n : 1;
    int G = 4;
    while (G < 32 && G < mean)
        G <<= 1;
    return G;
}

/* Levels whose rows of A are this long or shorter on average build the
 * small sets one thread a row (ext_rows_thread). */
#define EXT_TPR_MEAN 8
#define EXT_TPR_BLOCK 128
static_assert((1 << EXT_LG_MIN) / 2 == EXT_TPR_CAP && EXT_TPR_CAP_COUNT == 2 * EXT_TPR_CAP,
              "the thread rows are the first bin's (fill) or the first two bins' (count)");

/* One pass (count or fill) over the binned rows; tpr: bin 0 (fill) or
 * bins 0 and 1 (count; the list holds them one after the other) one
 * thread a row. */
ks_error ext_pass(ks_backend *be, cudaStream_t st, bool fill, const ext_bins *h,
                  const ks_int *list, int gsmall, bool tpr, const ext_args &p)
{
    const long long words = fill ? 3 : 1; /* region ints a hash slot */
    const int b0 = tpr ? (fill ? 1 : 2) : 0; /* the group kernels' first bin */
    const ks_int trows = tpr ? (fill ? h->count[0] : h->count[0] + h->count[1]) : 0;
    if (trows > 0) {
        long long blocks = ((long long)trows + EXT_TPR_BLOCK - 1) / EXT_TPR_BLOCK;
        if (blocks > EXT_MAX_BLOCKS)
            blocks = EXT_MAX_BLOCKS;
        const size_t per = fill ? EXT_TPR_CAP * (sizeof(double) + sizeof(int))
                                : EXT_TPR_CAP_COUNT * sizeof(int); /* bytes a thread */
        const size_t smem = (size_t)EXT_TPR_BLOCK * per;
        if (fill)
            ext_rows_thread<true><<<(unsigned)blocks, EXT_TPR_BLOCK, smem, st>>>(
                list + h->next[0], trows, p);
        else
            ext_rows_thread<false><<<(unsigned)blocks, EXT_TPR_BLOCK, smem, st>>>(
                list + h->next[0], trows, p);
        KS_TRY(ks_cu_launched(fill ? "ext_rows_thread (fill)" : "ext_rows_thread (count)"));
    }
    for (int b = b0; b < EXT_NSHARED; b++) {
        const ks_int rows = h->count[b];
        if (rows == 0)
            continue;
        const int lg = EXT_LG_MIN + b;
        const long long region = words << lg;
        const int G = lg <= EXT_LG_SMALL ? gsmall : 32;
        int gpb = EXT_BLOCK / G; /* whole warps, within EXT_SMEM_BLOCK */
        while (gpb > 32 / G && (size_t)gpb * (size_t)region * sizeof(int) > EXT_SMEM_BLOCK)
            gpb /= 2;
        KS_TRY(ext_launch(G, fill, rows, gpb, (size_t)gpb * (size_t)region * sizeof(int), st,
                          list + h->next[b], rows, region, NULL, p));
    }
    const ks_int rows = h->count[EXT_FB];
    if (rows == 0)
        return KS_OK;
    const int lg = ext_lg(h->maxfb);
    if (lg > EXT_LG_MAX)
        return ks_seterr(KS_ERR_SIZE, "ks_amg_interp_extended_i: a row's interpolatory set may "
                         "hold %" PRId32 " points, more than this implementation's limit",
                         h->maxfb);
    const long long region = words << lg;
    const size_t bytes = (size_t)region * sizeof(int);
    long long warps = (long long)(EXT_FB_BYTES / bytes);
    if (warps < 1)
        warps = 1;
    if (warps > EXT_FB_WARPS)
        warps = EXT_FB_WARPS;
    if (warps > rows)
        warps = rows;
    int *scratch = NULL;
    KS_TRY(ks_be_alloc(be, (size_t)warps * bytes, (void **)&scratch,
                       "interpolation sets (global memory)"));
    ks_error e = ext_launch(32, fill, warps, 1, 0, st, list + h->next[EXT_FB], rows, region,
                            scratch, p);
    be->ops->free(be, scratch); /* stream-ordered: after the kernel */
    return e;
}

} // namespace

extern "C" ks_error ks_cu_interp_extended_i_rows(const ks_sparse *A, const ks_sparse *S,
                                                 const int *cf, ks_int r0, ks_int r1,
                                                 ks_sparse *P)
{
    static const char who[] = "ks_amg_interp_extended_i";
    if (!P)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    if (!A)
        return ks_seterr(KS_ERR_ARG, "%s: NULL matrix", who);
    ks_backend *be = A->be;
    const ks_int n = A->nrows;
    ks_int *cmap = NULL, nc = 0;
    double *diag = NULL;
    ks_error e = KS_OK;
    if (n >= 0 && be) {
        cmap = (ks_int *)ks_cu_alloc_if(be, &e, ((size_t)n + 1) * sizeof *cmap, "coarse map");
        diag = (double *)ks_cu_alloc_if(be, &e, ((size_t)n + 1) * sizeof *diag,
                                        "interpolation diagonal");
    }
    if (e == KS_OK)
        e = ks_cu_interp_inputs(who, A, S, cf, r0, r1, cmap, diag, &nc);
    cudaStream_t st = e == KS_OK ? ks_cu_stream(be) : 0;
    const ks_int nr = e == KS_OK ? r1 - r0 : 0;
    long long rnnz = 0;
    if (e == KS_OK)
        e = ks_cu_rows_nnz(A, r0, r1, &rnnz);
    ks_sparse Q = {be, n, nc, 0, NULL, NULL, NULL, 0, 0};
    ks_int *size = NULL, *list = NULL, *keep = NULL;
    ext_bins *dbins = NULL, hbins;
    int *flags = NULL, hflags[2] = {0, 0};
    size = (ks_int *)ks_cu_alloc_if(be, &e, ((size_t)n + 1) * sizeof(ks_int),
                                    "interpolation set sizes");
    list = (ks_int *)ks_cu_alloc_if(be, &e, ((size_t)n + 1) * sizeof(ks_int),
                                    "interpolation row lists");
    dbins = (ext_bins *)ks_cu_alloc_if(be, &e, sizeof(ext_bins), "interpolation bins");
    flags = (int *)ks_cu_alloc_if(be, &e, sizeof hflags, "interpolation flags");
    Q.rowptr = (ks_int *)ks_cu_alloc_if(be, &e, ((size_t)n + 1) * sizeof(ks_int),
                                        "interpolation row pointers");
    if (e == KS_OK && cudaMemsetAsync(flags, 0, sizeof hflags, st) != cudaSuccess) {
        (void)cudaGetLastError();
        e = ks_seterr(KS_ERR_DEVICE, "%s: cudaMemsetAsync of the flags failed", who);
    }
    /* The rows not built count 0 (and keep 0 entries, should the rows be
     * compacted). */
    if (e == KS_OK && nr < n &&
        cudaMemsetAsync(Q.rowptr, 0, ((size_t)n + 1) * sizeof(ks_int), st) != cudaSuccess) {
        (void)cudaGetLastError();
        e = ks_seterr(KS_ERR_DEVICE, "%s: cudaMemsetAsync of the row counts failed", who);
    }
    ext_args ar;
    memset(&ar, 0, sizeof ar);
    if (e == KS_OK) {
        ar.arp = A->rowptr;
        ar.aci = A->colind;
        ar.ava = A->val;
        ar.srp = S->rowptr;
        ar.sci = S->colind;
        ar.cmap = cmap;
        ar.diag = diag;
        ar.size = size;
        ar.cnt = Q.rowptr;
        ar.flags = flags;
    }
    const int gsmall = ext_group_size(nr, rnnz);
    const bool tpr = rnnz <= (long long)EXT_TPR_MEAN * nr;
    /* list holds the C counts of every row (the strong F neighbours of the
     * rows built may be anywhere) until the rows are binned */
    if (e == KS_OK && n > 0) {
        ext_cstrong<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, st>>>(n, S->rowptr, S->colind, cmap, list);
        e = ks_cu_launched("ext_cstrong");
    }
    if (e == KS_OK && nr > 0) {
        ext_sizes<<<ks_cu_blocks(nr), KS_CU_BLOCK, 0, st>>>(r0, nr, S->rowptr, S->colind, cmap,
                                                             list, nc, size, Q.rowptr);
        e = ks_cu_launched("ext_sizes");
    }
    if (e == KS_OK)
        e = ext_bin_rows(be, st, r0, nr, size, dbins, list, &hbins);
    if (e == KS_OK)
        e = ext_pass(be, st, false, &hbins, list, gsmall, tpr, ar);
    if (e == KS_OK)
        e = ks_cu_scan(be, Q.rowptr, n, Q.rowptr, &Q.nnz, "interpolation entries");
    Q.colind = (ks_int *)ks_cu_alloc_if(be, &e, (size_t)Q.nnz * sizeof(ks_int) + 1,
                                        "interpolation columns");
    Q.val = (double *)ks_cu_alloc_if(be, &e, (size_t)Q.nnz * sizeof(double) + 1,
                                     "interpolation values");
    keep = (ks_int *)ks_cu_alloc_if(be, &e, ((size_t)n + 1) * sizeof(ks_int),
                                    "interpolation row lengths");
    if (e == KS_OK && nr < n &&
        cudaMemsetAsync(keep, 0, ((size_t)n + 1) * sizeof(ks_int), st) != cudaSuccess) {
        (void)cudaGetLastError();
        e = ks_seterr(KS_ERR_DEVICE, "%s: cudaMemsetAsync of the row lengths failed", who);
    }
    if (e == KS_OK) {
        ar.prp = Q.rowptr;
        ar.pci = Q.colind;
        ar.pva = Q.val;
        ar.keep = keep;
    }
    if (e == KS_OK && nr > 0) {
        ext_lengths<<<ks_cu_blocks(nr), KS_CU_BLOCK, 0, st>>>(r0, nr, cmap, Q.rowptr, Q.colind,
                                                               Q.val, keep, size);
        e = ks_cu_launched("ext_lengths");
    }
    if (e == KS_OK)
        e = ext_bin_rows(be, st, r0, nr, size, dbins, list, &hbins);
    if (e == KS_OK)
        e = ext_pass(be, st, true, &hbins, list, gsmall, tpr, ar);
    if (e == KS_OK) /* synchronises: kernel faults show here */
        e = be->ops->download(be, hflags, flags, sizeof hflags);
    if (e == KS_OK && hflags[1])
        e = ks_seterr(KS_ERR_DEVICE, "%s: internal error: %s (flags %d)", who,
                      hflags[1] & EXT_ERR_FULL ? "an interpolatory set overflowed its hash"
                                               : "a row's two passes disagree",
                      hflags[1]);
    if (e == KS_OK && hflags[0])
        e = ks_cu_compact_rows(&Q, keep);
    if (e == KS_OK)
        e = be->ops->sync(be);
    if (be) {
        be->ops->free(be, cmap);
        be->ops->free(be, diag);
        be->ops->free(be, size);
        be->ops->free(be, list);
        be->ops->free(be, dbins);
        be->ops->free(be, flags);
        be->ops->free(be, keep);
    }
    if (e != KS_OK) {
        if (Q.be)
            ks_sparse_free(&Q);
        return e;
    }
    *P = Q;
    return KS_OK;
}

extern "C" ks_error ks_cu_interp_extended_i(const ks_sparse *A, const ks_sparse *S,
                                            const int *cf, ks_sparse *P)
{
    return ks_cu_interp_extended_i_rows(A, S, cf, 0, A ? A->nrows : 0, P);
}
