/* Smoother data of a distributed level. The weights and the Chebyshev
 * interval are amg/smoother.c's (ks_amg_smoother_setup on the level's
 * local block: its diagonal is the row's), with what needs the whole row
 * or the whole operator done here over the ranks:
 *   - dinv is a distributed vector (shaped like the level's rows), made
 *     before, so the smoother's vector updates see one layout;
 *   - JACOBI_L1's row sums add the ghost block's |a_ij|
 *     (ks_matrix_offdiag_abs_sums);
 *   - CHEBYSHEV's rho(D^-1 A) comes from ks_dist_spectral_radius: the
 *     serial estimate's method (Lanczos on |D|^-1/2 A |D|^-1/2 for
 *     symmetric A with a one-signed diagonal, else the power method on
 *     D^-1 A, capped by ||D^-1 A||_inf, at least 1), the same start vector
 *     by global row, with distributed SpMVs and rank-order sums; so the
 *     estimate is the serial one to rounding and the same on every rank.
 *     As serially, the coarse levels of an exactly symmetric level 0 skip
 *     the symmetry check (ks_amg.sym0): at 7-point 256^3 on 2 ranks the
 *     checks' partner lookups were most of the smoother setup.
 * The estimate's row-wise work (the diagonal, its checks, the bound, the
 * scaling and the start vector) is the AMG table's spectral_prepare_blocks
 * and spectral_scale_start (amg/kernels.h), on the level's blocks where
 * they live and into the vectors' arrays: no host copy of the level is
 * made for it on a device. Only the symmetry check (host rows, level 0 as
 * a rule) reads the diagonal on the host. JACOBI_L1's weights are made in
 * host arrays from the diagonal (the same table entry) and the ghost sums
 * and set into the vector. The SpMVs and vector steps run on the backend. */
#include "amg_dist_setup.h"
#include "../amg/spectral_common.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct dspec {
    ks_matrix *A;
    ks_int n;        /* this rank's rows */
    double sign;
    ks_vec *dsc;     /* |a_ii|^-1/2 (Lanczos) or 1/a_ii (power) */
    ks_vec *v, *vprev, *w, *t; /* v holds the start vector when the iteration begins */
    int known_sym;   /* symmetric without the check (ks_dist_spectral_radius_sym) */
    int exact;       /* the check ran and every pair was equal bit for bit */
} dspec;

/* y = sign dsc .* (A (dsc .* x)) (Lanczos) or y = dsc .* (A x) (power). */
static ks_error apply_scaled(dspec *s, int lanczos, const ks_vec *x, ks_vec *y)
{
    const ks_vec *in = x;
    if (lanczos) {
        KS_TRY(ks_vec_pointwise_mult(s->dsc, x, s->t));
        in = s->t;
    }
    KS_TRY(ks_matrix_apply(s->A, 1.0, in, 0.0, y));
    KS_TRY(ks_vec_pointwise_mult(s->dsc, y, y));
    return lanczos && s->sign < 0 ? ks_vec_scale(y, -1.0) : KS_OK;
}

static ks_error lanczos(dspec *s, int iters, double *alpha, double *beta, double *est)
{
    ks_vec *v = s->v, *vprev = s->vprev, *w = s->w;
    double nrm;
    KS_TRY(ks_vec_norm2(v, &nrm));
    KS_TRY(ks_vec_scale(v, 1.0 / nrm));
    KS_TRY(ks_vec_fill(vprev, 0.0));
    int m = 0;
    double bprev = 0.0;
    for (int k = 0; k < iters; k++) {
        double a, b;
        KS_TRY(apply_scaled(s, 1, v, w));
        KS_TRY(ks_vec_dot(w, v, &a));
        alpha[m++] = a;
        KS_TRY(ks_vec_axpy(-a, v, w));
        KS_TRY(ks_vec_axpy(-bprev, vprev, w));
        KS_TRY(ks_vec_norm2(w, &b));
        /* b ~ 0: the Krylov space is invariant, T's eigenvalues are exact */
        if (k + 1 == iters || !(b > KS_SPEC_BREAKDOWN * (fabs(a) + bprev)))
            break;
        beta[m - 1] = b;
        ks_vec *t = vprev;
        vprev = v;
        v = t;
        KS_TRY(ks_vec_axpby(1.0 / b, w, 0.0, v));
        bprev = b;
    }
    *est = ks_spectral_tridiag_max_abs(alpha, beta, m);
    return KS_OK;
}

static ks_error power(dspec *s, int iters, double *est)
{
    ks_vec *x = s->v, *y = s->w;
    double nx, logsum = 0.0;
    int kept = 0;
    const int first_kept = iters - (iters + 1) / 2;
    KS_TRY(ks_vec_norm2(x, &nx));
    for (int k = 0; k < iters; k++) {
        double ny;
        KS_TRY(apply_scaled(s, 0, x, y));
        KS_TRY(ks_vec_norm2(y, &ny));
        if (!(ny > 0.0)) {
            *est = 0.0; /* x in the null space; the caller's floor applies */
            return KS_OK;
        }
        if (k >= first_kept) {
            logsum += log(ny / nx);
            kept++;
        }
        KS_TRY(ks_vec_axpby(1.0 / ny, y, 0.0, x));
        nx = 1.0;
    }
    *est = KS_SPEC_POWER_SAFETY * exp(logsum / kept);
    return KS_OK;
}

/* The level's diagonal into dsc (its array on the backend) and the
 * report: a zero or non-finite diagonal fails alike on every rank, naming
 * the global row. */
static ks_error prepare(dspec *s, ks_spectral_prep *p)
{
    const ks_comm *c = ks_matrix_comm(s->A);
    const ks_dist_impl *d = (const ks_dist_impl *)s->A->dist;
    const ks_sparse *L = ks_matrix_sparse(d->base.local);
    const ks_sparse *G = d->base.ghost ? ks_matrix_sparse(d->base.ghost) : NULL;
    ks_error e = KS_OK;
    if ((!L->val && L->nnz > 0) || (G && !G->val && G->nnz > 0))
        e = ks_seterr(KS_ERR_ARG, "spectral estimate: the level's values are released");
    ks_amg_exec x;
    memset(&x, 0, sizeof x);
    if (e == KS_OK)
        e = ks_amgk_spectral_prepare_blocks(&x, L, G, s->dsc->data, p);
    ks_amg_exec_free(&x);
    KS_TRY(ks_comm_agree(c, e));
    if (p->bad < s->n)
        e = ks_seterr(KS_ERR_NUMERIC, "spectral estimate: global row %lld has a zero or "
                      "non-finite diagonal (D^-1 A undefined)",
                      (long long)(ks_matrix_row_begin(s->A) + p->bad));
    return ks_comm_agree(c, e);
}

/* Whether the level is symmetric unless known: the owned block's pairs
 * where it lives (dsc holds the diagonal there), the ghost block's on the
 * host (with the diagonal brought there). */
static ks_error symmetric(dspec *s, int *sym)
{
    *sym = 1;
    if (s->known_sym)
        return KS_OK;
    const ks_comm *c = ks_matrix_comm(s->A);
    double *h = ks_malloc((size_t)s->n * sizeof *h + 1, "spectral estimate host diagonal");
    ks_error e = h ? ks_vec_get_host(s->dsc, h) : KS_ERR_MEMORY;
    e = ks_comm_agree(c, e);
    if (e == KS_OK)
        e = ks_dist_symmetric(s->A, h, s->dsc->data, sym, &s->exact);
    free(h);
    return e;
}

/* The estimate once the vectors exist (every rank runs the same steps:
 * the branches depend on agreed values only). */
static ks_error estimate(dspec *s, int iters, double *rho)
{
    const ks_comm *c = ks_matrix_comm(s->A);
    double t = ks_wtime();
    ks_spectral_prep p;
    KS_TRY(prepare(s, &p));
    double cnt[2] = {(double)p.npos, (double)p.nneg}, bound = p.bound;
    KS_TRY(ks_comm_sum(c, cnt, 2));
    KS_TRY(ks_comm_max(c, &bound, 1));
    s->sign = cnt[1] > 0.0 ? -1.0 : 1.0;
    ks_amg_dist_substep(c, "spectral estimate: diagonal and bound", &t);
    int sym = 0;
    if (!(cnt[0] > 0.0 && cnt[1] > 0.0))
        KS_TRY(symmetric(s, &sym));
    ks_amg_dist_substep(c, "spectral estimate: symmetry check", &t);
    ks_amg_exec x;
    memset(&x, 0, sizeof x);
    /* dsc from the diagonal in place, v the serial start vector by global row */
    ks_error e = ks_amgk_spectral_scale_start(&x, s->dsc->be, s->n, ks_matrix_row_begin(s->A),
                                              sym, s->dsc->data, s->v->data);
    ks_amg_exec_free(&x);
    KS_TRY(ks_comm_agree(c, e));
    double *tri = ks_malloc(2 * (size_t)iters * sizeof *tri, "Lanczos tridiagonal");
    KS_TRY(ks_comm_agree(c, tri ? KS_OK : KS_ERR_MEMORY));
    double est = 0.0;
    e = sym ? lanczos(s, iters, tri, tri + iters, &est) : power(s, iters, &est);
    free(tri);
    ks_amg_dist_substep(c, sym ? "spectral estimate: Lanczos" : "spectral estimate: power method",
                        &t);
    *rho = fmax(fmin(est, bound), 1.0);
    return e;
}

ks_error ks_dist_spectral_radius(ks_matrix *A, int iters, double *rho)
{
    return ks_dist_spectral_radius_sym(A, iters, 0, rho, NULL);
}

ks_error ks_dist_spectral_radius_sym(ks_matrix *A, int iters, int known_sym, double *rho,
                                     int *exact)
{
    dspec s;
    memset(&s, 0, sizeof s);
    s.A = A;
    s.known_sym = known_sym;
    if (exact)
        *exact = 0;
    s.n = A->A.nrows;
    ks_error e = iters >= 1 ? KS_OK : ks_seterr(KS_ERR_ARG, "spectral estimate: %d steps", iters);
    ks_vec **vs[] = {&s.dsc, &s.v, &s.vprev, &s.w, &s.t};
    for (int k = 0; k < 5 && e == KS_OK; k++)
        e = ks_matrix_vec_create(A, vs[k]);
    /* a local failure (memory) before any collective of the estimate:
     * agreed first, then every rank runs the same steps */
    e = ks_matrix_agree(A, e);
    if (e == KS_OK)
        e = estimate(&s, iters, rho);
    for (int k = 0; k < 5; k++)
        ks_vec_destroy(vs[k]);
    if (exact)
        *exact = e == KS_OK && s.exact;
    return e;
}

/* The diagonal of the distributed matrix A's rows (its local block's)
 * into dg, A's vector, where the block lives; the block's rows are A's. */
static ks_error diagonal(const ks_matrix *A, ks_vec *dg)
{
    const ks_sparse *L = ks_matrix_sparse(A->dist->local);
    if (!L->val && L->nnz > 0)
        return ks_seterr(KS_ERR_ARG, "diagonal: the level's values are released");
    ks_spectral_prep p; /* without the ghost block: only the diagonal is read */
    ks_amg_exec x;
    memset(&x, 0, sizeof x);
    ks_error e = ks_amgk_spectral_prepare_blocks(&x, L, NULL, dg->data, &p);
    ks_amg_exec_free(&x);
    return e;
}

/* JACOBI_L1's weights with the whole row's |a_ij|: omega / (a_ii +
 * sign(a_ii) sum_{j != i} |a_ij|), the serial expression. The diagonal and
 * the ghost sums come from the backend; the weights are made on the host. */
static ks_error l1_weights(ks_amg *amg, int l, double omega)
{
    ks_amg_level *L = &amg->levels[l];
    ks_vec *s = NULL, *dg = NULL;
    ks_error e = ks_matrix_vec_create(L->Am, &s);
    if (e == KS_OK)
        e = ks_matrix_vec_create(L->Am, &dg);
    if (e == KS_OK)
        e = ks_matrix_offdiag_abs_sums(L->Am, s);
    if (e == KS_OK)
        e = diagonal(L->Am, dg);
    if (e == KS_OK) {
        const size_t n = (size_t)L->A.nrows;
        double *d = ks_malloc(2 * n * sizeof *d + 1, "diagonal and row sums"), *rs = d + n;
        e = d ? ks_vec_get_host(dg, d) : KS_ERR_MEMORY;
        if (e == KS_OK)
            e = ks_vec_get_host(s, rs);
        for (size_t i = 0; i < n && e == KS_OK; i++)
            rs[i] = omega / (d[i] + copysign(rs[i], d[i]));
        if (e == KS_OK)
            e = ks_vec_set_host(L->dinv, rs);
        free(d);
    }
    ks_vec_destroy(&s);
    ks_vec_destroy(&dg);
    return e;
}

ks_error ks_amg_dist_smoother_setup(ks_amg *amg, int l)
{
    ks_amg_level *L = &amg->levels[l];
    ks_error e = L->dinv ? KS_OK : ks_matrix_vec_create(L->Am, &L->dinv);
    e = ks_matrix_agree(L->Am, e);
    if (e == KS_OK && amg->smoother == KS_SMOOTHER_CHEBYSHEV && !L->rho_valid) {
        double rho = 0.0;
        int exact = 0;
        e = ks_dist_spectral_radius_sym(L->Am, 12, l > 0 && amg->sym0, &rho, &exact);
        if (l == 0) /* level 0 comes first in each (re-)setup */
            amg->sym0 = e == KS_OK && exact;
        if (e == KS_OK) {
            L->rho = rho;
            L->rho_valid = 1; /* ks_amg_smoother_setup takes it as it is */
        } else {
            ks_adderr(e, "AMG level %d: Chebyshev eigenvalue estimate", l);
        }
    }
    /* the diagonal was checked over the ranks (the level loop), so this
     * fails alike everywhere or nowhere; agreed all the same */
    if (e == KS_OK)
        e = ks_matrix_agree(L->Am, ks_amg_smoother_setup(amg, l));
    if (e == KS_OK && amg->smoother == KS_SMOOTHER_JACOBI_L1) {
        double omega = amg->prm.smoother.relaxation_factor;
        e = ks_matrix_agree(L->Am, l1_weights(amg, l, omega > 0.0 ? omega : 1.0));
    }
    return e;
}
