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
 * The row-wise work (diagonals, start vectors, weights) is done in host
 * arrays and set into the vectors, so a backend without host memory (cuda)
 * takes the same path; the SpMVs and vector steps run on the backend. */
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
    ks_vec *v, *vprev, *w, *t;
    double *h;       /* n host values: what is set into dsc and the start vector */
    int known_sym;   /* symmetric without the check (ks_dist_spectral_radius_sym) */
    int exact;       /* the check ran and every pair was equal bit for bit */
} dspec;

/* The diagonal of this rank's rows (the local block's). */
static void diagonal(const ks_csr *L, double *d)
{
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < L->nrows; i++) {
        d[i] = 0.0;
        for (ks_int k = L->rowptr[i]; k < L->rowptr[i + 1]; k++)
            if (L->colind[k] == i)
                d[i] = L->val[k];
    }
}

/* The serial start vector by global row into v (through the host). */
static ks_error start_vector(dspec *s, ks_vec *v)
{
    const ks_gint rb = ks_matrix_row_begin(s->A);
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < s->n; i++)
        s->h[i] = ks_spectral_start((uint64_t)(rb + i));
    return ks_vec_set_host(v, s->h);
}

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
    KS_TRY(start_vector(s, v));
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
    KS_TRY(start_vector(s, x));
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

/* The estimate once the vectors exist (every rank runs the same steps:
 * the branches depend on agreed values only). */
static ks_error estimate(dspec *s, int iters, double *rho)
{
    const ks_comm *c = ks_matrix_comm(s->A);
    const ks_dist_impl *d = (const ks_dist_impl *)s->A->dist;
    const ks_csr *L = ks_matrix_host_csr(d->base.local);
    const ks_csr *G = d->base.ghost ? ks_matrix_host_csr(d->base.ghost) : NULL;
    if (!L || (d->base.ghost && !G))
        return ks_comm_agree(c, ks_seterr(KS_ERR_MEMORY, "spectral estimate: host rows"));
    double *dg = s->h, t = ks_wtime();
    diagonal(L, dg);
    double cnt[2] = {0.0, 0.0}, bound = 0.0;
    ks_int bad = s->n;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (ks_int i = 0; i < s->n; i++)
        if ((dg[i] == 0.0 || !isfinite(dg[i])) && i < bad)
            bad = i;
    ks_error e = KS_OK;
    if (bad < s->n)
        e = ks_seterr(KS_ERR_NUMERIC, "spectral estimate: global row %lld has a zero or "
                      "non-finite diagonal (D^-1 A undefined)",
                      (long long)(ks_matrix_row_begin(s->A) + bad));
    KS_TRY(ks_comm_agree(c, e));
    double pos = 0.0, neg = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : pos, neg) reduction(max : bound)
    for (ks_int i = 0; i < s->n; i++) {
        pos += dg[i] > 0.0;
        neg += dg[i] < 0.0;
        double r = 0.0;
        for (ks_int k = L->rowptr[i]; k < L->rowptr[i + 1]; k++)
            r += fabs(L->val[k]);
        for (ks_int k = G ? G->rowptr[i] : 0; G && k < G->rowptr[i + 1]; k++)
            r += fabs(G->val[k]);
        bound = fmax(bound, r / fabs(dg[i]));
    }
    cnt[0] = pos;
    cnt[1] = neg;
    KS_TRY(ks_comm_sum(c, cnt, 2));
    KS_TRY(ks_comm_max(c, &bound, 1));
    s->sign = cnt[1] > 0.0 ? -1.0 : 1.0;
    ks_amg_dist_substep(c, "spectral estimate: diagonal and bound", &t);
    int sym = 0;
    if (!(cnt[0] > 0.0 && cnt[1] > 0.0)) {
        if (s->known_sym)
            sym = 1;
        else
            KS_TRY(ks_dist_symmetric(s->A, dg, &sym, &s->exact));
    }
    ks_amg_dist_substep(c, "spectral estimate: symmetry check", &t);
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < s->n; i++)
        dg[i] = sym ? 1.0 / sqrt(fabs(dg[i])) : 1.0 / dg[i];
    KS_TRY(ks_comm_agree(c, ks_vec_set_host(s->dsc, dg)));
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
    s.h = ks_malloc((size_t)s.n * sizeof *s.h + 1, "spectral estimate host vector");
    if (!s.h)
        e = KS_ERR_MEMORY;
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
    free(s.h);
    if (exact)
        *exact = e == KS_OK && s.exact;
    return e;
}

/* JACOBI_L1's weights with the whole row's |a_ij|: omega / (a_ii +
 * sign(a_ii) sum_{j != i} |a_ij|), the serial expression. */
static ks_error l1_weights(ks_amg *amg, int l, double omega)
{
    ks_amg_level *L = &amg->levels[l];
    ks_vec *s = NULL;
    ks_error e = ks_matrix_vec_create(L->Am, &s);
    if (e == KS_OK)
        e = ks_matrix_offdiag_abs_sums(L->Am, s);
    if (e == KS_OK) {
        const ks_csr *H = ks_matrix_host_csr(L->Am);
        const size_t n = (size_t)L->A.nrows;
        double *d = ks_malloc(2 * n * sizeof *d + 1, "diagonal and row sums"), *rs = d + n;
        if (H && d) {
            diagonal(H, d);
            e = ks_vec_get_host(s, rs);
            for (size_t i = 0; i < n && e == KS_OK; i++)
                rs[i] = omega / (d[i] + copysign(rs[i], d[i]));
            if (e == KS_OK)
                e = ks_vec_set_host(L->dinv, rs);
        } else {
            e = KS_ERR_MEMORY;
        }
        free(d);
    }
    ks_vec_destroy(&s);
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
