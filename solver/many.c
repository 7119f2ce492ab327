/* ks_solver_solve_many: k systems A X = B together. Methods with a block
 * form (ks_krylov_ops.solve_block: CG, BiCGStab, GMRES) iterate on blocks
 * of the running columns (many.h); the others solve the columns one after
 * the other with their single-vector solve. Either way every column ends
 * with its own statistics and the true residual recomputed. */
#include "many.h"
#include "../vec/vec_fused.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ per-column stats */

static ks_error stats_reserve(ks_solver *s, int k)
{
    if (k <= s->col_cap)
        return KS_OK;
    ks_solve_stats *st = realloc(s->col_stats, (size_t)k * sizeof *st);
    if (st)
        s->col_stats = st;
    double **h = st ? realloc(s->col_hist, (size_t)k * sizeof *h) : NULL;
    if (h)
        s->col_hist = h;
    int *cap = h ? realloc(s->col_hist_cap, (size_t)k * sizeof *cap) : NULL;
    if (!cap)
        return ks_seterr(KS_ERR_MEMORY, "out of host memory for %d columns' statistics", k);
    s->col_hist_cap = cap;
    for (int j = s->col_cap; j < k; j++) {
        s->col_hist[j] = NULL;
        s->col_hist_cap[j] = 0;
    }
    s->col_cap = k;
    return KS_OK;
}

void ks_solver_free_columns(ks_solver *s)
{
    for (int j = 0; j < s->col_cap; j++)
        free(s->col_hist[j]);
    free(s->col_hist);
    free(s->col_hist_cap);
    free(s->col_stats);
    s->col_hist = NULL;
    s->col_hist_cap = NULL;
    s->col_stats = NULL;
    s->col_cap = 0;
    s->ncols = 0;
}

int ks_solver_stats_count(const ks_solver *s) { return s ? s->ncols : 0; }

const ks_solve_stats *ks_solver_stats_column(const ks_solver *s, int j)
{
    if (!s || j < 0 || j >= s->ncols)
        return NULL;
    return s->many_last ? &s->col_stats[j] : &s->stats;
}

/* Column j's history into its own array (the single solve's buffer is
 * reused by the next column). */
static ks_error keep_history(ks_solver *s, int j, ks_solve_stats *st)
{
    if (!st->history || st->history_len <= 0) {
        st->history = NULL;
        return KS_OK;
    }
    if (st->history_len > s->col_hist_cap[j]) {
        double *h = realloc(s->col_hist[j], (size_t)st->history_len * sizeof *h);
        if (!h)
            return ks_seterr(KS_ERR_MEMORY, "out of host memory for column %d's history", j);
        s->col_hist[j] = h;
        s->col_hist_cap[j] = st->history_len;
    }
    memcpy(s->col_hist[j], st->history, (size_t)st->history_len * sizeof(double));
    st->history = s->col_hist[j];
    return KS_OK;
}

/* --------------------------------------------------------- block helpers */

ks_error ks_many_norm(ks_many *m, const ks_block *W, double *nrm)
{
    if (m->s->prm.norm == KS_NORM_L2)
        return ks_block_norm2(W, nrm);
    /* L1 / LMAX: no block kernel; each column through a vector. */
    ks_vec *v = NULL;
    KS_TRY(ks_vec_create(m->s->be, W->n, &v));
    ks_error e = KS_OK;
    for (int q = 0; q < W->k && e == KS_OK; q++) {
        e = ks_block_get_col(W, q, v);
        if (e == KS_OK)
            e = ks_krylov_norm(m->s, v, &nrm[q]);
    }
    ks_vec_destroy(&v);
    return e;
}

ks_error ks_many_axpy_norm(ks_many *m, const double *a, const ks_block *X, ks_block *Y,
                           double *nrm)
{
    const char *env = getenv("KS_BLOCK_FUSED");
    if (m->s->prm.norm == KS_NORM_L2 && !(env && strcmp(env, "0") == 0))
        return ks_block_axpy_norm2(a, X, Y, nrm);
    KS_TRY(ks_block_axpy(a, X, Y));
    return ks_many_norm(m, Y, nrm);
}

ks_error ks_many_residual(ks_many *m, ks_block *R)
{
    KS_TRY(ks_block_copy(m->Bw, R));
    return ks_matrix_apply_block(m->s->A, -1.0, m->Xw, 1.0, R);
}

ks_error ks_many_start(ks_many *m, ks_block *R, double *rnorm)
{
    double bn[KS_BLOCK_MAX_COLS];
    KS_TRY(ks_many_residual(m, R));
    KS_TRY(ks_many_norm(m, m->Bw, bn));
    KS_TRY(ks_many_norm(m, R, rnorm));
    double zero[KS_BLOCK_MAX_COLS];
    int any_zero = 0;
    for (int q = 0; q < m->kr; q++) {
        /* b = 0: x = 0 exactly, as the single solve gives */
        zero[q] = bn[q] == 0.0 ? 0.0 : 1.0;
        any_zero |= bn[q] == 0.0;
        double rn = bn[q] == 0.0 || !isfinite(bn[q]) ? 0.0 : rnorm[q];
        KS_TRY(ks_krylov_start_norms(ks_many_view(m, q), bn[q], rn, &rnorm[q], &m->stop[q]));
    }
    if (any_zero)
        KS_TRY(ks_block_scale(m->Xw, zero));
    if (m->s->prm.monitor_residual)
        ks_log(KS_LOG_INFO, "%8s  %14s  %s\n", "iter", "max residual", "running columns");
    ks_many_monitor(m, 0, rnorm);
    double *sc[1] = {rnorm};
    return ks_many_retire(m, sc, 1);
}

ks_error ks_many_check(ks_many *m, int it, const double *rnorm)
{
    for (int q = 0; q < m->kr; q++) {
        if (m->stop[q])
            continue;
        KS_TRY(ks_krylov_check(ks_many_view(m, q), it, rnorm[q], &m->stop[q]));
    }
    ks_many_monitor(m, it, rnorm);
    return KS_OK;
}

void ks_many_monitor(ks_many *m, int it, const double *rnorm)
{
    if (!m->s->prm.monitor_residual || m->kr == 0)
        return;
    double mx = 0.0;
    for (int q = 0; q < m->kr; q++)
        mx = rnorm[q] > mx || isnan(rnorm[q]) ? rnorm[q] : mx;
    ks_log(KS_LOG_INFO, "%8d  %14.6e  %d of %d\n", it, mx, m->kr, m->k);
}

ks_error ks_many_retire(ks_many *m, double **sc, int nsc)
{
    int keep[KS_BLOCK_MAX_COLS], gone[KS_BLOCK_MAX_COLS], to[KS_BLOCK_MAX_COLS];
    int nk = 0, ng = 0;
    for (int q = 0; q < m->kr; q++) {
        if (m->stop[q]) {
            gone[ng] = q;
            to[ng++] = m->col[q];
        } else {
            keep[nk++] = q;
        }
    }
    if (ng == 0)
        return KS_OK;
    /* The stopped columns' x to the caller's X. */
    if (ng == m->kr) {
        KS_TRY(ks_block_scatter_cols(m->Xw, ng, to, m->X));
    } else {
        ks_block *T = NULL;
        KS_TRY(ks_block_create(m->s->be, m->Xw->n, ng, &T));
        ks_error e = ks_block_gather_cols(m->Xw, ng, gone, T);
        if (e == KS_OK)
            e = ks_block_scatter_cols(T, ng, to, m->X);
        ks_block_destroy(&T);
        KS_TRY(e);
    }
    for (int i = 0; i < nk; i++) {
        m->col[i] = m->col[keep[i]];
        for (int c = 0; c < nsc; c++)
            sc[c][i] = sc[c][keep[i]];
    }
    for (int q = 0; q < m->kr; q++)
        m->stop[q] = 0;
    m->kr = nk;
    if (nk == 0)
        return KS_OK;
    KS_TRY(ks_block_keep_cols(m->Xw, nk, keep));
    KS_TRY(ks_block_keep_cols(m->Bw, nk, keep));
    for (int i = 0; i < m->nwork; i++)
        KS_TRY(ks_block_keep_cols(m->work[i], nk, keep));
    return KS_OK;
}

/* ------------------------------------------------------------- drivers */

/* The block method: views, working copies of B and X, the method's own
 * blocks (it creates them with ks_many_block), then what is still running
 * (an error midway) back to X. */
static ks_error solve_block(ks_solver *s, const ks_block *B, ks_block *X)
{
    const int k = B->k;
    ks_many m;
    memset(&m, 0, sizeof m);
    m.s = s;
    m.k = m.kr = k;
    m.B = B;
    m.X = X;
    for (int q = 0; q < k; q++)
        m.col[q] = q;
    m.view = ks_calloc((size_t)k, sizeof *m.view, "column views");
    if (!m.view)
        return KS_ERR_MEMORY;
    for (int j = 0; j < k; j++) {
        ks_solver *v = &m.view[j];
        *v = *s;
        memset(&v->stats, 0, sizeof v->stats);
        v->stats.status = KS_SOLVE_NOT_RUN;
        v->prm.monitor_residual = 0;
        v->history = s->col_hist[j];
        v->history_cap = s->col_hist_cap[j];
    }
    ks_error e = ks_block_create(s->be, B->n, k, &m.Bw);
    if (e == KS_OK)
        e = ks_block_create(s->be, B->n, k, &m.Xw);
    if (e == KS_OK)
        e = ks_block_copy(B, m.Bw);
    if (e == KS_OK)
        e = ks_block_copy(X, m.Xw);
    if (e == KS_OK)
        e = s->ops->solve_block(s, &m);
    if (m.kr > 0 && m.Xw) { /* an error left columns running: X gets what they have */
        ks_error e2 = ks_block_scatter_cols(m.Xw, m.kr, m.col, X);
        e = e != KS_OK ? e : e2;
    }
    for (int j = 0; j < k; j++) {
        s->col_stats[j] = m.view[j].stats;
        s->col_hist[j] = m.view[j].history;
        s->col_hist_cap[j] = m.view[j].history_cap;
    }
    for (int i = 0; i < m.nwork; i++)
        ks_block_destroy(&m.work[i]);
    free(m.work);
    ks_block_destroy(&m.Bw);
    ks_block_destroy(&m.Xw);
    free(m.view);
    return e;
}

ks_error ks_many_block(ks_many *m, ks_block **W)
{
    if (m->nwork == m->work_cap) {
        int cap = m->work_cap ? 2 * m->work_cap : 16;
        ks_block **w = realloc(m->work, (size_t)cap * sizeof *w);
        if (!w)
            return ks_seterr(KS_ERR_MEMORY, "out of host memory for %d work blocks", cap);
        m->work = w;
        m->work_cap = cap;
    }
    KS_TRY(ks_block_create(m->s->be, m->Bw->n, m->kr, W));
    m->work[m->nwork++] = *W;
    return KS_OK;
}

/* A method without a block form: column by column with its own solve. */
static ks_error solve_columns(ks_solver *s, const ks_block *B, ks_block *X)
{
    ks_vec *b = NULL, *x = NULL;
    ks_error e = ks_matrix_vec_create(s->A, &b);
    if (e == KS_OK)
        e = ks_matrix_vec_create(s->A, &x);
    for (int j = 0; j < B->k && e == KS_OK; j++) {
        e = ks_block_get_col(B, j, b);
        if (e == KS_OK)
            e = ks_block_get_col(X, j, x);
        if (e == KS_OK)
            e = ks_solver_solve_one(s, b, x);
        if (e == KS_OK)
            e = ks_block_set_col(X, j, x);
        if (e == KS_OK) {
            s->col_stats[j] = s->stats;
            e = keep_history(s, j, &s->col_stats[j]);
        }
    }
    ks_vec_destroy(&b);
    ks_vec_destroy(&x);
    return e;
}

/* The whole solve's summary in s->stats: the slowest column's iterations,
 * the first column's status that is not CONVERGED (else CONVERGED), the
 * largest relative residuals. */
static void summarise(ks_solver *s, int k, double seconds)
{
    ks_solve_stats *t = &s->stats;
    double setup = t->setup_seconds;
    memset(t, 0, sizeof *t);
    t->setup_seconds = setup;
    t->solve_seconds = seconds;
    t->status = KS_SOLVE_CONVERGED;
    int worst = 0;
    for (int j = 0; j < k; j++) {
        const ks_solve_stats *c = &s->col_stats[j];
        if (c->iterations > t->iterations)
            t->iterations = c->iterations;
        if (t->status == KS_SOLVE_CONVERGED && c->status != KS_SOLVE_CONVERGED) {
            t->status = c->status;
            snprintf(t->breakdown, sizeof t->breakdown, "%s", c->breakdown);
        }
        if (!(c->relative_residual <= s->col_stats[worst].relative_residual))
            worst = j;
        if (!(c->true_relative_residual <= t->true_relative_residual))
            t->true_relative_residual = c->true_relative_residual;
    }
    const ks_solve_stats *w = &s->col_stats[worst];
    t->initial_residual = w->initial_residual;
    t->final_residual = w->final_residual;
    t->rhs_norm = w->rhs_norm;
    t->relative_residual = w->relative_residual;
}

static ks_error check_blocks(ks_solver *s, const ks_block *B, ks_block *X)
{
    const char *fn = "ks_solver_solve_many";
    if (!s || !B || !X)
        return ks_seterr(KS_ERR_ARG, "%s: NULL solver or block", fn);
    if (!s->A)
        return ks_seterr(KS_ERR_ARG, "%s: no matrix (ks_solver_setup has not succeeded)", fn);
    if (ks_matrix_distributed(s->A))
        return ks_seterr(KS_ERR_UNSUPPORTED, "%s: blocks are local; a distributed matrix "
                                             "solves one right-hand side at a time (not yet "
                                             "done over MPI)", fn);
    ks_int n = ks_matrix_rows(s->A);
    if (B->n != n || X->n != n)
        return ks_seterr(KS_ERR_SIZE, "%s: size mismatch: matrix has %ld rows, B %ld, X %ld", fn,
                         (long)n, (long)B->n, (long)X->n);
    if (B->k != X->k)
        return ks_seterr(KS_ERR_SIZE, "%s: B has %d columns, X %d", fn, B->k, X->k);
    if (B->be != s->be || X->be != s->be)
        return ks_seterr(KS_ERR_ARG, "%s: B and X must live on the solver's backend (%s)", fn,
                         ks_backend_name(s->be));
    if (B == X || (B->data == X->data && n > 0))
        return ks_seterr(KS_ERR_ARG, "%s: B and X must be distinct blocks", fn);
    return KS_OK;
}

/* After the solve: ||b_j - A x_j||_2 / ||b_j||_2 per column, one SpMM. */
static ks_error true_residuals(ks_solver *s, const ks_block *B, const ks_block *X)
{
    ks_block *W = NULL;
    double rn[KS_BLOCK_MAX_COLS], bn[KS_BLOCK_MAX_COLS];
    KS_TRY(ks_block_create(s->be, B->n, B->k, &W));
    ks_error e = ks_block_copy(B, W);
    if (e == KS_OK)
        e = ks_matrix_apply_block(s->A, -1.0, X, 1.0, W);
    if (e == KS_OK)
        e = ks_block_norm2(W, rn);
    if (e == KS_OK)
        e = ks_block_norm2(B, bn);
    ks_block_destroy(&W);
    KS_TRY(e);
    for (int j = 0; j < B->k; j++)
        s->col_stats[j].true_relative_residual = bn[j] > 0.0 ? rn[j] / bn[j] : rn[j];
    return KS_OK;
}

ks_error ks_solver_solve_many(ks_solver *s, const ks_block *B, ks_block *X)
{
    KS_TRY(check_blocks(s, B, X));
    const int k = B->k;
    KS_TRY(stats_reserve(s, k));
    s->ncols = 0;
    s->many_last = 1;
    for (int j = 0; j < k; j++) {
        memset(&s->col_stats[j], 0, sizeof s->col_stats[j]);
        s->col_stats[j].status = KS_SOLVE_NOT_RUN;
        s->col_stats[j].setup_seconds = s->stats.setup_seconds;
    }
    KS_TRY(ks_backend_sync(s->be));
    double t0 = ks_wtime();
    const int quiet = s->prm.print_solve_stats;
    ks_error e;
    if (s->ops->solve_block) {
        e = solve_block(s, B, X);
    } else {
        if (!s->many_fallback_said) {
            s->many_fallback_said = 1;
            ks_log(KS_LOG_INFO, "ksolve: %s has no block form: the %d right-hand sides are "
                                "solved one after the other\n", s->prm.solver, k);
        }
        /* one summary at the end, not one per column */
        s->prm.print_solve_stats = 0;
        e = solve_columns(s, B, X);
        s->prm.print_solve_stats = quiet;
    }
    s->ncols = k;
    s->many_last = 1;
    if (e != KS_OK)
        return ks_adderr(e, "%s solve of %d right-hand sides", s->prm.solver, k);
    KS_TRY(ks_backend_sync(s->be));
    double seconds = ks_wtime() - t0;
    KS_TRY(true_residuals(s, B, X));
    for (int j = 0; j < k; j++) {
        s->col_stats[j].solve_seconds = seconds;
        s->col_stats[j].setup_seconds = s->stats.setup_seconds;
    }
    summarise(s, k, seconds);
    if (s->prm.print_solve_stats)
        ks_solver_print_many(s);
    return KS_OK;
}
