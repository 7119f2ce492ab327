/* The entry exchange the distributed setup steps share: counts to every
 * rank, then the entries themselves, each step agreed over the ranks. */
#include "mpi_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

ks_error ks_exchange_bytes(const ks_comm *c, const void *out, const int *scount,
                           const int *sdispl, int *rcount, int *rdispl, void **in,
                           int64_t *nbytes, const char *what)
{
    const int p = c->size;
    const MPI_Comm comm = ks_comm_mpi_of(c);
    char call[128];
    *in = NULL;
    *nbytes = 0;
    snprintf(call, sizeof call, "MPI_Alltoall (%s counts)", what);
    ks_error e = ks_comm_agree(c, ks_mpi_check(MPI_Alltoall((void *)scount, 1, MPI_INT, rcount,
                                                            1, MPI_INT, comm), call));
    if (e != KS_OK)
        return e;
    int64_t bytes = 0;
    for (int r = 0; r < p; r++) {
        rdispl[r] = (int)bytes;
        bytes += rcount[r];
        if (bytes > INT32_MAX)
            e = ks_seterr(KS_ERR_SIZE, "%s: more than 2^31 bytes to receive", what);
    }
    if (e == KS_OK) {
        *in = ks_malloc((size_t)bytes + 1, what);
        e = *in ? KS_OK : KS_ERR_MEMORY;
    }
    e = ks_comm_agree(c, e);
    if (e == KS_OK) {
        snprintf(call, sizeof call, "MPI_Alltoallv (%s)", what);
        e = ks_comm_agree(c, ks_mpi_check(MPI_Alltoallv((void *)out, (int *)scount,
                                                        (int *)sdispl, MPI_BYTE, *in, rcount,
                                                        rdispl, MPI_BYTE, comm), call));
    }
    if (e != KS_OK) {
        free(*in);
        *in = NULL;
        return e;
    }
    *nbytes = bytes;
    return KS_OK;
}
