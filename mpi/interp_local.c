/* Interpolation rows of a rank from its local system, by the serial cpu
 * builders themselves (amg/cpu/interp_direct.c, interp_extended.c) or, on
 * a backend with device memory, by its row-range builders (the AMG kernel
 * table's interp_*_rows, which give the cpu's rows bit for bit).
 *
 * The local system is square over every point the rank's rows reach: its
 * own rows, the ghost columns of A, and (extended+i) the columns of the
 * fetched rows of strong F neighbours on other ranks (rows_fetch_dist.c),
 * numbered compactly in global order (local_rows.c). Its rows are the
 * rank's rows of A and S (both blocks merged) and the fetched rows; the
 * other points' rows are empty, and the builders run over the own rows
 * only. Each point carries its C/F state and global coarse id.
 *
 * The builders read, for an F row i, row i of A and S, the C/F states of
 * its columns and, for each strong F neighbour k, row k of A and S and
 * the states of k's columns: all present with their global values.
 * Compact numbers order like global ids and the builders' coarse numbers
 * like the global coarse ids (both number C points in point order), so
 * every sum runs in the serial order and each row is the serial row of
 * the global matrix bit for bit, with its columns mapped back.
 *
 * Truncation, when asked, runs on the local rows before they are mapped
 * back (on the device where they were built): the rule reads a row's
 * values in row order and breaks ties of |w| by the lower column, and the
 * local coarse numbers order like the global coarse ids, so it keeps the
 * entries and gives the bits that ks_dist_prows_truncate gives on the
 * global rows (which breaks ties by position: the same order).
 *
 * On the device the local system is uploaded (A, S, the splitting: plain
 * copies of the host arrays) and P's rows come back; rows outside the
 * rank's own stay empty and cost nothing but their row pointers. */
#include "rap_dist.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct sys {
    ks_gmap fm;      /* the points */
    ks_csr A;        /* N x N */
    ks_strength S;
    int *cf;         /* N */
    ks_gint *cid;    /* N: global coarse id, -1 for F */
    ks_int *gpos;    /* A's ghost g -> its point */
    ks_int *fpos;    /* fetched row t -> its point */
    int view;        /* A and S are the rank's own blocks (nothing else reached) */
    int devA;        /* A's rows made on the device (dA), x->A holds row pointers only */
    ks_sparse dA;    /* there: N x N (a view of the local block with view) */
    int devS;        /* S's the same (dS), x->S holds row pointers only */
    ks_sparse dS;
} sys;

static void sys_free(sys *x)
{
    ks_gmap_free(&x->fm);
    if (!x->view) { /* (with view, dA and dS are the blocks themselves) */
        ks_sparse_free(&x->dA);
        ks_sparse_free(&x->dS);
        ks_csr_free(&x->A);
        free(x->S.rowptr);
        free(x->S.colind);
    }
    free(x->cf);
    free(x->cid);
    free(x->gpos);
    free(x->fpos);
}

static ks_int count_strong(const ks_dist_ext_rows *R, ks_int t)
{
    ks_int n = 0;
    for (ks_int q = R->rowptr[t]; q < R->rowptr[t + 1]; q++)
        n += R->strong[q];
    return n;
}

/* Points, their states and the row lengths (at rowptr[r + 1]). */
static ks_error points(const ks_csr *AL, const ks_csr *AG, const ks_sparse *dAL,
                       const ks_sparse *dAG, const ks_dist_strength *S, const int *cf,
                       const ks_dist_coarse *C, const ks_dist_ext_rows *R, sys *x)
{
    const ks_int nloc = S->nloc, ng = S->nghost, nf = R ? R->n : 0;
    const int64_t nr = nf ? R->rowptr[nf] : 0;
    KS_TRY(ks_gmap_make(S->row_begin, S->row_begin + nloc, S->ghost_gid, ng, R ? R->col : NULL,
                        nr, &x->fm));
    const ks_int N = ks_gmap_size(&x->fm), nb = x->fm.nbelow;
    /* Nothing beyond the own rows (one rank): the local system's rows are
     * the blocks' own, read in place. */
    x->view = x->devA ? N == nloc && dAL->nrows == nloc && dAL->ncols == nloc &&
                            (!dAG || dAG->nnz == 0) && S->grp[nloc] == 0
                      : N == nloc && AL->nrows == nloc && AL->ncols == nloc &&
                            (!AG || AG->rowptr[nloc] == 0) && S->grp[nloc] == 0;
    x->cf = ks_malloc(((size_t)N + 1) * sizeof *x->cf, "local splitting");
    x->cid = ks_malloc(((size_t)N + 1) * sizeof *x->cid, "local coarse ids");
    x->gpos = ks_malloc(((size_t)ng + 1) * sizeof *x->gpos, "ghost points");
    x->fpos = ks_malloc(((size_t)nf + 1) * sizeof *x->fpos, "fetched row points");
    if (x->view) {
        if (!x->devA)
            x->A = *AL;
        x->S = S->local;
    } else {
        x->A.rowptr = ks_calloc((size_t)N + 1, sizeof *x->A.rowptr, "local rows");
        x->S.rowptr = ks_calloc((size_t)N + 1, sizeof *x->S.rowptr, "local strength rows");
    }
    if (!x->cf || !x->cid || !x->gpos || !x->fpos ||
        (!x->view && (!x->A.rowptr || !x->S.rowptr)))
        return KS_ERR_MEMORY;
    x->A.nrows = x->A.ncols = x->S.n = N;
#pragma omp parallel for schedule(static)
    for (ks_int r = 0; r < N; r++) {
        x->cf[r] = KS_FPT;
        x->cid[r] = -1;
    }
    /* Fetched rows' columns first: own and ghost points are set after,
     * from their own records (the same states). A point in several
     * fetched rows gets the same state from each: the threads' writes
     * agree (atomic, so none is torn). */
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < nr; q++) {
        const ks_int r = ks_gmap_find(&x->fm, R->col[q]);
        const ks_gint id = R->cid[q];
#pragma omp atomic write
        x->cid[r] = id;
#pragma omp atomic write
        x->cf[r] = id >= 0 ? KS_CPT : KS_FPT;
    }
#pragma omp parallel for schedule(static)
    for (ks_int g = 0; g < ng; g++) {
        const ks_int r = ks_gmap_find(&x->fm, S->ghost_gid[g]);
        x->gpos[g] = r;
        x->cf[r] = C->ghost_cf[g];
        x->cid[r] = C->ghost_cid[g];
    }
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < nloc; i++) {
        const ks_int r = nb + i;
        x->cf[r] = cf[i];
        x->cid[r] = C->cid[i];
        if (x->view)
            continue;
        if (!x->devA) /* (made on the device, the own rows need no host length) */
            x->A.rowptr[r + 1] = AL->rowptr[i + 1] - AL->rowptr[i] +
                                 (AG ? AG->rowptr[i + 1] - AG->rowptr[i] : 0);
        x->S.rowptr[r + 1] = S->local.rowptr[i + 1] - S->local.rowptr[i] +
                             S->grp[i + 1] - S->grp[i];
    }
#pragma omp parallel for schedule(static)
    for (ks_int t = 0; t < nf; t++) { /* distinct points */
        const ks_int r = ks_gmap_find(&x->fm, R->gid[t]);
        x->fpos[t] = r;
        x->A.rowptr[r + 1] = R->rowptr[t + 1] - R->rowptr[t];
        x->S.rowptr[r + 1] = count_strong(R, t);
    }
    if (x->view)
        return KS_OK;
    const int64_t na = ks_rowptr_scan(x->A.rowptr, N), ns = ks_rowptr_scan(x->S.rowptr, N);
    if (na > INT32_MAX || ns > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "more than 2^31 entries in a rank's local system");
    x->A.nnz = (ks_int)na;
    if (!x->devA) {
        x->A.colind = ks_malloc((size_t)na * sizeof *x->A.colind + 1, "local columns");
        x->A.val = ks_malloc((size_t)na * sizeof *x->A.val + 1, "local values");
    }
    if (!x->devS)
        x->S.colind = ks_malloc((size_t)ns * sizeof *x->S.colind + 1, "local strength columns");
    return (x->devA || (x->A.colind && x->A.val)) && (x->devS || x->S.colind) ? KS_OK
                                                                                : KS_ERR_MEMORY;
}

/* The rows: own rows with the blocks merged (ghosts below, owned columns,
 * ghosts above: point order), fetched rows mapped. */
static void fill(const ks_csr *AL, const ks_csr *AG, const ks_dist_strength *S,
                 const ks_dist_ext_rows *R, sys *x)
{
    const ks_int nloc = S->nloc, nb = x->fm.nbelow, nf = R ? R->n : 0;
    if (x->devA && x->devS)
        return; /* both made on the device (device_rows) */
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < nloc; i++) {
        const ks_int r = nb + i;
        ks_int m = x->A.rowptr[r], g = AG && !x->devA ? AG->rowptr[i] : 0;
        const ks_int g1 = AG && !x->devA ? AG->rowptr[i + 1] : 0;
        for (; g < g1 && x->gpos[AG->colind[g]] < nb; g++) {
            x->A.colind[m] = x->gpos[AG->colind[g]];
            x->A.val[m++] = AG->val[g];
        }
        for (ks_int k = x->devA ? 0 : AL->rowptr[i], k1 = x->devA ? 0 : AL->rowptr[i + 1];
             k < k1; k++) {
            x->A.colind[m] = nb + AL->colind[k];
            x->A.val[m++] = AL->val[k];
        }
        for (; g < g1; g++) {
            x->A.colind[m] = x->gpos[AG->colind[g]];
            x->A.val[m++] = AG->val[g];
        }
        if (x->devS)
            continue;
        ks_int s = x->S.rowptr[r], h = S->grp[i];
        const ks_int h1 = S->grp[i + 1];
        for (; h < h1 && x->gpos[S->gci[h]] < nb; h++)
            x->S.colind[s++] = x->gpos[S->gci[h]];
        for (ks_int k = S->local.rowptr[i]; k < S->local.rowptr[i + 1]; k++)
            x->S.colind[s++] = nb + S->local.colind[k];
        for (; h < h1; h++)
            x->S.colind[s++] = x->gpos[S->gci[h]];
    }
#pragma omp parallel for schedule(dynamic, 64)
    for (ks_int t = 0; t < nf; t++) {
        const ks_int r = x->fpos[t];
        ks_int m = x->A.rowptr[r], s = x->S.rowptr[r];
        for (ks_int q = R->rowptr[t]; q < R->rowptr[t + 1]; q++) {
            const ks_int j = ks_gmap_find(&x->fm, R->col[q]);
            if (!x->devA) {
                x->A.colind[m] = j;
                x->A.val[m++] = R->val[q];
            }
            if (R->strong[q] && !x->devS)
                x->S.colind[s++] = j;
        }
    }
}

/* The first own F row without a nonzero diagonal (nloc: none); the
 * builders refuse it, and the message names its global row. */
static ks_int zero_diagonal(const sys *x, const ks_csr *AL, ks_int nloc)
{
    const ks_int nb = x->fm.nbelow;
    ks_int bad = nloc;
    /* the diagonal is in the owned block (row i's column i: point nb + i) */
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (ks_int i = 0; i < nloc; i++) {
        if (x->cf[nb + i] == KS_CPT)
            continue;
        double d = 0.0;
        for (ks_int k = AL->rowptr[i]; k < AL->rowptr[i + 1]; k++)
            if (AL->colind[k] == i)
                d = AL->val[k];
        if (d == 0.0 && i < bad)
            bad = i;
    }
    return bad;
}

/* zero_diagonal's answer from the owned block where it lives: its
 * diagonal taken there and brought to the host (nloc values, not the
 * block). */
static ks_error zero_diagonal_dev(ks_backend *be, const ks_sparse *dAL, const sys *x,
                                  ks_int nloc, ks_int *bad)
{
    const ks_int nb = x->fm.nbelow;
    double *d = ks_malloc((size_t)nloc * sizeof *d + 1, "diagonal"), *dd = NULL;
    ks_error e = d ? ks_be_alloc(be, (size_t)nloc * sizeof *dd + 1, (void **)&dd, "diagonal")
                   : KS_ERR_MEMORY;
    if (e == KS_OK)
        e = ks_sparse_diagonal(dAL, dd);
    if (e == KS_OK)
        e = be->ops->download(be, d, dd, (size_t)nloc * sizeof *d);
    ks_int b = nloc;
    if (e == KS_OK) {
#pragma omp parallel for schedule(static) reduction(min : b)
        for (ks_int i = 0; i < nloc; i++)
            if (x->cf[nb + i] != KS_CPT && d[i] == 0.0 && i < b)
                b = i;
    }
    *bad = b;
    if (dd)
        be->ops->free(be, dd);
    free(d);
    return e;
}

/* The local system's rows of A (with values) or of S (strong: the
 * pattern, fetched rows' strong entries only) made on the device into
 * *out: the rank's rows are its blocks merged there
 * (ks_sparse_merge_blocks: the ghosts below, the owned columns, the ghosts
 * above) with those compact columns renumbered as points (a table: owned
 * column j is point nb + j, ghost g point gpos[g]; A and S share the
 * matrix's ghost numbering), stacked (ks_sparse_stack_rows) between the
 * other points' rows, which only the fetched rows fill: those come from
 * the host, mapped there. rowptr: the host's row pointers of the same
 * rows (x->A's or x->S's; only the other points' lengths are read). The
 * same rows as fill()'s. */
static ks_error device_rows(ks_backend *be, const ks_sparse *dL, const ks_sparse *dG,
                            const ks_dist_strength *S, const ks_dist_ext_rows *R,
                            const ks_int *rowptr, int strong, sys *x, ks_sparse *out)
{
    const ks_int N = x->A.nrows, nloc = S->nloc, nb = x->fm.nbelow, ng = S->nghost;
    const ks_int nf = R ? R->n : 0;
    if (x->view) { /* the local block itself */
        *out = *dL;
        return KS_OK;
    }
    ks_int nbg = 0; /* the ghosts below the rank's rows */
    while (nbg < ng && x->gpos[nbg] < nb)
        nbg++;
    ks_csr F = {0};
    ks_int *tab = ks_malloc(((size_t)nloc + ng + 1) * sizeof *tab, "point table");
    ks_error e = tab ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK) {
#pragma omp parallel for schedule(static)
        for (ks_int c = 0; c < nloc + ng; c++)
            tab[c] = c < nbg ? x->gpos[c] : c < nbg + nloc ? nb + (c - nbg) : x->gpos[c - nloc];
    }
    /* the other points' rows: F's row k is point k below the own ones, k +
     * nloc above them */
    const ks_int nF = N - nloc;
    if (e == KS_OK) {
        F.nrows = nF;
        F.ncols = N;
        F.rowptr = ks_malloc(((size_t)nF + 1) * sizeof *F.rowptr, "fetched rows");
        e = F.rowptr ? KS_OK : KS_ERR_MEMORY;
    }
    if (e == KS_OK) {
        F.rowptr[0] = 0;
        for (ks_int k = 0; k < nF; k++) {
            const ks_int r = k < nb ? k : k + nloc;
            F.rowptr[k + 1] = F.rowptr[k] + rowptr[r + 1] - rowptr[r];
        }
        F.nnz = F.rowptr[nF];
        F.colind = ks_malloc((size_t)F.nnz * sizeof *F.colind + 1, "fetched columns");
        if (!strong)
            F.val = ks_malloc((size_t)F.nnz * sizeof *F.val + 1, "fetched values");
        e = F.colind && (strong || F.val) ? KS_OK : KS_ERR_MEMORY;
    }
    if (e == KS_OK) {
#pragma omp parallel for schedule(dynamic, 64)
        for (ks_int t = 0; t < nf; t++) {
            const ks_int r = x->fpos[t], k = r < nb ? r : r - nloc;
            ks_int m = F.rowptr[k];
            for (ks_int q = R->rowptr[t]; q < R->rowptr[t + 1]; q++) {
                if (strong && !R->strong[q])
                    continue;
                F.colind[m] = ks_gmap_find(&x->fm, R->col[q]);
                if (!strong)
                    F.val[m] = R->val[q];
                m++;
            }
        }
    }
    ks_sparse M = {0}, dF = {0};
    ks_int *dtab = NULL;
    if (e == KS_OK)
        e = ks_sparse_merge_blocks(dL, dG, nbg, &M);
    if (e == KS_OK)
        e = ks_sparse_from_csr(be, &F, strong, &dF);
    if (e == KS_OK)
        e = ks_be_upload_new(be, tab, ((size_t)nloc + ng) * sizeof *tab, (void **)&dtab,
                             "point table");
    if (e == KS_OK)
        e = ks_sparse_stack_rows(&M, dtab, &dF, nb, N, out);
    if (e == KS_OK) /* merged and stacked in point order: sorted rows */
        out->valid = 1;
    if (dtab)
        be->ops->free(be, dtab);
    ks_sparse_free(&M);
    ks_sparse_free(&dF);
    ks_csr_free(&F);
    free(tab);
    return e;
}

/* The builder on be's device (and the truncation, when tr says so): the
 * local system uploaded, the builder's rows (all N, only r0 .. r1 - 1
 * not empty) downloaded into Pl. */
static ks_error build_device(ks_backend *be, const sys *x, int ext, ks_int r0, ks_int r1,
                             const ks_dist_trunc *tr, ks_csr *Pl, ks_sparse *keep)
{
    const ks_int N = x->A.nrows;
    const ks_csr Sh = {N, N, x->S.rowptr[N], x->S.rowptr, x->S.colind, NULL};
    ks_amg_exec ex;
    memset(&ex, 0, sizeof ex);
    ks_sparse dA = {0}, dS = {0}, dP = {0};
    int *dcf = NULL;
    ks_error e = x->devA ? KS_OK : ks_sparse_from_csr(be, &x->A, 0, &dA);
    if (e == KS_OK && !x->devS)
        e = ks_sparse_from_csr(be, &Sh, 1, &dS);
    if (e == KS_OK)
        e = ks_be_upload_new(be, x->cf, (size_t)N * sizeof *x->cf, (void **)&dcf,
                             "local splitting");
    double t = ks_wtime();
    if (e == KS_OK)
        e = ks_amgk_interp_rows(&ex, ext ? KS_AMG_D2 : KS_AMG_D1, x->devA ? &x->dA : &dA,
                                x->devS ? &x->dS : &dS, dcf, r0, r1, &dP);
    ks_amg_dist_substep(NULL, "  device rows: builder", &t);
    ks_sparse_free(&dA);
    ks_sparse_free(&dS);
    if (dcf)
        be->ops->free(be, dcf);
    if (e == KS_OK && tr)
        e = ks_amgk_truncate(&ex, &dP, tr->max_elements, tr->factor);
    ks_amg_dist_substep(NULL, "  device rows: truncation", &t);
    if (e == KS_OK)
        e = ks_sparse_to_csr(&dP, Pl);
    ks_amg_dist_substep(NULL, "  device rows: download", &t);
    if (e == KS_OK) { /* kept where it was built (P's device rows) */
        *keep = dP;
        memset(&dP, 0, sizeof dP);
    }
    ks_sparse_free(&dP);
    ks_amg_exec_free(&ex);
    return e;
}

/* P's device rows (dP taken) with the other ranks' coarse ids of gc (the
 * local system's C points, ascending) as their columns' map; where the
 * own points' ids are not the range c_begin .. c_begin + nc - 1 after the
 * others below it (not expected), no device rows (the host's serve). */
static void keep_device(ks_sparse *dP, const ks_gint *gc, ks_int ncols, ks_int r0,
                        ks_dist_prows *P)
{
    ks_dist_prows_dev *d = ks_calloc(1, sizeof *d, "device interpolation rows");
    ks_int nbelow = 0;
    while (nbelow < ncols && gc[nbelow] < P->c_begin)
        nbelow++;
    const ks_int next = ncols - P->nc;
    int ok = d && next >= 0 && (d->ext = ks_malloc((size_t)next * sizeof *d->ext + 1,
                                                   "other ranks' coarse ids")) != NULL;
    for (ks_int k = 0; ok && k < P->nc; k++)
        ok = gc[nbelow + k] == P->c_begin + k;
    if (!ok) {
        if (d)
            free(d->ext);
        free(d);
        ks_sparse_free(dP);
        return;
    }
    memcpy(d->ext, gc, (size_t)nbelow * sizeof *gc);
    memcpy(d->ext + nbelow, gc + nbelow + P->nc, (size_t)(next - nbelow) * sizeof *gc);
    d->rows = *dP;
    memset(dP, 0, sizeof *dP);
    d->r0 = r0;
    d->c_begin = P->c_begin;
    d->nc = P->nc;
    d->next = next;
    P->dev = d;
}

/* P's own rows from the builder's rows nb .. nb + nloc - 1, coarse columns
 * to global ids. The builders fill the own rows only, so the rows before
 * them are empty and P takes the values as they are (no copy); else (not
 * expected) they are copied. */
static ks_error take_rows(const sys *x, ks_csr *Pl, ks_int nloc, ks_sparse *dP,
                          ks_dist_prows *P)
{
    const ks_int N = x->A.nrows, nb = x->fm.nbelow, base = Pl->rowptr[nb];
    const ks_int nnz = Pl->rowptr[nb + nloc] - base;
    const int take = base == 0 && Pl->val;
    ks_gint *gc = ks_malloc(((size_t)Pl->ncols + 1) * sizeof *gc, "coarse ids of the points");
    P->rowptr = ks_malloc(((size_t)nloc + 1) * sizeof *P->rowptr, "interpolation row pointers");
    P->col = ks_malloc((size_t)nnz * sizeof *P->col + 1, "interpolation columns");
    P->val = take ? Pl->val : ks_malloc((size_t)nnz * sizeof *P->val + 1, "interpolation values");
    if (take)
        Pl->val = NULL; /* P's */
    if (!gc || !P->rowptr || !P->col || !P->val) {
        free(gc);
        return KS_ERR_MEMORY;
    }
    ks_dist_cpt_walk(x->cf, N, 0, NULL, x->cid, gc); /* the C points' global ids */
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i <= nloc; i++)
        P->rowptr[i] = Pl->rowptr[nb + i] - base;
#pragma omp parallel for schedule(static)
    for (ks_int k = 0; k < nnz; k++) {
        P->col[k] = gc[Pl->colind[base + k]];
        if (!take)
            P->val[k] = Pl->val[base + k];
    }
    if (dP->be && base == 0)
        keep_device(dP, gc, Pl->ncols, nb, P);
    free(gc);
    return KS_OK;
}

/* The builders run through the backend's AMG kernels with the local
 * system's A made there: on a device; on the cpu under
 * KS_AMG_DIST_LOCAL=device (the tests run the device's path so). */
int ks_amg_dist_local_on_backend(const ks_backend *be)
{
    const char *v = getenv("KS_AMG_DIST_LOCAL");
    return be && (!ks_backend_host_memory(be) || (v && strcmp(v, "device") == 0));
}

ks_error ks_dist_interp_rows(ks_backend *be, const ks_csr *AL, const ks_csr *AG,
                             const ks_sparse *dAL, const ks_sparse *dAG,
                             const ks_dist_strength *S, const int *cf, const ks_dist_coarse *C,
                             const ks_dist_ext_rows *R, const ks_dist_trunc *tr,
                             ks_dist_prows *P, const char *who)
{
    if (!ks_dist_trunc_active(tr))
        tr = NULL;
    sys x;
    memset(&x, 0, sizeof x);
    x.devA = ks_amg_dist_local_on_backend(be) && dAL && dAL->be == be && dAL->val &&
             (!dAG || (dAG->be == be && dAG->val));
    /* S's pattern where the strength left it (with A's: the same points) */
    x.devS = x.devA && S->dlocal.be == be && (!dAG || S->dghost.be == be);
    /* a rank without rows builds nothing: no device round trip for it, but
     * where A has no host rows (devA) */
    const int device = ks_amg_dist_local_on_backend(be) && (S->nloc > 0 || x.devA);
    double t = ks_wtime();
    ks_error e = x.devA || AL ? KS_OK
                              : ks_seterr(KS_ERR_ARG, "%s: no rows of A on the host", who);
    if (e == KS_OK)
        e = points(AL, AG, dAL, dAG, S, cf, C, R, &x);
    ks_amg_dist_substep(NULL, "  local system: points", &t);
    ks_csr Pl = {0};
    ks_sparse dP = {0}; /* the rows where a device built them */
    if (e == KS_OK) {
        if (!x.view)
            fill(AL, AG, S, R, &x);
        ks_int bad = S->nloc;
        if (x.devA)
            e = zero_diagonal_dev(be, dAL, &x, S->nloc, &bad);
        else
            bad = zero_diagonal(&x, AL, S->nloc);
        if (e == KS_OK && bad < S->nloc)
            e = ks_seterr(KS_ERR_NUMERIC, "%s: zero diagonal at row %lld", who,
                          (long long)(S->row_begin + bad));
    }
    ks_amg_dist_substep(NULL, "  local system: host rows and diagonal check", &t);
    if (e == KS_OK && x.devA)
        e = device_rows(be, dAL, dAG, S, R, x.A.rowptr, 0, &x, &x.dA);
    ks_amg_dist_substep(NULL, "  local system: A's rows on the device", &t);
    if (e == KS_OK && x.devS)
        e = device_rows(be, &S->dlocal, dAG ? &S->dghost : NULL, S, R, x.S.rowptr, 1, &x,
                        &x.dS);
    ks_amg_dist_substep(NULL, "  local system: S's rows on the device", &t);
    const ks_int r0 = x.fm.nbelow, r1 = r0 + S->nloc;
    if (e == KS_OK) {
        if (device)
            e = build_device(be, &x, R != NULL, r0, r1, tr, &Pl, &dP);
        else
            e = R ? ks_amg_interp_extended_i_rows(&x.A, &x.S, x.cf, r0, r1, &Pl)
                  : ks_amg_interp_direct_rows(&x.A, &x.S, x.cf, r0, r1, &Pl);
        if (e == KS_OK && tr && !device)
            e = ks_amg_interp_truncate(&Pl, tr->max_elements, tr->factor);
        if (e != KS_OK)
            ks_adderr(e, "%s (rank %d's local system)", who, S->comm->rank);
    }
    ks_amg_dist_substep(NULL, device ? "interpolation: device rows" : "interpolation: rows", &t);
    if (e == KS_OK)
        e = take_rows(&x, &Pl, S->nloc, &dP, P);
    ks_amg_dist_substep(NULL, "interpolation: rows to global columns", &t);
    ks_sparse_free(&dP);
    ks_csr_free(&Pl);
    sys_free(&x);
    return e;
}
