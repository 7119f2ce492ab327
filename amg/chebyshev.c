/* Chebyshev polynomial smoother on D^-1 A over [lmin, lmax] (Saad,
 * "Iterative Methods", Alg. 12.1, with the Jacobi preconditioner). One
 * step of degree m applies x <- x + p(D^-1 A) D^-1 (b - A x) where
 * 1 - t p(t) is the scaled Chebyshev polynomial of degree m that is smallest
 * on the interval: high-frequency error (large eigenvalues of D^-1 A) is
 * damped, low frequencies are left to the coarse grid. The error propagator
 * is a polynomial in D^-1 A, hence self-adjoint in the A inner product for
 * symmetric A: pre and post smoothing are the same and PCG sees a symmetric
 * cycle.
 * Each of the m inner steps is d = a d + c D^-1 (b - A x), x += d, written
 * in three-term form x_new = x + c D^-1 (b - A x) + a (x - x_old) (d is the
 * difference of the last two iterates), so it is one fused pass of the
 * matrix that stores neither d nor the residual: m passes in all (m - 1
 * when x = 0 on entry, where the first step is also folded into the
 * second's pass: ks_amg_jacobi_two_from_zero). */
#include "hierarchy.h"

int ks_amg_chebyshev_steps(const ks_amg *amg, int l)
{
    const ks_amg_level *L = &amg->levels[l];
    int degree = amg->prm.smoother.chebyshev_degree;
    /* degenerate interval: the first step is all there is */
    return degree < 1 || L->lmax - L->lmin <= 0.0 ? 1 : degree;
}

ks_error ks_amg_chebyshev(ks_amg *amg, int l, const ks_vec *b, ks_amg_xbuf *xb, int x_zero)
{
    ks_amg_level *L = &amg->levels[l];
    const int steps = ks_amg_chebyshev_steps(amg, l);
    const double theta = 0.5 * (L->lmax + L->lmin); /* interval centre */
    const double delta = 0.5 * (L->lmax - L->lmin); /* half width */

    const double sigma = steps > 1 ? theta / delta : 0.0;
    double rho = steps > 1 ? 1.0 / sigma : 0.0;
    for (int k = 0; k < steps; k++) {
        if (k == 0 && x_zero && steps > 1) {
            /* from zero the first two steps are one pass; x1 is stored only
             * when a third step needs it as x_old */
            const double rho_new = 1.0 / (2.0 * sigma - rho);
            KS_TRY(ks_amg_jacobi_two_from_zero(amg, l, b, xb, 1.0 / theta, rho_new * rho,
                                               2.0 * rho_new / delta, steps > 2));
            rho = rho_new;
            k++;
            continue;
        }
        if (k == 0) { /* x += D^-1 (b - A x) / theta */
            KS_TRY(ks_amg_jacobi_step(amg, l, b, xb, 0.0, 1.0 / theta, x_zero, 0));
            continue;
        }
        const double rho_new = 1.0 / (2.0 * sigma - rho);
        /* d = rho_new rho d + (2 rho_new / delta) D^-1 (b - A x); x += d,
         * with d = x - x_old (x_old = 0 after a start from zero) */
        KS_TRY(ks_amg_jacobi_step(amg, l, b, xb, rho_new * rho, 2.0 * rho_new / delta, 0,
                                  k == 1 && x_zero));
        rho = rho_new;
    }
    return KS_OK;
}
