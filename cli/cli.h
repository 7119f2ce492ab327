/* Private header of the ksolve command-line tool: argument parsing
 * (cli_args.c) and the report (report.c). Not installed. */
#ifndef KS_CLI_H
#define KS_CLI_H

#include "problem.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ arguments */
#define KS_CLI_MAX_SETS 64

typedef struct ks_cli_args {
    const char *config_file;   /* positional CONFIG.json or NULL */
    int nsets;                 /* config overrides, in command-line order */
    char *set_key[KS_CLI_MAX_SETS];   /* owned */
    char *set_value[KS_CLI_MAX_SETS]; /* owned; JSON text or plain text */
    const char *json_file;     /* --json FILE or NULL */
    int help, version, print_config;
    int quiet;                 /* --quiet: no report or monitor output */
} ks_cli_args;

/* Parse argv. Returns KS_OK, or KS_ERR_ARG with a message for
 * ks_last_error(). Release with ks_cli_args_free even on error. */
ks_error ks_cli_parse(int argc, char **argv, ks_cli_args *a);
void ks_cli_args_free(ks_cli_args *a);
void ks_cli_usage(FILE *out);

/* ---------------------------------------------- settings (run_settings.c) */
/* OpenMP threads for the whole process (0: OpenMP's default, which
 * OMP_NUM_THREADS sets); call before creating a backend. Without OpenMP
 * more than one is an error. */
ks_error ks_cli_apply_threads(int threads);
/* The thread count to apply: threads (the key) when set; under mpirun
 * (comm, collective on it) with neither the key nor OMP_NUM_THREADS, the
 * rank's share of its cores (ks_comm_share_threads); else 0 (OpenMP's). */
struct ks_comm;
int ks_cli_threads(struct ks_comm *comm, int threads);
/* 1 when the backend list has cuda. */
int ks_cli_uses_cuda(const ks_problem_params *pp);
/* The GPU map in force: the gpu_map key when given (*what "gpu_map"),
 * else KS_GPU_MAP, else "local" (ks_gpu_map_resolve). */
const char *ks_cli_gpu_map(const ks_problem_params *pp, const char **what);
/* One process with the cuda backend: makes the map's GPU for local rank 0
 * current (call before creating the backend); nothing without a GPU (the
 * backend then says why) or without cuda in the backend list. */
ks_error ks_cli_apply_gpu_map(const ks_problem_params *pp);
/* --quiet: the library's information lines (monitor, summary, progress)
 * are dropped; errors and warnings stay. */
void ks_cli_apply_quiet(int quiet);
/* With --json - (json_stdout) the library's lines go to stderr, as the
 * report does. */
void ks_cli_route_output(int json_stdout);
/* The key that turns on AMG setup progress for sp's solver, NULL when no
 * AMG hierarchy is set up. */
const char *ks_cli_progress_key(const ks_solver_params *sp);
/* 1 when the tool turns progress on by itself: an AMG setup, stderr a
 * terminal, no --quiet, and the config has not turned it on already. */
int ks_cli_progress_auto(const ks_solver_params *sp, int quiet, int stderr_tty);
/* ks_cli_progress_auto for this process's stderr, setting the key when so. */
ks_error ks_cli_progress_enable(ks_config *cfg, int quiet);
/* Bytes a row of the matrix the tool's and the solver's vectors take at
 * least (host_backends: runs on a backend whose memory is host memory). */
uint64_t ks_cli_vector_row_bytes(const ks_problem_params *pp, int host_backends);

/* --------------------------------------------------------------- report */
/* Everything known about one backend's run, for the report and --json. */
/* A run over MPI ranks: the layout, and the solve's communication (the
 * slowest rank's seconds, rank 0's counts: every rank makes as many). */
typedef struct ks_dist_summary {
    int ranks;
    int64_t rows_min, rows_max;
    int64_t ghosts_min, ghosts_max; /* halo values a rank receives per product */
    int neighbours_max;
    double halo_seconds, reduce_seconds;
    long long halo_exchanges, reductions;
    /* On the cuda backend: each rank's host and GPU, ranks entries in rank
     * order (owned; NULL on the cpu). */
    struct ks_rank_device *gpus;
    char halo_transport[16];        /* ks_matrix_halo_transport of A */
} ks_dist_summary;

typedef struct ks_run_result {
    char backend[16];
    char backend_desc[160];
    char format[KS_NAME_MAX];
    double format_setup_seconds;  /* ks_matrix_create: conversion + upload */
    double bytes_per_apply;
    char solver[KS_NAME_MAX];
    char precond[KS_NAME_MAX];
    ks_solve_stats stats;         /* history points into `history` below */
    double *history;              /* owned copy of the residual history */
    double total_seconds;         /* matrix + solver setup + solve */
    char format_reason[160];      /* ks_matrix_format_reason: "" when named */
    ks_dist_summary dist;         /* under mpirun; ranks = 0 otherwise */
    int ncols;                    /* > 0: k right-hand sides solved together, */
    ks_solve_stats *cols;         /* each column's statistics (owned; no history);
                                   * stats above then summarises them */
} ks_run_result;

/* What was solved: shared by every backend's run. */
typedef struct ks_problem_info {
    char source[KS_PATH_MAX + 64]; /* "file.mtx" or "poisson3d_7 64x64x64" */
    char rhs_source[KS_PATH_MAX + 64];
    char x0_source[KS_PATH_MAX + 64]; /* the --x0 file, or "" for x0 = 0 */
    int64_t duplicates_summed;
    ks_int nrows, ncols, nnz;
    int nrhs;                      /* right-hand sides solved together (1: one) */
    double load_seconds;           /* reading or generating A */
} ks_problem_info;

/* "poisson3d_7 64x64x64 (generated)", with the coefficients and velocity
 * where the generator uses them, into src. */
void ks_problem_describe_generated(const ks_gen_params *g, char *src, size_t len);

/* Human-readable report: one column per run (1 or 2), with the GPU/CPU
 * speedups when both a cpu and a cuda run are given. */
void ks_report_print(FILE *out, const ks_problem_info *pi, const ks_solver_params *sp,
                     const ks_run_result *runs, int nruns);
/* Stats as JSON (all fields + history) to path. */
ks_error ks_report_write_json(const char *path, const ks_problem_info *pi,
                              const ks_solver_params *sp, const ks_run_result *runs,
                              int nruns);

#ifdef __cplusplus
}
#endif
#endif
