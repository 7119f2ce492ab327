/* A rank's fair share of the cores it may run on. OpenMP takes every CPU
 * of the process's affinity mask by default; under mpirun the ranks of a
 * node often share one mask (--bind-to none, or bound to one package each
 * when there are more than two), and then each rank starts a thread on
 * every core: four ranks on a 64-core host, 256 threads. Oversubscribed
 * threads cost the host steps of a setup dearly (four ranks with 16
 * threads each, 64 on 64 cores beside CUDA's own, set up AMG 1.8x slower
 * than with 8: docs/performance.md, 2026-11-29). Ranks whose masks are
 * equal share that mask's CPUs; a rank bound alone gets its own. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "mpi_internal.h"

#include <string.h>
#if defined(__linux__)
#include <sched.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

/* This process's CPU mask as bytes (zeros where it cannot be read) and
 * how many CPUs it holds. */
static int my_cpus(unsigned char *mask, size_t len)
{
    memset(mask, 0, len);
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        memcpy(mask, &set, sizeof set < len ? sizeof set : len);
        const int n = CPU_COUNT(&set);
        if (n > 0)
            return n;
    }
#endif
#ifdef _OPENMP
    return omp_get_num_procs();
#else
    return 1;
#endif
}

/* A cpu_set_t: 1024 CPUs. On a host with more, sched_getaffinity refuses
 * it and every mask reads as zeros: the ranks of a node then share all
 * the CPUs OpenMP counts. */
#define MASK_BYTES 128

ks_error ks_comm_share_threads(const ks_comm *c, int *threads)
{
    if (!c || !threads)
        return ks_seterr(KS_ERR_ARG, "ks_comm_share_threads: NULL %s", !c ? "comm" : "output");
    *threads = 1;
    unsigned char mine[MASK_BYTES];
    const int cpus = my_cpus(mine, sizeof mine);
    MPI_Comm node = MPI_COMM_NULL;
    ks_error e = ks_mpi_check(MPI_Comm_split_type(ks_comm_mpi_of(c), MPI_COMM_TYPE_SHARED,
                                                  c->rank, MPI_INFO_NULL, &node),
                              "MPI_Comm_split_type (the ranks of this node)");
    int n = 1;
    if (e == KS_OK)
        e = ks_mpi_check(MPI_Comm_size(node, &n), "MPI_Comm_size (node)");
    unsigned char *all = e == KS_OK ? ks_malloc((size_t)n * MASK_BYTES, "the ranks' CPU masks")
                                    : NULL;
    if (e == KS_OK && !all)
        e = KS_ERR_MEMORY;
    /* agreed before the node's gather: no rank waits there for one that left */
    e = ks_comm_agree(c, e);
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_mpi_check(MPI_Allgather(mine, MASK_BYTES, MPI_BYTE, all,
                                                        MASK_BYTES, MPI_BYTE, node),
                                          "MPI_Allgather (the ranks' CPU masks)"));
    int same = 0;
    for (int q = 0; e == KS_OK && q < n; q++)
        same += memcmp(all + (size_t)q * MASK_BYTES, mine, MASK_BYTES) == 0;
    free(all);
    if (node != MPI_COMM_NULL)
        MPI_Comm_free(&node);
    KS_TRY(e);
    *threads = same > 0 && cpus / same > 1 ? cpus / same : 1;
    return KS_OK;
}
