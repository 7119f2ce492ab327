/* What the tool sets up around a solve, process-wide: the OpenMP thread
 * count (--threads, the `threads` key; under mpirun without either and
 * without OMP_NUM_THREADS, the rank's share of its cores), the GPU (`gpu_map`), --quiet, where the library's lines
 * go with --json -, the AMG setup progress a terminal gets, and the memory
 * its vectors will take (checked before the matrix is read). */
#include "cli.h"
#include "../vec/gpu.h"
#ifdef KS_HAVE_MPI
#include "ksolve_mpi.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

int ks_cli_threads(struct ks_comm *comm, int threads)
{
#if defined(KS_HAVE_MPI) && defined(_OPENMP)
    /* Every rank asks (collective); a rank takes the share only where
     * neither the key nor OMP_NUM_THREADS gave a count. */
    int share = 0;
    if (comm && ks_comm_share_threads(comm, &share) != KS_OK) {
        share = 0; /* OpenMP's own count, as without mpirun */
        ks_clear_error();
    }
    const char *env = getenv("OMP_NUM_THREADS");
    if (threads == 0 && !(env && env[0]) && share > 0)
        return share;
#else
    (void)comm;
#endif
    return threads;
}

ks_error ks_cli_apply_threads(int threads)
{
#ifdef _OPENMP
    if (threads > 0) /* before any backend is created: its description counts them */
        omp_set_num_threads(threads);
    return KS_OK;
#else
    if (threads > 1)
        return ks_seterr(KS_ERR_UNSUPPORTED,
                         "threads: %d asked, but this ksolve was built without OpenMP "
                         "(one thread)", threads);
    return KS_OK;
#endif
}

int ks_cli_uses_cuda(const ks_problem_params *pp) { return strstr(pp->backend, "cuda") != NULL; }

const char *ks_cli_gpu_map(const ks_problem_params *pp, const char **what)
{
    if (pp->gpu_map[0]) {
        *what = "gpu_map";
        return pp->gpu_map;
    }
    return ks_gpu_map_resolve(NULL, what);
}

ks_error ks_cli_apply_gpu_map(const ks_problem_params *pp)
{
    /* No GPU: the cuda backend says so itself (and what still works). */
    const int ngpus = ks_gpu_count();
    if (!ks_cli_uses_cuda(pp) || ngpus == 0)
        return KS_OK;
    const char *what, *map = ks_cli_gpu_map(pp, &what);
    int dev = -1;
    KS_TRY(ks_gpu_map_pick(map, what, 0, ngpus, &dev)); /* one process: local rank 0 */
    return dev >= 0 ? ks_gpu_use(dev) : KS_OK;
}

void ks_cli_apply_quiet(int quiet)
{
    /* The monitor, the summary and progress are information-level lines of
     * the library's log; errors and warnings stay (on stderr). */
    if (quiet)
        ks_set_log_level(KS_LOG_WARN);
}

/* The library's lines, all on stderr. */
static void to_stderr(const char *msg, int len, void *ctx)
{
    (void)ctx;
    fwrite(msg, 1, (size_t)len, stderr);
}

void ks_cli_route_output(int json_stdout)
{
    /* --json -: standard output carries the JSON alone, so the library's
     * information lines (monitor, summary) go where the report goes. */
    if (json_stdout)
        ks_set_print_callback(to_stderr, NULL);
}

const char *ks_cli_progress_key(const ks_solver_params *sp)
{
    if (strcmp(sp->solver, "AMG") == 0)
        return "solver.print_setup_progress";
    if (strcmp(sp->pc.solver, "AMG") == 0)
        return "solver.preconditioner.print_setup_progress";
    return NULL; /* no AMG setup, nothing to show */
}

int ks_cli_progress_auto(const ks_solver_params *sp, int quiet, int stderr_tty)
{
    return stderr_tty && !quiet && ks_cli_progress_key(sp) && !sp->pc.amg.print_setup_progress;
}

ks_error ks_cli_progress_enable(ks_config *cfg, int quiet)
{
    const ks_solver_params *sp = ks_config_solver_params(cfg);
    if (!ks_cli_progress_auto(sp, quiet, isatty(STDERR_FILENO)))
        return KS_OK;
    return ks_config_set(cfg, ks_cli_progress_key(sp), "1");
}

uint64_t ks_cli_vector_row_bytes(const ks_problem_params *pp, int host_backends)
{
    /* On the host: b, the x that makes b = A x, the solution to write and
     * x0. On a host-memory backend: its b and x, and the fewest work
     * vectors a method has (2: AMG's r and z). A lower bound: a refusal
     * is certain to be right. */
    uint64_t vectors = 2 + (pp->solution_file[0] != 0) + (pp->x0_file[0] != 0);
    vectors += 4 * (uint64_t)host_backends;
    /* --nrhs k: each of them k columns wide (a file's count is known only
     * when it is read, and checked there) */
    return vectors * (uint64_t)(pp->nrhs > 1 ? pp->nrhs : 1) * sizeof(double);
}
