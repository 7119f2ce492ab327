/* rho(D^-1 A) on the device: the estimate of amg/cpu/spectral.c (its
 * comment explains the method), step for step.
 *
 *   checks     A valid (structure, sorted unique columns, finite values:
 *              ks_csr_validate's rules; its message on a host copy when
 *              the device finds a bad row), square and nonempty, every
 *              diagonal stored and nonzero (the first bad row named).
 *   choice     Lanczos on sign |D|^-1/2 A |D|^-1/2 when the diagonal has
 *              one sign and A is symmetric to KS_SPEC_SYM_TOL (the cpu's
 *              test, with integer counts of upper and lower entries, or
 *              known: the caller's known_sym), else the power method on
 *              D^-1 A; the bound ||D^-1 A||_inf (a
 *              max, exact in any order) caps both, and the result is at
 *              least 1.
 *   steps      the same start vector (ks_spectral_start), the same
 *              recurrences and stopping rules, the tridiagonal's
 *              eigenvalue by the cpu's own function on the host.
 *
 * The sums (v.v, w.v, w.w, y.y) are formed by the kernels that make their
 * terms, deterministic but in another order than the cpu's blocks, so the
 * estimate agrees with the cpu's to rounding only (test_amg_cuda allows
 * 1e-10 relative). Its SpMVs use several lanes a row where rows are long
 * (a row's partial sums meet by shuffles); levels of fewer than 12
 * entries a row on average keep one thread a row, summing in column
 * order with __dmul_rn / __dadd_rn like the cpu.
 *
 * Waits: the structure check, one download after the diagonal and the
 * symmetry test (both launched back to back), and one at the end (the
 * history and the state, stored next to each other). The
 * iteration in between is launched whole; what the cpu decides between
 * steps (square roots, the breakdown test, the divisors) is decided on the
 * device (see spec_state), and kernels after the cpu's stop do nothing.
 * Each SpMV forms its input x = u / scal and, for Lanczos, the scaled
 * values a_ij dsc_j as it reads them, so no pass divides a vector and no
 * nnz-sized array of scaled values is made. */
#include "amg_cuda.h"
#include "../spectral_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

namespace {

/* Position of (i, j) in sorted row i, -1 when absent (spectral.c's
 * find_entry). */
__device__ ks_int find_entry(const ks_int *__restrict__ rp, const ks_int *__restrict__ ci, ks_int i,
                             ks_int j)
{
    ks_int lo = rp[i], hi = rp[i + 1];
    while (lo < hi) {
        const ks_int mid = lo + (hi - lo) / 2;
        if (ci[mid] < j)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < rp[i + 1] && ci[lo] == j ? lo : -1;
}

/* flags: [0] first zero or missing diagonal, [1] positive and [2] negative
 * diagonals counted, [3] set when an upper entry has no matching lower one,
 * [4] when a matching pair differs in its bits (symmetric to rounding
 * only). */
__global__ void spec_diagonal(ks_int n, const ks_int *__restrict__ rp,
                              const ks_int *__restrict__ ci, const double *__restrict__ val,
                              double *__restrict__ diag, int *flags)
{
    int pos = 0, neg = 0;
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t, k = find_entry(rp, ci, i, i);
        const double d = k >= 0 ? val[k] : 0.0;
        if (d == 0.0)
            atomicMin(&flags[0], i);
        diag[i] = d;
        pos += d > 0.0;
        neg += d < 0.0;
    }
    ks_cu_warp_add_int(&flags[1], pos);
    ks_cu_warp_add_int(&flags[2], neg);
}

/* spectral.c's is_symmetric: every strictly upper entry has a lower
 * partner within the tolerance (else flags[3] = 1; flags[4] = 1 when a
 * partner within it is not equal), and ul[0] (upper) == ul[1] (lower)
 * entries. TPR lanes a row, each taking every TPR-th entry (its own search
 * into row j): the counts are integers and the verdicts ors, the same in
 * any order. */
template <int TPR>
__global__ void spec_symmetry(ks_int n, const ks_int *__restrict__ rp,
                              const ks_int *__restrict__ ci, const double *__restrict__ val,
                              const double *__restrict__ d, int *flags, unsigned long long *ul)
{
    unsigned long long upper = 0, lower = 0;
    int asym = 0, inexact = 0;
    KS_CU_FOR(t, (long long)n * TPR)
    {
        const ks_int i = (ks_int)(t / TPR);
        for (ks_int k = rp[i] + (ks_int)(t % TPR); k < rp[i + 1]; k += TPR) {
            const ks_int j = ci[k];
            if (j < i) {
                lower++;
                continue;
            }
            if (j == i)
                continue;
            upper++;
            const ks_int kt = find_entry(rp, ci, j, i);
            if (kt < 0 || fabs(val[k] - val[kt]) > KS_SPEC_SYM_TOL * sqrt(fabs(d[i] * d[j])))
                asym = 1;
            else if (val[k] != val[kt])
                inexact = 1;
        }
    }
    if (asym)
        atomicExch(&flags[3], 1);
    if (inexact)
        atomicExch(&flags[4], 1);
    ks_cu_warp_add_u64(&ul[0], upper);
    ks_cu_warp_add_u64(&ul[1], lower);
}

/* ------------------------------------------------- sync-free reductions */

/* The sums of the estimate (v.v, w.v, w.w, y.y) are formed inside the
 * kernels that produce their terms, and what the cpu does with them next
 * (the square root, the breakdown test, the next divisor) is done on the
 * device by the block that finishes the sum, into a spec_state: the host
 * launches the whole iteration without waiting and downloads the state
 * and the tridiagonal once at the end (the host used to wait for two dot
 * products a Lanczos step). A sum is a fixed tree over a grid of fixed
 * size (the block totals summed in block order by the last block to
 * finish), so it is deterministic; its order is not the cpu's, as the
 * backend's dot products' was not. */
struct spec_state {
    unsigned long long bound_bits; /* max_i sum_j |a_ij| / |a_ii|: nonnegative doubles
                                    * order as their bits, so an atomicMax of the bits */
    unsigned ticket;               /* blocks done with the sum being formed */
    int m;                         /* Lanczos: alphas so far; power: steps so far */
    int done;                      /* the cpu's loop would have stopped */
    int pad;
    double scal;                   /* the next SpMV's input is u / scal */
    double a, bprev, x2;           /* alpha; the last beta; power: |start|^2 */
};

/* Grids of the reducing kernels: at most this many blocks (grid-stride
 * loops do the rest), so the last block sums few totals. */
const unsigned kRedBlocks = 1024;

unsigned red_blocks(long long threads)
{
    const unsigned b = ks_cu_blocks(threads);
    return b < kRedBlocks ? b : kRedBlocks;
}

/* The block's total of v, in thread 0, in a fixed order (each warp's
 * tree, then the warps in order); wsum: shared scratch, a value a warp. */
__device__ __forceinline__ double block_total(double v, double *wsum)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0)
        wsum[threadIdx.x / 32] = v;
    __syncthreads();
    double s = 0.0;
    if (threadIdx.x == 0)
        for (unsigned w = 0; w < blockDim.x / 32; w++)
            s += wsum[w];
    return s;
}

/* Sum of v over the grid: a fixed tree in the block, the block's total in
 * part[blockIdx.x], and the block that finishes last sums the totals in
 * block order and calls fin(sum) in its thread 0. Every thread of every
 * block must call it, once, after its grid-stride loop. */
template <class Fin>
__device__ void grid_sum(double v, double *part, unsigned *ticket, Fin fin)
{
    __shared__ double wsum[KS_CU_BLOCK / 32];
    __shared__ bool last;
    const double bs = block_total(v, wsum);
    if (threadIdx.x == 0) {
        part[blockIdx.x] = bs;
        __threadfence(); /* the total is visible before the ticket counts it */
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    double s = 0.0;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)
        s += __ldcg(&part[b]); /* written by other blocks: not from L1 */
    __syncthreads(); /* thread 0 has read wsum above */
    const double t = block_total(s, wsum);
    if (threadIdx.x == 0) {
        *ticket = 0; /* for the next sum (kernels on one stream run in order) */
        fin(t);
    }
}

/* dsc[i] (in place of the diagonal): |a_ii|^-1/2 (Lanczos) or 1/a_ii
 * (power); the bound's rows sum_j |a_ij| / |a_ii| (in row order, as on the
 * cpu) folded into st->bound_bits; u = the start vector, and its squared
 * norm: the Lanczos start's divisor (sqrt) or the power method's |x|^2
 * (whose first SpMV takes the start as it is: x / 1 is x). */
__global__ void spec_scaling(ks_int n, const ks_int *__restrict__ rp,
                             const double *__restrict__ val, int symmetric, double *dsc,
                             double *__restrict__ u, double *part, spec_state *st)
{
    double mx = 0.0, sq = 0.0;
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        const double d = dsc[i];
        double r = 0.0;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++)
            r += fabs(val[k]);
        dsc[i] = symmetric ? 1.0 / sqrt(fabs(d)) : 1.0 / d;
        mx = fmax(mx, r / fabs(d));
        const double x = ks_spectral_start((uint64_t)i);
        u[i] = x;
        sq = __dadd_rn(sq, __dmul_rn(x, x));
    }
    for (int off = 16; off > 0; off >>= 1)
        mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    if ((threadIdx.x & 31) == 0 && mx > 0.0)
        atomicMax(&st->bound_bits, (unsigned long long)__double_as_longlong(mx));
    grid_sum(sq, part, &st->ticket, [=](double s) {
        if (symmetric)
            st->scal = sqrt(s);
        else {
            st->scal = 1.0;
            st->x2 = s;
        }
    });
}

/* One SpMV of the iteration with TPR lanes a row (TPR divides 32; 1: one
 * thread a row, summing in column order like the cpu), its input x = u /
 * st->scal formed on the fly (the division the cpu does in a pass of its
 * own, same bits):
 *   Lanczos (LZ)  w_i = (sign dsc_i) sum_j (a_ij dsc_j) x_j, the scaled
 *                 values formed per entry (the cpu forms them once into
 *                 an array; the products are the same, and not storing
 *                 nnz doubles saves a pass over A); x_i is stored (xo:
 *                 the step's v) and alpha = w.v summed;
 *   power         y_i = dsc_i sum_j a_ij x_j and |y|^2 summed.
 * A row's lanes meet by shuffles (another order than the cpu's: the
 * estimate agrees to rounding only, as its sums do). The row loop is
 * warp-uniform (the shuffles need every lane). */
template <int TPR, bool LZ>
__global__ void spec_step(ks_int n, const ks_int *__restrict__ rp, const ks_int *__restrict__ ci,
                          const double *__restrict__ val, const double *__restrict__ dsc,
                          double pre, const double *__restrict__ u, double *__restrict__ xo,
                          double *__restrict__ y, double *part, spec_state *st, int step,
                          int iters)
{
    if (st->done) /* set by an earlier kernel: the same for the whole grid */
        return;
    const double scal = st->scal;
    const long long total = (long long)n * TPR, stride = (long long)gridDim.x * blockDim.x;
    const int lane = threadIdx.x % TPR;
    double acc = 0.0;
    for (long long base = blockIdx.x * (long long)blockDim.x + (threadIdx.x & ~31u);
         base < total; base += stride) {
        const long long t = base + (threadIdx.x & 31);
        const ks_int i = (ks_int)(t / TPR);
        double s = 0.0;
        if (t < total)
            for (ks_int k = rp[i] + lane; k < rp[i + 1]; k += TPR) {
                const ks_int c = ci[k];
                const double av = LZ ? __dmul_rn(val[k], dsc[c]) : val[k];
                const double x = u[c] / scal;
                if (TPR == 1)
                    s = __dadd_rn(s, __dmul_rn(av, x));
                else
                    s += av * x;
            }
        for (int off = TPR / 2; off > 0; off >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, off);
        if (t < total && lane == 0) {
            const double yi = __dmul_rn(__dmul_rn(pre, dsc[i]), s);
            y[i] = yi;
            if (LZ) {
                const double xi = u[i] / scal;
                xo[i] = xi;
                acc = __dadd_rn(acc, __dmul_rn(yi, xi));
            } else {
                acc = __dadd_rn(acc, __dmul_rn(yi, yi));
            }
        }
    }
    grid_sum(acc, part, &st->ticket, [=](double sum) {
        if (LZ) {
            /* hist: the alphas, then the betas */
            part[kRedBlocks + st->m] = sum;
            st->a = sum;
            st->m++;
        } else {
            /* spectral.c's power(): |y|, stop at a zero one, else y / |y| next */
            part[kRedBlocks + step] = sum;
            st->m = step + 1;
            const double ny = sqrt(sum);
            if (!(ny > 0.0) || step + 1 == iters)
                st->done = 1;
            else
                st->scal = ny;
        }
    });
}

/* w -= a v + bprev vprev and w.w (spectral.c's update_norm2; vprev NULL:
 * the first step's zero vector), then the cpu's test: b = |w|, stop at
 * the last step or a breakdown, else beta = b and the next v is w / b. */
__global__ void spec_update(ks_int n, const double *__restrict__ v,
                            const double *__restrict__ vprev, double *__restrict__ w, double *part,
                            spec_state *st, int step, int iters)
{
    if (st->done)
        return;
    const double a = st->a, bprev = st->bprev;
    double acc = 0.0;
    KS_CU_FOR(i, n)
    {
        const double vp = vprev ? vprev[i] : 0.0;
        const double x =
            __dsub_rn(w[i], __dadd_rn(__dmul_rn(a, v[i]), __dmul_rn(bprev, vp)));
        w[i] = x;
        acc = __dadd_rn(acc, __dmul_rn(x, x));
    }
    grid_sum(acc, part, &st->ticket, [=](double bb) {
        const double b = sqrt(bb);
        /* b ~ 0: the Krylov space is invariant, T's eigenvalues are exact */
        if (step + 1 == iters ||
            !(b > __dmul_rn(KS_SPEC_BREAKDOWN, __dadd_rn(fabs(a), bprev)))) {
            st->done = 1;
            return;
        }
        part[kRedBlocks + iters + st->m - 1] = b;
        st->scal = b;
        st->bprev = b;
    });
}

/* ------------------------------------------------------------- the host */

/* The flags' ints (spec_diagonal's and spec_symmetry's, one of padding)
 * before the two counts of upper and lower entries. */
const int kFlagInts = 6;
const size_t kFlagBytes = kFlagInts * sizeof(int) + 2 * sizeof(unsigned long long);

struct spec_work {
    double *dsc, *vec; /* vec: 4 n-vectors (Lanczos), 2 (power) */
    double *part;      /* kRedBlocks block totals, then the history: alphas and
                        * betas (Lanczos) or |y|^2 a step (power), 2 iters,
                        * then the state (st points there) */
    spec_state *st;
    int *flags;        /* [0..4] as spec_diagonal / spec_symmetry, [5] padding, then 2 u64 */
    int tpr;           /* lanes a row of the SpMV (1: the cpu's row sums bit for bit) */
};

#define SPEC_LAUNCH(kernel, ...)                                                             \
    do {                                                                                     \
        kernel<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(__VA_ARGS__);          \
        KS_CUDA_LAUNCH_CHECK(#kernel);                                                       \
    } while (0)

/* One spec_step with wk->tpr lanes a row. */
template <bool LZ>
ks_error spec_spmv(const ks_sparse *A, const spec_work *wk, double pre, const double *u,
                   double *xo, double *y, int step, int iters)
{
    ks_backend *be = A->be;
    const ks_int n = A->nrows;
    const int tpr = wk->tpr;
    const unsigned nb = red_blocks((long long)n * tpr);
    cudaStream_t st = ks_cu_stream(be);
#define SPEC_STEP(T)                                                                          \
    spec_step<T, LZ><<<nb, KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->colind, A->val, wk->dsc, pre, \
                                                 u, xo, y, wk->part, wk->st, step, iters)
    switch (tpr) {
    case 32: SPEC_STEP(32); break;
    case 8: SPEC_STEP(8); break;
    case 4: SPEC_STEP(4); break;
    default: SPEC_STEP(1);
    }
#undef SPEC_STEP
    KS_CUDA_LAUNCH_CHECK("spec_step");
    return KS_OK;
}

/* Lanes a row for mean row length m. Short rows get a thread each: at
 * 7-point 256^3 (H100) a step took 1.64 ms with 8 lanes a row, and the
 * level-0 smoother setup 32.5 ms with 8 lanes, 22.5 with 4, 17.3 with
 * one (the group's shuffles and its lane-0 tail cost more than the
 * strided loads save), and one thread sums like the cpu, bit for bit. */
int spec_lanes(const ks_sparse *A)
{
    const double m = A->nrows ? (double)A->nnz / A->nrows : 0.0;
    return m >= 24.0 ? 32 : m >= 12.0 ? 8 : 1;
}

/* spectral.c's lanczos(), launched whole (the device stops it where the
 * cpu would): vec[0] holds the start. Step k reads u (the start, then the
 * last w), writes v = u / scal and the new w; the four vectors rotate so
 * that nothing a step reads is overwritten. */
ks_error lanczos(const ks_sparse *A, spec_work *wk, int iters, double sign)
{
    ks_backend *be = A->be;
    const ks_int n = A->nrows;
    double *b[4];
    for (int q = 0; q < 4; q++)
        b[q] = wk->vec + (size_t)q * n;
    double *u = b[0], *vprev = NULL, *fa = b[1], *fb = b[2], *spare = b[3];
    for (int k = 0; k < iters; k++) {
        double *v = fa, *w = fb;
        KS_TRY(spec_spmv<true>(A, wk, sign, u, v, w, k, iters));
        spec_update<<<red_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(n, v, vprev, w, wk->part,
                                                                        wk->st, k, iters);
        KS_CUDA_LAUNCH_CHECK("spec_update");
        /* next: u = w, vprev = v; this step's u and vprev become free */
        fa = u;
        fb = vprev ? vprev : spare;
        u = w;
        vprev = v;
    }
    return KS_OK;
}

/* spectral.c's power(), launched whole: vec[0] holds the start, and the
 * steps alternate between the two vectors. */
ks_error power(const ks_sparse *A, spec_work *wk, int iters)
{
    const ks_int n = A->nrows;
    double *x = wk->vec, *y = wk->vec + n;
    for (int k = 0; k < iters; k++) {
        KS_TRY(spec_spmv<false>(A, wk, 1.0, x, NULL, y, k, iters));
        double *t = x;
        x = y;
        y = t;
    }
    return KS_OK;
}

/* Everything after the checks (work allocated by the caller, who frees).
 * *finite = 0 when the first step's sum is not finite: A has a non-finite
 * value (the step's SpMV meets every value, and Inf or NaN times any
 * factor, a zero of the start vector or of |D|^-1/2 included, stays Inf
 * or NaN, so the step's sum w.v or |y|^2 is Inf or NaN) or
 * the iteration overflowed; the caller then checks A's values. */
ks_error spectral_run(const ks_sparse *A, int iters, int known_sym, spec_work *wk, double *rho,
                      int *finite, int *exact)
{
    static const char who[] = "ks_amg_spectral_radius_dinv_a";
    ks_backend *be = A->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int n = A->nrows;
    unsigned long long *ul = (unsigned long long *)(wk->flags + kFlagInts);
    /* diagonal and symmetry in a row, one wait for both: the symmetry pass
     * is wasted only for a diagonal of both signs (the cpu skips it then).
     * known_sym (a Galerkin product of an exactly symmetric matrix) skips
     * that pass, a search for each strictly upper entry: most of a coarse
     * level's checking. */
    KS_CUDA_CHECK(cudaMemsetAsync(wk->flags, 0, kFlagBytes, st));
    KS_TRY(ks_amg_cu_fill_int(be, wk->flags, 1, n));
    KS_CUDA_CHECK(cudaMemsetAsync(wk->st, 0, sizeof(spec_state), st));
    SPEC_LAUNCH(spec_diagonal, n, A->rowptr, A->colind, A->val, wk->dsc, wk->flags);
    if (!known_sym) {
        const unsigned sb = ks_cu_blocks((long long)n * wk->tpr);
        switch (wk->tpr) {
#define SPEC_SYM(T)                                                                           \
    case T:                                                                                   \
        spec_symmetry<T><<<sb, KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->colind, A->val, wk->dsc, \
                                                     wk->flags, ul);                          \
        break;
            SPEC_SYM(32)
            SPEC_SYM(8)
            SPEC_SYM(4)
            SPEC_SYM(1)
#undef SPEC_SYM
        }
        KS_CUDA_LAUNCH_CHECK("spec_symmetry");
    }
    struct {
        int f[kFlagInts];
        unsigned long long ul[2];
    } h;
    static_assert(sizeof h == kFlagBytes, "flag layout");
    KS_TRY(be->ops->download(be, &h, wk->flags, sizeof h));
    if (h.f[0] < n) {
        double d;
        int stored;
        KS_TRY(ks_amg_cu_row_diagonal(A, h.f[0], &d, &stored));
        return ks_seterr(KS_ERR_NUMERIC, "%s: row %" PRId32 " has a %s diagonal (D^-1 A "
                         "undefined)", who, (ks_int)h.f[0], stored ? "zero" : "missing");
    }
    const int npos = h.f[1], nneg = h.f[2];
    const int symmetric = !(npos && nneg) && (known_sym || (!h.f[3] && h.ul[0] == h.ul[1]));
    *exact = !known_sym && symmetric && !h.f[4];
    spec_scaling<<<red_blocks(n), KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->val, symmetric, wk->dsc,
                                                        wk->vec, wk->part, wk->st);
    KS_CUDA_LAUNCH_CHECK("spec_scaling");
    if (symmetric)
        KS_TRY(lanczos(A, wk, iters, nneg ? -1.0 : 1.0));
    else
        KS_TRY(power(A, wk, iters));
    /* the one wait of the iteration: its history and, right after it, its
     * state, in one download */
    spec_state hs;
    const size_t hbytes = 2 * (size_t)iters * sizeof(double);
    double *hist = (double *)ks_malloc(hbytes + sizeof hs, "spectral history");
    if (!hist)
        return KS_ERR_MEMORY;
    ks_error e = be->ops->download(be, hist, wk->part + kRedBlocks, hbytes + sizeof hs);
    if (e != KS_OK) {
        free(hist);
        return e;
    }
    memcpy(&hs, (const char *)hist + hbytes, sizeof hs);
    *finite = hs.m < 1 || isfinite(hist[0]);
    double est;
    if (symmetric) {
        est = ks_spectral_tridiag_max_abs(hist, hist + iters, hs.m);
    } else {
        /* the cpu's bookkeeping on the |y|^2 of the steps taken */
        double nx = sqrt(hs.x2), logsum = 0.0;
        int kept = 0, first_kept = iters - (iters + 1) / 2;
        est = -1.0;
        for (int k = 0; k < hs.m && est < 0.0; k++) {
            const double ny = sqrt(hist[k]);
            if (!(ny > 0.0)) {
                est = 0.0; /* x in the null space; the floor below applies */
                break;
            }
            if (k >= first_kept) {
                logsum += log(ny / nx);
                kept++;
            }
            nx = 1.0;
        }
        if (est < 0.0)
            est = KS_SPEC_POWER_SAFETY * exp(logsum / kept);
    }
    free(hist);
    double bound; /* ||D^-1 A||_inf >= rho: a max, the cpu's value exactly */
    memcpy(&bound, &hs.bound_bits, sizeof bound);
    est = fmin(est, bound);
    *rho = fmax(est, 1.0);
    return KS_OK;
}

/* A's rows by ks_amg_cu_first_bad_row(flags); a bad one is described by
 * ks_csr_validate on a host copy. */
ks_error rows_check(const ks_sparse *A, unsigned flags)
{
    static const char who[] = "ks_amg_spectral_radius_dinv_a";
    ks_int bad = 0;
    KS_TRY(ks_amg_cu_first_bad_row(A, flags, &bad));
    if (bad == A->nrows)
        return KS_OK;
    ks_csr H;
    KS_TRY(ks_sparse_to_csr(A, &H));
    ks_error e = ks_csr_validate(&H);
    ks_csr_free(&H);
    if (e != KS_OK)
        return ks_adderr(e, "%s", who);
    return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 " of the device matrix is malformed", who,
                     bad);
}

} // namespace

extern "C" ks_error ks_amg_cuda_spectral_radius(const ks_sparse *A, int iters, int known_sym,
                                                double *rho, int *exact)
{
    static const char who[] = "ks_amg_spectral_radius_dinv_a";
    int same = 0;
    if (exact)
        *exact = 0;
    if (!A || !rho)
        return ks_seterr(KS_ERR_ARG, "%s: NULL %s", who, !A ? "matrix" : "output");
    if (iters < 1)
        return ks_seterr(KS_ERR_ARG, "%s: %d iterations (expected at least 1)", who, iters);
    /* ks_csr_validate's rules: host-side ones here, the rows on the device;
     * any failure is described by ks_csr_validate itself on a host copy */
    int host_bad = A->nrows < 0 || A->ncols < 0 || A->nnz < 0 || !A->rowptr;
    if (!host_bad && A->nnz > 0 && (!A->colind || !A->val))
        return ks_seterr(KS_ERR_ARG, "%s: invalid CSR: colind or val is NULL with nnz = %" PRId32,
                         who, A->nnz);
    if (host_bad)
        return ks_seterr(KS_ERR_ARG, "%s: invalid CSR: negative size or no row pointers", who);
    /* a structure the library made or checked (valid) has its values
     * checked only where the estimate meets a non-finite number: the sums
     * of the first step see every value (see spectral_run) */
    KS_TRY(rows_check(A, A->valid ? KS_CU_ROWS_SORTED : KS_CU_ROWS_SORTED | KS_CU_ROWS_FINITE));
    if (A->nrows != A->ncols || A->nrows == 0)
        return ks_seterr(A->nrows ? KS_ERR_SIZE : KS_ERR_ARG, "%s: matrix is %" PRId32 " x %"
                         PRId32 " (expected square, nonempty)", who, A->nrows, A->ncols);
    ks_backend *be = A->be;
    const ks_int n = A->nrows;
    spec_work wk;
    memset(&wk, 0, sizeof wk);
    wk.tpr = spec_lanes(A);
    ks_error e = ks_be_alloc(be, (size_t)n * sizeof(double), (void **)&wk.dsc, "diagonal");
    if (e == KS_OK)
        e = ks_be_alloc(be, 4 * (size_t)n * sizeof(double), (void **)&wk.vec, "spectral vectors");
    /* the state right after the history: one download at the end */
    if (e == KS_OK)
        e = ks_be_alloc(be, (kRedBlocks + 2 * (size_t)iters) * sizeof(double) + sizeof(spec_state),
                        (void **)&wk.part, "spectral sums and state");
    if (e == KS_OK)
        wk.st = (spec_state *)(wk.part + kRedBlocks + 2 * (size_t)iters);
    if (e == KS_OK)
        e = ks_be_alloc(be, kFlagBytes, (void **)&wk.flags, "spectral flags");
    int finite = 1;
    if (e == KS_OK)
        e = spectral_run(A, iters, known_sym, &wk, rho, &finite, &same);
    void *dev[] = {wk.dsc, wk.vec, wk.part, wk.flags};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        if (dev[i])
            be->ops->free(be, dev[i]);
    /* a bad diagonal or a non-finite sum: a non-finite value, if A has one,
     * is the error the full check would have given first */
    if (A->valid && (e == KS_ERR_NUMERIC || !finite))
        KS_TRY(rows_check(A, KS_CU_ROWS_FINITE));
    if (e == KS_OK && exact)
        *exact = same;
    return e;
}
