/* Ac = P^T (A P) over the ranks. Row J of Ac is the sum over fine rows i
 * of P(i,J) * AP(i,:); the fine rows i are spread over the ranks, row J
 * belongs to the owner of coarse point J (each rank's C points, P's
 * coarse layout). So each rank forms its contributions P(i,J) * AP(i,:)
 * and every one travels to J's owner (its own included, through the same
 * exchange): an Alltoall of the counts, an Alltoallv of (J, column,
 * value) entries.
 *
 * Determinism: a rank packs its entries by fine row, then P's row order,
 * then AP's; Alltoallv lays them out by sending rank. The owner sorts each
 * coarse row's entries by column, keeping that order among equal columns
 * (the buffer position breaks ties), and adds them into 0.0. Ranks hold
 * consecutive fine rows, so this is global fine row order: the order in
 * which ks_csr_spgemm adds R(J,i) * AP(i,c) with R = P^T. Each AP(i,c)
 * being the serial bits too (ap_dist.c), Ac equals the serial
 * spgemm(P^T, A P) bit for bit, in every run and for any rank count. */
#include "rap_dist.h"

#include <stdint.h>
#include <string.h>

typedef struct entry {
    ks_gint row, col;
    double val;
} entry;

/* Per-destination entry counts (bytes for MPI) of this rank's
 * contributions; KS_ERR_SIZE past MPI's int counts. */
static ks_error count_out(const ks_dist_prows *P, const ks_dist_csr *AP, const ks_gint *coff,
                          int p, int *scount, int64_t *nout)
{
    int64_t *n = ks_calloc((size_t)p, sizeof *n, "RAP entry counts");
    if (!n)
        return KS_ERR_MEMORY;
    ks_error e = KS_OK;
    for (ks_int i = 0; i < P->nloc && e == KS_OK; i++)
        for (ks_int q = P->rowptr[i]; q < P->rowptr[i + 1] && e == KS_OK; q++) {
            /* A column outside the coarse grid would go to a wrong owner. */
            if (P->col[q] < 0 || P->col[q] >= coff[p])
                e = ks_seterr(KS_ERR_ARG, "RAP: P's row %lld has coarse column %lld, outside "
                              "0 .. %lld", (long long)(P->row_begin + i), (long long)P->col[q],
                              (long long)coff[p] - 1);
            else
                n[ks_layout_owner(coff, p, P->col[q])] += AP->rowptr[i + 1] - AP->rowptr[i];
        }
    *nout = 0;
    for (int r = 0; r < p && e == KS_OK; r++) {
        *nout += n[r];
        if (n[r] * (int64_t)sizeof(entry) > INT32_MAX || *nout * (int64_t)sizeof(entry) > INT32_MAX)
            e = ks_seterr(KS_ERR_SIZE, "RAP: more than 2^31 bytes of coarse entries to send");
        scount[r] = (int)(n[r] * (int64_t)sizeof(entry));
    }
    free(n);
    return e;
}

/* The contributions grouped by destination, each group in fine row order. */
static ks_error pack(const ks_dist_prows *P, const ks_dist_csr *AP, const ks_gint *coff, int p,
                     const int *sdispl, entry *out)
{
    int64_t *pos = ks_malloc((size_t)p * sizeof *pos, "RAP pack positions");
    if (!pos)
        return KS_ERR_MEMORY;
    for (int r = 0; r < p; r++)
        pos[r] = sdispl[r] / (int)sizeof(entry);
    for (ks_int i = 0; i < P->nloc; i++)
        for (ks_int q = P->rowptr[i]; q < P->rowptr[i + 1]; q++) {
            const ks_gint J = P->col[q];
            const double pij = P->val[q];
            int64_t *m = &pos[ks_layout_owner(coff, p, J)];
            for (ks_int k = AP->rowptr[i]; k < AP->rowptr[i + 1]; k++)
                out[(*m)++] = (entry){J, AP->colind[k], pij * AP->val[k]};
        }
    free(pos);
    return KS_OK;
}

/* A coarse row's entry: its column and where it arrived (the order). */
typedef struct key {
    ks_gint col;
    int64_t at;
} key;

static int cmp_key(const void *a, const void *b)
{
    const key *x = a, *y = b;
    if (x->col != y->col)
        return (x->col > y->col) - (x->col < y->col);
    return (x->at > y->at) - (x->at < y->at);
}

/* This rank's coarse rows from the n entries received (all of them its
 * rows), summed in arrival order per column. */
static ks_error sum_rows(const entry *in, int64_t n, ks_dist_csr *Ac)
{
    const ks_int nc = Ac->nrows;
    ks_int *start = ks_calloc((size_t)nc + 2, sizeof *start, "RAP row buckets");
    key *k = ks_malloc((size_t)n * sizeof *k + 1, "RAP entry order");
    Ac->rowptr = ks_calloc((size_t)nc + 1, sizeof *Ac->rowptr, "coarse row pointers");
    Ac->colind = ks_malloc((size_t)n * sizeof *Ac->colind + 1, "coarse columns");
    Ac->val = ks_malloc((size_t)n * sizeof *Ac->val + 1, "coarse values");
    ks_error e = start && k && Ac->rowptr && Ac->colind && Ac->val ? KS_OK : KS_ERR_MEMORY;
    for (int64_t t = 0; t < n && e == KS_OK; t++) {
        const ks_gint r = in[t].row - Ac->row_begin;
        if (r < 0 || r >= nc)
            e = ks_seterr(KS_ERR_ARG, "RAP: coarse row %lld arrived at a rank that does "
                          "not own it", (long long)in[t].row);
        else
            start[r + 2]++;
    }
    /* Stable counting sort by row: arrival order kept within each row. */
    for (ks_int r = 0; r < nc && e == KS_OK; r++)
        start[r + 2] += start[r + 1];
    for (int64_t t = 0; t < n && e == KS_OK; t++)
        k[start[in[t].row - Ac->row_begin + 1]++] = (key){in[t].col, t};
    int64_t nnz = 0;
    for (ks_int r = 0; r < nc && e == KS_OK; r++) {
        const ks_int b = r ? start[r] : 0, end = start[r + 1];
        qsort(k + b, (size_t)(end - b), sizeof *k, cmp_key);
        for (ks_int t = b; t < end;) {
            const ks_gint col = k[t].col;
            double s = 0.0;
            for (; t < end && k[t].col == col; t++)
                s += in[k[t].at].val;
            Ac->colind[nnz] = col;
            Ac->val[nnz++] = s;
        }
        Ac->rowptr[r + 1] = (ks_int)nnz;
    }
    Ac->nnz = (ks_int)nnz;
    free(start);
    free(k);
    return e;
}

/* The exchange: counts, then entries. Each collective runs only when every
 * rank reached it with KS_OK. */
static ks_error exchange(const ks_comm *c, const ks_dist_prows *P, const ks_dist_csr *AP,
                         const ks_gint *coff, entry **in, int64_t *nin)
{
    const int p = c->size;
    int *cnt = ks_calloc(4 * (size_t)p, sizeof *cnt, "RAP counts");
    entry *out = NULL;
    int64_t nout = 0;
    ks_error e = cnt ? KS_OK : KS_ERR_MEMORY;
    int *scount = cnt, *rcount = cnt + p, *sdispl = cnt + 2 * p, *rdispl = cnt + 3 * p;
    if (e == KS_OK)
        e = count_out(P, AP, coff, p, scount, &nout);
    if (e == KS_OK) {
        out = ks_malloc((size_t)nout * sizeof *out + 1, "RAP entries to send");
        e = out ? KS_OK : KS_ERR_MEMORY;
    }
    for (int r = 1; r < p && e == KS_OK; r++)
        sdispl[r] = sdispl[r - 1] + scount[r - 1];
    if (e == KS_OK)
        e = pack(P, AP, coff, p, sdispl, out);
    e = ks_comm_agree(c, e);
    if (e == KS_OK) {
        int64_t bytes = 0;
        e = ks_exchange_bytes(c, out, scount, sdispl, rcount, rdispl, (void **)in, &bytes,
                              "RAP coarse entries");
        *nin = bytes / (int64_t)sizeof(entry);
    }
    free(out);
    free(cnt);
    return e;
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
    ks_gint *coff = NULL;
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_layout_gather(c, P->nc, &coff));
    if (e == KS_OK && (coff[c->rank] != P->c_begin || coff[c->size] != P->nc_global))
        e = ks_seterr(KS_ERR_ARG, "%s: P's coarse layout is not its ranks' C counts", who);
    e = ks_comm_agree(c, e);
    entry *in = NULL;
    int64_t nin = 0;
    if (e == KS_OK)
        e = exchange(c, P, AP, coff, &in, &nin);
    Ac->nrows = P->nc;
    Ac->row_begin = P->c_begin;
    Ac->nrows_global = Ac->ncols_global = P->nc_global;
    if (e == KS_OK)
        e = ks_comm_agree(c, sum_rows(in, nin, Ac));
    free(in);
    free(coff);
    if (e != KS_OK) {
        ks_dist_csr_free(Ac);
        return ks_adderr(e, "%s", who);
    }
    return KS_OK;
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
