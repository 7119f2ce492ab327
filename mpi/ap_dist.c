/* A P for this rank's rows of A: the local block's columns reach P's own
 * rows, the ghost block's the rows fetched from their owners
 * (rap_fetch_dist.c). No further message.
 *
 * The product itself is a local spgemm on local views (local_rows.c; on
 * the device when A lives there, the same bits but with KS_SPGEMM=cusparse):
 * A's two blocks merged into one CSR whose columns are the compact fine
 * numbers (the ghosts below this rank's rows, the owned
 * rows, the ghosts above), P's own and fetched rows stacked in that order,
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

#include <stdint.h>
#include <string.h>

/* A's rows, its local (AL) and ghost (AG, may be NULL) blocks merged into
 * one CSR over the compact fine numbers of fm (AG's columns are fm's ext
 * ids). */
static ks_error merge_blocks(const ks_csr *AL, const ks_csr *AG, const ks_gmap *fm, ks_csr *M)
{
    const ks_int n = AL->nrows, nb = fm->nbelow, nloc = (ks_int)(fm->hi - fm->lo);
    const int64_t nnz = (int64_t)AL->rowptr[n] + (AG ? AG->rowptr[n] : 0);
    if (nnz > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "more than 2^31 entries in a rank's rows");
    KS_TRY(ks_csr_alloc(M, n, ks_gmap_size(fm), (ks_int)nnz));
    /* row i starts after both blocks' rows before it */
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++) {
        ks_int m = AL->rowptr[i] + (AG ? AG->rowptr[i] : 0), g = AG ? AG->rowptr[i] : 0;
        M->rowptr[i + 1] = AL->rowptr[i + 1] + (AG ? AG->rowptr[i + 1] : 0);
        const ks_int g1 = AG ? AG->rowptr[i + 1] : 0;
        for (; g < g1 && AG->colind[g] < nb; g++) {
            M->colind[m] = AG->colind[g];
            M->val[m++] = AG->val[g];
        }
        for (ks_int k = AL->rowptr[i]; k < AL->rowptr[i + 1]; k++) {
            M->colind[m] = nb + AL->colind[k];
            M->val[m++] = AL->val[k];
        }
        for (; g < g1; g++) {
            M->colind[m] = AG->colind[g] + nloc;
            M->val[m++] = AG->val[g];
        }
    }
    return KS_OK;
}

void ks_dist_compact_free(ks_dist_compact *X)
{
    if (!X)
        return;
    ks_csr_free(&X->T);
    ks_sparse_free(&X->dT);
    ks_gmap_free(&X->cols);
    memset(X, 0, sizeof *X);
}

/* The product on the local views, its columns compact over AP->cols. */
static ks_error product(ks_backend *be, const ks_csr *AL, const ks_csr *AG, const ks_dist_impl *d,
                        const ks_dist_prows *P, const ks_dist_ghost_prows *G, int entries,
                        ks_dist_compact *AP)
{
    ks_gmap fm;
    const int64_t np = P->nloc ? P->rowptr[P->nloc] : 0, ng = G->n ? G->rowptr[G->n] : 0;
    double t = ks_wtime();
    ks_error e = ks_gmap_borrow(P->row_begin, P->row_begin + P->nloc, d->ghost_gid, d->nghost,
                                &fm);
    if (e == KS_OK)
        e = ks_gmap_make(P->c_begin, P->c_begin + P->nc, P->col, np, G->col, ng, &AP->cols);
    ks_amg_dist_substep(NULL, "A P: column maps", &t);
    /* Without ghost columns (one rank) the merged rows are A's local block
     * itself: read in place, not copied. */
    const int alone = fm.next == 0 && (!AG || AG->rowptr[AG->nrows] == 0);
    ks_csr M = {0};
    if (e == KS_OK && !alone)
        e = merge_blocks(AL, AG, &fm, &M);
    ks_amg_dist_substep(NULL, "A P: merge A's blocks", &t);
    if (e == KS_OK)
        e = ks_local_product_compact(be, alone ? AL : &M, G, &fm, P->rowptr, P->col, P->val,
                                     &AP->cols, &AP->T, &AP->dT, entries);
    ks_csr_free(&M);
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
    const ks_csr *AL = ks_matrix_host_csr(md->local);
    const ks_csr *AG = md->ghost ? ks_matrix_host_csr(md->ghost) : NULL;
    ks_error e = KS_OK;
    if (!AL || (md->ghost && !AG))
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix's values are not available on the host", who);
    /* A may be rectangular (an interpolation: P1 P2 of aggressive
     * coarsening); P's rows are laid out as A's columns */
    AP->row_begin = md->offsets[c->rank];
    AP->nrows_global = md->offsets[c->size];
    AP->ncols_global = P->nc_global;
    const ks_int nrows = (ks_int)(md->offsets[c->rank + 1] - md->offsets[c->rank]);
    if (e == KS_OK && AG && (AG->nrows != nrows || AG->ncols != d->nghost))
        e = ks_seterr(KS_ERR_ARG, "%s: the matrix's ghost block is not its ghost map's", who);
    if (e == KS_OK)
        e = product(ks_matrix_backend(A), AL, AG, d, P, &G, entries, AP);
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
    return merge_blocks(AL, AG, fm, M);
}
