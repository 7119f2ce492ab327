/* The communicator seam: what distributed vectors need from the ranks they
 * are spread over. mpi/comm.c fills it from an MPI communicator; vec/ and
 * spmv/ never include mpi.h, and a build without MPI simply never has a
 * distributed vector (ks_vec.comm is NULL). Not installed. */
#ifndef KS_COMM_H
#define KS_COMM_H

#include "../core/ks_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks_comm ks_comm;

/* Most values one split-phase sum carries (a pipelined method's dot group). */
#define KS_COMM_SPLIT_MAX 16

/* Every operation is collective: each rank of the communicator calls it,
 * in the same order, with the same k. */
typedef struct ks_comm_ops {
    /* v[0..k) = the sum over the ranks of each rank's v[0..k), added in
     * rank order: the same bits on every rank and in every run with the
     * same rank count (MPI_Allreduce does not promise an order). */
    ks_error (*sum)(const ks_comm *c, double *v, int k);
    /* v[0..k) = the maximum over the ranks (NaN when any rank has NaN). */
    ks_error (*max)(const ks_comm *c, double *v, int k);
    /* The outcome of a step that can fail on some ranks only: e on the
     * ranks where it failed; on the others the failure of the lowest
     * failing rank (its code, and its message prefixed with its rank), so
     * every rank returns an error and none waits alone in a later
     * collective. KS_OK when every rank succeeded. */
    ks_error (*agree)(const ks_comm *c, ks_error e);
    /* Optional (NULL: callers use sum): the same sum in two halves, so that
     * work runs while the ranks' values travel. sum_begin starts combining
     * v[0..k) (1 <= k <= KS_COMM_SPLIT_MAX; v is copied) and returns at once;
     * sum_end waits and writes into v the bits sum would give. One split sum
     * at a time per comm; both halves are collective, called by every rank
     * in the same order as its other collectives on the comm. */
    ks_error (*sum_begin)(const ks_comm *c, const double *v, int k);
    ks_error (*sum_end)(const ks_comm *c, double *v, int k);
} ks_comm_ops;

struct ks_comm {
    const ks_comm_ops *ops;
    int rank, size;
};

#ifdef __cplusplus
}
#endif
#endif
