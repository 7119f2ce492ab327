/* Private to the ksolve tool: what a run's setup built (the text of
 * ks_solver_print_setup and, for AMG, the hierarchy's numbers), for the
 * report and --json. Kept beside cli.h's ks_run_result, which it extends
 * (one entry per run, same order). Not installed. */
#ifndef KS_CLI_SETUP_H
#define KS_CLI_SETUP_H

#include "cli.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS_RUN_SETUP_PHASES 16

typedef struct ks_run_setup {
    char *text;          /* ks_solver_print_setup output (malloc'ed); NULL or "": nothing */
    int amg_levels;      /* 0 when the solver has no AMG hierarchy */
    double grid_complexity, operator_complexity;
    ks_int *level_rows;  /* amg_levels entries (malloc'ed) */
    int64_t *level_nnz;
    int nphases;         /* setup time per phase, names static */
    const char *phase_name[KS_RUN_SETUP_PHASES];
    double phase_seconds[KS_RUN_SETUP_PHASES];
} ks_run_setup;

/* Fill su from a solver after a successful ks_solver_setup. */
ks_error ks_run_setup_capture(const ks_solver *s, ks_run_setup *su);
void ks_run_setup_free(ks_run_setup *su);
/* 1 when two runs built the same AMG hierarchy (levels, rows, nonzeros). */
int ks_run_setup_same_hierarchy(const ks_run_setup *a, const ks_run_setup *b);

/* ks_report_print / ks_report_write_json with the setup of each run
 * (setups may be NULL: as without). */
void ks_report_print_setup(FILE *out, const ks_problem_info *pi, const ks_solver_params *sp,
                           const ks_run_result *runs, const ks_run_setup *setups, int nruns);
ks_error ks_report_write_json_setup(const char *path, const ks_problem_info *pi,
                                    const ks_solver_params *sp, const ks_run_result *runs,
                                    const ks_run_setup *setups, int nruns);

#ifdef __cplusplus
}
#endif
#endif
