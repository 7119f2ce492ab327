/* The coarsest level of a distributed hierarchy, agglomerated: its rows
 * (global columns) are gathered on every rank in rank order, each rank
 * holding rows of it (after agglomeration, usually a few) factors the
 * same matrix with the serial dense LU (amg/dense_lu.h) and keeps its own
 * rows of the explicit inverse, which become a distributed
 * matrix laid out like the level. The coarse solve x = A^-1 b is then one
 * distributed SpMV: its halo brings each rank the entries of b it lacks
 * (all of them, the inverse being dense), and every rank's rows of x come
 * from the same factors, so the correction is the same whatever the rank
 * count, to the rounding of the split row sums. Gathering on every rank
 * instead of factoring on one and broadcasting costs each rank the
 * factorisation (n <= a few thousand) but no second collective. */
#include "amg_dist_setup.h"

#include <stdint.h>
#include <string.h>

/* This rank's rows of the distributed matrix M with global columns
 * (local block's, then ghost block's columns: the order does not matter
 * to the dense factorisation). */
static ks_error own_rows(const ks_matrix *M, ks_int *len, ks_gint **col, double **val,
                         ks_int *nnz)
{
    const ks_dist_impl *d = (const ks_dist_impl *)M->dist;
    const ks_csr *Lc = ks_matrix_host_csr(d->base.local);
    const ks_csr *G = d->base.ghost ? ks_matrix_host_csr(d->base.ghost) : NULL;
    if (!Lc || (d->base.ghost && !G))
        return ks_seterr(KS_ERR_MEMORY, "coarsest level: host rows");
    const ks_gint rb = ks_matrix_row_begin(M);
    const ks_int n = Lc->nrows;
    *nnz = Lc->nnz + (G ? G->nnz : 0);
    *col = ks_malloc((size_t)*nnz * sizeof **col + 1, "coarsest level columns");
    *val = ks_malloc((size_t)*nnz * sizeof **val + 1, "coarsest level values");
    if (!*col || !*val)
        return KS_ERR_MEMORY;
    ks_int q = 0;
    for (ks_int i = 0; i < n; i++) {
        for (ks_int k = Lc->rowptr[i]; k < Lc->rowptr[i + 1]; k++) {
            (*col)[q] = rb + Lc->colind[k];
            (*val)[q++] = Lc->val[k];
        }
        for (ks_int k = G ? G->rowptr[i] : 0; G && k < G->rowptr[i + 1]; k++) {
            (*col)[q] = d->ghost_gid[G->colind[k]];
            (*val)[q++] = G->val[k];
        }
        len[i] = (Lc->rowptr[i + 1] - Lc->rowptr[i]) + (G ? G->rowptr[i + 1] - G->rowptr[i] : 0);
    }
    return KS_OK;
}

/* Displacements of counts (elements of `size` bytes) as byte counts for
 * MPI; KS_ERR_SIZE past its int counts. */
static ks_error byte_counts(const int *cnt, int p, size_t size, int *bc, int *bd)
{
    int64_t at = 0;
    for (int r = 0; r < p; r++) {
        const int64_t b = (int64_t)cnt[r] * (int64_t)size;
        if (b > INT32_MAX || at + b > INT32_MAX)
            return ks_seterr(KS_ERR_SIZE, "coarsest level: more than 2^31 bytes to gather");
        bc[r] = (int)b;
        bd[r] = (int)at;
        at += b;
    }
    return KS_OK;
}

/* Every rank's rows into H (n x n, global), in rank order. */
static ks_error gather_rows(const ks_comm *c, const ks_gint *off, ks_int nloc, const ks_int *len,
                            const ks_gint *col, const double *val, ks_int nnz, ks_csr *H)
{
    const int p = c->size;
    const MPI_Comm comm = ks_comm_mpi_of(c);
    const ks_int n = (ks_int)off[p];
    int *cnt = ks_calloc(4 * (size_t)p, sizeof *cnt, "coarse gather counts");
    ks_int *lens = ks_malloc(((size_t)n + 1) * sizeof *lens, "coarse row lengths");
    ks_gint *gcol = NULL;
    ks_error e = cnt && lens ? KS_OK : KS_ERR_MEMORY;
    e = ks_comm_agree(c, e);
    int *ecnt = cnt, *rc = cnt + p, *bc = cnt + 2 * p, *bd = cnt + 3 * p;
    if (e == KS_OK) {
        int mine = nnz;
        e = ks_comm_agree(c, ks_mpi_check(MPI_Allgather(&mine, 1, MPI_INT, ecnt, 1, MPI_INT, comm),
                                          "MPI_Allgather (coarse entry counts)"));
    }
    int64_t total = 0;
    for (int r = 0; r < p && e == KS_OK; r++) {
        rc[r] = (int)(off[r + 1] - off[r]);
        total += ecnt[r];
    }
    if (e == KS_OK)
        e = byte_counts(rc, p, sizeof *lens, bc, bd);
    if (e == KS_OK && total > INT32_MAX)
        e = ks_seterr(KS_ERR_SIZE, "coarsest level: more than 2^31 entries");
    if (e == KS_OK)
        e = ks_csr_alloc(H, n, n, (ks_int)total);
    if (e == KS_OK) {
        gcol = ks_malloc((size_t)total * sizeof *gcol + 1, "coarse columns");
        e = gcol ? KS_OK : KS_ERR_MEMORY;
    }
    e = ks_comm_agree(c, e);
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_mpi_check(MPI_Allgatherv(len, (int)(nloc * sizeof *len), MPI_BYTE,
                                                         lens, bc, bd, MPI_BYTE, comm),
                                          "MPI_Allgatherv (coarse row lengths)"));
    if (e == KS_OK)
        e = ks_comm_agree(c, byte_counts(ecnt, p, sizeof *gcol, bc, bd));
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_mpi_check(MPI_Allgatherv(col, (int)(nnz * sizeof *col), MPI_BYTE,
                                                         gcol, bc, bd, MPI_BYTE, comm),
                                          "MPI_Allgatherv (coarse columns)"));
    if (e == KS_OK)
        e = ks_comm_agree(c, byte_counts(ecnt, p, sizeof *val, bc, bd));
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_mpi_check(MPI_Allgatherv(val, (int)(nnz * sizeof *val), MPI_BYTE,
                                                         H->val, bc, bd, MPI_BYTE, comm),
                                          "MPI_Allgatherv (coarse values)"));
    if (e == KS_OK) {
        H->rowptr[0] = 0;
        for (ks_int i = 0; i < n; i++)
            H->rowptr[i + 1] = H->rowptr[i] + lens[i];
        for (int64_t k = 0; k < total; k++)
            H->colind[k] = (ks_int)gcol[k];
    }
    free(gcol);
    free(lens);
    free(cnt);
    return e;
}

/* This rank's rows of the dense inverse as a distributed matrix. */
static ks_error inverse_rows(ks_amg *amg, const ks_matrix *M, const ks_csr *inv, ks_matrix **out)
{
    const ks_gint rb = ks_matrix_row_begin(M);
    const ks_int nloc = M->A.nrows, n = (ks_int)ks_matrix_global_rows(M);
    static const double none = 0.0; /* a rank without rows has no inverse */
    const ks_int base = nloc ? inv->rowptr[rb] : 0;
    const ks_int nnz = nloc ? inv->rowptr[rb + nloc] - base : 0;
    ks_int *rp = ks_malloc(((size_t)nloc + 1) * sizeof *rp, "coarse inverse rows");
    ks_gint *ci = ks_malloc((size_t)nnz * sizeof *ci + 1, "coarse inverse columns");
    ks_error e = rp && ci ? KS_OK : KS_ERR_MEMORY;
    for (ks_int i = 0; i <= nloc && e == KS_OK; i++)
        rp[i] = nloc ? inv->rowptr[rb + i] - base : 0;
    for (ks_int k = 0; k < nnz && e == KS_OK; k++)
        ci[k] = inv->colind[base + k];
    e = ks_matrix_agree(M, e);
    if (e == KS_OK)
        e = ks_matrix_create_dist(amg->be, ks_matrix_comm(M), nloc, n, rp, ci,
                                  nloc ? inv->val + base : &none, "auto", NULL, out);
    if (e == KS_OK)
        ks_dist_drop_entry_order(*out);
    free(rp);
    free(ci);
    return e;
}

ks_error ks_amg_dist_coarse_setup(ks_amg *amg)
{
    const int l = amg->nlevels - 1;
    const ks_matrix *M = amg->levels[l].Am;
    const ks_comm *c = ks_matrix_comm(M);
    const ks_gint n = ks_matrix_global_rows(M);
    if (n == 0 || (n > amg->prm.coarse_max_rows && n > KS_AMG_DIST_DENSE_LIMIT))
        return KS_OK; /* smoothed instead (cycle.c), as serially */
    const ks_int nloc = M->A.nrows;
    ks_int *len = ks_malloc((size_t)nloc * sizeof *len + 1, "coarse row lengths");
    ks_gint *col = NULL;
    double *val = NULL;
    ks_int nnz = 0;
    ks_csr H, inv;
    memset(&H, 0, sizeof H);
    memset(&inv, 0, sizeof inv);
    ks_error e = len ? own_rows(M, len, &col, &val, &nnz) : KS_ERR_MEMORY;
    e = ks_comm_agree(c, e);
    if (e == KS_OK)
        e = gather_rows(c, M->dist->offsets, nloc, len, col, val, nnz, &H);
    free(len);
    free(col);
    free(val);
    /* The same matrix on every rank that holds rows of the level: the same
     * factors, the same failure (agreed). A rank without rows (the level
     * agglomerated onto fewer ranks) keeps no row of the inverse, so it
     * skips the n^3 work. */
    ks_dense_lu_free(&amg->lu);
    if (e == KS_OK)
        e = ks_comm_agree(c, nloc > 0 ? ks_dense_lu_factor(&H, &amg->lu) : KS_OK);
    ks_csr_free(&H);
    if (e == KS_OK)
        e = ks_comm_agree(c, nloc > 0 ? ks_dense_lu_inverse_csr(&amg->lu, &inv) : KS_OK);
    /* only the inverse's rows are used: the factors would be n^2 more */
    ks_dense_lu_free(&amg->lu);
    if (e == KS_OK)
        e = inverse_rows(amg, M, &inv, &amg->coarse_inv);
    ks_csr_free(&inv);
    if (e != KS_OK)
        return ks_adderr(e, "AMG coarsest level %d (%lld rows, gathered on every rank)", l,
                         (long long)n);
    return KS_OK;
}
