/* AMG benchmark: setup (per phase) and solve times, time to solution,
 * iterations, complexities, hierarchy and host memory of PCG / PBiCGStab +
 * AMG (or AMG alone) on one or more backends.
 *
 *   bench_amg --gen poisson3d_7 --n 128 --backend cpu,cuda --json amg.json
 *   bench_amg --mtx A.mtx.gz --config examples/configs/pcg_amg_aggregation.json
 *   bench_amg --n 64 --algorithm AGGREGATION --solver PBICGSTAB -p solver.max_iters=50
 *   bench_amg --n 128 --backend cuda --vcycle-vs-spmv
 *   bench_amg --n 128 --backend cuda --vcycle-breakdown
 *   bench_amg --n 128 --backend cuda --level-formats
 *
 * Problem: b = A x with x_i = sin(i), x0 = 0, relative tolerance 1e-8
 * (RELATIVE_RHS) unless --config or -p say otherwise. Per backend: one
 * warm-up setup and solve (first touch, lazy allocations, cuSPARSE
 * buffers), then the median of --repeat setups (and of each setup phase)
 * and of --repeat solves; time to solution = median setup + median solve.
 * Each run also reports the hierarchy's memory (total, per fine row, where
 * it lives) and the process's host memory: resident set right after the
 * last setup and its peak so far (the peak covers everything the process
 * did before, earlier backends included: run one backend per process for
 * a per-backend peak), against the bytes of the input CSR. With two
 * backends a final table compares them (speedups cuda/cpu = cpu time /
 * cuda time); --json FILE writes all of it per backend.
 *
 * --vcycle-vs-spmv also times one AMG cycle (as the preconditioner applies
 * it: from x = 0) against one fine-level SpMV; the target on the
 * GPU is a V-cycle costing at most 10 fine-level SpMVs. The estimate next
 * to it counts the nonzeros one cycle touches (hierarchy summary).
 * --vcycle-breakdown turns the library's cycle profiler on
 * (ks_solver_profile_cycles) for a few solves and prints, per level, each
 * step's mean time per call and calls per cycle, against the unprofiled
 * cycle; with --nrhs K then the block cycle of the K columns the same way,
 * each step's time per cycle beside the single cycle's, and the solve
 * split into the cycles and the Krylov method's part outside them.
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
 * What it reads: the public API (include/ksolve.h: the hierarchy summary
 * ks_solver_hierarchy, the cycle profiler), the tool's config scope
 * (cli/problem.h, solver/config_scope.h: configs of the ksolve tool load
 * as they are) and the parsed settings (solver/params.h: smoother and
 * sweeps for the cycle estimate, the AMG scope's level format). One thing
 * the public API does not offer comes from private headers, in the section
 * "Internals" below and nowhere else: each level's matrix
 * (--level-formats). */
#include "ksolve.h"
#include "bench_util.h"
#include "../cli/problem.h"
#include "../solver/config_scope.h"
#include "../solver/params.h"
/* Only for the section "Internals" (solver_impl.h comes with it). */
#include "../solver/precond_amg.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define MAX_SETS 32
#define MAX_BACKENDS 4
/* solver.max_levels is at most 100 (solver/config_keys.c). */
#define MAX_LEVELS 100
/* --vcycle-breakdown: profiled solves go on beyond --repeat until this
 * many cycles were timed (a steadier mean), unless that takes more than
 * MAX_PROFILE_SECONDS or MAX_PROFILED_SOLVES solves (large cpu runs). */
#define MIN_PROFILED_CYCLES 50
#define MAX_PROFILED_SOLVES 100
#define MAX_PROFILE_SECONDS 2.0
/* Memory in the text output: MB of 2^20 bytes, as the hierarchy table
 * of ks_solver_print_setup (amg/amg_report.c). */
#define MB 1048576.0

typedef struct opts {
    const char *gen, *mtx, *backends, *config, *algorithm, *solver, *format, *json;
    int n, repeat, vcycle, level_formats, breakdown;
    int nrhs; /* --nrhs K: also K right-hand sides solved together */
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
            "  --backend LIST      cpu, cuda or cpu,cuda (comparison table, cuda/cpu speedups\n"
            "                      beside the ratio of the backends' copy bandwidths) [cpu]\n"
            "  --config FILE       JSON config (its \"solver\" scope is used as given)\n"
            "  --algorithm A       CLASSICAL or AGGREGATION, without --config [CLASSICAL]\n"
            "  --solver S          PCG, PBICGSTAB or AMG (cycles alone), without --config [PCG]\n"
            "  --tol T             relative tolerance, without --config [1e-8]\n"
            "  --format F          SpMV format of A [auto]\n"
            "  -p, --set KEY=VAL   any config key (ks_config_set), applied last; repeatable\n"
            "  --repeat R          timed setups and solves, medians reported [3]\n"
            "  --nrhs K            also solve K right-hand sides together (ks_solver_solve_many:\n"
            "                      column 0 the b of the one-column solve, column j > 0\n"
            "                      A x_j with x_j[i] = sin(j (i+1))), its solve time beside\n"
            "                      one right-hand side's (medians of --repeat) [1: not run]\n"
            "  --json FILE         write the results per backend as JSON (setup, per-phase\n"
            "                      setup, solve, time to solution, iterations, levels,\n"
            "                      complexities, hierarchy bytes, host memory)\n"
            "  --vcycle-vs-spmv    also time one AMG cycle against one fine-level SpMV\n"
            "  --vcycle-breakdown  --vcycle-vs-spmv, and the cycle profiled per level and\n"
            "                      step (presmooth, residual, restrict, prolong, coarse,\n"
            "                      postsmooth: mean us per call, calls per cycle) over a\n"
            "                      few solves; with\n"
            "                      --nrhs K also the block cycle, step by step beside the\n"
            "                      single cycle's, and the solves' time outside the cycles\n"
            "  --level-formats     per AMG level, one SpMV in the level's format against\n"
            "                      cusparse and csr_vector (cpu: csr); then whole solves with\n"
            "                      the AMG level format (spmv_format) as configured [auto]\n"
            "                      and set to each CSR format, the fine matrix likewise;\n"
            "                      one setup per configuration, --repeat solves each\n"
            "Per backend it prints setup (total and per phase), solve, time to solution\n"
            "(setup + solve), iterations, levels and complexities, the hierarchy's bytes\n"
            "(total, per fine row, host or device) and host memory (RSS after the last setup,\n"
            "peak RSS so far, input CSR bytes, peak / input); memory in MB of 2^20 bytes.\n");
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
        } else if (!strcmp(a, "--json")) {
            o->json = v;
        } else if (!strcmp(a, "--n")) {
            o->n = (int)strtol(v, &end, 10);
            gen_given = 1;
        } else if (!strcmp(a, "--nrhs")) {
            o->nrhs = (int)strtol(v, &end, 10);
            if (o->nrhs < 1 || o->nrhs > KS_BLOCK_MAX_COLS) {
                fprintf(stderr, "bench_amg: --nrhs %s: 1 to %d\n", v, KS_BLOCK_MAX_COLS);
                return 1;
            }
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

/* Host memory of this process in bytes: the resident set now (VmRSS) and
 * its peak so far (VmHWM), from /proc/self/status. Without /proc the peak
 * comes from getrusage (ru_maxrss, kB on Linux) and the current RSS is
 * unknown. Unknown values are -1. */
static void host_memory(double *rss, double *peak)
{
    *rss = *peak = -1.0;
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            long kb;
            if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
                *rss = 1024.0 * (double)kb;
            else if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
                *peak = 1024.0 * (double)kb;
        }
        fclose(f);
    }
    struct rusage ru;
    if (*peak < 0 && getrusage(RUSAGE_SELF, &ru) == 0)
        *peak = 1024.0 * (double)ru.ru_maxrss;
}

/* Bytes of a host CSR's arrays: rowptr + colind + val. */
static double csr_bytes(const ks_csr *A)
{
    return (double)(A->nrows + 1) * sizeof *A->rowptr + (double)A->nnz * sizeof *A->colind +
           (double)A->nnz * sizeof *A->val;
}

/* One level of the hierarchy summary, copied (the summary's arrays live
 * only as long as the solver's setup), with the profiled cycle's steps
 * when --vcycle-breakdown ran. */
typedef struct level_row {
    long rows;
    int64_t nnz, p_nnz, r_nnz;
    double bytes;
    char format[KS_NAME_MAX];
    double step_us[KS_NSTEPS];         /* mean microseconds per call */
    double step_per_cycle[KS_NSTEPS];  /* calls per cycle */
    double total_us;                   /* the level's time per cycle */
    /* the block cycle's (--nrhs K with --vcycle-breakdown), as above */
    double blk_us[KS_NSTEPS], blk_per_cycle[KS_NSTEPS], blk_total_us;
} level_row;

typedef struct result {
    char backend[16];
    char description[128];
    char method[2 * KS_NAME_MAX + 4];                          /* "PCG + AMG" */
    char level_format[KS_NAME_MAX], fine_format[KS_NAME_MAX]; /* --level-formats */
    double setup_s, solve_s, per_it_s, tts_s; /* medians; tts = setup + solve */
    int nsetups;                              /* setups behind the medians (0: one, untimed) */
    int iterations;
    ks_solve_status status;
    double true_rel;
    /* Hierarchy summary (levels = 0: no AMG). */
    int levels, coarse_direct;
    double opc, gridc, bytes, bytes_per_row;
    char location[16];
    level_row lv[MAX_LEVELS];
    int nphases;
    char phase_names[KS_MAX_PHASES][KS_NAME_MAX];
    double phase_s[KS_MAX_PHASES]; /* medians over the timed setups */
    /* Host memory in bytes (-1: unknown). */
    double rss_after_setup, peak_rss, input_bytes;
    /* --vcycle-vs-spmv (0 when not measured) */
    double cycle_s, spmv_s, cycle_est;
    /* --vcycle-breakdown (profiled_cycles = 0 when not run) */
    long profiled_cycles;
    int profiled_solves;
    char step_names[KS_NSTEPS][16]; /* the summary's step_names */
    double profile_sum_s; /* sum over the levels, per cycle */
    double prof_solve_s;  /* mean solve time of the profiled solves */
    double copy_gbs;      /* the backend's copy bandwidth (several backends only; 0: not run) */
    /* --nrhs K > 1: the K columns solved together (median), the slowest
     * column's iterations, the first status that is not CONVERGED */
    int nrhs, many_iterations;
    double many_s;
    ks_solve_status many_status;
    /* --nrhs K with --vcycle-breakdown: the block cycle profiled as the
     * single one above (many_prof_cycles = 0 when not run), and one block
     * cycle unprofiled */
    long many_prof_cycles;
    int many_prof_solves;
    double many_profile_sum_s, many_prof_solve_s, many_cycle_s;
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
    *sec = bench_median(blocks, 3);
    return KS_OK;
}

typedef struct op_ctx {
    ks_solver *s;
    ks_matrix *M;
    const ks_vec *x;
    ks_vec *y;
} op_ctx;

static ks_error op_spmv(void *c)
{
    op_ctx *o = c;
    return ks_matrix_apply(o->M, 1.0, o->x, 0.0, o->y);
}

static ks_error op_axpy(void *c)
{
    op_ctx *o = c;
    return ks_vec_axpy(1e-3, o->x, o->y);
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
    ks_vec_destroy(&in);
    ks_vec_destroy(&out);
    return e;
}

/* z = M^-1 r: one preconditioner cycle, the call PCG makes. */
static ks_error op_cycle(void *c)
{
    op_ctx *o = c;
    return ks_solver_precondition(o->s, o->x, o->y);
}

/* --------------------------------------------------------------- Internals
 * The only use of private headers, for what include/ksolve.h does not
 * offer:
 *  - each level's matrix (--level-formats): the summary names a level's
 *    format and size, but timing an SpMV in that format, and rebuilding the
 *    same operator in the CSR baselines, needs the matrix itself. */


/* The matrix the cycle applies on level l of s's AMG (level 0: its
 * float32 copy with hierarchy_precision FLOAT), NULL without one. */
static ks_matrix *level_matrix(const ks_solver *s, int l)
{
    const ks_amg *amg = ks_precond_amg(s->pc);
    return amg && l < amg->nlevels ? ks_amg_cycle_matrix(amg, l) : NULL;
}

/* Z = one block cycle on R's columns, as the block PCG applies it
 * (--vcycle-breakdown with --nrhs K): there is no public call. */
typedef struct block_ctx {
    ks_solver *s;
    const ks_block *R;
    ks_block *Z;
} block_ctx;

static ks_error op_cycle_block(void *c)
{
    block_ctx *o = c;
    return ks_precond_apply_block(o->s->pc, o->R, o->Z);
}
/* ------------------------------------------------------- end of Internals */

/* Nonzeros one cycle touches from x = 0, in units of nnz(A_0): an estimate
 * of the cycle's cost in fine-level SpMVs, from the hierarchy summary (A,
 * P and R nonzeros per level, how the coarsest level is solved) and the
 * parsed smoother settings. Each smoothing sweep is one pass over the
 * level's operator (Chebyshev: `degree` passes; symmetric Gauss-Seidel:
 * forward and backward), plus one each for the residual, restriction and
 * prolongation; the coarsest level is one dense n x n product with its
 * explicit inverse, or else 20 sweeps (KS_AMG_COARSE_SWEEPS, amg/cycle.c).
 * The first presweep from x = 0 needs no residual SpMV for the Jacobi
 * types; every sweep is counted anyway (an upper estimate). V-cycles only:
 * W and F visit coarse levels more. */
static double cycle_estimate(const result *res, const ks_amg_params *p)
{
    double per_sweep = 1.0;
    if (p->smoother.solver == KS_SMOOTHER_CHEBYSHEV && p->smoother.chebyshev_degree > 1)
        per_sweep = p->smoother.chebyshev_degree;
    else if (p->smoother.solver == KS_SMOOTHER_SGS)
        per_sweep = 2.0;
    const int last = res->levels - 1;
    double sum = 0.0;
    for (int l = 0; l < last; l++) {
        const level_row *L = &res->lv[l];
        double a = (double)L->nnz;
        sum += (p->presweeps + p->postsweeps) * per_sweep * a + a;
        sum += (double)L->p_nnz + (double)L->r_nnz;
    }
    double nc = (double)res->lv[last].rows;
    sum += res->coarse_direct ? nc * nc : 20.0 * per_sweep * (double)res->lv[last].nnz;
    return sum / (double)res->lv[0].nnz;
}

/* The summary's levels, complexities and memory into res (the phases are
 * the caller's: it takes medians over the setups). */
static void copy_summary(const ks_hierarchy_info *h, ks_int fine_rows, result *res)
{
    res->levels = h->nlevels < MAX_LEVELS ? h->nlevels : MAX_LEVELS;
    res->coarse_direct = h->coarse_direct;
    res->opc = h->operator_complexity;
    res->gridc = h->grid_complexity;
    res->bytes = h->bytes;
    res->bytes_per_row = fine_rows > 0 ? h->bytes / fine_rows : NAN;
    snprintf(res->location, sizeof res->location, "%s", h->location ? h->location : "");
    for (int l = 0; l < res->levels; l++) {
        const ks_hierarchy_level *L = &h->levels[l];
        level_row *q = &res->lv[l];
        memset(q, 0, sizeof *q);
        q->rows = (long)L->rows;
        q->nnz = L->nnz;
        q->p_nnz = L->p_nnz;
        q->r_nnz = L->r_nnz;
        q->bytes = L->bytes;
        snprintf(q->format, sizeof q->format, "%s", L->format ? L->format : "?");
    }
}

/* A configured solve on a backend, kept open after run_solver so the
 * caller can look at the hierarchy; run_close frees it. */
typedef struct run {
    ks_config *cfg;
    ks_matrix *M;
    ks_vec *b, *x;
    ks_block *B, *X; /* --nrhs K: the K right-hand sides and solutions */
    ks_solver *s;
} run;

static void run_close(run *r)
{
    ks_solver_destroy(&r->s);
    ks_vec_destroy(&r->b);
    ks_vec_destroy(&r->x);
    ks_block_destroy(&r->B);
    ks_block_destroy(&r->X);
    ks_matrix_destroy(&r->M);
    ks_config_destroy(&r->cfg);
    memset(r, 0, sizeof *r);
}

/* Name of cycle step k (the summary's step_names). */
static const char *step_name(const ks_hierarchy_info *h, int k)
{
    return h->step_names && h->step_names[k] ? h->step_names[k] : "?";
}

/* One solve from x = 0 of the profiled run: the single right-hand side
 * (block = 0) or the K together. */
static ks_error profiled_solve(run *r, int block)
{
    if (block) {
        KS_TRY(ks_block_fill(r->X, 0.0));
        return ks_solver_solve_many(r->s, r->B, r->X);
    }
    KS_TRY(ks_vec_fill(r->x, 0.0));
    return ks_solver_solve(r->s, r->b, r->x);
}

/* The profiler on (the caller turns it off), then --repeat solves (more
 * until MIN_PROFILED_CYCLES cycles were timed, within the limits above);
 * the summary after the last into h, the mean solve time into solve_s. */
static ks_error profile_solves(run *r, const opts *o, int block, ks_hierarchy_info *h,
                               int *nsolves, double *solve_s)
{
    const ks_solve_stats *st = ks_solver_stats(r->s);
    double sum = 0.0;
    *nsolves = 0;
    KS_TRY(ks_solver_profile_cycles(r->s, 1));
    const double t0 = ks_wtime();
    do {
        KS_TRY(profiled_solve(r, block));
        sum += st->solve_seconds;
        ++*nsolves;
        KS_TRY(ks_solver_hierarchy(r->s, h));
    } while (*nsolves < o->repeat ||
             (h->profiled_cycles < MIN_PROFILED_CYCLES && *nsolves < MAX_PROFILED_SOLVES &&
              ks_wtime() - t0 < MAX_PROFILE_SECONDS));
    *solve_s = sum / *nsolves;
    return KS_OK;
}

/* The profile's means per level (us per call, calls per cycle, the level's
 * us per cycle) into res->lv, the block's columns when block; returns the
 * sum over the levels, seconds per cycle. */
static double collect_profile(const ks_hierarchy_info *h, result *res, int block)
{
    const double ncyc = h->profiled_cycles > 0 ? (double)h->profiled_cycles : 1.0;
    double sum = 0.0;
    for (int l = 0; l < res->levels && l < h->nlevels; l++) {
        const ks_hierarchy_level *L = &h->levels[l];
        level_row *q = &res->lv[l];
        double *us = block ? q->blk_us : q->step_us;
        double *per = block ? q->blk_per_cycle : q->step_per_cycle;
        double lsum = 0.0;
        for (int k = 0; k < KS_NSTEPS; k++) {
            us[k] = L->step_calls[k] ? 1e6 * L->step_seconds[k] / L->step_calls[k] : 0.0;
            per[k] = (double)L->step_calls[k] / ncyc;
            lsum += L->step_seconds[k] / ncyc;
        }
        *(block ? &q->blk_total_us : &q->total_us) = 1e6 * lsum;
        sum += lsum;
    }
    return sum;
}

/* Cycles a solve made while profiled (single or block). */
static double cycles_per_solve(const result *res, int block)
{
    const long c = block ? res->many_prof_cycles : res->profiled_cycles;
    const int n = block ? res->many_prof_solves : res->profiled_solves;
    return n > 0 ? (double)c / n : 0.0;
}

/* --vcycle-breakdown: the library's cycle profiler on for --repeat solves
 * (more until MIN_PROFILED_CYCLES cycles were timed, within the limits
 * above), then off again. Per level and step: mean time per call and calls
 * per cycle; the level's time per cycle, also in fine SpMVs. The profiler
 * synchronises the backend around every step, so the sum over the levels
 * is the cycle without overlap, graph replay or gaps between kernels; the
 * difference to the unprofiled cycle (res->cycle_s) is launch latency and
 * those gaps. */
static int vcycle_breakdown(ks_backend *be, run *r, const opts *o, const char *cycle_name,
                            result *res)
{
    int rc = 1, profiling = 1, nsolves = 0;
    ks_vec *fx = NULL, *fy = NULL;
    ks_hierarchy_info h;
    FAIL(profile_solves(r, o, 0, &h, &nsolves, &res->prof_solve_s));
    /* Copy before turning the profiler off (that resets its cycle count). */
    res->profiled_cycles = h.profiled_cycles;
    res->profiled_solves = nsolves;
    for (int k = 0; k < KS_NSTEPS; k++)
        snprintf(res->step_names[k], sizeof res->step_names[k], "%s", step_name(&h, k));
    res->profile_sum_s = collect_profile(&h, res, 0);
    profiling = 0;
    FAIL(ks_solver_profile_cycles(r->s, 0));
    if (res->profiled_cycles == 0) {
        printf("  (--vcycle-breakdown: no cycle was profiled in %d solves)\n", nsolves);
        rc = 0;
        goto done;
    }

    printf("  %s-cycle profiled step by step (%ld cycles in %d solves, each step "
           "synchronised; us per call x calls per cycle; fine SpMV %.1f us):\n",
           cycle_name, res->profiled_cycles, nsolves, 1e6 * res->spmv_s);
    printf("  %5s %9s %10s %-12s", "level", "rows", "nonzeros", "format");
    for (int k = 0; k < KS_NSTEPS; k++)
        printf(" %15s", res->step_names[k]);
    printf(" %9s %7s\n", "level us", "SpMVs");
    for (int l = 0; l < res->levels; l++) {
        const level_row *q = &res->lv[l];
        printf("  %5d %9ld %10lld %-12s", l, q->rows, (long long)q->nnz, q->format);
        for (int k = 0; k < KS_NSTEPS; k++) {
            char cell[32];
            if (q->step_per_cycle[k] > 0)
                snprintf(cell, sizeof cell, "%.1f x %.3g", q->step_us[k], q->step_per_cycle[k]);
            else
                snprintf(cell, sizeof cell, "-");
            printf(" %15s", cell);
        }
        printf(" %9.1f %7.2f\n", q->total_us, 1e-6 * q->total_us / res->spmv_s);
    }
    /* Positive: what the unprofiled cycle spends between steps (launch
     * latency, gaps). Negative: what profiling adds (a synchronisation and
     * two clock reads per step, cycles run inside solves with the Krylov
     * work between them instead of back to back) outweighs it. */
    printf("  sum of levels %.1f us = %.2f SpMVs (profiled); measured cycle %.1f us = %.2f "
           "SpMVs (unprofiled); measured - sum %.1f us (launch latency and gaps between "
           "steps; negative: profiling overhead)\n",
           1e6 * res->profile_sum_s, res->profile_sum_s / res->spmv_s, 1e6 * res->cycle_s,
           res->cycle_s / res->spmv_s, 1e6 * (res->cycle_s - res->profile_sum_s));

    /* The floor of any one-kernel step: an axpy of the coarsest level's
     * size. A coarse solve at this time cannot be beaten by a library call
     * (cuBLAS gemv, cuSOLVER's two triangular solves) of as many or more
     * launches. */
    const ks_int nc = (ks_int)res->lv[res->levels - 1].rows;
    double floor_s;
    FAIL(ks_vec_create(be, nc, &fx));
    FAIL(ks_vec_create(be, nc, &fy));
    FAIL(ks_vec_fill(fx, 1.0));
    FAIL(ks_vec_fill(fy, 0.0));
    op_ctx c = {NULL, NULL, fx, fy};
    FAIL(time_op(be, op_axpy, &c, &floor_s));
    printf("  launch floor (axpy of %ld entries) %.1f us\n", (long)nc, 1e6 * floor_s);
    if (res->iterations > 0)
        printf("  outside the cycle (the Krylov method: SpMV, dots, vector updates): solve - "
               "cycles x cycle = %.1f us unprofiled (%.2f cycles a solve), %.1f us in the "
               "profiled solves\n",
               1e6 * (res->solve_s - cycles_per_solve(res, 0) * res->cycle_s),
               cycles_per_solve(res, 0),
               1e6 * (res->prof_solve_s - cycles_per_solve(res, 0) * res->profile_sum_s));
    rc = 0;
done:
    if (profiling) /* already failing: the first error is the one reported */
        (void)ks_solver_profile_cycles(r->s, 0);
    ks_vec_destroy(&fx);
    ks_vec_destroy(&fy);
    return rc;
}

/* "1.23 MB" or "n/a" (bytes < 0: unknown). */
static const char *mb_text(double bytes, char *buf, size_t len)
{
    if (bytes < 0)
        snprintf(buf, len, "n/a");
    else
        snprintf(buf, len, "%.2f MB", bytes / MB);
    return buf;
}

/* --nrhs K: the K right-hand sides solved together, --repeat times after a
 * warm-up; the median solve time beside the one-column solve's. tv:
 * scratch of --repeat entries. */
static int solve_many(ks_backend *be, const ks_csr *A, const double *bh, const opts *o, run *r,
                      result *res, double *tv)
{
    int rc = 1;
    const int k = o->nrhs;
    const ks_int n = A->nrows;
    double *h = malloc((size_t)n * (size_t)k * sizeof *h + 1);
    double *xj = malloc((size_t)n * sizeof *xj + 1), *bj = malloc((size_t)n * sizeof *bj + 1);
    if (!h || !xj || !bj) {
        fprintf(stderr, "bench_amg: out of memory\n");
        goto done;
    }
    for (int j = 0; j < k; j++) {
        if (j > 0) {
            for (ks_int i = 0; i < n; i++)
                xj[i] = sin((double)j * (double)(i + 1));
            ks_csr_spmv_ref(A, 1.0, xj, 0.0, bj);
        }
        for (ks_int i = 0; i < n; i++) /* row-interleaved */
            h[(size_t)i * k + j] = j ? bj[i] : bh[i];
    }
    FAIL(ks_block_create(be, n, k, &r->B));
    FAIL(ks_block_create(be, n, k, &r->X));
    ks_block *B = r->B, *X = r->X; /* kept for the block breakdown */
    FAIL(ks_block_set_host(B, h));
    const ks_solve_stats *st = ks_solver_stats(r->s);
    FAIL(ks_block_fill(X, 0.0)); /* warm-up: the level blocks are allocated */
    FAIL(ks_solver_solve_many(r->s, B, X));
    for (int t = 0; t < o->repeat; t++) {
        FAIL(ks_block_fill(X, 0.0));
        FAIL(ks_solver_solve_many(r->s, B, X));
        tv[t] = st->solve_seconds;
    }
    res->nrhs = k;
    res->many_s = bench_median(tv, o->repeat);
    res->many_iterations = st->iterations;
    res->many_status = st->status;
    printf("  %d right-hand sides together: solve %.4f s = %.2fx one right-hand side's "
           "(%.2fx per column), %s, iterations per column:",
           k, res->many_s, res->many_s / res->solve_s, res->many_s / res->solve_s / k,
           ks_solve_status_name(st->status));
    for (int j = 0; j < k; j++)
        printf(" %d", ks_solver_stats_column(r->s, j)->iterations);
    printf("\n");
    rc = 0;
done:
    free(h);
    free(xj);
    free(bj);
    return rc;
}

/* --vcycle-breakdown with --nrhs K: the block cycle profiled as
 * vcycle_breakdown profiles the single one (after it), and one block
 * cycle timed unprofiled; per level and step the single and the block
 * cycle's time per cycle and their ratio, then the same for the cycle,
 * the solve and what lies outside the cycle (the block Krylov method:
 * SpMM, block dots and updates, compaction of retired columns). The
 * profiled cycles are the solve's (narrower once columns retired), the
 * unprofiled one full width: outside the cycles is then a lower estimate. */
static int block_breakdown(ks_backend *be, run *r, const opts *o, result *res)
{
    int rc = 1, profiling = 1, nsolves = 0;
    ks_hierarchy_info h;
    FAIL(profile_solves(r, o, 1, &h, &nsolves, &res->many_prof_solve_s));
    res->many_prof_cycles = h.profiled_cycles;
    res->many_prof_solves = nsolves;
    res->many_profile_sum_s = collect_profile(&h, res, 1);
    profiling = 0;
    FAIL(ks_solver_profile_cycles(r->s, 0));
    if (res->many_prof_cycles == 0) {
        printf("  (--vcycle-breakdown: no block cycle was profiled in %d solves: the "
               "preconditioner applies the single cycle to each column)\n", nsolves);
        rc = 0;
        goto done;
    }
    block_ctx bc = {r->s, r->B, r->X};
    FAIL(time_op(be, op_cycle_block, &bc, &res->many_cycle_s));
    const int k = o->nrhs;
    printf("  block cycle on %d columns against the single cycle, profiled step by step "
           "(%ld block cycles in %d solves; us per cycle: single / block, block / single):\n",
           k, res->many_prof_cycles, nsolves);
    printf("  %5s %9s %-12s", "level", "rows", "format");
    for (int s = 0; s < KS_NSTEPS; s++)
        printf(" %22s", res->step_names[s]);
    printf(" %22s\n", "level");
    for (int l = 0; l < res->levels; l++) {
        const level_row *q = &res->lv[l];
        printf("  %5d %9ld %-12s", l, q->rows, q->format);
        for (int s = 0; s <= KS_NSTEPS; s++) {
            const double a = s < KS_NSTEPS ? q->step_us[s] * q->step_per_cycle[s] : q->total_us;
            const double b = s < KS_NSTEPS ? q->blk_us[s] * q->blk_per_cycle[s] : q->blk_total_us;
            char cell[48];
            if (a > 0 || b > 0)
                snprintf(cell, sizeof cell, "%.1f / %.1f %.2fx", a, b, a > 0 ? b / a : NAN);
            else
                snprintf(cell, sizeof cell, "-");
            printf(" %22s", cell);
        }
        printf("\n");
    }
    const double c1 = cycles_per_solve(res, 0), ck = cycles_per_solve(res, 1);
    const double out1 = res->solve_s - c1 * res->cycle_s, outk = res->many_s - ck * res->many_cycle_s;
    const double pout1 = res->prof_solve_s - c1 * res->profile_sum_s;
    const double poutk = res->many_prof_solve_s - ck * res->many_profile_sum_s;
    printf("  cycle: profiled (sum of levels) %.1f / %.1f us %.2fx; unprofiled %.1f / %.1f us "
           "%.2fx (single / block)\n",
           1e6 * res->profile_sum_s, 1e6 * res->many_profile_sum_s,
           res->many_profile_sum_s / res->profile_sum_s, 1e6 * res->cycle_s,
           1e6 * res->many_cycle_s, res->many_cycle_s / res->cycle_s);
    printf("  solve: %.1f / %.1f us %.2fx, %.2f / %.2f cycles a solve; in it, the cycles "
           "%.1f / %.1f us %.2fx and outside them (Krylov: SpMV / SpMM, dots, vector "
           "updates) %.1f / %.1f us %.2fx (unprofiled: solve - cycles x cycle)\n",
           1e6 * res->solve_s, 1e6 * res->many_s, res->many_s / res->solve_s, c1, ck,
           1e6 * c1 * res->cycle_s, 1e6 * ck * res->many_cycle_s,
           (ck * res->many_cycle_s) / (c1 * res->cycle_s), 1e6 * out1, 1e6 * outk, outk / out1);
    printf("  profiled solves: %.1f / %.1f us, outside the cycles %.1f / %.1f us %.2fx\n",
           1e6 * res->prof_solve_s, 1e6 * res->many_prof_solve_s, 1e6 * pout1, 1e6 * poutk,
           poutk / pout1);
    rc = 0;
done:
    if (profiling) /* already failing: the first error is the one reported */
        (void)ks_solver_profile_cycles(r->s, 0);
    return rc;
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
    const int nsetups = o->level_formats ? 0 : o->repeat;
    double *ts = calloc((size_t)o->repeat, sizeof *ts);
    double *tv = calloc((size_t)o->repeat, sizeof *tv);
    double (*tph)[KS_MAX_PHASES] = calloc((size_t)o->repeat, sizeof *tph);
    ks_hierarchy_info h;
    memset(res, 0, sizeof *res);
    snprintf(res->backend, sizeof res->backend, "%s", ks_backend_name(be));
    snprintf(res->description, sizeof res->description, "%s", ks_backend_description(be));
    res->input_bytes = csr_bytes(A);
    res->nsetups = nsetups;
    if (!ts || !tv || !tph) {
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
    const ks_amg_params *amg_prm = &ks_config_solver_params(r->cfg)->pc.amg;
    snprintf(res->level_format, sizeof res->level_format, "%s", amg_prm->level_format);
    snprintf(res->fine_format, sizeof res->fine_format, "%s", ks_matrix_format(r->M));
    snprintf(res->method, sizeof res->method, "%s%s%s", ks_solver_name(s),
             strcmp(ks_solver_name(s), "AMG") ? " + " : "",
             strcmp(ks_solver_name(s), "AMG") ? ks_solver_preconditioner_name(s) : "");

    /* Setups: warm-up, then the timed ones (each rebuilds the hierarchy);
     * the phases of each from the summary, for their medians. */
    FAIL(ks_solver_setup(s, r->M));
    res->setup_s = st->setup_seconds;
    FAIL(ks_solver_hierarchy(s, &h));
    for (int k = 0; k < nsetups; k++) {
        FAIL(ks_solver_setup(s, r->M));
        ts[k] = st->setup_seconds;
        FAIL(ks_solver_hierarchy(s, &h));
        for (int p = 0; p < h.nphases && p < KS_MAX_PHASES; p++)
            tph[k][p] = h.phase_seconds[p];
    }
    /* Right after the last setup: what the hierarchy costs the host. */
    host_memory(&res->rss_after_setup, &res->peak_rss);
    res->nphases = h.nphases < KS_MAX_PHASES ? h.nphases : KS_MAX_PHASES;
    for (int p = 0; p < res->nphases; p++) {
        snprintf(res->phase_names[p], sizeof res->phase_names[p], "%s",
                 h.phase_names[p] ? h.phase_names[p] : "?");
        res->phase_s[p] = h.phase_seconds[p];
        if (nsetups) {
            for (int k = 0; k < nsetups; k++)
                tv[k] = tph[k][p]; /* tv: scratch until the solves */
            res->phase_s[p] = bench_median(tv, nsetups);
        }
    }
    if (nsetups)
        res->setup_s = bench_median(ts, nsetups);
    copy_summary(&h, A->nrows, res);

    FAIL(ks_vec_fill(r->x, 0.0)); /* warm-up solve */
    FAIL(ks_solver_solve(s, r->b, r->x));
    for (int k = 0; k < o->repeat; k++) {
        FAIL(ks_vec_fill(r->x, 0.0));
        FAIL(ks_solver_solve(s, r->b, r->x));
        tv[k] = st->solve_seconds;
        res->iterations = st->iterations;
    }
    res->solve_s = bench_median(tv, o->repeat);
    res->per_it_s = res->iterations > 0 ? res->solve_s / res->iterations : NAN;
    res->tts_s = res->setup_s + res->solve_s;
    res->status = st->status;
    res->true_rel = st->true_relative_residual;

    printf("%s\n", heading);
    ks_solver_print_setup(s, stdout);
    printf("  %s, SpMV format %s\n", res->method, res->fine_format);
    if (res->levels)
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
    if (res->nphases) {
        double sum = 0.0;
        printf("  setup phases (s, %s):", nsetups ? "medians" : "one setup");
        for (int p = 0; p < res->nphases; p++) {
            printf("%s %s %.4f", p ? "," : "", res->phase_names[p], res->phase_s[p]);
            sum += res->phase_s[p];
        }
        printf(" (sum %.4f)\n", sum);
    }
    printf("  time to solution %.4f s (setup + solve)\n", res->tts_s);
    if (o->nrhs > 1 && solve_many(be, A, bh, o, r, res, tv))
        goto done;
    if (res->levels)
        printf("  hierarchy memory %.2f MB, %.1f bytes per fine row, on the %s\n",
               res->bytes / MB, res->bytes_per_row, res->location);
    {
        char b1[32], b2[32], b3[32];
        double ratio = res->peak_rss >= 0 && res->input_bytes > 0
                           ? res->peak_rss / res->input_bytes
                           : NAN;
        printf("  host memory: RSS after setup %s, peak RSS so far %s; input CSR %s "
               "(rowptr + colind + val), peak / input %.1f\n",
               mb_text(res->rss_after_setup, b1, sizeof b1), mb_text(res->peak_rss, b2, sizeof b2),
               mb_text(res->input_bytes, b3, sizeof b3), ratio);
    }

    if (o->vcycle || o->level_formats) {
        if (!res->levels) {
            fprintf(stderr, "bench_amg: %s needs an AMG solver or preconditioner\n",
                    o->vcycle ? "--vcycle-vs-spmv" : "--level-formats");
            goto done;
        }
        const char *cycle_name = ks_name_of(ks_amg_cycle_names, amg_prm->cycle);
        op_ctx c = {s, r->M, r->b, r->x};
        FAIL(time_op(be, op_cycle, &c, &res->cycle_s));
        FAIL(time_op(be, op_spmv, &c, &res->spmv_s));
        res->cycle_est = cycle_estimate(res, amg_prm);
        printf("  one %s-cycle %.4f ms, one fine-level SpMV %.4f ms: cycle = %.2f SpMVs "
               "(%.2f estimated from nonzeros%s)\n",
               cycle_name, 1e3 * res->cycle_s, 1e3 * res->spmv_s, res->cycle_s / res->spmv_s,
               res->cycle_est, amg_prm->cycle == KS_AMG_V ? "" : ", V-cycle count");
        if (o->breakdown && vcycle_breakdown(be, r, o, cycle_name, res))
            goto done;
        if (o->breakdown && o->nrhs > 1 && block_breakdown(be, r, o, res))
            goto done;
    }
    fflush(stdout);
    rc = 0;
done:
    free(ts);
    free(tv);
    free(tph);
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

/* One SpMV y = A_l x per level: the level's own matrix (level_matrix,
 * internal) against its host operator rebuilt in each baseline format;
 * sizes and formats from the summary copied into res. Sums over the levels
 * go to *sum_own and sum_base[]. */
static int level_table(ks_backend *be, const ks_solver *s, const result *res,
                       const char *const *base, int nb, double *sum_own, double *sum_base)
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
    for (int l = 0; l < res->levels; l++) {
        const level_row *L = &res->lv[l];
        ks_matrix *Am = level_matrix(s, l);
        double t_own, t_base[NBASE];
        if (!Am) {
            fprintf(stderr, "bench_amg: no matrix for AMG level %d\n", l);
            goto done;
        }
        FAIL(time_spmv(be, Am, &t_own));
        for (int k = 0; k < nb; k++) {
            FAIL(ks_matrix_create(be, ks_matrix_host_csr(Am), base[k], NULL, &B));
            FAIL(time_spmv(be, B, &t_base[k]));
            ks_matrix_destroy(&B);
            B = NULL;
        }
        printf("  %5d %11ld %11lld  %-12s %12.1f", l, L->rows, (long long)L->nnz, L->format,
               1e6 * t_own);
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
    ks_matrix_destroy(&B);
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
    if (level_table(be, r.s, res, base, nb, &sum_own, sum_base))
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
    /* Beside a cpu-vs-cuda speedup, the bound it has for equally good
     * memory-bound code: the ratio of the backends' copy bandwidths. */
    if (rc == 0 && strchr(o->backends, ',')) {
        double mib = 0.0;
        int samples = 0;
        res->copy_gbs = bench_copy_bandwidth(be, csr_bytes(A), &mib, &samples);
        printf("  copy bandwidth %.1f GB/s (%.0f MiB copies, median of %d)\n", res->copy_gbs, mib,
               samples);
    }
done:
    run_close(&r);
    ks_backend_destroy(&be);
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


/* ------------------------------------------------------------------ JSON */
/* Numbers JSON can hold (NaN and infinities become null). */
static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* Bytes as an integer, null when unknown (< 0). */
static json_t *jbytes(double v)
{
    return v >= 0 ? json_integer((json_int_t)llround(v)) : json_null();
}

/* obj[key] = v (taking v, NULL included); 1 on failure. */
static int jset(json_t *obj, const char *key, json_t *v)
{
    return json_object_set_new(obj, key, v) != 0;
}

/* One level of the hierarchy; the profiled steps (named after the
 * summary's step_names) when profiled. */
static json_t *level_json(const level_row *q, const result *res)
{
    const int profiled = res->profiled_cycles > 0;
    json_t *j = json_object();
    if (!j)
        return NULL;
    int bad = jset(j, "rows", json_integer(q->rows));
    bad |= jset(j, "nnz", json_integer(q->nnz));
    bad |= jset(j, "p_nnz", json_integer(q->p_nnz));
    bad |= jset(j, "r_nnz", json_integer(q->r_nnz));
    bad |= jset(j, "bytes", jbytes(q->bytes));
    bad |= jset(j, "format", json_string(q->format));
    if (profiled) {
        json_t *steps = json_object();
        for (int k = 0; steps && k < KS_NSTEPS; k++) {
            if (q->step_per_cycle[k] <= 0)
                continue;
            bad |= jset(steps, res->step_names[k],
                        json_pack("{s:o, s:o}", "us_per_call", jnum(q->step_us[k]),
                                  "calls_per_cycle", jnum(q->step_per_cycle[k])));
        }
        bad |= jset(j, "profile_steps", steps);
        bad |= jset(j, "profile_us_per_cycle", jnum(q->total_us));
    }
    if (res->many_prof_cycles > 0) {
        json_t *steps = json_object();
        for (int k = 0; steps && k < KS_NSTEPS; k++) {
            if (q->blk_per_cycle[k] <= 0)
                continue;
            bad |= jset(steps, res->step_names[k],
                        json_pack("{s:o, s:o}", "us_per_call", jnum(q->blk_us[k]),
                                  "calls_per_cycle", jnum(q->blk_per_cycle[k])));
        }
        bad |= jset(j, "block_profile_steps", steps);
        bad |= jset(j, "block_profile_us_per_cycle", jnum(q->blk_total_us));
    }
    if (bad) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* One backend's run; NULL when out of memory. */
static json_t *result_json(const result *q, const opts *o)
{
    json_t *j = json_object();
    if (!j)
        return NULL;
    int bad = jset(j, "backend", json_string(q->backend));
    bad |= jset(j, "device", json_string(q->description));
    bad |= jset(j, "method", json_string(q->method));
    bad |= jset(j, "spmv_format", json_string(q->fine_format));
    if (o->level_formats)
        bad |= jset(j, "level_format", json_string(q->level_format));
    bad |= jset(j, "status", json_string(ks_solve_status_name(q->status)));
    bad |= jset(j, "iterations", json_integer(q->iterations));
    bad |= jset(j, "true_relative_residual", jnum(q->true_rel));
    if (q->nrhs > 1) {
        bad |= jset(j, "nrhs", json_integer(q->nrhs));
        bad |= jset(j, "solve_many_seconds", jnum(q->many_s));
        bad |= jset(j, "solve_many_over_one", jnum(q->many_s / q->solve_s));
        bad |= jset(j, "solve_many_iterations", json_integer(q->many_iterations));
        bad |= jset(j, "solve_many_status", json_string(ks_solve_status_name(q->many_status)));
    }
    bad |= jset(j, "setups_timed", json_integer(q->nsetups));
    bad |= jset(j, "solves_timed", json_integer(o->repeat));
    bad |= jset(j, "setup_seconds", jnum(q->setup_s));
    bad |= jset(j, "solve_seconds", jnum(q->solve_s));
    bad |= jset(j, "seconds_per_iteration", jnum(q->per_it_s));
    bad |= jset(j, "time_to_solution_seconds", jnum(q->tts_s));
    json_t *phases = json_object();
    for (int p = 0; phases && p < q->nphases; p++)
        bad |= jset(phases, q->phase_names[p], jnum(q->phase_s[p]));
    bad |= jset(j, "setup_phase_seconds", phases);
    bad |= jset(j, "levels", json_integer(q->levels));
    if (q->levels) {
        bad |= jset(j, "operator_complexity", jnum(q->opc));
        bad |= jset(j, "grid_complexity", jnum(q->gridc));
        bad |= jset(j, "hierarchy_bytes", jbytes(q->bytes));
        bad |= jset(j, "hierarchy_bytes_per_row", jnum(q->bytes_per_row));
        bad |= jset(j, "hierarchy_location", json_string(q->location));
        bad |= jset(j, "coarse_direct", json_boolean(q->coarse_direct));
        json_t *lv = json_array();
        for (int l = 0; lv && l < q->levels; l++)
            bad |= json_array_append_new(lv, level_json(&q->lv[l], q)) != 0;
        bad |= jset(j, "hierarchy", lv);
    }
    bad |= jset(j, "input_bytes", jbytes(q->input_bytes));
    bad |= jset(j, "rss_after_setup_bytes", jbytes(q->rss_after_setup));
    bad |= jset(j, "peak_rss_bytes", jbytes(q->peak_rss));
    bad |= jset(j, "peak_rss_over_input",
                jnum(q->peak_rss >= 0 && q->input_bytes > 0 ? q->peak_rss / q->input_bytes : NAN));
    if (q->cycle_s > 0) {
        bad |= jset(j, "cycle_seconds", jnum(q->cycle_s));
        bad |= jset(j, "fine_spmv_seconds", jnum(q->spmv_s));
        bad |= jset(j, "cycle_in_spmvs", jnum(q->cycle_s / q->spmv_s));
        bad |= jset(j, "cycle_in_spmvs_estimated", jnum(q->cycle_est));
    }
    if (q->profiled_cycles > 0) {
        bad |= jset(j, "profiled_cycles", json_integer(q->profiled_cycles));
        bad |= jset(j, "profiled_solves", json_integer(q->profiled_solves));
        bad |= jset(j, "profile_sum_seconds_per_cycle", jnum(q->profile_sum_s));
        bad |= jset(j, "profiled_solve_seconds", jnum(q->prof_solve_s));
    }
    if (q->many_prof_cycles > 0) {
        bad |= jset(j, "block_profiled_cycles", json_integer(q->many_prof_cycles));
        bad |= jset(j, "block_profiled_solves", json_integer(q->many_prof_solves));
        bad |= jset(j, "block_profile_sum_seconds_per_cycle", jnum(q->many_profile_sum_s));
        bad |= jset(j, "block_profiled_solve_seconds", jnum(q->many_prof_solve_s));
        bad |= jset(j, "block_cycle_seconds", jnum(q->many_cycle_s));
    }
    if (bad) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* --json FILE: the problem, the solver as given, each backend's run and,
 * with cpu and cuda, the speedups (cpu time / cuda time). 0 on success. */
static int write_json(const char *path, const opts *o, const char *desc, const ks_csr *A,
                      const result *res, int nb, int ic, int ig)
{
    int bad = 0;
    json_t *root = json_object();
    if (!root) {
        fprintf(stderr, "bench_amg: out of memory building %s\n", path);
        return 1;
    }
    bad |= jset(root, "benchmark", json_string("bench_amg"));
    bad |= jset(root, "ksolve_version", json_string(KS_VERSION_STRING));
    bad |= jset(root, "problem",
                json_pack("{s:s, s:I, s:I, s:o}", "source", desc, "rows", (json_int_t)A->nrows,
                          "nnz", (json_int_t)A->nnz, "input_bytes", jbytes(csr_bytes(A))));
    if (o->config)
        bad |= jset(root, "config", json_string(o->config));
    else
        bad |= jset(root, "solver",
                    json_pack("{s:s, s:s, s:o}", "solver", o->solver, "algorithm", o->algorithm,
                              "tolerance", jnum(o->tol)));
    json_t *sets = json_array();
    for (int i = 0; sets && i < o->nsets; i++) {
        char kv[1024];
        snprintf(kv, sizeof kv, "%s=%s", o->set_key[i], o->set_val[i]);
        bad |= json_array_append_new(sets, json_string(kv)) != 0;
    }
    bad |= jset(root, "overrides", sets);
    bad |= jset(root, "repeat", json_integer(o->repeat));
    json_t *runs = json_array();
    for (int i = 0; runs && i < nb; i++)
        bad |= json_array_append_new(runs, result_json(&res[i], o)) != 0;
    bad |= jset(root, "runs", runs);
    if (ic >= 0 && ig >= 0) {
        const result *c = &res[ic], *g = &res[ig];
        bad |= jset(root, "speedup_cuda_over_cpu",
                    json_pack("{s:o, s:o, s:o}", "setup", jnum(c->setup_s / g->setup_s), "solve",
                              jnum(c->solve_s / g->solve_s), "time_to_solution",
                              jnum(c->tts_s / g->tts_s)));
        if (c->copy_gbs > 0.0 && g->copy_gbs > 0.0)
            bad |= jset(root, "copy_bandwidth_cuda_over_cpu", jnum(g->copy_gbs / c->copy_gbs));
    }
    if (bad) {
        fprintf(stderr, "bench_amg: out of memory building %s\n", path);
        json_decref(root);
        return 1;
    }
    int rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (rc != 0) {
        fprintf(stderr, "bench_amg: cannot write %s\n", path);
        return 1;
    }
    printf("results written to %s\n", path);
    return 0;
}

/* With two or more backends: setup, solve, time to solution and iterations
 * side by side, and with cpu and cuda the speedups (cpu time / cuda time). */
static void print_comparison(const result *res, int nb, int ic, int ig, const opts *o)
{
    printf("\ncomparison (medians of %d%s; time to solution = setup + solve):\n", o->repeat,
           o->level_formats ? " solves, one setup" : "");
    printf("  %-10s %12s %12s %22s %11s\n", "backend", "setup (s)", "solve (s)",
           "time to solution (s)", "iterations");
    for (int i = 0; i < nb; i++)
        printf("  %-10s %12.4f %12.4f %22.4f %11d\n", res[i].backend, res[i].setup_s,
               res[i].solve_s, res[i].tts_s, res[i].iterations);
    if (ic >= 0 && ig >= 0) {
        const result *c = &res[ic], *g = &res[ig];
        printf("  %-10s %11.2fx %11.2fx %21.2fx\n", "cuda/cpu", c->setup_s / g->setup_s,
               c->solve_s / g->solve_s, c->tts_s / g->tts_s);
        printf("  (speedup cuda/cpu = cpu time / cuda time; above 1: the GPU is faster)\n");
        if (c->copy_gbs > 0.0 && g->copy_gbs > 0.0)
            printf("  copy bandwidth cuda/cpu %.2fx (%.1f / %.1f GB/s): the bound of a "
                   "memory-bound speedup for equally good code\n",
                   g->copy_gbs / c->copy_gbs, g->copy_gbs, c->copy_gbs);
    }
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
    /* results of up to MAX_BACKENDS runs: too large for the stack */
    result *res = calloc(MAX_BACKENDS, sizeof *res);
    if (!xs || !bh || !res) {
        fprintf(stderr, "bench_amg: out of memory\n");
        free(xs);
        free(bh);
        free(res);
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
        if (!strcmp(res[i].backend, "cpu") && ic < 0)
            ic = i;
        if (!strcmp(res[i].backend, "cuda") && ig < 0)
            ig = i;
    }
    if (nb >= 2)
        print_comparison(res, nb, ic, ig, &o);
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
    /* The runs that completed, also when a later backend failed (the exit
     * status says so). */
    if (o.json && write_json(o.json, &o, desc, &A, res, nb, ic, ig))
        rc = 1;
    free(res);
    free(bh);
    ks_csr_free(&A);
    return rc;
}
