/* The distributed Galerkin product Ac = R (A P) kept for re-setup: the
 * first product of a level (ks_dist_rap_plan_make) runs the steps of
 * ap_dist.c and rap_dist.c (the same pieces, so the same bits) and keeps
 * what depends on the patterns only: the rows P and A P fetch (their
 * lengths; the plans they travel through: A's own halo plan, and the plan
 * over R's ghost fine columns, made once here), the compact local
 * operands and both products' patterns. Later products
 * (ks_dist_rap_plan_numeric) send values only through the kept plans,
 * refill the operands' values and run the numeric spgemm pass into the
 * kept patterns, which adds in the symbolic product's order: the bits of
 * a fresh product of the same values. */
#include "rap_dist.h"
#include "../sparse/cpu/csr_kernels.h"

#include <string.h>

void ks_dist_rap_plan_free(ks_dist_rap_plan *pl)
{
    if (!pl)
        return;
    free(pl->pg_rowptr);
    ks_csr_free(&pl->B);
    ks_csr_free(&pl->T);
    free(pl->ap_col);
    ks_gmap_free(&pl->fm);
    ks_halo_destroy(pl->h);
    free(pl->ag_rowptr);
    ks_csr_free(&pl->Rm);
    ks_csr_free(&pl->B2);
    ks_csr_free(&pl->T2);
    free(pl->ac_col);
    memset(pl, 0, sizeof *pl);
}

/* out[k] = the global id of compact column T->colind[k]. */
static ks_error global_cols(const ks_csr *T, const ks_gmap *m, ks_gint **out)
{
    *out = ks_malloc((size_t)T->nnz * sizeof **out + 1, "kept global columns");
    if (!*out)
        return KS_ERR_MEMORY;
#pragma omp parallel for schedule(static)
    for (ks_int k = 0; k < T->nnz; k++)
        (*out)[k] = ks_gmap_gid(m, T->colind[k]);
    return KS_OK;
}

/* Ac: a view of the kept product (rows R's, global columns). */
static void ac_view(const ks_dist_rap_plan *pl, const ks_dist_prows *R, ks_gint ncols_global,
                    ks_dist_csr *Ac)
{
    memset(Ac, 0, sizeof *Ac);
    Ac->nrows = R->nloc;
    Ac->nnz = pl->T2.nnz;
    Ac->row_begin = R->row_begin;
    Ac->nrows_global = ncols_global;
    Ac->ncols_global = ncols_global;
    Ac->rowptr = pl->T2.rowptr;
    Ac->colind = pl->ac_col;
    Ac->val = pl->T2.val;
}

/* A P (ap_dist.c's steps), kept. Local after the fetch. */
static ks_error make_ap(const ks_matrix *A, const ks_dist_prows *P, ks_dist_rap_plan *pl)
{
    const ks_dist_impl *d = (const ks_dist_impl *)A->dist;
    ks_dist_ghost_prows G;
    KS_TRY(ks_dist_fetch_prows(A, P, &G));
    const ks_csr *AL = ks_matrix_host_csr(d->base.local);
    const ks_csr *AG = d->base.ghost ? ks_matrix_host_csr(d->base.ghost) : NULL;
    ks_gmap fm, cm = {0};
    ks_gmap_borrow(P->row_begin, P->row_begin + P->nloc, d->ghost_gid, d->nghost, &fm);
    pl->pg_nb = fm.nbelow;
    const int64_t np = P->nloc ? P->rowptr[P->nloc] : 0, ng = G.n ? G.rowptr[G.n] : 0;
    ks_csr M = {0};
    ks_error e = !AL || (d->base.ghost && !AG)
                     ? ks_seterr(KS_ERR_MEMORY, "host copy of the level's blocks")
                     : ks_gmap_make(P->c_begin, P->c_begin + P->nc, P->col, np, G.col, ng, &cm);
    /* without ghost columns the merged rows are AL itself (ap_dist.c) */
    const int alone = fm.next == 0 && (!AG || AG->rowptr[AG->nrows] == 0);
    if (e == KS_OK && !alone)
        e = ks_dist_merge_blocks(AL, AG, &fm, &M);
    if (e == KS_OK)
        e = ks_stack_rows(&G, &fm, P->rowptr, P->col, P->val, &cm, &pl->B);
    if (e == KS_OK)
        e = ks_csr_spgemm(alone ? AL : &M, &pl->B, &pl->T);
    if (e == KS_OK)
        e = global_cols(&pl->T, &cm, &pl->ap_col);
    pl->pg_rowptr = G.rowptr;
    G.rowptr = NULL;
    ks_dist_ghost_prows_free(&G);
    ks_csr_free(&M);
    ks_gmap_free(&cm);
    return e;
}

/* R (A P) (rap_dist.c's steps), kept; A P's rows are pl->T's. */
static ks_error make_ptap(const ks_comm *c, const ks_dist_prows *R, const ks_gint *foff,
                          ks_dist_rap_plan *pl)
{
    const ks_csr *T = &pl->T;
    const int64_t nr = R->nloc ? R->rowptr[R->nloc] : 0;
    ks_dist_ghost_prows G = {0};
    ks_gmap cm = {0}, rm;
    ks_error e = ks_comm_agree(c, ks_gmap_make(R->c_begin, R->c_begin + R->nc, R->col, nr, NULL,
                                               0, &pl->fm));
    if (e == KS_OK)
        e = ks_halo_create(c, foff, pl->fm.ext, pl->fm.next, &pl->h);
    if (e == KS_OK)
        e = ks_dist_fetch_grows(c, pl->h, T->nrows, T->rowptr, pl->ap_col, T->val, pl->fm.next,
                                &G);
    if (e != KS_OK)
        return e;
    const ks_int zero = 0;
    const ks_dist_ghost_prows none = {.n = 0, .rowptr = (ks_int *)&zero};
    ks_gmap_borrow(R->row_begin, R->row_begin + R->nloc, NULL, 0, &rm);
    e = ks_gmap_make(R->row_begin, R->row_begin + R->nloc, pl->ap_col, T->nnz, G.col,
                     G.rowptr[G.n], &cm);
    if (e == KS_OK)
        e = ks_stack_rows(&none, &rm, R->rowptr, R->col, R->val, &pl->fm, &pl->Rm);
    if (e == KS_OK)
        e = ks_stack_rows(&G, &pl->fm, T->rowptr, pl->ap_col, T->val, &cm, &pl->B2);
    if (e == KS_OK)
        e = ks_csr_spgemm(&pl->Rm, &pl->B2, &pl->T2);
    if (e == KS_OK)
        e = global_cols(&pl->T2, &cm, &pl->ac_col);
    pl->ag_rowptr = G.rowptr;
    G.rowptr = NULL;
    ks_dist_ghost_prows_free(&G);
    ks_gmap_free(&cm);
    return ks_comm_agree(c, e);
}

ks_error ks_dist_rap_plan_make(const ks_matrix *A, const ks_dist_prows *P,
                               const ks_dist_prows *R, ks_dist_rap_plan *pl, ks_dist_csr *Ac)
{
    const ks_comm *c = ks_matrix_comm(A);
    ks_dist_rap_plan_free(pl);
    ks_error e = ks_comm_agree(c, make_ap(A, P, pl));
    if (e == KS_OK)
        e = make_ptap(c, R, A->dist->offsets, pl);
    if (e != KS_OK) {
        ks_dist_rap_plan_free(pl);
        return ks_adderr(e, "distributed RAP (kept for re-setup)");
    }
    pl->made = 1;
    ac_view(pl, R, P->nc_global, Ac);
    return KS_OK;
}

/* Values only: row i's values. */
typedef struct vrows {
    const ks_int *rowptr;
    const double *val;
} vrows;

static ks_int pack_values(const void *ctx, ks_int i, void *out)
{
    const vrows *v = ctx;
    const ks_int b = v->rowptr[i], n = v->rowptr[i + 1] - b;
    if (out)
        memcpy(out, v->val + b, (size_t)n * sizeof(double));
    return n;
}

/* The values of the rows of (rowptr, val) that the neighbours ghost,
 * through plan h (nghost rows here, kept lengths kept_rp); then B's values
 * as ks_stack_rows stacks them: the fetched rows below this rank's
 * (the first nb), its own rows' values `own` (nown_nnz), the rest. A
 * fetched row of another length than kept is an error (its pattern
 * changed). Collective (agreed). */
static ks_error refill(const ks_comm *c, const ks_halo *h, ks_int nown, const ks_int *rowptr,
                       const double *val, ks_int nghost, const ks_int *kept_rp, ks_int nb,
                       ks_csr *B)
{
    const vrows v = {rowptr, val};
    ks_int *rp = NULL;
    double *in = NULL;
    ks_error e = ks_halo_rows_fetch(c, h, nown, nghost, sizeof(double), pack_values, &v, &rp,
                                    (void **)&in);
    if (e == KS_OK) {
        const ks_int below = kept_rp[nb], ng = kept_rp[nghost], nown_nnz = rowptr[nown];
        if (memcmp(rp, kept_rp, ((size_t)nghost + 1) * sizeof *rp) || below + nown_nnz +
                                                                       (ng - below) != B->nnz)
            e = ks_seterr(KS_ERR_ARG, "fetched rows of another pattern than the kept one");
        if (e == KS_OK) {
            memcpy(B->val, in, (size_t)below * sizeof *in);
            memcpy(B->val + below, val, (size_t)nown_nnz * sizeof *val);
            memcpy(B->val + below + nown_nnz, in + below, (size_t)(ng - below) * sizeof *in);
        }
    }
    free(rp);
    free(in);
    return ks_comm_agree(c, e);
}

ks_error ks_dist_rap_plan_numeric(const ks_matrix *A, const ks_dist_prows *P,
                                  const ks_dist_prows *R, ks_dist_rap_plan *pl, ks_dist_csr *Ac)
{
    const ks_comm *c = ks_matrix_comm(A);
    const ks_dist_impl *d = (const ks_dist_impl *)A->dist;
    const ks_int nr = R->nloc ? R->rowptr[R->nloc] : 0;
    ks_error e = pl->made && nr == pl->Rm.nnz
                     ? KS_OK
                     : ks_seterr(KS_ERR_ARG, "no kept product of R's pattern");
    e = ks_comm_agree(c, e);
    if (e == KS_OK)
        e = refill(c, d->halo, P->nloc, P->rowptr, P->val, d->nghost, pl->pg_rowptr, pl->pg_nb,
                   &pl->B);
    const ks_csr *AL = ks_matrix_host_csr(d->base.local);
    const ks_csr *AG = d->base.ghost ? ks_matrix_host_csr(d->base.ghost) : NULL;
    ks_csr M = {0};
    if (e == KS_OK) {
        ks_gmap fm;
        ks_gmap_borrow(P->row_begin, P->row_begin + P->nloc, d->ghost_gid, d->nghost, &fm);
        const int alone = fm.next == 0 && (!AG || AG->rowptr[AG->nrows] == 0);
        e = !AL || (d->base.ghost && !AG)
                ? ks_seterr(KS_ERR_MEMORY, "host copy of the level's blocks")
                : KS_OK;
        if (e == KS_OK && !alone)
            e = ks_dist_merge_blocks(AL, AG, &fm, &M);
        if (e == KS_OK)
            e = ks_csr_spgemm_numeric(alone ? AL : &M, &pl->B, &pl->T);
        e = ks_comm_agree(c, e);
    }
    ks_csr_free(&M);
    if (e == KS_OK)
        e = refill(c, pl->h, pl->T.nrows, pl->T.rowptr, pl->T.val, pl->fm.next, pl->ag_rowptr,
                   pl->fm.nbelow, &pl->B2);
    if (e == KS_OK) {
        memcpy(pl->Rm.val, R->val, (size_t)nr * sizeof *R->val);
        e = ks_comm_agree(c, ks_csr_spgemm_numeric(&pl->Rm, &pl->B2, &pl->T2));
    }
    if (e != KS_OK)
        return ks_adderr(e, "distributed RAP values (re-setup)");
    ac_view(pl, R, P->nc_global, Ac);
    return KS_OK;
}
