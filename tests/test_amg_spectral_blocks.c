/* The row-wise part of a distributed level's rho(D^-1 A) estimate on one
 * rank's blocks (amg/kernels.h's spectral_prepare_blocks and
 * spectral_scale_start; amg/cpu/spectral_blocks.c, amg/cuda/
 * spectral_blocks.cu; the caller mpi/amg_dist_smoother.c):
 *   host    the cpu table's entries against a plain serial loop written
 *           here (the diagonal, the first bad row, the sign counts, the
 *           bound's bits; the scaling and the start vector by global row);
 *           that the test data tells the summation orders apart; errors;
 *   device  the cuda table's entries against the cpu table's on the same
 *           blocks, bit for bit, with the same errors and messages, all
 *           device memory given back (also when it runs out).
 * Blocks: random rows (values from 2^-20 to 2^21 in size, either sign, so
 * that a row sum taken in another order has other bits), empty rows, rows
 * without a diagonal or with a stored zero, negative diagonals, NaN and
 * infinite diagonals and off-diagonals; with a ghost block, with one of no
 * columns, without one (NULL); 0 to 70001 rows.
 *
 * The device tests are skipped without a CUDA device;
 * KS_AMG_CUDA_TEST_SELF=1 runs them with the cpu table in place of the
 * cuda one (a check of this program on machines without a GPU). */
#include "ks_test.h"
#include "amg_device_table.h"
#include "amg/cpu/amg_cpu.h"
#include "amg/spectral_common.h"
#include "sparse/sparse.h"
#include "vec/backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ks_amg_kernels *DEV; /* the table under test */
static const char *DEV_NAME;
#define CPU (&ks_amg_cpu_kernels)

#define ROW_BEGIN 123456789012LL /* a global first row past 2^32 */

/* ------------------------------------------------------------- blocks */

enum { CLEAN, HOLES, NONFINITE };

typedef struct bcase {
    ks_int n, ng;
    int kind, with_g, sign; /* sign: +1 / -1 every diagonal, 0 mixed */
} bcase;

static const bcase cases[] = {
    {0, 0, CLEAN, 1, 1},          {1, 0, CLEAN, 0, 1},         {1, 3, HOLES, 1, 0},
    {37, 10, HOLES, 1, 0},        {37, 0, CLEAN, 1, -1},       {37, 0, CLEAN, 0, -1},
    {1000, 300, CLEAN, 1, 1},     {1000, 300, HOLES, 1, 0},    {1000, 300, NONFINITE, 1, 0},
    {5000, 0, HOLES, 0, 0},       {70001, 4000, CLEAN, 1, 1},  {70001, 4000, CLEAN, 1, 0},
    {70001, 4000, HOLES, 1, 0},   {70001, 0, NONFINITE, 0, 0},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

typedef struct pair {
    ks_csr L, G;
    int has_g;
} pair;

/* +-(1 + u) 2^e, e in [-20, 20]. */
static double rval(void)
{
    const double m = ldexp(1.0 + ks_test_urand(), (int)(ks_test_rng_next() % 41) - 20);
    return ks_test_rng_next() & 1 ? -m : m;
}

/* Up to kmax distinct sorted columns in [0, ncols) into c; the count. */
static int row_columns(ks_int ncols, int kmax, ks_int *c)
{
    int k = 0;
    if (ncols <= 0)
        return 0;
    const int want = (int)(ks_test_rng_next() % (unsigned)(kmax + 1));
    for (int t = 0; t < want; t++) {
        const ks_int j = (ks_int)(ks_test_rng_next() % (uint64_t)ncols);
        int at = 0;
        while (at < k && c[at] < j)
            at++;
        if (at < k && c[at] == j)
            continue;
        memmove(c + at + 1, c + at, (size_t)(k - at) * sizeof *c);
        c[at] = j;
        k++;
    }
    return k;
}

static void csr_start(ks_int n, ks_int ncols, size_t cap, ks_csr *A)
{
    A->nrows = n;
    A->ncols = ncols;
    A->nnz = 0;
    A->rowptr = calloc((size_t)n + 1, sizeof *A->rowptr);
    A->colind = malloc(cap * sizeof *A->colind + 1);
    A->val = malloc(cap * sizeof *A->val + 1);
    ck_assert(A->rowptr && A->colind && A->val);
}

static void make_pair(const bcase *bc, uint64_t seed, pair *p)
{
    const ks_int n = bc->n;
    ks_test_rng_seed(seed);
    memset(p, 0, sizeof *p);
    csr_start(n, n, (size_t)n * 10, &p->L);
    csr_start(n, bc->ng, (size_t)n * 6, &p->G);
    p->has_g = bc->with_g;
    for (ks_int i = 0; i < n; i++) {
        ks_int c[12];
        const int empty = bc->kind == HOLES && i % 9 == 0;
        int k = empty ? 0 : row_columns(n, 8, c);
        /* the diagonal: stored unless a hole */
        int has_diag = !(bc->kind == HOLES && i % 9 == 1);
        int at = 0;
        while (at < k && c[at] < i)
            at++;
        const int stored = at < k && c[at] == i;
        if (has_diag && !empty && !stored) {
            memmove(c + at + 1, c + at, (size_t)(k - at) * sizeof *c);
            c[at] = i;
            k++;
        } else if (!has_diag && stored) {
            memmove(c + at, c + at + 1, (size_t)(k - at - 1) * sizeof *c);
            k--;
        }
        for (int t = 0; t < k; t++) {
            double v = rval();
            if (c[t] == i) {
                v = fabs(v);
                if (bc->sign < 0 || (bc->sign == 0 && ks_test_rng_next() % 3 == 0))
                    v = -v;
                if (bc->kind == HOLES && i % 9 == 2)
                    v = 0.0;
                if (bc->kind == NONFINITE && i % 7 == 3)
                    v = NAN;
                if (bc->kind == NONFINITE && i % 7 == 5)
                    v = i % 2 ? INFINITY : -INFINITY;
            } else if (bc->kind == NONFINITE && i % 11 == 4) {
                v = INFINITY;
            } else if (bc->kind == NONFINITE && i % 13 == 6) {
                v = NAN;
            }
            p->L.colind[p->L.nnz] = c[t];
            p->L.val[p->L.nnz++] = v;
        }
        p->L.rowptr[i + 1] = p->L.nnz;
        const int kg = empty || !bc->with_g ? 0 : row_columns(bc->ng, 5, c);
        for (int t = 0; t < kg; t++) {
            p->G.colind[p->G.nnz] = c[t];
            p->G.val[p->G.nnz++] = bc->kind == NONFINITE && i % 17 == 8 ? INFINITY : rval();
        }
        p->G.rowptr[i + 1] = p->G.nnz;
    }
}

static void pair_free(pair *p)
{
    ks_csr_free(&p->L);
    ks_csr_free(&p->G);
}

typedef struct blocks {
    ks_sparse L, G;
    int has_g;
} blocks;

static void blocks_on(ks_backend *be, const pair *p, blocks *b)
{
    memset(b, 0, sizeof *b);
    KS_CHECK(ks_sparse_from_csr(be, &p->L, 0, &b->L));
    KS_CHECK(ks_sparse_from_csr(be, &p->G, 0, &b->G));
    b->has_g = p->has_g;
}

static void blocks_free(blocks *b)
{
    ks_sparse_free(&b->L);
    ks_sparse_free(&b->G);
}

static const ks_sparse *ghost(const blocks *b) { return b->has_g ? &b->G : NULL; }

/* ---------------------------------------------------------- reference */

/* The serial loop: the diagonal (the last stored match), the first bad row,
 * the counts, and the bound over the other rows, each row's |a_ij| summed
 * L's entries then G's (reverse: G's last entry first, then back). */
static void reference(const pair *p, int reverse, double *d, ks_spectral_prep *r)
{
    const ks_csr *L = &p->L, *G = p->has_g ? &p->G : NULL;
    r->bad = L->nrows;
    r->npos = r->nneg = 0;
    r->bound = 0.0;
    for (ks_int i = 0; i < L->nrows; i++) {
        double di = 0.0;
        for (ks_int k = L->rowptr[i]; k < L->rowptr[i + 1]; k++)
            if (L->colind[k] == i)
                di = L->val[k];
        d[i] = di;
        r->npos += di > 0.0;
        r->nneg += di < 0.0;
        if (di == 0.0 || !isfinite(di)) {
            if (r->bad == L->nrows)
                r->bad = i;
            continue;
        }
        double s = 0.0;
        if (!reverse) {
            for (ks_int k = L->rowptr[i]; k < L->rowptr[i + 1]; k++)
                s += fabs(L->val[k]);
            for (ks_int k = G ? G->rowptr[i] : 0; G && k < G->rowptr[i + 1]; k++)
                s += fabs(G->val[k]);
        } else {
            for (ks_int k = G ? G->rowptr[i + 1] - 1 : -1; G && k >= G->rowptr[i]; k--)
                s += fabs(G->val[k]);
            for (ks_int k = L->rowptr[i + 1] - 1; k >= L->rowptr[i]; k--)
                s += fabs(L->val[k]);
        }
        r->bound = fmax(r->bound, s / fabs(di));
    }
}

/* Equal bits, or both NaN (a device may give NaNs other payloads). */
static int same(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* The first index where a and b differ, or -1. */
static long first_diff(const double *a, const double *b, long n)
{
    for (long i = 0; i < n; i++)
        if (!same(a[i], b[i]))
            return i;
    return -1;
}

static int same_prep(const ks_spectral_prep *a, const ks_spectral_prep *b, char *why, size_t n)
{
    const int ok = a->bad == b->bad && a->npos == b->npos && a->nneg == b->nneg &&
                   memcmp(&a->bound, &b->bound, sizeof a->bound) == 0;
    if (!ok)
        snprintf(why, n, "bad %d/%d, positive %d/%d, negative %d/%d, bound %.17g/%.17g",
                 a->bad, b->bad, a->npos, b->npos, a->nneg, b->nneg, a->bound, b->bound);
    return ok;
}

/* --------------------------------------------------------------- host */

START_TEST(host_vs_reference)
{
    const bcase *bc = &cases[_i];
    ks_backend *hb = NULL;
    KS_CHECK(ks_backend_create("cpu", &hb));
    pair p;
    make_pair(bc, 1000 + (uint64_t)_i, &p);
    const size_t n = (size_t)bc->n;
    double *dr = malloc(n * sizeof *dr + 1), *d = malloc(n * sizeof *d + 1);
    double *st = malloc(n * sizeof *st + 1), *sr = malloc(n * sizeof *sr + 1);
    ck_assert(dr && d && st && sr);
    ks_spectral_prep r, o;
    reference(&p, 0, dr, &r);
    if (bc->kind != CLEAN)
        ck_assert_int_lt(r.bad, bc->n); /* the data has the bad rows meant */
    else
        ck_assert_int_eq(r.bad, bc->n);
    blocks b;
    blocks_on(hb, &p, &b);
    for (int valid = 0; valid < 2; valid++) {
        b.L.valid = b.G.valid = (unsigned char)valid; /* valid: the rows are not scanned */
        memset(d, 0xff, n * sizeof *d);
        KS_CHECK(CPU->spectral_prepare_blocks(&b.L, ghost(&b), d, &o));
        char why[256];
        ck_assert_msg(same_prep(&o, &r, why, sizeof why), "case %d: %s", _i, why);
        ck_assert_msg(first_diff(d, dr, (long)n) < 0, "case %d: diagonal %ld differs", _i,
                      first_diff(d, dr, (long)n));
    }
    for (int sym = 0; sym < 2; sym++) {
        memcpy(d, dr, n * sizeof *d);
        KS_CHECK(CPU->spectral_scale_start(hb, bc->n, ROW_BEGIN, sym, d, st));
        for (size_t i = 0; i < n; i++) {
            const double want = sym ? 1.0 / sqrt(fabs(dr[i])) : 1.0 / dr[i];
            ck_assert_msg(same(d[i], want), "case %d sym %d: row %zu scaled to %.17g, not %.17g",
                          _i, sym, i, d[i], want);
            sr[i] = ks_spectral_start((uint64_t)(ROW_BEGIN + (ks_gint)i));
        }
        ck_assert_msg(first_diff(st, sr, (long)n) < 0, "case %d: start vector row %ld", _i,
                      first_diff(st, sr, (long)n));
    }
    blocks_free(&b);
    free(dr);
    free(d);
    free(st);
    free(sr);
    pair_free(&p);
    ks_backend_destroy(&hb);
}
END_TEST

/* The data tells the orders apart: a bound summed in another order would
 * not pass the bit-for-bit comparisons. */
START_TEST(host_order_matters)
{
    pair p;
    make_pair(&cases[10], 1010, &p);
    const size_t n = (size_t)p.L.nrows;
    double *d = malloc(n * sizeof *d + 1);
    ck_assert(d);
    int differ = 0;
    for (ks_int i = 0; i < p.L.nrows; i++) {
        /* one row at a time: its bound in both orders */
        pair one = p;
        ks_csr L1 = p.L, G1 = p.G;
        ks_int lrp[2] = {0, p.L.rowptr[i + 1] - p.L.rowptr[i]};
        ks_int grp[2] = {0, p.G.rowptr[i + 1] - p.G.rowptr[i]};
        ks_int lci[16];
        for (ks_int k = 0; k < lrp[1]; k++)
            lci[k] = p.L.colind[p.L.rowptr[i] + k] == i ? 0 : 1;
        L1.nrows = L1.ncols = 1;
        L1.nnz = lrp[1];
        L1.rowptr = lrp;
        L1.colind = lci;
        L1.val = p.L.val + p.L.rowptr[i];
        G1.nrows = 1;
        G1.nnz = grp[1];
        G1.rowptr = grp;
        G1.colind = p.G.colind + p.G.rowptr[i];
        G1.val = p.G.val + p.G.rowptr[i];
        one.L = L1;
        one.G = G1;
        ks_spectral_prep a, b;
        reference(&one, 0, d, &a);
        reference(&one, 1, d, &b);
        differ += memcmp(&a.bound, &b.bound, sizeof a.bound) != 0;
    }
    ck_assert_msg(differ > 100, "only %d rows whose bound depends on the order", differ);
    free(d);
    pair_free(&p);
}
END_TEST

/* ------------------------------------------------------------- errors */

/* The error cases, on blocks made on be from p (a CLEAN 37-row pair); the
 * call's code and message into code and msg. */
enum { NERRS = 9 };

static void error_case(const ks_amg_kernels *K, ks_backend *be, int c, ks_error *code,
                       char *msg, size_t nmsg)
{
    pair p;
    make_pair(&cases[4], 1004, &p); /* 37 rows, G of no columns */
    p.G.ncols = 5;
    blocks b;
    double *d = NULL;
    KS_CHECK(ks_be_alloc(be, 37 * sizeof *d, (void **)&d, "test diagonal"));
    ks_spectral_prep o;
    const ks_sparse *L = NULL, *G = NULL;
    double *dd = d;
    ks_spectral_prep *out = &o;
    switch (c) {
    case 0: break; /* NULL matrix */
    case 1: p.L.ncols = 36; break;
    case 2: p.G.nrows = 36; break;
    case 3: dd = NULL; break;
    case 4: out = NULL; break;
    case 5: p.L.rowptr[20] = p.L.rowptr[21] + 1; break; /* decreasing */
    case 6: p.L.colind[p.L.rowptr[12]] = 37; break;     /* out of range */
    case 7: /* one ghost entry, in a column past the block's 5 */
        p.G.colind[0] = 5;
        p.G.val[0] = 1.0;
        for (int i = 1; i <= 37; i++)
            p.G.rowptr[i] = 1;
        p.G.nnz = 1;
        break;
    case 8: p.L.rowptr[37] = p.L.nnz + 1; break; /* pointers past nnz */
    }
    blocks_on(be, &p, &b);
    if (c != 0)
        L = &b.L;
    if (c == 2 || c == 7)
        G = &b.G;
    *code = K->spectral_prepare_blocks(L, G, dd, out);
    snprintf(msg, nmsg, "%s", *code == KS_OK ? "" : ks_last_error());
    ks_clear_error();
    blocks_free(&b);
    be->ops->free(be, d);
    pair_free(&p);
}

START_TEST(host_errors)
{
    ks_backend *hb = NULL;
    KS_CHECK(ks_backend_create("cpu", &hb));
    static const ks_error want[NERRS] = {KS_ERR_ARG, KS_ERR_SIZE, KS_ERR_ARG, KS_ERR_ARG,
                                         KS_ERR_ARG, KS_ERR_ARG,  KS_ERR_ARG, KS_ERR_ARG,
                                         KS_ERR_ARG};
    static const char *const says[NERRS] = {"NULL matrix", "37 x 36", "ghost block",
                                            "NULL diagonal", "NULL output", "row 20 of the owned",
                                            "row 12 of the owned", "row 0 of the ghost",
                                            "owned block's row pointers do not run"};
    for (int c = 0; c < NERRS; c++) {
        ks_error e;
        char msg[512];
        error_case(CPU, hb, c, &e, msg, sizeof msg);
        ck_assert_msg(e == want[c] && strstr(msg, says[c]), "case %d: %s: %s", c,
                      ks_error_name(e), msg);
    }
    ks_error e = CPU->spectral_scale_start(hb, -1, 0, 0, NULL, NULL);
    ck_assert_msg(e == KS_ERR_ARG && strstr(ks_last_error(), "negative size"), "%s",
                  ks_last_error());
    ks_clear_error();
    ks_backend_destroy(&hb);
}
END_TEST

/* ------------------------------------------------------------- device */

START_TEST(device_vs_host)
{
    const bcase *bc = &cases[_i];
    ks_backend *hb = NULL, *db = NULL;
    KS_CHECK(ks_backend_create("cpu", &hb));
    KS_CHECK(ks_backend_create(DEV_NAME, &db));
    pair p;
    make_pair(bc, 2000 + (uint64_t)_i, &p);
    const ks_int n = bc->n;
    blocks h, g;
    blocks_on(hb, &p, &h);
    blocks_on(db, &p, &g);
    ks_vec *hd = NULL, *hs = NULL, *dd = NULL, *ds = NULL;
    KS_CHECK(ks_vec_create(hb, n, &hd));
    KS_CHECK(ks_vec_create(hb, n, &hs));
    KS_CHECK(ks_vec_create(db, n, &dd));
    KS_CHECK(ks_vec_create(db, n, &ds));
    double *back = malloc((size_t)n * sizeof *back + 1);
    ck_assert(back);
    for (int valid = 0; valid < 2; valid++) {
        h.L.valid = h.G.valid = g.L.valid = g.G.valid = (unsigned char)valid;
        ks_spectral_prep ho, go;
        KS_CHECK(CPU->spectral_prepare_blocks(&h.L, ghost(&h), hd->data, &ho));
        const size_t base = ks_backend_memory_in_use(db);
        KS_CHECK(DEV->spectral_prepare_blocks(&g.L, ghost(&g), dd->data, &go));
        ck_assert_msg(ks_backend_memory_in_use(db) == base, "case %d: %zu bytes kept", _i,
                      ks_backend_memory_in_use(db) - base);
        char why[256];
        ck_assert_msg(same_prep(&go, &ho, why, sizeof why), "case %d (%s vs cpu): %s", _i,
                      DEV_NAME, why);
        KS_CHECK(ks_vec_get_host(dd, back));
        ck_assert_msg(first_diff(back, hd->data, n) < 0, "case %d: diagonal row %ld differs",
                      _i, first_diff(back, hd->data, n));
    }
    /* the scaling of the cpu's diagonal on both, and the start vectors */
    double *d0 = malloc((size_t)n * sizeof *d0 + 1);
    ck_assert(d0);
    memcpy(d0, hd->data, (size_t)n * sizeof *d0);
    for (int sym = 0; sym < 2; sym++) {
        KS_CHECK(ks_vec_set_host(hd, d0));
        KS_CHECK(ks_vec_set_host(dd, d0));
        KS_CHECK(CPU->spectral_scale_start(hb, n, ROW_BEGIN + _i, sym, hd->data, hs->data));
        KS_CHECK(DEV->spectral_scale_start(db, n, ROW_BEGIN + _i, sym, dd->data, ds->data));
        KS_CHECK(ks_vec_get_host(dd, back));
        ck_assert_msg(first_diff(back, hd->data, n) < 0, "case %d sym %d: scaled row %ld", _i,
                      sym, first_diff(back, hd->data, n));
        KS_CHECK(ks_vec_get_host(ds, back));
        ck_assert_msg(first_diff(back, hs->data, n) < 0, "case %d: start vector row %ld", _i,
                      first_diff(back, hs->data, n));
    }
    free(d0);
    free(back);
    ks_vec_destroy(&hd);
    ks_vec_destroy(&hs);
    ks_vec_destroy(&dd);
    ks_vec_destroy(&ds);
    blocks_free(&h);
    blocks_free(&g);
    pair_free(&p);
    ks_backend_destroy(&hb);
    ks_backend_destroy(&db);
}
END_TEST

/* The symmetry counts of a 7-point 10^3 Poisson (symmetric bit for bit),
 * then with one upper entry scaled by 1 + 1e-6 (beyond the tolerance) and
 * by 1 + 1e-14 (within it, not equal), on table K (on be) against the
 * counts these cases must give. */
static void symmetry_cases(const ks_amg_kernels *K, ks_backend *be)
{
    ks_gen_params gp;
    ks_gen_params_default(&gp);
    gp.kind = KS_GEN_POISSON3D_7;
    gp.nx = gp.ny = gp.nz = 10;
    ks_csr A;
    KS_CHECK(ks_generate(&gp, &A));
    double *d = malloc((size_t)A.nrows * sizeof *d);
    ck_assert(d);
    ks_int q0 = -1; /* an upper entry of row 3 */
    for (ks_int i = 0; i < A.nrows; i++)
        for (ks_int q = A.rowptr[i]; q < A.rowptr[i + 1]; q++) {
            if (A.colind[q] == i)
                d[i] = A.val[q];
            if (i == 3 && A.colind[q] > i && q0 < 0)
                q0 = q;
        }
    const int64_t off = A.nnz - A.nrows;
    const double scale[3] = {1.0, 1.0 + 1e-6, 1.0 + 1e-14};
    const int64_t want_bad[3] = {0, 1, 0}, want_differ[3] = {0, 1, 1};
    const double v0 = A.val[q0];
    for (int c = 0; c < 3; c++) {
        A.val[q0] = v0 * scale[c];
        ks_sparse S;
        double *dd = NULL;
        KS_CHECK(ks_sparse_from_csr(be, &A, 0, &S));
        KS_CHECK(ks_be_upload_new(be, d, (size_t)A.nrows * sizeof *d, (void **)&dd, "diagonal"));
        int64_t cnt[4] = {-1, -1, -1, -1};
        KS_CHECK(K->symmetry_counts(&S, dd, cnt));
        ck_assert_msg(cnt[0] == off / 2 && cnt[1] == off / 2 && cnt[2] == want_bad[c] &&
                          cnt[3] == want_differ[c],
                      "case %d: upper %lld lower %lld bad %lld differ %lld (want %lld %lld %lld "
                      "%lld)", c, (long long)cnt[0], (long long)cnt[1], (long long)cnt[2],
                      (long long)cnt[3], (long long)(off / 2), (long long)(off / 2),
                      (long long)want_bad[c], (long long)want_differ[c]);
        be->ops->free(be, dd);
        ks_sparse_free(&S);
    }
    free(d);
    ks_csr_free(&A);
}

START_TEST(host_symmetry)
{
    ks_backend *hb = NULL;
    KS_CHECK(ks_backend_create("cpu", &hb));
    symmetry_cases(CPU, hb);
    /* bad arguments: no matrix, no counts, no diagonal for rows */
    ks_csr A;
    ks_gen_params gp;
    ks_gen_params_default(&gp);
    gp.kind = KS_GEN_POISSON3D_7;
    gp.nx = gp.ny = gp.nz = 3;
    KS_CHECK(ks_generate(&gp, &A));
    ks_sparse S;
    KS_CHECK(ks_sparse_from_csr(hb, &A, 0, &S));
    double d[27];
    int64_t cnt[4];
    for (int i = 0; i < 27; i++)
        d[i] = 6.0;
    ck_assert_int_eq(CPU->symmetry_counts(NULL, d, cnt), KS_ERR_ARG);
    ck_assert_int_eq(CPU->symmetry_counts(&S, d, NULL), KS_ERR_ARG);
    ck_assert_int_eq(CPU->symmetry_counts(&S, NULL, cnt), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "NULL diagonal"));
    KS_CHECK(CPU->symmetry_counts(&S, d, cnt));
    ck_assert(cnt[0] == cnt[1] && cnt[2] == 0 && cnt[3] == 0);
    ks_sparse_free(&S);
    ks_csr_free(&A);
    ks_backend_destroy(&hb);
}
END_TEST

/* The device's counts against the cpu's on random (nonsymmetric) owned
 * blocks, and on the cases above. */
START_TEST(device_symmetry)
{
    ks_backend *hb = NULL, *db = NULL;
    KS_CHECK(ks_backend_create("cpu", &hb));
    KS_CHECK(ks_backend_create(DEV_NAME, &db));
    symmetry_cases(DEV, db);
    int64_t none[4];
    ck_assert_int_eq(DEV->symmetry_counts(NULL, NULL, none), KS_ERR_ARG);
    for (int c = 0; c < NCASES; c++) {
        pair p;
        make_pair(&cases[c], 3000 + (uint64_t)c, &p);
        blocks h, g;
        blocks_on(hb, &p, &h);
        blocks_on(db, &p, &g);
        const ks_int n = cases[c].n;
        double *d = malloc((size_t)n * sizeof *d + 1), *dd = NULL;
        ck_assert(d);
        for (ks_int i = 0; i < n; i++)
            d[i] = 1.0 + (double)(i % 7);
        KS_CHECK(ks_be_upload_new(db, d, (size_t)n * sizeof *d + 1, (void **)&dd, "diagonal"));
        int64_t hc[4], gc[4];
        KS_CHECK(CPU->symmetry_counts(&h.L, d, hc));
        KS_CHECK(DEV->symmetry_counts(&g.L, dd, gc));
        ck_assert_msg(!memcmp(hc, gc, sizeof hc), "case %d: %s counts %lld %lld %lld %lld, cpu "
                      "%lld %lld %lld %lld", c, DEV_NAME, (long long)gc[0], (long long)gc[1],
                      (long long)gc[2], (long long)gc[3], (long long)hc[0], (long long)hc[1],
                      (long long)hc[2], (long long)hc[3]);
        db->ops->free(db, dd);
        free(d);
        blocks_free(&h);
        blocks_free(&g);
        pair_free(&p);
    }
    ks_backend_destroy(&hb);
    ks_backend_destroy(&db);
}
END_TEST

START_TEST(device_errors)
{
    ks_backend *hb = NULL, *db = NULL;
    KS_CHECK(ks_backend_create("cpu", &hb));
    KS_CHECK(ks_backend_create(DEV_NAME, &db));
    for (int c = 0; c < NERRS; c++) {
        ks_error eh, ed;
        char mh[512], md[512];
        error_case(CPU, hb, c, &eh, mh, sizeof mh);
        const size_t base = ks_backend_memory_in_use(db);
        error_case(DEV, db, c, &ed, md, sizeof md);
        ck_assert_msg(ed == eh && strcmp(md, mh) == 0, "case %d: %s \"%s\" (%s) vs \"%s\" (cpu)",
                      c, ks_error_name(ed), md, DEV_NAME, mh);
        ck_assert_int_eq(ks_backend_memory_in_use(db), base);
    }
    ks_error e = DEV->spectral_scale_start(db, -1, 0, 0, NULL, NULL);
    ck_assert_msg(e == KS_ERR_ARG && strstr(ks_last_error(), "negative size"), "%s",
                  ks_last_error());
    ks_clear_error();
    /* no device memory to spare: the call fails and keeps nothing */
    pair p;
    make_pair(&cases[7], 1007, &p);
    blocks g;
    blocks_on(db, &p, &g);
    ks_vec *dd = NULL;
    KS_CHECK(ks_vec_create(db, p.L.nrows, &dd));
    const size_t base = ks_backend_memory_in_use(db);
    KS_CHECK(ks_backend_set_memory_limit(db, base));
    ks_spectral_prep o;
    e = DEV->spectral_prepare_blocks(&g.L, &g.G, dd->data, &o);
    /* the cpu table (KS_AMG_CUDA_TEST_SELF) allocates nothing on the backend */
    ck_assert_msg(DEV == CPU ? e == KS_OK : e == KS_ERR_MEMORY, "%s: %s", ks_error_name(e),
                  ks_last_error());
    ck_assert_int_eq(ks_backend_memory_in_use(db), base);
    ks_clear_error();
    KS_CHECK(ks_backend_set_memory_limit(db, 0));
    ks_vec_destroy(&dd);
    blocks_free(&g);
    pair_free(&p);
    ks_backend_destroy(&hb);
    ks_backend_destroy(&db);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("amg_spectral_blocks");
    TCase *th = tcase_create("host");
    tcase_set_timeout(th, 300);
    tcase_add_loop_test(th, host_vs_reference, 0, NCASES);
    tcase_add_test(th, host_order_matters);
    tcase_add_test(th, host_errors);
    tcase_add_test(th, host_symmetry);
    suite_add_tcase(s, th);
    DEV = ks_test_amg_device_table(&DEV_NAME);
    if (!DEV) {
        ks_test_skip(3, "no CUDA device: the cuda spectral preparation against the cpu's "
                        "(diagonal, report, scaling, start vector, errors, symmetry counts)");
        return ks_test_run(s);
    }
    TCase *td = tcase_create("device");
    tcase_set_timeout(td, 300);
    tcase_add_loop_test(td, device_vs_host, 0, NCASES);
    tcase_add_test(td, device_errors);
    tcase_add_test(td, device_symmetry);
    suite_add_tcase(s, td);
    return ks_test_run(s);
}
