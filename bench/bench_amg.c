/* AMG benchmark: setup and solve times, iterations and complexities of
 * PCG / PBiCGStab + AMG (or AMG alone) on one or more backends.
 *
 *   bench_amg --gen poisson3d_7 --n 128 --backend cpu,cuda
 *   bench_amg --mtx A.mtx.gz --config examples/configs/pcg_amg_aggregation.json
 *   bench_amg --n 64 --algorithm AGGREGATION --solver PBICGSTAB -p solver.max_iters=50
 *   bench_amg --n 128 --backend cuda --vcycle-vs-spmv
 *   bench_amg --n 128 --backend cuda --level-formats
 *
 * Problem: b = A x with x_i = sin(i), x0 = 0, relative tolerance 1e-8
 * (RELATIVE_RHS) unless --config or -p say otherwise. Per backend: one
 * warm-up setup and solve (first touch, lazy allocations, cuSPARSE
 * buffers), then the median of --repeat setups and of --repeat solves.
 * --vcycle-vs-spmv also times one AMG cycle (as the preconditioner applies
 * it: from x = 0) against one fine-level SpMV; the target on the
 * GPU is a V-cycle costing at most 10 fine-level SpMVs.
 *
 * --level-formats (issue 4) compares the hierarchy's per-level SpMV formats
 * with plain CSR: per level, one SpMV y = A_l x in the level's own format
 * against the same operator as cuSPARSE CSR ("cusparse") and as our vector
 * CSR ("csr_vector"); then whole solves with the AMG level format
 * (spmv_format of the AMG scope) as configured (default "auto") and set to
 * each CSR format, the fine matrix in the same format (--format for the
 * first run). Each configuration is set up once: the solves are compared,
 * and a 128^3 hierarchy takes seconds to build on the host. The cpu backend
 * has only "csr": it is then the baseline, so the mode runs there too.
 *
 * Uses the public API and config strings; the hierarchy (complexities,
 * levels, cycle) and the parsed AMG settings come from private headers (a
 * benchmark may look inside). */
#include "ksolve.h"
#include "../solver/solver_impl.h"
#include "../solver/precond_amg.h"
#include "../cli/problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SETS 32
#define MAX_BACKENDS 4

typedef struct opts {
    const char *gen, *mtx, *backends, *config, *algorithm, *solver, *format;
    int n, repeat, vcycle, level_formats, breakdown;
    double tol;
    int nsets;
    const char *set_key[MAX_SETS];
    const char *set_val[MAX_SETS];
    char set_buf[MAX_SETS][256];
} opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_amg [options]\n"
            "  --gen NAME          generator (poisson3d_7, poisson3d_27, aniso3d, ...) [poisson3d_7]\n"
            "  --n N               grid points per axis [128]\n"
            "  --mtx FILE          Matrix Market matrix instead of a generator\n"
            "  --backend LIST      cpu, cuda or cpu,cuda (prints GPU/CPU ratios) [cpu]\n"
            "  --config FILE       JSON config (its \"solver\" scope is used as given)\n"
            "  --algorithm A       CLASSICAL or AGGREGATION, without --config [CLASSICAL]\n"
            "  --solver S          PCG, PBICGSTAB or AMG (cycles alone), without --config [PCG]\n"
            "  --tol T             relative tolerance, without --config [1e-8]\n"
            "  --format F          SpMV format of A [auto]\n"
            "  -p, --set KEY=VAL   any config key (ks_config_set), applied last; repeatable\n"
            "  --repeat R          timed setups and solves, medians reported [3]\n"
            "  --vcycle-vs-spmv    also time one AMG cycle against one fine-level SpMV\n"
            "  --vcycle-breakdown  --vcycle-vs-spmv, and each step of the V-cycle timed\n"
            "                      alone per level (where the cycle's time goes)\n"
            "  --level-formats     per AMG level, one SpMV in the level's format against\n"
            "                      cusparse and csr_vector (cpu: csr); then whole solves with\n"
            "                      the AMG level format (spmv_format) as configured [auto]\n"
            "                      and set to each CSR format, the fine matrix likewise;\n"
            "                      one setup per configuration, --repeat solves each\n");
}

static int parse(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->gen = "poisson3d_7";
    o->backends = "cpu";
    o->algorithm = "CLASSICAL";
    o->solver = "PCG";
    o->format = "auto";
    o->n = 128;
    o->repeat = 3;
    o->tol = 1e-8;
    int gen_given = 0, algo_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (!strcmp(a, "--vcycle-vs-spmv")) {
            o->vcycle = 1;
            continue;
        }
        if (!strcmp(a, "--vcycle-breakdown")) {
            o->vcycle = o->breakdown = 1;
            continue;
        }
        if (!strcmp(a, "--level-formats")) {
            o->level_formats = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "bench_amg: %s needs a value (or unknown option)\n", a);
            return 1;
        }
        const char *v = argv[++i];
        char *end = NULL;
        if (!strcmp(a, "--gen")) {
            o->gen = v;
            gen_given = 1;
        } else if (!strcmp(a, "--mtx")) {
            o->mtx = v;
        } else if (!strcmp(a, "--backend")) {
            o->backends = v;
        } else if (!strcmp(a, "--config")) {
            o->config = v;
        } else if (!strcmp(a, "--algorithm")) {
            o->algorithm = v;
            algo_given = 1;
        } else if (!strcmp(a, "--solver")) {
            o->solver = v;
            algo_given = 1;
        } else if (!strcmp(a, "--format")) {
            o->format = v;
        } else if (!strcmp(a, "--n")) {
            o->n = (int)strtol(v, &end, 10);
            gen_given = 1;
        } else if (!strcmp(a, "--repeat")) {
            o->repeat = (int)strtol(v, &end, 10);
        } else if (!strcmp(a, "--tol")) {
            o->tol = strtod(v, &end);
            algo_given = 1;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--set")) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || o->nsets >= MAX_SETS || (size_t)(eq - v) >= 255) {
                fprintf(stderr, "bench_amg: %s wants KEY=VALUE (at most %d)\n", a, MAX_SETS);
                return 1;
            }
            snprintf(o->set_buf[o->nsets], sizeof o->set_buf[0], "%.*s", (int)(eq - v), v);
            o->set_key[o->nsets] = o->set_buf[o->nsets];
            o->set_val[o->nsets] = eq + 1;
            o->nsets++;
        } else {
            fprintf(stderr, "bench_amg: unknown option %s\n", a);
            usage(stderr);
            return 1;
        }
        if (end && *end) {
            fprintf(stderr, "bench_amg: %s: '%s' is not a number\n", a, v);
            return 1;
        }
    }
    if (o->n < 2 || o->repeat < 1 || !(o->tol >= 0)) {
        fprintf(stderr, "bench_amg: need --n >= 2, --repeat >= 1, --tol >= 0\n");
        return 1;
    }
    if (o->mtx && gen_given) {
        fprintf(stderr, "bench_amg: give either --mtx or --gen/--n\n");
        return 1;
    }
    if (o->config && algo_given) {
        fprintf(stderr, "bench_amg: --algorithm, --solver and --tol describe the solver when "
                        "there is no --config (use -p KEY=VALUE to change a config)\n");
        return 1;
    }
    return 0;
}

/* Config key of the AMG's per-level SpMV format: the AMG is the solver
 * itself or its preconditioner; NULL without AMG. */
static const char *level_format_key(const ks_config *cfg)
{
    const ks_solver_params *p = ks_config_solver_params(cfg);
    if (!strcmp(p->solver, "AMG"))
        return "solver.spmv_format";
    if (!strcmp(p->pc.solver, "AMG"))
        return "solver.preconditioner.spmv_format";
    return NULL;
}

/* level_format, when not NULL, is set after the -p overrides. */
static ks_error make_config(const opts *o, const char *level_format, ks_config **cfg)
{
    if (o->config) {
        /* a config of the ksolve tool (its problem keys are accepted; the
         * problem here is the benchmark's own) */
        KS_TRY(ks_config_create_from_file_scoped(o->config, &ks_problem_scope, cfg));
    } else {
        char json[512];
        if (!strcmp(o->solver, "AMG"))
            snprintf(json, sizeof json,
                     "{\"solver\": {\"solver\": \"AMG\", \"max_iters\": 500, \"tolerance\": %.17g,"
                     " \"convergence\": \"RELATIVE_RHS\", \"algorithm\": \"%s\"}}",
                     o->tol, o->algorithm);
        else
            snprintf(json, sizeof json,
                     "{\"solver\": {\"solver\": \"%s\", \"max_iters\": 500, \"tolerance\": %.17g,"
                     " \"convergence\": \"RELATIVE_RHS\", \"preconditioner\": {\"solver\": "
                     "\"AMG\", \"algorithm\": \"%s\"}}}",
                     o->solver, o->tol, o->algorithm);
        KS_TRY(ks_config_create_from_string(json, cfg));
    }
    /* Benchmarks do not need the residual history. */
    KS_TRY(ks_config_set(*cfg, "solver.store_res_history", "0"));
    for (int i = 0; i < o->nsets; i++)
        KS_TRY(ks_config_set(*cfg, o->set_key[i], o->set_val[i]));
    if (level_format) {
        const char *key = level_format_key(*cfg);
        if (!key)
            return ks_seterr(KS_ERR_CONFIG, "no AMG solver or preconditioner to set the level "
                                            "format of");
        KS_TRY(ks_config_set(*cfg, key, level_format));
    }
    return KS_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct result {
    char backend[16];
    char level_format[KS_NAME_MAX], fine_format[KS_NAME_MAX]; /* --level-formats */
    double setup_s, solve_s, per_it_s;
    int iterations;
    int levels;
    double opc, gridc;
    double cycle_s, spmv_s, cycle_est; /* --vcycle-vs-spmv */
    ks_solve_status status;
    double true_rel;
} result;

#define FAIL(call)                                                                       \
    do {                                                                                 \
        ks_error e_ = (call);                                                            \
        if (e_ != KS_OK) {                                                               \
            fprintf(stderr, "bench_amg: %s: %s: %s\n", #call, ks_error_name(e_),         \
                    ks_last_error());                                                    \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

/* Nonzeros touched by one cycle from x = 0, in units of nnz(A_0): an
 * estimate of the cycle's cost in fine-level SpMVs (each smoothing sweep,
 * residual, restriction and prolongation is one SpMV with its level's
 * operator; Chebyshev sweeps cost `degree` SpMVs; the coarsest level is a
 * dense n x n product). V-cycles only; W and F visit coarse levels more. */
static double cycle_estimate(const ks_amg *amg)
{
    const ks_amg_params *p = &amg->prm;
    double per_sweep = amg->smoother == KS_SMOOTHER_CHEBYSHEV ? p->smoother.chebyshev_degree : 1;
    double nnz0 = (double)amg->levels[0].A.nnz, sum = 0.0;
    for (int l = 0; l < amg->nlevels - 1; l++) {
        const ks_amg_level *L = &amg->levels[l];
        double a = (double)L->A.nnz;
        /* The first presweep from x = 0 needs no residual SpMV for the
         * Jacobi types; count every sweep anyway (an upper estimate). */
        sum += (p->presweeps + p->postsweeps) * per_sweep * a + a;
        sum += (double)L->P.nnz + (double)L->R.nnz;
    }
    double nc = (double)amg->levels[amg->nlevels - 1].A.nrows;
    sum += amg->coarse_inv ? nc * nc : 20.0 * amg->levels[amg->nlevels - 1].A.nnz;
    return sum / nnz0;
}

/* Seconds per call of f, timed over enough calls to last ~0.2 s (at least
 * 5, at most 2000), after two warm-up calls; the median of 3 such blocks. */
typedef ks_error (*op_fn)(void *ctx);
static ks_error time_op(ks_backend *be, op_fn f, void *ctx, double *sec)
{
    KS_TRY(f(ctx));
    KS_TRY(f(ctx));
    KS_TRY(ks_backend_sync(be));
    double t0 = ks_wtime();
    KS_TRY(f(ctx));
    KS_TRY(ks_backend_sync(be));
    double one = ks_wtime() - t0;
    int reps = one > 0 ? (int)(0.2 / one) : 2000;
    reps = reps < 5 ? 5 : reps > 2000 ? 2000 : reps;
    double blocks[3];
    for (int k = 0; k < 3; k++) {
        KS_TRY(ks_backend_sync(be));
        t0 = ks_wtime();
        for (int i = 0; i < reps; i++)
            KS_TRY(f(ctx));
        KS_TRY(ks_backend_sync(be));
        blocks[k] = (ks_wtime() - t0) / reps;
    }
    *sec = median(blocks, 3);
    return KS_OK;
}

typedef struct op_ctx {
    ks_amg *amg;
    ks_matrix *M;
    ks_vec *in, *out;
} op_ctx;

static ks_error op_cycle(void *c)
{
    op_ctx *o = c;
    return ks_amg_precond_cycle(o->amg, o->in, o->out); /* as PCG calls it */
}

static ks_error op_spmv(void *c)
{
    op_ctx *o = c;
    return ks_matrix_apply(o->M, 1.0, o->in, 0.0, o->out);
}

/* Seconds of one SpMV y = M x (time_op), on vectors made for it. */
static ks_error time_spmv(ks_backend *be, ks_matrix *M, double *sec)
{
    ks_vec *in = NULL, *out = NULL;
    ks_error e = ks_vec_create(be, ks_matrix_cols(M), &in);
    if (e == KS_OK)
        e = ks_vec_create(be, ks_matrix_rows(M), &out);
    if (e == KS_OK)
        e = ks_vec_fill(in, 1.0);
    if (e == KS_OK) {
        op_ctx c = {NULL, M, in, out};
        e = time_op(be, op_spmv, &c, sec);
    }
    ks_vec_destroy(in);
    ks_vec_destroy(out);
    return e;
}

/* --vcycle-breakdown: each step of a V-cycle timed alone (time_op, back to
 * back), per level, against the measured cycle. The sum of the steps times
 * their count per cycle is what the cycle would cost with no gaps between
 * kernels; the difference to the measured cycle is latency. */
enum { BD_FIRST, BD_PASS, BD_RESID, BD_RESTRICT, BD_PROLONG, BD_COARSE, BD_NOPS };
static const char *const bd_names[BD_NOPS] = {"from x=0", "smooth pass", "residual",
                                              "restrict", "prolong", "coarse"};
typedef struct bd_ctx {
    ks_amg *amg;
    int l, op;
    ks_vec *b, *x; /* the level's b and x (level 0: the caller's) */
} bd_ctx;

/* Smoothing steps the first pass from x = 0 makes (Chebyshev folds two). */
static int first_covers(const ks_amg *amg, int l)
{
    return amg->smoother == KS_SMOOTHER_CHEBYSHEV && ks_amg_chebyshev_steps(amg, l) > 1 ? 2 : 1;
}

static ks_error op_breakdown(void *c)
{
    bd_ctx *o = c;
    ks_amg *amg = o->amg;
    ks_amg_level *L = &amg->levels[o->l];
    ks_amg_xbuf xb = {o->x, L->w};
    switch (o->op) {
    case BD_FIRST: /* as the cycle starts a level from x = 0 */
        if (first_covers(amg, o->l) == 2)
            return ks_amg_jacobi_two_from_zero(amg, o->l, o->b, &xb, 1.0, 0.1, 0.5,
                                               ks_amg_chebyshev_steps(amg, o->l) > 2);
        return ks_amg_jacobi_step(amg, o->l, o->b, &xb, 0.0, 1.0, 1, 0);
    case BD_PASS: /* a Chebyshev step with x_old (the costliest kind) */
        return ks_amg_jacobi_step(amg, o->l, o->b, &xb, 0.1, 0.5, 0, 0);
    case BD_RESID: return ks_amg_residual(amg, o->l, o->b, o->x, L->r);
    case BD_RESTRICT:
        return ks_matrix_apply(L->Rm, 1.0, L->r, 0.0, amg->levels[o->l + 1].b);
    case BD_PROLONG: return ks_matrix_apply(L->Pm, 1.0, amg->levels[o->l + 1].x, 1.0, o->x);
    default: return ks_matrix_apply(amg->coarse_inv, 1.0, o->b, 0.0, o->x);
    }
}

static ks_error op_floor(void *c)
{
    bd_ctx *o = c;
    return ks_vec_axpy(1e-3, o->b, o->x);
}

static int vcycle_breakdown(ks_backend *be, ks_amg *amg, ks_vec *b0, ks_vec *x0,
                            const result *res)
{
    const ks_amg_params *p = &amg->prm;
    if (amg->prm.cycle != KS_AMG_V || amg->smoother == KS_SMOOTHER_GS ||
        amg->smoother == KS_SMOOTHER_SGS || !amg->coarse_inv) {
        printf("  (--vcycle-breakdown: V-cycles with Jacobi-type or Chebyshev smoothers and a "
               "dense coarse solve only)\n");
        return 0;
    }
    printf("  V-cycle step by step (us, each step alone, back to back; x N = times per cycle; "
           "fine SpMV %.1f us):\n", 1e6 * res->spmv_s);
    printf("  %5s %9s %10s %-12s", "level", "rows", "nonzeros", "format");
    for (int k = 0; k < BD_NOPS; k++)
        printf(" %15s", bd_names[k]);
    printf(" %9s %7s\n", "level us", "SpMVs");
    double total = 0.0;
    for (int l = 0; l < amg->nlevels; l++) {
        ks_amg_level *L = &amg->levels[l];
        int last = l == amg->nlevels - 1;
        int n[BD_NOPS] = {0};
        if (last) {
            n[BD_COARSE] = 1;
        } else {
            int steps = ks_amg_smooth_steps(amg, l, p->presweeps) +
                        ks_amg_smooth_steps(amg, l, p->postsweeps);
            n[BD_FIRST] = p->presweeps > 0;
            n[BD_PASS] = steps - n[BD_FIRST] * first_covers(amg, l);
            n[BD_RESID] = n[BD_RESTRICT] = n[BD_PROLONG] = 1;
        }
        printf("  %5d %9ld %10ld %-12s", l, (long)L->A.nrows, (long)L->A.nnz,
               ks_matrix_format(ks_amg_cycle_matrix(amg, l)));
        double lsum = 0.0;
        for (int k = 0; k < BD_NOPS; k++) {
            if (!n[k]) {
                printf(" %15s", "-");
                continue;
            }
            bd_ctx c = {amg, l, k, l ? L->b : b0, l ? L->x : x0};
            double t;
            if (time_op(be, op_breakdown, &c, &t) != KS_OK) {
                fprintf(stderr, "bench_amg: breakdown level %d %s: %s\n", l, bd_names[k],
                        ks_last_error());
                return 1;
            }
            char cell[32];
            snprintf(cell, sizeof cell, "%.1f x %d", 1e6 * t, n[k]);
            printf(" %15s", cell);
            lsum += n[k] * t;
        }
        total += lsum;
        printf(" %9.1f %7.2f\n", 1e6 * lsum, lsum / res->spmv_s);
    }
    printf("  steps alone %.1f us = %.2f SpMVs; measured cycle %.1f us = %.2f SpMVs "
           "(the rest is launch latency and gaps)\n",
           1e6 * total, total / res->spmv_s, 1e6 * res->cycle_s, res->cycle_s / res->spmv_s);
    /* The floor of any one-kernel step: an axpy on the coarsest level's
     * vectors. A coarse solve at this time cannot be beaten by a library
     * call (cuBLAS gemv, cuSOLVER's two triangular solves) of as many or
     * more launches. */
    const int lc = amg->nlevels - 1; /* level 0 (the caller's b, x) when it is the only one */
    bd_ctx c = {amg, lc, BD_NOPS, lc ? amg->levels[lc].b : b0, lc ? amg->levels[lc].x : x0};
    double floor_s;
    if (time_op(be, op_floor, &c, &floor_s) != KS_OK) {
        fprintf(stderr, "bench_amg: breakdown floor: %s\n", ks_last_error());
        return 1;
    }
    printf("  launch floor (axpy of %ld entries) %.1f us\n",
           (long)amg->levels[amg->nlevels - 1].A.nrows, 1e6 * floor_s);
    return 0;
}

/* A configured solve on a backend, kept open after run_solver so the
 * caller can look at the hierarchy; run_close frees it. */
typedef struct run {
    ks_config *cfg;
    ks_matrix *M;
    ks_vec *b, *x;
    ks_solver *s;
    const ks_amg *amg; /* NULL without AMG */
} run;

static void run_close(run *r)
{
    ks_solver_destroy(r->s);
    ks_vec_destroy(r->b);
    ks_vec_destroy(r->x);
    ks_matrix_destroy(r->M);
    ks_config_destroy(r->cfg);
    memset(r, 0, sizeof *r);
}

/* Set up and solve A x = b on be with the fine matrix in fine_format and,
 * when level_format is not NULL, that AMG level format; print heading and
 * the results. Setups: a warm-up and --repeat timed ones (medians), but a
 * single one with --level-formats. --vcycle-vs-spmv and --level-formats
 * also time one cycle and one fine-level SpMV. */
static int run_solver(ks_backend *be, const ks_csr *A, const double *bh, const opts *o,
                      const char *fine_format, const char *level_format, const char *heading,
                      run *r, result *res)
{
    int rc = 1;
    int nsetups = o->level_formats ? 0 : o->repeat;
    double *ts = calloc((size_t)o->repeat, sizeof *ts);
    double *tv = calloc((size_t)o->repeat, sizeof *tv);
    memset(res, 0, sizeof *res);
    snprintf(res->backend, sizeof res->backend, "%s", ks_backend_name(be));
    if (!ts || !tv) {
        fprintf(stderr, "bench_amg: out of memory\n");
        goto done;
    }
    FAIL(make_config(o, level_format, &r->cfg));
    FAIL(ks_matrix_create(be, A, fine_format, NULL, &r->M));
    FAIL(ks_vec_create(be, A->nrows, &r->b));
    FAIL(ks_vec_create(be, A->nrows, &r->x));
    FAIL(ks_vec_set_host(r->b, bh));
    FAIL(ks_solver_create(be, r->cfg, &r->s));
    ks_solver *s = r->s;
    const ks_solve_stats *st = ks_solver_stats(s);
    snprintf(res->level_format, sizeof res->level_format, "%s",
             ks_config_solver_params(r->cfg)->pc.amg.level_format);
    snprintf(res->fine_format, sizeof res->fine_format, "%s", ks_matrix_format(r->M));

    /* Setups: warm-up, then the timed ones (each rebuilds the hierarchy). */
    FAIL(ks_solver_setup(s, r->M));
    res->setup_s = st->setup_seconds;
    for (int k = 0; k < nsetups; k++) {
        FAIL(ks_solver_setup(s, r->M));
        ts[k] = st->setup_seconds;
    }
    if (nsetups)
        res->setup_s = median(ts, nsetups);
    const ks_amg *amg = r->amg = ks_precond_amg(s->pc);
    if (amg) {
        res->levels = amg->nlevels;
        res->opc = amg->operator_complexity;
        res->gridc = amg->grid_complexity;
    }

    FAIL(ks_vec_fill(r->x, 0.0)); /* warm-up solve */
    FAIL(ks_solver_solve(s, r->b, r->x));
    for (int k = 0; k < o->repeat; k++) {
        FAIL(ks_vec_fill(r->x, 0.0));
        FAIL(ks_solver_solve(s, r->b, r->x));
        tv[k] = st->solve_seconds;
        res->iterations = st->iterations;
    }
    res->solve_s = median(tv, o->repeat);
    res->per_it_s = res->iterations > 0 ? res->solve_s / res->iterations : NAN;
    res->status = st->status;
    res->true_rel = st->true_relative_residual;

    printf("%s\n", heading);
    ks_solver_print_setup(s, stdout);
    printf("  %s%s%s, SpMV format %s\n", ks_solver_name(s),
           strcmp(ks_solver_name(s), "AMG") ? " + " : "",
           strcmp(ks_solver_name(s), "AMG") ? ks_solver_preconditioner_name(s) : "",
           ks_matrix_format(r->M));
    if (amg)
        printf("  levels %d, operator complexity %.3f, grid complexity %.3f\n", res->levels,
               res->opc, res->gridc);
    printf("  iterations %d (%s), true relative residual %.3e\n", res->iterations,
           ks_solve_status_name(res->status), res->true_rel);
    if (nsetups)
        printf("  setup %.4f s, solve %.4f s, %.3f ms/iteration (medians of %d)\n", res->setup_s,
               res->solve_s, 1e3 * res->per_it_s, o->repeat);
    else
        printf("  setup %.4f s (one), solve %.4f s, %.3f ms/iteration (medians of %d solves)\n",
               res->setup_s, res->solve_s, 1e3 * res->per_it_s, o->repeat);

    if (o->vcycle || o->level_formats) {
        if (!amg) {
            fprintf(stderr, "bench_amg: %s needs an AMG solver or preconditioner\n",
                    o->vcycle ? "--vcycle-vs-spmv" : "--level-formats");
            goto done;
        }
        op_ctx c = {(ks_amg *)amg, r->M, r->b, r->x};
        FAIL(time_op(be, op_cycle, &c, &res->cycle_s));
        FAIL(time_op(be, op_spmv, &c, &res->spmv_s));
        res->cycle_est = cycle_estimate(amg);
        printf("  one %s-cycle %.4f ms, one fine-level SpMV %.4f ms: cycle = %.2f SpMVs "
               "(%.2f estimated from nonzeros%s)\n",
               ks_name_of(ks_amg_cycle_names, amg->prm.cycle), 1e3 * res->cycle_s, 1e3 * res->spmv_s, res->cycle_s / res->spmv_s,
               res->cycle_est, amg->prm.cycle == KS_AMG_V ? "" : ", V-cycle count");
        if (o->breakdown && vcycle_breakdown(be, (ks_amg *)amg, r->b, r->x, res))
            goto done;
    }
    fflush(stdout);
    rc = 0;
done:
    free(ts);
    free(tv);
    return rc;
}

/* The CSR formats --level-formats compares against. */
#define NBASE 2
static const char *const csr_baselines[NBASE] = {"cusparse", "csr_vector"};

static int format_available(const char *backend, const char *format)
{
    for (const char *const *n = ks_spmv_format_names(backend); *n; n++)
        if (!strcmp(*n, format))
            return 1;
    return 0;
}

/* The baselines available on backend (the cpu's "csr" when none is),
 * saying which are missing. */
static int pick_baselines(const char *backend, const char *base[NBASE])
{
    int nb = 0;
    char missing[64] = "";
    for (int k = 0; k < NBASE; k++) {
        if (format_available(backend, csr_baselines[k]))
            base[nb++] = csr_baselines[k];
        else
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s",
                     missing[0] ? ", " : "", csr_baselines[k]);
    }
    if (!missing[0])
        return nb;
    if (nb == 0 && format_available(backend, "csr")) {
        base[nb++] = "csr";
        printf("note: %s not available on the %s backend: comparing against csr, its only "
               "format\n",
               missing, backend);
    } else {
        printf("note: %s not available on the %s backend (skipped)\n", missing, backend);
    }
    return nb;
}

/* Column width for a label (at least w). */
static int width(const char *label, int w)
{
    int n = (int)strlen(label);
    return n > w ? n : w;
}

/* One SpMV y = A_l x per level: the level's own matrix against its host
 * operator rebuilt in each baseline format. Sums over the levels go to
 * *sum_own and sum_base[]. */
static int level_table(ks_backend *be, const ks_amg *amg, const char *const *base, int nb,
                       double *sum_own, double *sum_base)
{
    int rc = 1;
    ks_matrix *B = NULL;
    char vs[NBASE][48];
    *sum_own = 0.0;
    printf("\nSpMV y = A_l x per level on %s, us per SpMV (speedup: CSR time / level format "
           "time):\n",
           ks_backend_name(be));
    printf("  level        rows    nonzeros  %-12s %12s", "format", "level format");
    for (int k = 0; k < nb; k++) {
        sum_base[k] = 0.0;
        printf(" %*s", width(base[k], 10), base[k]);
    }
    for (int k = 0; k < nb; k++) {
        snprintf(vs[k], sizeof vs[k], "vs %s", base[k]);
        printf(" %*s", width(vs[k], 10), vs[k]);
    }
    printf("\n");
    for (int l = 0; l < amg->nlevels; l++) {
        const ks_amg_level *L = &amg->levels[l];
        double t_own, t_base[NBASE];
        FAIL(time_spmv(be, L->Am, &t_own));
        for (int k = 0; k < nb; k++) {
            FAIL(ks_matrix_create(be, ks_matrix_host_csr(L->Am), base[k], NULL, &B));
            FAIL(time_spmv(be, B, &t_base[k]));
            ks_matrix_destroy(B);
            B = NULL;
        }
        printf("  %5d %11ld %11ld  %-12s %12.1f", l, (long)L->A.nrows, (long)L->A.nnz,
               ks_matrix_format(L->Am), 1e6 * t_own);
        for (int k = 0; k < nb; k++)
            printf(" %*.1f", width(base[k], 10), 1e6 * t_base[k]);
        for (int k = 0; k < nb; k++)
            printf(" %*.2fx", width(vs[k], 10) - 1, t_base[k] / t_own);
        printf("\n");
        *sum_own += t_own;
        for (int k = 0; k < nb; k++)
            sum_base[k] += t_base[k];
    }
    printf("  %-5s %11s %11s  %-12s %12.1f", "sum", "", "", "", 1e6 * *sum_own);
    for (int k = 0; k < nb; k++)
        printf(" %*.1f", width(base[k], 10), 1e6 * sum_base[k]);
    for (int k = 0; k < nb; k++)
        printf(" %*.2fx", width(vs[k], 10) - 1, sum_base[k] / *sum_own);
    printf("\n");
    fflush(stdout);
    rc = 0;
done:
    ks_matrix_destroy(B);
    return rc;
}

/* --level-formats on one backend: the first run as configured (its result
 * goes to *res for the GPU/CPU ratios), the level table from its hierarchy,
 * then one run per baseline format and the comparison. */
static int bench_level_formats(ks_backend *be, const ks_csr *A, const double *bh, const opts *o,
                               result *res)
{
    const char *name = ks_backend_name(be);
    const char *base[NBASE];
    result runs[1 + NBASE];
    double sum_own = 0.0, sum_base[NBASE];
    char head[256];
    run r = {0};
    int rc = 1;
    printf("\n%s: %s\n", name, ks_backend_description(be));
    int nb = pick_baselines(name, base);
    snprintf(head, sizeof head,
             "\n[%s] AMG level format as configured, fine matrix format %s:", name, o->format);
    if (run_solver(be, A, bh, o, o->format, NULL, head, &r, &runs[0]))
        goto done;
    *res = runs[0];
    if (level_table(be, r.amg, base, nb, &sum_own, sum_base))
        goto done;
    run_close(&r);
    for (int k = 0; k < nb; k++) {
        snprintf(head, sizeof head, "\n[%s] AMG level format %s, fine matrix format %s:", name,
                 base[k], base[k]);
        if (run_solver(be, A, bh, o, base[k], base[k], head, &r, &runs[1 + k]))
            goto done;
        run_close(&r);
    }

    printf("\nwhole solves on %s by AMG level format (medians of %d solves; cycle and SpMV: "
           "one each):\n",
           name, o->repeat);
    printf("  %-12s %-12s %6s %11s %9s %11s %11s  %s\n", "level format", "fine format", "iters",
           "solve (ms)", "ms/iter", "cycle (ms)", "SpMV (ms)", "status");
    for (int k = 0; k <= nb; k++) {
        const result *q = &runs[k];
        printf("  %-12s %-12s %6d %11.3f %9.4f %11.4f %11.4f  %s\n", q->level_format,
               q->fine_format, q->iterations, 1e3 * q->solve_s, 1e3 * q->per_it_s,
               1e3 * q->cycle_s, 1e3 * q->spmv_s, ks_solve_status_name(q->status));
    }
    for (int k = 0; k < nb; k++) {
        const result *a = &runs[0], *q = &runs[1 + k];
        printf("  %s vs %s (speedup = %s time / %s time): solve %.2fx, per iteration %.2fx, "
               "cycle %.2fx, fine SpMV %.2fx; per-level SpMV sum %.2fx\n",
               a->level_format, base[k], base[k], a->level_format, q->solve_s / a->solve_s,
               q->per_it_s / a->per_it_s, q->cycle_s / a->cycle_s, q->spmv_s / a->spmv_s,
               sum_base[k] / sum_own);
        if (q->iterations != a->iterations)
            printf("  note: iterations %d with %s vs %d: compare per iteration\n", q->iterations,
                   base[k], a->iterations);
        /* main's exit status follows res->status: any run not converging fails. */
        if (q->status != KS_SOLVE_CONVERGED)
            res->status = q->status;
    }
    fflush(stdout);
    rc = 0;
done:
    run_close(&r);
    return rc;
}

static int bench_one(const char *backend, const ks_csr *A, const double *bh, const opts *o,
                     result *res)
{
    ks_backend *be = NULL;
    run r = {0};
    int rc = 1;
    memset(res, 0, sizeof *res);
    FAIL(ks_backend_create(backend, &be));
    if (o->level_formats) {
        rc = bench_level_formats(be, A, bh, o, res);
    } else {
        char head[256];
        snprintf(head, sizeof head, "\n%s: %s", backend, ks_backend_description(be));
        rc = run_solver(be, A, bh, o, o->format, NULL, head, &r, res);
    }
done:
    run_close(&r);
    ks_backend_destroy(be);
    return rc;
}

static int load_matrix(const opts *o, ks_csr *A, char *desc, size_t len)
{
    double t0 = ks_wtime();
    if (o->mtx) {
        if (ks_mm_read_csr(o->mtx, A, NULL) != KS_OK) {
            fprintf(stderr, "bench_amg: %s\n", ks_last_error());
            return 1;
        }
        snprintf(desc, len, "%s", o->mtx);
    } else {
        ks_gen_params g;
        ks_gen_params_default(&g);
        if (ks_gen_kind_from_name(o->gen, &g.kind) != KS_OK) {
            fprintf(stderr, "bench_amg: %s\n", ks_last_error());
            return 1;
        }
        int is2d = g.kind == KS_GEN_POISSON2D_5 || g.kind == KS_GEN_POISSON2D_9;
        g.nx = g.ny = o->n;
        g.nz = is2d ? 1 : o->n;
        if (ks_generate(&g, A) != KS_OK) {
            fprintf(stderr, "bench_amg: generating %s: %s\n", o->gen, ks_last_error());
            return 1;
        }
        snprintf(desc, len, "%s n=%d", o->gen, o->n);
    }
    if (A->nrows != A->ncols) {
        fprintf(stderr, "bench_amg: %s is %ld x %ld, not square\n", desc, (long)A->nrows,
                (long)A->ncols);
        ks_csr_free(A);
        return 1;
    }
    printf("problem %s: %ld rows, %ld nonzeros (%.2f s to %s)\n", desc, (long)A->nrows,
           (long)A->nnz, ks_wtime() - t0, o->mtx ? "read" : "generate");
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o))
        return 2;
    ks_csr A;
    char desc[1100];
    if (load_matrix(&o, &A, desc, sizeof desc))
        return 1;
    /* b = A x with x_i = sin(i). */
    double *xs = malloc((size_t)A.nrows * sizeof *xs);
    double *bh = malloc((size_t)A.nrows * sizeof *bh);
    if (!xs || !bh) {
        fprintf(stderr, "bench_amg: out of memory\n");
        free(xs);
        free(bh);
        ks_csr_free(&A);
        return 1;
    }
    for (ks_int i = 0; i < A.nrows; i++)
        xs[i] = sin((double)i);
    ks_csr_spmv_ref(&A, 1.0, xs, 0.0, bh);
    free(xs);
    if (o.config)
        printf("config %s%s\n", o.config, o.nsets ? " (with -p overrides)" : "");
    else
        printf("solver %s, AMG %s, tolerance %g relative to ||b||%s\n", o.solver, o.algorithm,
               o.tol, o.nsets ? " (with -p overrides)" : "");

    char list[256];
    snprintf(list, sizeof list, "%s", o.backends);
    result res[MAX_BACKENDS];
    int nb = 0, rc = 0;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && nb < MAX_BACKENDS;
         tok = strtok_r(NULL, ",", &save)) {
        if (bench_one(tok, &A, bh, &o, &res[nb]) != 0) {
            rc = 1;
            break;
        }
        if (res[nb].status != KS_SOLVE_CONVERGED)
            rc = 1;
        nb++;
    }
    int ic = -1, ig = -1;
    for (int i = 0; i < nb; i++) {
        if (!strcmp(res[i].backend, "cpu"))
            ic = i;
        if (!strcmp(res[i].backend, "cuda"))
            ig = i;
    }
    if (ic >= 0 && ig >= 0) {
        const result *c = &res[ic], *g = &res[ig];
        printf("\nGPU/CPU time ratios (cuda / cpu; below 1: the GPU is faster):\n");
        printf("  setup %.3f (%.2fx), solve %.3f (%.2fx), per iteration %.3f (%.2fx)\n",
               g->setup_s / c->setup_s, c->setup_s / g->setup_s, g->solve_s / c->solve_s,
               c->solve_s / g->solve_s, g->per_it_s / c->per_it_s, c->per_it_s / g->per_it_s);
        if (o.vcycle)
            printf("  cycle %.3f (%.2fx), SpMV %.3f (%.2fx)\n", g->cycle_s / c->cycle_s,
                   c->cycle_s / g->cycle_s, g->spmv_s / c->spmv_s, c->spmv_s / g->spmv_s);
        if (c->iterations != g->iterations || c->levels != g->levels)
            printf("  note: iterations %d vs %d, levels %d vs %d differ between backends\n",
                   c->iterations, g->iterations, c->levels, g->levels);
    }
    if (o.vcycle && ig >= 0)
        printf("target (issue 3): one V-cycle <= 10 fine-level SpMVs on the GPU: %.2f -> %s\n",
               res[ig].cycle_s / res[ig].spmv_s,
               res[ig].cycle_s <= 10.0 * res[ig].spmv_s ? "met" : "NOT met");
    free(bh);
    ks_csr_free(&A);
    return rc;
}
