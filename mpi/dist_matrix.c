/* ks_matrix_create_dist: a rank's rows with global columns become a
 * distributed ks_matrix. The steps that can fail on some ranks only (the
 * arguments, the rows' checks, the blocks' formats) each end in an
 * agreement over the ranks, so every rank returns the same error and the
 * next collective runs only when every rank got there. */
#include "mpi_internal.h"
#include "amg_dist.h" /* ks_amg_dist_substep: the setup trace's substeps */

#include <stdlib.h>
#include <string.h>

static void dist_destroy(ks_matrix_dist *base)
{
    ks_dist_impl *d = (ks_dist_impl *)base;
    ks_matrix_destroy(&base->local);
    ks_matrix_destroy(&base->ghost);
    free(base->offsets);
    free(base->col_offsets);
    ks_halo_destroy(d->halo);
    ks_vec_destroy(&d->xghost);
    ks_vec_destroy(&d->gs_rhs);
    free(d->ghost_gid);
    free(d->entry_pos);
    free(d);
}

static const ks_dist_ops mpi_dist_ops = {
    .apply = ks_dist_apply,
    .set_values = ks_dist_set_values,
    .gs_sweep = ks_dist_gs_sweep,
    .fused_step = ks_dist_fused_step,
    .destroy = dist_destroy,
};

static ks_error check_args(ks_backend *be, ks_int nloc, ks_gint ncols, const ks_int *rowptr,
                           const ks_gint *colind, const double *val)
{
    if (!be)
        return ks_seterr(KS_ERR_ARG, "NULL backend");
    if (!be->ops->gather)
        return ks_seterr(KS_ERR_UNSUPPORTED,
                         "distributed matrices on the %s backend: it has no gather for the halo "
                         "exchange", ks_backend_name(be));
    if (nloc < 0 || ncols < 0)
        return ks_seterr(KS_ERR_ARG, "negative size (%ld local rows, %lld columns)", (long)nloc,
                         (long long)ncols);
    if (!rowptr)
        return ks_seterr(KS_ERR_ARG, "NULL rowptr");
    if (rowptr[nloc] > 0 && (!colind || !val))
        return ks_seterr(KS_ERR_ARG, "NULL %s with %ld entries", colind ? "val" : "colind",
                         (long)rowptr[nloc]);
    return KS_OK;
}

/* A block of the split as a matrix. The split made and checked it (columns
 * in range, sorted and unique, values finite), so it is not checked again:
 * on a backend with host memory the matrix takes its arrays (no copy);
 * elsewhere they are uploaded as they are, and "auto" counts the row
 * statistics where the matrix now lives (the same numbers). On the host
 * that check and count were passes over every row of each block (a
 * ghost block's rows too), the row pointers' serially. */
static ks_error block_matrix(ks_backend *be, ks_csr *H, ks_sparse *D, const char *format,
                             const ks_spmv_params *params, ks_matrix **M)
{
    if (D->be == be) { /* made where it lives, by a split that checked it */
        D->valid = 1;
        return ks_matrix_create_sparse(be, D, format, params, M);
    }
    if (!H->val || !H->rowptr)
        return ks_matrix_create(be, H, format, params, M); /* its message */
    ks_sparse A;
    KS_TRY(ks_backend_host_memory(be) ? ks_sparse_adopt_csr(be, H, &A)
                                      : ks_sparse_from_csr(be, H, 0, &A));
    A.valid = 1;
    return ks_matrix_create_sparse(be, &A, format, params, M);
}

/* The ghost block's format. It is narrow and irregular: most of its rows
 * are empty (a 256^3 slab's ghost block has entries in one plane of
 * 65,536 rows out of 16.7M). A device format that walks every row (cuda's
 * auto picks csr_vector: one warp a row, ~335 MB moved at 256^3 for 0.5 MB
 * of entries) adds ~120 us to each distributed product; "coo" touches only
 * the entries and is deterministic, but stores float64 only. The cpu's
 * csr skips empty rows cheaply, so there "auto" stays. KS_MPI_GHOST_FORMAT
 * names another (A/B measurements). */
static const char *ghost_format(const ks_backend *be, const ks_spmv_params *gp)
{
    const char *env = getenv("KS_MPI_GHOST_FORMAT");
    if (env && env[0])
        return env;
    return ks_backend_host_memory(be) || gp->float_values ? "auto" : "coo";
}

/* The blocks, the ghost buffer and the halo plan from the split rows. */
static ks_error build(ks_backend *be, const ks_comm *comm, ks_dist_split *S, const char *format,
                      const ks_spmv_params *params, ks_dist_impl *d)
{
    d->ghost_gid = S->ghost_gid;
    S->ghost_gid = NULL;
    d->entry_pos = S->entry_pos;
    S->entry_pos = NULL;
    d->nghost = S->ghost.ncols;
    /* Under KS_AMG_TRACE the AMG setup's transfer and coarse matrices are
     * timed piece by piece here (nothing is printed otherwise). */
    double t = ks_wtime();
    ks_error e = block_matrix(be, &S->local, &S->dlocal, format, params, &d->base.local);
    ks_amg_dist_substep(comm, "  matrix: local block's format", &t);
    ks_spmv_params gp;
    memset(&gp, 0, sizeof gp);
    gp.float_values = params ? params->float_values : 0;
    if (e == KS_OK && d->nghost > 0) {
        e = block_matrix(be, &S->ghost, &S->dghost, ghost_format(be, &gp), &gp,
                         &d->base.ghost);
        const char *env = getenv("KS_MPI_GHOST_FORMAT");
        if (e != KS_OK && env && env[0])
            e = ks_adderr(e, "the ghost block's format from KS_MPI_GHOST_FORMAT=%s", env);
        ks_amg_dist_substep(comm, "  matrix: ghost block's format", &t);
    }
    if (e == KS_OK)
        e = ks_vec_create(be, d->nghost, &d->xghost);
    /* A format may refuse one rank's block and take another's. */
    e = ks_comm_agree(comm, e);
    /* the ghosts are columns: owned as the columns are laid out */
    const ks_gint *coff = d->base.col_offsets ? d->base.col_offsets : d->base.offsets;
    ks_amg_dist_substep(comm, "  matrix: ghost vector and agreement", &t);
    if (e == KS_OK)
        e = ks_halo_create(comm, coff, d->ghost_gid, d->nghost, &d->halo);
    ks_amg_dist_substep(comm, "  matrix: halo plan", &t);
    if (e == KS_OK)
        e = ks_comm_agree(comm, ks_halo_attach(d->halo, be, d->nghost));
    ks_amg_dist_substep(comm, "  matrix: halo buffers", &t);
    if (e == KS_OK)
        d->base.halo_bytes = ks_halo_bytes(d->halo) +
                             (double)d->nghost * (sizeof(ks_gint) + sizeof(double)) +
                             ((double)comm->size + 1) * sizeof(ks_gint) +
                             (d->entry_pos ? (double)ks_matrix_nnz(d->base.local) +
                                                 (d->base.ghost ? ks_matrix_nnz(d->base.ghost) : 0)
                                           : 0.0) * sizeof(ks_int);
    return e;
}

/* Collective. After build() gave e: d as the ks_matrix *M (agreed), or
 * d and any *M freed on failure. */
static ks_error wrap(const ks_comm *comm, ks_dist_impl *d, ks_error e, ks_matrix **M)
{
    if (e == KS_OK) {
        e = ks_matrix_wrap_dist(&d->base, M); /* takes d, also on failure */
        d = NULL;
        e = ks_comm_agree(comm, e);
    }
    if (e != KS_OK) {
        if (d)
            dist_destroy(&d->base);
        ks_matrix_destroy(M);
    }
    return e;
}

ks_error ks_matrix_create_dist(ks_backend *be, const ks_comm *comm, ks_int nloc, ks_gint ncols,
                               const ks_int *rowptr, const ks_gint *colind, const double *val,
                               const char *format, const ks_spmv_params *params, ks_matrix **M)
{
    const char *fn = "ks_matrix_create_dist";
    if (!M)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output pointer", fn);
    *M = NULL;
    if (!comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL comm", fn);
    const int p = comm->size, me = comm->rank;
    ks_error e = check_args(be, nloc, ncols, rowptr, colind, val);
    if (e != KS_OK)
        ks_adderr(e, "rank %d", me);
    e = ks_comm_agree(comm, e);
    if (e != KS_OK)
        return ks_adderr(e, "%s", fn);
    ks_gint *offsets;
    e = ks_layout_gather(comm, nloc, &offsets);
    if (e != KS_OK)
        return ks_adderr(e, "%s", fn);
    if (offsets[p] != ncols) { /* the same offsets everywhere: every rank refuses */
        ks_gint n = offsets[p];
        free(offsets);
        return ks_seterr(KS_ERR_SIZE,
                         "%s: the ranks' rows add up to %lld but ncols_global is %lld (a "
                         "distributed matrix is square: its columns are split like its rows)",
                         fn, (long long)n, (long long)ncols);
    }
    ks_dist_split S;
    e = ks_comm_agree(comm, ks_dist_csr_split(me, offsets[me], ncols, nloc, rowptr, colind,
                                              val, &S));
    ks_dist_impl *d = NULL;
    if (e == KS_OK) {
        d = ks_calloc(1, sizeof *d, "distributed matrix");
        e = ks_comm_agree(comm, d ? KS_OK : KS_ERR_MEMORY);
    }
    if (e == KS_OK) {
        d->base.ops = &mpi_dist_ops;
        d->base.comm = comm;
        d->base.offsets = offsets;
        offsets = NULL;
        e = build(be, comm, &S, format, params, d);
    }
    ks_dist_split_free(&S);
    free(offsets);
    e = wrap(comm, d, e, M);
    return e == KS_OK ? KS_OK : ks_adderr(e, "%s", fn);
}

ks_error ks_dist_matrix_from_split(ks_backend *be, const ks_comm *comm, ks_gint *row_offsets,
                                   ks_gint *col_offsets, ks_dist_split *S, const char *format,
                                   const ks_spmv_params *params, ks_matrix **M)
{
    *M = NULL;
    ks_dist_impl *d = ks_calloc(1, sizeof *d, "distributed matrix");
    ks_error e = ks_comm_agree(comm, d ? KS_OK : KS_ERR_MEMORY);
    if (e != KS_OK) {
        free(row_offsets);
        free(col_offsets);
        free(d);
        return e;
    }
    d->base.ops = &mpi_dist_ops;
    d->base.comm = comm;
    d->base.offsets = row_offsets;
    d->base.col_offsets = col_offsets;
    e = build(be, comm, S, format, params, d);
    return wrap(comm, d, e, M);
}

ks_error ks_dist_matrix_recast(const ks_matrix *M, const char *format,
                               const ks_spmv_params *params, ks_matrix **out)
{
    *out = NULL;
    const ks_dist_impl *d = (const ks_dist_impl *)M->dist;
    const ks_comm *c = d->base.comm;
    ks_dist_split S;
    memset(&S, 0, sizeof S);
    const ks_csr *L = ks_matrix_host_csr(d->base.local);
    const ks_csr *G = d->base.ghost ? ks_matrix_host_csr(d->base.ghost) : NULL;
    ks_error e = L && (G || !d->base.ghost) ? ks_csr_copy(L, &S.local)
                                            : ks_seterr(KS_ERR_MEMORY, "host rows of a block");
    if (e == KS_OK && G)
        e = ks_csr_copy(G, &S.ghost);
    S.ghost.ncols = d->nghost;
    if (e == KS_OK && d->nghost > 0) {
        S.ghost_gid = ks_malloc((size_t)d->nghost * sizeof *S.ghost_gid, "ghost columns");
        if (S.ghost_gid)
            memcpy(S.ghost_gid, d->ghost_gid, (size_t)d->nghost * sizeof *S.ghost_gid);
        else
            e = KS_ERR_MEMORY;
    }
    ks_gint *ro = ks_layout_copy(c, d->base.offsets);
    ks_gint *co = d->base.col_offsets ? ks_layout_copy(c, d->base.col_offsets) : NULL;
    if (e == KS_OK && (!ro || (d->base.col_offsets && !co)))
        e = KS_ERR_MEMORY;
    e = ks_comm_agree(c, e);
    if (e == KS_OK) {
        e = ks_dist_matrix_from_split(M->be, c, ro, co, &S, format, params, out);
    } else {
        free(ro);
        free(co);
    }
    ks_dist_split_free(&S);
    return e;
}

const ks_comm *ks_matrix_comm(const ks_matrix *M)
{
    return M && M->dist ? M->dist->comm : NULL;
}

ks_gint ks_matrix_row_begin(const ks_matrix *M)
{
    return M && M->dist ? M->dist->offsets[M->dist->comm->rank] : 0;
}

ks_error ks_matrix_halo_size(const ks_matrix *M, ks_int *nghost, ks_int *nsend, int *neighbours)
{
    if (!M || !nghost || !nsend || !neighbours)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_halo_size: NULL %s", !M ? "matrix" : "output");
    *nghost = *nsend = 0;
    *neighbours = 0;
    if (!M->dist)
        return KS_OK;
    const ks_halo *h = ((const ks_dist_impl *)M->dist)->halo;
    *nghost = h->recv_start[h->nrecv];
    *nsend = h->send_start[h->nsend];
    /* a rank both sent to and received from counts once */
    int n = h->nrecv;
    for (int s = 0; s < h->nsend; s++) {
        int both = 0;
        for (int r = 0; r < h->nrecv && !both; r++)
            both = h->recv_rank[r] == h->send_rank[s];
        n += !both;
    }
    *neighbours = n;
    return KS_OK;
}

const char *ks_matrix_halo_transport(const ks_matrix *M)
{
    return M && M->dist ? ks_halo_transport_name(((const ks_dist_impl *)M->dist)->halo->transport)
                        : NULL;
}
