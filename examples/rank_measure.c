/* A rank's copy bandwidth with all ranks copying at once, and its peak
 * memory: what a weak-scaling run needs to tell a slower iteration caused
 * by the shared memory system from one caused by the method. */
#include "rank_measure.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

ks_error rank_copy_bandwidth(const ks_comm *c, ks_backend *be, size_t bytes, int reps,
                             rank_bandwidth *bw)
{
    const ks_int n = (ks_int)(bytes / sizeof(double));
    ks_vec *src = NULL, *dst = NULL;
    ks_error e = ks_vec_create(be, n, &src);
    if (e == KS_OK)
        e = ks_vec_create(be, n, &dst);
    /* First touch by the copying threads, untimed: pages land where they
     * are used and page faults stay out of the timings. */
    if (e == KS_OK)
        e = ks_vec_fill(src, 1.0);
    if (e == KS_OK)
        e = ks_vec_fill(dst, 0.0);
    e = ks_comm_agree(c, e);
    double best = INFINITY, slowest = INFINITY;
    for (int r = 0; r < reps && e == KS_OK; r++) {
        /* agree is an all-reduce: no rank leaves it before all entered,
         * so the ranks copy at the same time, sharing the memory system. */
        e = ks_comm_agree(c, KS_OK);
        if (e != KS_OK)
            break;
        double t = ks_wtime();
        e = ks_vec_copy(src, dst);
        t = ks_wtime() - t;
        double tmax = t;
        e = ks_comm_agree(c, e);
        if (e == KS_OK)
            e = ks_comm_max(c, &tmax, 1);
        best = fmin(best, t);
        slowest = fmin(slowest, tmax);
    }
    if (e == KS_OK) {
        const double moved = 2.0 * (double)n * sizeof(double) * 1e-9;
        double mean = moved / best;
        e = ks_comm_sum(c, &mean, 1);
        bw->slowest_gbs = moved / slowest;
        bw->mean_gbs = mean / ks_comm_size(c);
    }
    ks_vec_destroy(&dst);
    ks_vec_destroy(&src);
    return e;
}

ks_error rank_peak_memory(const ks_comm *c, rank_memory *m)
{
    struct rusage ru;
    const int failed = getrusage(RUSAGE_SELF, &ru) != 0;
    if (failed)
        fprintf(stderr, "rank %d: getrusage: %s\n", ks_comm_rank(c), strerror(errno));
    ks_error e = ks_comm_agree(c, failed ? KS_ERR_IO : KS_OK);
    const double mib = failed ? 0.0 : (double)ru.ru_maxrss / 1024.0; /* kB on Linux */
    double v[2] = {mib, -mib}, sum = mib;
    if (e == KS_OK)
        e = ks_comm_max(c, v, 2);
    if (e == KS_OK)
        e = ks_comm_sum(c, &sum, 1);
    if (e == KS_OK)
        *m = (rank_memory){.max_mib = v[0], .min_mib = -v[1], .sum_mib = sum};
    return e;
}
