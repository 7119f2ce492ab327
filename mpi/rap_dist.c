/* Ac = P^T (A P) over the ranks, as R (A P) with R = P^T
 * (transpose_dist.c): row J of Ac belongs to the owner of coarse point J
 * (P's coarse layout), which holds R's row J (fine columns ascending) and
 * needs A P's rows of those columns: its own, and the others' fetched
 * from their owners through a halo plan over R's ghost fine columns, so
 * only rows near the rank boundaries travel, once per neighbour. The
 * product is then local: a spgemm on compact views (local_rows.c), on the
 * device when the level lives there (the cpu product's bits but with
 * KS_SPGEMM=cusparse). The setup's path (ks_dist_rap_split) keeps A P as
 * the first spgemm left it, compact over its own map: its columns reach the
 * second map through a table, and only the rows other ranks fetch are
 * written with global ids; the product's compact rows are split straight
 * into the coarse matrix's blocks (its map's range is the coarse rows'),
 * not written with global ids for ks_matrix_create_dist to hash back; on a
 * device the product stays there and is split there. R is given as host
 * rows (ks_dist_rap_split) or, on a device, as its distributed matrix
 * (ks_dist_rap_split_m), whose two blocks merged there are the same rows.
 *
 * Determinism: spgemm starts each Ac(J,c) at 0.0 and adds R(J,i) AP(i,c)
 * in R's row order, ascending global fine rows i, which is the order of
 * ks_csr_spgemm(P^T, A P) on the global matrices, and R(J,i) AP(i,c) is
 * P(i,J) AP(i,c) bit for bit. Each AP(i,c) being the serial bits too
 * (ap_dist.c), Ac equals the serial spgemm(P^T, A P) bit for bit, in every
 * run and for any rank or thread count. */
#include "rap_dist.h"
#include "../amg/hierarchy.h"

#include <stdint.h>
#include <string.h>


/* A P's rows as the product reads them: global columns (gcol), or
 * compact ones (X: ks_dist_ap_compact's). */
typedef struct ap_rows {
    ks_int nrows;
    const ks_int *rowptr;
    const ks_gint *gcol;
    const double *val;
    ks_gint ncols_global;
    const ks_dist_compact *X;
} ap_rows;

#define KS_RAP_MAX_THREADS 256

/* The ids of map xm's used numbers outside [lo, hi) into ids, ascending
 * (the map's order); returns their count. Threads take static chunks:
 * each counts its chunk's, the counts are scanned, then each writes its
 * chunk's at its offset. */
static int64_t used_outside(const ks_gmap *xm, const unsigned char *used, ks_gint lo, ks_gint hi,
                            ks_gint *ids)
{
    const ks_int nx = ks_gmap_size(xm);
    int nt = ks_threads_for(nx, 65536, KS_RAP_MAX_THREADS);
    int64_t at[KS_RAP_MAX_THREADS + 1], total = 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t, nth;
        ks_thread_me(&t, &nth);
        const ks_int b = (ks_int)((int64_t)nx * t / nth), e = (ks_int)((int64_t)nx * (t + 1) / nth);
        int64_t c = 0;
        for (ks_int k = b; k < e; k++) {
            const ks_gint g = used[k] ? ks_gmap_gid(xm, k) : lo;
            c += g < lo || g >= hi;
        }
        at[t + 1] = c;
#pragma omp barrier
#pragma omp single
        {
            at[0] = 0;
            for (int q = 1; q <= nth; q++)
                at[q] += at[q - 1];
            total = at[nth];
        }
        int64_t w = at[t];
        for (ks_int k = b; k < e; k++) {
            const ks_gint g = used[k] ? ks_gmap_gid(xm, k) : lo;
            if (g < lo || g >= hi)
                ids[w++] = g;
        }
    }
    return total;
}

/* The map of the product's columns: the range [lo, hi) and every other id
 * of AP's rows and the fetched ones G. For compact rows also *tab: each
 * number of X's map that AP's rows use as a number of the new map (-1:
 * unused). When X's map has the same range (the setup's: both are this
 * rank's coarse points), all its ids go into the new map, used or not, so
 * no pass over AP's entries looks for the used ones: an id no row uses
 * numbers a column that no entry of the product has, and the product's
 * entries, their order and sums, and the blocks split from it (which
 * number only the ghosts the rows use) are the same. */
static ks_error product_cols(const ap_rows *AP, const ks_dist_ghost_prows *G, ks_gint lo,
                             ks_gint hi, ks_gmap *cm, ks_int **tab)
{
    const int64_t ng = G->rowptr[G->n];
    if (!AP->X) {
        const int64_t na = AP->nrows ? AP->rowptr[AP->nrows] : 0;
        return ks_gmap_make(lo, hi, AP->gcol, na, G->col, ng, cm);
    }
    const ks_csr *T = &AP->X->T;
    const ks_gmap *xm = &AP->X->cols;
    const ks_int nx = ks_gmap_size(xm);
    if (xm->lo == lo && xm->hi == hi) {
        *tab = ks_malloc(((size_t)nx + 1) * sizeof **tab, "compact column table");
        ks_error e = *tab ? ks_gmap_make(lo, hi, xm->ext, xm->next, G->col, ng, cm)
                          : KS_ERR_MEMORY;
        if (e == KS_OK) {
#pragma omp parallel for schedule(static)
            for (ks_int k = 0; k < nx; k++)
                (*tab)[k] = ks_gmap_find(cm, ks_gmap_gid(xm, k));
        }
        return e;
    }
    if (!T->colind) /* ks_dist_ap_compact_device's rows: for R = P^T only */
        return ks_seterr(KS_ERR_ARG, "A P's entries are on the device only, and its column map "
                         "is not the product's rows' range");
    unsigned char *used = ks_calloc((size_t)nx + 1, 1, "used compact columns");
    ks_gint *ids = ks_malloc(((size_t)nx + 1) * sizeof *ids, "used column ids");
    *tab = ks_malloc(((size_t)nx + 1) * sizeof **tab, "compact column table");
    ks_error e = used && ids && *tab ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK) {
#pragma omp parallel for schedule(static)
        for (ks_int k = 0; k < T->nnz; k++) {
#pragma omp atomic write
            used[T->colind[k]] = 1;
        }
    }
    int64_t n = 0; /* the used ids outside the range, ascending */
    if (e == KS_OK)
        n = used_outside(xm, used, lo, hi, ids);
    if (e == KS_OK)
        e = ks_gmap_make(lo, hi, ids, n, G->col, ng, cm);
    if (e == KS_OK) {
#pragma omp parallel for schedule(static)
        for (ks_int k = 0; k < nx; k++)
            (*tab)[k] = used[k] ? ks_gmap_find(cm, ks_gmap_gid(xm, k)) : -1;
    }
    free(used);
    free(ids);
    return e;
}

/* Where the product goes: rows with global columns (Ac), or split into
 * a distributed matrix's blocks (S). */
typedef struct ptap_out {
    ks_dist_csr *Ac;
    ks_dist_split *S;
} ptap_out;

/* The product T (compact columns of cm; T and cm are taken) as out asks.
 * The split is made from the compact columns where every row ascends with
 * finite values (as the spgemm makes them), else through global columns
 * and ks_dist_csr_split, which sorts the rows and describes a bad value
 * as ks_matrix_create_dist would. A product left on the device (dT, taken)
 * is split there, its blocks staying there; where that split refuses it,
 * or rows with global columns are asked for, it is downloaded into T. */
static ks_error finish(const ks_comm *c, ks_csr *T, ks_sparse *dT, const ks_gmap *cm,
                       ks_gint row_begin, ks_gint ncols, const ptap_out *out)
{
    double t = ks_wtime();
    ks_error e = KS_OK;
    int refused = 1;
    const int on_device = dT->be != NULL;
    if (on_device && out->S) {
        e = ks_compact_split_device(dT, cm, &refused, out->S);
        ks_amg_dist_substep(c, "product split into blocks on the device", &t);
    }
    if (on_device && e == KS_OK && refused) {
        ks_csr_free(T);
        e = ks_sparse_to_csr(dT, T);
        ks_amg_dist_substep(c, "product download", &t);
        if (e == KS_OK && out->S)
            e = ks_compact_split(T, cm, &refused, out->S);
    } else if (!on_device && out->S) {
        e = ks_compact_split(T, cm, &refused, out->S);
    }
    ks_sparse_free(dT);
    if (out->S && !on_device)
        ks_amg_dist_substep(c, "product split into blocks", &t);
    if (e != KS_OK || !refused) {
        ks_csr_free(T);
        return e;
    }
    ks_dist_csr G = {0}, *Ac = out->S ? &G : out->Ac;
    e = ks_compact_to_global(T, cm, row_begin, ncols, ncols, Ac);
    ks_amg_dist_substep(c, "product to global columns", &t);
    if (e == KS_OK && out->S) {
        e = ks_dist_csr_split(c->rank, row_begin, ncols, G.nrows, G.rowptr, G.colind, G.val,
                              out->S);
        free(out->S->entry_pos);
        out->S->entry_pos = NULL;
    }
    ks_dist_csr_free(&G);
    return e;
}

/* R's side of R (A P): its host rows with global fine columns (R), or R
 * as a distributed matrix whose blocks live on the device (M: the setup's
 * path there, R's rows merged where they live). Rows row_begin .. + nloc
 * - 1 (coarse), owned columns f_begin .. + nf - 1 (fine). */
typedef struct r_side {
    const ks_comm *comm;
    const ks_dist_prows *R;
    const ks_matrix *M;
    ks_gint row_begin, f_begin;
    ks_int nloc, nf;
} r_side;

/* R (A P) for R's rows here, with AP's rows of R's ghost fine columns
 * fetched. Collective. */
static ks_error ptap_rows(ks_backend *be, const ks_comm *c, const r_side *rs, const ap_rows *AP,
                          const ks_gint *foff, const ptap_out *out)
{
    const ks_dist_prows *R = rs->R;
    const ks_dist_impl *md = rs->M ? (const ks_dist_impl *)rs->M->dist : NULL;
    const int64_t nr = R && R->nloc ? R->rowptr[R->nloc] : 0;
    ks_gmap fm, cm = {0};
    ks_halo *h = NULL;
    ks_dist_ghost_prows G = {0};
    double t = ks_wtime();
    ks_error e = ks_comm_agree(
        c, R ? ks_gmap_make(rs->f_begin, rs->f_begin + rs->nf, R->col, nr, NULL, 0, &fm)
             : ks_gmap_borrow(rs->f_begin, rs->f_begin + rs->nf, md->ghost_gid, md->nghost,
                              &fm));
    if (e == KS_OK)
        e = ks_halo_create(c, foff, fm.ext, fm.next, &h);
    if (e == KS_OK)
        e = !AP->X           ? ks_dist_fetch_grows(c, h, AP->nrows, AP->rowptr, AP->gcol,
                                                   AP->val, fm.next, &G)
            : AP->X->T.colind ? ks_dist_fetch_grows_compact(c, h, &AP->X->T, &AP->X->cols,
                                                            fm.next, &G)
                              : ks_dist_fetch_grows_device(c, h, &AP->X->dT, &AP->X->cols,
                                                           fm.next, &G);
    ks_halo_destroy(h);
    ks_amg_dist_substep(c, "R (A P): fetch A P's rows", &t);
    if (e != KS_OK) {
        ks_gmap_free(&fm);
        return e;
    }
    ks_int *tab = NULL;
    e = product_cols(AP, &G, rs->row_begin, rs->row_begin + rs->nloc, &cm, &tab);
    ks_amg_dist_substep(c, "R (A P): column map", &t);
    /* A P's own rows still on the device (the first product's): stacked
     * there, so they are neither copied on the host nor uploaded again */
    const int on_device = AP->X && AP->X->dT.be && tab;
    ks_csr Rm = {0}, B = {0};
    ks_sparse dR = {0};
    ks_int zero = 0;
    const ks_dist_ghost_prows none = {.n = 0, .rowptr = &zero};
    ks_gmap rm = {0};
    if (e == KS_OK && R) /* no ext ids: nothing allocated */
        e = ks_gmap_borrow(rs->row_begin, rs->row_begin + rs->nloc, NULL, 0, &rm);
    if (e == KS_OK && R)
        e = ks_stack_rows(&none, &rm, R->rowptr, R->col, R->val, &fm, &Rm);
    else if (e == KS_OK) /* R's blocks merged where they live: the same rows */
        e = ks_sparse_merge_blocks(ks_matrix_sparse(md->base.local),
                                   md->base.ghost ? ks_matrix_sparse(md->base.ghost) : NULL,
                                   fm.nbelow, &dR);
    if (e == KS_OK && !R && !on_device) { /* host memory: the merged rows read in place */
        e = ks_backend_host_memory(dR.be) ? KS_OK
                                          : ks_seterr(KS_ERR_ARG, "R's blocks on a device, A P "
                                                      "on the host");
        Rm = ks_sparse_as_csr(&dR);
    }
    ks_sparse dB = {0};
    if (e == KS_OK && on_device)
        e = ks_stack_rows_device(be, &G, fm.nbelow, &AP->X->dT, tab, &cm, &dB);
    else if (e == KS_OK)
        e = AP->X ? ks_stack_rows_mapped(&G, &fm, AP->rowptr, AP->X->T.colind, tab, AP->val, &cm,
                                         &B)
                  : ks_stack_rows(&G, &fm, AP->rowptr, AP->gcol, AP->val, &cm, &B);
    free(tab);
    if (e == KS_OK && !R && ks_amg_tracing()) /* the device steps' own time */
        e = ks_backend_sync(be);
    ks_amg_dist_substep(c, "R (A P): stack R's and A P's rows", &t);
    ks_csr T = {0};
    ks_sparse dT = {0}; /* the product, where it stays on the device (split there) */
    if (e == KS_OK)
        e = on_device ? ks_local_spgemm_device(be, R ? &Rm : NULL, R ? NULL : &dR, &dB, &T,
                                               out->S ? &dT : NULL)
                      : ks_local_spgemm(be, &Rm, &B, &T);
    ks_sparse_free(&dB);
    if (!R) /* Rm viewed dR's arrays, if anything */
        memset(&Rm, 0, sizeof Rm);
    ks_sparse_free(&dR);
    ks_csr_free(&Rm);
    ks_csr_free(&B);
    if (e == KS_OK)
        e = finish(c, &T, &dT, &cm, rs->row_begin, AP->ncols_global, out);
    ks_sparse_free(&dT);
    ks_csr_free(&T);
    ks_dist_ghost_prows_free(&G);
    ks_gmap_free(&cm);
    ks_gmap_free(&fm);
    return ks_comm_agree(c, e);
}

/* ks_dist_ptap_r's checks of AP's rows (nrows, first row) against R. */
static ks_error ptap_check(ks_backend *be, const char *who, const r_side *rs, const ap_rows *AP,
                           ks_gint ap_row_begin, const ks_gint *foff, const ptap_out *out)
{
    if (!out->Ac && !out->S)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    if (out->Ac)
        memset(out->Ac, 0, sizeof *out->Ac);
    if (out->S)
        memset(out->S, 0, sizeof *out->S);
    if (!rs->comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL or empty R", who);
    const ks_comm *c = rs->comm;
    ks_error e = KS_OK;
    if (!AP || !foff || AP->nrows != rs->nf || ap_row_begin != rs->f_begin ||
        ap_row_begin != foff[c->rank] || (AP->nrows > 0 && !AP->rowptr) ||
        (rs->R && rs->nloc > 0 && !rs->R->rowptr))
        e = ks_seterr(KS_ERR_ARG, "%s: A P's rows are not R's columns", who);
    e = ks_comm_agree(c, e);
    if (e == KS_OK)
        e = ptap_rows(be, c, rs, AP, foff, out);
    if (e != KS_OK) {
        if (out->Ac)
            ks_dist_csr_free(out->Ac);
        if (out->S)
            ks_dist_split_free(out->S);
        return ks_adderr(e, "%s", who);
    }
    return KS_OK;
}

/* R's side from its host rows (NULL: an empty side, refused). */
static r_side side_of(const ks_dist_prows *R)
{
    r_side rs = {0};
    if (R && R->comm)
        rs = (r_side){R->comm, R, NULL, R->row_begin, R->c_begin, R->nloc, R->nc};
    return rs;
}

static ks_error ptap_compact(ks_backend *be, const r_side *rs, const ks_dist_compact *AP,
                             const ks_gint *foff, const ptap_out *out)
{
    if (!AP)
        return ptap_check(be, "distributed P^T (A P)", rs, NULL, 0, foff, out);
    const ap_rows ar = {AP->T.nrows, AP->T.rowptr, NULL, AP->T.val, AP->ncols_global, AP};
    return ptap_check(be, "distributed P^T (A P)", rs, &ar, AP->row_begin, foff, out);
}

ks_error ks_dist_ptap_r_compact(ks_backend *be, const ks_dist_prows *R, const ks_dist_compact *AP,
                                const ks_gint *foff, ks_dist_csr *Ac)
{
    const ptap_out out = {Ac, NULL};
    const r_side rs = side_of(R);
    return ptap_compact(be, &rs, AP, foff, &out);
}

ks_error ks_dist_ptap_r(const ks_dist_prows *R, const ks_dist_csr *AP, const ks_gint *foff,
                        ks_dist_csr *Ac)
{
    const ptap_out out = {Ac, NULL};
    const r_side rs = side_of(R);
    if (!AP)
        return ptap_check(NULL, "distributed P^T (A P)", &rs, NULL, 0, foff, &out);
    const ap_rows ar = {AP->nrows, AP->rowptr, AP->colind, AP->val, AP->ncols_global, NULL};
    return ptap_check(NULL, "distributed P^T (A P)", &rs, &ar, AP->row_begin, foff, &out);
}

ks_error ks_dist_ptap(const ks_dist_prows *P, const ks_dist_csr *AP, ks_dist_csr *Ac)
{
    static const char who[] = "distributed P^T (A P)";
    if (!Ac)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", who);
    memset(Ac, 0, sizeof *Ac);
    if (!P || !P->comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL or empty P", who);
    const ks_comm *c = P->comm;
    ks_error e = KS_OK;
    if (!AP || AP->nrows != P->nloc || AP->row_begin != P->row_begin ||
        AP->ncols_global != P->nc_global || (P->nloc > 0 && (!AP->rowptr || !P->rowptr)))
        e = ks_seterr(KS_ERR_ARG, "%s: A P's rows are not P's", who);
    e = ks_comm_agree(c, e);
    ks_gint *coff = NULL, *foff = NULL;
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_layout_gather(c, P->nc, &coff));
    if (e == KS_OK && (coff[c->rank] != P->c_begin || coff[c->size] != P->nc_global))
        e = ks_seterr(KS_ERR_ARG, "%s: P's coarse layout is not its ranks' C counts", who);
    e = ks_comm_agree(c, e);
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_layout_gather(c, P->nloc, &foff));
    ks_dist_prows R = {0};
    if (e == KS_OK)
        e = ks_dist_prows_transpose(P, foff, coff, &R);
    if (e == KS_OK)
        e = ks_dist_ptap_r(&R, AP, foff, Ac);
    ks_dist_prows_free(&R);
    free(coff);
    free(foff);
    return e;
}

ks_error ks_dist_rap(const ks_matrix *A, const ks_dist_prows *P, ks_dist_csr *Ac)
{
    if (!Ac)
        return ks_seterr(KS_ERR_ARG, "distributed RAP: NULL output");
    memset(Ac, 0, sizeof *Ac);
    ks_dist_csr AP;
    KS_TRY(ks_dist_ap(A, P, &AP));
    const ks_error e = ks_dist_ptap(P, &AP, Ac);
    ks_dist_csr_free(&AP);
    return e == KS_OK ? KS_OK : ks_adderr(e, "distributed RAP");
}

ks_error ks_dist_rap_r(const ks_matrix *A, const ks_dist_prows *P, const ks_dist_prows *R,
                       ks_dist_csr *Ac)
{
    if (!Ac)
        return ks_seterr(KS_ERR_ARG, "distributed RAP: NULL output");
    memset(Ac, 0, sizeof *Ac);
    ks_dist_compact AP; /* kept compact: the second product compacts its columns anyway */
    KS_TRY(ks_dist_ap_compact_device(A, P, &AP));
    const ks_error e = ks_dist_ptap_r_compact(ks_matrix_backend(A), R, &AP, A->dist->offsets, Ac);
    ks_dist_compact_free(&AP);
    return e == KS_OK ? KS_OK : ks_adderr(e, "distributed RAP");
}

/* Both products, the coarse rows split into blocks, R's side as given. */
static ks_error rap_split(const ks_matrix *A, const ks_dist_prows *P, const r_side *rs,
                          ks_dist_split *S)
{
    ks_dist_compact AP;
    KS_TRY(ks_dist_ap_compact_device(A, P, &AP));
    const ptap_out out = {NULL, S};
    const ks_error e = ptap_compact(ks_matrix_backend(A), rs, &AP, A->dist->offsets, &out);
    ks_dist_compact_free(&AP);
    return e == KS_OK ? KS_OK : ks_adderr(e, "distributed RAP");
}

ks_error ks_dist_rap_split(const ks_matrix *A, const ks_dist_prows *P, const ks_dist_prows *R,
                           ks_dist_split *S)
{
    if (!S)
        return ks_seterr(KS_ERR_ARG, "distributed RAP: NULL output");
    memset(S, 0, sizeof *S);
    const r_side rs = side_of(R);
    return rap_split(A, P, &rs, S);
}

ks_error ks_dist_rap_split_m(const ks_matrix *A, const ks_dist_prows *P, const ks_matrix *Rm,
                             ks_dist_split *S)
{
    if (!S)
        return ks_seterr(KS_ERR_ARG, "distributed RAP: NULL output");
    memset(S, 0, sizeof *S);
    if (!Rm || !Rm->dist || !Rm->dist->col_offsets || Rm->dist->ops != A->dist->ops)
        return ks_seterr(KS_ERR_ARG, "distributed RAP: R is not a distributed transfer matrix");
    const ks_matrix_dist *rd = Rm->dist;
    const ks_comm *c = rd->comm;
    const int me = c->rank;
    const r_side rs = {c, NULL, Rm, rd->offsets[me], rd->col_offsets[me],
                       (ks_int)(rd->offsets[me + 1] - rd->offsets[me]),
                       (ks_int)(rd->col_offsets[me + 1] - rd->col_offsets[me])};
    return rap_split(A, P, &rs, S);
}
