/* rho(D^-1 A) on the device: the estimate of amg/cpu/spectral.c (its
 * comment explains the method), step for step.
 *
 *   checks     A valid (structure, sorted unique columns, finite values:
 *              ks_csr_validate's rules; its message on a host copy when
 *              the device finds a bad row), square and nonempty, every
 *              diagonal stored and nonzero (the first bad row named).
 *   choice     Lanczos on sign |D|^-1/2 A |D|^-1/2 when the diagonal has
 *              one sign and A is symmetric to KS_SPEC_SYM_TOL (the cpu's
 *              test, with integer counts of upper and lower entries), else
 *              the power method on D^-1 A; the bound ||D^-1 A||_inf (a
 *              max, exact in any order) caps both, and the result is at
 *              least 1.
 *   steps      the same start vector (ks_spectral_start), the same
 *              recurrences and stopping rules, the tridiagonal's
 *              eigenvalue by the cpu's own function on the host.
 *
 * The dot products are the backend's (deterministic, but summed in
 * another order than the cpu's blocks), so the estimate agrees with the
 * cpu's to rounding only (test_amg_cuda allows 1e-10 relative). Its SpMVs
 * therefore use several lanes a row where rows are long (a row's partial
 * sums meet by shuffles), which made the estimate of a 45-entries-a-row
 * level several times faster than one thread a row; rows of fewer than
 * three entries keep one thread, summing in column order with
 * __dmul_rn / __dadd_rn like the cpu. */
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
 * diagonals counted, [3] set when an upper entry has no matching lower one. */
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
 * partner within the tolerance (else flags[3] = 1), and ul[0] (upper) ==
 * ul[1] (lower) entries. */
__global__ void spec_symmetry(ks_int n, const ks_int *__restrict__ rp,
                              const ks_int *__restrict__ ci, const double *__restrict__ val,
                              const double *__restrict__ d, int *flags, unsigned long long *ul)
{
    unsigned long long upper = 0, lower = 0;
    int asym = 0;
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++) {
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
        }
    }
    if (asym)
        atomicExch(&flags[3], 1);
    ks_cu_warp_add_u64(&ul[0], upper);
    ks_cu_warp_add_u64(&ul[1], lower);
}

/* dsc[i] (in place of the diagonal): |a_ii|^-1/2 (Lanczos) or 1/a_ii
 * (power); rb[i] = sum_j |a_ij| / |a_ii| (the bound's rows); v = start. */
__global__ void spec_scaling(ks_int n, const ks_int *__restrict__ rp,
                             const double *__restrict__ val, int symmetric, double *dsc,
                             double *__restrict__ rb, double *__restrict__ v)
{
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        const double d = dsc[i];
        double r = 0.0;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++)
            r += fabs(val[k]);
        dsc[i] = symmetric ? 1.0 / sqrt(fabs(d)) : 1.0 / d;
        rb[i] = r / fabs(d);
        v[i] = ks_spectral_start((uint64_t)i);
    }
}

/* Lanczos: aval[k] = a_ij * dsc[j], formed once. */
__global__ void spec_scale_values(ks_int n, const ks_int *__restrict__ rp,
                                  const ks_int *__restrict__ ci, const double *__restrict__ val,
                                  const double *__restrict__ dsc, double *__restrict__ aval)
{
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++)
            aval[k] = __dmul_rn(val[k], dsc[ci[k]]);
    }
}

/* y[i] = (pre * rs[i]) * sum_k av[k] x[col k], the sum in column order:
 * Lanczos w = sign dsc (aval v) with pre = sign, power y = dinv (A x) with
 * pre = 1 (1 * d is d exactly). */
__global__ void spec_apply(ks_int n, const ks_int *__restrict__ rp, const ks_int *__restrict__ ci,
                           const double *__restrict__ av, const double *__restrict__ rs,
                           double pre, const double *__restrict__ x, double *__restrict__ y)
{
    KS_CU_FOR(t, n)
    {
        const ks_int i = (ks_int)t;
        double s = 0.0;
        for (ks_int k = rp[i]; k < rp[i + 1]; k++)
            s = __dadd_rn(s, __dmul_rn(av[k], x[ci[k]]));
        y[i] = __dmul_rn(__dmul_rn(pre, rs[i]), s);
    }
}

/* spec_apply with TPR lanes a row (TPR divides 32), for longer rows: the
 * lanes' partial sums meet by shuffles, so a row's sum is in another order
 * than the cpu's (the estimate already agrees only to rounding: the dot
 * products differ too). The loop is warp-uniform (every lane runs every
 * round, the shuffles need them all). */
template <int TPR>
__global__ void spec_apply_v(ks_int n, const ks_int *__restrict__ rp,
                             const ks_int *__restrict__ ci, const double *__restrict__ av,
                             const double *__restrict__ rs, double pre,
                             const double *__restrict__ x, double *__restrict__ y)
{
    const long long total = (long long)n * TPR, stride = (long long)gridDim.x * blockDim.x;
    const int lane = threadIdx.x % TPR;
    for (long long base = blockIdx.x * (long long)blockDim.x + (threadIdx.x & ~31);
         base < total; base += stride) {
        const long long t = base + (threadIdx.x & 31);
        const ks_int i = (ks_int)(t / TPR);
        double s = 0.0;
        if (t < total)
            for (ks_int k = rp[i] + lane; k < rp[i + 1]; k += TPR)
                s += av[k] * x[ci[k]];
        for (int off = TPR / 2; off > 0; off >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, off);
        if (t < total && lane == 0)
            y[i] = pre * rs[i] * s;
    }
}

/* w -= a v + bprev vprev (spectral.c's update_norm2 before its sum). */
__global__ void spec_update(ks_int n, double a, const double *__restrict__ v, double bprev,
                            const double *__restrict__ vprev, double *__restrict__ w)
{
    KS_CU_FOR(i, n)
    w[i] = __dsub_rn(w[i], __dadd_rn(__dmul_rn(a, v[i]), __dmul_rn(bprev, vprev[i])));
}

/* y = x / s (y may be x); z, when not NULL, is cleared (the Lanczos
 * start's vprev). */
__global__ void spec_divide(ks_int n, const double *x, double s, double *y, double *z)
{
    KS_CU_FOR(i, n)
    {
        y[i] = x[i] / s;
        if (z)
            z[i] = 0.0;
    }
}

/* ------------------------------------------------------------- the host */

struct spec_work {
    double *dsc, *rb, *v, *aval, *tri; /* tri on the host (alpha, beta) */
    int *flags;
    unsigned long long *ul;
    int tpr; /* lanes a row of the SpMV (1: the cpu's row sums bit for bit) */
};

#define SPEC_LAUNCH(kernel, ...)                                                             \
    do {                                                                                     \
        kernel<<<ks_cu_blocks(n), KS_CU_BLOCK, 0, ks_cu_stream(be)>>>(__VA_ARGS__);          \
        KS_CUDA_LAUNCH_CHECK(#kernel);                                                       \
    } while (0)

ks_error dot(ks_backend *be, ks_int n, const double *x, const double *y, double *r)
{
    return be->ops->dot(be, n, x, y, r);
}

/* y = (pre * rs) .* (av-valued A) x with wk->tpr lanes a row. */
ks_error spec_spmv(const ks_sparse *A, const spec_work *wk, const double *av, double pre,
                   const double *x, double *y)
{
    ks_backend *be = A->be;
    const ks_int n = A->nrows;
    const int tpr = wk->tpr;
    const unsigned nb = ks_cu_blocks((long long)n * tpr);
    cudaStream_t st = ks_cu_stream(be);
    switch (tpr) {
    case 32:
        spec_apply_v<32><<<nb, KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->colind, av, wk->dsc, pre, x, y);
        break;
    case 8:
        spec_apply_v<8><<<nb, KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->colind, av, wk->dsc, pre, x, y);
        break;
    case 4:
        spec_apply_v<4><<<nb, KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->colind, av, wk->dsc, pre, x, y);
        break;
    default:
        spec_apply<<<nb, KS_CU_BLOCK, 0, st>>>(n, A->rowptr, A->colind, av, wk->dsc, pre, x, y);
    }
    KS_CUDA_LAUNCH_CHECK("spec_apply");
    return KS_OK;
}

/* Lanes a row for mean row length m: about one entry a lane. */
int spec_lanes(const ks_sparse *A)
{
    const double m = A->nrows ? (double)A->nnz / A->nrows : 0.0;
    return m >= 24.0 ? 32 : m >= 6.0 ? 8 : m >= 3.0 ? 4 : 1;
}

/* spectral.c's lanczos(): v holds the start, vprev and w scratch. */
ks_error lanczos(const ks_sparse *A, spec_work *wk, int iters, double sign, double *est)
{
    ks_backend *be = A->be;
    const ks_int n = A->nrows;
    double *v = wk->v, *vprev = v + n, *w = v + 2 * (size_t)n;
    double *alpha = wk->tri, *beta = wk->tri + iters;
    double nrm2;
    KS_TRY(dot(be, n, v, v, &nrm2));
    SPEC_LAUNCH(spec_divide, n, v, sqrt(nrm2), v, vprev);
    int m = 0;
    double bprev = 0.0;
    for (int k = 0; k < iters; k++) {
        double a, bb;
        KS_TRY(spec_spmv(A, wk, wk->aval, sign, v, w));
        KS_TRY(dot(be, n, w, v, &a));
        alpha[m++] = a;
        SPEC_LAUNCH(spec_update, n, a, v, bprev, vprev, w);
        KS_TRY(dot(be, n, w, w, &bb));
        const double b = sqrt(bb);
        /* b ~ 0: the Krylov space is invariant, T's eigenvalues are exact */
        if (k + 1 == iters || !(b > KS_SPEC_BREAKDOWN * (fabs(a) + bprev)))
            break;
        beta[m - 1] = b;
        double *t = vprev;
        vprev = v;
        v = t;
        SPEC_LAUNCH(spec_divide, n, w, b, v, (double *)NULL);
        bprev = b;
    }
    *est = ks_spectral_tridiag_max_abs(alpha, beta, m);
    return KS_OK;
}

/* spectral.c's power(): x holds the start, y scratch. */
ks_error power(const ks_sparse *A, spec_work *wk, int iters, double *est)
{
    ks_backend *be = A->be;
    const ks_int n = A->nrows;
    double *x = wk->v, *y = wk->v + n;
    double nx2, logsum = 0.0;
    KS_TRY(dot(be, n, x, x, &nx2));
    double nx = sqrt(nx2);
    int kept = 0, first_kept = iters - (iters + 1) / 2;
    for (int k = 0; k < iters; k++) {
        double ny2;
        KS_TRY(spec_spmv(A, wk, A->val, 1.0, x, y));
        KS_TRY(dot(be, n, y, y, &ny2));
        const double ny = sqrt(ny2);
        if (!(ny > 0.0)) {
            *est = 0.0; /* x in the null space; the caller's floor applies */
            return KS_OK;
        }
        if (k >= first_kept) {
            logsum += log(ny / nx);
            kept++;
        }
        SPEC_LAUNCH(spec_divide, n, y, ny, x, (double *)NULL);
        nx = 1.0;
    }
    *est = KS_SPEC_POWER_SAFETY * exp(logsum / kept);
    return KS_OK;
}

/* Everything after the checks (work allocated by the caller, who frees). */
ks_error spectral_run(const ks_sparse *A, int iters, spec_work *wk, double *rho)
{
    static const char who[] = "ks_amg_spectral_radius_dinv_a";
    ks_backend *be = A->be;
    cudaStream_t st = ks_cu_stream(be);
    const ks_int n = A->nrows;
    int hf[4] = {n, 0, 0, 0};
    unsigned long long hul[2] = {0, 0};
    KS_TRY(be->ops->upload(be, wk->flags, hf, sizeof hf));
    KS_CUDA_CHECK(cudaMemsetAsync(wk->ul, 0, 2 * sizeof(unsigned long long), st));
    SPEC_LAUNCH(spec_diagonal, n, A->rowptr, A->colind, A->val, wk->dsc, wk->flags);
    KS_TRY(be->ops->download(be, hf, wk->flags, sizeof hf));
    if (hf[0] < n) {
        double d;
        int stored;
        KS_TRY(ks_amg_cu_row_diagonal(A, hf[0], &d, &stored));
        return ks_seterr(KS_ERR_NUMERIC, "%s: row %" PRId32 " has a %s diagonal (D^-1 A "
                         "undefined)", who, (ks_int)hf[0], stored ? "zero" : "missing");
    }
    const int npos = hf[1], nneg = hf[2];
    int symmetric = 0;
    if (!(npos && nneg)) {
        SPEC_LAUNCH(spec_symmetry, n, A->rowptr, A->colind, A->val, wk->dsc, wk->flags, wk->ul);
        KS_TRY(be->ops->download(be, hf, wk->flags, sizeof hf));
        KS_TRY(be->ops->download(be, hul, wk->ul, sizeof hul));
        symmetric = !hf[3] && hul[0] == hul[1];
    }
    SPEC_LAUNCH(spec_scaling, n, A->rowptr, A->val, symmetric, wk->dsc, wk->rb, wk->v);
    double bound; /* ||D^-1 A||_inf >= rho: a max, the cpu's value exactly */
    KS_TRY(be->ops->norminf(be, n, wk->rb, &bound));
    double est;
    if (symmetric) {
        KS_TRY(ks_be_alloc(be, (size_t)A->nnz * sizeof(double) + 1, (void **)&wk->aval,
                           "Lanczos scaled values"));
        SPEC_LAUNCH(spec_scale_values, n, A->rowptr, A->colind, A->val, wk->dsc, wk->aval);
        KS_TRY(lanczos(A, wk, iters, nneg ? -1.0 : 1.0, &est));
    } else {
        KS_TRY(power(A, wk, iters, &est));
    }
    est = fmin(est, bound);
    *rho = fmax(est, 1.0);
    return KS_OK;
}

} // namespace

extern "C" ks_error ks_amg_cuda_spectral_radius(const ks_sparse *A, int iters, double *rho)
{
    static const char who[] = "ks_amg_spectral_radius_dinv_a";
    if (!A || !rho)
        return ks_seterr(KS_ERR_ARG, "%s: NULL %s", who, !A ? "matrix" : "output");
    if (iters < 1)
        return ks_seterr(KS_ERR_ARG, "%s: %d iterations (expected at least 1)", who, iters);
    /* ks_csr_validate's rules: host-side ones here, the rows on the device;
     * any failure is described by ks_csr_validate itself on a host copy */
    ks_int bad = 0;
    int host_bad = A->nrows < 0 || A->ncols < 0 || A->nnz < 0 || !A->rowptr;
    if (!host_bad && A->nnz > 0 && (!A->colind || !A->val))
        return ks_seterr(KS_ERR_ARG, "%s: invalid CSR: colind or val is NULL with nnz = %" PRId32,
                         who, A->nnz);
    if (host_bad)
        return ks_seterr(KS_ERR_ARG, "%s: invalid CSR: negative size or no row pointers", who);
    KS_TRY(ks_amg_cu_first_bad_row(A, KS_CU_ROWS_SORTED | KS_CU_ROWS_FINITE, &bad));
    if (bad != A->nrows) {
        ks_csr H;
        KS_TRY(ks_sparse_to_csr(A, &H));
        ks_error e = ks_csr_validate(&H);
        ks_csr_free(&H);
        if (e != KS_OK)
            return ks_adderr(e, "%s", who);
        return ks_seterr(KS_ERR_ARG, "%s: row %" PRId32 " of the device matrix is malformed",
                         who, bad);
    }
    if (A->nrows != A->ncols || A->nrows == 0)
        return ks_seterr(A->nrows ? KS_ERR_SIZE : KS_ERR_ARG, "%s: matrix is %" PRId32 " x %"
                         PRId32 " (expected square, nonempty)", who, A->nrows, A->ncols);
    ks_backend *be = A->be;
    const ks_int n = A->nrows;
    spec_work wk;
    memset(&wk, 0, sizeof wk);
    ks_error e = ks_be_alloc(be, (size_t)n * sizeof(double), (void **)&wk.dsc, "diagonal");
    if (e == KS_OK)
        e = ks_be_alloc(be, (size_t)n * sizeof(double), (void **)&wk.rb, "spectral row bounds");
    if (e == KS_OK)
        e = ks_be_alloc(be, 3 * (size_t)n * sizeof(double), (void **)&wk.v, "spectral vectors");
    if (e == KS_OK)
        e = ks_be_alloc(be, 4 * sizeof(int), (void **)&wk.flags, "spectral flags");
    if (e == KS_OK)
        e = ks_be_alloc(be, 2 * sizeof(unsigned long long), (void **)&wk.ul,
                        "spectral symmetry counts");
    if (e == KS_OK) {
        wk.tri = (double *)ks_malloc(2 * (size_t)iters * sizeof(double), "Lanczos tridiagonal");
        if (!wk.tri)
            e = KS_ERR_MEMORY;
    }
    wk.tpr = spec_lanes(A);
    if (e == KS_OK)
        e = spectral_run(A, iters, &wk, rho);
    void *dev[] = {wk.dsc, wk.rb, wk.v, wk.aval, wk.flags, wk.ul};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        if (dev[i])
            be->ops->free(be, dev[i]);
    free(wk.tri);
    return e;
}
