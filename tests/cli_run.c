/* The ksolve tool as a child process (tests/cli_run.h). */
#include "cli_run.h"
#include "ks_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

char ks_cli_out[KS_CLI_OUT_MAX];
char ks_cli_err[KS_CLI_ERR_MAX];

void ks_cli_slurp(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

int ks_cli_run(int np, const char *args)
{
    const char *exe = getenv("KSOLVE_EXE"), *mpirun = getenv("KS_MPIRUN");
    ck_assert_msg(exe != NULL, "KSOLVE_EXE is not set");
    ck_assert_msg(np == 0 || mpirun != NULL, "KS_MPIRUN is not set");
    char outp[1100], errp[1100], launcher[1200] = "", cmd[8192];
    snprintf(outp, sizeof outp, "%s", ks_test_tmpfile(".out"));
    snprintf(errp, sizeof errp, "%s", ks_test_tmpfile(".err"));
    if (np > 0)
        snprintf(launcher, sizeof launcher, "'%s' --oversubscribe -np %d ", mpirun, np);
    snprintf(cmd, sizeof cmd, "%s'%s' %s >'%s' 2>'%s'", launcher, exe, args, outp, errp);
    int st = system(cmd);
    ks_cli_slurp(outp, ks_cli_out, sizeof ks_cli_out);
    ks_cli_slurp(errp, ks_cli_err, sizeof ks_cli_err);
    remove(outp);
    remove(errp);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
