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

/* Checks on one run without mpirun (test_cli_options.c, test_cli_many.c):
 * its exit status, and text its standard output or error must hold. */
#define KS_CLI_EXPECT_RC(args, want)                                                           \
    do {                                                                                       \
        int rc_ = ks_cli_run(0, args);                                                         \
        ck_assert_msg(rc_ == (want), "ksolve %s: exit %d, expected %d\nstdout:\n%s\nstderr:\n%s", \
                      args, rc_, want, ks_cli_out, ks_cli_err);                                \
    } while (0)
#define KS_CLI_EXPECT_OUT(sub) \
    ck_assert_msg(strstr(ks_cli_out, sub), "stdout lacks '%s':\n%s", sub, ks_cli_out)
#define KS_CLI_EXPECT_ERR(sub) \
    ck_assert_msg(strstr(ks_cli_err, sub), "stderr lacks '%s':\n%s", sub, ks_cli_err)

/* The file's text into buf (empty when it cannot be read). */
void ks_cli_slurp(const char *path, char *buf, size_t len);

#endif
