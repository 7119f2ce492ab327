/* Host layout of "codsell" (CoD-SELL, described in codsell.h): length sort
 * in windows, greedy pairing of neighbouring rows by their common relative
 * pattern into slices of at most C rows, per-slice dictionaries, the SELL
 * remainder, refusal when the padding would dominate, the float64
 * reference apply (the kernel's loops), bytes and the way back to CSR. */
#include "codsell.h"
#include "ell_family.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define NAME "codsell"

typedef struct {
    ks_int score, left;
} edge;

/* Best score first, then leftmost (deterministic). */
static int cmp_edge(const void *a, const void *b)
{
    const edge *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return (x->left > y->left) - (x->left < y->left);
}

/* |a ∩ b| of two sorted offset lists. */
static ks_int inter_count(const ks_int *a, ks_int na, const ks_int *b, ks_int nb)
{
    ks_int i = 0, j = 0, n = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j])
            i++;
        else if (a[i] > b[j])
            j++;
        else
            n++, i++, j++;
    }
    return n;
}

/* a := a ∩ b in place (the result is never longer than a); returns its length. */
static ks_int inter_inplace(ks_int *a, ks_int na, const ks_int *b, ks_int nb)
{
    ks_int i = 0, j = 0, n = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j])
            i++;
        else if (a[i] > b[j])
            j++;
        else
            a[n++] = a[i], i++, j++;
    }
    return n;
}

/* Relative pattern of original row `row` into out; returns its length. */
static ks_int rel_pattern(const ks_csr *A, ks_int row, ks_int *out)
{
    const ks_int j0 = A->rowptr[row], len = A->rowptr[row + 1] - j0;
    for (ks_int k = 0; k < len; k++)
        out[k] = A->colind[j0 + k] - A->colind[j0];
    return len;
}

/* Stored bytes of a slice of R rows, dictionary D, longest row `longest`:
 * dictionary values 8, remainder slots 12 (padding included), dictionary 4
 * per entry, slice pointers 16. */
static double group_bytes(ks_int R, ks_int D, ks_int longest)
{
    return (double)R * (8.0 * D + 12.0 * (double)(longest - D)) + 4.0 * D + 16.0;
}

/* Greedy pairing of the sorted positions p0 .. p1-1 (one window): sets
 * start[p] = 1 at the first position of each resulting slice. */
static ks_error group_window(const ks_csr *A, const ks_int *perm, ks_int p0, ks_int p1, int C,
                             unsigned char *start)
{
    const ks_int m = p1 - p0;
    int64_t wnnz = 0;
    for (ks_int p = p0; p < p1; p++)
        wnnz += A->rowptr[perm[p] + 1] - A->rowptr[perm[p]];
    ks_int *buf = malloc(sizeof(ks_int) * ((size_t)wnnz + 1));
    ks_int *gpos = malloc(sizeof(ks_int) * (size_t)m);   /* first position */
    ks_int *gn = malloc(sizeof(ks_int) * (size_t)m);     /* rows */
    ks_int *goff = malloc(sizeof(ks_int) * (size_t)m);   /* dictionary in buf */
    ks_int *glen = malloc(sizeof(ks_int) * (size_t)m);   /* dictionary length */
    ks_int *glong = malloc(sizeof(ks_int) * (size_t)m);  /* longest row */
    edge *ed = malloc(sizeof(edge) * (size_t)m);
    unsigned char *matched = malloc((size_t)m);
    ks_error e = KS_OK;
    if (!buf || !gpos || !gn || !goff || !glen || !glong || !ed || !matched) {
        e = KS_ERR_MEMORY;
        goto done;
    }
    ks_int G = m, off = 0;
    for (ks_int i = 0; i < m; i++) {
        gpos[i] = p0 + i;
        gn[i] = 1;
        goff[i] = off;
        glen[i] = rel_pattern(A, perm[p0 + i], buf + off);
        glong[i] = glen[i];
        off += glen[i];
    }
    for (;;) {
        ks_int ne = 0;
        for (ks_int i = 0; i + 1 < G; i++)
            if (gn[i] + gn[i + 1] <= C) {
                const ks_int sc = inter_count(buf + goff[i], glen[i], buf + goff[i + 1],
                                              glen[i + 1]);
                const ks_int lg = glong[i] > glong[i + 1] ? glong[i] : glong[i + 1];
                const double apart = group_bytes(gn[i], glen[i], glong[i]) +
                                     group_bytes(gn[i + 1], glen[i + 1], glong[i + 1]);
                if (group_bytes(gn[i] + gn[i + 1], sc, lg) > KS_CODSELL_MERGE_SLACK * apart)
                    continue; /* e.g. a long row with short ones: padding */
                ed[ne].score = sc;
                ed[ne].left = i;
                ne++;
            }
        if (ne == 0)
            break;
        qsort(ed, (size_t)ne, sizeof *ed, cmp_edge);
        memset(matched, 0, (size_t)G);
        for (ks_int k = 0; k < ne; k++) {
            const ks_int i = ed[k].left;
            if (!matched[i] && !matched[i + 1])
                matched[i] = 1, matched[i + 1] = 2; /* 1: left of a pair, 2: right */
        }
        /* Merge in order: pairs become one group, the others carry over. */
        ks_int g = 0;
        for (ks_int i = 0; i < G; i++) {
            gpos[g] = gpos[i];
            gn[g] = gn[i];
            goff[g] = goff[i];
            glen[g] = glen[i];
            glong[g] = glong[i];
            if (matched[i] == 1) {
                if (glong[i + 1] > glong[g])
                    glong[g] = glong[i + 1];
                glen[g] = inter_inplace(buf + goff[g], glen[g], buf + goff[i + 1], glen[i + 1]);
                gn[g] += gn[i + 1];
                i++;
            }
            g++;
        }
        G = g;
    }
    for (ks_int i = 0; i < G; i++)
        start[gpos[i]] = 1;
done:
    free(buf);
    free(gpos);
    free(gn);
    free(goff);
    free(glen);
    free(glong);
    free(ed);
    free(matched);
    return e;
}

static ks_error check_params(const ks_spmv_params *prm, int *C_out, int *sigma_out)
{
    int C = prm ? prm->slice_height : 0;
    if (C == 0)
        C = KS_SELL_DEFAULT_SLICE_HEIGHT;
    if (C < 1 || C > KS_SELL_MAX_SLICE_HEIGHT || (C & (C - 1)) != 0)
        return ks_seterr(KS_ERR_ARG,
                         NAME ": slice_height = %d; use 0 (default %d) or a power of two from 1 "
                              "to %d",
                         C, KS_SELL_DEFAULT_SLICE_HEIGHT, KS_SELL_MAX_SLICE_HEIGHT);
    int sigma = prm ? prm->sort_window : 0;
    if (sigma == 0)
        sigma = KS_SELL_DEFAULT_SIGMA_SLICES * C;
    if (sigma < 1 || (sigma != 1 && sigma % C != 0))
        return ks_seterr(KS_ERR_ARG,
                         NAME ": sort_window (sigma) = %d; use 0 (default %d C), 1 (no sorting) "
                              "or a multiple of slice_height %d",
                         sigma, KS_SELL_DEFAULT_SIGMA_SLICES, C);
    *C_out = C;
    *sigma_out = sigma;
    return KS_OK;
}

/* Running int32 offset: KS_ERR_UNSUPPORTED past the 32-bit range. */
static ks_error add_checked(int64_t *total, int64_t add, const char *what)
{
    *total += add;
    if (*total > INT_MAX)
        return ks_seterr(KS_ERR_UNSUPPORTED,
                         NAME ": more than %d %s exceed the 32-bit index range", INT_MAX, what);
    return KS_OK;
}

ks_error ks_codsell_layout_build(const ks_csr *A, const ks_spmv_params *prm, void **layout)
{
    if (!layout)
        return ks_seterr(KS_ERR_ARG, NAME ": NULL layout pointer");
    *layout = NULL;
    KS_TRY(ks_ell_family_check_csr(A, NAME));
    int C = 0, sigma = 0; /* set by check_params */
    KS_TRY(check_params(prm, &C, &sigma));
    double max_fill;
    KS_TRY(ks_ell_family_max_fill(prm, NAME, KS_SELL_DEFAULT_MAX_FILL, &max_fill));

    const ks_int n = A->nrows;
    const size_t n1 = (size_t)n + 1;
    ks_codsell_layout *L = ks_calloc(1, sizeof *L, "codsell layout");
    unsigned char *start = ks_calloc(n1, 1, "codsell slice starts");
    ks_int *tmpdict = NULL, *tmpoff = NULL, *dlen = NULL, *rwid = NULL;
    ks_error e = KS_ERR_MEMORY;
    if (!L || !start)
        goto fail;
    L->nrows = n;
    L->ncols = A->ncols;
    L->nnz = A->nnz;
    L->C = C;
    L->sigma = sigma;
    L->perm = ks_malloc(sizeof(ks_int) * n1, "codsell permutation");
    L->rowlen = ks_malloc(sizeof(ks_int) * n1, "codsell row lengths");
    L->base = ks_malloc(sizeof(ks_int) * n1, "codsell base columns");
    if (!L->perm || !L->rowlen || !L->base)
        goto fail;

    /* 1. Length sort within windows of sigma (SELL-C-sigma's order). */
    int permuted = ks_sell_sort_rows(A, sigma, L->perm, L->rowlen);
    if (permuted < 0)
        goto fail;
    L->permuted = permuted;
    for (ks_int p = 0; p < n; p++)
        L->base[p] = L->rowlen[p] > 0 ? A->colind[A->rowptr[L->perm[p]]] : 0;

    /* 2. Greedy pairing within windows of W positions (independent: the
     * result does not depend on the thread count). */
    {
        const int64_t W = sigma > C ? sigma : C;
        const ks_int nwin = (ks_int)(((int64_t)n + W - 1) / W);
        int failed = 0;
#pragma omp parallel for schedule(dynamic, 4) reduction(| : failed)
        for (ks_int w = 0; w < nwin; w++) {
            const int64_t w0 = (int64_t)w * W, w1 = w0 + W < n ? w0 + W : n;
            if (group_window(A, L->perm, (ks_int)w0, (ks_int)w1, C, start) != KS_OK)
                failed = 1;
        }
        if (failed) {
            e = ks_seterr(KS_ERR_MEMORY, NAME ": out of memory while pairing rows");
            goto fail;
        }
    }
    ks_int ns = 0;
    for (ks_int p = 0; p < n; p++)
        ns += start[p];
    L->nslices = ns;
    const size_t ns1 = (size_t)ns + 1;
    L->slice_row = ks_malloc(sizeof(ks_int) * ns1, "codsell slice rows");
    L->dict_ptr = ks_malloc(sizeof(ks_int) * ns1, "codsell dictionary pointers");
    L->dval_ptr = ks_malloc(sizeof(ks_int) * ns1, "codsell value pointers");
    L->rem_ptr = ks_malloc(sizeof(ks_int) * ns1, "codsell remainder pointers");
    tmpoff = ks_malloc(sizeof(ks_int) * ns1, "codsell scratch");
    dlen = ks_malloc(sizeof(ks_int) * ns1, "codsell scratch");
    rwid = ks_malloc(sizeof(ks_int) * ns1, "codsell scratch");
    if (!L->slice_row || !L->dict_ptr || !L->dval_ptr || !L->rem_ptr || !tmpoff || !dlen ||
        !rwid)
        goto fail;
    {
        ks_int s = 0;
        int64_t off = 0;
        for (ks_int p = 0; p < n; p++)
            if (start[p]) {
                L->slice_row[s] = p;
                tmpoff[s] = (ks_int)off; /* <= nnz */
                off += L->rowlen[p];
                s++;
            }
        L->slice_row[ns] = n;
        tmpdict = ks_malloc(sizeof(ks_int) * ((size_t)off + 1), "codsell scratch");
        if (!tmpdict)
            goto fail;
    }

    /* 3. Dictionaries (the common relative pattern of each slice) and
     * remainder widths: a dictionary entry is in every row of its slice,
     * so a row keeps rowlen - D entries for the remainder. */
#pragma omp parallel for schedule(dynamic, 64)
    for (ks_int s = 0; s < ns; s++) {
        const ks_int q0 = L->slice_row[s], q1 = L->slice_row[s + 1];
        ks_int *d = tmpdict + tmpoff[s];
        ks_int D = rel_pattern(A, L->perm[q0], d), longest = L->rowlen[q0];
        for (ks_int p = q0 + 1; p < q1; p++) {
            const ks_int row = L->perm[p], j0 = A->rowptr[row];
            /* Relative offsets of row p, compared on the fly. */
            ks_int i = 0, j = 0, k = 0;
            while (i < D && j < L->rowlen[p]) {
                const ks_int rel = A->colind[j0 + j] - L->base[p];
                if (d[i] < rel)
                    i++;
                else if (d[i] > rel)
                    j++;
                else
                    d[k++] = d[i], i++, j++;
            }
            D = k;
            if (L->rowlen[p] > longest)
                longest = L->rowlen[p];
        }
        dlen[s] = D;
        rwid[s] = longest - D;
    }

    int64_t tdict = 0, tdval = 0, trem = 0;
    double real_slots = 0.0;
    ks_int worst = 0;
    double worst_pad = -1.0;
    for (ks_int s = 0; s < ns; s++) {
        const ks_int R = L->slice_row[s + 1] - L->slice_row[s];
        L->dict_ptr[s] = (ks_int)tdict;
        L->dval_ptr[s] = (ks_int)tdval;
        L->rem_ptr[s] = (ks_int)trem;
        if ((e = add_checked(&tdict, dlen[s], "dictionary entries")) != KS_OK ||
            (e = add_checked(&tdval, (int64_t)R * dlen[s], "dictionary values")) != KS_OK ||
            (e = add_checked(&trem, (int64_t)R * rwid[s], "remainder slots")) != KS_OK)
            goto fail;
        int64_t nz = 0;
        for (ks_int p = L->slice_row[s]; p < L->slice_row[s + 1]; p++)
            nz += L->rowlen[p];
        const double slots = (double)R * (double)(dlen[s] + rwid[s]);
        real_slots += slots;
        if (slots - (double)nz > worst_pad) {
            worst_pad = slots - (double)nz;
            worst = s;
        }
    }
    L->dict_ptr[ns] = (ks_int)tdict;
    L->dval_ptr[ns] = (ks_int)tdval;
    L->rem_ptr[ns] = (ks_int)trem;
    if (real_slots > max_fill * (double)A->nnz) {
        const double bytes = 8.0 * (double)tdval + 12.0 * (double)trem + 4.0 * (double)tdict +
                             4.0 * n + 16.0 * (double)ns1 + (L->permuted ? 4.0 * n : 0.0);
        const double csr_bytes = 12.0 * A->nnz + 4.0 * ((double)n + 1.0);
        const ks_int q0 = L->slice_row[worst];
        e = ks_seterr(KS_ERR_UNSUPPORTED,
                      NAME ": slice %d pads its remainder to %d entries (original row %d has "
                           "%d, dictionary %d), mean row %.1f: size %.1f MB = %.1fx CSR "
                           "(stored slots / nnz = %.1f > max_fill %g)",
                      (int)worst, (int)rwid[worst], (int)L->perm[q0], (int)L->rowlen[q0],
                      (int)dlen[worst], n > 0 ? (double)A->nnz / n : 0.0, bytes / 1e6,
                      bytes / csr_bytes, A->nnz > 0 ? real_slots / A->nnz : INFINITY,
                      max_fill);
        goto fail;
    }

    L->dict = ks_malloc(sizeof(ks_int) * ((size_t)tdict + 1), "codsell dictionaries");
    L->dval = ks_malloc(sizeof(double) * ((size_t)tdval + 1), "codsell dictionary values");
    L->rem_col = ks_malloc(sizeof(ks_int) * ((size_t)trem + 1), "codsell remainder columns");
    L->rem_val = ks_malloc(sizeof(double) * ((size_t)trem + 1), "codsell remainder values");
    if (!L->dict || !L->dval || !L->rem_col || !L->rem_val) {
        e = KS_ERR_MEMORY;
        goto fail;
    }

    /* Fill, slice by slice (each owns its slots). */
#pragma omp parallel for schedule(dynamic, 64)
    for (ks_int s = 0; s < ns; s++) {
        const ks_int q0 = L->slice_row[s], R = L->slice_row[s + 1] - q0, D = dlen[s];
        const ks_int Wr = rwid[s];
        const ks_int *d = tmpdict + tmpoff[s];
        memcpy(L->dict + L->dict_ptr[s], d, sizeof(ks_int) * (size_t)D);
        for (ks_int r = 0; r < R; r++) {
            const ks_int p = q0 + r, row = L->perm[p], j0 = A->rowptr[row];
            const ks_int len = L->rowlen[p], b = L->base[p];
            ks_int i = 0, k = 0;
            ks_int pc = len > 0 ? b : (row < A->ncols ? row : A->ncols - 1);
            for (ks_int j = 0; j < len; j++) {
                const ks_int c = A->colind[j0 + j], rel = c - b;
                while (i < D && d[i] < rel)
                    i++;
                if (i < D && d[i] == rel) {
                    L->dval[L->dval_ptr[s] + (size_t)i * R + r] = A->val[j0 + j];
                    i++;
                } else {
                    const size_t o = (size_t)L->rem_ptr[s] + (size_t)k * R + r;
                    L->rem_col[o] = c;
                    L->rem_val[o] = A->val[j0 + j];
                    pc = c;
                    k++;
                }
            }
            /* Padding: value 0 at a column the row already reads (no
             * branch in the kernel). Wr > 0 implies ncols > 0. */
            for (; k < Wr; k++) {
                const size_t o = (size_t)L->rem_ptr[s] + (size_t)k * R + r;
                L->rem_col[o] = pc;
                L->rem_val[o] = 0.0;
            }
        }
    }
    free(start);
    free(tmpdict);
    free(tmpoff);
    free(dlen);
    free(rwid);
    *layout = L;
    return KS_OK;

fail:
    free(start);
    free(tmpdict);
    free(tmpoff);
    free(dlen);
    free(rwid);
    ks_codsell_layout_free(L);
    return e;
}

/* One row at a time, as one kernel thread does: the dictionary entries,
 * then the remainder (padding included), then y[perm[p]]. */
void ks_codsell_layout_apply(const void *layout, double alpha, const double *x, double beta,
                             double *y)
{
    const ks_codsell_layout *L = layout;
    for (ks_int s = 0; s < L->nslices; s++) {
        const ks_int q0 = L->slice_row[s], R = L->slice_row[s + 1] - q0;
        const ks_int d0 = L->dict_ptr[s], D = L->dict_ptr[s + 1] - d0;
        const ks_int Wr = (L->rem_ptr[s + 1] - L->rem_ptr[s]) / R;
        for (ks_int r = 0; r < R; r++) {
            const ks_int p = q0 + r, b = L->base[p];
            const double *v = L->dval + L->dval_ptr[s] + r;
            double sum = 0.0;
            for (ks_int j = 0; j < D; j++)
                sum += v[(size_t)j * R] * x[b + L->dict[d0 + j]];
            const ks_int *rc = L->rem_col + L->rem_ptr[s] + r;
            const double *rv = L->rem_val + L->rem_ptr[s] + r;
            for (ks_int k = 0; k < Wr; k++)
                sum += rv[(size_t)k * R] * x[rc[(size_t)k * R]];
            const ks_int row = L->perm[p];
            /* beta == 0 must not read y: it may hold garbage or NaN. */
            y[row] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[row];
        }
    }
}

double ks_codsell_index_bytes(const void *layout)
{
    const ks_codsell_layout *L = layout;
    return 4.0 * ((double)L->dict_ptr[L->nslices] + (double)L->nrows /* base */ +
                  (double)L->rem_ptr[L->nslices] + 4.0 * ((double)L->nslices + 1.0) +
                  (L->permuted ? (double)L->nrows : 0.0));
}

double ks_codsell_storage_bytes(const void *layout)
{
    const ks_codsell_layout *L = layout;
    return ks_codsell_index_bytes(L) +
           8.0 * ((double)L->dval_ptr[L->nslices] + (double)L->rem_ptr[L->nslices]);
}

/* Bytes per apply (beta = 0): the stored data (ks_codsell_storage_bytes:
 * dictionary values 8, remainder slots 12 with padding, dictionaries 4 per
 * entry once per slice (threads of a slice share the reads), bases 4 per
 * row, the four slice pointer arrays, perm when permuted), x gathered once
 * per stored slot (8; padding hits a column its row already read, so an
 * upper bound), and y written (8 per row). */
double ks_codsell_layout_bytes(const void *layout)
{
    const ks_codsell_layout *L = layout;
    const double slots = (double)L->dval_ptr[L->nslices] + (double)L->rem_ptr[L->nslices];
    return ks_codsell_storage_bytes(L) + 8.0 * slots + 8.0 * L->nrows;
}

void ks_codsell_layout_free(void *layout)
{
    ks_codsell_layout *L = layout;
    if (!L)
        return;
    free(L->slice_row);
    free(L->dict_ptr);
    free(L->dval_ptr);
    free(L->rem_ptr);
    free(L->dict);
    free(L->perm);
    free(L->rowlen);
    free(L->base);
    free(L->dval);
    free(L->rem_col);
    free(L->rem_val);
    free(L);
}

/* Each row's dictionary columns and remainder columns are both ascending:
 * merging them gives the CSR row back, explicit zeros included. */
ks_error ks_codsell_layout_to_csr(const void *layout, ks_csr *A)
{
    const ks_codsell_layout *L = layout;
    if (!L || !A)
        return ks_seterr(KS_ERR_ARG, NAME " layout to CSR: NULL argument");
    KS_TRY(ks_csr_alloc(A, L->nrows, L->ncols, L->nnz));
    A->rowptr[0] = 0;
    for (ks_int p = 0; p < L->nrows; p++)
        A->rowptr[L->perm[p] + 1] = L->rowlen[p];
    for (ks_int i = 0; i < L->nrows; i++)
        A->rowptr[i + 1] += A->rowptr[i];
    for (ks_int s = 0; s < L->nslices; s++) {
        const ks_int q0 = L->slice_row[s], R = L->slice_row[s + 1] - q0;
        const ks_int d0 = L->dict_ptr[s], D = L->dict_ptr[s + 1] - d0;
        for (ks_int r = 0; r < R; r++) {
            const ks_int p = q0 + r, b = L->base[p], nrem = L->rowlen[p] - D;
            const double *v = L->dval + L->dval_ptr[s] + r;
            const ks_int *rc = L->rem_col + L->rem_ptr[s] + r;
            const double *rv = L->rem_val + L->rem_ptr[s] + r;
            ks_int pos = A->rowptr[L->perm[p]], j = 0, k = 0;
            while (j < D || k < nrem) {
                const int take_dict =
                    k >= nrem || (j < D && b + L->dict[d0 + j] < rc[(size_t)k * R]);
                if (take_dict) {
                    A->colind[pos] = b + L->dict[d0 + j];
                    A->val[pos++] = v[(size_t)j * R];
                    j++;
                } else {
                    A->colind[pos] = rc[(size_t)k * R];
                    A->val[pos++] = rv[(size_t)k * R];
                    k++;
                }
            }
        }
    }
    return KS_OK;
}
