/* HMIS over ranks as hypre runs it with MPI: the Ruge-Stueben first pass
 * inside each rank, then PMIS across the ranks from the states it left.
 *
 * First pass: amg/cpu/hmis.c's RS pass (ks_amg_rs_first_pass) on the
 * rank's local block of S, all its points, their connections to other
 * ranks unseen. Then its boundary points (a strong connection to another
 * rank's point in either direction: a ghost entry in S_i, or another rank's
 * point depends on i) go back to undecided, as hypre resets the points
 * with off-processor connections; so do F points left without a C
 * neighbour, and undecided points next to a kept C point become F. Which
 * points depend on i from other ranks only those ranks know (their ghost
 * entries): one reverse halo exchange over the matrix's plan (ghost flags
 * sent back to their owners) tells each rank.
 *
 * Second stage: distributed PMIS (ks_dist_pmis_from) from those states,
 * with the serial measures and fix-up. On one rank no point is a boundary
 * point, so the result is ks_amg_hmis's splitting exactly; on several it
 * depends on the partition (as hypre's does), never on the run: every
 * step is deterministic.
 *
 * Running RS over the boundary points too and resetting them after (not
 * leaving them out of the pass) is what hypre does and measured better:
 * 7-point 16^3 on 4 ranks, PCG + AMG(JACOBI_L1), 14 iterations against 15
 * (one process: 12). Very thin blocks (3 planes a rank) lose more: most
 * points are then PMIS's. */
#include "amg_dist.h"

#include <string.h>

/* Not the other exchanges' tags. */
#define HMIS_REVERSE_TAG 0x6b79

/* own[i] |= the flags the other ranks hold for point i as their ghost:
 * the plan h run backwards (each ghost slice goes back to its owner, who
 * ORs what arrives into the rows it sends out). Collective over the
 * neighbours; agreed by the caller. */
static ks_error reverse_or(const ks_comm *c, const ks_halo *h, const unsigned char *ghost,
                           unsigned char *own)
{
    const ks_int nin = h->nsend ? h->send_start[h->nsend] : 0;
    const int nreq = h->nrecv + h->nsend;
    unsigned char *buf = ks_malloc((size_t)nin + 1, "HMIS boundary flags in");
    MPI_Request *req = ks_malloc(((size_t)nreq + 1) * sizeof *req, "HMIS boundary requests");
    ks_error e = ks_comm_agree(c, buf && req ? KS_OK : KS_ERR_MEMORY);
    for (int r = 0; r < nreq && e == KS_OK; r++)
        req[r] = MPI_REQUEST_NULL;
    for (int r = 0; r < h->nsend && e == KS_OK; r++) {
        const ks_int s = h->send_start[r];
        e = ks_mpi_check(MPI_Irecv(buf + s, (int)(h->send_start[r + 1] - s), MPI_UNSIGNED_CHAR,
                                   h->send_rank[r], HMIS_REVERSE_TAG, h->comm, &req[r]),
                         "MPI_Irecv (HMIS boundary flags)");
    }
    for (int r = 0; r < h->nrecv && e == KS_OK; r++) {
        const ks_int s = h->recv_start[r];
        e = ks_mpi_check(MPI_Isend((void *)(ghost + s), (int)(h->recv_start[r + 1] - s),
                                   MPI_UNSIGNED_CHAR, h->recv_rank[r], HMIS_REVERSE_TAG,
                                   h->comm, &req[h->nsend + r]),
                         "MPI_Isend (HMIS boundary flags)");
    }
    if (req && nreq > 0) {
        const ks_error w = ks_mpi_check(MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE),
                                        "MPI_Waitall (HMIS boundary flags)");
        if (e == KS_OK)
            e = w;
    }
    for (ks_int k = 0; k < nin && e == KS_OK; k++)
        own[h->send_idx[k]] |= buf[k];
    free(buf);
    free(req);
    return e;
}

/* bnd[i] = 1 for this rank's boundary points (see the file comment). */
static ks_error boundary(const ks_dist_strength *S, unsigned char *bnd)
{
    const ks_int n = S->nloc;
    unsigned char *gdep = ks_calloc((size_t)S->nghost + 1, 1, "HMIS ghost dependencies");
    ks_error e = ks_comm_agree(S->comm, gdep ? KS_OK : KS_ERR_MEMORY);
    if (e != KS_OK) {
        free(gdep);
        return e;
    }
    for (ks_int i = 0; i < n; i++) {
        bnd[i] = S->grp[i] < S->grp[i + 1];
        for (ks_int k = S->grp[i]; k < S->grp[i + 1]; k++)
            gdep[S->gci[k]] = 1;
    }
    e = ks_comm_agree(S->comm, reverse_or(S->comm, S->halo, gdep, bnd));
    free(gdep);
    return e;
}

ks_error ks_dist_hmis(const ks_dist_strength *S, unsigned long long seed, int *cf, ks_int *nc)
{
    static const char who[] = "distributed HMIS";
    ks_error e = ks_dist_split_args(S, cf, nc, who);
    if (e != KS_OK)
        return e;
    const ks_int n = S->nloc;
    unsigned char *bnd = ks_malloc((size_t)n + 1, "HMIS boundary flags");
    ks_strength ST = {0};
    e = ks_comm_agree(S->comm, bnd ? KS_OK : KS_ERR_MEMORY);
    if (e == KS_OK)
        e = boundary(S, bnd);
    if (e == KS_OK)
        e = ks_comm_agree(S->comm, ks_strength_transpose_unchecked(&S->local, &ST));
    if (e == KS_OK) {
        /* isolated (no strong connection anywhere): F, outside both stages;
         * a boundary point is never isolated */
        for (ks_int i = 0; i < n; i++)
            cf[i] = !bnd[i] && S->local.rowptr[i] == S->local.rowptr[i + 1] &&
                            ST.rowptr[i] == ST.rowptr[i + 1]
                        ? KS_FPT : KS_UNDECIDED;
        e = ks_comm_agree(S->comm, ks_amg_rs_first_pass(&S->local, &ST, bnd, cf));
    }
    ks_strength_free(&ST);
    free(bnd);
    if (e == KS_OK)
        e = ks_dist_pmis_from(S, seed, cf, nc);
    return e == KS_OK ? KS_OK : ks_adderr(e, "%s", who);
}
