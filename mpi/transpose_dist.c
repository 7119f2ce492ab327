/* R = P^T over the ranks. P's rows are fine points (this rank's), its
 * columns global coarse ids; R's row J belongs to J's owner in the coarse
 * layout. Each entry P(i,J) travels once, as (J, i, value), to that owner
 * (an Alltoall of the counts, an Alltoallv of the entries; its own rank's
 * stay where they were packed).
 *
 * Determinism: a rank packs its entries in fine row order, Alltoallv lays
 * them out by sending rank, and the owner keeps the arrival order within
 * each row (a stable counting sort by row). Ranks hold consecutive fine
 * rows, so every row of R has its columns ascending, and the result is the
 * same whatever the timing. Nothing is summed: each (J, i) arrives once. */
#include "rap_dist.h"

#include <stdint.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct tentry {
    ks_gint row, col; /* R's row (coarse J), column (fine i) */
    double val;
} tentry;

/* Below this many entries one thread packs and sorts them. */
#define KS_TRANSPOSE_SERIAL 65536

static int threads_for(int64_t n)
{
#ifdef _OPENMP
    return n >= KS_TRANSPOSE_SERIAL ? omp_get_max_threads() : 1;
#else
    (void)n;
    return 1;
#endif
}

ks_int ks_dist_transpose_places(const ks_dist_prows *P, const ks_gint *coff, int p, ks_int *at,
                                int64_t *count)
{
    const ks_int n = P->nloc, nnz = n ? P->rowptr[n] : 0;
    int nt = threads_for(nnz);
    int64_t *pos = ks_calloc((size_t)nt * (size_t)p, sizeof *pos, "transpose counts");
    if (!pos)
        return -1;
#pragma omp parallel num_threads(nt)
    {
        int t = 0, used = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        used = omp_get_num_threads();
#endif
        const ks_int r0 = (ks_int)((int64_t)n * t / used);
        const ks_int r1 = (ks_int)((int64_t)n * (t + 1) / used);
        const ks_int k0 = n ? P->rowptr[r0] : 0, k1 = n ? P->rowptr[r1] : 0;
        int64_t *mine = pos + (size_t)t * (size_t)p;
        for (ks_int k = k0; k < k1; k++)
            mine[ks_layout_owner(coff, p, P->col[k])]++;
#pragma omp barrier
#pragma omp single
        {
            int64_t next = 0;
            for (int r = 0; r < p; r++) {
                const int64_t first = next;
                for (int q = 0; q < used; q++) {
                    const int64_t c = pos[(size_t)q * (size_t)p + r];
                    pos[(size_t)q * (size_t)p + r] = next;
                    next += c;
                }
                count[r] = next - first;
            }
        }
        for (ks_int k = k0; k < k1; k++) /* rows in order, each row's columns in order */
            at[k] = (ks_int)mine[ks_layout_owner(coff, p, P->col[k])]++;
    }
    free(pos);
    return nnz;
}

/* Counts and displacements (bytes, for MPI) and the packed entries by
 * destination, each destination's in fine row order
 * (ks_dist_transpose_places). */
static ks_error pack(const ks_dist_prows *P, const ks_gint *coff, int p, int *scount,
                     int *sdispl, tentry **out)
{
    const ks_int n = P->nloc, nnz = P->rowptr[n];
    const int nt = threads_for(nnz);
    ks_int bad = nnz; /* the first column out of range */
#pragma omp parallel for schedule(static) reduction(min : bad) num_threads(nt)
    for (ks_int k = 0; k < nnz; k++)
        if ((P->col[k] < 0 || P->col[k] >= coff[p]) && k < bad)
            bad = k;
    if (bad < nnz)
        return ks_seterr(KS_ERR_ARG, "transpose: P has coarse column %lld, outside 0 .. %lld",
                         (long long)P->col[bad], (long long)coff[p] - 1);
    if ((int64_t)nnz * (int64_t)sizeof(tentry) > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "transpose: more than 2^31 bytes of entries to send");
    ks_int *at = ks_malloc((size_t)nnz * sizeof *at + 1, "transpose places");
    int64_t *count = ks_malloc((size_t)p * sizeof *count, "transpose counts");
    *out = ks_malloc((size_t)nnz * sizeof **out + 1, "transpose entries to send");
    if (!at || !count || !*out || ks_dist_transpose_places(P, coff, p, at, count) < 0) {
        free(at);
        free(count);
        return KS_ERR_MEMORY;
    }
    int64_t displ = 0;
    for (int r = 0; r < p; r++) {
        sdispl[r] = (int)(displ * (int64_t)sizeof(tentry));
        scount[r] = (int)(count[r] * (int64_t)sizeof(tentry));
        displ += count[r];
    }
#pragma omp parallel for schedule(static) num_threads(nt)
    for (ks_int i = 0; i < n; i++)
        for (ks_int k = P->rowptr[i]; k < P->rowptr[i + 1]; k++)
            (*out)[at[k]] = (tentry){P->col[k], P->row_begin + i, P->val[k]};
    free(at);
    free(count);
    return KS_OK;
}

/* Row r's entries (col ascending but for the order the threads placed
 * them in) sorted by column: insertion, the rows are short and in few
 * runs. Columns are unique in a row. */
static void sort_row(ks_gint *col, double *val, ks_int len)
{
    for (ks_int a = 1; a < len; a++) {
        const ks_gint c = col[a];
        const double v = val[a];
        ks_int q = a;
        for (; q > 0 && col[q - 1] > c; q--) {
            col[q] = col[q - 1];
            val[q] = val[q - 1];
        }
        col[q] = c;
        val[q] = v;
    }
}

/* A run of arrivals: one sender's entries, or several senders' in rank
 * order. */
typedef struct tseg {
    const tentry *e;
    int64_t n;
} tseg;

/* R's rows from the arrivals, the runs given in sending rank order (the
 * received ones of lower ranks, this rank's own, those of higher ranks).
 * Each sender's come in fine row order, so a row's arrivals ascend by
 * column: one thread keeps their order (a stable counting sort by row);
 * several place them in any order and sort each row by column after, the
 * same rows (each column once a row). */
static ks_error build_rows(const tseg *seg, int nseg, ks_dist_prows *R)
{
    const ks_int nr = R->nloc;
    int64_t n = 0;
    for (int s = 0; s < nseg; s++)
        n += seg[s].n;
    if (n > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "transpose: more than 2^31 entries on one rank");
    R->rowptr = ks_calloc((size_t)nr + 2, sizeof *R->rowptr, "R row pointers");
    R->col = ks_malloc((size_t)n * sizeof *R->col + 1, "R columns");
    R->val = ks_malloc((size_t)n * sizeof *R->val + 1, "R values");
    if (!R->rowptr || !R->col || !R->val)
        return KS_ERR_MEMORY;
    const int nt = threads_for(n);
    for (int s = 0; s < nseg; s++) {
        const tentry *in = seg[s].e;
        const int64_t m = seg[s].n;
        int64_t bad = m; /* the first arrival of a row not here */
#pragma omp parallel for schedule(static) reduction(min : bad) num_threads(nt)
        for (int64_t t = 0; t < m; t++) {
            const ks_gint r = in[t].row - R->row_begin;
            if ((r < 0 || r >= nr) && t < bad)
                bad = t;
        }
        if (bad < m)
            return ks_seterr(KS_ERR_ARG, "transpose: row %lld arrived at a rank that does not "
                             "own it", (long long)in[bad].row);
    }
    ks_int *cnt = R->rowptr; /* counts at [r + 2], then starts at [r + 1] */
    if (nt == 1) {
        for (int s = 0; s < nseg; s++)
            for (int64_t t = 0; t < seg[s].n; t++)
                cnt[seg[s].e[t].row - R->row_begin + 2]++;
        ks_rowptr_scan(cnt + 1, nr);
        for (int s = 0; s < nseg; s++)
            for (int64_t t = 0; t < seg[s].n; t++) {
                const tentry *a = seg[s].e + t;
                const ks_int q = cnt[a->row - R->row_begin + 1]++;
                R->col[q] = a->col;
                R->val[q] = a->val;
            }
        return KS_OK; /* rowptr[0 .. nr] now the row starts */
    }
    for (int s = 0; s < nseg; s++) {
        const tentry *in = seg[s].e;
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t t = 0; t < seg[s].n; t++) {
#pragma omp atomic update
            cnt[in[t].row - R->row_begin + 2]++;
        }
    }
    ks_rowptr_scan(cnt + 1, nr);
    for (int s = 0; s < nseg; s++) {
        const tentry *in = seg[s].e;
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t t = 0; t < seg[s].n; t++) {
            ks_int q;
#pragma omp atomic capture
            q = cnt[in[t].row - R->row_begin + 1]++;
            R->col[q] = in[t].col;
            R->val[q] = in[t].val;
        }
    }
#pragma omp parallel for schedule(dynamic, 256) num_threads(nt)
    for (ks_int r = 0; r < nr; r++)
        sort_row(R->col + cnt[r], R->val + cnt[r], cnt[r + 1] - cnt[r]);
    return KS_OK; /* rowptr[0 .. nr] now the row starts */
}

ks_error ks_dist_prows_transpose(const ks_dist_prows *P, const ks_gint *foff, const ks_gint *coff,
                                 ks_dist_prows *R)
{
    static const char who[] = "distributed transpose R = P^T";
    memset(R, 0, sizeof *R);
    const ks_comm *c = P->comm;
    const int p = c->size, me = c->rank;
    R->comm = c;
    R->nloc = (ks_int)(coff[me + 1] - coff[me]);
    R->row_begin = coff[me];
    R->c_begin = foff[me];
    R->nc = (ks_int)(foff[me + 1] - foff[me]);
    R->nc_global = foff[p];
    int *cnt = ks_calloc(4 * (size_t)p, sizeof *cnt, "transpose counts");
    int *scount = cnt, *rcount = cnt + p, *sdispl = cnt + 2 * p, *rdispl = cnt + 3 * p;
    tentry *out = NULL, *in = NULL;
    int64_t nin = 0;
    ks_error e = cnt ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK && (P->nloc != R->nc || P->row_begin != R->c_begin || P->nc != R->nloc ||
                       P->c_begin != R->row_begin))
        e = ks_seterr(KS_ERR_ARG, "%s: P's layouts are not the given ones", who);
    double t = ks_wtime();
    if (e == KS_OK)
        e = pack(P, coff, p, scount, sdispl, &out);
    ks_amg_dist_substep(c, "transpose: pack", &t);
    e = ks_comm_agree(c, e);
    /* This rank's own entries, most of them, stay where pack put them:
     * only the others' go through MPI (a copy of them all through the
     * library's shared memory took 0.39 s at level 0 of 128^3 on 2 ranks) */
    tseg seg[3];
    int nseg = 0;
    if (e == KS_OK) {
        const int own = scount[me];
        scount[me] = 0;
        int64_t bytes = 0;
        if (p > 1)
            e = ks_exchange_bytes(c, out, scount, sdispl, rcount, rdispl, (void **)&in, &bytes,
                                  "transpose entries");
        nin = bytes / (int64_t)sizeof(tentry);
        const int64_t below = p > 1 ? rdispl[me] / (int64_t)sizeof(tentry) : 0;
        seg[nseg++] = (tseg){in, below};
        seg[nseg++] = (tseg){out + sdispl[me] / (int64_t)sizeof(tentry),
                             own / (int64_t)sizeof(tentry)};
        seg[nseg++] = (tseg){in ? in + below : NULL, nin - below};
    }
    free(cnt);
    ks_amg_dist_substep(c, "transpose: exchange", &t);
    if (e == KS_OK)
        e = ks_comm_agree(c, build_rows(seg, nseg, R));
    ks_amg_dist_substep(c, "transpose: rows", &t);
    free(out);
    free(in);
    if (e != KS_OK) {
        ks_dist_prows_free(R);
        return ks_adderr(e, "%s", who);
    }
    return KS_OK;
}
