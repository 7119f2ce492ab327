/* Estimate of rho(D^-1 A) for the smoothed-aggregation Jacobi damping.
 *
 * When A is symmetric (to rounding, as Galerkin products are) and its
 * diagonal has one sign, D^-1 A is similar to the symmetric
 * B = |D|^-1/2 A |D|^-1/2 (times that sign), and `iters` Lanczos steps on B
 * give the answer as the largest |Ritz value|: Ritz values lie inside the
 * spectrum, so the estimate is slightly low (20 steps: -0.2% on a 1D
 * Laplacian n = 100, -0.5% on 2D 32^2, -1.1% on 3D 16^3 with 15 steps) but
 * converges much faster than the power method would. Callers that need a
 * safe upper bound (Chebyshev) should add their own margin. No
 * reorthogonalization: lost orthogonality only repeats converged Ritz values.
 *
 * Otherwise the power method on D^-1 A is used; its growth rate over the
 * last half of the steps, times 1.05, gives an upper-ish estimate, capped by
 * the bound ||D^-1 A||_inf (which caps the Lanczos value too).
 *
 * Either way the result is at least 1: D^-1 A has a unit diagonal, so its
 * eigenvalues average 1. The start vector is a hash of the row index, and
 * dot products sum fixed blocks in a fixed order, so the estimate does not
 * depend on the thread count. */
#include "amg_cpu.h"
#include "../spectral_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define KS_SPEC_BLOCK 4096     /* rows per partial sum of a dot product */
#define KS_SPEC_PAR_ROWS 4096  /* below this many rows loops stay serial */

typedef struct spec_ctx {
    const ks_csr *A;
    ks_int n;
    double *dsc;     /* |a_ii|^-1/2 (Lanczos) or 1/a_ii (power) */
    double *aval;    /* Lanczos: a_ij * dsc[j] per entry, formed once, so each
                      * step gathers only x (the same products as forming
                      * them in every step: results are bit for bit equal) */
    double sign;     /* common sign of the diagonal (Lanczos) */
    double *partial; /* one slot per dot-product block */
    ks_int nblocks;
} spec_ctx;

static ks_int find_entry(const ks_csr *A, ks_int i, ks_int j)
{
    ks_int lo = A->rowptr[i], hi = A->rowptr[i + 1];
    while (lo < hi) {
        ks_int mid = lo + (hi - lo) / 2;
        if (A->colind[mid] < j)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < A->rowptr[i + 1] && A->colind[lo] == j ? lo : -1;
}

/* Thread-count independent dot product: fixed blocks, summed in order. */
static double dot(spec_ctx *c, const double *x, const double *y)
{
    const ks_int n = c->n, nb = c->nblocks;
#pragma omp parallel for schedule(static) if (n > KS_SPEC_PAR_ROWS)
    for (ks_int b = 0; b < nb; b++) {
        ks_int lo = b * KS_SPEC_BLOCK, hi = lo + KS_SPEC_BLOCK < n ? lo + KS_SPEC_BLOCK : n;
        double s = 0.0;
        for (ks_int i = lo; i < hi; i++)
            s += x[i] * y[i];
        c->partial[b] = s;
    }
    double s = 0.0;
    for (ks_int b = 0; b < nb; b++)
        s += c->partial[b];
    return s;
}

/* y = D^-1 A x (power method). */
static void apply(spec_ctx *c, const double *x, double *y)
{
    const ks_csr *A = c->A;
    const ks_int n = c->n;
    const double *d = c->dsc;
#pragma omp parallel for schedule(static) if (n > KS_SPEC_PAR_ROWS)
    for (ks_int i = 0; i < n; i++) {
        double s = 0.0;
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            s += A->val[k] * x[A->colind[k]];
        y[i] = d[i] * s;
    }
}

/* Symmetric to rounding: every strictly upper entry has a matching lower
 * one, and there are as many lower as upper entries (so the match is a
 * bijection and no lower entry lacks a partner). d = the diagonal.
 * *exact = 1 when moreover every pair is equal bit for bit. */
static int is_symmetric(const ks_csr *A, const double *d, int *exact)
{
    const ks_int n = A->nrows;
    int sym = 1, same = 1;
    int64_t upper = 0, lower = 0;
#pragma omp parallel for schedule(static) reduction(&& : sym, same) \
    reduction(+ : upper, lower) if (n > KS_SPEC_PAR_ROWS)
    for (ks_int i = 0; i < n; i++) {
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            ks_int j = A->colind[k];
            if (j < i) {
                lower++;
                continue;
            }
            if (j == i || !sym)
                continue;
            upper++;
            ks_int kt = find_entry(A, j, i);
            if (kt < 0 || fabs(A->val[k] - A->val[kt]) > KS_SPEC_SYM_TOL * sqrt(fabs(d[i] * d[j])))
                sym = 0;
            else if (A->val[k] != A->val[kt])
                same = 0;
        }
    }
    sym = sym && upper == lower;
    *exact = sym && same;
    return sym;
}

/* Number of eigenvalues of the symmetric tridiagonal T (diagonal a, off-
 * diagonal b) below x, from the signs of the LDL^T pivots (Sturm). */
static int sturm_count(const double *a, const double *b, int m, double x)
{
    int cnt = 0;
    double q = 1.0;
    for (int i = 0; i < m; i++) {
        double off = i > 0 ? b[i - 1] * b[i - 1] : 0.0;
        q = a[i] - x - (i > 0 ? off / q : 0.0);
        if (q == 0.0)
            q = -1e-300; /* x is (to rounding) an eigenvalue: count it below */
        cnt += q < 0.0;
    }
    return cnt;
}

/* Largest |eigenvalue| of T by bisection on its two extreme eigenvalues
 * (spectral_common.h; the cuda estimate calls it too). */
double ks_spectral_tridiag_max_abs(const double *a, const double *b, int m)
{
    double lo = a[0], hi = a[0];
    for (int i = 0; i < m; i++) {
        double r = (i > 0 ? fabs(b[i - 1]) : 0.0) + (i + 1 < m ? fabs(b[i]) : 0.0);
        lo = fmin(lo, a[i] - r);
        hi = fmax(hi, a[i] + r);
    }
    double ext[2];
    for (int which = 0; which < 2; which++) {
        double l = lo, h = hi;
        for (int it = 0; it < 200 && h - l > 1e-15 * fmax(fabs(l), fabs(h)); it++) {
            double mid = 0.5 * (l + h);
            int below = sturm_count(a, b, m, mid);
            /* largest: all m below mid -> it is under mid; smallest: any below */
            if (which == 0 ? below == m : below >= 1)
                h = mid;
            else
                l = mid;
        }
        ext[which] = 0.5 * (l + h);
    }
    return fmax(fabs(ext[0]), fabs(ext[1]));
}

/* Lanczos steps on B = sign |D|^-1/2 A |D|^-1/2. Step pieces are fused with the dot product that follows them: each
 * block of rows is updated and then summed in the same order as a separate
 * dot() would, so the result is bit for bit the unfused one with one pass
 * over the vectors less. */
static double apply_dot(spec_ctx *c, const double *v, double *w)
{
    const ks_csr *A = c->A;
    const ks_int n = c->n, nb = c->nblocks;
    const double *d = c->dsc;
#pragma omp parallel for schedule(static) if (n > KS_SPEC_PAR_ROWS)
    for (ks_int b = 0; b < nb; b++) {
        ks_int lo = b * KS_SPEC_BLOCK, hi = lo + KS_SPEC_BLOCK < n ? lo + KS_SPEC_BLOCK : n;
        for (ks_int i = lo; i < hi; i++) {
            double s = 0.0;
            for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
                s += c->aval[k] * v[A->colind[k]];
            w[i] = c->sign * d[i] * s;
        }
        double s = 0.0;
        for (ks_int i = lo; i < hi; i++)
            s += w[i] * v[i];
        c->partial[b] = s;
    }
    double s = 0.0;
    for (ks_int b = 0; b < nb; b++)
        s += c->partial[b];
    return s;
}

/* w -= a v + bprev vprev, then return w.w */
static double update_norm2(spec_ctx *c, double a, const double *v, double bprev,
                           const double *vprev, double *w)
{
    const ks_int n = c->n, nb = c->nblocks;
#pragma omp parallel for schedule(static) if (n > KS_SPEC_PAR_ROWS)
    for (ks_int b = 0; b < nb; b++) {
        ks_int lo = b * KS_SPEC_BLOCK, hi = lo + KS_SPEC_BLOCK < n ? lo + KS_SPEC_BLOCK : n;
        double s = 0.0;
        for (ks_int i = lo; i < hi; i++) {
            w[i] -= a * v[i] + bprev * vprev[i];
            s += w[i] * w[i];
        }
        c->partial[b] = s;
    }
    double s = 0.0;
    for (ks_int b = 0; b < nb; b++)
        s += c->partial[b];
    return s;
}

static double lanczos(spec_ctx *c, int iters, double *v, double *vprev, double *w,
                      double *alpha, double *beta)
{
    const ks_int n = c->n;
    double nrm = sqrt(dot(c, v, v));
    for (ks_int i = 0; i < n; i++) {
        v[i] /= nrm;
        vprev[i] = 0.0;
    }
    int m = 0;
    double bprev = 0.0;
    for (int k = 0; k < iters; k++) {
        double a = apply_dot(c, v, w);
        alpha[m++] = a;
        double b = sqrt(update_norm2(c, a, v, bprev, vprev, w));
        /* b ~ 0: the Krylov space is invariant, T's eigenvalues are exact */
        if (k + 1 == iters || !(b > KS_SPEC_BREAKDOWN * (fabs(a) + bprev)))
            break;
        beta[m - 1] = b;
        /* the old v becomes vprev by swapping arrays instead of copying */
        double *t = vprev;
        vprev = v;
        v = t;
#pragma omp parallel for schedule(static) if (n > KS_SPEC_PAR_ROWS)
        for (ks_int i = 0; i < n; i++)
            v[i] = w[i] / b;
        bprev = b;
    }
    return ks_spectral_tridiag_max_abs(alpha, beta, m);
}

static double power(spec_ctx *c, int iters, double *x, double *y)
{
    const ks_int n = c->n;
    double nx = sqrt(dot(c, x, x)), logsum = 0.0;
    int kept = 0, first_kept = iters - (iters + 1) / 2;
    for (int k = 0; k < iters; k++) {
        apply(c, x, y);
        double ny = sqrt(dot(c, y, y));
        if (!(ny > 0.0))
            return 0.0; /* x in the null space; the caller's floor applies */
        if (k >= first_kept) {
            logsum += log(ny / nx);
            kept++;
        }
#pragma omp parallel for schedule(static) if (n > KS_SPEC_PAR_ROWS)
        for (ks_int i = 0; i < n; i++)
            x[i] = y[i] / ny;
        nx = 1.0;
    }
    return KS_SPEC_POWER_SAFETY * exp(logsum / kept);
}

ks_error ks_amg_spectral_radius_dinv_a(const ks_csr *A, int iters, double *rho)
{
    return ks_amg_spectral_radius_sym(A, iters, 0, rho, NULL);
}

ks_error ks_amg_spectral_radius_sym(const ks_csr *A, int iters, int known_sym, double *rho,
                                    int *exact)
{
    if (exact)
        *exact = 0;
    if (!A || !rho)
        return ks_seterr(KS_ERR_ARG, "ks_amg_spectral_radius_dinv_a: NULL %s",
                         !A ? "matrix" : "output");
    if (iters < 1)
        return ks_seterr(KS_ERR_ARG, "ks_amg_spectral_radius_dinv_a: %d iterations "
                         "(expected at least 1)", iters);
    ks_error e = ks_csr_validate(A);
    if (e != KS_OK)
        return ks_adderr(e, "ks_amg_spectral_radius_dinv_a");
    if (A->nrows != A->ncols || A->nrows == 0)
        return ks_seterr(A->nrows ? KS_ERR_SIZE : KS_ERR_ARG, "ks_amg_spectral_radius_dinv_a: "
                         "matrix is %" PRId32 " x %" PRId32 " (expected square, nonempty)",
                         A->nrows, A->ncols);
    const ks_int n = A->nrows;
    double *diag = ks_malloc((size_t)n * sizeof *diag, "diagonal");
    if (!diag)
        return KS_ERR_MEMORY;
    int npos = 0, nneg = 0;
    ks_int bad = n; /* first row with a zero or missing diagonal */
#pragma omp parallel for schedule(static) reduction(min : bad) reduction(+ : npos, nneg) \
    if (n > KS_SPEC_PAR_ROWS)
    for (ks_int i = 0; i < n; i++) {
        ks_int k = find_entry(A, i, i);
        double d = k >= 0 ? A->val[k] : 0.0;
        if (d == 0.0 && i < bad)
            bad = i;
        diag[i] = d;
        npos += d > 0.0;
        nneg += d < 0.0;
    }
    if (bad < n) {
        int missing = find_entry(A, bad, bad) < 0;
        free(diag);
        return ks_seterr(KS_ERR_NUMERIC, "ks_amg_spectral_radius_dinv_a: row %" PRId32
                         " has a %s diagonal (D^-1 A undefined)", bad,
                         missing ? "missing" : "zero");
    }
    spec_ctx c = {.A = A, .n = n, .sign = nneg ? -1.0 : 1.0,
                  .nblocks = (n + KS_SPEC_BLOCK - 1) / KS_SPEC_BLOCK};
    /* a Galerkin product of an exactly symmetric matrix is symmetric to
     * rounding: the test (a search a strictly upper entry) is skipped */
    int same = 0;
    int symmetric = !(npos && nneg) && (known_sym || is_symmetric(A, diag, &same));
    if (exact)
        *exact = !known_sym && symmetric && same;
    c.dsc = diag; /* overwritten in place with the scaling below */
    c.partial = ks_malloc((size_t)c.nblocks * sizeof *c.partial, "spectral partial sums");
    double *v = ks_malloc(3 * (size_t)n * sizeof *v, "spectral vectors");
    double *tri = ks_malloc(2 * (size_t)iters * sizeof *tri, "Lanczos tridiagonal");
    if (!c.partial || !v || !tri) {
        free(diag);
        free(c.partial);
        free(v);
        free(tri);
        return KS_ERR_MEMORY;
    }
    double bound = 0.0; /* ||D^-1 A||_inf >= rho (max is exact: order-free) */
#pragma omp parallel for schedule(static) reduction(max : bound) if (n > KS_SPEC_PAR_ROWS)
    for (ks_int i = 0; i < n; i++) {
        double d = diag[i], r = 0.0;
        c.dsc[i] = symmetric ? 1.0 / sqrt(fabs(d)) : 1.0 / d;
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            r += fabs(A->val[k]);
        bound = fmax(bound, r / fabs(d));
        v[i] = ks_spectral_start((uint64_t)i);
    }
    if (symmetric) {
        c.aval = ks_malloc((size_t)A->nnz * sizeof *c.aval + 1, "Lanczos scaled values");
        if (!c.aval) {
            free(c.dsc);
            free(c.partial);
            free(v);
            free(tri);
            return KS_ERR_MEMORY;
        }
#pragma omp parallel for schedule(static) if (n > KS_SPEC_PAR_ROWS)
        for (ks_int i = 0; i < n; i++)
            for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
                c.aval[k] = A->val[k] * c.dsc[A->colind[k]];
    }
    double est = symmetric ? lanczos(&c, iters, v, v + n, v + 2 * (size_t)n, tri, tri + iters)
                           : power(&c, iters, v, v + n);
    est = fmin(est, bound);
    free(c.dsc);
    free(c.aval);
    free(c.partial);
    free(v);
    free(tri);
    *rho = fmax(est, 1.0);
    return KS_OK;
}
