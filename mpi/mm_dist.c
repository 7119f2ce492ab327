/* A Matrix Market file into a distributed matrix (ks_mm_read_dist).
 *
 * Rank 0 reads the file once, with the serial reader's own parser
 * (matrices/mmio_read.c, so the checks and the "path:LINE:" messages are
 * the same), into a buffer of one chunk. Each full buffer is routed: an
 * entry goes to the rank that owns its row, a symmetric or skew entry's
 * mirror to the rank that owns its column, into one outgoing chunk per
 * rank, sent when full. No rank, rank 0 included, ever holds more than its
 * own rows and a chunk per rank.
 *
 * Bit for bit the serial result: ks_csr_build_coo places a row's entries
 * in file order (a mirror at its original's place), sorts stably by column
 * and sums duplicates in that order. Each rank receives its rows' entries
 * in that same order (one sender, and MPI keeps the order of messages
 * between two ranks on one tag), already mirrored, and builds its rows
 * with the same function, so every row's sums are added alike.
 *
 * Every rank returns the same outcome: the header's failure is agreed
 * before the layout, the stream always ends with an end message to every
 * rank (also when rank 0 stops at a bad line), and the receivers keep
 * draining after a failure of their own, so nobody waits alone.
 *
 * A header can claim sizes its file cannot back (a few bytes declaring
 * 10^9 x 10^9): once rank 0 has read it, every rank estimates what its
 * block of the layout will cost (from the entries the file can hold at
 * most, as the serial reader does) and each host's ranks together are
 * checked against that host's memory (ks_dist_memory_check), agreed,
 * before anything of that size is allocated anywhere. */
#include "mpi_internal.h"
#include "mm_dist_sized.h"
#include "../core/host_memory.h"
#include "../matrices/mmio_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

int ks_mm_dist_chunk = 0;

enum { TAG_DATA = 7101, TAG_END = 7102 };

/* One routed entry: global row and column (< 2^31: the reader's limit). */
typedef struct mm_entry {
    ks_int row, col;
    double val;
} mm_entry;

/* Entries per message: 2^16 (1 MiB) each, fewer with many ranks so that
 * rank 0's outgoing buffers stay near 32 MiB in all. */
static int default_chunk(int p)
{
    const int64_t budget = ((int64_t)32 << 20) / (int64_t)sizeof(mm_entry);
    int64_t c = budget / (p > 0 ? p : 1);
    return c > 65536 ? 65536 : c < 1024 ? 1024 : (int)c;
}

static ks_error entry_type(MPI_Datatype *t)
{
    /* A struct type rather than bytes: the layout (padding) is the
     * compiler's, MPI converts each field. */
    int len[3] = {1, 1, 1};
    MPI_Aint disp[3] = {offsetof(mm_entry, row), offsetof(mm_entry, col),
                        offsetof(mm_entry, val)};
    MPI_Datatype types[3] = {MPI_INT32_T, MPI_INT32_T, MPI_DOUBLE};
    MPI_Datatype raw;
    KS_TRY(ks_mpi_check(MPI_Type_create_struct(3, len, disp, types, &raw),
                        "MPI_Type_create_struct"));
    ks_error e = ks_mpi_check(MPI_Type_create_resized(raw, 0, sizeof(mm_entry), t),
                              "MPI_Type_create_resized");
    if (e == KS_OK) {
        e = ks_mpi_check(MPI_Type_commit(t), "MPI_Type_commit");
        if (e != KS_OK)
            MPI_Type_free(t);
    }
    MPI_Type_free(&raw);
    return e;
}

/* ------------------------------------------------------ a rank's rows */

/* The entries of this rank's rows in arrival order, rows made local. */
typedef struct rows_acc {
    ks_int *row, *col;
    double *val;
    int64_t n, cap;
    ks_gint r0;
} rows_acc;

static void acc_free(rows_acc *a)
{
    free(a->row);
    free(a->col);
    free(a->val);
    a->row = a->col = NULL;
    a->val = NULL;
    a->n = a->cap = 0;
}

static ks_error acc_reserve(rows_acc *a, int64_t more)
{
    if (a->n + more <= a->cap)
        return KS_OK;
    int64_t cap = a->cap ? 2 * a->cap : 4096;
    while (cap < a->n + more)
        cap *= 2;
    ks_int *r = realloc(a->row, (size_t)cap * sizeof *r);
    if (r)
        a->row = r;
    ks_int *c = realloc(a->col, (size_t)cap * sizeof *c);
    if (c)
        a->col = c;
    double *v = realloc(a->val, (size_t)cap * sizeof *v);
    if (v)
        a->val = v;
    if (!r || !c || !v)
        return ks_seterr(KS_ERR_MEMORY, "out of host memory storing %" PRId64 " entries of "
                         "this rank's rows", cap);
    a->cap = cap;
    return KS_OK;
}

static inline void acc_put(rows_acc *a, ks_int row, ks_int col, double val)
{
    a->row[a->n] = (ks_int)(row - a->r0);
    a->col[a->n] = col;
    a->val[a->n++] = val;
}

static ks_error acc_add(rows_acc *a, const mm_entry *e, int k)
{
    KS_TRY(acc_reserve(a, k));
    for (int i = 0; i < k; i++)
        acc_put(a, e[i].row, e[i].col, e[i].val);
    return KS_OK;
}

/* ------------------------------------------------------- rank 0: route */

typedef struct mm_root {
    MPI_Comm mc;
    MPI_Datatype type;
    const ks_gint *off; /* the layout, size + 1 */
    int p, mirror, chunk;
    int last;           /* the owner found last: files often run row by row */
    mm_entry *out;      /* p chunks, one per rank (rank 0's unused) */
    int *fill;
    rows_acc *own;      /* rank 0's own rows */
} mm_root;

static int owner_of(mm_root *R, ks_int row)
{
    const ks_gint g = row;
    if (g >= R->off[R->last] && g < R->off[R->last + 1])
        return R->last;
    int lo = 0, hi = R->p; /* the last q with off[q] <= g: empty ranks are skipped */
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (R->off[mid] <= g)
            lo = mid;
        else
            hi = mid;
    }
    return R->last = lo;
}

static ks_error send_chunk(mm_root *R, int q, int tag)
{
    ks_error e = ks_mpi_check(MPI_Send(R->out + (size_t)q * (size_t)R->chunk, R->fill[q],
                                       R->type, q, tag, R->mc),
                              "MPI_Send (matrix rows)");
    R->fill[q] = 0;
    if (e != KS_OK)
        return ks_adderr(e, "sending rank %d its rows", q);
    return KS_OK;
}

static ks_error route(mm_root *R, ks_int row, ks_int col, double val)
{
    const int q = owner_of(R, row);
    if (q == 0) {
        KS_TRY(acc_reserve(R->own, 1));
        acc_put(R->own, row, col, val);
        return KS_OK;
    }
    mm_entry *slot = R->out + (size_t)q * (size_t)R->chunk + R->fill[q]++;
    slot->row = row;
    slot->col = col;
    slot->val = val;
    return R->fill[q] == R->chunk ? send_chunk(R, q, TAG_DATA) : KS_OK;
}

/* The reader's flush: each entry, then its mirror, in file order. */
static ks_error route_buffer(void *ctx, ks_mm_coo *c)
{
    mm_root *R = ctx;
    for (int64_t k = 0; k < c->n; k++) {
        const ks_int i = c->row[k], j = c->col[k];
        const double v = c->val ? c->val[k] : 1.0;
        KS_TRY(route(R, i, j, v));
        if (R->mirror && i != j)
            KS_TRY(route(R, j, i, R->mirror > 0 ? v : -v));
    }
    c->n = 0;
    return KS_OK;
}

/* Rank 0: the data lines, routed; then every other rank's last chunk with
 * the end tag, also after a failure (then empty), so no rank waits on. */
static ks_error root_stream(mm_root *R, ks_gzr *r, const ks_mm_header *h, int64_t *entries)
{
    ks_mm_coo c;
    memset(&c, 0, sizeof c);
    c.cap = R->chunk;
    c.row = ks_malloc((size_t)c.cap * sizeof *c.row, "matrix file chunk");
    c.col = ks_malloc((size_t)c.cap * sizeof *c.col, "matrix file chunk");
    c.val = h->field == KS_MM_PATTERN ? NULL
                                      : ks_malloc((size_t)c.cap * sizeof *c.val, "matrix file chunk");
    ks_error e = c.row && c.col && (c.val || h->field == KS_MM_PATTERN) ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK)
        e = ks_mm_read_entries(r, h, &c, route_buffer, R);
    if (e == KS_OK)
        e = route_buffer(R, &c); /* the last, partial buffer */
    *entries = c.total;
    ks_mm_coo_free(&c);
    for (int q = 1; q < R->p; q++) {
        if (e != KS_OK)
            R->fill[q] = 0;
        const ks_error es = send_chunk(R, q, TAG_END);
        if (e == KS_OK)
            e = es;
    }
    return e;
}

/* The other ranks: chunks until the end tag. A failure of this rank's own
 * (memory) keeps it receiving, so rank 0 is not left in a send. */
static ks_error receive_rows(MPI_Comm mc, MPI_Datatype type, mm_entry *buf, int chunk,
                             rows_acc *a)
{
    ks_error e = KS_OK;
    for (;;) {
        MPI_Status st;
        ks_error em = ks_mpi_check(MPI_Recv(buf, chunk, type, 0, MPI_ANY_TAG, mc, &st),
                                   "MPI_Recv (matrix rows)");
        int k = 0;
        if (em == KS_OK)
            em = ks_mpi_check(MPI_Get_count(&st, type, &k), "MPI_Get_count (matrix rows)");
        if (em != KS_OK) /* the stream is broken: nothing more can be trusted */
            return e != KS_OK ? e : em;
        if (e == KS_OK)
            e = acc_add(a, buf, k);
        if (st.MPI_TAG == TAG_END)
            return e;
    }
}

/* ------------------------------------------------------- each rank's CSR */

/* This rank's rows from its entries (file order), as the serial reader
 * builds them; *ndup the duplicates it would count for these rows (with a
 * mirror, only those on or below the diagonal: each stored pair once). */
static ks_error build_rows(rows_acc *a, ks_int nloc, ks_gint n, int mirror, ks_dist_csr *A,
                           int64_t *ndup)
{
    int64_t counted_in = 0;
    for (int64_t k = 0; k < a->n; k++)
        counted_in += !mirror || a->col[k] <= a->r0 + a->row[k];
    ks_csr L;
    KS_TRY(ks_csr_build_coo(nloc, (ks_int)n, a->n, a->row, a->col, a->val, 0, &L, NULL));
    acc_free(a);
    ks_gint *gcol = ks_malloc((size_t)L.nnz * sizeof *gcol, "this rank's global columns");
    if (!gcol) {
        ks_csr_free(&L);
        return KS_ERR_MEMORY;
    }
    int64_t counted_out = 0;
    for (ks_int i = 0; i < nloc; i++)
        for (ks_int k = L.rowptr[i]; k < L.rowptr[i + 1]; k++) {
            gcol[k] = L.colind[k];
            counted_out += !mirror || L.colind[k] <= A->row_begin + i;
        }
    *ndup = counted_in - counted_out;
    free(L.colind);
    A->nrows = nloc;
    A->nnz = L.nnz;
    A->rowptr = L.rowptr;
    A->colind = gcol;
    A->val = L.val;
    return KS_OK;
}

/* ------------------------------------------------------ the memory check */

/* A byte estimate as an integer: clamped at 2^52 (4 PB, beyond any host),
 * so that the sum over a host's ranks cannot wrap. */
static uint64_t bytes_of(double b)
{
    const double cap = 4503599627370496.0; /* 2^52 */
    return b <= 0 ? 0 : b >= cap ? (uint64_t)cap : (uint64_t)ceil(b);
}

/* The ranks of one host (MPI_COMM_TYPE_SHARED) share its memory: their
 * needs are summed and checked against the smallest figure any of them
 * sees (each reads the host's MemAvailable or its cgroup's room, or
 * KS_MEM_AVAILABLE). This assumes the ranks of a host draw on one pool:
 * conservative where each sits in a cgroup of its own, and it counts the
 * memory free now, not what other programs will take meanwhile. */
ks_error ks_dist_memory_check(const ks_comm *c, uint64_t need, const char *path, long line,
                              const char *what, ks_gint r0, ks_int nloc)
{
    const MPI_Comm mc = ks_comm_mpi_of(c);
    const char *src = "unknown";
    const uint64_t avail = ks_host_memory_available(&src);
    uint64_t v[2] = {need, avail ? avail : UINT64_MAX}; /* sum, smallest figure */
    int k = 1;
    MPI_Comm host = MPI_COMM_NULL;
    ks_error e = ks_mpi_check(MPI_Comm_split_type(mc, MPI_COMM_TYPE_SHARED, c->rank,
                                                  MPI_INFO_NULL, &host),
                              "MPI_Comm_split_type (the ranks of this host)");
    if (e == KS_OK) {
        e = ks_mpi_check(MPI_Allreduce(MPI_IN_PLACE, &v[0], 1, MPI_UINT64_T, MPI_SUM, host),
                         "MPI_Allreduce (memory the host's ranks need)");
        if (e == KS_OK)
            e = ks_mpi_check(MPI_Allreduce(MPI_IN_PLACE, &v[1], 1, MPI_UINT64_T, MPI_MIN, host),
                             "MPI_Allreduce (memory the host has)");
        if (e == KS_OK)
            e = ks_mpi_check(MPI_Comm_size(host, &k), "MPI_Comm_size (the ranks of this host)");
        MPI_Comm_free(&host);
    }
    if (e != KS_OK)
        return ks_adderr(e, "%s: checking the memory for reading it", path);
    if (v[1] == UINT64_MAX || v[0] <= v[1])
        return KS_OK;
    if (v[1] != avail)
        src = "the smallest figure of this host's ranks";
    char rows[96], others[160], all[32], mine[32], have[32];
    if (nloc > 0)
        snprintf(rows, sizeof rows, "rows %lld to %lld", (long long)r0,
                 (long long)(r0 + nloc - 1));
    else
        snprintf(rows, sizeof rows, "no rows");
    others[0] = '\0';
    if (k > 1)
        snprintf(others, sizeof others, " and the %d other ranks of its host (which share its "
                 "memory) need %s in all, rank %d", k - 1,
                 ks_bytes_human((double)v[0], all, sizeof all), c->rank);
    return ks_seterr(KS_ERR_MEMORY, "%s:%ld: %s on rank %d (%s)%s needs %s, but %s of memory is "
                     "available (%s)", path, line, what, c->rank, rows, others,
                     ks_bytes_human((double)need, mine, sizeof mine),
                     ks_bytes_human((double)v[1], have, sizeof have), src);
}

/* ---------------------------------------------------------------- public */

/* Rank 0: open the file and read its header; a distributed matrix is
 * square (its columns are split like its rows). */
static ks_error root_open(const char *path, ks_gzr *r, ks_mm_header *h, int *opened)
{
    KS_TRY(ks_gzr_open(r, path));
    *opened = 1;
    KS_TRY(ks_mm_read_matrix_header(r, h));
    if (h->m != h->n)
        return ks_seterr(KS_ERR_SIZE, "%s:%ld: the matrix is %" PRId64 " x %" PRId64 "; a "
                         "distributed matrix must be square", path, h->size_line, h->m, h->n);
    return KS_OK;
}

/* Everything after the header: layout, buffers, the stream, the rows. */
static ks_error read_body(const ks_comm *comm, const char *path, ks_int nlocal, ks_gzr *r,
                          const ks_mm_header *h0, ks_dist_csr *A, ks_mm_info *info,
                          uint64_t extra_row_bytes, const char *extra)
{
    const int p = comm->size, me = comm->rank;
    const MPI_Comm mc = ks_comm_mpi_of(comm);
    /* The header's numbers, and rank 0's chunk size (the tests' small
     * chunks need to be set on rank 0 only); the entries the rest of the
     * file can hold at most ("1 1\n" or "1 1 1\n" each, as the serial
     * reader bounds them) and the size line, for the memory check. */
    int64_t hv[7] = {h0->n, h0->nnz, h0->field, h0->sym,
                     ks_mm_dist_chunk > 0 ? ks_mm_dist_chunk : default_chunk(p), 0,
                     h0->size_line};
    if (me == 0) {
        const uint64_t bound = ks_gzr_text_bound(r) / (h0->field == KS_MM_PATTERN ? 4 : 6);
        hv[5] = bound < (uint64_t)h0->nnz ? (int64_t)bound : h0->nnz;
    }
    KS_TRY(ks_mpi_check(MPI_Bcast(hv, 7, MPI_INT64_T, 0, mc), "MPI_Bcast (matrix header)"));
    const ks_gint n = hv[0];
    const int sym = (int)hv[3], chunk = (int)hv[4];
    const int mirror = sym == KS_MM_SYMMETRIC ? 1 : sym == KS_MM_SKEW ? -1 : 0;
    ks_gint *off = NULL;
    ks_error e = ks_layout_make(comm, nlocal, n, &off);
    if (e != KS_OK)
        return ks_adderr(e, "%s: %lld rows", path, (long long)n);
    A->row_begin = off[me];
    A->nrows_global = A->ncols_global = n;
    const ks_int nloc = (ks_int)(off[me + 1] - off[me]);

    /* Before any large allocation: this rank's share. Its rows' entries
     * (each file entry and, symmetric or skew, its mirror) are taken in
     * proportion to its rows: an estimate, since a file may crowd some rows
     * (a rank given more then fails where its arrays grow, as before). Each
     * costs 16 bytes as it arrives and 12 more as CSR (the doubling of the
     * arrays not counted, as the serial reader counts none), plus 4 a row;
     * rank 0 adds its streaming buffers, the others their incoming chunk;
     * and the caller's own bytes a row. */
    const double expanded = (double)hv[5] * (mirror ? 2.0 : 1.0);
    double need = 4.0 * ((double)nloc + 2) + 28.0 * (n > 0 ? ceil(expanded * nloc / (double)n) : 0);
    need += me == 0 ? (double)chunk * ((double)p * sizeof(mm_entry) + (hv[2] == KS_MM_PATTERN ? 8 : 16))
                    : (double)chunk * sizeof(mm_entry);
    need += (double)extra_row_bytes * nloc;
    char what[256];
    snprintf(what, sizeof what, "reading this %lld x %lld matrix (%" PRId64 " entries declared)%s%s",
             (long long)n, (long long)n, hv[1], extra_row_bytes && extra ? " and " : "",
             extra_row_bytes && extra ? extra : "");
    e = ks_comm_agree(comm, ks_dist_memory_check(comm, bytes_of(need), path, (long)hv[6], what,
                                                 off[me], nloc));
    if (e != KS_OK) {
        free(off);
        return e;
    }

    MPI_Datatype type = MPI_DATATYPE_NULL;
    mm_root R;
    memset(&R, 0, sizeof R);
    rows_acc acc;
    memset(&acc, 0, sizeof acc);
    acc.r0 = off[me];
    mm_entry *buf = NULL;
    e = entry_type(&type);
    if (e == KS_OK && me == 0) {
        R = (mm_root){.mc = mc, .type = type, .off = off, .p = p, .mirror = mirror,
                      .chunk = chunk, .own = &acc};
        R.out = ks_malloc((size_t)p * (size_t)chunk * sizeof *R.out, "outgoing matrix rows");
        R.fill = ks_calloc((size_t)p, sizeof *R.fill, "outgoing chunk sizes");
        if (!R.out || !R.fill)
            e = KS_ERR_MEMORY;
    } else if (e == KS_OK) {
        buf = ks_malloc((size_t)chunk * sizeof *buf, "incoming matrix rows");
        if (!buf)
            e = KS_ERR_MEMORY;
    }
    e = ks_comm_agree(comm, e); /* nobody streams unless everybody can */
    int64_t stats[2] = {0, 0}; /* duplicates summed, entries in the file */
    if (e == KS_OK) {
        e = me == 0 ? root_stream(&R, r, h0, &stats[1])
                    : receive_rows(mc, type, buf, chunk, &acc);
        e = ks_comm_agree(comm, e);
    }
    free(buf);
    free(R.out);
    free(R.fill);
    if (type != MPI_DATATYPE_NULL)
        MPI_Type_free(&type);
    free(off);
    if (e == KS_OK)
        e = ks_comm_agree(comm, build_rows(&acc, nloc, n, mirror, A, &stats[0]));
    acc_free(&acc);
    if (e == KS_OK)
        e = ks_comm_sum_gint(comm, stats, 2);
    if (e == KS_OK && info) {
        info->field = (ks_mm_field)hv[2];
        info->symmetry = (ks_mm_symmetry)sym;
        info->entries_stored = stats[1];
        info->duplicates_summed = stats[0];
    }
    return e;
}

ks_error ks_mm_read_dist_sized(const ks_comm *comm, const char *path, ks_int nlocal,
                               ks_dist_csr *A, ks_mm_info *info, uint64_t extra_row_bytes,
                               const char *extra)
{
    const char *fn = "ks_mm_read_dist";
    if (!A)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output", fn);
    memset(A, 0, sizeof *A);
    if (!comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL comm", fn);
    /* Arguments may differ by rank: agreed before anything collective. */
    ks_error e = path ? KS_OK : ks_seterr(KS_ERR_ARG, "%s: NULL path", fn);
    KS_TRY(ks_comm_agree(comm, e));
    ks_gzr r;
    ks_mm_header h;
    memset(&h, 0, sizeof h);
    int opened = 0;
    e = comm->rank == 0 ? root_open(path, &r, &h, &opened) : KS_OK;
    e = ks_comm_agree(comm, e);
    if (e == KS_OK)
        e = read_body(comm, path, nlocal, &r, &h, A, info, extra_row_bytes, extra);
    if (opened)
        ks_gzr_close(&r);
    if (e != KS_OK)
        ks_dist_csr_free(A);
    return e;
}

ks_error ks_mm_read_dist(const ks_comm *comm, const char *path, ks_int nlocal, ks_dist_csr *A,
                         ks_mm_info *info)
{
    return ks_mm_read_dist_sized(comm, path, nlocal, A, info, 0, NULL);
}
