/* R = P^T over the ranks. P's rows are fine points (this rank's), its
 * columns global coarse ids; R's row J belongs to J's owner in the coarse
 * layout. Each entry P(i,J) of another rank's J travels once, as
 * (J, i, value), to that owner (an Alltoall of the counts, an Alltoallv of
 * the entries); this rank's own, most of them, are read in P where they
 * are.
 *
 * Determinism: a rank packs its entries in fine row order, Alltoallv lays
 * them out by sending rank, and the owner keeps the arrival order within
 * each row (a stable counting sort by row: lower ranks' arrivals, its own
 * entries, higher ranks'). Ranks hold consecutive fine rows, so every row
 * of R has its columns ascending, and the result is the same whatever the
 * timing and the thread count. Nothing is summed: each (J, i) arrives
 * once. */
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


ks_int ks_dist_transpose_places(const ks_dist_prows *P, const ks_gint *coff, int p, ks_int *at,
                                int64_t *count)
{
    const ks_int n = P->nloc, nnz = n ? P->rowptr[n] : 0;
    int nt = ks_threads_for(nnz, KS_TRANSPOSE_SERIAL, 0);
    int64_t *pos = ks_calloc((size_t)nt * (size_t)p, sizeof *pos, "transpose counts");
    if (!pos)
        return -1;
#pragma omp parallel num_threads(nt)
    {
        int t, used;
        ks_thread_me(&t, &used);
        const ks_int r0 = (ks_int)((int64_t)n * t / used);
        const ks_int r1 = (ks_int)((int64_t)n * (t + 1) / used);
        const ks_int k0 = n ? P->rowptr[r0] : 0, k1 = n ? P->rowptr[r1] : 0;
        int64_t *mine = pos + (size_t)t * (size_t)p;
        for (ks_int k = k0; k < k1; k++)
            mine[ks_layout_owner(coff, p, P->col[k])]++;
#pragma omp barrier
#pragma omp single
        ks_layout_rank_scan(pos, used, p, count);
        for (ks_int k = k0; k < k1; k++) /* rows in order, each row's columns in order */
            at[k] = (ks_int)mine[ks_layout_owner(coff, p, P->col[k])]++;
    }
    free(pos);
    return nnz;
}

/* Threads of a pass over entries, at most this many (per-thread tables). */
#define KS_TRANSPOSE_MAX_THREADS 256

/* Row chunk t of nt over P's rows, balanced by entries: its first row. */
static ks_int chunk_row(const ks_dist_prows *P, int t, int nt)
{
    const ks_int n = P->nloc;
    if (t <= 0 || n == 0)
        return 0;
    if (t >= nt)
        return n;
    const int64_t want = (int64_t)P->rowptr[n] * t / nt;
    ks_int a = 0, b = n; /* the first row starting at or after want */
    while (a < b) {
        const ks_int m = a + (b - a) / 2;
        if (P->rowptr[m] < want)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* Row i's columns all in [lo, hi): its first and last both there (rows
 * ascend; a column out of range sits at an end, so it is still found), so
 * most rows are passed over on two reads. */
static inline int all_own(const ks_dist_prows *P, ks_int i, ks_gint lo, ks_gint hi)
{
    const ks_int a = P->rowptr[i], b = P->rowptr[i + 1];
    return a == b || (P->col[a] >= lo && P->col[a] < hi && P->col[b - 1] >= lo &&
                      P->col[b - 1] < hi);
}

/* Counts and displacements (bytes, for MPI) and the entries for the other
 * ranks packed by destination, each destination's in fine row order; this
 * rank's own entries stay in P (build_rows reads them there). Threads take
 * row chunks: each counts its chunk's entries by destination (and finds
 * its first column out of range), the counts are laid out destination by
 * destination in chunk order, then each writes its chunk's entries: the
 * serial order for any thread count. */
static ks_error pack(const ks_dist_prows *P, const ks_gint *coff, int p, int me, int *scount,
                     int *sdispl, tentry **out)
{
    const ks_int n = P->nloc, nnz = P->rowptr[n];
    int nt = ks_threads_for(nnz, KS_TRANSPOSE_SERIAL, KS_TRANSPOSE_MAX_THREADS);
    const ks_gint lo = coff[me], hi = coff[me + 1], ncol = coff[p];
    /* nt x p counts, then p totals */
    int64_t *pos = ks_calloc((size_t)(nt + 1) * (size_t)p + 1, sizeof *pos, "transpose counts");
    int64_t *cnt = pos + (size_t)nt * (size_t)p;
    ks_int bad[KS_TRANSPOSE_MAX_THREADS];
    int64_t total = 0;
    *out = NULL;
    if (!pos)
        return KS_ERR_MEMORY;
    int used = 1, nomem = 0;
#pragma omp parallel num_threads(nt)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#pragma omp single
        used = omp_get_num_threads();
#endif
        const ks_int i0 = chunk_row(P, t, used), i1 = chunk_row(P, t + 1, used);
        int64_t *mine = pos + (size_t)t * (size_t)p;
        ks_int first_bad = nnz;
        for (ks_int i = i0; i < i1; i++) {
            if (all_own(P, i, lo, hi))
                continue;
            for (ks_int k = P->rowptr[i]; k < P->rowptr[i + 1]; k++) {
                const ks_gint J = P->col[k];
                if (J >= lo && J < hi)
                    continue;
                if (J < 0 || J >= ncol) {
                    first_bad = first_bad < k ? first_bad : k;
                    continue;
                }
                mine[ks_layout_owner(coff, p, J)]++;
            }
        }
        bad[t] = first_bad;
#pragma omp barrier
#pragma omp single
        {
            total = ks_layout_rank_scan(pos, used, p, cnt);
            for (int r = 0; r < p; r++)
                scount[r] = (int)cnt[r]; /* entries here, bytes below */
            for (int q = 1; q < used; q++)
                bad[0] = bad[q] < bad[0] ? bad[q] : bad[0];
            if (bad[0] == nnz && total * (int64_t)sizeof(tentry) <= INT32_MAX) {
                *out = ks_malloc((size_t)total * sizeof **out + 1, "transpose entries to send");
                nomem = !*out;
            }
        } /* its barrier publishes the places, *out and bad[0] */
        if (*out) {
            for (ks_int i = i0; i < i1; i++) {
                if (all_own(P, i, lo, hi))
                    continue;
                for (ks_int k = P->rowptr[i]; k < P->rowptr[i + 1]; k++) {
                    const ks_gint J = P->col[k];
                    if (J < lo || J >= hi)
                        (*out)[mine[ks_layout_owner(coff, p, J)]++] =
                            (tentry){J, P->row_begin + i, P->val[k]};
                }
            }
        }
    }
    free(pos);
    if (bad[0] < nnz)
        return ks_seterr(KS_ERR_ARG, "transpose: P has coarse column %lld, outside 0 .. %lld",
                         (long long)P->col[bad[0]], (long long)ncol - 1);
    if (total * (int64_t)sizeof(tentry) > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "transpose: more than 2^31 bytes of entries to send");
    if (nomem)
        return KS_ERR_MEMORY;
    int64_t displ = 0;
    for (int r = 0; r < p; r++) {
        sdispl[r] = (int)(displ * (int64_t)sizeof(tentry));
        displ += scount[r];
        scount[r] = (int)(scount[r] * (int64_t)sizeof(tentry));
    }
    return KS_OK;
}

/* A piece of R's entries in arrival order: arrivals (e, n of them), or
 * (own) this rank's own entries of P's rows r0 .. r1 - 1. R's row J takes
 * its entries piece by piece in the order of the pieces, each piece's in
 * its order; R's local rows jlo .. jhi - 1 hold every row the piece
 * reaches, h its counts there, then its places. */
typedef struct tpiece {
    int own;
    const tentry *e;
    int64_t n;
    ks_int r0, r1;
    ks_int jlo, jhi;
    ks_int *h;
} tpiece;

/* Visits piece x's entries in order as (R's local row j, column, value). */
#define KS_FOR_PIECE(P, R, x, j, col, val, body)                                                 \
    do {                                                                                         \
        if (!(x)->own) {                                                                         \
            for (int64_t t_ = 0; t_ < (x)->n; t_++) {                                            \
                const ks_gint j = (x)->e[t_].row - (R)->row_begin;                               \
                const ks_gint col = (x)->e[t_].col;                                              \
                const double val = (x)->e[t_].val;                                               \
                body                                                                             \
            }                                                                                    \
        } else {                                                                                 \
            const ks_gint lo_ = (R)->row_begin, hi_ = lo_ + (R)->nloc;                           \
            for (ks_int i_ = (x)->r0; i_ < (x)->r1; i_++)                                        \
                for (ks_int k_ = (P)->rowptr[i_]; k_ < (P)->rowptr[i_ + 1]; k_++) {              \
                    if ((P)->col[k_] < lo_ || (P)->col[k_] >= hi_)                               \
                        continue;                                                                \
                    const ks_gint j = (P)->col[k_] - lo_;                                        \
                    const ks_gint col = (P)->row_begin + i_;                                     \
                    const double val = (P)->val[k_];                                             \
                    body                                                                         \
                }                                                                                \
        }                                                                                        \
    } while (0)

/* The rows piece x reaches; 0 when an arrival's row is not here (*bad
 * the first such row). */
static int piece_span(const ks_dist_prows *P, const ks_dist_prows *R, tpiece *x, ks_gint *bad)
{
    ks_gint lo = R->nloc, hi = -1;
    int ok = 1;
    KS_FOR_PIECE(P, R, x, j, col, val, {
        (void)col;
        (void)val;
        if (j < 0 || j >= R->nloc) {
            if (ok)
                *bad = j + R->row_begin;
            ok = 0;
        } else {
            lo = j < lo ? j : lo;
            hi = j > hi ? j : hi;
        }
    });
    x->jlo = hi < 0 ? 0 : (ks_int)lo;
    x->jhi = hi < 0 ? 0 : (ks_int)hi + 1;
    return ok;
}

/* R's rows from the pieces (arrivals of lower ranks, this rank's own
 * entries, arrivals of higher ranks; each split into chunks for the
 * threads). Each sender's entries come in fine row order, so taking every
 * row's entries piece by piece in order leaves its columns ascending: a
 * stable counting sort by row. Each piece counts its entries by row in a
 * table over the rows it reaches (on a mesh a chunk reaches few rows
 * beyond its own), the tables are turned into places row by row, then
 * each piece writes its entries: the serial order for any thread count,
 * without atomics. Pieces reaching too many rows (a matrix in no useful
 * order) are taken whole, one a segment. */
static ks_error build_rows(const ks_dist_prows *P, int own, const tentry *below, int64_t nbelow,
                           const tentry *above, int64_t nabove, ks_dist_prows *R)
{
    const ks_int nr = R->nloc;
    const int64_t nown_max = P->nloc ? P->rowptr[P->nloc] : 0;
    int nt = ks_threads_for(nbelow + nabove + nown_max, KS_TRANSPOSE_SERIAL,
                            KS_TRANSPOSE_MAX_THREADS);
    tpiece *x = ks_calloc(3 * (size_t)nt, sizeof *x, "transpose pieces");
    R->rowptr = ks_calloc((size_t)nr + 1, sizeof *R->rowptr, "R row pointers");
    if (!x || !R->rowptr) {
        free(x);
        return KS_ERR_MEMORY;
    }
    ks_int *h = NULL;
    ks_error e = KS_OK;
    for (int chunks = nt;; chunks = 1) {
        const int np = 3 * chunks;
        for (int c = 0; c < chunks; c++) {
            const int64_t b0 = nbelow * c / chunks, b1 = nbelow * (c + 1) / chunks;
            const int64_t a0 = nabove * c / chunks, a1 = nabove * (c + 1) / chunks;
            x[c] = (tpiece){.e = b1 > b0 ? below + b0 : NULL, .n = b1 - b0};
            x[chunks + c] = (tpiece){.own = 1, .r0 = own ? chunk_row(P, c, chunks) : 0,
                                     .r1 = own ? chunk_row(P, c + 1, chunks) : 0};
            x[2 * chunks + c] = (tpiece){.e = a1 > a0 ? above + a0 : NULL, .n = a1 - a0};
        }
        int first_bad = np; /* the first piece with a row not here, and its row */
        ks_gint badrow[3 * KS_TRANSPOSE_MAX_THREADS];
#pragma omp parallel for schedule(static, 1) num_threads(chunks) reduction(min : first_bad)
        for (int q = 0; q < np; q++) {
            if (chunks == 1 && x[q].own && own) { /* all own rows: no need to look */
                x[q].jlo = 0;
                x[q].jhi = nr;
            } else if (!piece_span(P, R, &x[q], &badrow[q]) && q < first_bad) {
                first_bad = q;
            }
        }
        if (first_bad < np) {
            e = ks_seterr(KS_ERR_ARG, "transpose: row %lld arrived at a rank that does not own "
                          "it", (long long)badrow[first_bad]);
            break;
        }
        int64_t span = 0;
        for (int q = 0; q < np; q++)
            span += x[q].jhi - x[q].jlo;
        if (chunks > 1 && span > 2 * (int64_t)nr + 65536)
            continue; /* the tables would outgrow R: whole segments */
        h = ks_malloc((size_t)span * sizeof *h + 1, "transpose row counts");
        if (!h) {
            e = KS_ERR_MEMORY;
            break;
        }
        span = 0;
        for (int q = 0; q < np; q++) {
            x[q].h = h + span;
            span += x[q].jhi - x[q].jlo;
        }
#pragma omp parallel for schedule(static, 1) num_threads(chunks)
        for (int q = 0; q < np; q++) {
            tpiece *y = &x[q];
            memset(y->h, 0, (size_t)(y->jhi - y->jlo) * sizeof *y->h);
            KS_FOR_PIECE(P, R, y, j, col, val, {
                (void)col;
                (void)val;
                y->h[j - y->jlo]++;
            });
        }
        ks_int *rp = R->rowptr; /* counts at [j + 1], the pieces' tables its places in row j */
#pragma omp parallel for schedule(static) num_threads(chunks)
        for (ks_int j = 0; j < nr; j++) {
            ks_int a = 0;
            for (int q = 0; q < np; q++)
                if (j >= x[q].jlo && j < x[q].jhi) {
                    const ks_int c = x[q].h[j - x[q].jlo];
                    x[q].h[j - x[q].jlo] = a;
                    a += c;
                }
            rp[j + 1] = a;
        }
        const int64_t n = ks_rowptr_scan(rp, nr);
        if (n > INT32_MAX) {
            e = ks_seterr(KS_ERR_SIZE, "transpose: more than 2^31 entries on one rank");
            break;
        }
        R->col = ks_malloc((size_t)n * sizeof *R->col + 1, "R columns");
        R->val = ks_malloc((size_t)n * sizeof *R->val + 1, "R values");
        if (!R->col || !R->val) {
            e = KS_ERR_MEMORY;
            break;
        }
#pragma omp parallel for schedule(static, 1) num_threads(chunks)
        for (int q = 0; q < np; q++) {
            tpiece *y = &x[q];
            KS_FOR_PIECE(P, R, y, j, col, val, {
                const ks_int at = rp[j] + y->h[j - y->jlo]++;
                R->col[at] = col;
                R->val[at] = val;
            });
        }
        break;
    }
    free(h);
    free(x);
    return e;
}

/* R = P^T, or (own = 0) only its entries from other ranks' rows. */
static ks_error transpose(const ks_dist_prows *P, const ks_gint *foff, const ks_gint *coff,
                          int own, ks_dist_prows *R)
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
        e = pack(P, coff, p, me, scount, sdispl, &out);
    ks_amg_dist_substep(c, "transpose: pack", &t);
    e = ks_comm_agree(c, e);
    /* This rank's own entries, most of them, stay in P: only the others'
     * go through MPI (a copy of them all through the library's shared
     * memory took 0.39 s at level 0 of 128^3 on 2 ranks) */
    int64_t below = 0;
    if (e == KS_OK && p > 1) {
        int64_t bytes = 0;
        e = ks_exchange_bytes(c, out, scount, sdispl, rcount, rdispl, (void **)&in, &bytes,
                              "transpose entries");
        nin = bytes / (int64_t)sizeof(tentry);
        below = rdispl[me] / (int64_t)sizeof(tentry);
    }
    free(cnt);
    ks_amg_dist_substep(c, "transpose: exchange", &t);
    if (e == KS_OK)
        e = ks_comm_agree(c, build_rows(P, own, in, below, in ? in + below : NULL, nin - below,
                                        R));
    ks_amg_dist_substep(c, "transpose: rows", &t);
    free(out);
    free(in);
    if (e != KS_OK) {
        ks_dist_prows_free(R);
        return ks_adderr(e, "%s", who);
    }
    return KS_OK;
}

ks_error ks_dist_prows_transpose(const ks_dist_prows *P, const ks_gint *foff, const ks_gint *coff,
                                 ks_dist_prows *R)
{
    return transpose(P, foff, coff, 1, R);
}

ks_error ks_dist_prows_transpose_others(const ks_dist_prows *P, const ks_gint *foff,
                                        const ks_gint *coff, ks_dist_prows *R)
{
    return transpose(P, foff, coff, 0, R);
}
