/* Parallel generation of the built-in problems: each rank generates only
 * its own rows (matrices/gen_rows.h), with global column numbers, so no
 * rank ever holds the whole matrix, and the rows are ks_generate's bits. */
#include "mpi_internal.h"
#include "../matrices/gen_rows.h"

#include <stdint.h>
#include <string.h>

void ks_dist_csr_free(ks_dist_csr *A)
{
    if (!A)
        return;
    free(A->rowptr);
    free(A->colind);
    free(A->val);
    memset(A, 0, sizeof *A);
}

/* This rank's rows [r0, r0 + n) of the n_all-row matrix. */
static ks_error gen_block(const ks_gen_params *p, ks_gint r0, ks_gint n, ks_gint n_all,
                          ks_dist_csr *A)
{
    if (n > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "%lld rows on one rank: more than the 32-bit local "
                                      "index limit (ks_int); use more ranks",
                         (long long)n);
    A->nrows = (ks_int)n;
    A->row_begin = r0;
    A->nrows_global = A->ncols_global = n_all;
    A->rowptr = ks_malloc(((size_t)n + 1) * sizeof *A->rowptr, "generated row pointers");
    if (!A->rowptr)
        return KS_ERR_MEMORY;
    KS_TRY(ks_gen_rows_count(p, r0, r0 + n, A->rowptr));
    A->nnz = A->rowptr[n];
    A->colind = ks_malloc((size_t)A->nnz * sizeof *A->colind, "generated columns");
    A->val = ks_malloc((size_t)A->nnz * sizeof *A->val, "generated values");
    if (!A->colind || !A->val)
        return KS_ERR_MEMORY;
    ks_gen_rows_fill(p, r0, r0 + n, A->rowptr, NULL, A->colind, A->val);
    return KS_OK;
}

ks_error ks_generate_dist(const ks_comm *comm, const ks_gen_params *p, ks_int nlocal,
                          ks_dist_csr *A)
{
    const char *fn = "ks_generate_dist";
    if (!A)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", fn);
    memset(A, 0, sizeof *A);
    if (!comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL comm", fn);
    int64_t n_all = 0;
    ks_error e = p ? ks_gen_rows_global(p, &n_all)
                   : ks_seterr(KS_ERR_ARG, "%s: NULL parameters", fn);
    KS_TRY(ks_comm_agree(comm, e));
    ks_gint r0, n;
    if (nlocal < 0) {
        ks_layout_even(n_all, comm->size, comm->rank, &r0, &n);
    } else {
        ks_gint *off;
        KS_TRY(ks_layout_gather(comm, nlocal, &off));
        const ks_gint total = off[comm->size];
        r0 = off[comm->rank];
        n = nlocal;
        free(off);
        if (total != n_all) /* the same total everywhere: every rank refuses */
            return ks_seterr(KS_ERR_SIZE,
                             "%s: the ranks' row counts add up to %lld, the %s grid has %lld rows",
                             fn, (long long)total, ks_gen_kind_name(p->kind), (long long)n_all);
    }
    e = ks_comm_agree(comm, gen_block(p, r0, n, n_all, A));
    if (e != KS_OK) {
        ks_dist_csr_free(A);
        return ks_adderr(e, "%s", fn);
    }
    return KS_OK;
}
