/* ksolve: solve A x = b from the command line.
 *
 *   config (file + command-line overrides) -> matrix (file or generator)
 *   -> right-hand side, initial guess -> per backend: matrix in its SpMV
 *   format, solver setup, solve from x0 (0 or --x0) -> report, solution
 *   file, JSON statistics.
 *
 * Exit status: 0 every run converged, 1 a run did not converge, 2 usage,
 * input or runtime error (message on stderr). */
#include "cli.h"
#include "cli_setup.h"
#include "../core/host_memory.h"
#include "../matrices/mmio_sized.h"
#include "../vec/backend.h"
#ifdef KS_HAVE_MPI
#include "cli_dist.h"
#endif

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { EXIT_CONVERGED = 0, EXIT_NOT_CONVERGED = 1, EXIT_ERROR = 2 };
#define MAX_RUNS 2

static int fail(void)
{
    fprintf(stderr, "ksolve: error: %s\n", ks_last_error());
    return EXIT_ERROR;
}

/* Read or generate A; describe where it came from. row_bytes: what the
 * vectors will take a row, checked with the matrix's own memory before the
 * reader allocates it (a header's size alone can ask for gigabytes), and
 * after a generator made it. */
static ks_error load_matrix(const ks_problem_params *pp, uint64_t row_bytes, ks_csr *A,
                            ks_problem_info *pi)
{
    double t0 = ks_wtime();
    if (pp->matrix_file[0]) {
        ks_mm_info info;
        KS_TRY(ks_mm_read_csr_sized(pp->matrix_file, A, &info, row_bytes, "the solve's vectors"));
        pi->duplicates_summed = info.duplicates_summed;
        snprintf(pi->source, sizeof pi->source, "%s", pp->matrix_file);
    } else {
        KS_TRY(ks_generate(&pp->gen, A));
        ks_problem_describe_generated(&pp->gen, pi->source, sizeof pi->source);
        char what[128];
        snprintf(what, sizeof what, "storing the solve's vectors of %ld rows", (long)A->nrows);
        if (ks_host_memory_check(row_bytes * (uint64_t)A->nrows, what) != KS_OK)
            return ks_adderr(KS_ERR_MEMORY, "%s", pi->source);
    }
    pi->load_seconds = ks_wtime() - t0;
    pi->nrows = A->nrows;
    pi->ncols = A->ncols;
    pi->nnz = A->nnz;
    if (A->nrows != A->ncols)
        return ks_seterr(KS_ERR_SIZE, "%s: A is %ld x %ld; a linear solve needs a square matrix",
                         pi->source, (long)A->nrows, (long)A->ncols);
    return KS_OK;
}

/* The right-hand sides on the host (malloc'ed): *kout columns of n values
 * one after the other. A file gives its columns (rhs.count, when set,
 * must agree); generated ones are rhs.count columns, the first as
 * rhs.type says and column j > 0 b_j = A x_j with x_j[i] = sin(j (i + 1))
 * (zero for rhs.type zero), so that every column differs. */
static ks_error make_rhs(const ks_problem_params *pp, const ks_csr *A, double **bout, int *kout,
                         ks_problem_info *pi)
{
    *bout = NULL;
    ks_int n = A->nrows;
    if (pp->rhs_file[0]) {
        double *b;
        ks_int nb;
        int k;
        /* a length other than A's rows is refused before it is allocated */
        KS_TRY(ks_mm_read_block_sized(pp->rhs_file, n, "b", "A", &b, &nb, &k));
        if (k > KS_BLOCK_MAX_COLS) {
            free(b);
            return ks_seterr(KS_ERR_SIZE, "%s: b has %d columns; at most %d right-hand sides "
                             "are solved together", pp->rhs_file, k, KS_BLOCK_MAX_COLS);
        }
        if (pp->nrhs > 0 && pp->nrhs != k) {
            free(b);
            return ks_seterr(KS_ERR_SIZE, "%s: b has %d column%s but rhs.count (--nrhs) is %d",
                             pp->rhs_file, k, k == 1 ? "" : "s", pp->nrhs);
        }
        snprintf(pi->rhs_source, sizeof pi->rhs_source, "%s", pp->rhs_file);
        *bout = b;
        *kout = k;
        return KS_OK;
    }
    const int k = pp->nrhs > 0 ? pp->nrhs : 1;
    double *b = ks_malloc((size_t)n * (size_t)k * sizeof *b + 1, "right-hand side");
    double *x = ks_malloc((size_t)n * sizeof *x + 1, "right-hand side");
    if (!b || !x) {
        free(b);
        free(x);
        return KS_ERR_MEMORY;
    }
    const char *kind = pp->rhs_kind;
    const int zero = strcmp(kind, "zero") == 0;
    if (strcmp(kind, "ones") == 0 || zero) {
        double v = zero ? 0.0 : 1.0;
        for (ks_int i = 0; i < n; i++)
            b[i] = v;
        snprintf(pi->rhs_source, sizeof pi->rhs_source, "b = %g", v);
    } else {
        int sine = strcmp(kind, "A_sin") == 0;
        for (ks_int i = 0; i < n; i++)
            x[i] = sine ? sin((double)i) : 1.0;
        ks_csr_spmv_ref(A, 1.0, x, 0.0, b);
        snprintf(pi->rhs_source, sizeof pi->rhs_source, "%s",
                 sine ? "b = A*x with x[i] = sin(i)" : "b = A*1 (no right-hand side given)");
    }
    for (int j = 1; j < k; j++) {
        double *bj = b + (size_t)j * (size_t)n;
        for (ks_int i = 0; i < n; i++)
            x[i] = zero ? 0.0 : sin((double)j * (double)(i + 1));
        ks_csr_spmv_ref(A, 1.0, x, 0.0, bj);
    }
    if (k > 1) {
        size_t len = strlen(pi->rhs_source);
        snprintf(pi->rhs_source + len, sizeof pi->rhs_source - len,
                 zero ? "; %d columns" : "; %d columns, b_j = A*x_j with x_j[i] = sin(j (i+1)) "
                                         "for j > 0",
                 k);
    }
    free(x);
    *bout = b;
    *kout = k;
    return KS_OK;
}

/* Split "cpu,cuda" into names. */
static int split_backends(const char *list, char names[MAX_RUNS][16])
{
    int n = 0;
    const char *p = list;
    while (*p && n < MAX_RUNS) {
        size_t len = strcspn(p, ",");
        snprintf(names[n++], 16, "%.*s", (int)len, p);
        p += len;
        if (*p == ',')
            p++;
    }
    return n;
}

/* Column-major host columns (n x k) into a row-interleaved block and back;
 * k0 = 1 gives every column the same values (one x0 for all). */
static ks_error block_from_host(ks_block *X, const double *cm, ks_int n, int k, int k0)
{
    double *h = ks_malloc((size_t)n * (size_t)k * sizeof *h + 1, "block upload");
    if (!h)
        return KS_ERR_MEMORY;
    for (ks_int i = 0; i < n; i++)
        for (int j = 0; j < k; j++)
            h[(size_t)i * k + j] = cm[(size_t)(k0 == 1 ? 0 : j) * n + i];
    ks_error e = ks_block_set_host(X, h);
    free(h);
    return e;
}

static ks_error block_to_host(const ks_block *X, ks_int n, int k, double *cm)
{
    double *h = ks_malloc((size_t)n * (size_t)k * sizeof *h + 1, "block download");
    if (!h)
        return KS_ERR_MEMORY;
    ks_error e = ks_block_get_host(X, h);
    for (ks_int i = 0; e == KS_OK && i < n; i++)
        for (int j = 0; j < k; j++)
            cm[(size_t)j * n + i] = h[(size_t)i * k + j];
    free(h);
    return e;
}

/* The k right-hand sides together (ks_solver_solve_many): blocks from the
 * host columns, the solve, each column's statistics into r->cols. */
static ks_error solve_block(ks_solver *s, ks_backend *be, ks_int n, int k, const double *b,
                            const double *x0, int x0_cols, double *x_out, ks_run_result *r)
{
    ks_block *B = NULL, *X = NULL;
    ks_error e = ks_block_create(be, n, k, &B);
    if (e == KS_OK)
        e = ks_block_create(be, n, k, &X);
    if (e == KS_OK)
        e = block_from_host(B, b, n, k, k);
    if (e == KS_OK)
        e = x0 ? block_from_host(X, x0, n, k, x0_cols) : ks_block_fill(X, 0.0);
    if (e == KS_OK)
        e = ks_solver_solve_many(s, B, X);
    if (e == KS_OK) {
        r->cols = ks_malloc((size_t)k * sizeof *r->cols, "per-column statistics");
        if (!r->cols)
            e = KS_ERR_MEMORY;
    }
    if (e == KS_OK) {
        r->ncols = k;
        for (int j = 0; j < k; j++) {
            r->cols[j] = *ks_solver_stats_column(s, j);
            r->cols[j].history = NULL;
        }
    }
    if (e == KS_OK && x_out)
        e = block_to_host(X, n, k, x_out);
    ks_block_destroy(&B);
    ks_block_destroy(&X);
    return e;
}

/* One backend's run: matrix in the configured format, solver, solve from
 * x0 (NULL: zero). x_out (may be NULL) receives the solution; su what the
 * setup built (AMG grid table). The monitor's heading goes to rep (none
 * when quiet). Frees everything on every path but su. */
static ks_error run_backend(ks_backend *be, const ks_config *cfg, const ks_csr *A,
                            const double *b, int nrhs, const double *x0, int x0_cols, int quiet,
                            FILE *rep, double *x_out, ks_run_result *r, ks_run_setup *su)
{
    const ks_problem_params *pp = ks_problem_params_of(cfg);
    const ks_solver_params *sp = ks_config_solver_params(cfg);
    ks_matrix *M = NULL;
    ks_solver *s = NULL;
    ks_vec *bv = NULL, *xv = NULL;
    ks_spmv_params spmv;
    memset(&spmv, 0, sizeof spmv);
    spmv.threads_per_row = pp->spmv.threads_per_row;

    snprintf(r->backend, sizeof r->backend, "%s", ks_backend_name(be));
    snprintf(r->backend_desc, sizeof r->backend_desc, "%s", ks_backend_description(be));
    ks_error e = ks_matrix_create(be, A, pp->spmv_format, &spmv, &M);
    if (e == KS_OK) {
        snprintf(r->format, sizeof r->format, "%s", ks_matrix_format(M));
        snprintf(r->format_reason, sizeof r->format_reason, "%s", ks_matrix_format_reason(M));
        r->format_setup_seconds = ks_matrix_setup_seconds(M);
        r->bytes_per_apply = ks_matrix_bytes_per_apply(M);
        e = ks_solver_create(be, cfg, &s);
    }
    if (e == KS_OK) {
        snprintf(r->solver, sizeof r->solver, "%s", ks_solver_name(s));
        snprintf(r->precond, sizeof r->precond, "%s", ks_solver_preconditioner_name(s));
        e = ks_solver_setup(s, M);
    }
    if (e == KS_OK)
        e = ks_run_setup_capture(s, su);
    if (e == KS_OK && nrhs > 1) {
        if (sp->monitor_residual && !quiet)
            fprintf(rep, "residual monitor: %s + %s on %s, %d right-hand sides\n", r->solver,
                    r->precond, r->backend, nrhs);
        fflush(rep);
        e = solve_block(s, be, A->nrows, nrhs, b, x0, x0_cols, x_out, r);
        if (e == KS_OK) {
            const ks_solve_stats *st = ks_solver_stats(s);
            r->stats = *st;
            r->total_seconds = r->format_setup_seconds + st->setup_seconds + st->solve_seconds;
        }
        ks_solver_destroy(&s);
        ks_matrix_destroy(&M);
        return e != KS_OK ? ks_adderr(e, "%s backend", r->backend) : KS_OK;
    }
    if (e == KS_OK)
        e = ks_vec_create(be, A->nrows, &bv);
    if (e == KS_OK)
        e = ks_vec_create(be, A->nrows, &xv);
    if (e == KS_OK)
        e = ks_vec_set_host(bv, b);
    if (e == KS_OK)
        e = x0 ? ks_vec_set_host(xv, x0) : ks_vec_fill(xv, 0.0);
    if (e == KS_OK) {
        if (sp->monitor_residual && !quiet)
            fprintf(rep, "residual monitor: %s + %s on %s\n", r->solver, r->precond,
                    r->backend);
        fflush(rep);
        e = ks_solver_solve(s, bv, xv);
    }
    if (e == KS_OK) {
        const ks_solve_stats *st = ks_solver_stats(s);
        r->stats = *st;
        r->stats.history = NULL;
        r->total_seconds = r->format_setup_seconds + st->setup_seconds + st->solve_seconds;
        if (st->history && st->history_len > 0) {
            r->history = ks_malloc((size_t)st->history_len * sizeof *r->history,
                                   "residual history");
            if (!r->history)
                e = KS_ERR_MEMORY;
            else
                memcpy(r->history, st->history, (size_t)st->history_len * sizeof *r->history);
            r->stats.history = r->history;
        }
    }
    if (e == KS_OK && x_out)
        e = ks_vec_get_host(xv, x_out);
    ks_vec_destroy(&bv);
    ks_vec_destroy(&xv);
    ks_solver_destroy(&s);
    ks_matrix_destroy(&M);
    if (e != KS_OK)
        return ks_adderr(e, "%s backend", r->backend);
    return KS_OK;
}

/* 1 when path names a Matrix Market file: by its name, or by its first
 * line. A matrix given where the config goes would otherwise fail with a
 * JSON syntax error that does not say what to do. */
static int looks_like_matrix_market(const char *path)
{
    size_t n = strlen(path);
    if ((n > 4 && strcmp(path + n - 4, ".mtx") == 0) ||
        (n > 7 && strcmp(path + n - 7, ".mtx.gz") == 0))
        return 1;
    char head[15] = "";
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t got = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[got] = '\0';
    return strcmp(head, "%%MatrixMarket") == 0;
}

/* Open an output path for writing before any expensive work, so that a
 * typo fails in a second and not after the solve. A file this check
 * creates is removed again (a later error must not leave an empty file);
 * an existing one is opened for appending, which changes nothing. */
static ks_error check_output_path(const char *path, const char *what)
{
    struct stat sb;
    int existed = stat(path, &sb) == 0;
    FILE *f = fopen(path, existed ? "a" : "w");
    if (!f)
        return ks_seterr(KS_ERR_IO, "cannot write the %s to '%s': %s", what, path,
                         strerror(errno));
    fclose(f);
    if (!existed)
        remove(path);
    return KS_OK;
}

/* Turn the relative file keys into absolute ones, so that the config
 * --print-config writes works from any folder. */
static ks_error absolute_file_keys(ks_config *cfg)
{
    static const char *const keys[] = {"matrix.file", "rhs.file", "x0.file", "solution.file"};
    const ks_problem_params *pp = ks_problem_params_of(cfg);
    const char *vals[] = {pp->matrix_file, pp->rhs_file, pp->x0_file, pp->solution_file};
    char cwd[KS_PATH_MAX];
    for (int i = 0; i < 4; i++) {
        if (!vals[i][0] || vals[i][0] == '/')
            continue;
        if (!getcwd(cwd, sizeof cwd))
            return ks_seterr(KS_ERR_IO, "cannot find the working folder: %s", strerror(errno));
        char full[2 * KS_PATH_MAX];
        snprintf(full, sizeof full, "%s/%s", cwd, vals[i]);
        /* As a JSON string: a name like "123" must stay a string. */
        json_t *js = json_string(full);
        char *text = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
        json_decref(js);
        if (!text)
            return ks_seterr(KS_ERR_MEMORY, "out of memory writing %s", keys[i]);
        ks_error e = ks_config_set(cfg, keys[i], text);
        free(text);
        KS_TRY(e);
        pp = ks_problem_params_of(cfg); /* the set replaced the block */
        vals[0] = pp->matrix_file;
        vals[1] = pp->rhs_file;
        vals[2] = pp->x0_file;
        vals[3] = pp->solution_file;
    }
    return KS_OK;
}

/* Everything main() owns, so that one function frees it on every path. */
typedef struct ks_cli_state {
    ks_cli_args args;
    ks_config *cfg;
    ks_backend *be[MAX_RUNS];
    int nbe;
    ks_csr A;
    double *b, *x, *x0;
    int nrhs;             /* columns of b (and x) */
    int x0_cols;          /* columns of x0: 1 (every column starts from it) or nrhs */
    ks_run_result runs[MAX_RUNS];
    ks_run_setup setups[MAX_RUNS];
    int nruns;
    ks_problem_info pi;
    struct ks_comm *comm; /* under mpirun with more than one rank (cli/dist_run.c) */
} ks_cli_state;

static void state_free(ks_cli_state *st)
{
    for (int i = 0; i < st->nruns; i++) {
        free(st->runs[i].history);
        free(st->runs[i].cols);
        ks_run_setup_free(&st->setups[i]);
    }
    for (int i = 0; i < st->nbe; i++)
        ks_backend_destroy(&st->be[i]);
    ks_csr_free(&st->A);
    free(st->b);
    free(st->x);
    free(st->x0);
    ks_config_destroy(&st->cfg);
    ks_cli_args_free(&st->args);
}

static int run(int argc, char **argv, ks_cli_state *st)
{
    if (ks_cli_parse(argc, argv, &st->args) != KS_OK) {
        fprintf(stderr, "ksolve: error: %s\nTry 'ksolve --help'.\n", ks_last_error());
        return EXIT_ERROR;
    }
    ks_cli_args *a = &st->args;
    if (a->help) {
        ks_cli_usage(stdout);
        return EXIT_CONVERGED;
    }
    if (a->version) {
        printf("ksolve %s\n", KS_VERSION_STRING);
        return EXIT_CONVERGED;
    }
    if (a->config_file && looks_like_matrix_market(a->config_file)) {
        fprintf(stderr,
                "ksolve: error: '%s' is a Matrix Market file, not a config: give a matrix "
                "with -A %s\n",
                a->config_file, a->config_file);
        return EXIT_ERROR;
    }
    /* The library parses; the tool's own keys come as a scope of it. */
    ks_error e = a->config_file
                     ? ks_config_create_from_file_scoped(a->config_file, &ks_problem_scope, &st->cfg)
                     : ks_config_create_default_scoped(&ks_problem_scope, &st->cfg);
    if (e != KS_OK)
        return fail();
    if (ks_config_set_many(st->cfg, a->nsets, (const char *const *)a->set_key,
                           (const char *const *)a->set_value) != KS_OK)
        return fail();
    if (a->print_config) {
        if (absolute_file_keys(st->cfg) != KS_OK)
            return fail();
        char *text = ks_config_dump(st->cfg);
        if (!text)
            return fail();
        printf("%s\n", text);
        free(text);
        return EXIT_CONVERGED;
    }
    /* Process-wide settings before any backend exists. Progress sets a
     * key, which replaces the blocks: pp and sp are read after it. */
    const int json_stdout = a->json_file && strcmp(a->json_file, "-") == 0;
    ks_cli_apply_quiet(a->quiet);
    ks_cli_route_output(json_stdout);
    if (ks_cli_apply_threads(ks_cli_threads(st->comm, ks_problem_params_of(st->cfg)->threads)) !=
        KS_OK)
        return fail();
    /* Not under mpirun: there only rank 0's stderr can be a terminal, and
     * the ranks' configs must stay alike (a setup over ranks is collective). */
    if (!st->comm && ks_cli_progress_enable(st->cfg, a->quiet) != KS_OK)
        return fail();
    const ks_problem_params *pp = ks_problem_params_of(st->cfg);
    const ks_solver_params *sp = ks_config_solver_params(st->cfg);
#ifdef KS_HAVE_MPI
    if (st->comm && pp->nrhs > 1) {
        ks_seterr(KS_ERR_UNSUPPORTED, "rhs.count (--nrhs) %d under mpirun: block solves are "
                  "local to one process (not yet done over MPI ranks)", pp->nrhs);
        return fail();
    }
    if (st->comm) { /* each rank solves its rows; rank 0 reports */
        int converged = 0;
        if (ks_cli_dist_solve(st->comm, st->cfg, a->json_file, a->quiet, &converged) != KS_OK)
            return fail();
        return converged ? EXIT_CONVERGED : EXIT_NOT_CONVERGED;
    }
#endif

    /* Output paths and backends first: a typo or a missing GPU fails
     * before any expensive work. */
    if (pp->solution_file[0] && check_output_path(pp->solution_file, "solution") != KS_OK)
        return fail();
    if (a->json_file && strcmp(a->json_file, "-") != 0 &&
        check_output_path(a->json_file, "JSON statistics") != KS_OK)
        return fail();
    if (ks_cli_apply_gpu_map(pp) != KS_OK)
        return fail();
    char names[MAX_RUNS][16];
    int nb = split_backends(pp->backend, names);
    for (int i = 0; i < nb; i++) {
        if (ks_backend_create(names[i], &st->be[i]) != KS_OK) {
            ks_adderr(KS_ERR_UNSUPPORTED, "backend '%s'", names[i]);
            int rc = fail();
            if (strcmp(names[i], "cuda") == 0) /* no GPU or driver: say what still works */
                fprintf(stderr, "ksolve: --backend cpu solves on the CPU without a GPU\n");
            return rc;
        }
        st->nbe++;
    }
    int host_backends = 0;
    for (int i = 0; i < st->nbe; i++)
        host_backends += ks_backend_host_memory(st->be[i]);
    if (load_matrix(pp, ks_cli_vector_row_bytes(pp, host_backends), &st->A, &st->pi) != KS_OK)
        return fail();
    if (make_rhs(pp, &st->A, &st->b, &st->nrhs, &st->pi) != KS_OK)
        return fail();
    if (pp->x0_file[0]) {
        ks_int n0;
        if (ks_mm_read_block_sized(pp->x0_file, st->A.nrows, "x0", "A", &st->x0, &n0,
                                   &st->x0_cols) != KS_OK)
            return fail();
        if (st->x0_cols != 1 && st->x0_cols != st->nrhs) {
            ks_seterr(KS_ERR_SIZE, "%s: x0 has %d columns, b %d (give one column, which every "
                      "system starts from, or one per right-hand side)",
                      pp->x0_file, st->x0_cols, st->nrhs);
            return fail();
        }
        snprintf(st->pi.x0_source, sizeof st->pi.x0_source, "%s", pp->x0_file);
    }
    st->pi.nrhs = st->nrhs;
    if (pp->solution_file[0]) {
        st->x = ks_malloc((size_t)st->A.nrows * (size_t)st->nrhs * sizeof *st->x + 1,
                          "solution");
        if (!st->x)
            return fail();
    }
    for (int i = 0; i < st->nbe; i++) {
        st->nruns = i + 1;
        /* The solution written is the first backend's. */
        if (run_backend(st->be[i], st->cfg, &st->A, st->b, st->nrhs, st->x0, st->x0_cols, a->quiet,
                        json_stdout ? stderr : stdout, i == 0 ? st->x : NULL, &st->runs[i],
                        &st->setups[i]) != KS_OK)
            return fail();
    }
    /* With --json - standard output carries the JSON alone, so the
     * report goes to standard error; --quiet drops the report (the JSON
     * asked for still comes). */
    FILE *rep = json_stdout ? stderr : stdout;
    if (!a->quiet)
        ks_report_print_setup(rep, &st->pi, sp, st->runs, st->setups, st->nruns);
    if (pp->solution_file[0]) {
        if (ks_mm_write_block(pp->solution_file, st->x, st->A.nrows, st->nrhs) != KS_OK)
            return fail();
        if (!a->quiet)
            fprintf(rep, "  solution (%s) written to %s\n", st->runs[0].backend,
                    pp->solution_file);
    }
    if (a->json_file) {
        if (ks_report_write_json_setup(a->json_file, &st->pi, sp, st->runs, st->setups,
                                       st->nruns) != KS_OK)
            return fail();
        if (!json_stdout && !a->quiet)
            printf("  statistics written to %s\n", a->json_file);
    }
    for (int i = 0; i < st->nruns; i++)
        if (st->runs[i].stats.status != KS_SOLVE_CONVERGED)
            return EXIT_NOT_CONVERGED;
    return EXIT_CONVERGED;
}

int main(int argc, char **argv)
{
    ks_cli_state st;
    memset(&st, 0, sizeof st);
#ifdef KS_HAVE_MPI
    /* Started by mpirun as one of several ranks: a distributed solve. */
    if (ks_cli_dist_launched() && ks_cli_dist_init(&argc, &argv, &st.comm) != KS_OK) {
        int rc = fail();
        ks_cli_dist_finish(st.comm);
        return rc;
    }
#endif
    int rc = run(argc, argv, &st);
    state_free(&st);
#ifdef KS_HAVE_MPI
    if (st.comm || ks_cli_dist_launched())
        ks_cli_dist_finish(st.comm);
#endif
    return rc;
}
