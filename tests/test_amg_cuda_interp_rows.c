/* The cuda row-range interpolation builders (the AMG kernel table's
 * interp_direct_rows and interp_extended_i_rows, amg/cuda/interp_*.cu)
 * against the cpu's (ks_amg_interp_direct_rows, _extended_i_rows): for
 * every range r0 .. r1 - 1 the same shape, row pointers, columns and
 * values bit for bit, and the cpu's error codes (a zero diagonal counts
 * only in the rows built). This is what a distributed setup on cuda builds
 * from a rank's local system (mpi/interp_local.c), so the inputs include
 * such systems: rows in the range, "fetched" rows outside it, points
 * without rows (no diagonal), F rows without strong connections. Also
 * generated problems (short rows: the thread kernels; 27-point: the warp
 * and group kernels), random matrices with exact cancellations, tiny and
 * empty matrices, empty ranges and ranges at both ends, the truncation of
 * the rows built, and the driver call (ks_amgk_interp_rows) without host
 * steps. Without a CUDA device every test is skipped, saying so. */
#include "ks_test.h"
#include "amg/cpu/amg_cpu.h"
#include "amg/cuda/amg_cuda_interp.h"
#include "sparse/sparse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KS_HAVE_CUDA

typedef struct ctx {
    ks_backend *cu;
    const ks_amg_kernels *G;
} ctx;

static void ctx_init(ctx *x)
{
    KS_CHECK(ks_backend_create("cuda", &x->cu));
    x->G = &ks_amg_cuda_kernels;
    ck_assert(x->G->interp_direct_rows && x->G->interp_extended_i_rows);
}

/* A problem on the host and on the device. */
typedef struct prob {
    char name[96];
    ks_csr A;
    ks_strength S;
    int *cf;
    ks_sparse Ag, Sg;
    int *cfg;
} prob;

static void prob_upload(ctx *x, prob *p)
{
    const ks_int n = p->A.nrows;
    ks_csr Sh = {n, n, p->S.rowptr[n], p->S.rowptr, p->S.colind, NULL};
    KS_CHECK(ks_sparse_from_csr(x->cu, &p->A, 0, &p->Ag));
    KS_CHECK(ks_sparse_from_csr(x->cu, &Sh, 1, &p->Sg));
    KS_CHECK(ks_be_upload_new(x->cu, p->cf, (size_t)n * sizeof(int) + 1, (void **)&p->cfg,
                              "test splitting"));
}

static void prob_free(ctx *x, prob *p)
{
    ks_sparse_free(&p->Ag);
    ks_sparse_free(&p->Sg);
    if (p->cfg)
        x->cu->ops->free(x->cu, p->cfg);
    ks_csr_free(&p->A);
    ks_strength_free(&p->S);
    free(p->cf);
    memset(p, 0, sizeof *p);
}

/* C (cpu) and the device's G: the same shape, row pointers, columns and
 * value bits; prints the first differing row before failing. */
static void same_bits(const char *what, const ks_csr *C, const ks_sparse *Gd)
{
    ks_csr G;
    KS_CHECK(ks_sparse_to_csr(Gd, &G));
    ck_assert_msg(C->nrows == G.nrows && C->ncols == G.ncols && C->nnz == G.nnz,
                  "%s: cpu %d x %d (%d entries), cuda %d x %d (%d entries)", what, C->nrows,
                  C->ncols, C->nnz, G.nrows, G.ncols, G.nnz);
    ks_int bad = -1;
    for (ks_int i = 0; i < C->nrows && bad < 0; i++) {
        if (C->rowptr[i + 1] != G.rowptr[i + 1])
            bad = i;
        for (ks_int k = C->rowptr[i]; bad < 0 && k < C->rowptr[i + 1]; k++)
            if (C->colind[k] != G.colind[k] ||
                memcmp(&C->val[k], &G.val[k], sizeof(double)) != 0)
                bad = i;
    }
    if (bad >= 0) {
        printf("%s: first difference in row %d\n", what, bad);
        for (int w = 0; w < 2; w++) {
            const ks_csr *P = w ? &G : C;
            printf("    %s:", w ? "cuda" : "cpu ");
            for (ks_int k = P->rowptr[bad]; k < P->rowptr[bad + 1]; k++)
                printf(" (%d, %.17g)", P->colind[k], P->val[k]);
            printf("\n");
        }
        fflush(stdout);
    }
    ck_assert_msg(bad < 0, "%s: row %d differs (pattern or bits)", what, bad);
    ks_csr_free(&G);
}

typedef ks_error (*cpu_rows)(const ks_csr *, const ks_strength *, const int *, ks_int, ks_int,
                             ks_csr *);

/* Both builders on rows r0 .. r1 - 1, on both sides: the same outcome
 * (error code; for a zero diagonal the same row named), the same rows;
 * then the rows truncated on both sides (cap 3 and factor 0.2), the same
 * again. Returns the cpu's outcome for D2. */
static ks_error range_both(ctx *x, prob *p, ks_int r0, ks_int r1)
{
    static const char *kname[2] = {"D1", "D2"};
    const cpu_rows cfn[2] = {ks_amg_interp_direct_rows, ks_amg_interp_extended_i_rows};
    ks_error (*const gfn[2])(const ks_sparse *, const ks_sparse *, const int *, ks_int, ks_int,
                             ks_sparse *) = {x->G->interp_direct_rows,
                                             x->G->interp_extended_i_rows};
    ks_error last = KS_OK;
    for (int f = 0; f < 2; f++) {
        char what[200];
        snprintf(what, sizeof what, "%s %s rows %d .. %d of %d", p->name, kname[f], r0, r1,
                 p->A.nrows);
        ks_csr C;
        ks_sparse G = {0};
        const ks_error ec = cfn[f](&p->A, &p->S, p->cf, r0, r1, &C);
        char cmsg[512];
        snprintf(cmsg, sizeof cmsg, "%s", ec == KS_OK ? "" : ks_last_error());
        const ks_error eg = gfn[f](&p->Ag, &p->Sg, p->cfg, r0, r1, &G);
        ck_assert_msg(ec == eg, "%s: cpu %s (%s), cuda %s (%s)", what, ks_error_name(ec), cmsg,
                      ks_error_name(eg), eg == KS_OK ? "" : ks_last_error());
        last = ec;
        if (ec != KS_OK) {
            const char *zc = strstr(cmsg, "zero diagonal at row ");
            const char *zg = strstr(ks_last_error(), "zero diagonal at row ");
            ck_assert_msg(!zc == !zg && (!zc || atol(zc + 21) == atol(zg + 21)),
                          "%s: cpu says '%s', cuda '%s'", what, cmsg, ks_last_error());
            continue;
        }
        ck_assert_msg(G.be == x->cu, "%s: P not on the cuda backend", what);
        same_bits(what, &C, &G);
        KS_CHECK(ks_amg_interp_truncate(&C, 3, 0.2));
        KS_CHECK(x->G->interp_truncate(&G, 3, 0.2));
        snprintf(what + strlen(what), sizeof what - strlen(what), ", truncated (3, 0.2)");
        same_bits(what, &C, &G);
        ks_csr_free(&C);
        ks_sparse_free(&G);
    }
    return last;
}

/* Ranges of n rows: all, none (at both ends and inside), one row at each
 * end and inside, a head, a tail and a middle part. */
static void ranges(ctx *x, prob *p)
{
    const ks_int n = p->A.nrows, h = n / 3, t = n - n / 4;
    const ks_int rr[][2] = {{0, n},     {0, 0},         {n, n},     {h, h},
                            {0, n ? 1 : 0}, {n ? n - 1 : 0, n}, {h, n ? h + 1 : h},
                            {0, t},     {h, n},         {h, t}};
    for (size_t k = 0; k < sizeof rr / sizeof rr[0]; k++)
        range_both(x, p, rr[k][0], rr[k][1]);
}

/* Classical strength and PMIS on the host, as the setup makes them. */
static void classical(prob *p, unsigned long long seed)
{
    ks_int nc = 0;
    KS_CHECK(ks_amg_strength_classical(&p->A, 0.25, 0.9, &p->S));
    p->cf = malloc(((size_t)p->A.nrows + 1) * sizeof *p->cf);
    ck_assert(p->cf);
    KS_CHECK(ks_amg_pmis(&p->S, seed, p->cf, &nc));
}

/* ---------------------------------------------------------- the cases */

static const struct gen_case {
    const char *name;
    ks_gen_kind kind;
    int n;
} gens[] = {{"2D 5-point 40^2", KS_GEN_POISSON2D_5, 40},
            {"3D 7-point 14^3", KS_GEN_POISSON3D_7, 14},
            {"3D 27-point 10^3", KS_GEN_POISSON3D_27, 10}};
#define NGEN ((int)(sizeof gens / sizeof gens[0]))

START_TEST(generated)
{
    ctx x;
    ctx_init(&x);
    prob p;
    memset(&p, 0, sizeof p);
    ks_gen_params g;
    ks_gen_params_default(&g);
    g.kind = gens[_i].kind;
    g.nx = g.ny = gens[_i].n;
    g.nz = gens[_i].kind == KS_GEN_POISSON2D_5 ? 1 : gens[_i].n;
    KS_CHECK(ks_generate(&g, &p.A));
    classical(&p, 3 + (unsigned long long)_i);
    snprintf(p.name, sizeof p.name, "%s", gens[_i].name);
    prob_upload(&x, &p);
    ranges(&x, &p);
    prob_free(&x, &p);
    ks_backend_destroy(&x.cu);
}
END_TEST

/* A rank's local system, imitated: points 0 .. n - 1, the own rows
 * r0 .. r1 - 1 with a diagonal (some rows with a zero row sum, some with
 * explicit zeros and couplings of both signs), and outside them "fetched"
 * rows (a fraction, with diagonals) and points without a row at all (no
 * diagonal: a builder must not look at them). S: a random part of the
 * off-diagonal pattern of the rows that have one (some F rows none);
 * random splitting. Returns r0, r1 through *lo, *hi. */
static void local_system(prob *p, ks_int n, uint64_t seed, ks_int *lo, ks_int *hi)
{
    ks_test_rng_seed(seed);
    const ks_int r0 = n / 4, r1 = n - n / 5;
    const double dens = 4.0 / (n + 1) + 0.2 * ks_test_urand();
    const int64_t cap = (int64_t)n * n + 1;
    ks_int *r = malloc((size_t)cap * sizeof *r), *c = malloc((size_t)cap * sizeof *c);
    double *v = malloc((size_t)cap * sizeof *v);
    ck_assert(r && c && v);
    int64_t ne = 0;
    for (ks_int i = 0; i < n; i++) {
        const int own = i >= r0 && i < r1;
        if (!own && ks_test_urand() < 0.6)
            continue; /* a point without a row */
        double off = 0.0;
        for (ks_int j = 0; j < n; j++) {
            if (j == i || ks_test_urand() >= dens)
                continue;
            const int k = (int)(ks_test_rng_next() % 8); /* -3..3, and 0 once in 8 */
            const double a = k == 7 ? 0.0 : (double)(k < 3 ? k - 3 : k - 2);
            r[ne] = i;
            c[ne] = j;
            v[ne++] = a;
            off += a;
        }
        double d = (double)((int)(ks_test_rng_next() % 9) - 4);
        if (ks_test_urand() < 0.3)
            d = -off; /* zero row sum */
        if (d == 0.0)
            d = ks_test_urand() < 0.5 ? 1.0 : -2.0;
        r[ne] = i;
        c[ne] = i;
        v[ne++] = d;
    }
    KS_CHECK(ks_csr_from_coo(n, n, ne, r, c, v, &p->A, NULL));
    free(r);
    free(c);
    free(v);
    ks_strength *S = &p->S;
    S->n = n;
    S->rowptr = malloc(((size_t)n + 1) * sizeof *S->rowptr);
    S->colind = malloc(((size_t)p->A.nnz + 1) * sizeof *S->colind);
    ck_assert(S->rowptr && S->colind);
    S->rowptr[0] = 0;
    const double strong = 0.3 + 0.6 * ks_test_urand();
    for (ks_int i = 0; i < n; i++) {
        ks_int w = S->rowptr[i];
        const int none = ks_test_urand() < 0.1; /* no strong connection */
        for (ks_int k = p->A.rowptr[i]; k < p->A.rowptr[i + 1]; k++)
            if (!none && p->A.colind[k] != i && ks_test_urand() < strong)
                S->colind[w++] = p->A.colind[k];
        S->rowptr[i + 1] = w;
    }
    p->cf = malloc(((size_t)n + 1) * sizeof *p->cf);
    ck_assert(p->cf);
    const double cfrac = 0.15 + 0.4 * ks_test_urand();
    for (ks_int i = 0; i < n; i++)
        p->cf[i] = ks_test_urand() < cfrac ? KS_CPT : KS_FPT;
    *lo = r0;
    *hi = r1;
}

#define NLOCAL 8

START_TEST(local_systems)
{
    static const ks_int sizes[NLOCAL] = {2, 3, 7, 20, 60, 150, 400, 900};
    ctx x;
    ctx_init(&x);
    for (int s = 0; s < 3; s++) {
        prob p;
        memset(&p, 0, sizeof p);
        ks_int r0, r1;
        local_system(&p, sizes[_i], 1000 * (uint64_t)_i + (uint64_t)s, &r0, &r1);
        snprintf(p.name, sizeof p.name, "local system n = %d seed %d", sizes[_i], s);
        prob_upload(&x, &p);
        /* the own rows, and parts of them: the rows outside have no
         * diagonal where they have no row, so a builder over every row
         * would refuse them */
        range_both(&x, &p, r0, r1);
        range_both(&x, &p, r0, r0 + (r1 - r0) / 2);
        range_both(&x, &p, r0 + (r1 - r0) / 2, r1);
        range_both(&x, &p, r1, r1);
        prob_free(&x, &p);
    }
    ks_backend_destroy(&x.cu);
}
END_TEST

/* Tiny and degenerate systems: no rows, one row (F without strong
 * connections, C), two rows, every F row without strong connections. */
START_TEST(tiny)
{
    ctx x;
    ctx_init(&x);
    for (int c = 0; c < 5; c++) {
        prob p;
        memset(&p, 0, sizeof p);
        const ks_int n = c == 0 ? 0 : c < 3 ? 1 : c == 3 ? 2 : 30;
        ks_gen_params g;
        ks_gen_params_default(&g);
        g.kind = KS_GEN_POISSON2D_5;
        g.nx = n == 30 ? 6 : n ? n : 1;
        g.ny = n == 30 ? 5 : 1;
        g.nz = 1;
        KS_CHECK(ks_generate(&g, &p.A));
        if (n == 0) {
            ks_csr_free(&p.A);
            KS_CHECK(ks_csr_alloc(&p.A, 0, 0, 0));
            p.A.rowptr[0] = 0;
        }
        ck_assert_int_eq(p.A.nrows, n);
        if (c == 3) {
            KS_CHECK(ks_amg_strength_classical(&p.A, 0.25, 0.9, &p.S));
        } else {
            p.S.n = n;
            p.S.rowptr = calloc((size_t)n + 1, sizeof *p.S.rowptr);
            p.S.colind = malloc(sizeof *p.S.colind);
        }
        p.cf = malloc(((size_t)n + 1) * sizeof *p.cf);
        for (ks_int i = 0; i < n; i++)
            p.cf[i] = c == 2 || (c == 3 && i == 0) ? KS_CPT : KS_FPT;
        static const char *names[5] = {"no rows", "one F row", "one C row", "two rows",
                                       "all F, no strong connections"};
        snprintf(p.name, sizeof p.name, "tiny: %s", names[c]);
        prob_upload(&x, &p);
        ranges(&x, &p);
        prob_free(&x, &p);
    }
    ks_backend_destroy(&x.cu);
}
END_TEST

/* Refusals: a range outside the matrix (KS_ERR_ARG on both), a zero
 * diagonal of an F row inside the range (KS_ERR_NUMERIC naming the same
 * row) and outside it (no error). */
START_TEST(errors)
{
    ctx x;
    ctx_init(&x);
    prob p;
    memset(&p, 0, sizeof p);
    ks_gen_params g;
    ks_gen_params_default(&g);
    g.kind = KS_GEN_POISSON2D_5;
    g.nx = g.ny = 12;
    g.nz = 1;
    KS_CHECK(ks_generate(&g, &p.A));
    const ks_int n = p.A.nrows;
    classical(&p, 5);
    /* zero diagonals on two F rows, at 40 .. and 100 .. */
    ks_int z[2] = {-1, -1};
    for (int w = 0; w < 2; w++)
        for (ks_int i = w ? 100 : 40; i < n && z[w] < 0; i++)
            if (p.cf[i] == KS_FPT)
                z[w] = i;
    ck_assert(z[0] >= 0 && z[1] >= 0);
    for (int w = 0; w < 2; w++)
        for (ks_int k = p.A.rowptr[z[w]]; k < p.A.rowptr[z[w] + 1]; k++)
            if (p.A.colind[k] == z[w])
                p.A.val[k] = 0.0;
    snprintf(p.name, sizeof p.name, "zero diagonals at %d and %d", z[0], z[1]);
    prob_upload(&x, &p);
    ck_assert_int_eq(range_both(&x, &p, 0, n), KS_ERR_NUMERIC);
    ck_assert_int_eq(range_both(&x, &p, z[0] + 1, n), KS_ERR_NUMERIC);
    ck_assert_int_eq(range_both(&x, &p, z[0] + 1, z[1]), KS_OK);
    ck_assert_int_eq(range_both(&x, &p, 0, z[0]), KS_OK);
    ck_assert_int_eq(range_both(&x, &p, z[1] + 1, n), KS_OK);
    ck_assert_int_eq(range_both(&x, &p, 3, 2), KS_ERR_ARG);
    ck_assert_int_eq(range_both(&x, &p, -1, 2), KS_ERR_ARG);
    ck_assert_int_eq(range_both(&x, &p, 0, n + 1), KS_ERR_ARG);
    prob_free(&x, &p);
    ks_backend_destroy(&x.cu);
}
END_TEST

/* The driver's call runs the device entries (no host step) and gives the
 * cpu table's rows. */
START_TEST(driver_call)
{
    ctx x;
    ctx_init(&x);
    prob p;
    memset(&p, 0, sizeof p);
    ks_gen_params g;
    ks_gen_params_default(&g);
    g.kind = KS_GEN_POISSON3D_7;
    g.nx = g.ny = g.nz = 9;
    KS_CHECK(ks_generate(&g, &p.A));
    classical(&p, 2);
    prob_upload(&x, &p);
    const ks_int n = p.A.nrows, r0 = n / 3, r1 = n - 7;
    ks_amg_exec ex;
    memset(&ex, 0, sizeof ex);
    for (int f = 0; f < 2; f++) {
        ks_sparse P;
        KS_CHECK(ks_amgk_interp_rows(&ex, f ? KS_AMG_D2 : KS_AMG_D1, &p.Ag, &p.Sg, p.cfg, r0,
                                     r1, &P));
        ck_assert(P.valid && P.be == x.cu);
        ks_csr C;
        KS_CHECK((f ? ks_amg_interp_extended_i_rows : ks_amg_interp_direct_rows)(
            &p.A, &p.S, p.cf, r0, r1, &C));
        same_bits(f ? "driver call D2" : "driver call D1", &C, &P);
        ks_csr_free(&C);
        ks_sparse_free(&P);
    }
    ck_assert_msg(ex.host_steps == 0, "%ld steps staged on the host", ex.host_steps);
    ks_amg_exec_free(&ex);
    prob_free(&x, &p);
    ks_backend_destroy(&x.cu);
}
END_TEST

#endif /* KS_HAVE_CUDA */

int main(void)
{
    Suite *s = suite_create("amg_cuda_interp_rows");
#ifdef KS_HAVE_CUDA
    if (ks_test_have_cuda()) {
        TCase *tc = tcase_create("cuda");
        tcase_set_timeout(tc, 600);
        tcase_add_loop_test(tc, generated, 0, NGEN);
        tcase_add_loop_test(tc, local_systems, 0, NLOCAL);
        tcase_add_test(tc, tiny);
        tcase_add_test(tc, errors);
        tcase_add_test(tc, driver_call);
        suite_add_tcase(s, tc);
    } else {
        ks_test_skip(NGEN + NLOCAL + 3, "no CUDA device: cuda row-range interpolation");
    }
#else
    ks_test_skip(1, "built without CUDA: cuda row-range interpolation");
#endif
    return ks_test_run(s);
}
