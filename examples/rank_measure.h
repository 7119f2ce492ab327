/* What each rank of a weak-scaling run measures of the host it shares with
 * the others (rank_measure.c): its copy bandwidth while every rank copies
 * at once, and its peak memory. Used by mpi_weak_scaling.c. */
#ifndef KS_EXAMPLE_RANK_MEASURE_H
#define KS_EXAMPLE_RANK_MEASURE_H

#include <ksolve_mpi.h>

typedef struct rank_bandwidth {
    double slowest_gbs; /* the slowest rank's GB/s in the best repetition */
    double mean_gbs;    /* the mean over the ranks of each rank's best GB/s */
} rank_bandwidth;

/* Collective. Every rank copies its own `bytes` (read + write counted, as
 * STREAM's Copy does) with ks_vec_copy on be, the kernel and threads its
 * solve uses, `reps` times, all ranks starting together each time. */
ks_error rank_copy_bandwidth(const ks_comm *c, ks_backend *be, size_t bytes, int reps,
                             rank_bandwidth *bw);

typedef struct rank_memory {
    double max_mib, min_mib, sum_mib; /* over the ranks, of each one's peak */
} rank_memory;

/* Collective. Each rank's peak resident memory so far (getrusage's
 * ru_maxrss): the largest, the smallest and their sum over the ranks. */
ks_error rank_peak_memory(const ks_comm *c, rank_memory *m);

#endif
