/* The classical strength of rows split in two blocks of columns (a
 * distributed matrix's rows on one rank: amg/kernels.h's
 * strength_classical_blocks, amg/cpu/strength.c's host function,
 * amg/cuda/strength_blocks.cu):
 *   host    row for row the serial classical pattern of the whole matrix
 *           (ks_amg_strength_classical), the blocks' columns mapped back
 *           to global ids; argument errors;
 *   device  the cuda table's entry against the cpu table's on the same
 *           blocks: the same two patterns, the same error codes and
 *           messages, all device memory given back (also when an
 *           allocation fails on the way: a memory-limit sweep).
 * Inputs: global matrices (random rows of 2 to 40 entries a row on
 * average, so the device runs every lane-group size, some rows of 300 to
 * 1000; empty rows, rows without diagonal whose columns lie far away
 * (only ghosts for a middle rank), positive off-diagonals, negative
 * diagonals, dominant rows that max_row_sum < 1 drops, rows whose sum
 * rounds differently in another column order; Poisson 7/27-point,
 * convection-diffusion), each split at several row ranges (all rows, the
 * first or last half, the middle third, none) into the owned block and the
 * ghost block numbered by ascending global column, as mpi/ does.
 *
 * The device tests are skipped without a CUDA device;
 * KS_AMG_CUDA_TEST_SELF=1 runs them with the cpu table in place of the
 * cuda one (a check of this program on machines without a GPU). */
#include "ks_test.h"
#include "amg_device_table.h"
#include "amg/cpu/amg_cpu.h"
#include "sparse/sparse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ks_amg_kernels *DEV; /* the table under test */
static const char *DEV_NAME;
#define CPU (&ks_amg_cpu_kernels)

/* ------------------------------------------------------------ matrices */

/* 2^52: where a unit no longer fits below the binary point. */
#define BIG 4503599627370496.0

/* A random N x N matrix (triplets, duplicates summed) with about deg
 * entries a row; every row kind below is one residue of i mod 13. */
static void random_global(ks_int N, int deg, uint64_t seed, ks_csr *A)
{
    ks_test_rng_seed(seed);
    const int64_t cap = (int64_t)N * (2 * deg + 8) + 1200 * 8 + 16;
    ks_int *r = malloc(sizeof *r * (size_t)cap), *c = malloc(sizeof *c * (size_t)cap);
    double *v = malloc(sizeof *v * (size_t)cap);
    ck_assert(r && c && v);
    int64_t ne = 0;
    int longs = 0;
#define PUT(ii, jj, vv)                                                                       \
    do {                                                                                      \
        ck_assert(ne < cap);                                                                  \
        r[ne] = (ii);                                                                         \
        c[ne] = (jj);                                                                         \
        v[ne++] = (vv);                                                                       \
    } while (0)
    for (ks_int i = 0; i < N; i++) {
        const int kind = (int)(i % 13);
        if (kind == 0)
            continue; /* an empty row */
        if (kind == 1) {
            /* no diagonal, columns at the far ends: only ghosts for a
             * middle rank */
            for (int e = 0; e < 3; e++) {
                ks_int j = (ks_int)(ks_test_rng_next() % (uint64_t)(N / 4 + 1));
                PUT(i, e % 2 ? N - 1 - j : j, ks_test_urand() - 0.7);
            }
            continue;
        }
        if (kind == 2 && i > 0 && i + 1 < N) {
            /* its sum rounds to 2 in column order, to 1 with the middle
             * first: kept or dropped by max_row_sum 0.9 */
            PUT(i, 0, BIG);
            PUT(i, i, 1.5);
            PUT(i, i - 1 > 0 ? i - 1 : i + 1, -0.25);
            PUT(i, N - 1, -BIG);
            continue;
        }
        if (kind == 3) {
            /* dominant: max_row_sum < 1 drops it */
            PUT(i, i, 10.0);
            for (int e = 0; e < 3; e++)
                PUT(i, (ks_int)(ks_test_rng_next() % (uint64_t)N), ks_test_urand() < 0.5 ? 0.1 : -0.1);
            continue;
        }
        int len = 1 + (int)(ks_test_rng_next() % (uint64_t)(2 * deg));
        if (kind == 4 && longs < 8) { /* a long row */
            len = 300 + (int)(ks_test_rng_next() % 700);
            longs++;
        }
        double off = 0.0;
        for (int e = 0; e < len; e++) {
            /* near the diagonal mostly, anywhere sometimes */
            ks_int j = ks_test_rng_next() % 3 == 0
                           ? (ks_int)(ks_test_rng_next() % (uint64_t)N)
                           : i + (ks_int)(ks_test_rng_next() % 41) - 20;
            if (j < 0 || j >= N || j == i)
                continue;
            double mag = (0.5 + ks_test_urand()) * (ks_test_rng_next() % 11 == 0 ? 1e8 : 1.0);
            double x = ks_test_rng_next() % 4 == 0 ? mag : -mag; /* positive off-diagonals too */
            PUT(i, j, x);
            off += x;
        }
        if (kind != 5) { /* kind 5: no diagonal */
            double d = -off * (0.9 + 0.2 * ks_test_urand());
            if (d == 0.0 || kind == 6)
                d = d == 0.0 ? 1.0 : -d; /* kind 6: the diagonal's sign flipped */
            PUT(i, i, d);
        }
    }
#undef PUT
    KS_CHECK(ks_csr_from_coo(N, N, ne, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
}

static void generated(ks_gen_kind kind, int n, double vx, ks_csr *A)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = kind;
    p.nx = p.ny = p.nz = n;
    p.vx = vx;
    p.vy = 0.5 * vx;
    KS_CHECK(ks_generate(&p, A));
}

/* Global matrix g of the cases. */
enum { NGLOBAL = 9 };
static const char *const global_names[NGLOBAL] = {
    "random deg 1", "random deg 3", "random deg 6", "random deg 12", "random deg 25",
    "random deg 60", "poisson 7-point 9^3", "poisson 27-point 7^3", "convection-diffusion 8^3"};

static void global_matrix(int g, ks_csr *A)
{
    static const int deg[] = {1, 3, 6, 12, 25, 60};
    if (g < 6)
        random_global(g == 5 ? 500 : 1500, deg[g], 1000 + (uint64_t)g, A);
    else if (g == 6)
        generated(KS_GEN_POISSON3D_7, 9, 0.0, A);
    else if (g == 7)
        generated(KS_GEN_POISSON3D_27, 7, 0.0, A);
    else
        generated(KS_GEN_CONVDIFF3D, 8, 40.0, A);
}

/* ------------------------------------------------------------- splits */

/* Rows lo .. hi - 1 of A split as mpi/ splits a rank's rows: L their
 * owned columns (lo .. hi - 1, numbered from 0), G the others numbered by
 * ascending global id (gid), nbelow of them below lo. has_g: G exists
 * (no ghost columns: none, unless empty_g asks for an n x 0 block). */
typedef struct split {
    ks_int lo, hi, n, ng, nbelow;
    ks_int *gid;
    ks_csr L, G;
    int has_g;
} split;

static void split_rows(const ks_csr *A, ks_int lo, ks_int hi, int empty_g, split *s)
{
    memset(s, 0, sizeof *s);
    const ks_int N = A->nrows, n = hi - lo;
    s->lo = lo;
    s->hi = hi;
    s->n = n;
    ks_int *map = malloc(sizeof *map * ((size_t)N + 1));
    ck_assert(map);
    for (ks_int j = 0; j < N; j++)
        map[j] = -1;
    ks_int nl = 0, ngh = 0;
    for (ks_int k = A->rowptr[lo]; k < A->rowptr[hi]; k++) {
        const ks_int j = A->colind[k];
        if (j >= lo && j < hi)
            nl++;
        else {
            ngh++;
            map[j] = 0;
        }
    }
    s->gid = malloc(sizeof *s->gid * ((size_t)N + 1));
    ck_assert(s->gid);
    for (ks_int j = 0; j < N; j++)
        if (map[j] == 0) {
            map[j] = s->ng;
            s->gid[s->ng++] = j;
            if (j < lo)
                s->nbelow++;
        }
    KS_CHECK(ks_csr_alloc(&s->L, n, n, nl));
    KS_CHECK(ks_csr_alloc(&s->G, n, s->ng, ngh));
    ks_int kl = 0, kg = 0;
    for (ks_int i = 0; i < n; i++) {
        for (ks_int k = A->rowptr[lo + i]; k < A->rowptr[lo + i + 1]; k++) {
            const ks_int j = A->colind[k];
            if (j >= lo && j < hi) {
                s->L.colind[kl] = j - lo;
                s->L.val[kl++] = A->val[k];
            } else {
                s->G.colind[kg] = map[j];
                s->G.val[kg++] = A->val[k];
            }
        }
        s->L.rowptr[i + 1] = kl;
        s->G.rowptr[i + 1] = kg;
    }
    s->has_g = s->ng > 0 || empty_g;
    free(map);
}

static void split_free(split *s)
{
    ks_csr_free(&s->L);
    ks_csr_free(&s->G);
    free(s->gid);
    memset(s, 0, sizeof *s);
}

/* The row ranges of the cases: all rows (with an n x 0 ghost block too),
 * the first half, the last half, the middle third, none. */
enum { NSPLITS = 6 };
static void split_case(const ks_csr *A, int k, split *s)
{
    const ks_int N = A->nrows;
    static const int lo3[NSPLITS] = {0, 0, 0, 3, 2, 3}, hi3[NSPLITS] = {6, 6, 3, 6, 4, 3};
    split_rows(A, N * lo3[k] / 6, N * hi3[k] / 6, k == 1, s);
}

static const double thetas[] = {0.25, 0.25, 0.5, 0.0, 1.0, 0.25};
static const double mrss[] = {1.0, 0.9, 0.5, 0.9, 1.0, 0.1};
enum { NPARAMS = 6 };

/* ---------------------------------------------------------------- host */

/* The host function row for row the serial pattern of A's rows lo .. hi
 * - 1: ghosts below, owned, ghosts above, in global ids. */
START_TEST(host_vs_serial)
{
    ks_csr A;
    global_matrix(_i, &A);
    for (int p = 0; p < NPARAMS; p++) {
        ks_strength S;
        KS_CHECK(ks_amg_strength_classical(&A, thetas[p], mrss[p], &S));
        for (int k = 0; k < NSPLITS; k++) {
            split s;
            split_case(&A, k, &s);
            ks_strength SL, SG;
            KS_CHECK(ks_amg_strength_classical_blocks(&s.L, s.has_g ? &s.G : NULL, s.nbelow,
                                                      thetas[p], mrss[p], &SL, &SG));
            ck_assert_int_eq(SL.n, s.n);
            ck_assert_int_eq(SG.n, s.n);
            for (ks_int i = 0; i < s.n; i++) {
                ks_int row[2048], m = 0;
                const ks_int g0 = SG.rowptr[i], g1 = SG.rowptr[i + 1];
                ck_assert_int_lt(SL.rowptr[i + 1] - SL.rowptr[i] + g1 - g0, 2048);
                ks_int q = g0;
                for (; q < g1 && s.gid[SG.colind[q]] < s.lo; q++)
                    row[m++] = s.gid[SG.colind[q]];
                for (ks_int k2 = SL.rowptr[i]; k2 < SL.rowptr[i + 1]; k2++)
                    row[m++] = s.lo + SL.colind[k2];
                for (; q < g1; q++)
                    row[m++] = s.gid[SG.colind[q]];
                const ks_int r = s.lo + i, len = S.rowptr[r + 1] - S.rowptr[r];
                ck_assert_msg(m == len && !memcmp(row, S.colind + S.rowptr[r],
                                                  (size_t)m * sizeof *row),
                              "%s, rows %d..%d, theta %g max_row_sum %g: row %d has %d strong "
                              "entries in the blocks, %d in the serial pattern (or others)",
                              global_names[_i], s.lo, s.hi, thetas[p], mrss[p], r, m, len);
            }
            ks_strength_free(&SL);
            ks_strength_free(&SG);
            split_free(&s);
        }
        ks_strength_free(&S);
    }
    ks_csr_free(&A);
}
END_TEST

/* The column order of the row sum matters: a row of kind 2 (random
 * matrices) summed in global order is dropped by max_row_sum 0.9, and
 * would be kept with the owned columns first. */
START_TEST(host_row_sum_order)
{
    ks_csr A;
    random_global(200, 3, 7, &A);
    split s;
    split_rows(&A, 50, 150, 0, &s);
    const ks_int r = 106; /* 106 % 13 == 2 */
    ks_strength SL, SG;
    KS_CHECK(ks_amg_strength_classical_blocks(&s.L, &s.G, s.nbelow, 0.25, 0.9, &SL, &SG));
    ck_assert_int_eq(SL.rowptr[r - 50 + 1] - SL.rowptr[r - 50], 0);
    ck_assert_int_eq(SG.rowptr[r - 50 + 1] - SG.rowptr[r - 50], 0);
    ks_strength_free(&SL);
    ks_strength_free(&SG);
    double owned_first = 1.5 - 0.25; /* the other order: kept */
    owned_first += BIG;
    owned_first -= BIG;
    ck_assert(!(fabs(owned_first) > 0.9 * 1.5));
    KS_CHECK(ks_amg_strength_classical_blocks(&s.L, &s.G, s.nbelow, 0.25, 1.0, &SL, &SG));
    /* kept without the test (its one strong entry is the ghost -BIG) */
    ck_assert_int_eq(SG.rowptr[r - 50 + 1] - SG.rowptr[r - 50], 1);
    ks_strength_free(&SL);
    ks_strength_free(&SG);
    split_free(&s);
    ks_csr_free(&A);
}
END_TEST

START_TEST(host_errors)
{
    ks_csr A;
    random_global(100, 3, 3, &A);
    split s;
    split_rows(&A, 30, 60, 0, &s);
    ks_strength SL, SG;
    ks_error e = ks_amg_strength_classical_blocks(&s.L, &s.G, s.ng + 1, 0.25, 1.0, &SL, &SG);
    ck_assert_msg(e == KS_ERR_ARG && strstr(ks_last_error(), "ghost columns below"), "%s",
                  ks_last_error());
    e = ks_amg_strength_classical_blocks(&s.L, NULL, 1, 0.25, 1.0, &SL, &SG);
    ck_assert_msg(e == KS_ERR_ARG && strstr(ks_last_error(), "no ghost block"), "%s",
                  ks_last_error());
    e = ks_amg_strength_classical_blocks(&s.L, &s.G, s.nbelow, 1.5, 1.0, &SL, &SG);
    ck_assert_msg(e == KS_ERR_ARG && strstr(ks_last_error(), "strength_threshold"), "%s",
                  ks_last_error());
    e = ks_amg_strength_classical_blocks(&s.L, &s.G, s.nbelow, 0.25, 0.0, &SL, &SG);
    ck_assert_msg(e == KS_ERR_ARG && strstr(ks_last_error(), "max_row_sum"), "%s",
                  ks_last_error());
    e = ks_amg_strength_classical_blocks(&s.L, &s.G, s.nbelow, 0.25, 1.0, &SL, &SL);
    ck_assert_int_eq(e, KS_ERR_ARG);
    s.G.nrows--;
    e = ks_amg_strength_classical_blocks(&s.L, &s.G, s.nbelow, 0.25, 1.0, &SL, &SG);
    ck_assert_msg(e == KS_ERR_ARG && strstr(ks_last_error(), "rows"), "%s", ks_last_error());
    s.G.nrows++;
    ck_assert_int_gt(s.G.nnz, 0);
    s.G.colind[s.G.nnz - 1] = s.ng; /* outside the ghost columns */
    e = ks_amg_strength_classical_blocks(&s.L, &s.G, s.nbelow, 0.25, 1.0, &SL, &SG);
    ck_assert_msg(e == KS_ERR_ARG && strstr(ks_last_error(), "ghost row"), "%s",
                  ks_last_error());
    split_free(&s);
    ks_csr_free(&A);
}
END_TEST

/* -------------------------------------------------------------- device */

typedef struct blocks {
    ks_sparse L, G;
    int has_g;
} blocks;

static void blocks_on(ks_backend *be, const split *s, blocks *b)
{
    memset(b, 0, sizeof *b);
    KS_CHECK(ks_sparse_from_csr(be, &s->L, 0, &b->L));
    if (s->has_g)
        KS_CHECK(ks_sparse_from_csr(be, &s->G, 0, &b->G));
    b->has_g = s->has_g;
}

static void blocks_free(blocks *b)
{
    ks_sparse_free(&b->L);
    ks_sparse_free(&b->G);
}

/* Equal shape and pattern (rowptr, colind), no values. */
static int same_pattern(const ks_sparse *H, const ks_sparse *D, char *why, size_t nwhy)
{
    ks_csr h, d;
    KS_CHECK(ks_sparse_to_csr(H, &h));
    KS_CHECK(ks_sparse_to_csr(D, &d));
    int ok = h.nrows == d.nrows && h.ncols == d.ncols && h.nnz == d.nnz && !d.val;
    if (!ok)
        snprintf(why, nwhy, "shapes %dx%d/%d (cpu) vs %dx%d/%d%s", h.nrows, h.ncols, h.nnz,
                 d.nrows, d.ncols, d.nnz, d.val ? " with values" : "");
    ks_int row = -1;
    for (ks_int i = 0; ok && i < h.nrows && row < 0; i++)
        if (h.rowptr[i + 1] != d.rowptr[i + 1] ||
            memcmp(h.colind + h.rowptr[i], d.colind + d.rowptr[i],
                   (size_t)(h.rowptr[i + 1] - h.rowptr[i]) * sizeof *h.colind))
            row = i;
    if (row >= 0) {
        snprintf(why, nwhy, "patterns differ first in row %d", row);
        ok = 0;
    }
    ks_csr_free(&h);
    ks_csr_free(&d);
    return ok;
}

START_TEST(device_vs_host)
{
    ks_backend *hb = NULL, *db = NULL;
    KS_CHECK(ks_backend_create("cpu", &hb));
    KS_CHECK(ks_backend_create(DEV_NAME, &db));
    ks_csr A;
    global_matrix(_i, &A);
    int bad = 0;
    for (int k = 0; k < NSPLITS; k++) {
        split s;
        split_case(&A, k, &s);
        blocks h, d;
        blocks_on(hb, &s, &h);
        blocks_on(db, &s, &d);
        for (int p = 0; p < NPARAMS; p++) {
            ks_sparse hl, hg, dl, dg;
            KS_CHECK(CPU->strength_classical_blocks(&h.L, h.has_g ? &h.G : NULL, s.nbelow,
                                                    thetas[p], mrss[p], &hl, &hg));
            const size_t base = ks_backend_memory_in_use(db);
            KS_CHECK(DEV->strength_classical_blocks(&d.L, d.has_g ? &d.G : NULL, s.nbelow,
                                                    thetas[p], mrss[p], &dl, &dg));
            char why[256] = "";
            const int okl = same_pattern(&hl, &dl, why, sizeof why);
            if (!okl)
                fprintf(stderr, "MISMATCH: %s, rows %d..%d, theta %g max_row_sum %g: owned "
                        "part: %s\n", global_names[_i], s.lo, s.hi, thetas[p], mrss[p], why);
            const int okg = same_pattern(&hg, &dg, why, sizeof why);
            if (!okg)
                fprintf(stderr, "MISMATCH: %s, rows %d..%d, theta %g max_row_sum %g: ghost "
                        "part: %s\n", global_names[_i], s.lo, s.hi, thetas[p], mrss[p], why);
            bad += !okl + !okg;
            ks_sparse_free(&hl);
            ks_sparse_free(&hg);
            ks_sparse_free(&dl);
            ks_sparse_free(&dg);
            const size_t now = ks_backend_memory_in_use(db);
            if (now != base)
                fprintf(stderr, "MISMATCH: %s: %zu bytes in use on %s after the call, %zu "
                        "before\n", global_names[_i], now, DEV_NAME, base);
            bad += now != base;
        }
        blocks_free(&h);
        blocks_free(&d);
        split_free(&s);
    }
    ck_assert_msg(bad == 0, "%s: %d mismatch(es) between the %s and cpu blocks' strength "
                  "(stderr lists them)", global_names[_i], bad, DEV_NAME);
    ks_csr_free(&A);
    ks_backend_destroy(&hb);
    ks_backend_destroy(&db);
}
END_TEST

/* The outcome of one call: code and message. */
typedef struct outcome {
    ks_error e;
    char msg[512];
} outcome;

static outcome took(ks_error e, ks_sparse *SL, ks_sparse *SG)
{
    outcome o;
    o.e = e;
    snprintf(o.msg, sizeof o.msg, "%s", e == KS_OK ? "" : ks_last_error());
    ks_clear_error();
    if (e == KS_OK) {
        ks_sparse_free(SL);
        ks_sparse_free(SG);
    }
    return o;
}

/* Bad arguments: the same codes and messages from both tables; a
 * malformed block the device (not told it is valid) finds, described as
 * the host describes it. */
START_TEST(device_errors)
{
    ks_backend *hb = NULL, *db = NULL;
    KS_CHECK(ks_backend_create("cpu", &hb));
    KS_CHECK(ks_backend_create(DEV_NAME, &db));
    ks_csr A;
    random_global(300, 4, 5, &A);
    split s;
    split_rows(&A, 100, 200, 0, &s);
    ck_assert_int_gt(s.G.nnz, 0);
    for (int c = 0; c < 7; c++) {
        split t = s;
        ks_csr G = s.G;
        ks_int *gc = malloc(sizeof *gc * ((size_t)G.nnz + 1));
        ks_int *lc = malloc(sizeof *lc * ((size_t)s.L.nnz + 1));
        ck_assert(gc && lc);
        memcpy(gc, G.colind, sizeof *gc * (size_t)G.nnz);
        memcpy(lc, s.L.colind, sizeof *lc * (size_t)s.L.nnz);
        G.colind = gc;
        t.G = G;
        t.L.colind = lc;
        double theta = 0.25, mrs = 0.9;
        ks_int nbelow = s.nbelow;
        int no_g = 0;
        switch (c) {
        case 0: theta = -0.5; break;
        case 1: mrs = 1.5; break;
        case 2: nbelow = s.ng + 3; break;
        case 3: no_g = 1; nbelow = 2; break;
        case 4: gc[G.nnz / 2] = s.ng + 7; break;     /* a ghost column out of range */
        case 5: lc[s.L.nnz / 3] = s.n; break;        /* an owned column out of range */
        default: gc[0] = -1; break;
        }
        blocks h, d;
        blocks_on(hb, &t, &h);
        blocks_on(db, &t, &d);
        ks_sparse hl, hg, dl, dg;
        outcome oh = took(CPU->strength_classical_blocks(&h.L, no_g ? NULL : &h.G, nbelow, theta,
                                                         mrs, &hl, &hg), &hl, &hg);
        const size_t base = ks_backend_memory_in_use(db);
        outcome od = took(DEV->strength_classical_blocks(&d.L, no_g ? NULL : &d.G, nbelow, theta,
                                                         mrs, &dl, &dg), &dl, &dg);
        ck_assert_msg(oh.e != KS_OK && oh.e == od.e && strcmp(oh.msg, od.msg) == 0,
                      "case %d: cpu %s (%s) vs %s %s (%s)", c, ks_error_name(oh.e), oh.msg,
                      DEV_NAME, ks_error_name(od.e), od.msg);
        ck_assert_msg(ks_backend_memory_in_use(db) == base, "case %d: device memory kept", c);
        blocks_free(&h);
        blocks_free(&d);
        free(gc);
        free(lc);
    }
    split_free(&s);
    ks_csr_free(&A);
    ks_backend_destroy(&hb);
    ks_backend_destroy(&db);
}
END_TEST

/* Every allocation of the device entry failing in turn (a memory limit
 * raised 16 bytes at a time): KS_ERR_MEMORY and nothing kept, until the
 * call succeeds with the cpu's patterns. */
START_TEST(device_memory_limits)
{
    ks_backend *hb = NULL, *db = NULL;
    KS_CHECK(ks_backend_create("cpu", &hb));
    KS_CHECK(ks_backend_create(DEV_NAME, &db));
    ks_csr A;
    random_global(400, 6, 9, &A);
    split s;
    split_rows(&A, 100, 300, 0, &s);
    blocks h, d;
    blocks_on(hb, &s, &h);
    blocks_on(db, &s, &d);
    ks_sparse hl, hg, dl, dg;
    KS_CHECK(CPU->strength_classical_blocks(&h.L, &h.G, s.nbelow, 0.25, 0.9, &hl, &hg));
    const size_t base = ks_backend_memory_in_use(db);
    int ok = 0, fails = 0;
    for (size_t extra = 0; extra <= ((size_t)1 << 20) && !ok; extra += 16) {
        KS_CHECK(ks_backend_set_memory_limit(db, base + extra));
        ks_error e = DEV->strength_classical_blocks(&d.L, &d.G, s.nbelow, 0.25, 0.9, &dl, &dg);
        KS_CHECK(ks_backend_set_memory_limit(db, 0));
        if (e == KS_OK) {
            ok = 1;
            break;
        }
        fails++;
        ck_assert_msg(e == KS_ERR_MEMORY, "%zu bytes to spare: %s (%s)", extra,
                      ks_error_name(e), ks_last_error());
        ck_assert_msg(ks_backend_memory_in_use(db) == base,
                      "%zu bytes to spare: %zu bytes kept after the failure", extra,
                      ks_backend_memory_in_use(db) - base);
        ks_clear_error();
    }
    /* the cpu table (KS_AMG_CUDA_TEST_SELF) allocates outside the backend */
    ck_assert_msg(ok && (fails > 0 || DEV == CPU), "never succeeded (%d failures)", fails);
    char why[256] = "";
    ck_assert_msg(same_pattern(&hl, &dl, why, sizeof why), "owned part: %s", why);
    ck_assert_msg(same_pattern(&hg, &dg, why, sizeof why), "ghost part: %s", why);
    ks_sparse_free(&hl);
    ks_sparse_free(&hg);
    ks_sparse_free(&dl);
    ks_sparse_free(&dg);
    blocks_free(&h);
    blocks_free(&d);
    split_free(&s);
    ks_csr_free(&A);
    ks_backend_destroy(&hb);
    ks_backend_destroy(&db);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("amg_strength_blocks");
    TCase *th = tcase_create("host");
    tcase_set_timeout(th, 300);
    tcase_add_loop_test(th, host_vs_serial, 0, NGLOBAL);
    tcase_add_test(th, host_row_sum_order);
    tcase_add_test(th, host_errors);
    suite_add_tcase(s, th);
    DEV = ks_test_amg_device_table(&DEV_NAME);
    if (!DEV) {
        ks_test_skip(3, "no CUDA device: the cuda blocks' strength against the cpu's (patterns, "
                        "errors, memory limits)");
        return ks_test_run(s);
    }
    TCase *td = tcase_create("device");
    tcase_set_timeout(td, 300);
    tcase_add_loop_test(td, device_vs_host, 0, NGLOBAL);
    tcase_add_test(td, device_errors);
    tcase_add_test(td, device_memory_limits);
    suite_add_tcase(s, td);
    return ks_test_run(s);
}
