/* A P for this rank's rows of A: the local block's columns reach P's own
 * rows, the ghost block's the rows fetched from their owners
 * (rap_fetch_dist.c). No further message.
 *
 * The product itself is a local spgemm on local views (local_rows.c; on
 * the device when A lives there, the same bits but with KS_SPGEMM=cusparse):
 * A's two blocks merged into one CSR whose columns are the compact fine
 * numbers (the ghosts below this rank's rows, the owned rows, the ghosts
 * above; ks_sparse_merge_blocks, on the device where the blocks live
 * there), P's own and fetched rows stacked in that order,
 * their coarse columns compact too (this rank's coarse range and the
 * other coarse ids at hand), so no accumulator spans the whole coarse
 * grid.
 *
 * Order of the sums: spgemm starts each AP(i,J) at 0.0 and adds
 * A(i,k) P(k,J) with A's row in column order (compact order is global
 * order) and P's row k in its order, which is ks_csr_spgemm's order on
 * the global matrices: the serial rows, bit for bit, with any thread
 * count. */
#include "rap_dist.h"
#include "../amg/hierarchy.h"
#include "../sparse/cpu/csr_kernels.h"

#include <stdint.h>
#include <string.h>

void ks_dist_compact_free(ks_dist_compact *X)
{
    if (!X)
        return;
    ks_csr_free(&X->T);
    ks_sparse_free(&X->dT);
    ks_gmap_free(&X->cols);
    memset(X, 0, sizeof *X);
}

/* The product on the local views, its columns compact over AP->cols. A's
 * rows, the left factor: on the host its blocks merged into a host CSR
 * (AL, AG); with dev its blocks' CSRs (L, G) merged where they live, the
 * product reading the result there (no host copy, no upload). */
static ks_error product(ks_backend *be, int dev, const ks_csr *AL, const ks_csr *AG,
                        const ks_sparse *L, const ks_sparse *G, const ks_dist_impl *d,
                        const ks_dist_prows *P, const ks_dist_ghost_prows *GP, int entries,
                        ks_dist_compact *AP)
{
    ks_gmap fm;
    const int64_t np = P->nloc ? P->rowptr[P->nloc] : 0, ng = GP->n ? GP->rowptr[GP->n] : 0;
    double t = ks_wtime();
    ks_error e = ks_gmap_borrow(P->row_begin, P->row_begin + P->nloc, d->ghost_gid, d->nghost,
                                &fm);
    if (e == KS_OK)
        e = ks_gmap_make(P->c_begin, P->c_begin + P->nc, P->col, np, GP->col, ng, &AP->cols);
    ks_amg_dist_substep(NULL, "A P: column maps", &t);
    /* Without ghost columns (one rank) the merged rows are A's local block
     * itself: read in place, not copied. */
    const int alone = fm.next == 0 && (!G || G->nnz == 0);
    ks_csr M = {0};
    ks_sparse dM = {0};
    if (e == KS_OK && !alone)
        e = dev ? ks_sparse_merge_blocks(L, G, fm.nbelow, &dM)
                : ks_dist_merge_blocks(AL, AG, &fm, &M);
    if (e == KS_OK && dev && !alone && ks_amg_tracing()) /* the merge's own time */
        e = ks_backend_sync(be);
    ks_amg_dist_substep(NULL, "A P: merge A's blocks", &t);
    /* P's own rows where a device built them: stacked there (their
     * columns through a table into AP's), not on the host and uploaded */
    ks_sparse dP;
    ks_gmap pm;
    ks_int *ptab = NULL;
    const int pdev = e == KS_OK && dev && ks_dist_prows_dev_view(P, &dP, &pm);
    if (pdev) {
        ptab = ks_malloc((size_t)dP.ncols * sizeof *ptab + 1, "P's column table");
        e = ptab ? KS_OK : KS_ERR_MEMORY;
        if (e == KS_OK) {
#pragma omp parallel for schedule(static)
            for (ks_int k = 0; k < dP.ncols; k++)
                ptab[k] = ks_gmap_find(&AP->cols, ks_gmap_gid(&pm, k));
        }
        ks_gmap_free(&pm);
    }
    if (e == KS_OK)
        e = ks_local_product_compact(be, dev ? NULL : alone ? AL : &M,
                                     dev ? alone ? L : &dM : NULL, GP, &fm, P->rowptr, P->col,
                                     P->val, pdev ? &dP : NULL, ptab, &AP->cols, &AP->T, &AP->dT,
                                     entries);
    free(ptab);
    ks_csr_free(&M);
    ks_sparse_free(&dM);
    ks_gmap_free(&fm);
    return e;
}

static ks_error ap_compact(const ks_matrix *A, const ks_dist_prows *P, int entries,
                           ks_dist_compact *AP)
{
    static const char who[] = "distributed A P";
    if (!AP)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(AP, 0, sizeof *AP);
    ks_dist_ghost_prows G;
    double t = ks_wtime();
    KS_TRY(ks_dist_fetch_prows(A, P, &G)); /* checks A and P on every rank, agreed */
    ks_amg_dist_substep(ks_matrix_comm(A), "A P: fetch P's rows", &t);
    const ks_matrix_dist *md = A->dist;
    const ks_dist_impl *d = (const ks_dist_impl *)md;
    const ks_comm *c = md->comm;
    ks_backend *be = ks_matrix_backend(A);
    const ks_sparse *L = ks_matrix_sparse(md->local);
    const ks_sparse *Gs = md->ghost ? ks_matrix_sparse(md->ghost) : NULL;
    /* on a device the blocks are merged there while they keep their values;
     * else (or after a release of them) from host copies */
    const int dev = !ks_backend_host_memory(be) && L->val && (!Gs || Gs->val);
    const ks_csr *AL = dev ? NULL : ks_matrix_host_csr(md->local);
    const ks_csr *AG = dev || !md->ghost ? NULL : ks_matrix_host_csr(md->ghost);
    ks_error e = KS_OK;
    if (!dev && (!AL || (md->ghost && !AG)))
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix's values are not available on the host", who);
    /* A may be rectangular (an interpolation: P1 P2 of aggressive
     * coarsening); P's rows are laid out as A's columns */
    AP->row_begin = md->offsets[c->rank];
    AP->nrows_global = md->offsets[c->size];
    AP->ncols_global = P->nc_global;
    const ks_int nrows = (ks_int)(md->offsets[c->rank + 1] - md->offsets[c->rank]);
    if (e == KS_OK && Gs && (Gs->nrows != nrows || Gs->ncols != d->nghost))
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix's ghost block is not its ghost map's", who);
    if (e == KS_OK)
        e = product(be, dev, AL, AG, L, Gs, d, P, &G, entries, AP);
    ks_dist_ghost_prows_free(&G);
    e = ks_comm_agree(c, e);
    if (e != KS_OK) {
        ks_dist_compact_free(AP);
        return ks_adderr(e, "%s", who);
    }
    return KS_OK;
}

ks_error ks_dist_ap_compact(const ks_matrix *A, const ks_dist_prows *P, ks_dist_compact *AP)
{
    return ap_compact(A, P, 1, AP);
}

ks_error ks_dist_ap_compact_device(const ks_matrix *A, const ks_dist_prows *P, ks_dist_compact *AP)
{
    return ap_compact(A, P, 0, AP);
}

ks_error ks_dist_ap(const ks_matrix *A, const ks_dist_prows *P, ks_dist_csr *AP)
{
    if (!AP)
        return ks_seterr(KS_ERR_ARG, "distributed A P: NULL output");
    memset(AP, 0, sizeof *AP);
    ks_dist_compact X;
    KS_TRY(ks_dist_ap_compact(A, P, &X));
    const ks_comm *c = ks_matrix_comm(A);
    ks_error e = ks_compact_to_global(&X.T, &X.cols, X.row_begin, X.nrows_global, X.ncols_global,
                                      AP);
    ks_dist_compact_free(&X);
    e = ks_comm_agree(c, e);
    if (e != KS_OK) {
        ks_dist_csr_free(AP);
        return ks_adderr(e, "distributed A P");
    }
    return KS_OK;
}

ks_error ks_dist_merge_blocks(const ks_csr *AL, const ks_csr *AG, const ks_gmap *fm, ks_csr *M)
{
    const ks_int n = AL->nrows;
    const int64_t nnz = (int64_t)AL->rowptr[n] + (AG ? AG->rowptr[n] : 0);
    if (nnz > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "more than 2^31 entries in a rank's rows");
    if (AL->ncols != (ks_int)(fm->hi - fm->lo) || (AG && AG->ncols > fm->next))
        return ks_seterr(KS_ERR_ARG, "A's blocks (%lld and %lld columns) are not over the fine "
                         "map's %lld owned and %lld ghost columns", (long long)AL->ncols,
                         (long long)(AG ? AG->ncols : 0), (long long)(fm->hi - fm->lo),
                         (long long)fm->next);
    KS_TRY(ks_csr_alloc(M, n, ks_gmap_size(fm), (ks_int)nnz));
    ks_csr_merge_blocks(AL, AG, fm->nbelow, M); /* the cpu table's merge (sparse/cpu/merge.c) */
    return KS_OK;
}
