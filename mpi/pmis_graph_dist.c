/* The graph distributed PMIS walks: S and S^T of this rank's points in
 * one numbering, own points first, then the external points (other
 * ranks' points adjacent in either direction).
 *
 * S^T across ranks: point j of rank q depends on point i here when i is
 * in j's strength row, which only q holds (in its ghost part). So every
 * rank sends each of its ghost entries (j depends on i) to i's owner, once,
 * through the setup's entry exchange (exchange.c: the counts, then the
 * pairs; O(ranks) memory a rank, as the halo plan learns its ids). A rank then knows
 * |S^T_i| of its own points exactly and every external point that PMIS
 * rounds must hear from; the halo plan over those points carries their
 * measures and states. */
#include "amg_dist.h"

#include <stdint.h>
#include <string.h>


/* Thread chunks of exchange_deps' walk at most. */
#define KS_DEPS_MAX_THREADS 256

void ks_dist_graph_free(ks_dist_graph *G)
{
    if (!G)
        return;
    free(G->ext_gid);
    free(G->srp);
    free(G->sci);
    free(G->trp);
    free(G->tci);
    ks_halo_destroy(G->halo);
    ks_sparse_free(&G->dS);
    ks_sparse_free(&G->dT);
    if (G->dext_gid)
        G->be->ops->free(G->be, G->dext_gid);
    memset(G, 0, sizeof *G);
}

/* The dependencies received: pairs (own point, dependent global id),
 * grouped into rows of own points, each row ascending. */
typedef struct ext_deps {
    ks_int *rp;   /* nloc + 1 */
    ks_gint *dep; /* rp[nloc] */
} ext_deps;

/* Send every ghost entry of S to the owner of its column (collective). */
static ks_error exchange_deps(const ks_dist_strength *S, ext_deps *X)
{
    const ks_comm *c = S->comm;
    const int p = c->size;
    const ks_int n = S->nloc, ng = S->nghost, nent = S->grp[n];
    int *cnt = ks_calloc(4 * (size_t)p, sizeof *cnt, "strength exchange counts");
    int *owner = ks_malloc((size_t)ng * sizeof *owner + 1, "ghost owners");
    ks_gint *out = ks_malloc(2 * (size_t)nent * sizeof *out + 1, "strength entries out");
    ks_gint *in = NULL;
    int64_t nin = 0;
    ks_error e = cnt && owner && out ? KS_OK : KS_ERR_MEMORY;
    int *scount = cnt, *rcount = cnt + p, *sdispl = cnt + 2 * p, *rdispl = cnt + 3 * p;
    if (e == KS_OK) {
        /* Ghost ids ascend, layout blocks ascend: one walk. */
        for (ks_int g = 0, q = 0; g < ng; g++) {
            while (S->ghost_gid[g] >= S->offsets[q + 1])
                q++;
            owner[g] = q;
        }
        /* Threads take chunks of rows: each counts its chunk's pairs by
         * owner, the counts are laid out owner by owner in chunk order,
         * then each writes its chunk's (the serial order; most rows have
         * no ghost entry, and a serial walk over all of them costs
         * milliseconds a level). */
        int nt = ks_threads_for(n, 16384, KS_DEPS_MAX_THREADS);
        int64_t *tpos = ks_calloc((size_t)nt * (size_t)p + 1, sizeof *tpos, "strength exchange counts");
        int64_t *pairs = ks_calloc((size_t)p + 1, sizeof *pairs, "strength exchange counts");
        e = tpos && pairs ? KS_OK : KS_ERR_MEMORY;
        int over = 0;
#pragma omp parallel num_threads(nt) if (nt > 1 && e == KS_OK)
        {
            int t, used;
            ks_thread_me(&t, &used);
            const ks_int i0 = (ks_int)((int64_t)n * t / used);
            const ks_int i1 = (ks_int)((int64_t)n * (t + 1) / used);
            int64_t *mine = e == KS_OK ? tpos + (size_t)t * (size_t)p : NULL;
            for (ks_int i = i0; i < i1 && mine; i++)
                for (ks_int k = S->grp[i]; k < S->grp[i + 1]; k++)
                    mine[owner[S->gci[k]]]++;
#pragma omp barrier
#pragma omp single
            if (mine) {
                ks_layout_rank_scan(tpos, used, p, pairs);
                int64_t at = 0; /* bytes */
                for (int q = 0; q < p; q++) {
                    sdispl[q] = (int)at;
                    scount[q] = (int)(2 * pairs[q] * (int64_t)sizeof *out);
                    at += 2 * pairs[q] * (int64_t)sizeof *out;
                    over |= at > INT32_MAX;
                }
            } /* its barrier publishes the places */
            /* Pairs (column = the owner's point, row = the dependent point). */
            for (ks_int i = i0; i < i1 && mine && !over; i++)
                for (ks_int k = S->grp[i]; k < S->grp[i + 1]; k++) {
                    const int64_t w = 2 * mine[owner[S->gci[k]]]++;
                    out[w] = S->ghost_gid[S->gci[k]];
                    out[w + 1] = S->row_begin + i;
                }
        }
        if (e == KS_OK && over)
            e = ks_seterr(KS_ERR_SIZE, "rank %d sends more than 2^31 bytes of strength "
                          "entries", c->rank);
        free(tpos);
        free(pairs);
    }
    e = ks_comm_agree(c, e);
    if (e == KS_OK) {
        int64_t bytes = 0;
        e = ks_exchange_bytes(c, out, scount, sdispl, rcount, rdispl, (void **)&in, &bytes,
                              "strength entries");
        nin = bytes / (int64_t)sizeof *in;
    }
    if (e == KS_OK) {
        X->rp = ks_calloc((size_t)n + 1, sizeof *X->rp, "external dependencies");
        X->dep = ks_malloc((size_t)nin / 2 * sizeof *X->dep + 1, "external dependencies");
        if (!X->rp || !X->dep)
            e = KS_ERR_MEMORY;
        /* Each pair names a point of this rank: checked, it is the plan. */
        for (int64_t k = 0; k < nin && e == KS_OK; k += 2) {
            const ks_gint i = in[k] - S->row_begin;
            if (i < 0 || i >= n)
                e = ks_seterr(KS_ERR_ARG, "rank %d got a strength entry of point %lld, not its "
                              "own", c->rank, (long long)in[k]);
            else
                X->rp[i + 1]++;
        }
        if (e == KS_OK)
            ks_rowptr_scan(X->rp, n); /* at most nin / 2 */
        /* From the ranks in order: a row's ids ascend by source rank; sort
         * within each row all the same (a source's pairs follow its rows'
         * ghost entries, not one column's dependents in order). */
        ks_int *at = e == KS_OK ? ks_malloc((size_t)n * sizeof *at + 1, "fill") : NULL;
        if (e == KS_OK && !at)
            e = KS_ERR_MEMORY;
        if (e == KS_OK) {
            ks_memcpy_par(at, X->rp, (size_t)n * sizeof *at);
            for (int64_t k = 0; k < nin; k += 2)
                X->dep[at[in[k] - S->row_begin]++] = in[k + 1];
            /* rows of two or more only (most rows have no dependent elsewhere) */
            int failed = 0;
#pragma omp parallel for schedule(dynamic, 4096) reduction(| : failed)
            for (ks_int i = 0; i < n; i++)
                if (X->rp[i + 1] - X->rp[i] > 1)
                    failed |= ks_gint_sort(X->dep + X->rp[i], X->rp[i + 1] - X->rp[i]) != KS_OK;
            if (failed)
                e = ks_seterr(KS_ERR_MEMORY, "rank %d: out of host memory sorting a point's "
                              "external dependencies", c->rank);
        }
        free(at);
        e = ks_comm_agree(c, e);
    }
    free(cnt);
    free(owner);
    free(out);
    free(in);
    return e;
}

/* The external points: S's ghost columns and the dependents learnt,
 * ascending, each once. */
static ks_error external_points(const ks_dist_strength *S, const ext_deps *X, ks_dist_graph *G)
{
    const ks_int n = S->nloc, ns = S->grp[n], nd = X->rp[n];
    ks_gint *all = ks_malloc(((size_t)ns + (size_t)nd) * sizeof *all + 1, "external points");
    if (!all)
        return KS_ERR_MEMORY;
    for (ks_int k = 0; k < ns; k++)
        all[k] = S->ghost_gid[S->gci[k]];
    memcpy(all + ns, X->dep, (size_t)nd * sizeof *all);
    int64_t m = 0;
    const ks_error e = ks_gint_sort_unique(all, (int64_t)ns + nd, &m);
    G->ext_gid = all; /* longer than needed: not worth a realloc */
    G->next = (ks_int)m;
    return e;
}

static inline void copy_ints(ks_int *dst, const ks_int *src, ks_int count)
{
    if (count > 0)
        memcpy(dst, src, (size_t)count * sizeof *dst);
}

/* S and S^T rows in the joint numbering. S^T's own part is transposed
 * straight into its joint rows, each leaving room for the row's
 * dependents on other ranks (X's row), written after it: no second copy
 * of the transpose. */
static ks_error joint_rows(const ks_dist_strength *S, const ext_deps *X, ks_dist_graph *G)
{
    const ks_int n = S->nloc, nx = G->next;
    ks_strength T = {0};
    KS_TRY(ks_strength_transpose_room(&S->local, X->rp, &T));
    G->trp = T.rowptr; /* freed with G */
    G->tci = T.colind;
    const ks_int ns = S->local.rowptr[n] + S->grp[n];
    G->srp = ks_malloc(((size_t)n + 1) * sizeof *G->srp, "joint strength rows");
    G->sci = ks_malloc((size_t)ns * sizeof *G->sci + 1, "joint strength columns");
    ks_int *gmap = ks_malloc((size_t)S->nghost * sizeof *gmap + 1, "ghost to external");
    ks_gmap xm = {0}; /* positions in ext_gid (an empty own range) */
    ks_error e = G->srp && G->sci && gmap ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK)
        e = ks_gmap_borrow(0, 0, G->ext_gid, nx, &xm);
    if (e != KS_OK) {
        free(gmap);
        return e;
    }
#pragma omp parallel for schedule(static)
    for (ks_int g = 0; g < S->nghost; g++) /* unused ghosts map nowhere that is read */
        gmap[g] = nx ? n + ks_gmap_ext_find(&xm, S->ghost_gid[g]) : 0;
    /* A joint row starts after both parts' rows before it. Rows without
     * ghost entries (most) next to each other are one stretch of S's own
     * part and of the joint rows: one copy, in blocks of rows. */
    const ks_int *lrp = S->local.rowptr, *lci = S->local.colind;
    const ks_int br = ks_dist_block_rows > 0 ? ks_dist_block_rows : 1;
    const ks_int nblk = n / br + (n % br > 0);
    G->srp[0] = 0;
#pragma omp parallel for schedule(static)
    for (ks_int blk = 0; blk < nblk; blk++) {
        const ks_int i0 = blk * br, i1 = n - i0 < br ? n : i0 + br;
        ks_int from = lrp[i0]; /* the stretch so far */
        for (ks_int i = i0; i < i1; i++) {
            G->srp[i + 1] = lrp[i + 1] + S->grp[i + 1];
            ks_int b = G->trp[i + 1] - (X->rp[i + 1] - X->rp[i]); /* the room */
            for (ks_int k = X->rp[i]; k < X->rp[i + 1]; k++)
                G->tci[b++] = n + ks_gmap_ext_find(&xm, X->dep[k]);
            if (S->grp[i + 1] == S->grp[i])
                continue; /* no ghost entry: the row joins the stretch */
            copy_ints(G->sci + from + S->grp[i], lci + from, lrp[i + 1] - from);
            ks_int a = lrp[i + 1] + S->grp[i];
            for (ks_int k = S->grp[i]; k < S->grp[i + 1]; k++)
                G->sci[a++] = gmap[S->gci[k]];
            from = lrp[i + 1];
        }
        copy_ints(G->sci + from + S->grp[i1], lci + from, lrp[i1] - from);
    }
    ks_gmap_free(&xm);
    free(gmap);
    return KS_OK;
}

/* The same rows made where the strength's device parts live (S->dlocal,
 * S->dghost) and kept there for PMIS's rounds (HMIS's first stage reads
 * host copies: ks_dist_graph_host_rows): S's rows are its owned part merged
 * with its ghost part, whose columns go to external numbers through a
 * table (ks_sparse_stack_rows with no other rows: a renumbering), so a row
 * is its owned columns then its external ones, as joint_rows writes it;
 * S^T's rows are the owned part's transpose there (sorted rows, as the
 * host transpose leaves them) merged with the dependents on other ranks
 * (X, external numbers, ascending). The same arrays, without the host's
 * transpose of S's owned part. */
static ks_error joint_rows_device(const ks_dist_strength *S, const ext_deps *X, ks_dist_graph *G)
{
    ks_backend *be = S->dlocal.be;
    const ks_int n = S->nloc, nx = G->next, ng = S->nghost;
    ks_gmap xm = {0}; /* positions in ext_gid (an empty own range) */
    ks_int *gtab = ks_malloc((size_t)ng * sizeof *gtab + 1, "ghost to external");
    ks_csr D = {0}, none = {0, nx, 0, NULL, NULL, NULL};
    ks_int zero = 0;
    none.rowptr = &zero;
    ks_sparse dnone = {0}, SGx = {0}, Sj = {0}, T = {0}, dD = {0}, Tj = {0};
    ks_int *dgtab = NULL;
    ks_error e = gtab ? ks_gmap_borrow(0, 0, G->ext_gid, nx, &xm) : KS_ERR_MEMORY;
    if (e == KS_OK) {
#pragma omp parallel for schedule(static)
        for (ks_int g = 0; g < ng; g++) { /* unused ghosts map nowhere that is read */
            const ks_int k = nx ? ks_gmap_ext_find(&xm, S->ghost_gid[g]) : -1;
            gtab[g] = k < 0 ? 0 : k;
        }
        /* the dependents on other ranks as rows of external numbers */
        D = (ks_csr){n, nx, X->rp[n], X->rp, NULL, NULL};
        D.colind = ks_malloc((size_t)D.nnz * sizeof *D.colind + 1, "external dependents");
        e = D.colind ? KS_OK : KS_ERR_MEMORY;
    }
    if (e == KS_OK) {
#pragma omp parallel for schedule(static)
        for (ks_int k = 0; k < D.nnz; k++)
            D.colind[k] = ks_gmap_ext_find(&xm, X->dep[k]);
    }
    if (e == KS_OK)
        e = ks_be_upload_new(be, gtab, (size_t)ng * sizeof *gtab + 1, (void **)&dgtab,
                             "ghost to external");
    if (e == KS_OK)
        e = ks_sparse_from_csr(be, &none, 1, &dnone);
    if (e == KS_OK)
        e = ks_sparse_stack_rows(&S->dghost, dgtab, &dnone, 0, nx, &SGx);
    if (e == KS_OK)
        e = ks_sparse_merge_blocks(&S->dlocal, &SGx, 0, &Sj);
    if (e == KS_OK)
        e = ks_sparse_transpose(&S->dlocal, &T);
    if (e == KS_OK)
        e = ks_sparse_from_csr(be, &D, 1, &dD);
    if (e == KS_OK)
        e = ks_sparse_merge_blocks(&T, &dD, 0, &Tj);
    if (e == KS_OK)
        e = ks_be_upload_new(be, G->ext_gid, (size_t)nx * sizeof *G->ext_gid + 1,
                             (void **)&G->dext_gid, "external points' ids");
    if (e == KS_OK) { /* the graph takes the rows (host copies on demand) */
        G->be = be;
        G->dS = Sj;
        G->dT = Tj;
        memset(&Sj, 0, sizeof Sj);
        memset(&Tj, 0, sizeof Tj);
    }
    if (dgtab)
        be->ops->free(be, dgtab);
    ks_sparse_free(&dnone);
    ks_sparse_free(&SGx);
    ks_sparse_free(&Sj);
    ks_sparse_free(&T);
    ks_sparse_free(&dD);
    ks_sparse_free(&Tj);
    free(D.colind);
    ks_gmap_free(&xm);
    free(gtab);
    return e;
}

ks_error ks_dist_graph_host_rows(ks_dist_graph *G)
{
    if (G->srp || !G->be)
        return KS_OK;
    ks_csr Sh = {0}, Th = {0};
    ks_error e = ks_sparse_to_csr(&G->dS, &Sh);
    if (e == KS_OK)
        e = ks_sparse_to_csr(&G->dT, &Th);
    if (e != KS_OK) {
        ks_csr_free(&Sh);
        ks_csr_free(&Th);
        return e;
    }
    G->srp = Sh.rowptr;
    G->sci = Sh.colind;
    G->trp = Th.rowptr;
    G->tci = Th.colind;
    free(Sh.val);
    free(Th.val);
    return KS_OK;
}

ks_error ks_dist_graph_create(const ks_dist_strength *S, ks_dist_graph *G)
{
    memset(G, 0, sizeof *G);
    const ks_comm *c = S->comm;
    G->nloc = S->nloc;
    G->row_begin = S->row_begin;
    ext_deps X = {0};
    double t = ks_wtime();
    ks_error e = exchange_deps(S, &X);
    ks_amg_dist_substep(c, "PMIS graph: dependents exchanged", &t);
    if (e == KS_OK)
        e = ks_comm_agree(c, external_points(S, &X, G));
    if (e == KS_OK)
        e = ks_halo_create(c, S->offsets, G->ext_gid, G->next, &G->halo);
    ks_amg_dist_substep(c, "PMIS graph: external points and their halo", &t);
    if (e == KS_OK)
        e = ks_comm_agree(c, S->dlocal.be ? joint_rows_device(S, &X, G) : joint_rows(S, &X, G));
    ks_amg_dist_substep(c, "PMIS graph: joint rows", &t);
    free(X.rp);
    free(X.dep);
    if (e != KS_OK) {
        ks_dist_graph_free(G);
        return ks_adderr(e, "distributed strength graph");
    }
    return KS_OK;
}
