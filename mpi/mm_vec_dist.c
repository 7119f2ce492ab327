/* Matrix Market vectors over the ranks: a right-hand side split like the
 * matrix's rows, and a solution written from its parts. Rank 0 reads or
 * writes the file with the serial reader and writer (the same formats,
 * checks and messages) and holds the whole vector meanwhile: n doubles,
 * small beside the matrix of any solve; the parts travel by one Scatterv
 * or Gatherv. Every rank returns the same outcome. Before the values are
 * read, the header's length is checked against each host's memory
 * (ks_dist_memory_check, mm_dist.c), as the serial reader checks its own. */
#include "mpi_internal.h"
#include "../matrices/mmio_internal.h"

#include <stdint.h>
#include <string.h>

/* Rank 0's counts and displacements (p each, in one block) of a layout
 * whose total fits an int (the vector files' limit). */
static int *counts_of(const ks_gint *off, int p)
{
    int *cd = ks_malloc(2 * (size_t)p * sizeof *cd, "counts of the ranks' parts");
    if (cd)
        for (int q = 0; q < p; q++) {
            cd[q] = (int)(off[q + 1] - off[q]);
            cd[p + q] = (int)off[q];
        }
    return cd;
}

/* Rank 0: the header of a vector file, for the memory check before the
 * read: hv = {length, the size line, the serial reader's own need}; a
 * length of -1 when the file is no vector (the serial read then says so). */
static ks_error peek_header(const char *path, int64_t hv[3])
{
    ks_gzr r;
    ks_mm_header h;
    KS_TRY(ks_gzr_open(&r, path));
    ks_error e = ks_mm_read_header(&r, &h);
    if (e == KS_OK && (h.m == 1 || h.n == 1)) {
        /* As the serial reader (matrices/mmio_read.c): an array's values
         * stored as they come ("0\n" at least each); a coordinate vector
         * dense from the start, plus its entries ("1 1\n" at least). */
        const uint64_t len = (uint64_t)(h.m * h.n), text = ks_gzr_text_bound(&r);
        const uint64_t ent = h.array ? len : (uint64_t)h.nnz;
        uint64_t held = text / (h.array ? 2 : 4) < ent ? text / (h.array ? 2 : 4) : ent;
        if (held > (UINT64_C(1) << 48)) /* a pipe: no bound; 4 PB is beyond any host */
            held = UINT64_C(1) << 48;
        hv[0] = (int64_t)len;
        hv[1] = h.size_line;
        hv[2] = (int64_t)(h.array ? 8 * held : 8 * len + 16 * held);
    }
    ks_gzr_close(&r);
    return e;
}

ks_error ks_mm_read_vector_dist(const ks_comm *comm, const char *path, ks_int nlocal,
                                double **v, ks_int *n)
{
    const char *fn = "ks_mm_read_vector_dist";
    if (!v || !n)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", fn);
    *v = NULL;
    *n = 0;
    if (!comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL comm", fn);
    KS_TRY(ks_comm_agree(comm, path ? KS_OK : ks_seterr(KS_ERR_ARG, "%s: NULL path", fn)));
    const int p = comm->size, me = comm->rank;
    const MPI_Comm mc = ks_comm_mpi_of(comm);
    /* The declared length first: every rank's part is checked against the
     * memory before rank 0 reads the values (ks_dist_memory_check). */
    int64_t hv[3] = {-1, 0, 0};
    KS_TRY(ks_comm_agree(comm, me == 0 ? peek_header(path, hv) : KS_OK));
    ks_error e = ks_mpi_check(MPI_Bcast(hv, 3, MPI_INT64_T, 0, mc), "MPI_Bcast (vector header)");
    ks_gint *off = NULL;
    if (e == KS_OK && hv[0] >= 0) {
        e = ks_layout_make(comm, nlocal, hv[0], &off);
        if (e != KS_OK)
            ks_adderr(e, "%s: %lld entries", path, (long long)hv[0]);
    }
    if (e == KS_OK && off) {
        /* Rank 0 holds the whole vector (what the serial reader needs),
         * its part and the counts; every other rank its part. */
        const ks_int mine = (ks_int)(off[me + 1] - off[me]);
        uint64_t need = 8 * (uint64_t)mine + (me == 0 ? (uint64_t)hv[2] + 8 * (uint64_t)p : 0);
        char what[160];
        snprintf(what, sizeof what, "reading this vector of %lld rows", (long long)hv[0]);
        e = ks_comm_agree(comm, ks_dist_memory_check(comm, need, path, (long)hv[1], what,
                                                     off[me], mine));
    }
    free(off);
    off = NULL;
    KS_TRY(e);
    double *all = NULL;
    ks_int len = 0;
    KS_TRY(ks_comm_agree(comm, me == 0 ? ks_mm_read_vector(path, &all, &len) : KS_OK));
    ks_gint glen = len;
    e = ks_mpi_check(MPI_Bcast(&glen, 1, MPI_INT64_T, 0, mc), "MPI_Bcast (length)");
    if (e == KS_OK) {
        e = ks_layout_make(comm, nlocal, glen, &off);
        if (e != KS_OK)
            ks_adderr(e, "%s: %lld entries", path, (long long)glen);
    }
    if (e != KS_OK) {
        free(all);
        return e;
    }
    const ks_int mine = (ks_int)(off[me + 1] - off[me]);
    double *part = ks_malloc((size_t)mine * sizeof *part, "this rank's part of the vector");
    int *cd = me == 0 ? counts_of(off, p) : NULL;
    free(off);
    e = ks_comm_agree(comm, part && (me > 0 || cd) ? KS_OK : KS_ERR_MEMORY);
    if (e == KS_OK)
        e = ks_mpi_check(MPI_Scatterv(all, cd, cd ? cd + p : NULL, MPI_DOUBLE, part, mine,
                                      MPI_DOUBLE, 0, mc),
                         "MPI_Scatterv (vector)");
    free(cd);
    free(all);
    if (e != KS_OK) {
        free(part);
        return ks_adderr(e, "%s", path);
    }
    *v = part;
    *n = mine;
    return KS_OK;
}

ks_error ks_mm_write_vector_dist(const ks_comm *comm, const char *path, const double *v,
                                 ks_int nlocal)
{
    const char *fn = "ks_mm_write_vector_dist";
    if (!comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL comm", fn);
    ks_error e = !path                  ? ks_seterr(KS_ERR_ARG, "%s: NULL path", fn)
                 : nlocal < 0           ? ks_seterr(KS_ERR_ARG, "%s: negative length", fn)
                 : !v && nlocal > 0     ? ks_seterr(KS_ERR_ARG, "%s: NULL vector", fn)
                                        : KS_OK;
    KS_TRY(ks_comm_agree(comm, e));
    const int p = comm->size, me = comm->rank;
    ks_gint *off = NULL;
    KS_TRY(ks_layout_gather(comm, nlocal, &off));
    const ks_gint total = off[p];
    if (total > INT32_MAX) { /* the same total everywhere: every rank refuses */
        free(off);
        return ks_seterr(KS_ERR_SIZE, "%s: %lld entries: more than a vector file holds (%d)",
                         path, (long long)total, INT32_MAX);
    }
    double *all = me == 0 ? ks_malloc((size_t)total * sizeof *all, "the gathered vector") : NULL;
    int *cd = me == 0 ? counts_of(off, p) : NULL;
    free(off);
    e = ks_comm_agree(comm, me > 0 || (all && cd) ? KS_OK : KS_ERR_MEMORY);
    if (e == KS_OK) {
        e = ks_mpi_check(MPI_Gatherv(v, nlocal, MPI_DOUBLE, all, cd, cd ? cd + p : NULL,
                                     MPI_DOUBLE, 0, ks_comm_mpi_of(comm)),
                         "MPI_Gatherv (vector)");
        if (e == KS_OK && me == 0)
            e = ks_mm_write_vector(path, all, (ks_int)total);
        e = ks_comm_agree(comm, e);
    }
    free(all);
    free(cd);
    return e;
}
