/* Running the ksolve tool (KSOLVE_EXE) as a child process from a test,
 * alone or under mpirun (KS_MPIRUN), with its standard output and error
 * captured. Shared by the tool's test programs. */
#ifndef KS_TEST_CLI_RUN_H
#define KS_TEST_CLI_RUN_H

#include <stddef.h>

#define KS_CLI_OUT_MAX ((size_t)1 << 16)
#define KS_CLI_ERR_MAX ((size_t)1 << 14)

/* What the last run wrote (NUL-terminated, truncated at the sizes above). */
extern char ks_cli_out[KS_CLI_OUT_MAX];
extern char ks_cli_err[KS_CLI_ERR_MAX];

/* "ksolve ARGS" (ARGS shell-quoted already) on np MPI ranks (np 0: without
 * mpirun); returns the exit status, or -1 when it did not exit normally. */
int ks_cli_run(int np, const char *args);

/* The file's text into buf (empty when it cannot be read). */
void ks_cli_slurp(const char *path, char *buf, size_t len);

#endif
