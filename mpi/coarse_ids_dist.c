/* The coarse grid's global numbering. Serially the C points are numbered
 * in index order (amg/cpu/coarse_map.c); with contiguous row blocks that
 * is each rank's C points in order, after all C points of the lower
 * ranks: an exclusive prefix sum of the ranks' counts (64-bit: the coarse
 * grid of a large problem can pass 2^31). Interpolation then needs the
 * splitting and coarse ids of its ghost columns: they come from the
 * owners through the matrix's halo plan. */
#include "amg_dist.h"

#include <string.h>


void ks_dist_coarse_free(ks_dist_coarse *C)
{
    if (!C)
        return;
    free(C->cid);
    free(C->ghost_cf);
    free(C->ghost_cid);
    memset(C, 0, sizeof *C);
}

/* c_begin and nc_global from every rank's count, the same on every rank:
 * an Allgather summed in rank order (the integers are exact anyway). */
static ks_error prefix(const ks_comm *c, ks_gint mine, ks_gint *begin, ks_gint *total)
{
    const int p = c->size;
    ks_gint *all = ks_malloc((size_t)p * sizeof *all, "coarse counts of the ranks");
    ks_error e = ks_comm_agree(c, all ? KS_OK : KS_ERR_MEMORY);
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_mpi_check(MPI_Allgather(&mine, 1, MPI_INT64_T, all, 1,
                                                        MPI_INT64_T, ks_comm_mpi_of(c)),
                                          "MPI_Allgather (coarse counts)"));
    if (e == KS_OK) {
        *begin = *total = 0;
        for (int q = 0; q < p; q++) {
            if (q == c->rank)
                *begin = *total;
            *total += all[q];
        }
    }
    free(all);
    return e;
}

#define KS_CID_MAX_THREADS 256

/* Threads take static chunks: each counts its C points, the counts are
 * scanned, then each walks its chunk from its offset. */
void ks_dist_cpt_walk(const int *cf, ks_int n, ks_gint first, ks_gint *cid,
                      const ks_gint *src, ks_gint *list)
{
    int nt = ks_threads_for(n, 32768, KS_CID_MAX_THREADS);
    ks_gint at[KS_CID_MAX_THREADS + 1];
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t, used;
        ks_thread_me(&t, &used);
        const ks_int b = (ks_int)((int64_t)n * t / used), e = (ks_int)((int64_t)n * (t + 1) / used);
        ks_gint c = 0;
        for (ks_int i = b; i < e; i++)
            c += cf[i] == KS_CPT;
        at[t + 1] = c;
#pragma omp barrier
#pragma omp single
        {
            at[0] = first;
            for (int q = 1; q <= used; q++)
                at[q] += at[q - 1];
        }
        ks_gint next = at[t];
        if (cid)
            for (ks_int i = b; i < e; i++)
                cid[i] = cf[i] == KS_CPT ? next++ : -1;
        if (list)
            for (ks_gint i = b, k = at[t] - first; i < e; i++)
                if (cf[i] == KS_CPT)
                    list[k++] = src[i];
    }
}

ks_error ks_dist_coarse_ids(const ks_dist_strength *S, const int *cf, ks_dist_coarse *C)
{
    static const char who[] = "distributed coarse numbering";
    if (!C)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(C, 0, sizeof *C);
    if (!S || !S->comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL or empty strength graph", who);
    const ks_comm *c = S->comm;
    const ks_int n = S->nloc, ng = S->nghost;
    ks_error e = KS_OK;
    if (!cf && n > 0)
        e = ks_seterr(KS_ERR_ARG, "%s: NULL cf", who);
    const ks_int nchk = e == KS_OK ? n : 0;
    ks_int bad = nchk; /* the first point neither C nor F */
    ks_gint nc = 0;
#pragma omp parallel for schedule(static) reduction(min : bad) reduction(+ : nc)
    for (ks_int i = 0; i < nchk; i++) {
        if (cf[i] != KS_CPT && cf[i] != KS_FPT && i < bad)
            bad = i;
        nc += cf[i] == KS_CPT;
    }
    if (bad < nchk)
        e = ks_seterr(KS_ERR_ARG, "%s: point %lld is neither C nor F (%d)", who,
                      (long long)(S->row_begin + bad), cf[bad]);
    if (e == KS_OK) {
        C->cid = ks_malloc((size_t)n * sizeof *C->cid + 1, "coarse ids");
        C->ghost_cf = ks_malloc((size_t)ng * sizeof *C->ghost_cf + 1, "ghost splitting");
        C->ghost_cid = ks_malloc((size_t)ng * sizeof *C->ghost_cid + 1, "ghost coarse ids");
        if (!C->cid || !C->ghost_cf || !C->ghost_cid)
            e = KS_ERR_MEMORY;
    }
    e = ks_comm_agree(c, e);
    if (e == KS_OK)
        e = prefix(c, nc, &C->c_begin, &C->nc_global);
    if (e == KS_OK) {
        C->nc = (ks_int)nc;
        ks_dist_cpt_walk(cf, n, C->c_begin, C->cid, NULL, NULL);
    }
    ks_halo_typed xi = {0}, xg = {0};
    if (e == KS_OK)
        e = ks_halo_typed_create(c, S->halo, MPI_INT, sizeof(int), &xi);
    if (e == KS_OK)
        e = ks_halo_typed_create(c, S->halo, MPI_INT64_T, sizeof(ks_gint), &xg);
    if (e == KS_OK) {
        e = ks_halo_typed_forward(&xi, cf, C->ghost_cf);
        ks_error e2 = ks_halo_typed_forward(&xg, C->cid, C->ghost_cid);
        e = ks_comm_agree(c, e != KS_OK ? e : e2);
    }
    ks_halo_typed_free(&xi);
    ks_halo_typed_free(&xg);
    if (e != KS_OK) {
        ks_dist_coarse_free(C);
        return ks_adderr(e, "%s", who);
    }
    return KS_OK;
}
