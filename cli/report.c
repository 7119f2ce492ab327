/* The ksolve report: an aligned table with one column per backend (and the
 * GPU/CPU speedups when both ran), and the same data as JSON for scripts. */
#include "cli.h"
#include "cli_setup.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#ifdef KS_HAVE_MPI
#include "ksolve_mpi.h"
#endif

#define LABEL_W 26
#define COL_W 18
#define MAX_COLS 4

/* 1234567 -> "1,234,567" */
static const char *fmt_count(char *buf, size_t len, int64_t v)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%lld", (long long)(v < 0 ? -v : v));
    size_t o = 0;
    if (v < 0 && o + 1 < len)
        buf[o++] = '-';
    for (int i = 0; i < n && o + 1 < len; i++) {
        buf[o++] = digits[i];
        if ((n - 1 - i) % 3 == 0 && i != n - 1 && o + 1 < len)
            buf[o++] = ',';
    }
    buf[o] = '\0';
    return buf;
}

static const char *fmt_bytes(char *buf, size_t len, double b)
{
    if (b >= 1e9)
        snprintf(buf, len, "%.2f GB", b / 1e9);
    else if (b >= 1e6)
        snprintf(buf, len, "%.2f MB", b / 1e6);
    else if (b >= 1e3)
        snprintf(buf, len, "%.2f kB", b / 1e3);
    else
        snprintf(buf, len, "%.0f B", b);
    return buf;
}

static void row_label(FILE *out, const char *label) { fprintf(out, "  %-*s", LABEL_W, label); }

/* ------------------------------------------------------ setup capture */
ks_error ks_run_setup_capture(const ks_solver *s, ks_run_setup *su)
{
    memset(su, 0, sizeof *su);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return ks_seterr(KS_ERR_MEMORY, "cannot capture the setup summary (open_memstream)");
    ks_solver_print_setup(s, f);
    if (fclose(f) != 0) {
        free(buf);
        return ks_seterr(KS_ERR_MEMORY, "cannot capture the setup summary");
    }
    su->text = buf;
    if (!s)
        return KS_OK;
    ks_hierarchy_info hi;
    ks_error e = ks_solver_hierarchy(s, &hi);
    if (e != KS_OK) {
        ks_run_setup_free(su);
        return e;
    }
    if (hi.nlevels == 0)
        return KS_OK; /* not AMG */
    su->level_rows = ks_malloc((size_t)hi.nlevels * sizeof *su->level_rows, "AMG level sizes");
    su->level_nnz = ks_malloc((size_t)hi.nlevels * sizeof *su->level_nnz, "AMG level sizes");
    if (!su->level_rows || !su->level_nnz) {
        ks_run_setup_free(su);
        return KS_ERR_MEMORY;
    }
    /* Copies: hi's arrays belong to the solver, which the run destroys
     * before the report; the phase names are static. */
    su->amg_levels = hi.nlevels;
    for (int l = 0; l < hi.nlevels; l++) {
        su->level_rows[l] = hi.levels[l].rows;
        su->level_nnz[l] = hi.levels[l].nnz;
    }
    su->grid_complexity = hi.grid_complexity;
    su->operator_complexity = hi.operator_complexity;
    for (int k = 0; k < hi.nphases && k < KS_RUN_SETUP_PHASES; k++) {
        su->phase_name[k] = hi.phase_names[k];
        su->phase_seconds[k] = hi.phase_seconds[k];
        su->nphases = k + 1;
    }
    return KS_OK;
}

void ks_run_setup_free(ks_run_setup *su)
{
    if (!su)
        return;
    free(su->text);
    free(su->level_rows);
    free(su->level_nnz);
    memset(su, 0, sizeof *su);
}

int ks_run_setup_same_hierarchy(const ks_run_setup *a, const ks_run_setup *b)
{
    if (a->amg_levels == 0 || a->amg_levels != b->amg_levels)
        return 0;
    for (int l = 0; l < a->amg_levels; l++)
        if (a->level_rows[l] != b->level_rows[l] || a->level_nnz[l] != b->level_nnz[l])
            return 0;
    return 1;
}

static int have_amg(const ks_run_setup *setups, int nruns)
{
    for (int i = 0; setups && i < nruns; i++)
        if (setups[i].amg_levels > 0)
            return 1;
    return 0;
}

/* The setup summary of each run, indented under a title; a second run
 * that built the same hierarchy gets one line instead of a second table. */
static void print_setups(FILE *out, const ks_run_result *runs, const ks_run_setup *setups,
                         int nruns)
{
    for (int i = 0; setups && i < nruns; i++) {
        const ks_run_setup *su = &setups[i];
        if (!su->text || !su->text[0])
            continue;
        if (i > 0 && ks_run_setup_same_hierarchy(&setups[0], su)) {
            fprintf(out,
                    "\n  setup on %s: the same hierarchy as on %s (%d levels, operator complexity "
                    "%.3f, grid complexity %.3f); times below\n",
                    runs[i].backend, runs[0].backend, su->amg_levels, su->operator_complexity,
                    su->grid_complexity);
            continue;
        }
        fprintf(out, "\n  setup on %s:\n", runs[i].backend);
        for (const char *line = su->text; *line;) {
            size_t n = strcspn(line, "\n");
            fprintf(out, "    %.*s\n", (int)n, line);
            line += n;
            if (*line == '\n')
                line++;
        }
    }
}

/* The AMG settings in two lines of the header. */
static void print_amg_params(FILE *out, const ks_amg_params *a)
{
    char blk[64];
    row_label(out, "amg");
    if (a->algorithm == KS_AMG_AGGREGATION)
        fprintf(out, "AGGREGATION, strength threshold %g\n", a->strength_threshold);
    else
    {
        fprintf(out, "CLASSICAL, %s%s, %s interpolation, strength threshold %g, max_row_sum %g, "
                     "interp_max_elements %d",
                ks_name_of(ks_amg_selector_names, a->selector),
                ks_amg_hmis_blocks_label(a, blk, sizeof blk),
                ks_name_of(ks_amg_interp_names, a->interpolator),
                a->strength_threshold, a->max_row_sum, a->interp_max_elements);
        if (a->aggressive_levels > 0)
            fprintf(out, ", aggressive_levels %d (second stage %s)", a->aggressive_levels,
                    ks_name_of(ks_amg_interp_names, a->aggressive_interpolator));
        fprintf(out, "\n");
    }
    row_label(out, "amg cycle");
    fprintf(out, "%s(%d,%d), smoother %s", ks_name_of(ks_amg_cycle_names, a->cycle),
            a->presweeps, a->postsweeps, ks_name_of(ks_amg_smoother_names, a->smoother.solver));
    if (a->smoother.solver == KS_SMOOTHER_CHEBYSHEV)
        fprintf(out, " degree %d", a->smoother.chebyshev_degree);
    else if (a->smoother.relaxation_factor > 0.0)
        fprintf(out, " (relaxation %g)", a->smoother.relaxation_factor);
    fprintf(out, ", coarsest level %s up to %d rows, max_levels %d\n",
            ks_name_of(ks_amg_coarse_solver_names, a->coarse_solver),
            a->coarse_max_rows, a->max_levels);
}

static double setup_total(const ks_run_result *r)
{
    return r->format_setup_seconds + r->stats.setup_seconds;
}

static double per_iter(const ks_run_result *r)
{
    return r->stats.iterations > 0 ? r->stats.solve_seconds / r->stats.iterations : NAN;
}


/* Seconds with a unit that keeps 3-4 significant digits. */
static const char *fmt_time(char *buf, size_t len, double t)
{
    if (!isfinite(t))
        snprintf(buf, len, "-");
    else if (t < 1e-3)
        snprintf(buf, len, "%.1f us", t * 1e6);
    else if (t < 1.0)
        snprintf(buf, len, "%.3f ms", t * 1e3);
    else
        snprintf(buf, len, "%.3f s", t);
    return buf;
}

/* Print label, cells padded to COL_W, extra; without trailing blanks. */
static void row_cells(FILE *out, const char *label, char cells[][160], int n, const char *extra)
{
    char line[512];
    int used = snprintf(line, sizeof line, "  %-*s", LABEL_W, label);
    for (int i = 0; i < n && used >= 0 && used < (int)sizeof line; i++)
        used += snprintf(line + used, sizeof line - (size_t)used, "%-*s", COL_W, cells[i]);
    if (extra && used >= 0 && used < (int)sizeof line)
        snprintf(line + used, sizeof line - (size_t)used, "%s", extra);
    size_t len = strlen(line);
    while (len > 0 && line[len - 1] == ' ')
        line[--len] = '\0';
    fprintf(out, "%s\n", line);
}

static void row_text(FILE *out, const char *label, const ks_run_result *runs, int nruns,
                     const char *(*get)(const ks_run_result *, char *, size_t))
{
    char cells[MAX_COLS][160];
    for (int i = 0; i < nruns && i < MAX_COLS; i++)
        get(&runs[i], cells[i], sizeof cells[i]);
    row_cells(out, label, cells, nruns < MAX_COLS ? nruns : MAX_COLS, NULL);
}

/* A time row; with a cpu and a cuda run, the cpu/cuda ratio is appended. */
static void row_time(FILE *out, const char *label, const ks_run_result *runs, int nruns,
                     double (*get)(const ks_run_result *), int cpu, int gpu)
{
    char cells[MAX_COLS][160], extra[32] = "";
    for (int i = 0; i < nruns && i < MAX_COLS; i++)
        fmt_time(cells[i], sizeof cells[i], get(&runs[i]));
    if (cpu >= 0 && gpu >= 0) {
        double c = get(&runs[cpu]), g = get(&runs[gpu]);
        if (isfinite(c) && isfinite(g) && g > 0.0)
            snprintf(extra, sizeof extra, "%.2fx", c / g);
    }
    row_cells(out, label, cells, nruns < MAX_COLS ? nruns : MAX_COLS, extra);
}

static const char *g_format(const ks_run_result *r, char *b, size_t n)
{
    snprintf(b, n, "%s", r->format);
    return b;
}
/* The format with why "auto" chose it: "dia (auto: banded: ...)". */
static void print_format(FILE *out, const ks_run_result *runs, int nruns)
{
    char b[256];
    if (nruns == 1) {
        row_label(out, "spmv format");
        fprintf(out, "%s", runs[0].format);
        if (runs[0].format_reason[0])
            fprintf(out, " (auto: %s)", runs[0].format_reason);
        fputc('\n', out);
        return;
    }
    /* Several columns: the names stay aligned, the reasons follow a line each. */
    row_text(out, "spmv format", runs, nruns, g_format);
    for (int i = 0; i < nruns; i++) {
        if (!runs[i].format_reason[0])
            continue;
        snprintf(b, sizeof b, "  auto on %s", runs[i].backend);
        row_label(out, b);
        fprintf(out, "%s: %s\n", runs[i].format, runs[i].format_reason);
    }
}
static const char *g_bytes(const ks_run_result *r, char *b, size_t n)
{
    return fmt_bytes(b, n, r->bytes_per_apply);
}
static const char *g_iters(const ks_run_result *r, char *b, size_t n)
{
    snprintf(b, n, "%d", r->stats.iterations);
    return b;
}
static const char *g_relres(const ks_run_result *r, char *b, size_t n)
{
    snprintf(b, n, "%.3e", r->stats.relative_residual);
    return b;
}
static const char *g_trueres(const ks_run_result *r, char *b, size_t n)
{
    snprintf(b, n, "%.3e", r->stats.true_relative_residual);
    return b;
}
static const char *g_resnorm(const ks_run_result *r, char *b, size_t n)
{
    snprintf(b, n, "%.3e -> %.3e", r->stats.initial_residual, r->stats.final_residual);
    return b;
}
static const char *g_status(const ks_run_result *r, char *b, size_t n)
{
    snprintf(b, n, "%s", ks_solve_status_name(r->stats.status));
    return b;
}
static double t_format(const ks_run_result *r) { return r->format_setup_seconds; }
static double t_psetup(const ks_run_result *r) { return r->stats.setup_seconds; }
static double t_solve(const ks_run_result *r) { return r->stats.solve_seconds; }
static double t_total(const ks_run_result *r) { return r->total_seconds; }

void ks_report_print(FILE *out, const ks_problem_info *pi, const ks_solver_params *sp,
                     const ks_run_result *runs, int nruns)
{
    ks_report_print_setup(out, pi, sp, runs, NULL, nruns);
}

/* A table row from the setups (AMG numbers); "-" where a run has none. */
static void row_setup(FILE *out, const char *label, const ks_run_setup *setups, int nruns,
                      int what)
{
    char cells[MAX_COLS][160];
    for (int i = 0; i < nruns && i < MAX_COLS; i++) {
        const ks_run_setup *su = &setups[i];
        if (su->amg_levels == 0)
            snprintf(cells[i], sizeof cells[i], "-");
        else if (what == 0)
            snprintf(cells[i], sizeof cells[i], "%d", su->amg_levels);
        else
            snprintf(cells[i], sizeof cells[i], "%.3f",
                     what == 1 ? su->operator_complexity : su->grid_complexity);
    }
    row_cells(out, label, cells, nruns < MAX_COLS ? nruns : MAX_COLS, NULL);
}

/* A block solve: one line per right-hand side and run (the rows above
 * then summarise the columns: the most iterations, the largest residuals,
 * the first status that is not CONVERGED). */
static void print_columns(FILE *out, const ks_run_result *runs, int nruns)
{
    for (int i = 0; i < nruns; i++) {
        const ks_run_result *r = &runs[i];
        if (r->ncols <= 0)
            continue;
        fprintf(out, "\n  %d right-hand sides solved together%s%s (above: the slowest column, "
                     "the largest residuals)\n",
                r->ncols, nruns > 1 ? " on " : "", nruns > 1 ? r->backend : "");
        fprintf(out, "  %8s  %10s  %14s  %14s  %s\n", "column", "iterations", "final rel res",
                "true rel res", "status");
        for (int j = 0; j < r->ncols; j++) {
            const ks_solve_stats *c = &r->cols[j];
            fprintf(out, "  %8d  %10d  %14.3e  %14.3e  %s%s%s\n", j, c->iterations,
                    c->relative_residual, c->true_relative_residual,
                    ks_solve_status_name(c->status), c->breakdown[0] ? ": " : "", c->breakdown);
        }
    }
}

#ifdef KS_HAVE_MPI
/* Each rank's GPU, a line a rank up to this many ranks; beyond, a summary. */
#define GPU_LINES_MAX 16

/* Ranks 0 .. i-1 on one of i's host and GPU (PCI bus id) / on i's host. */
static int same_gpu_before(const ks_rank_device *g, int i, int host_only)
{
    for (int j = 0; j < i; j++)
        if (!strcmp(g[j].host, g[i].host) &&
            (host_only || !strcmp(g[j].pci_bus_id, g[i].pci_bus_id)))
            return 1;
    return 0;
}

static void print_gpus(FILE *out, const ks_dist_summary *d)
{
    const ks_rank_device *g = d->gpus;
    row_label(out, "GPUs");
    if (d->ranks <= GPU_LINES_MAX) {
        for (int r = 0; r < d->ranks; r++) {
            if (r > 0)
                row_label(out, "");
            fprintf(out, "rank %d: host %s, GPU %d (%s, %s)\n", r, g[r].host, g[r].device,
                    g[r].name, g[r].pci_bus_id);
        }
        return;
    }
    int hosts = 0, gpus = 0, models = 0;
    for (int r = 0; r < d->ranks; r++) {
        hosts += !same_gpu_before(g, r, 1);
        gpus += !same_gpu_before(g, r, 0);
        int seen = 0;
        for (int j = 0; j < r && !seen; j++)
            seen = !strcmp(g[j].name, g[r].name);
        models += !seen;
    }
    fprintf(out, "%d ranks on %d GPUs of %d hosts (%s%s); rank 0: host %s, GPU %d (%s)\n",
            d->ranks, gpus, hosts, g[0].name, models > 1 ? " and other models" : "", g[0].host,
            g[0].device, g[0].pci_bus_id);
}

static json_t *gpus_json(const ks_dist_summary *d)
{
    json_t *a = json_array();
    for (int r = 0; a && r < d->ranks; r++)
        json_array_append_new(a, json_pack("{s:i, s:s, s:i, s:s, s:s}", "rank", r, "host",
                                           d->gpus[r].host, "device", d->gpus[r].device, "name",
                                           d->gpus[r].name, "pci_bus_id",
                                           d->gpus[r].pci_bus_id));
    return a;
}
#endif

static void print_dist(FILE *out, const ks_dist_summary *d)
{
    char a[64], b[64];
    row_label(out, "MPI ranks");
    fprintf(out, "%d\n", d->ranks);
    row_label(out, "rows per rank");
    fprintf(out, "%s .. %s\n", fmt_count(a, sizeof a, d->rows_min),
            fmt_count(b, sizeof b, d->rows_max));
    row_label(out, "halo per rank");
    fprintf(out, "%s .. %s values received per product, up to %d neighbours\n",
            fmt_count(a, sizeof a, d->ghosts_min), fmt_count(b, sizeof b, d->ghosts_max),
            d->neighbours_max);
    row_label(out, "solve communication");
    fprintf(out, "halo %s in %lld exchanges, reductions %s in %lld (slowest rank)\n",
            fmt_time(a, sizeof a, d->halo_seconds), d->halo_exchanges,
            fmt_time(b, sizeof b, d->reduce_seconds), d->reductions);
#ifdef KS_HAVE_MPI
    if (d->gpus)
        print_gpus(out, d);
#endif
}

void ks_report_print_setup(FILE *out, const ks_problem_info *pi, const ks_solver_params *sp,
                           const ks_run_result *runs, const ks_run_setup *setups, int nruns)
{
    char a[64], b[64];
    int cpu = -1, gpu = -1;
    for (int i = 0; i < nruns; i++) {
        if (strcmp(runs[i].backend, "cpu") == 0)
            cpu = i;
        else if (strcmp(runs[i].backend, "cuda") == 0)
            gpu = i;
    }
    fprintf(out, "\nksolve %s\n", KS_VERSION_STRING);
    row_label(out, "problem");
    fprintf(out, "%s\n", pi->source);
    row_label(out, "rows");
    fprintf(out, "%s\n", fmt_count(a, sizeof a, pi->nrows));
    row_label(out, "cols");
    fprintf(out, "%s\n", fmt_count(a, sizeof a, pi->ncols));
    row_label(out, "nnz");
    fprintf(out, "%s\n", fmt_count(a, sizeof a, pi->nnz));
    row_label(out, "nnz/row");
    fprintf(out, "%.2f\n", pi->nrows > 0 ? (double)pi->nnz / pi->nrows : 0.0);
    if (pi->duplicates_summed > 0) {
        row_label(out, "duplicates summed");
        fprintf(out, "%s (repeated entries were added on reading)\n",
                fmt_count(a, sizeof a, pi->duplicates_summed));
    }
    row_label(out, "matrix read/generated in");
    fprintf(out, "%s\n", fmt_time(a, sizeof a, pi->load_seconds));
    row_label(out, "rhs");
    fprintf(out, "%s\n", pi->rhs_source);
    row_label(out, "initial guess");
    fprintf(out, "%s\n", pi->x0_source[0] ? pi->x0_source : "x0 = 0");
    row_label(out, "solver");
    const char *method = nruns > 0 ? runs[0].solver : sp->solver;
    if (strcmp(method, "AMG") == 0)
        fprintf(out, "AMG (one cycle per iteration, no Krylov method)\n");
    else if (ks_solver_params_is_gmres(sp))
        fprintf(out, "%s + %s, restart length %d\n", method,
                nruns > 0 ? runs[0].precond : sp->pc.solver, ks_solver_params_gmres_m(sp));
    else
        fprintf(out, "%s + %s\n", method, nruns > 0 ? runs[0].precond : sp->pc.solver);
    if (strcmp(sp->pc.solver, "AMG") == 0) {
        print_amg_params(out, &sp->pc.amg);
    } else if (strcmp(sp->pc.solver, "NOSOLVER") != 0) {
        row_label(out, "relaxation factor");
        fprintf(out, "%g\n", sp->pc.relaxation_factor);
    }
    row_label(out, "criterion");
    fprintf(out, "%s, %s norm, tolerance %.1e, max_iters %d\n",
            ks_name_of(ks_conv_names, sp->convergence), ks_name_of(ks_norm_names, sp->norm), sp->tolerance,
            sp->max_iters);
    for (int i = 0; i < nruns; i++) {
        snprintf(b, sizeof b, "backend %s", runs[i].backend);
        row_label(out, b);
        fprintf(out, "%s\n", runs[i].backend_desc);
    }
    if (nruns > 0 && runs[0].dist.ranks > 0)
        print_dist(out, &runs[0].dist);
    print_setups(out, runs, setups, nruns);

    fputc('\n', out);
    char head[MAX_COLS][160];
    for (int i = 0; i < nruns && i < MAX_COLS; i++)
        snprintf(head[i], sizeof head[i], "%s", runs[i].backend);
    row_cells(out, "", head, nruns < MAX_COLS ? nruns : MAX_COLS,
              cpu >= 0 && gpu >= 0 ? "speedup (cpu time / cuda time)" : NULL);
    print_format(out, runs, nruns);
    row_text(out, "bytes per apply", runs, nruns, g_bytes);
    row_time(out, "spmv format setup", runs, nruns, t_format, -1, -1);
    row_time(out, "solver setup", runs, nruns, t_psetup, -1, -1);
    row_time(out, "setup", runs, nruns, setup_total, cpu, gpu);
    if (have_amg(setups, nruns)) {
        row_setup(out, "amg levels", setups, nruns, 0);
        row_setup(out, "operator complexity", setups, nruns, 1);
        row_setup(out, "grid complexity", setups, nruns, 2);
    }
    row_time(out, "solve", runs, nruns, t_solve, cpu, gpu);
    row_time(out, "total", runs, nruns, t_total, cpu, gpu);
    row_text(out, "iterations", runs, nruns, g_iters);
    row_time(out, "time per iteration", runs, nruns, per_iter, cpu, gpu);
    if (nruns == 1)
        row_text(out, "residual norm", runs, nruns, g_resnorm);
    row_text(out, "final relative residual", runs, nruns, g_relres);
    row_text(out, "true relative residual", runs, nruns, g_trueres);
    if (nruns == 1 && runs[0].stats.breakdown[0]) {
        row_label(out, "status");
        fprintf(out, "%s: %s\n", ks_solve_status_name(runs[0].stats.status),
                runs[0].stats.breakdown);
    } else {
        row_text(out, "status", runs, nruns, g_status);
        for (int i = 0; i < nruns && nruns > 1; i++)
            if (runs[i].stats.breakdown[0])
                fprintf(out, "  %s: %s: %s\n", runs[i].backend,
                        ks_solve_status_name(runs[i].stats.status), runs[i].stats.breakdown);
    }
    print_columns(out, runs, nruns);
    if (nruns == 1)
        fprintf(out, "  (residual norm in %s; true relative residual = ||b - A x||_2 / ||b||_2, "
                     "recomputed)\n",
                ks_name_of(ks_norm_names, sp->norm));
    fflush(out);
}

/* JSON has no NaN or Inf: write null for them. */
static json_t *jnum(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static json_t *run_json(const ks_run_result *r)
{
    const ks_solve_stats *st = &r->stats;
    json_t *hist = json_array();
    for (int i = 0; hist && r->history && i < st->history_len; i++)
        json_array_append_new(hist, jnum(r->history[i]));
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:s, s:s, s:s, s:s, s:b, s:i, s:o, s:o, s:o, "
                     "s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                     "backend", r->backend, "backend_description", r->backend_desc,
                     "spmv_format", r->format, "spmv_format_setup_seconds",
                     jnum(r->format_setup_seconds), "bytes_per_apply", jnum(r->bytes_per_apply),
                     "solver", r->solver, "preconditioner", r->precond, "status",
                     ks_solve_status_name(st->status), "breakdown", st->breakdown, "converged",
                     st->status == KS_SOLVE_CONVERGED, "iterations", st->iterations,
                     "initial_residual", jnum(st->initial_residual), "final_residual",
                     jnum(st->final_residual), "rhs_norm", jnum(st->rhs_norm),
                     "relative_residual", jnum(st->relative_residual), "true_relative_residual",
                     jnum(st->true_relative_residual), "solver_setup_seconds",
                     jnum(st->setup_seconds), "solve_seconds", jnum(st->solve_seconds),
                     "total_seconds", jnum(r->total_seconds), "seconds_per_iteration",
                     jnum(per_iter(r)), "history", hist ? hist : json_null());
}

/* Each right-hand side's statistics of a block solve. */
static json_t *columns_json(const ks_run_result *r)
{
    json_t *a = json_array();
    for (int j = 0; a && j < r->ncols; j++) {
        const ks_solve_stats *c = &r->cols[j];
        json_array_append_new(
            a, json_pack("{s:i, s:s, s:s, s:b, s:i, s:o, s:o, s:o, s:o, s:o}", "column", j,
                         "status", ks_solve_status_name(c->status), "breakdown", c->breakdown,
                         "converged", c->status == KS_SOLVE_CONVERGED, "iterations",
                         c->iterations, "initial_residual", jnum(c->initial_residual),
                         "final_residual", jnum(c->final_residual), "rhs_norm",
                         jnum(c->rhs_norm), "relative_residual", jnum(c->relative_residual),
                         "true_relative_residual", jnum(c->true_relative_residual)));
    }
    return a ? a : json_null();
}

/* The AMG settings, as in the config. */
static json_t *amg_params_json(const ks_amg_params *a)
{
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:i, s:o, s:i, s:s, s:{s:s, s:o, s:i, s:o}, s:i, "
                     "s:i, s:s, s:i, s:i, s:i, s:s, s:I, s:s, s:s, s:i}",
                     "algorithm", ks_name_of(ks_amg_algorithm_names, a->algorithm), "selector",
                     ks_name_of(ks_amg_selector_names, a->selector), "interpolator",
                     ks_name_of(ks_amg_interp_names, a->interpolator), "strength_threshold", jnum(a->strength_threshold),
                     "max_row_sum", jnum(a->max_row_sum), "interp_max_elements",
                     a->interp_max_elements, "interp_truncation_factor",
                     jnum(a->interp_truncation_factor), "aggressive_levels", a->aggressive_levels,
                     "aggressive_interpolator",
                     ks_name_of(ks_amg_interp_names, a->aggressive_interpolator),
                     "smoother", "solver", ks_name_of(ks_amg_smoother_names, a->smoother.solver), "relaxation_factor",
                     jnum(a->smoother.relaxation_factor), "chebyshev_degree",
                     a->smoother.chebyshev_degree, "chebyshev_lower",
                     jnum(a->smoother.chebyshev_lower), "presweeps", a->presweeps, "postsweeps",
                     a->postsweeps, "cycle", ks_name_of(ks_amg_cycle_names, a->cycle), "max_levels", a->max_levels,
                     "min_coarse_rows", a->min_coarse_rows, "coarse_max_rows", a->coarse_max_rows,
                     "coarse_solver", ks_name_of(ks_amg_coarse_solver_names, a->coarse_solver), "seed", (json_int_t)a->seed,
                     "spmv_format", a->level_format, "hierarchy_precision",
                     ks_name_of(ks_amg_precision_names, a->hierarchy_precision), "hmis_block_rows", a->hmis_block_rows);
}

/* A run's hierarchy: sizes per level, complexities, setup time per phase. */
static json_t *amg_setup_json(const ks_run_setup *su)
{
    json_t *rows = json_array(), *nnz = json_array(), *phases = json_object();
    for (int l = 0; rows && nnz && l < su->amg_levels; l++) {
        json_array_append_new(rows, json_integer(su->level_rows[l]));
        json_array_append_new(nnz, json_integer((json_int_t)su->level_nnz[l]));
    }
    for (int k = 0; phases && k < su->nphases; k++)
        json_object_set_new(phases, su->phase_name[k], jnum(su->phase_seconds[k]));
    return json_pack("{s:i, s:o, s:o, s:o, s:o, s:o}", "levels", su->amg_levels,
                     "operator_complexity", jnum(su->operator_complexity), "grid_complexity",
                     jnum(su->grid_complexity), "level_rows", rows ? rows : json_null(),
                     "level_nnz", nnz ? nnz : json_null(), "setup_phase_seconds",
                     phases ? phases : json_null());
}

ks_error ks_report_write_json(const char *path, const ks_problem_info *pi,
                              const ks_solver_params *sp, const ks_run_result *runs, int nruns)
{
    return ks_report_write_json_setup(path, pi, sp, runs, NULL, nruns);
}

ks_error ks_report_write_json_setup(const char *path, const ks_problem_info *pi,
                                    const ks_solver_params *sp, const ks_run_result *runs,
                                    const ks_run_setup *setups, int nruns)
{
    json_t *jruns = json_array();
    for (int i = 0; jruns && i < nruns; i++) {
        json_t *r = run_json(&runs[i]);
        if (r)
            json_object_set_new(r, "spmv_format_reason", json_string(runs[i].format_reason));
        const ks_run_setup *su = setups ? &setups[i] : NULL;
        if (r && su && su->text && su->text[0])
            json_object_set_new(r, "setup_summary", json_string(su->text));
        if (r && su && su->amg_levels > 0)
            json_object_set_new(r, "amg", amg_setup_json(su));
        if (r && runs[i].ncols > 0)
            json_object_set_new(r, "columns", columns_json(&runs[i]));
        const ks_dist_summary *d = &runs[i].dist;
        if (r && d->ranks > 0)
            json_object_set_new(
                r, "mpi",
                json_pack("{s:i, s:I, s:I, s:I, s:I, s:i, s:o, s:I, s:o, s:I}", "ranks", d->ranks,
                          "rows_min", (json_int_t)d->rows_min, "rows_max",
                          (json_int_t)d->rows_max, "ghosts_min", (json_int_t)d->ghosts_min,
                          "ghosts_max", (json_int_t)d->ghosts_max, "neighbours_max",
                          d->neighbours_max, "halo_seconds", jnum(d->halo_seconds),
                          "halo_exchanges", (json_int_t)d->halo_exchanges, "reduce_seconds",
                          jnum(d->reduce_seconds), "reductions", (json_int_t)d->reductions));
#ifdef KS_HAVE_MPI
        if (r && d->ranks > 0 && d->gpus)
            json_object_set_new(json_object_get(r, "mpi"), "gpus", gpus_json(d));
#endif
        json_array_append_new(jruns, r);
    }
    json_t *root = json_pack(
        "{s:s, s:{s:s, s:s, s:I, s:I, s:I, s:I, s:o}, s:{s:s, s:s, s:o, s:i, s:o, s:s, s:s}, "
        "s:o}",
        "ksolve_version", KS_VERSION_STRING, "problem", "source", pi->source, "rhs",
        pi->rhs_source, "rows", (json_int_t)pi->nrows, "cols", (json_int_t)pi->ncols, "nnz",
        (json_int_t)pi->nnz, "duplicates_summed", (json_int_t)pi->duplicates_summed,
        "load_seconds", jnum(pi->load_seconds), "solver", "solver", sp->solver,
        "preconditioner", sp->pc.solver, "relaxation_factor", jnum(sp->pc.relaxation_factor),
        "max_iters", sp->max_iters, "tolerance", jnum(sp->tolerance), "convergence",
        ks_name_of(ks_conv_names, sp->convergence), "norm", ks_name_of(ks_norm_names, sp->norm), "runs",
        jruns ? jruns : json_null());
    if (!root)
        return ks_seterr(KS_ERR_MEMORY, "out of memory building the JSON statistics");
    json_object_set_new(json_object_get(root, "problem"), "x0",
                        json_string(pi->x0_source[0] ? pi->x0_source : "x0 = 0"));
    json_object_set_new(json_object_get(root, "problem"), "nrhs",
                        json_integer(pi->nrhs > 0 ? pi->nrhs : 1));
    if (strcmp(sp->pc.solver, "AMG") == 0)
        json_object_set_new(json_object_get(root, "solver"), "amg", amg_params_json(&sp->pc.amg));
    if (ks_solver_params_is_gmres(sp))
        json_object_set_new(json_object_get(root, "solver"), "gmres_restart",
                            json_integer(ks_solver_params_gmres_m(sp)));
    int cpu = -1, gpu = -1;
    for (int i = 0; i < nruns; i++) {
        if (strcmp(runs[i].backend, "cpu") == 0)
            cpu = i;
        else if (strcmp(runs[i].backend, "cuda") == 0)
            gpu = i;
    }
    if (cpu >= 0 && gpu >= 0) {
        const ks_run_result *c = &runs[cpu], *g = &runs[gpu];
        json_object_set_new(
            root, "speedup_cuda_over_cpu",
            json_pack("{s:o, s:o, s:o}", "setup", jnum(setup_total(c) / setup_total(g)), "solve",
                      jnum(c->stats.solve_seconds / g->stats.solve_seconds), "total",
                      jnum(c->total_seconds / g->total_seconds)));
    }
    /* "-" is standard output, as in most tools. */
    int rc;
    if (strcmp(path, "-") == 0) {
        rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        if (rc == 0 && (fputc('\n', stdout) == EOF || fflush(stdout) != 0))
            rc = -1;
    } else {
        rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    }
    json_decref(root);
    if (rc != 0)
        return ks_seterr(KS_ERR_IO, "cannot write JSON statistics to '%s'", path);
    return KS_OK;
}

void ks_problem_describe_generated(const ks_gen_params *g, char *src, size_t len)
{
    int is2d = g->kind == KS_GEN_POISSON2D_5 || g->kind == KS_GEN_POISSON2D_9;
    int n = is2d ? snprintf(src, len, "%s %dx%d (generated)", ks_gen_kind_name(g->kind),
                            (int)g->nx, (int)g->ny)
                 : snprintf(src, len, "%s %dx%dx%d (generated)", ks_gen_kind_name(g->kind),
                            (int)g->nx, (int)g->ny, (int)g->nz);
    size_t used = n > 0 ? (size_t)n : 0;
    /* Coefficients and velocity only where the generator uses them. */
    int uses_c = g->kind == KS_GEN_POISSON2D_5 || g->kind == KS_GEN_POISSON3D_7 ||
                 g->kind == KS_GEN_ANISO3D || g->kind == KS_GEN_CONVDIFF3D;
    if (uses_c && used < len &&
        (g->cx != 1.0 || g->cy != 1.0 || (!is2d && g->cz != 1.0) || g->kind == KS_GEN_ANISO3D)) {
        n = is2d ? snprintf(src + used, len - used, ", coefficients [%g, %g]", g->cx, g->cy)
                 : snprintf(src + used, len - used, ", coefficients [%g, %g, %g]", g->cx, g->cy,
                            g->cz);
        used += n > 0 ? (size_t)n : 0;
    }
    if (g->kind == KS_GEN_CONVDIFF3D && used < len)
        snprintf(src + used, len - used, ", velocity [%g, %g, %g]", g->vx, g->vy, g->vz);
}
