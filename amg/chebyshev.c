/* Chebyshev polynomial smoother on D^-1 A over [lmin, lmax] (Saad,
 * "Iterative Methods", Alg. 12.1, with the Jacobi preconditioner). One
 * step of degree m applies x <- x + p(D^-1 A) D^-1 (b - A x) where
 * 1 - t p(t) is the scaled Chebyshev polynomial of degree m that is smallest
 * on the interval: high-frequency error (large eigenvalues of D^-1 A) is
 * damped, low frequencies are left to the coarse grid. The error propagator
 * is a polynomial in D^-1 A, hence self-adjoint in the A inner product for
 * symmetric A: pre and post smoothing are the same and PCG sees a symmetric
 * cycle. Costs m SpMVs (m - 1 when x = 0 on entry), all on the backend. */
#include "hierarchy.h"
#include "../vec/vec_fused.h"

ks_error ks_amg_chebyshev(ks_amg *amg, int l, const ks_vec *b, ks_vec *x, int x_zero)
{
    ks_amg_level *L = &amg->levels[l];
    int degree = amg->prm.smoother.chebyshev_degree;
    if (degree < 1)
        degree = 1;
    const double theta = 0.5 * (L->lmax + L->lmin); /* interval centre */
    const double delta = 0.5 * (L->lmax - L->lmin); /* half width */
    ks_vec *r = L->r, *d = L->d;

    /* r = b - A x, d = D^-1 r / theta, x += d */
    if (x_zero) {
        KS_TRY(ks_vec_copy(b, r));
    } else {
        KS_TRY(ks_amg_residual(amg, l, b, x, r));
    }
    KS_TRY(ks_vec_smooth_update(0.0, d, 1.0 / theta, L->dinv, r, x, x_zero));
    if (delta <= 0.0) /* degenerate interval: the first step is all there is */
        return KS_OK;

    const double sigma = theta / delta;
    double rho = 1.0 / sigma;
    for (int k = 1; k < degree; k++) {
        /* r -= A d keeps r = b - A x without a copy of b. */
        KS_TRY(ks_matrix_apply(L->Am, -1.0, d, 1.0, r));
        double rho_new = 1.0 / (2.0 * sigma - rho);
        /* d = rho_new rho d + (2 rho_new / delta) D^-1 r; x += d (one pass) */
        KS_TRY(ks_vec_smooth_update(rho_new * rho, d, 2.0 * rho_new / delta, L->dinv, r, x, 0));
        rho = rho_new;
    }
    return KS_OK;
}
