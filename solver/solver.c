/* Solver object: picks the Krylov method and preconditioner by name, owns
 * the work vectors, times setup and solve, and recomputes the true residual
 * after every solve so a reported convergence can be trusted independently
 * of the method's recurrence. */
#include "krylov.h"
#include "many.h"
#include "solver_create.h"
#include "precond_amg.h"
#include "../vec/vec_fused.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Standalone AMG: the stationary iteration x += M (b - A x) with M one AMG
 * cycle, under the same convergence rules, history and monitor as the Krylov
 * methods. Each iteration is one residual SpMV (which also gives the norm
 * the criterion needs) and one cycle from zero, whose first smoothing step
 * then needs no SpMV. */
enum { AMG_R, AMG_Z, AMG_NWORK };

static ks_error amg_stationary_solve(ks_solver *s, const ks_vec *b, ks_vec *x)
{
    ks_vec *r = s->work[AMG_R], *z = s->work[AMG_Z];
    double rnorm;
    int stop;
    KS_TRY(ks_krylov_residual(s, b, x, r));
    KS_TRY(ks_krylov_start(s, b, x, r, &rnorm, &stop));
    for (int it = 1; !stop; it++) {
        KS_TRY(s->pc->ops->apply(s->pc, r, z));
        KS_TRY(ks_vec_axpy(1.0, z, x));
        KS_TRY(ks_krylov_residual(s, b, x, r));
        KS_TRY(ks_krylov_norm(s, r, &rnorm));
        KS_TRY(ks_krylov_check(s, it, rnorm, &stop));
    }
    return KS_OK;
}

static const ks_krylov_ops amg_stationary_ops = {
    .name = "AMG",
    .preconditioned = 1,
    .work_vectors = AMG_NWORK,
    .solve = amg_stationary_solve,
};

static const struct {
    const char *name;
    const ks_krylov_ops *ops;
    int preconditioned; /* 0: the unpreconditioned alias forces NOSOLVER */
} solver_table[] = {
    {"PCG", &ks_krylov_cg_ops, 1},
    {"CG", &ks_krylov_cg_ops, 0},
    {"PBICGSTAB", &ks_krylov_bicgstab_ops, 1},
    {"BICGSTAB", &ks_krylov_bicgstab_ops, 0},
    /* AmgX's GMRES and FGMRES take a preconditioner (NOSOLVER for none),
     * as PETSc's PIPECG and PIPEBICGSTAB do: no P prefix on these names. */
    {"GMRES", &ks_krylov_gmres_ops, 1},
    {"FGMRES", &ks_krylov_fgmres_ops, 1},
    {"PIPECG", &ks_krylov_pipecg_ops, 1},
    {"PIPEBICGSTAB", &ks_krylov_pipebicgstab_ops, 1},
    {"AMG", &amg_stationary_ops, 1},
};

const char *ks_solve_status_name(ks_solve_status st)
{
    switch (st) {
    case KS_SOLVE_CONVERGED: return "CONVERGED";
    case KS_SOLVE_MAX_ITERS: return "MAX_ITERS";
    case KS_SOLVE_BREAKDOWN: return "BREAKDOWN";
    case KS_SOLVE_DIVERGED: return "DIVERGED";
    case KS_SOLVE_NAN: return "NAN";
    case KS_SOLVE_NOT_RUN: return "NOT_RUN";
    }
    return "UNKNOWN";
}

ks_error ks_solver_create_params(ks_backend *be, const ks_solver_params *prm, ks_solver **out)
{
    if (!out)
        return ks_seterr(KS_ERR_ARG, "ks_solver_create: NULL output pointer");
    *out = NULL;
    if (!be || !prm)
        return ks_seterr(KS_ERR_ARG, "ks_solver_create: NULL backend or params");
    int k = -1;
    for (int i = 0; i < (int)(sizeof solver_table / sizeof solver_table[0]); i++)
        if (strcasecmp(prm->solver, solver_table[i].name) == 0)
            k = i;
    if (k < 0)
        return ks_seterr(KS_ERR_CONFIG,
                         "solver.solver: unknown solver '%s' (expected PCG, CG, PBICGSTAB, "
                         "BICGSTAB, GMRES, FGMRES, PIPECG, PIPEBICGSTAB, AMG)",
                         prm->solver);
    /* config.c validates these for JSON input; params built in code (tests,
     * benchmarks, embedding) get the same checks here. */
    if (prm->max_iters < 0)
        return ks_seterr(KS_ERR_CONFIG, "solver.max_iters: %d is negative", prm->max_iters);
    if (!(prm->tolerance >= 0.0) || !isfinite(prm->tolerance))
        return ks_seterr(KS_ERR_CONFIG, "solver.tolerance: %g is not a finite number >= 0",
                         prm->tolerance);
    if (prm->convergence != KS_CONV_ABSOLUTE && prm->convergence != KS_CONV_RELATIVE_INI &&
        prm->convergence != KS_CONV_RELATIVE_RHS)
        return ks_seterr(KS_ERR_CONFIG, "solver.convergence: invalid value %d",
                         (int)prm->convergence);
    if (prm->norm != KS_NORM_L1 && prm->norm != KS_NORM_L2 && prm->norm != KS_NORM_LMAX)
        return ks_seterr(KS_ERR_CONFIG, "solver.norm: invalid value %d", (int)prm->norm);
    if (solver_table[k].ops == &ks_krylov_gmres_ops ||
        solver_table[k].ops == &ks_krylov_fgmres_ops) {
        if (prm->gmres_n_restart < 1 || prm->gmres_krylov_dim < 0)
            return ks_seterr(KS_ERR_CONFIG,
                             "solver.gmres_n_restart %d must be >= 1 and gmres_krylov_dim %d "
                             ">= 0",
                             prm->gmres_n_restart, prm->gmres_krylov_dim);
        if (prm->norm != KS_NORM_L2)
            return ks_seterr(KS_ERR_CONFIG,
                             "solver.norm: %s minimises the residual's 2-norm and measures no "
                             "other; use L2",
                             solver_table[k].name);
    }
    ks_solver *s = ks_calloc(1, sizeof *s, "solver");
    if (!s)
        return KS_ERR_MEMORY;
    s->ops = solver_table[k].ops;
    s->be = be;
    s->prm = *prm;
    s->scale = 1.0;
    snprintf(s->prm.solver, sizeof s->prm.solver, "%s", solver_table[k].name);
    if (!solver_table[k].preconditioned)
        snprintf(s->prm.pc.solver, sizeof s->prm.pc.solver, "NOSOLVER");
    if (solver_table[k].ops == &amg_stationary_ops) {
        /* Solver "AMG": the AMG keys sit in the solver scope (config.c
         * stores them in pc.amg); the cycle is the "preconditioner". */
        snprintf(s->prm.pc.solver, sizeof s->prm.pc.solver, "AMG");
        ks_error ec = ks_amg_params_check(&s->prm.pc.amg, "solver");
        if (ec != KS_OK) {
            free(s);
            return ec;
        }
    }
    s->stats.status = KS_SOLVE_NOT_RUN;
    ks_error e = ks_precond_create(be, &s->prm.pc, &s->pc);
    if (e != KS_OK) {
        free(s);
        return e;
    }
    *out = s;
    return KS_OK;
}

ks_error ks_solver_create(ks_backend *be, const ks_config *cfg, ks_solver **s)
{
    if (s)
        *s = NULL;
    if (!cfg)
        return ks_seterr(KS_ERR_ARG, "ks_solver_create: NULL config");
    const ks_solver_params *prm = ks_config_solver_params(cfg);
    if (!prm)
        return ks_seterr(KS_ERR_ARG, "ks_solver_create: config has no solver parameters");
    return ks_solver_create_params(be, prm, s);
}

static void free_work(ks_solver *s)
{
    for (int i = 0; i < s->nwork; i++)
        ks_vec_destroy(&s->work[i]);
    free(s->work);
    s->work = NULL;
    s->nwork = 0;
}

static int work_count(const ks_solver *s)
{
    return s->ops->work_count ? s->ops->work_count(&s->prm) : s->ops->work_vectors;
}

/* Drop the current setup: the solver refuses to solve until a setup succeeds. */
static void release_setup(ks_solver *s)
{
    s->A = NULL;
    free_work(s);
    s->pc->ops->destroy(s->pc);
}

ks_error ks_solver_setup(ks_solver *s, ks_matrix *A)
{
    if (!s)
        return ks_seterr(KS_ERR_ARG, "ks_solver_setup: NULL solver");
    /* The previous setup goes first, before any check: a failed setup (a
     * NULL or unsuitable matrix included) must not leave the old matrix in
     * use, where a later solve would silently solve the wrong system. Its
     * memory is not held beside the new one's either. */
    release_setup(s);
    if (!A)
        return ks_seterr(KS_ERR_ARG, "ks_solver_setup: NULL matrix");
    if (ks_matrix_backend(A) != s->be)
        return ks_seterr(KS_ERR_ARG,
                         "ks_solver_setup: matrix lives on backend %s, solver on %s (objects "
                         "must share one backend)",
                         ks_backend_name(ks_matrix_backend(A)), ks_backend_name(s->be));
    ks_int n = ks_matrix_rows(A);
    if (ks_matrix_cols(A) != n)
        return ks_seterr(KS_ERR_SIZE, "ks_solver_setup: matrix is %ld x %ld, must be square",
                         (long)n, (long)ks_matrix_cols(A));
    KS_TRY(ks_backend_sync(s->be));
    double t0 = ks_wtime();
    ks_error e = s->pc->ops->setup(s->pc, A);
    if (e != KS_OK) {
        s->pc->ops->destroy(s->pc);
        (void)ks_backend_trim(s->be); /* the message is the setup's */
        return ks_adderr(e, "%s setup", s->prm.solver);
    }
    /* One extra vector for the true residual after the solve. */
    int nw = work_count(s) + 1;
    s->work = ks_calloc((size_t)nw, sizeof *s->work, "solver work vector list");
    if (!s->work) {
        s->pc->ops->destroy(s->pc);
        return KS_ERR_MEMORY;
    }
    for (int i = 0; i < nw; i++) {
        e = ks_matrix_vec_create(A, &s->work[i]);
        if (e != KS_OK) {
            free_work(s);
            s->pc->ops->destroy(s->pc);
            return ks_adderr(e, "%s setup: work vector %d of %d", s->prm.solver, i + 1, nw);
        }
        s->nwork = i + 1;
    }
    KS_TRY(ks_backend_trim(s->be));
    KS_TRY(ks_backend_sync(s->be));
    s->stats.setup_seconds = ks_wtime() - t0;
    s->A = A;
    return KS_OK;
}

ks_error ks_solver_resetup(ks_solver *s, ks_matrix *A)
{
    if (!s || !A)
        return ks_seterr(KS_ERR_ARG, "ks_solver_resetup: NULL solver or matrix");
    if (!s->A || !s->pc->ops->resetup || ks_matrix_rows(A) != ks_matrix_rows(s->A))
        return ks_solver_setup(s, A); /* nothing to keep: a plain setup */
    /* A failed re-setup leaves the solver unusable until a setup succeeds. */
    s->A = NULL;
    if (ks_matrix_backend(A) != s->be)
        return ks_seterr(KS_ERR_ARG,
                         "ks_solver_resetup: matrix lives on backend %s, solver on %s",
                         ks_backend_name(ks_matrix_backend(A)), ks_backend_name(s->be));
    KS_TRY(ks_backend_sync(s->be));
    double t0 = ks_wtime();
    ks_error e = s->pc->ops->resetup(s->pc, A);
    if (e != KS_OK)
        return ks_adderr(e, "%s re-setup", s->prm.solver);
    KS_TRY(ks_backend_trim(s->be));
    KS_TRY(ks_backend_sync(s->be));
    s->stats.setup_seconds = ks_wtime() - t0;
    s->A = A;
    return KS_OK;
}

void ks_solver_print_setup(const ks_solver *s, FILE *out)
{
    if (!s || !out || !s->A || !s->pc || !s->pc->ops->print)
        return;
    s->pc->ops->print(s->pc, out);
}

ks_error ks_solver_precondition(ks_solver *s, const ks_vec *r, ks_vec *z)
{
    if (!s || !r || !z)
        return ks_seterr(KS_ERR_ARG, "ks_solver_precondition: NULL solver or vector");
    if (!s->A)
        return ks_seterr(KS_ERR_ARG, "ks_solver_precondition: no matrix (ks_solver_setup has "
                                     "not succeeded)");
    ks_int n = ks_matrix_rows(s->A);
    if (ks_vec_size(r) != n || ks_vec_size(z) != n)
        return ks_seterr(KS_ERR_SIZE, "ks_solver_precondition: the matrix has %ld rows, r %ld "
                                      "entries, z %ld",
                         (long)n, (long)ks_vec_size(r), (long)ks_vec_size(z));
    if (ks_vec_backend(r) != s->be || ks_vec_backend(z) != s->be || r == z)
        return ks_seterr(KS_ERR_ARG, "ks_solver_precondition: r and z must be distinct vectors "
                                     "on the solver's backend");
    return s->pc->ops->apply(s->pc, r, z);
}

ks_error ks_solver_hierarchy(const ks_solver *s, ks_hierarchy_info *info)
{
    if (!s || !info)
        return ks_seterr(KS_ERR_ARG, "ks_solver_hierarchy: NULL solver or info");
    memset(info, 0, sizeof *info);
    if (!s->A || !s->pc || !s->pc->ops->hierarchy)
        return KS_OK;
    return s->pc->ops->hierarchy(s->pc, info);
}

ks_error ks_solver_profile_cycles(ks_solver *s, int on)
{
    if (!s)
        return ks_seterr(KS_ERR_ARG, "ks_solver_profile_cycles: NULL solver");
    if (!s->A || !s->pc || !s->pc->ops->profile)
        return ks_seterr(KS_ERR_ARG, "ks_solver_profile_cycles: no AMG hierarchy (the "
                                     "preconditioner is %s%s)",
                         s->pc ? s->pc->ops->name : "none", s->A ? "" : ", or no setup yet");
    return s->pc->ops->profile(s->pc, on);
}

static void print_stats(const ks_solver *s)
{
    const ks_solve_stats *st = &s->stats;
    if (s->ops == &amg_stationary_ops)
        ks_log(KS_LOG_INFO, "AMG on %s: %s after %d iteration%s\n", ks_backend_name(s->be),
               ks_solve_status_name(st->status), st->iterations, st->iterations == 1 ? "" : "s");
    else
        ks_log(KS_LOG_INFO, "%s + %s on %s: %s after %d iteration%s\n", s->prm.solver,
               s->pc->ops->name, ks_backend_name(s->be), ks_solve_status_name(st->status),
               st->iterations, st->iterations == 1 ? "" : "s");
    ks_log(KS_LOG_INFO, "  residual (%s) %.3e -> %.3e, relative %.3e (%s, tolerance %.1e)\n",
           ks_name_of(ks_norm_names, s->prm.norm), st->initial_residual, st->final_residual,
           st->relative_residual, ks_name_of(ks_conv_names, s->prm.convergence), s->prm.tolerance);
    ks_log(KS_LOG_INFO, "  true relative residual ||b-Ax||/||b|| = %.3e\n",
           st->true_relative_residual);
    /* One message per line, so a callback gets whole lines. */
    char per_it[48] = "";
    if (st->iterations > 0)
        snprintf(per_it, sizeof per_it, " (%.4f ms/iteration)",
                 1e3 * st->solve_seconds / st->iterations);
    ks_log(KS_LOG_INFO, "  setup %.4f s, solve %.4f s%s\n", st->setup_seconds, st->solve_seconds,
           per_it);
    if (st->breakdown[0])
        ks_log(KS_LOG_INFO, "  reason: %s\n", st->breakdown);
}

void ks_solver_print_many(const ks_solver *s)
{
    const ks_solve_stats *st = &s->stats;
    ks_log(KS_LOG_INFO, "%s + %s on %s, %d right-hand sides: %s (slowest column %d iteration%s)\n",
           s->prm.solver, s->pc->ops->name, ks_backend_name(s->be), s->ncols,
           ks_solve_status_name(st->status), st->iterations, st->iterations == 1 ? "" : "s");
    for (int j = 0; j < s->ncols; j++) {
        const ks_solve_stats *c = &s->col_stats[j];
        ks_log(KS_LOG_INFO, "  column %d: %s after %d iterations, relative residual %.3e, true "
                            "%.3e%s%s\n",
               j, ks_solve_status_name(c->status), c->iterations, c->relative_residual,
               c->true_relative_residual, c->breakdown[0] ? ": " : "", c->breakdown);
    }
    ks_log(KS_LOG_INFO, "  setup %.4f s, solve %.4f s\n", st->setup_seconds, st->solve_seconds);
}

ks_error ks_solver_solve(ks_solver *s, const ks_vec *b, ks_vec *x)
{
    if (!s || !b || !x)
        return ks_seterr(KS_ERR_ARG, "ks_solver_solve: NULL solver or vector");
    if (!s->A)
        return ks_seterr(KS_ERR_ARG, "ks_solver_solve: no matrix (ks_solver_setup has not "
                                     "succeeded)");
    ks_int n = ks_matrix_rows(s->A);
    if (ks_vec_size(b) != n || ks_vec_size(x) != n)
        return ks_seterr(KS_ERR_SIZE,
                         "ks_solver_solve: size mismatch: matrix has %ld rows, b has %ld "
                         "entries, x has %ld",
                         (long)n, (long)ks_vec_size(b), (long)ks_vec_size(x));
    if (ks_vec_backend(b) != s->be || ks_vec_backend(x) != s->be)
        return ks_seterr(KS_ERR_ARG,
                         "ks_solver_solve: b and x must live on the solver's backend (%s)",
                         ks_backend_name(s->be));
    if (b == x)
        return ks_seterr(KS_ERR_ARG, "ks_solver_solve: b and x must be distinct vectors");
    s->ncols = 1;
    s->many_last = 0;
    return ks_solver_solve_one(s, b, x);
}

ks_error ks_solver_solve_one(ks_solver *s, const ks_vec *b, ks_vec *x)
{
    double setup = s->stats.setup_seconds;
    memset(&s->stats, 0, sizeof s->stats);
    s->stats.setup_seconds = setup;
    s->stats.status = KS_SOLVE_NOT_RUN;

    KS_TRY(ks_backend_sync(s->be));
    double t0 = ks_wtime();
    /* A right-hand side so large (or small) that the iteration's inner
     * products (r'z, p'Ap: squares of the residual) overflow (or underflow)
     * is solved as 2^-e b from 2^-e x0, and the answer scaled back. Powers
     * of two scale exactly, so the iterates are the unscaled solve's, only
     * without the overflow; b of ordinary size is not touched. The extra
     * work vector (the true residual's, free during the solve) holds 2^-e b. */
    ks_vec *w = s->work[s->nwork - 1];
    const ks_vec *bs = b;
    double bmax;
    /* b's and x's layouts first: a misfit refuses on every rank before the
     * reduction below, which a rank that refused would never join */
    KS_TRY(ks_vec_check_same(b, w, "ks_solver_solve", "b", "the matrix's vectors"));
    KS_TRY(ks_vec_check_same(x, w, "ks_solver_solve", "x", "the matrix's vectors"));
    KS_TRY(ks_vec_norminf(b, &bmax));
    s->scale = 1.0;
    if (isfinite(bmax) && bmax > 0.0 && (bmax > 0x1p300 || bmax < 0x1p-300)) {
        int ex;
        frexp(bmax, &ex);
        ex = ex > 1023 ? 1023 : ex < -1022 ? -1022 : ex; /* 2^ex and 2^-ex both normal */
        s->scale = ldexp(1.0, -ex);
        KS_TRY(ks_vec_copy(b, w));
        KS_TRY(ks_vec_scale(w, s->scale));
        KS_TRY(ks_vec_scale(x, s->scale));
        bs = w;
    }
    ks_error e = s->ops->solve(s, bs, x);
    if (s->scale != 1.0) {
        ks_error eu = ks_vec_scale(x, 1.0 / s->scale);
        e = e != KS_OK ? e : eu;
        ks_solve_stats *st = &s->stats;
        st->rhs_norm /= s->scale;
        st->initial_residual /= s->scale;
        st->final_residual /= s->scale;
        for (int i = 0; st->history && i < st->history_len; i++)
            s->history[i] /= s->scale;
        s->scale = 1.0;
    }
    if (e != KS_OK)
        return ks_adderr(e, "%s solve", s->prm.solver);
    KS_TRY(ks_backend_sync(s->be));
    s->stats.solve_seconds = ks_wtime() - t0;

    /* True residual with a fresh SpMV, in the 2-norm whatever the criterion. */
    double rn, bn;
    KS_TRY(ks_vec_copy(b, w));
    KS_TRY(ks_matrix_apply(s->A, -1.0, x, 1.0, w));
    KS_TRY(ks_vec_norm2(w, &rn));
    KS_TRY(ks_vec_norm2(b, &bn));
    s->stats.true_relative_residual = bn > 0.0 ? rn / bn : rn;
    if (s->prm.print_solve_stats)
        print_stats(s);
    return KS_OK;
}

const ks_solve_stats *ks_solver_stats(const ks_solver *s) { return s ? &s->stats : NULL; }

const char *ks_solver_name(const ks_solver *s) { return s ? s->prm.solver : ""; }

const char *ks_solver_preconditioner_name(const ks_solver *s)
{
    return s && s->pc ? s->pc->ops->name : "";
}

void ks_solver_destroy(ks_solver **sp)
{
    ks_solver *s = sp ? *sp : NULL;
    if (!s)
        return;
    *sp = NULL; /* a second destroy of the same handle is a no-op */
    free_work(s);
    ks_precond_destroy(s->pc);
    free(s->history);
    ks_solver_free_columns(s);
    free(s);
}
