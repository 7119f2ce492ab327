/* ksolve under mpirun: each rank gets its rows of the configured problem,
 * generated (ks_generate_dist) or read from the matrix file (rank 0 reads
 * it once and sends the rows: ks_mm_read_dist), in even row blocks; b from
 * its file is split alike. The matrix and vectors are distributed, every
 * rank runs the solve, and rank 0 prints the report and writes the files.
 * One backend a run for now. Every step that can fail on some ranks only
 * is agreed over the ranks, so all stop together. */
#include "cli_dist.h"
#include "cli_setup.h"
#include "ksolve_mpi.h"
#include "../mpi/mm_dist_sized.h"
#include "../vec/backend.h"
#include "../vec/gpu.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int ks_cli_dist_launched(void)
{
    /* The launchers' rank counts: Open MPI's mpirun, and the PMI of MPICH,
     * Intel MPI and srun. */
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1)
            return 1;
    }
    return 0;
}

ks_error ks_cli_dist_init(int *argc, char ***argv, ks_comm **comm)
{
    *comm = NULL;
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS)
        return ks_seterr(KS_ERR_MPI, "MPI_Init failed (error code %d)", rc);
    KS_TRY(ks_comm_create(MPI_COMM_WORLD, comm));
    if (ks_comm_rank(*comm) > 0 &&
        (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)))
        return ks_seterr(KS_ERR_IO, "rank %d: cannot send its output to /dev/null",
                         ks_comm_rank(*comm));
    return KS_OK;
}

void ks_cli_dist_finish(ks_comm *comm)
{
    ks_comm_destroy(&comm);
    int up = 0, down = 0;
    if (MPI_Initialized(&up) == MPI_SUCCESS && up && MPI_Finalized(&down) == MPI_SUCCESS &&
        !down)
        MPI_Finalize();
}

/* What the distributed run cannot do yet: the config is the same on every
 * rank, so every rank refuses alike. */
static ks_error check_supported(const ks_problem_params *pp)
{
    if (!strchr(pp->backend, ','))
        return KS_OK;
    return ks_seterr(KS_ERR_UNSUPPORTED,
                     "ksolve under mpirun: several backends in one run is not done yet");
}

/* A vector (b, x0: `name`) from its file, split like the matrix's rows. */
static ks_error read_vec(const char *path, const char *name, ks_matrix *M, ks_vec *x)
{
    double *v = NULL;
    ks_int n = 0;
    ks_error e = ks_mm_read_vector_dist(ks_matrix_comm(M), path, ks_matrix_rows(M), &v, &n);
    if (e == KS_ERR_SIZE) /* the message names the file and both lengths */
        return ks_adderr(e, "%s does not fit A (%lld rows)", name,
                         (long long)ks_matrix_global_rows(M));
    KS_TRY(e);
    e = ks_comm_agree(ks_matrix_comm(M), ks_vec_set_host(x, v));
    free(v);
    return e;
}

static ks_error read_rhs(const char *path, ks_matrix *M, ks_vec *b, ks_problem_info *pi)
{
    KS_TRY(read_vec(path, "b", M, b));
    snprintf(pi->rhs_source, sizeof pi->rhs_source, "%s", path);
    return KS_OK;
}

/* The right-hand side as the one-process tool makes it (cli/ksolve_main.c),
 * with global row numbers. */
static ks_error make_rhs(const ks_problem_params *pp, ks_matrix *M, ks_vec *b,
                         ks_problem_info *pi)
{
    if (pp->rhs_file[0])
        return read_rhs(pp->rhs_file, M, b, pi);
    const char *kind = pp->rhs_kind;
    if (!strcmp(kind, "ones") || !strcmp(kind, "zero")) {
        double v = kind[0] == 'o' ? 1.0 : 0.0;
        snprintf(pi->rhs_source, sizeof pi->rhs_source, "b = %g", v);
        return ks_vec_fill(b, v);
    }
    const int sine = !strcmp(kind, "A_sin");
    snprintf(pi->rhs_source, sizeof pi->rhs_source, "%s",
             sine ? "b = A*x with x[i] = sin(i)" : "b = A*1 (no right-hand side given)");
    ks_vec *x = NULL;
    ks_error e = ks_matrix_vec_create(M, &x);
    const ks_int n = ks_matrix_rows(M);
    const ks_gint r0 = ks_matrix_row_begin(M);
    double *h = e == KS_OK ? ks_malloc(((size_t)n + 1) * sizeof *h, "x for b = A x") : NULL;
    if (e == KS_OK && !h)
        e = KS_ERR_MEMORY;
    for (ks_int i = 0; e == KS_OK && i < n; i++)
        h[i] = sine ? sin((double)(r0 + i)) : 1.0;
    if (e == KS_OK)
        e = ks_vec_set_host(x, h);
    e = ks_comm_agree(ks_matrix_comm(M), e);
    if (e == KS_OK)
        e = ks_matrix_apply(M, 1.0, x, 0.0, b);
    free(h);
    ks_vec_destroy(&x);
    return e;
}

/* x's parts gathered on rank 0, which writes the file. */
static ks_error write_solution(const ks_comm *comm, const ks_vec *x, const char *path)
{
    const ks_int n = ks_vec_size(x);
    double *mine = ks_malloc((size_t)n * sizeof *mine, "solution part");
    ks_error e = mine ? ks_vec_get_host(x, mine) : KS_ERR_MEMORY;
    e = ks_comm_agree(comm, e);
    if (e == KS_OK)
        e = ks_mm_write_vector_dist(comm, path, mine, n);
    free(mine);
    return e;
}

/* Everything one run owns. */
typedef struct dist_run {
    ks_backend *be;
    ks_dist_csr rows;
    ks_matrix *M;
    ks_solver *s;
    ks_vec *b, *x;
    ks_run_result r;
    ks_run_setup su;
    ks_problem_info pi;
} dist_run;

static void run_free(dist_run *d)
{
    ks_vec_destroy(&d->b);
    ks_vec_destroy(&d->x);
    ks_solver_destroy(&d->s);
    ks_matrix_destroy(&d->M);
    ks_dist_csr_free(&d->rows);
    ks_backend_destroy(&d->be);
    free(d->r.dist.gpus);
    free(d->r.history);
    ks_run_setup_free(&d->su);
}

/* This rank's rows, read or generated; where they came from. A file's
 * sizes are checked with the vectors the solve will add a row (as the
 * one-process tool does) before the reader allocates anything. */
static ks_error load_rows(const ks_comm *comm, const ks_problem_params *pp, dist_run *d)
{
    if (pp->matrix_file[0]) {
        ks_mm_info info;
        const uint64_t row_bytes = ks_cli_vector_row_bytes(pp, ks_backend_host_memory(d->be));
        KS_TRY(ks_mm_read_dist_sized(comm, pp->matrix_file, -1, &d->rows, &info, row_bytes,
                                     "the solve's vectors"));
        d->pi.duplicates_summed = info.duplicates_summed;
        snprintf(d->pi.source, sizeof d->pi.source, "%s", pp->matrix_file);
        return KS_OK;
    }
    KS_TRY(ks_generate_dist(comm, &pp->gen, -1, &d->rows));
    ks_problem_describe_generated(&pp->gen, d->pi.source, sizeof d->pi.source);
    return KS_OK;
}

/* The matrix from this rank's rows, and the problem's numbers over all
 * ranks. */
static ks_error build_matrix(const ks_comm *comm, const ks_problem_params *pp, dist_run *d)
{
    double t0 = ks_wtime();
    KS_TRY(load_rows(comm, pp, d));
    d->pi.load_seconds = ks_wtime() - t0;
    size_t used = strlen(d->pi.source);
    snprintf(d->pi.source + used, sizeof d->pi.source - used, ", %d MPI ranks",
             ks_comm_size(comm));
    ks_spmv_params spmv;
    memset(&spmv, 0, sizeof spmv);
    spmv.threads_per_row = pp->spmv.threads_per_row;
    const ks_dist_csr *R = &d->rows;
    KS_TRY(ks_matrix_create_dist(d->be, comm, R->nrows, R->ncols_global, R->rowptr, R->colind,
                                 R->val, pp->spmv_format, &spmv, &d->M));
    ks_dist_csr_free(&d->rows); /* the matrix has its copy */
    /* The whole problem's sizes; the report's counters are 32-bit. */
    ks_gint nnz = ks_matrix_nnz(d->M);
    double bytes = ks_matrix_bytes_per_apply(d->M);
    KS_TRY(ks_comm_sum_gint(comm, &nnz, 1));
    KS_TRY(ks_comm_sum(comm, &bytes, 1));
    const ks_gint n = ks_matrix_global_rows(d->M);
    d->pi.nrows = d->pi.ncols = n > INT32_MAX ? INT32_MAX : (ks_int)n;
    d->pi.nnz = nnz > INT32_MAX ? INT32_MAX : (ks_int)nnz;
    ks_run_result *r = &d->r;
    snprintf(r->backend, sizeof r->backend, "%s", ks_backend_name(d->be));
    snprintf(r->backend_desc, sizeof r->backend_desc, "%s x %d ranks",
             ks_backend_description(d->be), ks_comm_size(comm));
    snprintf(r->format, sizeof r->format, "%s", ks_matrix_format(d->M));
    snprintf(r->format_reason, sizeof r->format_reason, "%s", ks_matrix_format_reason(d->M));
    r->format_setup_seconds = ks_matrix_setup_seconds(d->M);
    r->bytes_per_apply = bytes;
    return KS_OK;
}

/* The report's MPI lines: the layout over the ranks (minima as maxima of
 * the negatives) and this solve's communication (the caller reset the
 * counts before it). Collective. */
static ks_error summarize(const ks_comm *comm, const ks_matrix *M, ks_dist_summary *s)
{
    ks_int nghost = 0, nsend = 0;
    int nb = 0;
    KS_TRY(ks_matrix_halo_size(M, &nghost, &nsend, &nb));
    ks_comm_stats cs;
    KS_TRY(ks_comm_get_stats(comm, &cs));
    const double rows = (double)ks_matrix_rows(M);
    double v[7] = {rows, -rows, (double)nghost, -(double)nghost, (double)nb, cs.halo_seconds,
                   cs.reduce_seconds};
    KS_TRY(ks_comm_max(comm, v, 7));
    s->ranks = ks_comm_size(comm);
    s->rows_max = (int64_t)v[0];
    s->rows_min = (int64_t)-v[1];
    s->ghosts_max = (int64_t)v[2];
    s->ghosts_min = (int64_t)-v[3];
    s->neighbours_max = (int)v[4];
    s->halo_seconds = v[5];
    s->reduce_seconds = v[6];
    s->halo_exchanges = cs.halo_exchanges;
    s->reductions = cs.reductions;
    return KS_OK;
}

static ks_error solve(const ks_comm *comm, const ks_config *cfg, int quiet, FILE *rep,
                      dist_run *d)
{
    const ks_problem_params *pp = ks_problem_params_of(cfg);
    const ks_solver_params *sp = ks_config_solver_params(cfg);
    ks_run_result *r = &d->r;
    KS_TRY(ks_solver_create(d->be, cfg, &d->s));
    snprintf(r->solver, sizeof r->solver, "%s", ks_solver_name(d->s));
    snprintf(r->precond, sizeof r->precond, "%s", ks_solver_preconditioner_name(d->s));
    KS_TRY(ks_solver_setup(d->s, d->M));
    KS_TRY(ks_comm_agree(comm, ks_run_setup_capture(d->s, &d->su)));
    ks_error e = ks_matrix_vec_create(d->M, &d->b);
    if (e == KS_OK)
        e = ks_matrix_vec_create(d->M, &d->x);
    if (e == KS_OK && !pp->x0_file[0])
        e = ks_vec_fill(d->x, 0.0);
    KS_TRY(ks_comm_agree(comm, e));
    KS_TRY(make_rhs(pp, d->M, d->b, &d->pi));
    if (pp->x0_file[0]) {
        KS_TRY(read_vec(pp->x0_file, "x0", d->M, d->x));
        snprintf(d->pi.x0_source, sizeof d->pi.x0_source, "%s", pp->x0_file);
    }
    if (sp->monitor_residual && !quiet) /* where the report goes (stderr with --json -) */
        fprintf(rep, "residual monitor: %s + %s on %s, %d MPI ranks\n", r->solver, r->precond,
                r->backend, ks_comm_size(comm));
    fflush(rep);
    ks_comm_reset_stats((ks_comm *)comm);
    KS_TRY(ks_solver_solve(d->s, d->b, d->x));
    KS_TRY(summarize(comm, d->M, &r->dist));
    const ks_solve_stats *st = ks_solver_stats(d->s);
    r->stats = *st;
    r->stats.history = NULL;
    r->total_seconds = r->format_setup_seconds + st->setup_seconds + st->solve_seconds;
    if (st->history && st->history_len > 0) {
        r->history = ks_malloc((size_t)st->history_len * sizeof *r->history, "residual history");
        if (r->history) {
            memcpy(r->history, st->history, (size_t)st->history_len * sizeof *r->history);
            r->stats.history = r->history;
        }
    }
    return ks_comm_agree(comm, r->history || !st->history_len ? KS_OK : KS_ERR_MEMORY);
}

/* The cuda backend: this rank's GPU made current by the map (before the
 * backend is made), then every rank's host and GPU for the report.
 * Collective. */
static ks_error select_gpu(const ks_comm *comm, const ks_problem_params *pp)
{
    const char *what, *map = ks_cli_gpu_map(pp, &what);
    int dev = -1;
    ks_error e = ks_comm_select_device(comm, map, &dev);
    if (e != KS_OK && pp->gpu_map[0])
        ks_adderr(e, "%s", what);
    return e;
}

static ks_error gather_gpus(const ks_comm *comm, dist_run *d)
{
    d->r.dist.gpus = ks_calloc((size_t)ks_comm_size(comm), sizeof *d->r.dist.gpus,
                               "the ranks' GPUs");
    KS_TRY(ks_comm_agree(comm, d->r.dist.gpus ? KS_OK : KS_ERR_MEMORY));
    return ks_comm_gather_devices(comm, d->be, d->r.dist.gpus);
}

ks_error ks_cli_dist_solve(const ks_comm *comm, const ks_config *cfg, const char *json_file,
                           int quiet, int *converged)
{
    const ks_problem_params *pp = ks_problem_params_of(cfg);
    const ks_solver_params *sp = ks_config_solver_params(cfg);
    *converged = 0;
    KS_TRY(check_supported(pp));
    /* As without mpirun: --json - puts the JSON alone on stdout and the
     * report on stderr; --quiet drops the report. */
    const int json_stdout = json_file && strcmp(json_file, "-") == 0;
    FILE *rep = json_stdout ? stderr : stdout;
    dist_run d;
    memset(&d, 0, sizeof d);
    /* Decided alike on every rank (the selection is collective): a node
     * without GPUs among others with some fails in the selection. */
    double ngpus = ks_cli_uses_cuda(pp) ? ks_gpu_count() : 0;
    ks_error e = ks_comm_max(comm, &ngpus, 1);
    const int gpu = ngpus > 0;
    if (e == KS_OK && gpu)
        e = select_gpu(comm, pp);
    if (e == KS_OK) {
        e = ks_backend_create(pp->backend, &d.be);
        if (e != KS_OK)
            ks_adderr(e, "backend '%s'", pp->backend);
        e = ks_comm_agree(comm, e);
    }
    if (e == KS_OK && gpu)
        e = gather_gpus(comm, &d);
    if (e == KS_OK)
        e = build_matrix(comm, pp, &d);
    if (e == KS_OK)
        e = solve(comm, cfg, quiet, rep, &d);
    if (e == KS_OK) {
        if (!quiet)
            ks_report_print_setup(rep, &d.pi, sp, &d.r, &d.su, 1);
        if (pp->solution_file[0]) {
            e = write_solution(comm, d.x, pp->solution_file);
            if (e == KS_OK && !quiet)
                fprintf(rep, "  solution (%s) written to %s\n", d.r.backend, pp->solution_file);
        }
    }
    if (e == KS_OK && json_file) {
        if (ks_comm_rank(comm) == 0)
            e = ks_report_write_json_setup(json_file, &d.pi, sp, &d.r, &d.su, 1);
        e = ks_comm_agree(comm, e);
        if (e == KS_OK && !quiet && !json_stdout)
            printf("  statistics written to %s\n", json_file);
    }
    if (e == KS_OK)
        *converged = d.r.stats.status == KS_SOLVE_CONVERGED;
    run_free(&d);
    return e;
}
