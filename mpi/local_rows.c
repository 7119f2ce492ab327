/* Local CSR views of distributed rows, so the serial sparse kernels (the
 * cpu backend's OpenMP spgemm) run on a rank's part of a product.
 *
 * Global ids (64-bit) become compact 32-bit numbers that order like them
 * (gmap.c). A row sorted by global column is then sorted by compact
 * column, and a kernel that walks rows in column order adds in the order
 * it would on the global matrices: the same bits. */
#include "rap_dist.h"
#include "../amg/hierarchy.h"
#include "../sparse/cpu/csr_kernels.h"
#include "../sparse/sparse.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Own rows' columns: global ids through cols (gcol), or compact numbers
 * of another map through a table into cols' (ccol, tab). */
static ks_error stack(const ks_dist_ghost_prows *G, const ks_gmap *rows, const ks_int *rp,
                      const ks_gint *gcol, const ks_int *ccol, const ks_int *tab,
                      const double *val, const ks_gmap *cols, ks_csr *B)
{
    const ks_int nb = rows->nbelow, nown = (ks_int)(rows->hi - rows->lo);
    const ks_int n = nown + G->n;
    int64_t nnz = (int64_t)G->rowptr[G->n] + rp[nown];
    if (nnz > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "more than 2^31 entries in a rank's rows");
    KS_TRY(ks_csr_alloc(B, n, ks_gmap_size(cols), (ks_int)nnz));
    /* Row r's start follows from the pieces' row pointers: the fetched
     * rows below, the own rows, the fetched rows above. */
    const ks_int gb = G->rowptr[nb], ob = gb + rp[nown];
#pragma omp parallel for schedule(static)
    for (ks_int r = 0; r <= n; r++)
        B->rowptr[r] = r <= nb ? G->rowptr[r] : r <= nb + nown ? gb + rp[r - nb]
                                                                : ob + G->rowptr[r - nown] - gb;
#pragma omp parallel for schedule(dynamic, 256)
    for (ks_int r = 0; r < n; r++) {
        const ks_int b = B->rowptr[r], len = B->rowptr[r + 1] - b;
        if (r < nb || r >= nb + nown) {
            const ks_int g = r < nb ? r : r - nown;
            const ks_gint *c = G->col + G->rowptr[g];
            const double *v = G->val + G->rowptr[g];
            for (ks_int q = 0; q < len; q++) {
                B->colind[b + q] = ks_gmap_find(cols, c[q]);
                B->val[b + q] = v[q];
            }
        } else if (gcol) {
            const ks_gint *c = gcol + rp[r - nb];
            const double *v = val + rp[r - nb];
            for (ks_int q = 0; q < len; q++) {
                B->colind[b + q] = ks_gmap_find(cols, c[q]);
                B->val[b + q] = v[q];
            }
        } else {
            const ks_int *c = ccol + rp[r - nb];
            memcpy(B->val + b, val + rp[r - nb], (size_t)len * sizeof *B->val);
            for (ks_int q = 0; q < len; q++)
                B->colind[b + q] = tab[c[q]];
        }
    }
    return KS_OK;
}

ks_error ks_stack_rows(const ks_dist_ghost_prows *G, const ks_gmap *rows, const ks_int *rp,
                       const ks_gint *col, const double *val, const ks_gmap *cols, ks_csr *B)
{
    return stack(G, rows, rp, col, NULL, NULL, val, cols, B);
}

ks_error ks_stack_rows_mapped(const ks_dist_ghost_prows *G, const ks_gmap *rows,
                              const ks_int *rp, const ks_int *ccol, const ks_int *tab,
                              const double *val, const ks_gmap *cols, ks_csr *B)
{
    return stack(G, rows, rp, NULL, ccol, tab, val, cols, B);
}

ks_error ks_compact_to_global(ks_csr *T, const ks_gmap *cols, ks_gint row_begin,
                              ks_gint nrows_global, ks_gint ncols_global, ks_dist_csr *out)
{
    memset(out, 0, sizeof *out);
    if (T->nnz < 0)
        return ks_seterr(KS_ERR_ARG, "a local product of negative size");
    out->nrows = T->nrows;
    out->nnz = T->nnz;
    out->row_begin = row_begin;
    out->nrows_global = nrows_global;
    out->ncols_global = ncols_global;
    out->colind = ks_malloc((size_t)T->nnz * sizeof *out->colind + 1, "global columns");
    if (!out->colind) {
        ks_csr_free(T);
        return KS_ERR_MEMORY;
    }
#pragma omp parallel for schedule(static)
    for (ks_int k = 0; k < T->nnz; k++)
        out->colind[k] = ks_gmap_gid(cols, T->colind[k]);
    out->rowptr = T->rowptr; /* taken from T */
    out->val = T->val;
    T->rowptr = NULL;
    T->val = NULL;
    ks_csr_free(T);
    return KS_OK;
}

/* The shape and row pointers of device matrix A as host CSR T (colind
 * and val NULL): what the host needs of a product that stays there. */
static ks_error rowptr_only(const ks_sparse *A, ks_csr *T)
{
    memset(T, 0, sizeof *T);
    T->rowptr = ks_malloc(((size_t)A->nrows + 1) * sizeof *T->rowptr, "row pointers");
    if (!T->rowptr)
        return KS_ERR_MEMORY;
    T->nrows = A->nrows;
    T->ncols = A->ncols;
    T->nnz = A->nnz;
    ks_error e = A->be->ops->download(A->be, T->rowptr, A->rowptr,
                                      ((size_t)A->nrows + 1) * sizeof *T->rowptr);
    if (e != KS_OK) {
        free(T->rowptr);
        memset(T, 0, sizeof *T);
    }
    return e;
}

/* T = L B on the device: L uploaded unless dLin holds it there already,
 * B too unless dBin does; T downloaded (its row pointers only unless
 * entries) and, with keep, also left on the device. */
static ks_error device_spgemm(ks_backend *be, const ks_csr *L, const ks_sparse *dLin,
                              const ks_csr *B, const ks_sparse *dBin, ks_csr *T, ks_sparse *keep,
                              int entries)
{
    ks_sparse dL = {0}, dB = {0}, dT = {0};
    double t = ks_wtime();
    ks_error e = dLin ? KS_OK : ks_sparse_from_csr(be, L, 0, &dL);
    if (e == KS_OK && dLin)
        dL = *dLin; /* a view: freed by its owner */
    if (e == KS_OK && !dBin)
        e = ks_sparse_from_csr(be, B, 0, &dB);
    if (e == KS_OK && dBin)
        dB = *dBin; /* a view: freed by its owner */
    if (e == KS_OK) /* stacked and merged rows are sorted by construction */
        dL.valid = dB.valid = 1;
    ks_amg_dist_substep(NULL, "local product: upload", &t);
    if (e == KS_OK)
        e = ks_sparse_spgemm(&dL, &dB, &dT);
    if (e == KS_OK && ks_amg_tracing()) /* the product's own time, for the trace */
        e = ks_backend_sync(be);
    ks_amg_dist_substep(NULL, "local product: device spgemm", &t);
    if (!dLin)
        ks_sparse_free(&dL);
    if (!dBin)
        ks_sparse_free(&dB);
    if (e == KS_OK)
        e = entries ? ks_sparse_to_csr(&dT, T) : rowptr_only(&dT, T);
    if (e == KS_OK && keep)
        *keep = dT;
    else
        ks_sparse_free(&dT);
    ks_amg_dist_substep(NULL, "local product: download", &t);
    return e;
}

ks_error ks_local_spgemm(ks_backend *be, const ks_csr *L, const ks_csr *B, ks_csr *T)
{
    if (!be || ks_backend_host_memory(be))
        return ks_csr_spgemm(L, B, T);
    return device_spgemm(be, L, NULL, B, NULL, T, NULL, 1);
}

ks_error ks_local_spgemm_device(ks_backend *be, const ks_csr *L, const ks_sparse *dL,
                                const ks_sparse *dB, ks_csr *T, ks_sparse *keep)
{
    if (keep)
        memset(keep, 0, sizeof *keep);
    if (!be || ks_backend_host_memory(be) || !dB || dB->be != be || (dL && dL->be != be))
        return ks_seterr(KS_ERR_ARG, "local product: a factor is not on the device");
    return device_spgemm(be, L, dL, NULL, dB, T, keep, !keep);
}

ks_error ks_stack_rows_device(ks_backend *be, const ks_dist_ghost_prows *G, ks_int nb,
                              const ks_sparse *M, const ks_int *tab, const ks_gmap *cm,
                              ks_sparse *dB)
{
    ks_csr F = {0};
    ks_sparse dF = {0};
    ks_int *dtab = NULL;
    ks_error e = ks_fetched_rows(G, cm, &F);
    if (e == KS_OK)
        e = ks_sparse_from_csr(be, &F, 0, &dF);
    ks_csr_free(&F);
    if (e == KS_OK)
        e = ks_be_alloc(be, (size_t)M->ncols * sizeof *dtab + 1, (void **)&dtab,
                        "compact column table");
    if (e == KS_OK && M->ncols > 0)
        e = be->ops->upload(be, dtab, tab, (size_t)M->ncols * sizeof *dtab);
    if (e == KS_OK)
        e = ks_sparse_stack_rows(M, dtab, &dF, nb, ks_gmap_size(cm), dB);
    if (dtab)
        be->ops->free(be, dtab);
    ks_sparse_free(&dF);
    return e;
}

ks_error ks_local_product_compact(ks_backend *be, const ks_csr *L, const ks_sparse *dL,
                                  const ks_dist_ghost_prows *G, const ks_gmap *rows,
                                  const ks_int *rp, const ks_gint *col, const double *val,
                                  const ks_sparse *dM, const ks_int *mtab, const ks_gmap *cols,
                                  ks_csr *T, ks_sparse *keep, int entries)
{
    ks_csr B = {0};
    ks_sparse dB = {0};
    double t = ks_wtime();
    if (keep)
        memset(keep, 0, sizeof *keep);
    const int host = !be || ks_backend_host_memory(be);
    if ((dL && (host || dL->be != be)) || (dM && (host || dM->be != be || !mtab)))
        return ks_seterr(KS_ERR_ARG, "local product: a factor is not on the device");
    ks_error e = dM ? ks_stack_rows_device(be, G, rows->nbelow, dM, mtab, cols, &dB)
                    : ks_stack_rows(G, rows, rp, col, val, cols, &B);
    if (e == KS_OK && dM && ks_amg_tracing()) /* the stacking's own time */
        e = ks_backend_sync(be);
    ks_amg_dist_substep(NULL, dM ? "stack P's rows on the device" : "stack P's rows", &t);
    if (e == KS_OK)
        e = host ? ks_csr_spgemm(L, &B, T)
                 : device_spgemm(be, L, dL, &B, dM ? &dB : NULL, T, keep, entries || !keep);
    ks_csr_free(&B);
    ks_sparse_free(&dB);
    return e;
}

ks_error ks_fetched_rows(const ks_dist_ghost_prows *G, const ks_gmap *cols, ks_csr *F)
{
    const ks_int nnz = G->rowptr[G->n];
    KS_TRY(ks_csr_alloc(F, G->n, ks_gmap_size(cols), nnz));
    memcpy(F->rowptr, G->rowptr, ((size_t)G->n + 1) * sizeof *F->rowptr);
    if (nnz > 0)
        memcpy(F->val, G->val, (size_t)nnz * sizeof *F->val);
#pragma omp parallel for schedule(static) if (nnz > 65536)
    for (ks_int q = 0; q < nnz; q++)
        F->colind[q] = ks_gmap_find(cols, G->col[q]);
    return KS_OK;
}

/* The ghosts the rows use (used: a flag per compact column of cols),
 * numbered in ascending order: gnum for the compact columns outside the
 * range (below it, then above; -1 for unused ones), S->ghost_gid their ids;
 * *ng how many. */
static ks_error number_ghosts(const unsigned char *used, const ks_gmap *cols, ks_int **gnum,
                              ks_int *ng, ks_dist_split *S)
{
    const ks_int nb = cols->nbelow, next = cols->next, nown = (ks_int)(cols->hi - cols->lo);
    *ng = 0;
    *gnum = ks_malloc(((size_t)next + 1) * sizeof **gnum, "ghost numbers");
    if (!*gnum)
        return KS_ERR_MEMORY;
    for (ks_int k = 0; k < next; k++)
        (*gnum)[k] = used[k < nb ? k : k + nown] ? (*ng)++ : -1;
    S->ghost_gid = ks_malloc((size_t)*ng * sizeof *S->ghost_gid + 1, "ghost columns");
    if (!S->ghost_gid)
        return KS_ERR_MEMORY;
    for (ks_int k = 0; k < next; k++)
        if ((*gnum)[k] >= 0)
            S->ghost_gid[(*gnum)[k]] = cols->ext[k];
    return KS_OK;
}

ks_error ks_compact_split(const ks_csr *T, const ks_gmap *cols, int *refused, ks_dist_split *S)
{
    memset(S, 0, sizeof *S);
    *refused = 0;
    const ks_int nown = (ks_int)(cols->hi - cols->lo);
    unsigned char *used = ks_malloc((size_t)T->ncols + 1, "used columns");
    ks_int *gnum = NULL, ng = 0, nonfinite = 0;
    int unsorted = 0;
    ks_error e = used ? ks_csr_mark_cols(T, used, &unsorted) : KS_ERR_MEMORY;
    if (e == KS_OK && unsorted)
        *refused = 1;
    if (e == KS_OK && !*refused)
        e = number_ghosts(used, cols, &gnum, &ng, S);
    if (e == KS_OK && !*refused)
        e = ks_csr_split_cols(T, cols->nbelow, nown, gnum, ng, &S->local, &S->ghost, &nonfinite);
    if (e == KS_OK && nonfinite > 0)
        *refused = 1;
    free(used);
    free(gnum);
    if (e != KS_OK || *refused)
        ks_dist_split_free(S);
    return e;
}

ks_error ks_compact_split_device(const ks_sparse *dT, const ks_gmap *cols, int *refused,
                                 ks_dist_split *S)
{
    memset(S, 0, sizeof *S);
    *refused = 0;
    ks_backend *be = dT->be;
    const ks_int nown = (ks_int)(cols->hi - cols->lo), ncols = dT->ncols;
    unsigned char *used = ks_malloc((size_t)ncols + 1, "used columns"), *dused = NULL;
    ks_int *gnum = NULL, *dgnum = NULL, ng = 0, nonfinite = 0;
    int unsorted = 0;
    ks_error e = used ? ks_be_alloc(be, (size_t)ncols + 1, (void **)&dused, "used columns")
                      : KS_ERR_MEMORY;
    if (e == KS_OK)
        e = ks_sparse_mark_cols(dT, dused, &unsorted);
    if (e == KS_OK && ncols > 0)
        e = be->ops->download(be, used, dused, (size_t)ncols);
    if (e == KS_OK && unsorted)
        *refused = 1;
    if (e == KS_OK && !*refused)
        e = number_ghosts(used, cols, &gnum, &ng, S);
    if (e == KS_OK && !*refused)
        e = ks_be_alloc(be, ((size_t)cols->next + 1) * sizeof *dgnum, (void **)&dgnum,
                        "ghost numbers");
    if (e == KS_OK && !*refused && cols->next > 0)
        e = be->ops->upload(be, dgnum, gnum, (size_t)cols->next * sizeof *dgnum);
    if (e == KS_OK && !*refused)
        e = ks_sparse_split_cols(dT, cols->nbelow, nown, dgnum, ng, &S->dlocal, &S->dghost,
                                 &nonfinite);
    if (e == KS_OK && nonfinite > 0)
        *refused = 1;
    if (e == KS_OK && !*refused) { /* the host side holds the shapes only */
        S->local = (ks_csr){dT->nrows, nown, S->dlocal.nnz, NULL, NULL, NULL};
        S->ghost = (ks_csr){dT->nrows, ng, S->dghost.nnz, NULL, NULL, NULL};
    }
    if (dused)
        be->ops->free(be, dused);
    if (dgnum)
        be->ops->free(be, dgnum);
    free(used);
    free(gnum);
    if (e != KS_OK || *refused)
        ks_dist_split_free(S);
    return e;
}
