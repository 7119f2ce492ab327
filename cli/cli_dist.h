/* The ksolve tool under mpirun (cli/dist_run.c, built with MPI): more than
 * one rank, each generating and solving its own rows. Not installed. */
#ifndef KS_CLI_DIST_H
#define KS_CLI_DIST_H

#include "cli.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ks_comm;

/* 1 when a launcher started this process as one of several ranks. */
int ks_cli_dist_launched(void);
/* MPI_Init and a ks_comm over MPI_COMM_WORLD; the ranks but 0 write their
 * stdout and stderr to /dev/null (rank 0 prints the one report, and the
 * library's agreement brings every rank's failure there). */
ks_error ks_cli_dist_init(int *argc, char ***argv, struct ks_comm **comm);
/* The comm goes, then MPI_Finalize (when MPI_Init ran). */
void ks_cli_dist_finish(struct ks_comm *comm);
/* The configured problem solved over the ranks (comm takes mpi.halo's
 * transport); *converged as the report says; quiet: no report or monitor
 * heading. Errors are the same on every rank. */
ks_error ks_cli_dist_solve(struct ks_comm *comm, const ks_config *cfg,
                           const char *json_file, int quiet, int *converged);

#ifdef __cplusplus
}
#endif
#endif
