/* Block form of GMRES(m) and FGMRES(m) for ks_solver_solve_many: gmres.c's
 * cycles on the running columns of blocks, each column with its own
 * Hessenberg matrix, rotations and residual estimate, one SpMM and one
 * block preconditioner application per step for all running columns.
 *
 * The columns step together through one cycle of the basis. A column whose
 * cycle ends early (its estimate converged, a lucky breakdown, a singular
 * projected matrix) forms its x and true residual at once, as gmres.c does;
 * if that does not stop it, it waits ("parked": its steps are not counted
 * and its coefficients are zero) until the others end their cycle, and all
 * restart together. Waiting changes nothing in a column's own arithmetic,
 * so it takes the iterations gmres.c takes. */
#include "many.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One column's host side (gmres.c's gm_host). */
typedef struct gcol {
    double *H, *cs, *sn, *g, *y;
    int it;       /* the column's iterations */
    int k;        /* basis vectors of its current cycle that count */
    int parked;   /* its cycle ended; waits for the others */
    int singular;
    double beta;  /* ||r|| the next cycle starts from */
} gcol;

#define HIJ(m1, c, i, j) ((c)->H[(size_t)(j) * (size_t)(m1) + (size_t)(i)])

/* gmres.c's rotate, on column c. */
static int rotate(gcol *c, int m1, int j)
{
    for (int i = 0; i < j; i++) {
        double a = HIJ(m1, c, i, j), b = HIJ(m1, c, i + 1, j);
        HIJ(m1, c, i, j) = c->cs[i] * a + c->sn[i] * b;
        HIJ(m1, c, i + 1, j) = -c->sn[i] * a + c->cs[i] * b;
    }
    double a = HIJ(m1, c, j, j), b = HIJ(m1, c, j + 1, j), r = hypot(a, b);
    if (r == 0.0)
        return 0;
    c->cs[j] = a / r;
    c->sn[j] = b / r;
    HIJ(m1, c, j, j) = r;
    HIJ(m1, c, j + 1, j) = 0.0;
    c->g[j + 1] = -c->sn[j] * c->g[j];
    c->g[j] = c->cs[j] * c->g[j];
    return 1;
}

typedef struct gstate {
    ks_solver *s;
    ks_many *m;
    int mr;          /* restart length */
    int flexible, ident;
    ks_block **V, **Z, *W, *T, *zt;
    gcol *col;       /* per column of the solve (not slot) */
    double *mem;
} gstate;

static gcol *colq(gstate *g, int q) { return &g->col[g->m->col[q]]; }

/* w -= V[0..j] (V' w) once per column (coefficients zero where a column
 * does not step); d[i][q] = <V_i, w>, d[j+1][q] = <w, w> before it. */
static ks_error cgs_pass(gstate *g, int j, const int *act, double d[][KS_BLOCK_MAX_COLS])
{
    ks_many *m = g->m;
    for (int i = 0; i <= j; i++)
        KS_TRY(ks_block_dot(g->V[i], g->W, d[i]));
    KS_TRY(ks_block_dot(g->W, g->W, d[j + 1]));
    double c[KS_BLOCK_MAX_COLS];
    for (int i = 0; i <= j; i++) {
        for (int q = 0; q < m->kr; q++)
            c[q] = act[q] ? -d[i][q] : 0.0;
        KS_TRY(ks_block_axpy(c, g->V[i], g->W));
    }
    return KS_OK;
}

/* x += the corrections of the columns in `end` (gmres.c's update_x). */
static ks_error update_x(gstate *g, const int *end)
{
    ks_many *m = g->m;
    const int m1 = g->mr + 1;
    int kmax = 0;
    for (int q = 0; q < m->kr; q++) {
        gcol *c = colq(g, q);
        if (!end[q] || c->k == 0)
            continue;
        for (int i = c->k - 1; i >= 0; i--) {
            double t = c->g[i];
            for (int l = i + 1; l < c->k; l++)
                t -= HIJ(m1, c, i, l) * c->y[l];
            c->y[i] = t / HIJ(m1, c, i, i);
        }
        kmax = c->k > kmax ? c->k : kmax;
    }
    if (kmax == 0)
        return KS_OK;
    double a[KS_BLOCK_MAX_COLS];
    ks_block *dst = g->Z || !g->zt ? m->Xw : g->W;
    if (dst == g->W)
        KS_TRY(ks_block_fill(g->W, 0.0));
    for (int i = 0; i < kmax; i++) {
        for (int q = 0; q < m->kr; q++) {
            gcol *c = colq(g, q);
            a[q] = end[q] && i < c->k ? c->y[i] : 0.0;
        }
        KS_TRY(ks_block_axpy(a, g->Z ? g->Z[i] : g->V[i], dst));
    }
    if (dst != g->W)
        return KS_OK;
    /* GMRES: x += M^-1 (V y) */
    KS_TRY(ks_precond_apply_block(g->s->pc, g->W, g->zt));
    for (int q = 0; q < m->kr; q++)
        a[q] = end[q] && colq(g, q)->k > 0 ? 1.0 : 0.0;
    return ks_block_axpy(a, g->zt, m->Xw);
}

/* The columns in `end` finish their cycle: x, the true residual (which
 * replaces the last estimate and decides), then either a stop or a wait
 * with the residual in V[0] for the next cycle. */
static ks_error end_cycle(gstate *g, const int *end)
{
    ks_many *m = g->m;
    KS_TRY(update_x(g, end));
    double rn[KS_BLOCK_MAX_COLS], a[KS_BLOCK_MAX_COLS], b[KS_BLOCK_MAX_COLS];
    KS_TRY(ks_many_residual(m, g->T));
    KS_TRY(ks_block_norm2(g->T, rn));
    for (int q = 0; q < m->kr; q++) {
        a[q] = 0.0;
        b[q] = 1.0;
        if (!end[q])
            continue;
        gcol *c = colq(g, q);
        ks_solver *v = ks_many_view(m, q);
        ks_krylov_amend(v, c->it, rn[q]);
        if (c->singular && isfinite(rn[q]) && !ks_krylov_converged(v, rn[q])) {
            ks_krylov_stop(v, KS_SOLVE_BREAKDOWN,
                           "A M^-1 v_%d lies in the span of the previous basis vectors and the "
                           "projected matrix is singular at iteration %d: A or M is singular",
                           c->k, c->it);
            m->stop[q] = 1;
            continue;
        }
        KS_TRY(ks_krylov_decide(v, c->it, rn[q], &m->stop[q]));
        if (m->stop[q])
            continue;
        c->parked = 1;
        c->beta = rn[q];
        a[q] = 1.0;
        b[q] = 0.0;
    }
    /* V[0][:,q] = r_q for the waiting columns; the others' V[0] unchanged */
    return ks_block_axpby(a, g->T, b, g->V[0]);
}

static ks_error run(gstate *g)
{
    ks_solver *s = g->s;
    ks_many *m = g->m;
    const int mr = g->mr, m1 = mr + 1;
    double beta[KS_BLOCK_MAX_COLS];
    double (*d)[KS_BLOCK_MAX_COLS] = malloc((size_t)(mr + 2) * sizeof *d);
    double (*d2)[KS_BLOCK_MAX_COLS] = malloc((size_t)(mr + 2) * sizeof *d2);
    if (!d || !d2) {
        free(d);
        free(d2);
        return ks_seterr(KS_ERR_MEMORY, "out of host memory for GMRES's block products");
    }
    ks_error e = ks_many_start(m, g->V[0], beta);
    for (int q = 0; q < m->kr; q++)
        colq(g, q)->beta = beta[q];
    while (e == KS_OK && m->kr > 0) { /* one cycle of the running columns */
        double sc[KS_BLOCK_MAX_COLS];
        int act[KS_BLOCK_MAX_COLS], end[KS_BLOCK_MAX_COLS];
        for (int q = 0; q < m->kr; q++) {
            gcol *c = colq(g, q);
            sc[q] = 1.0 / c->beta;
            c->g[0] = c->beta;
            c->k = 0;
            c->parked = 0;
            c->singular = 0;
        }
        if ((e = ks_block_scale(g->V[0], sc)) != KS_OK)
            break;
        for (int j = 0; j < mr && e == KS_OK; j++) {
            int any = 0;
            for (int q = 0; q < m->kr; q++) {
                act[q] = !colq(g, q)->parked;
                end[q] = 0;
                any |= act[q];
                if (act[q])
                    colq(g, q)->it++;
            }
            if (!any)
                break;
            ks_block *zj = g->Z ? g->Z[j] : g->zt ? g->zt : g->V[j];
            if (!g->ident && (e = ks_precond_apply_block(s->pc, g->V[j], zj)) != KS_OK)
                break;
            if ((e = ks_matrix_apply_block(s->A, 1.0, zj, 0.0, g->W)) != KS_OK)
                break;
            /* CGS2 (gmres.c's orthogonalise) */
            if ((e = cgs_pass(g, j, act, d)) != KS_OK || (e = cgs_pass(g, j, act, d2)) != KS_OK)
                break;
            double hn[KS_BLOCK_MAX_COLS], wn[KS_BLOCK_MAX_COLS], nrm[KS_BLOCK_MAX_COLS];
            int measure = 0;
            for (int q = 0; q < m->kr; q++) {
                gcol *c = colq(g, q);
                wn[q] = sqrt(d[j + 1][q]);
                double ww = d2[j + 1][q], hh = 0.0;
                for (int i = 0; i <= j; i++) {
                    if (act[q])
                        HIJ(m1, c, i, j) = d[i][q] + d2[i][q];
                    hh += d2[i][q] * d2[i][q];
                }
                if (isfinite(ww) && hh <= 0.01 * ww)
                    hn[q] = sqrt(ww - hh);
                else
                    measure |= act[q];
                if (!(isfinite(ww) && hh <= 0.01 * ww))
                    hn[q] = NAN;
            }
            if (measure && (e = ks_block_norm2(g->W, nrm)) != KS_OK)
                break;
            double inv[KS_BLOCK_MAX_COLS], zero[KS_BLOCK_MAX_COLS];
            for (int q = 0; q < m->kr; q++) {
                inv[q] = zero[q] = 0.0;
                if (!act[q])
                    continue;
                gcol *c = colq(g, q);
                ks_solver *v = ks_many_view(m, q);
                if (isnan(hn[q]) && measure)
                    hn[q] = nrm[q];
                if (!isfinite(hn[q]) || !isfinite(wn[q])) {
                    if ((e = ks_krylov_record(v, c->it, NAN)) != KS_OK)
                        break;
                    ks_krylov_stop(v, KS_SOLVE_NAN, "||A M^-1 v|| = %g at iteration %d", wn[q],
                                   c->it);
                    m->stop[q] = 1;
                    continue;
                }
                int lucky = hn[q] <= 4.0 * DBL_EPSILON * wn[q];
                HIJ(m1, c, j + 1, j) = lucky ? 0.0 : hn[q];
                if (!rotate(c, m1, j)) {
                    c->singular = 1; /* keep the first j columns */
                    e = ks_krylov_record(v, c->it, fabs(c->g[j]));
                    end[q] = 1;
                    continue;
                }
                c->k = j + 1;
                double est = fabs(c->g[j + 1]);
                if ((e = ks_krylov_record(v, c->it, est)) != KS_OK)
                    break;
                if (!isfinite(est)) {
                    ks_krylov_stop(v, KS_SOLVE_NAN, "residual estimate = %g at iteration %d",
                                   est, c->it);
                    m->stop[q] = 1;
                    continue;
                }
                if (lucky || ks_krylov_converged(v, est) || c->it >= s->prm.max_iters ||
                    j + 1 == mr)
                    end[q] = 1;
                else
                    inv[q] = 1.0 / hn[q];
            }
            if (e != KS_OK)
                break;
            if (s->prm.monitor_residual) {
                double est[KS_BLOCK_MAX_COLS];
                for (int q = 0; q < m->kr; q++)
                    est[q] = act[q] ? ks_many_view(m, q)->stats.final_residual : 0.0;
                ks_many_monitor(m, colq(g, 0)->it, est);
            }
            /* the next basis vector of the columns that go on */
            if (j + 1 < mr && (e = ks_block_axpby(inv, g->W, zero, g->V[j + 1])) != KS_OK)
                break;
            int any_end = 0;
            for (int q = 0; q < m->kr; q++)
                any_end |= end[q];
            if (any_end && (e = end_cycle(g, end)) != KS_OK)
                break;
            /* the stopped columns leave (the flags above are per step) */
            if ((e = ks_many_retire(m, NULL, 0)) != KS_OK)
                break;
        }
    }
    free(d);
    free(d2);
    return e;
}

ks_error ks_krylov_gmres_many(ks_solver *s, ks_many *m)
{
    gstate g;
    memset(&g, 0, sizeof g);
    g.s = s;
    g.m = m;
    g.mr = ks_solver_params_gmres_m(&s->prm);
    g.flexible = s->ops == &ks_krylov_fgmres_ops;
    g.ident = ks_krylov_pc_is_identity(s);
    const int mr = g.mr, m1 = mr + 1;
    g.V = ks_calloc((size_t)(2 * mr + 1), sizeof *g.V, "GMRES block basis");
    g.col = ks_calloc((size_t)m->k, sizeof *g.col, "GMRES columns");
    size_t per = (size_t)m1 * (size_t)mr + 2 * (size_t)mr + 2 * (size_t)m1;
    g.mem = ks_malloc((size_t)m->k * per * sizeof(double), "GMRES Hessenberg matrices");
    ks_error e = g.V && g.col && g.mem ? KS_OK : KS_ERR_MEMORY;
    for (int c = 0; c < m->k && e == KS_OK; c++) {
        gcol *gc = &g.col[c];
        gc->H = g.mem + (size_t)c * per;
        gc->cs = gc->H + (size_t)m1 * (size_t)mr;
        gc->sn = gc->cs + mr;
        gc->g = gc->sn + mr;
        gc->y = gc->g + m1;
    }
    for (int i = 0; i <= mr && e == KS_OK; i++)
        e = ks_many_block(m, &g.V[i]);
    if (e == KS_OK)
        e = ks_many_block(m, &g.W);
    if (e == KS_OK)
        e = ks_many_block(m, &g.T);
    if (e == KS_OK && !g.ident && g.flexible) {
        g.Z = g.V + mr + 1;
        for (int i = 0; i < mr && e == KS_OK; i++)
            e = ks_many_block(m, &g.Z[i]);
    } else if (e == KS_OK && !g.ident) {
        e = ks_many_block(m, &g.zt);
    }
    if (e == KS_OK)
        e = run(&g);
    free(g.V);
    free(g.col);
    free(g.mem);
    return e;
}
