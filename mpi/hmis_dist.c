/* HMIS over ranks: the Ruge-Stueben first pass inside each rank, then
 * PMIS across the ranks from the states it left, as hypre runs it with
 * MPI, but with each seam reset on one side only.
 *
 * First pass: amg/cpu/hmis.c's RS pass (ks_amg_rs_first_pass) on the
 * rank's local block of S, all its points, their connections to other
 * ranks unseen. Then the points with a strong connection to a lower
 * rank's point (in either direction: a ghost entry in S_i below the
 * rank's rows, or a lower rank's point depends on i) go back to
 * undecided; so do F points left without a C neighbour, and undecided
 * points next to a kept C point become F. Which points depend on i from
 * other ranks only those ranks know (their ghost entries): one reverse
 * halo exchange over the matrix's plan (ghost flags sent back to their
 * owners) tells each rank, and from which rank.
 *
 * Second stage: distributed PMIS (ks_dist_pmis_from) from those states,
 * with the serial measures and fix-up. On one rank no point is a boundary
 * point, so the result is ks_amg_hmis's splitting exactly; on several it
 * depends on the partition, never on the run: every step is
 * deterministic.
 *
 * Why one side: hypre resets every point with an off-processor connection,
 * so both sides of a seam become PMIS's, coarser and less regular than
 * RS's, and each seam costs iterations. Keeping the lower rank's RS states
 * at the seam and letting PMIS fit the upper side to them (its ghost C
 * points make their undecided neighbours F) costs fewer: 7-point 16^3,
 * PCG + AMG(JACOBI_L1, D2), one process 12 iterations, 2 / 3 / 4 ranks 13 /
 * 14 / 14 against 14 / 15 / 14 resetting both sides (tests/
 * test_mpi_amg_solve.c, even layouts); with aggressive coarsening 21 / 22 /
 * 23 against 22 / 24 / 23 (one process 20). Running RS over the boundary
 * points too and resetting them after (not leaving them out of the pass)
 * measured better than leaving them out. */
#include "amg_dist.h"

#include <string.h>

/* Not the other exchanges' tags. */
#define HMIS_REVERSE_TAG 0x6b79

/* own[i] |= the flags the other ranks hold for point i as their ghost:
 * the plan h run backwards (each ghost slice goes back to its owner, who
 * ORs what arrives into the rows it sends out). Collective over the
 * neighbours; agreed by the caller. */
static ks_error reverse_or(const ks_comm *c, const ks_halo *h, const unsigned char *ghost,
                           unsigned char *own, unsigned char *own_lower)
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
    for (int r = 0; r < h->nsend && e == KS_OK; r++) {
        const int lower = h->send_rank[r] < c->rank;
        for (ks_int k = h->send_start[r]; k < h->send_start[r + 1]; k++) {
            own[h->send_idx[k]] |= buf[k];
            if (lower)
                own_lower[h->send_idx[k]] |= buf[k];
        }
    }
    free(buf);
    free(req);
    return e;
}

/* conn[i] = 1 for this rank's points with a strong connection to another
 * rank's point in either direction; bnd[i] = 1 for those with one to a
 * lower rank's point, the points the first pass's states are reset for
 * (see the file comment). */
static ks_error boundary(const ks_dist_strength *S, unsigned char *conn, unsigned char *bnd)
{
    const ks_int n = S->nloc;
    unsigned char *gdep = ks_calloc((size_t)S->nghost + 1, 1, "HMIS ghost dependencies");
    ks_error e = ks_comm_agree(S->comm, gdep ? KS_OK : KS_ERR_MEMORY);
    if (e != KS_OK) {
        free(gdep);
        return e;
    }
    for (ks_int i = 0; i < n; i++) {
        conn[i] = S->grp[i] < S->grp[i + 1];
        bnd[i] = 0;
        for (ks_int k = S->grp[i]; k < S->grp[i + 1]; k++) {
            gdep[S->gci[k]] = 1;
            if (S->ghost_gid[S->gci[k]] < S->row_begin) /* ranks hold rows in rank order */
                bnd[i] = 1;
        }
    }
    e = ks_comm_agree(S->comm, reverse_or(S->comm, S->halo, gdep, conn, bnd));
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
    unsigned char *bnd = ks_malloc(2 * (size_t)n + 1, "HMIS boundary flags");
    unsigned char *conn = bnd ? bnd + n : NULL;
    ks_strength ST = {0};
    e = ks_comm_agree(S->comm, bnd ? KS_OK : KS_ERR_MEMORY);
    if (e == KS_OK)
        e = boundary(S, conn, bnd);
    if (e == KS_OK)
        e = ks_comm_agree(S->comm, ks_strength_transpose_unchecked(&S->local, &ST));
    if (e == KS_OK) {
        /* isolated (no strong connection anywhere): F, outside both stages */
        for (ks_int i = 0; i < n; i++)
            cf[i] = !conn[i] && S->local.rowptr[i] == S->local.rowptr[i + 1] &&
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
