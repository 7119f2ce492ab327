/* The cuda table of the AMG setup steps (amg/kernels.h, amg/cuda/) against
 * the cpu table on the same inputs:
 *   strength (classical, symmetric)  patterns identical
 *   PMIS                             C/F arrays identical, nc equal
 *   tentative prolongator            P0 identical, values bit for bit
 *   check_diagonal                   row, value (bits) and stored equal
 *   smoother weights                 bit for bit
 *   spectral radius                  within 1e-10 relative (the device's
 *                                    dot products sum in another order)
 * errors: the same code, and the same message for the checks the cuda
 * entries delegate to the host functions. Every device call must give back
 * all it allocated (the backend's allocation count), also when an
 * allocation fails on the way (a memory-limit sweep). Inputs: generated
 * problems (Poisson 5/9/7/27-point, anisotropic, convection-diffusion,
 * sign variants), edge cases (0 and 1 rows, diagonal, zero / missing /
 * non-finite diagonals, positive off-diagonals, dominant rows for
 * max_row_sum), rows of 1 to 3000 entries around the device's lane-group
 * sizes (strength and the estimate run lanes a row), hand-made strength
 * patterns (one-way cycles that need the PMIS fix-up, random directed
 * graphs, a complete graph) and the real
 * matrices of ../shared/matrices when present. Last, the whole AMG setup on
 * both backends (PMIS): the same levels and the same splittings, and the
 * implemented steps not staged on the host.
 *
 * Mismatches are collected, not fatal one by one: a test reports every
 * comparison that failed on its matrix (also on stderr as they happen), so
 * one GPU run shows them all.
 *
 * Without a CUDA device the tests are skipped. KS_AMG_CUDA_TEST_SELF=1 runs
 * them with the cpu table in place of the cuda one (cpu against cpu): a
 * check of this program itself on machines without a GPU. */
#include "ks_test.h"
#include "amg_device_table.h"
#include "amg/kernels.h"
#include "sparse/sparse.h"
#include "solver/precond_amg.h"
#include "solver/solver_create.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The table under test, its backend name; the reference. */
static const ks_amg_kernels *DEV;
static const char *DEV_NAME;
#define CPU (&ks_amg_cpu_kernels)

/* ------------------------------------------------------------ mismatches */

/* Check passes a failure message of a few kilobytes at most: the rest of
 * the notes is on stderr. */
static char notes[2048];
static size_t notes_len;
static int nnotes;

static void notes_reset(void)
{
    notes[0] = 0;
    notes_len = 0;
    nnotes = 0;
}

static void note(const char *fmt, ...) KS_PRINTF(1, 2);
static void note(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "MISMATCH: %s\n", line);
    nnotes++;
    if (notes_len + strlen(line) + 8 < sizeof notes)
        notes_len += (size_t)snprintf(notes + notes_len, sizeof notes - notes_len, "%s%s",
                                      nnotes > 1 ? " | " : "", line);
    else if (notes_len + 8 < sizeof notes && !strstr(notes, " | ..."))
        notes_len += (size_t)snprintf(notes + notes_len, sizeof notes - notes_len, " | ...");
}

#define EXPECT(cond, ...)        \
    do {                         \
        if (!(cond))             \
            note(__VA_ARGS__);   \
    } while (0)

static void notes_check(const char *what)
{
    ck_assert_msg(nnotes == 0, "%s: %d mismatch(es): %s", what, nnotes, notes);
}

/* ------------------------------------------------------------ matrices */

/* The matrices are built before the tests run (the forked tests share
 * them), where Check's assertions cannot report: fail loudly instead. */
#define MUST(call)                                                                            \
    do {                                                                                      \
        ks_error must_e_ = (call);                                                            \
        if (must_e_ != KS_OK) {                                                               \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,              \
                    ks_last_error());                                                         \
            exit(EXIT_FAILURE);                                                               \
        }                                                                                     \
    } while (0)
#define MUST_TRUE(cond)                                                                       \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "%s:%d: %s is false\n", __FILE__, __LINE__, #cond);               \
            exit(EXIT_FAILURE);                                                               \
        }                                                                                     \
    } while (0)

typedef struct tmat {
    char name[64];
    ks_csr A;
} tmat;

#define MAX_MATS 64
static tmat mats[MAX_MATS];
static int nmats;

static ks_csr *add_mat(const char *name)
{
    MUST_TRUE(nmats < MAX_MATS);
    tmat *m = &mats[nmats++];
    snprintf(m->name, sizeof m->name, "%s", name);
    memset(&m->A, 0, sizeof m->A);
    return &m->A;
}

static void gen(const char *name, ks_gen_kind kind, int nx, int ny, int nz, double cx, double cy,
                double cz, double vx, double vy, double vz, double scale)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = kind;
    p.nx = nx;
    p.ny = ny;
    p.nz = nz;
    p.cx = cx;
    p.cy = cy;
    p.cz = cz;
    p.vx = vx;
    p.vy = vy;
    p.vz = vz;
    ks_csr *A = add_mat(name);
    MUST(ks_generate(&p, A));
    for (ks_int k = 0; k < A->nnz; k++)
        A->val[k] *= scale;
}

/* Diagonal entry of row i (its position), -1 when absent. */
static ks_int diag_pos(const ks_csr *A, ks_int i)
{
    for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
        if (A->colind[k] == i)
            return k;
    return -1;
}

/* Random n x n matrix from triplets (duplicates summed): about deg
 * off-diagonals a row with values +-[0.5, 1.5) (pos_frac of them
 * positive), a diagonal of random sign (neg_diag of them negative) and
 * magnitude [1, 4) unless the row is a hole (every `holes`-th row: no
 * entries at all, so no diagonal either; 0 = none). */
static void random_matrix(const char *name, ks_int n, int deg, double pos_frac, double neg_diag,
                          int holes, uint64_t seed)
{
    ks_test_rng_seed(seed);
    int64_t cap = (int64_t)n * (deg + 1) + 1, ne = 0;
    ks_int *r = malloc(sizeof *r * (size_t)cap), *c = malloc(sizeof *c * (size_t)cap);
    double *v = malloc(sizeof *v * (size_t)cap);
    MUST_TRUE(r && c && v);
    for (ks_int i = 0; i < n; i++) {
        if (holes && i % holes == holes - 1)
            continue;
        for (int e = 0; e < deg; e++) {
            ks_int j = (ks_int)(ks_test_rng_next() % (uint64_t)n);
            if (j == i)
                continue;
            double mag = 0.5 + ks_test_urand();
            r[ne] = i;
            c[ne] = j;
            v[ne++] = ks_test_urand() < pos_frac ? mag : -mag;
        }
        double d = 1.0 + 3.0 * ks_test_urand();
        r[ne] = i;
        c[ne] = i;
        v[ne++] = ks_test_urand() < neg_diag ? -d : d;
    }
    ks_csr *A = add_mat(name);
    MUST(ks_csr_from_coo(n, n, ne, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
}

/* Rows of given lengths (lens, cycled; columns distinct, random), for the
 * device's lanes a row: lengths at and around the lane-group sizes (1, 4,
 * 8, 16, 32 and their multiples) and long ones (100-3000). Off-diagonals
 * +-[0.5, 1.5), a few of them 1e8 times larger (so a row sum taken in
 * another order would round differently); the diagonal is minus their
 * sum times 0.96..1.16, its sign flipped in one row of nine, so the
 * max_row_sum test cuts some rows and keeps others. With sym, A + A^T
 * (symmetric, for the Lanczos estimate; rows get longer). */
static void long_rows(const char *name, ks_int n, const int *lens, int nlens, int sym,
                      uint64_t seed)
{
    ks_test_rng_seed(seed);
    int64_t cap = 0;
    for (ks_int i = 0; i < n; i++)
        cap += lens[i % nlens] < n ? lens[i % nlens] : n;
    cap = 2 * cap + 1;
    ks_int *r = malloc(sizeof *r * (size_t)cap), *c = malloc(sizeof *c * (size_t)cap);
    double *v = malloc(sizeof *v * (size_t)cap);
    unsigned char *used = calloc((size_t)n, 1);
    MUST_TRUE(r && c && v && used);
    int64_t ne = 0;
    for (ks_int i = 0; i < n; i++) {
        const ks_int len = lens[i % nlens] < n ? lens[i % nlens] : n;
        const int64_t first = ne;
        double off = 0.0;
        used[i] = 1;
        for (ks_int e = 1; e < len;) {
            const ks_int j = (ks_int)(ks_test_rng_next() % (uint64_t)n);
            if (used[j])
                continue;
            used[j] = 1;
            double mag = (0.5 + ks_test_urand()) * (ks_test_rng_next() % 7 == 0 ? 1e8 : 1.0);
            r[ne] = i;
            c[ne] = j;
            v[ne] = ks_test_rng_next() % 5 == 0 ? mag : -mag;
            off += v[ne++];
            e++;
        }
        for (int64_t q = first; q < ne; q++)
            used[c[q]] = 0;
        used[i] = 0;
        double d = -off * (0.96 + 0.2 * ks_test_urand());
        if (ks_test_rng_next() % 9 == 0 || d == 0.0)
            d = d == 0.0 ? 1.0 : -d;
        r[ne] = i;
        c[ne] = i;
        v[ne++] = d;
    }
    if (sym) {
        const int64_t m = ne;
        for (int64_t q = 0; q < m; q++) {
            r[ne] = c[q];
            c[ne] = r[q];
            v[ne++] = r[q] == c[q] ? fabs(v[q]) : v[q];
            if (r[q] == c[q])
                v[q] = fabs(v[q]);
        }
    }
    ks_csr *A = add_mat(name);
    MUST(ks_csr_from_coo(n, n, ne, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
    free(used);
}

/* A copy of the last matrix added, renamed, for a variant. */
static ks_csr *variant_of_last(const char *name)
{
    ks_csr *src = &mats[nmats - 1].A;
    ks_csr *A = add_mat(name);
    MUST(ks_csr_copy(src, A));
    return A;
}

static void build_matrices(int *nreal_missing)
{
    gen("poisson2d_5 33^2", KS_GEN_POISSON2D_5, 33, 33, 1, 1, 1, 1, 0, 0, 0, 1.0);
    gen("poisson2d_9 20^2", KS_GEN_POISSON2D_9, 20, 20, 1, 1, 1, 1, 0, 0, 0, 1.0);
    gen("poisson3d_7 12^3", KS_GEN_POISSON3D_7, 12, 12, 12, 1, 1, 1, 0, 0, 0, 1.0);
    gen("poisson3d_27 9^3", KS_GEN_POISSON3D_27, 9, 9, 9, 1, 1, 1, 0, 0, 0, 1.0);
    gen("aniso3d 12^3", KS_GEN_ANISO3D, 12, 12, 12, 1.0, 1e-3, 1e2, 0, 0, 0, 1.0);
    gen("convdiff3d 12^3 strong", KS_GEN_CONVDIFF3D, 12, 12, 12, 1, 1, 1, 200, -60, 10, 1.0);
    gen("convdiff3d 10^3", KS_GEN_CONVDIFF3D, 10, 10, 10, 1, 1, 1, 1, 1, 1, 1.0);
    gen("poisson3d_7 45^3", KS_GEN_POISSON3D_7, 45, 45, 45, 1, 1, 1, 0, 0, 0, 1.0);
    gen("-poisson2d_5 30^2", KS_GEN_POISSON2D_5, 30, 30, 1, 1, 1, 1, 0, 0, 0, -1.0);
    gen("3 * convdiff3d 8^3", KS_GEN_CONVDIFF3D, 8, 8, 8, 1, 1, 1, 5, -3, 1, 3.0);

    /* Positive off-diagonals (the classical measure finds nothing strong
     * in rows with a positive diagonal), and the same with the diagonal
     * negated (then everything of the right sign is strong). */
    gen("poisson2d_5 +offdiag", KS_GEN_POISSON2D_5, 25, 25, 1, 1, 1, 1, 0, 0, 0, 1.0);
    {
        ks_csr *A = &mats[nmats - 1].A;
        for (ks_int i = 0; i < A->nrows; i++)
            for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
                if (A->colind[k] != i)
                    A->val[k] = fabs(A->val[k]);
        ks_csr *B = variant_of_last("poisson2d_5 +offdiag -diag");
        for (ks_int i = 0; i < B->nrows; i++)
            B->val[diag_pos(B, i)] *= -1.0;
    }
    /* Dominant rows: the diagonal times 1..4, so max_row_sum cuts many. */
    gen("poisson2d_5 dominant", KS_GEN_POISSON2D_5, 30, 30, 1, 1, 1, 1, 0, 0, 0, 1.0);
    {
        ks_csr *A = &mats[nmats - 1].A;
        ks_test_rng_seed(17);
        for (ks_int i = 0; i < A->nrows; i++)
            A->val[diag_pos(A, i)] *= 1.0 + 3.0 * ks_test_urand();
    }
    /* Symmetric to rounding, not bit for bit: one pair differs in its last
     * bits (the estimate's symmetry test passes; "exactly symmetric" not). */
    gen("poisson2d_5 near-symmetric", KS_GEN_POISSON2D_5, 20, 20, 1, 1, 1, 1, 0, 0, 0, 1.0);
    {
        ks_csr *A = &mats[nmats - 1].A;
        ks_int k = A->rowptr[50];
        while (A->colind[k] <= 50)
            k++;
        A->val[k] *= 1.0 + 1e-13;
    }
    random_matrix("random mixed signs 3000", 3000, 6, 0.3, 0.2, 0, 5);
    random_matrix("random +offdiag -diag 1500", 1500, 4, 1.0, 1.0, 0, 6);
    random_matrix("random with empty rows 2000", 2000, 5, 0.1, 0.0, 5, 7);

    /* Long rows for the device's lanes a row: mixed lengths, mostly long
     * (32 lanes a row), mostly short with some long ones (8 or 16), and a
     * symmetric one for the Lanczos estimate with long rows. */
    {
        static const int mixed[] = {100, 3000, 31, 32, 33, 64, 65, 1,  2,    7,  8,
                                    9,   256,  257, 1000, 15, 16, 17, 4, 5, 3, 96, 97};
        static const int shortish[] = {7, 8, 9, 6, 5, 1, 300, 12, 11, 16, 17, 4};
        static const int wide[] = {40, 48, 64, 80, 33, 129};
        long_rows("long rows 1500", 1500, mixed, (int)(sizeof mixed / sizeof mixed[0]), 0, 21);
        long_rows("short and long rows 3000", 3000, shortish,
                  (int)(sizeof shortish / sizeof shortish[0]), 0, 22);
        long_rows("long rows symmetric 2000", 2000, wide, (int)(sizeof wide / sizeof wide[0]), 1,
                  23);
    }

    /* Bad diagonals: zero stored (row 7, with zero off-diagonals: a zero
     * row), NaN, +-Inf, -0.0; several bad rows (the first must be named). */
    gen("poisson2d_5 zero row 7", KS_GEN_POISSON2D_5, 12, 12, 1, 1, 1, 1, 0, 0, 0, 1.0);
    {
        ks_csr *A = &mats[nmats - 1].A;
        for (ks_int k = A->rowptr[7]; k < A->rowptr[8]; k++)
            A->val[k] = 0.0;
        ks_csr *B = variant_of_last("poisson2d_5 NaN diag 3");
        B->val[diag_pos(B, 3)] = NAN;
        B->val[diag_pos(B, 7)] = 4.0;
        for (ks_int k = B->rowptr[7]; k < B->rowptr[8]; k++)
            if (B->colind[k] != 7)
                B->val[k] = -1.0;
        ks_csr *C = variant_of_last("poisson2d_5 +Inf diag 3");
        C->val[diag_pos(C, 3)] = INFINITY;
        ks_csr *D = variant_of_last("poisson2d_5 -Inf offdiag 3");
        D->val[diag_pos(D, 3)] = 4.0;
        D->val[D->rowptr[3]] = -INFINITY;
        ks_csr *E = variant_of_last("poisson2d_5 -0.0 diag 5");
        E->val[D->rowptr[3]] = -1.0;
        E->val[diag_pos(E, 5)] = -0.0;
    }
    gen("poisson2d_5 400^2 bad rows", KS_GEN_POISSON2D_5, 400, 400, 1, 1, 1, 1, 0, 0, 0, 1.0);
    {
        ks_csr *A = &mats[nmats - 1].A;
        A->val[diag_pos(A, 150000)] = 0.0;
        A->val[diag_pos(A, 70001)] = 0.0;
        A->val[diag_pos(A, 159999)] = NAN;
    }

    /* Tiny ones. */
    {
        ks_csr *A = add_mat("0 x 0");
        MUST(ks_csr_alloc(A, 0, 0, 0));
        A->rowptr[0] = 0;
        ks_csr *B = add_mat("1 x 1 [2]");
        MUST(ks_csr_alloc(B, 1, 1, 1));
        B->rowptr[0] = 0;
        B->rowptr[1] = 1;
        B->colind[0] = 0;
        B->val[0] = 2.0;
        ks_csr *C = add_mat("1 x 1 [0]");
        MUST(ks_csr_copy(B, C));
        C->val[0] = 0.0;
        ks_csr *D = add_mat("diagonal 50");
        MUST(ks_csr_alloc(D, 50, 50, 50));
        D->rowptr[0] = 0;
        for (ks_int i = 0; i < 50; i++) {
            D->rowptr[i + 1] = i + 1;
            D->colind[i] = i;
            D->val[i] = (i % 3 == 1 ? -1.0 : 1.0) * (1.0 + 0.37 * i);
        }
    }

    static const char *const real[] = {"fv1", "ani4", "ani5_crop", "bcsstk13", "bcsstk14",
                                       "cage11", "poisson3Da", "cavity26", "raefsky2", "watt_2",
                                       "memplus", "rajat01", "hangGlider_2"};
    *nreal_missing = 0;
    for (size_t r = 0; r < sizeof real / sizeof real[0]; r++) {
        char file[96];
        snprintf(file, sizeof file, "%s.mtx.gz", real[r]);
        const char *path = ks_test_shared_matrix(file);
        if (!path) {
            (*nreal_missing)++;
            continue;
        }
        MUST(ks_mm_read_csr(path, add_mat(real[r]), NULL));
    }
}

/* ----------------------------------------------------------- the setup */

typedef struct ctx {
    ks_backend *hb, *db; /* cpu (reference), device under test */
} ctx;

static void ctx_init(ctx *c)
{
    notes_reset();
    KS_CHECK(ks_backend_create("cpu", &c->hb));
    KS_CHECK(ks_backend_create(DEV_NAME, &c->db));
}

static void ctx_free(ctx *c)
{
    ks_backend_destroy(&c->hb);
    ks_backend_destroy(&c->db);
}

static size_t in_use(const ctx *c) { return ks_backend_memory_in_use(c->db); }

static void *dev_alloc(ctx *c, size_t bytes)
{
    void *p = NULL;
    KS_CHECK(ks_be_alloc(c->db, bytes + 1, &p, "test array"));
    return p;
}

static void dev_free(ctx *c, void *p) { c->db->ops->free(c->db, p); }

static void dev_get(ctx *c, void *host, const void *dev, size_t bytes)
{
    KS_CHECK(c->db->ops->download(c->db, host, dev, bytes));
}

/* The outcome of one call: code and message. */
typedef struct outcome {
    ks_error e;
    char msg[512];
} outcome;

static outcome took(ks_error e)
{
    outcome o;
    o.e = e;
    snprintf(o.msg, sizeof o.msg, "%s", e == KS_OK ? "" : ks_last_error());
    ks_clear_error();
    return o;
}

/* Both succeeded (1), or failed the same way (0, noted when not). With
 * same_msg the messages must agree too. */
static int both_ok(const char *what, const outcome *h, const outcome *d, int same_msg)
{
    if (h->e == KS_OK && d->e == KS_OK)
        return 1;
    EXPECT(h->e == d->e, "%s: cpu %s (%s) vs %s %s (%s)", what, ks_error_name(h->e), h->msg,
           DEV_NAME, ks_error_name(d->e), d->msg);
    if (h->e == d->e && same_msg)
        EXPECT(strcmp(h->msg, d->msg) == 0, "%s: messages differ: cpu '%s' vs %s '%s'", what,
               h->msg, DEV_NAME, d->msg);
    return 0;
}

/* The device gave back what it allocated (base: before the call, with the
 * outputs freed since). */
static void leak_check(const ctx *c, size_t base, const char *what)
{
    size_t now = in_use(c);
    EXPECT(now == base, "%s: %zu bytes in use on %s after the call, %zu before", what, now,
           DEV_NAME, base);
}

static void same_pattern(const char *what, const ks_sparse *H, const ks_sparse *D)
{
    ks_csr h, d;
    KS_CHECK(ks_sparse_to_csr(H, &h));
    KS_CHECK(ks_sparse_to_csr(D, &d));
    if (h.nrows != d.nrows || h.ncols != d.ncols || h.nnz != d.nnz) {
        note("%s: shapes %dx%d/%d (cpu) vs %dx%d/%d", what, h.nrows, h.ncols, h.nnz, d.nrows,
             d.ncols, d.nnz);
    } else {
        ks_int row = -1;
        for (ks_int i = 0; i <= h.nrows && row < 0; i++)
            if (h.rowptr[i] != d.rowptr[i])
                row = i;
        for (ks_int i = 0; i < h.nrows && row < 0; i++)
            for (ks_int k = h.rowptr[i]; k < h.rowptr[i + 1]; k++)
                if (h.colind[k] != d.colind[k]) {
                    row = i;
                    break;
                }
        EXPECT(row < 0, "%s: patterns differ first in row %d", what, row);
        EXPECT(!h.val == !d.val, "%s: values on one side only", what);
        if (row < 0 && h.val && d.val) {
            ks_int k = 0;
            while (k < h.nnz && memcmp(&h.val[k], &d.val[k], sizeof(double)) == 0)
                k++;
            EXPECT(k == h.nnz, "%s: values differ first at entry %d: %.17g vs %.17g", what, k,
                   h.val[k], d.val[k]);
        }
    }
    ks_csr_free(&h);
    ks_csr_free(&d);
}

/* Equal bits, or both NaN (NaN payloads differ between host and device
 * arithmetic: x86 makes the negative default NaN, CUDA the positive). */
static int same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* --------------------------------------------------- one entry at a time */

/* Strength: classical with (theta, max_row_sum), or symmetric (mrs < 0). */
static void cmp_strength(ctx *c, const char *name, const ks_sparse *Ah, const ks_sparse *Ad,
                         double theta, double mrs)
{
    char what[160];
    snprintf(what, sizeof what, "%s: strength %s theta %g max_row_sum %g", name,
             mrs < 0 ? "symmetric" : "classical", theta, mrs);
    ks_sparse Sh, Sd;
    memset(&Sh, 0, sizeof Sh);
    memset(&Sd, 0, sizeof Sd);
    outcome h = took(mrs < 0 ? CPU->strength_symmetric(Ah, theta, &Sh)
                             : CPU->strength_classical(Ah, theta, mrs, &Sh));
    size_t base = in_use(c);
    outcome d = took(mrs < 0 ? DEV->strength_symmetric(Ad, theta, &Sd)
                             : DEV->strength_classical(Ad, theta, mrs, &Sd));
    if (both_ok(what, &h, &d, 1)) {
        EXPECT(Sd.be == c->db && Sd.val == NULL && Sd.nrows == Ad->nrows &&
                   Sd.ncols == Ad->nrows,
               "%s: S is not an %d x %d pattern on %s", what, Ad->nrows, Ad->nrows, DEV_NAME);
        same_pattern(what, &Sh, &Sd);
    }
    ks_sparse_free(&Sh);
    ks_sparse_free(&Sd);
    leak_check(c, base, what);
}

/* PMIS of the host pattern Sh (copied to the device). */
static void cmp_pmis(ctx *c, const char *name, const ks_sparse *Sh, unsigned long long seed)
{
    char what[160];
    snprintf(what, sizeof what, "%s: PMIS seed %llu", name, seed);
    ks_sparse Sd;
    KS_CHECK(ks_sparse_copy(Sh, c->db, &Sd));
    const ks_int n = Sh->nrows;
    int *cfh = malloc(sizeof(int) * ((size_t)n + 1)), *cfg = malloc(sizeof(int) * ((size_t)n + 1));
    ck_assert(cfh && cfg);
    int *cfd = dev_alloc(c, sizeof(int) * (size_t)n);
    ks_int nch = -1, ncd = -2;
    outcome h = took(CPU->pmis(Sh, seed, cfh, &nch));
    size_t base = in_use(c);
    outcome d = took(DEV->pmis(&Sd, seed, cfd, &ncd));
    leak_check(c, base, what);
    if (both_ok(what, &h, &d, 1)) {
        if (n > 0)
            dev_get(c, cfg, cfd, sizeof(int) * (size_t)n);
        ks_int diff = 0, first = -1;
        for (ks_int i = 0; i < n; i++)
            if (cfh[i] != cfg[i]) {
                diff++;
                if (first < 0)
                    first = i;
            }
        EXPECT(diff == 0, "%s: %d of %d points split differently, first %d (cpu %d, %s %d)",
               what, diff, n, first, first >= 0 ? cfh[first] : 0, DEV_NAME,
               first >= 0 ? cfg[first] : 0);
        EXPECT(nch == ncd, "%s: nc %d (cpu) vs %d", what, nch, ncd);
    }
    if (h.e == KS_OK && d.e == KS_OK) {
        /* marked as a strength step's graph (valid, no diagonal entries):
         * the device skips its look for diagonal entries, same splitting */
        Sd.valid = 1;
        Sd.flags = KS_SPARSE_NO_DIAG;
        ncd = -2;
        snprintf(what, sizeof what, "%s: PMIS seed %llu, graph marked", name, seed);
        base = in_use(c);
        KS_CHECK(DEV->pmis(&Sd, seed, cfd, &ncd));
        leak_check(c, base, what);
        if (n > 0)
            dev_get(c, cfg, cfd, sizeof(int) * (size_t)n);
        EXPECT(ncd == nch && (n == 0 || memcmp(cfh, cfg, sizeof(int) * (size_t)n) == 0),
               "%s: the splitting differs from the cpu's (nc %d vs %d)", what, nch, ncd);
    }
    dev_free(c, cfd);
    free(cfh);
    free(cfg);
    ks_sparse_free(&Sd);
}

/* Tentative prolongator of agg (host array, n entries). */
static void cmp_tentative(ctx *c, const char *name, ks_int n, const ks_int *agg, ks_int na,
                          int same_msg)
{
    char what[160];
    snprintf(what, sizeof what, "%s: tentative P0 (n %d, %d aggregates)", name, n, na);
    ks_int *aggd = dev_alloc(c, sizeof(ks_int) * (size_t)(n > 0 ? n : 0));
    if (n > 0)
        KS_CHECK(c->db->ops->upload(c->db, aggd, agg, sizeof(ks_int) * (size_t)n));
    ks_sparse Ph, Pd;
    memset(&Ph, 0, sizeof Ph);
    memset(&Pd, 0, sizeof Pd);
    outcome h = took(CPU->tentative_prolongator(c->hb, n, agg, na, &Ph));
    size_t base = in_use(c);
    outcome d = took(DEV->tentative_prolongator(c->db, n, n > 0 ? aggd : NULL, na, &Pd));
    if (both_ok(what, &h, &d, same_msg)) {
        EXPECT(Pd.be == c->db && Pd.val != NULL, "%s: P0 not a matrix on %s", what, DEV_NAME);
        same_pattern(what, &Ph, &Pd);
    }
    ks_sparse_free(&Ph);
    ks_sparse_free(&Pd);
    leak_check(c, base, what);
    dev_free(c, aggd);
}

static void cmp_check_diagonal(ctx *c, const char *name, const ks_sparse *Ah,
                               const ks_sparse *Ad, ks_int *bad_out)
{
    char what[160];
    snprintf(what, sizeof what, "%s: check_diagonal", name);
    ks_int bh = -5, bd = -7;
    double vh = -1.0, vd = -2.0;
    int sh = -1, sd = -2;
    outcome h = took(CPU->check_diagonal(Ah, &bh, &vh, &sh));
    size_t base = in_use(c);
    outcome d = took(DEV->check_diagonal(Ad, &bd, &vd, &sd));
    leak_check(c, base, what);
    if (both_ok(what, &h, &d, 1))
        EXPECT(bh == bd && same_double(vh, vd) && sh == sd,
               "%s: cpu (row %d, %g, stored %d) vs %s (row %d, %g, stored %d)", what, bh, vh,
               sh, DEV_NAME, bd, vd, sd);
    *bad_out = bh;
}

static void cmp_weights(ctx *c, const char *name, const ks_sparse *Ah, const ks_sparse *Ad,
                        ks_amg_smoother_kind kind, double omega)
{
    char what[160];
    snprintf(what, sizeof what, "%s: smoother weights kind %d omega %.17g", name, (int)kind, omega);
    const ks_int n = Ah->nrows;
    double *wh = malloc(sizeof(double) * ((size_t)n + 1)), *wg = malloc(sizeof(double) * ((size_t)n + 1));
    ck_assert(wh && wg);
    double *wd = dev_alloc(c, sizeof(double) * (size_t)n);
    outcome h = took(CPU->smoother_weights(Ah, kind, omega, wh));
    size_t base = in_use(c);
    outcome d = took(DEV->smoother_weights(Ad, kind, omega, wd));
    leak_check(c, base, what);
    if (both_ok(what, &h, &d, 1) && n > 0) {
        dev_get(c, wg, wd, sizeof(double) * (size_t)n);
        ks_int diff = 0, first = -1;
        for (ks_int i = 0; i < n; i++)
            if (!same_double(wh[i], wg[i]) && diff++ == 0)
                first = i;
        EXPECT(diff == 0, "%s: %d weights differ, first row %d: %.17g vs %.17g", what, diff,
               first, first >= 0 ? wh[first] : 0.0, first >= 0 ? wg[first] : 0.0);
    }
    dev_free(c, wd);
    free(wh);
    free(wg);
}

/* The estimate to 1e-10, and the verdict "symmetric bit for bit" equal.
 * Where the cpu finds A exactly symmetric, both again with the test
 * skipped (known_sym, a Galerkin level's call): the same estimates, bit for
 * bit, on each side. */
static void cmp_spectral(ctx *c, const char *name, const ks_sparse *Ah, const ks_sparse *Ad,
                         int iters)
{
    char what[160];
    snprintf(what, sizeof what, "%s: spectral radius, %d steps", name, iters);
    double rh = -1.0, rd = -2.0;
    int xh = -1, xd = -2;
    outcome h = took(CPU->spectral_radius(Ah, iters, 0, &rh, &xh));
    size_t base = in_use(c);
    outcome d = took(DEV->spectral_radius(Ad, iters, 0, &rd, &xd));
    leak_check(c, base, what);
    if (!both_ok(what, &h, &d, 1))
        return;
    double rel = fabs(rh - rd) / fmax(fabs(rh), 1e-300);
    EXPECT(rel <= 1e-10, "%s: cpu %.17g vs %s %.17g (relative %.3g)", what, rh, DEV_NAME, rd,
           rel);
    EXPECT(xh == xd, "%s: exactly symmetric: cpu %d vs %s %d", what, xh, DEV_NAME, xd);
    if (xh != 1)
        return;
    double kh = -1.0, kd = -2.0;
    int yh = -1, yd = -2;
    snprintf(what, sizeof what, "%s: spectral radius, %d steps, known symmetric", name, iters);
    h = took(CPU->spectral_radius(Ah, iters, 1, &kh, &yh));
    d = took(DEV->spectral_radius(Ad, iters, 1, &kd, &yd));
    if (!both_ok(what, &h, &d, 1))
        return;
    EXPECT(same_double(kh, rh) && same_double(kd, rd),
           "%s: cpu %.17g (tested %.17g), %s %.17g (tested %.17g)", what, kh, rh, DEV_NAME, kd,
           rd);
    EXPECT(yh == 0 && yd == 0, "%s: no verdict without the test (cpu %d, %s %d)", what, yh,
           DEV_NAME, yd);
}

/* Every entry on matrix m: what the driver would ask of it. */
static void compare_all(ctx *c, const tmat *m)
{
    const ks_csr *A = &m->A;
    ks_sparse Ah, Ad;
    KS_CHECK(ks_sparse_from_csr(c->hb, A, 0, &Ah));
    KS_CHECK(ks_sparse_from_csr(c->db, A, 0, &Ad));

    ks_int bad;
    cmp_check_diagonal(c, m->name, &Ah, &Ad, &bad);
    static const double omegas[] = {1.0, 2.0 / 3.0, 0.7, 1.3};
    for (int k = 0; k < 3; k++)
        for (size_t o = 0; o < sizeof omegas / sizeof omegas[0]; o++)
            cmp_weights(c, m->name, &Ah, &Ad,
                        k == 0 ? KS_SMOOTHER_JACOBI
                               : k == 1 ? KS_SMOOTHER_JACOBI_L1 : KS_SMOOTHER_CHEBYSHEV,
                        omegas[o]);

    static const double thetas[] = {0.0, 0.08, 0.25, 0.5, 0.9, 1.0};
    static const double mrs[] = {1.0, 0.9, 0.5, 0.1};
    for (size_t t = 0; t < sizeof thetas / sizeof thetas[0]; t++) {
        for (size_t r = 0; r < sizeof mrs / sizeof mrs[0]; r++)
            cmp_strength(c, m->name, &Ah, &Ad, thetas[t], mrs[r]);
        cmp_strength(c, m->name, &Ah, &Ad, thetas[t], -1.0);
    }

    /* PMIS on the cpu's classical patterns (those of the driver's
     * defaults and a weak one), and on the symmetric pattern. */
    static const unsigned long long seeds[] = {1, 2, 99, 0xFFFFFFFFFFFFFFFFULL};
    for (int variant = 0; variant < 3; variant++) {
        ks_sparse S;
        ks_error e = variant == 0   ? CPU->strength_classical(&Ah, 0.25, 0.9, &S)
                     : variant == 1 ? CPU->strength_classical(&Ah, 0.0, 1.0, &S)
                                    : CPU->strength_symmetric(&Ah, 0.08, &S);
        ks_clear_error();
        if (e != KS_OK)
            continue; /* (compared above) */
        char nm[128];
        snprintf(nm, sizeof nm, "%s [S %s]", m->name,
                 variant == 0 ? "classical 0.25/0.9" : variant == 1 ? "classical 0/1"
                                                                     : "symmetric 0.08");
        for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++)
            cmp_pmis(c, nm, &S, seeds[s]);
        if (variant == 2) {
            /* aggregates (cpu) -> the tentative prolongator */
            ks_int *agg = malloc(sizeof(ks_int) * ((size_t)S.nrows + 1)), na = 0;
            ck_assert(agg);
            if (CPU->aggregate(&S, 1, agg, &na) == KS_OK)
                cmp_tentative(c, m->name, S.nrows, agg, na, 1);
            ks_clear_error();
            free(agg);
        }
        ks_sparse_free(&S);
    }

    static const int steps[] = {1, 2, 12, 20};
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++)
        cmp_spectral(c, m->name, &Ah, &Ad, steps[s]);
    /* The same on a structure marked as the library's (ks_sparse.valid,
     * as ks_matrix_create and the setup steps mark theirs): the device then
     * checks the values only where the estimate meets a non-finite sum, and
     * must still give the cpu's outcome and message. Only where the
     * structure is good (the values made finite for the test of it). */
    ks_csr F;
    KS_CHECK(ks_csr_copy(A, &F));
    for (ks_int k = 0; k < F.nnz; k++)
        if (!isfinite(F.val[k]))
            F.val[k] = 1.0;
    if (ks_csr_validate(&F) == KS_OK) {
        char nm[160];
        snprintf(nm, sizeof nm, "%s [valid structure]", m->name);
        Ad.valid = 1;
        cmp_spectral(c, nm, &Ah, &Ad, 12);
        Ad.valid = 0;
    }
    ks_clear_error();
    ks_csr_free(&F);

    ks_sparse_free(&Ah);
    ks_sparse_free(&Ad);
}

START_TEST(matrix_all_entries)
{
    ctx c;
    ctx_init(&c);
    compare_all(&c, &mats[_i]);
    ctx_free(&c);
    notes_check(mats[_i].name);
}
END_TEST

/* ------------------------------------------------- hand-made patterns */

/* A pattern from rows of column lists (-1 ends a row). */
static void pattern_from_rows(ks_backend *be, int n, const int (*rows)[8], ks_sparse *S)
{
    ks_csr H;
    KS_CHECK(ks_csr_alloc(&H, n, n, 8 * n));
    H.rowptr[0] = 0;
    for (int i = 0; i < n; i++) {
        int k = H.rowptr[i];
        for (int t = 0; t < 8 && rows[i][t] >= 0; t++)
            H.colind[k++] = rows[i][t];
        H.rowptr[i + 1] = k;
    }
    H.nnz = H.rowptr[n];
    KS_CHECK(ks_sparse_from_csr(be, &H, 1, S));
    ks_csr_free(&H);
}

/* Random directed graph: each point depends on deg random others, one way
 * (a pair never both ways unless drawn twice), rows sorted and unique. */
static void random_digraph(ks_backend *be, ks_int n, int deg, uint64_t seed, ks_sparse *S)
{
    ks_test_rng_seed(seed);
    int64_t cap = (int64_t)n * deg + 1, ne = 0;
    ks_int *r = malloc(sizeof *r * (size_t)cap), *cc = malloc(sizeof *cc * (size_t)cap);
    double *v = malloc(sizeof *v * (size_t)cap);
    ck_assert(r && cc && v);
    for (ks_int i = 0; i < n; i++) {
        int d = 1 + (int)(ks_test_rng_next() % (uint64_t)deg);
        for (int e = 0; e < d; e++) {
            ks_int j = (ks_int)(ks_test_rng_next() % (uint64_t)n);
            if (j == i)
                continue;
            r[ne] = i;
            cc[ne] = j;
            v[ne++] = 1.0;
        }
    }
    ks_csr H;
    KS_CHECK(ks_csr_from_coo(n, n, ne, r, cc, v, &H, NULL));
    KS_CHECK(ks_sparse_from_csr(be, &H, 1, S));
    ks_csr_free(&H);
    free(r);
    free(cc);
    free(v);
}

/* Patterns the matrices above do not give: one-way cycles (the fix-up must
 * promote: the 3-cycle 0 -> 1 -> 2 -> 0, with 3 depending on 0 and 4, 5
 * isolated), a chain of one-way dependencies, a complete graph (one C
 * point), a star, random directed graphs (many promotions, candidates
 * spread over the whole index range), 0 and 1 points. PMIS cannot make
 * every point C (a selected point would need a neighbour that is F without
 * a C point in its row, yet measured lower), so "all F" (diagonal
 * matrices, above) is the degenerate case to check; these give the most
 * promotions instead. */
START_TEST(pmis_patterns)
{
    ctx c;
    ctx_init(&c);
    static const int cycle[6][8] = {{1, -1}, {2, -1}, {0, -1}, {0, -1}, {-1}, {-1}};
    static const int chain[8][8] = {{1, -1}, {2, -1}, {3, -1}, {4, -1},
                                    {5, -1}, {6, -1}, {7, -1}, {-1}};
    static const int two_cycles[7][8] = {{1, -1}, {2, -1}, {0, -1}, {4, -1},
                                         {5, -1}, {6, -1}, {3, -1}};
    static const int star[6][8] = {{1, 2, 3, 4, 5, -1}, {-1}, {-1}, {-1}, {-1}, {-1}};
    static const int star_in[6][8] = {{-1}, {0, -1}, {0, -1}, {0, -1}, {0, -1}, {0, -1}};
    static const int one[1][8] = {{-1}};
    int complete[8][8];
    for (int i = 0; i < 8; i++) {
        int k = 0;
        for (int j = 0; j < 8; j++)
            if (j != i)
                complete[i][k++] = j;
        complete[i][7] = -1;
    }
    struct {
        const char *name;
        int n;
        const int (*rows)[8];
    } cases[] = {{"3-cycle", 6, cycle},          {"chain", 8, chain},
                 {"two 3-/4-cycles", 7, two_cycles}, {"star out", 6, star},
                 {"star in", 6, star_in},        {"one point", 1, one},
                 {"complete 8", 8, (const int (*)[8])complete}};
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        ks_sparse S;
        pattern_from_rows(c.hb, cases[t].n, cases[t].rows, &S);
        for (unsigned long long seed = 1; seed <= 12; seed++)
            cmp_pmis(&c, cases[t].name, &S, seed);
        ks_sparse_free(&S);
    }
    /* no points */
    {
        ks_csr H;
        KS_CHECK(ks_csr_alloc(&H, 0, 0, 0));
        H.rowptr[0] = 0;
        ks_sparse S;
        KS_CHECK(ks_sparse_from_csr(c.hb, &H, 1, &S));
        cmp_pmis(&c, "no points", &S, 1);
        ks_sparse_free(&S);
        ks_csr_free(&H);
    }
    for (int t = 0; t < 6; t++) {
        ks_sparse S;
        const ks_int n = t < 3 ? 2000 : 150000;
        random_digraph(c.hb, n, 1 + t % 3, 40 + (uint64_t)t, &S);
        char name[64];
        snprintf(name, sizeof name, "random digraph %d (n %d)", t, n);
        for (unsigned long long seed = 1; seed <= 3; seed++)
            cmp_pmis(&c, name, &S, seed * 7919);
        ks_sparse_free(&S);
    }
    ctx_free(&c);
    notes_check("PMIS patterns");
}
END_TEST

/* Malformed input: both tables refuse it the same way. */
START_TEST(invalid_inputs)
{
    ctx c;
    ctx_init(&c);
    /* strength: a self loop and a column out of range in a pattern for
     * PMIS; a non-square matrix; bad parameters */
    static const int self[3][8] = {{1, -1}, {1, 2, -1}, {-1}};
    static const int range[3][8] = {{1, -1}, {7, -1}, {-1}};
    const int (*bad_rows[2])[8] = {self, range};
    for (int b = 0; b < 2; b++) {
        ks_sparse S;
        pattern_from_rows(c.hb, 3, bad_rows[b], &S);
        cmp_pmis(&c, b ? "column out of range" : "self loop", &S, 1);
        ks_sparse_free(&S);
    }
    {
        ks_gen_params p;
        ks_gen_params_default(&p);
        p.kind = KS_GEN_POISSON2D_5;
        p.nx = p.ny = 6;
        ks_csr A;
        KS_CHECK(ks_generate(&p, &A));
        ks_sparse Ah, Ad;
        /* a column out of range (row 4) */
        ks_int keep = A.colind[A.rowptr[4]];
        A.colind[A.rowptr[4]] = 1000;
        KS_CHECK(ks_sparse_from_csr(c.hb, &A, 0, &Ah));
        KS_CHECK(ks_sparse_from_csr(c.db, &A, 0, &Ad));
        cmp_strength(&c, "column 1000", &Ah, &Ad, 0.25, 0.9);
        cmp_strength(&c, "column 1000", &Ah, &Ad, 0.25, -1.0);
        cmp_spectral(&c, "column 1000", &Ah, &Ad, 5);
        ks_sparse_free(&Ah);
        ks_sparse_free(&Ad);
        A.colind[A.rowptr[4]] = keep;
        /* unsorted columns (spectral validates them; strength does not) */
        ks_int t = A.colind[A.rowptr[9]];
        A.colind[A.rowptr[9]] = A.colind[A.rowptr[9] + 1];
        A.colind[A.rowptr[9] + 1] = t;
        KS_CHECK(ks_sparse_from_csr(c.hb, &A, 0, &Ah));
        KS_CHECK(ks_sparse_from_csr(c.db, &A, 0, &Ad));
        cmp_spectral(&c, "unsorted row 9", &Ah, &Ad, 5);
        ks_sparse_free(&Ah);
        ks_sparse_free(&Ad);
        A.colind[A.rowptr[9] + 1] = A.colind[A.rowptr[9]];
        A.colind[A.rowptr[9]] = t;
        /* bad parameters, iterations; a non-square matrix */
        KS_CHECK(ks_sparse_from_csr(c.hb, &A, 0, &Ah));
        KS_CHECK(ks_sparse_from_csr(c.db, &A, 0, &Ad));
        cmp_strength(&c, "theta -0.1", &Ah, &Ad, -0.1, 0.9);
        cmp_strength(&c, "theta 1.5", &Ah, &Ad, 1.5, -1.0);
        cmp_strength(&c, "max_row_sum 0", &Ah, &Ad, 0.25, 0.0);
        cmp_spectral(&c, "0 steps", &Ah, &Ad, 0);
        ks_sparse_free(&Ah);
        ks_sparse_free(&Ad);
        A.ncols = 40;
        KS_CHECK(ks_sparse_from_csr(c.hb, &A, 0, &Ah));
        KS_CHECK(ks_sparse_from_csr(c.db, &A, 0, &Ad));
        cmp_strength(&c, "36 x 40", &Ah, &Ad, 0.25, 0.9);
        cmp_spectral(&c, "36 x 40", &Ah, &Ad, 5);
        ks_sparse_free(&Ah);
        ks_sparse_free(&Ad);
        ks_csr_free(&A);
    }
    /* tentative: values outside [-1, na), an empty aggregate, sizes */
    {
        ks_int agg[10] = {0, 1, 2, 0, 1, 2, 0, 1, 2, -1};
        cmp_tentative(&c, "valid", 10, agg, 3, 1);
        agg[5] = 3;
        agg[7] = -2;
        cmp_tentative(&c, "agg[5] = na", 10, agg, 3, 1);
        agg[5] = -2;
        cmp_tentative(&c, "agg[5] = -2", 10, agg, 3, 1);
        agg[5] = 2;
        agg[7] = 1;
        cmp_tentative(&c, "empty aggregate 3", 10, agg, 5, 1);
        cmp_tentative(&c, "negative n", -1, agg, 3, 1);
        cmp_tentative(&c, "negative na", 10, agg, -1, 1);
    }
    ctx_free(&c);
    notes_check("invalid inputs");
}
END_TEST

/* Aggregate maps the aggregation never makes: left-out points (-1, empty
 * rows), sizes 1..40 (their 1/sqrt round differently), no aggregates at
 * all, no points, a large random map (many blocks of atomics). */
START_TEST(tentative_maps)
{
    ctx c;
    ctx_init(&c);
    cmp_tentative(&c, "no points", 0, NULL, 0, 1);
    {
        ks_int agg[7] = {-1, -1, -1, -1, -1, -1, -1};
        cmp_tentative(&c, "all left out", 7, agg, 0, 1);
    }
    {
        ks_int n = 0, na = 40;
        ks_int *agg = malloc(sizeof(ks_int) * 1000);
        for (ks_int a = 0; a < na; a++)
            for (ks_int k = 0; k <= a; k++)
                agg[n++] = (a * 7) % na; /* sizes 1..40, in a shuffled order */
        agg[3] = -1;   /* aggregate 14 (size 3) keeps 2 points */
        agg[100] = -1; /* aggregate 11 (size 14) keeps 13 */
        cmp_tentative(&c, "sizes 1..40 with holes", n, agg, na, 1);
        free(agg);
    }
    {
        const ks_int n = 300000, na = 41000;
        ks_int *agg = malloc(sizeof(ks_int) * (size_t)n);
        ks_test_rng_seed(3);
        for (ks_int i = 0; i < n; i++)
            agg[i] = i < na ? i : ks_test_rng_next() % 13 == 0
                                      ? -1
                                      : (ks_int)(ks_test_rng_next() % (uint64_t)na);
        cmp_tentative(&c, "random 300000", n, agg, na, 1);
        free(agg);
    }
    ctx_free(&c);
    notes_check("tentative maps");
}
END_TEST

/* Every entry with the device's memory limited to what it has plus
 * `extra` bytes, extra growing until the call succeeds: each failure is
 * KS_ERR_MEMORY and gives back everything (the cleanup paths run). */
START_TEST(memory_limits)
{
    ctx c;
    ctx_init(&c);
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = KS_GEN_CONVDIFF3D;
    p.nx = p.ny = p.nz = 5;
    ks_csr A;
    KS_CHECK(ks_generate(&p, &A));
    ks_sparse Ah, Ad, Sch, Scd, Sgh, Sgd;
    KS_CHECK(ks_sparse_from_csr(c.hb, &A, 0, &Ah));
    KS_CHECK(ks_sparse_from_csr(c.db, &A, 0, &Ad));
    /* the classical pattern of A, and a pattern that needs the PMIS fix-up
     * (a random one-way graph) */
    KS_CHECK(CPU->strength_classical(&Ah, 0.25, 0.9, &Sch));
    KS_CHECK(ks_sparse_copy(&Sch, c.db, &Scd));
    random_digraph(c.hb, 300, 2, 11, &Sgh);
    KS_CHECK(ks_sparse_copy(&Sgh, c.db, &Sgd));
    const ks_int n = A.nrows;
    int *cf = dev_alloc(&c, sizeof(int) * 300);
    double *w = dev_alloc(&c, sizeof(double) * (size_t)n);
    ks_int *agg = dev_alloc(&c, sizeof(ks_int) * (size_t)n);
    {
        ks_int *h = malloc(sizeof(ks_int) * (size_t)n);
        for (ks_int i = 0; i < n; i++)
            h[i] = i % 11 == 5 ? -1 : i / 3;
        KS_CHECK(c.db->ops->upload(c.db, agg, h, sizeof(ks_int) * (size_t)n));
        free(h);
    }
    const ks_int na = (n - 1) / 3 + 1;
    static const char *const names[] = {"strength classical", "strength symmetric", "PMIS",
                                        "PMIS with fix-up", "tentative", "spectral radius",
                                        "check_diagonal", "weights"};
    for (int entry = 0; entry < 8; entry++) {
        const size_t base = in_use(&c);
        int ok = 0;
        for (size_t extra = 0; extra <= ((size_t)1 << 20) && !ok; extra += 16) {
            KS_CHECK(ks_backend_set_memory_limit(c.db, base + extra));
            ks_sparse out;
            memset(&out, 0, sizeof out);
            ks_int nc, bad;
            double v;
            int st;
            ks_error e;
            switch (entry) {
            case 0: e = DEV->strength_classical(&Ad, 0.25, 0.9, &out); break;
            case 1: e = DEV->strength_symmetric(&Ad, 0.25, &out); break;
            case 2: e = DEV->pmis(&Scd, 5, cf, &nc); break;
            case 3: e = DEV->pmis(&Sgd, 5, cf, &nc); break;
            case 4: e = DEV->tentative_prolongator(c.db, n, agg, na, &out); break;
            case 5: e = DEV->spectral_radius(&Ad, 12, 0, &v, NULL); break;
            case 6: e = DEV->check_diagonal(&Ad, &bad, &v, &st); break;
            default: e = DEV->smoother_weights(&Ad, KS_SMOOTHER_JACOBI_L1, 1.0, w); break;
            }
            KS_CHECK(ks_backend_set_memory_limit(c.db, 0));
            if (e == KS_OK) {
                ok = 1;
                ks_sparse_free(&out);
            } else {
                EXPECT(e == KS_ERR_MEMORY, "%s with %zu bytes to spare: %s (%s)", names[entry],
                       extra, ks_error_name(e), ks_last_error());
            }
            char what[96];
            snprintf(what, sizeof what, "%s with %zu bytes to spare", names[entry], extra);
            leak_check(&c, base, what);
            ks_clear_error();
        }
        EXPECT(ok, "%s never succeeded", names[entry]);
    }
    dev_free(&c, cf);
    dev_free(&c, w);
    dev_free(&c, agg);
    ks_sparse_free(&Ad);
    ks_sparse_free(&Ah);
    ks_sparse_free(&Sch);
    ks_sparse_free(&Scd);
    ks_sparse_free(&Sgh);
    ks_sparse_free(&Sgd);
    ks_csr_free(&A);
    ctx_free(&c);
    notes_check("memory limits");
}
END_TEST

/* ----------------------------------------------- the whole AMG setup */

/* aggressive: 0 none; else aggressive coarsening on level 0 with this
 * second-stage interpolator (KS_AMG_D1 + 1 or KS_AMG_D2 + 1). */
static const ks_amg *setup_amg(ks_backend *be, const ks_csr *A, ks_amg_algorithm alg,
                               int aggressive, ks_matrix **M, ks_solver **s)
{
    ks_solver_params prm;
    ks_solver_params_default(&prm);
    snprintf(prm.solver, sizeof prm.solver, "PCG");
    snprintf(prm.pc.solver, sizeof prm.pc.solver, "AMG");
    prm.pc.amg.algorithm = alg;
    prm.pc.amg.selector = KS_AMG_PMIS;
    if (alg == KS_AMG_AGGREGATION)
        prm.pc.amg.strength_threshold = 0.08;
    if (aggressive) {
        prm.pc.amg.aggressive_levels = 1;
        prm.pc.amg.aggressive_interpolator = (ks_amg_interp)(aggressive - 1);
    }
    KS_CHECK(ks_matrix_create(be, A, "auto", NULL, M));
    KS_CHECK(ks_solver_create_params(be, &prm, s));
    KS_CHECK(ks_solver_setup(*s, *M));
    const ks_amg *amg = ks_precond_amg((*s)->pc);
    ck_assert_ptr_nonnull(amg);
    return amg;
}

/* A level's array of n elements of `size` bytes on the host. */
static void *level_array(const ks_amg *amg, const void *p, ks_int n, size_t size)
{
    void *h = malloc(size * ((size_t)n + 1));
    ck_assert(h);
    if (n > 0)
        KS_CHECK(amg->be->ops->download(amg->be, h, p, size * (size_t)n));
    return h;
}

/* cpu and device setups of A: the same levels (sizes), and for classical
 * the same splitting on every level; for aggregation the same aggregates
 * on level 0 (deeper levels see smoothed prolongators whose values differ
 * by the spectral radius's rounding). The device must not have staged the
 * steps it implements. */
static void compare_setups(const char *name, const ks_csr *A, ks_amg_algorithm alg,
                           int aggressive)
{
    notes_reset();
    ks_backend *hb, *db;
    KS_CHECK(ks_backend_create("cpu", &hb));
    KS_CHECK(ks_backend_create(DEV_NAME, &db));
    ks_matrix *Mh, *Md;
    ks_solver *sh, *sd;
    const ks_amg *ah = setup_amg(hb, A, alg, aggressive, &Mh, &sh);
    const ks_amg *ad = setup_amg(db, A, alg, aggressive, &Md, &sd);
    const int agg = alg == KS_AMG_AGGREGATION;
    EXPECT(agg || ah->nlevels == ad->nlevels, "%s: %d levels (cpu) vs %d", name, ah->nlevels,
           ad->nlevels);
    const int nl = ah->nlevels < ad->nlevels ? ah->nlevels : ad->nlevels;
    for (int l = 0; l < (agg ? (nl > 1 ? 2 : nl) : nl); l++) {
        const ks_amg_level *Lh = &ah->levels[l], *Ld = &ad->levels[l];
        EXPECT(Lh->A.nrows == Ld->A.nrows && Lh->A.nnz == Ld->A.nnz,
               "%s: level %d is %d rows / %d nonzeros (cpu) vs %d / %d", name, l, Lh->A.nrows,
               Lh->A.nnz, Ld->A.nrows, Ld->A.nnz);
        if (Lh->A.nrows != Ld->A.nrows || l == nl - 1)
            continue;
        const ks_int n = Lh->A.nrows;
        if (!agg && Lh->cf && Ld->cf) {
            int *ch = level_array(ah, Lh->cf, n, sizeof(int));
            int *cd = level_array(ad, Ld->cf, n, sizeof(int));
            ks_int first = -1;
            for (ks_int i = 0; i < n && first < 0; i++)
                if (ch[i] != cd[i])
                    first = i;
            EXPECT(first < 0, "%s: level %d splittings differ first at point %d", name, l, first);
            free(ch);
            free(cd);
            EXPECT(Lh->aggressive == Ld->aggressive && Lh->P.nnz == Ld->P.nnz,
                   "%s: level %d: aggressive %d, P with %d nonzeros (cpu) vs %d, %d", name, l,
                   Lh->aggressive, Lh->P.nnz, Ld->aggressive, Ld->P.nnz);
        } else if (agg && l == 0 && Lh->agg && Ld->agg) {
            EXPECT(Lh->nagg == Ld->nagg, "%s: level 0 has %d aggregates (cpu) vs %d", name,
                   Lh->nagg, Ld->nagg);
            ks_int *gh = level_array(ah, Lh->agg, n, sizeof(ks_int));
            ks_int *gd = level_array(ad, Ld->agg, n, sizeof(ks_int));
            EXPECT(memcmp(gh, gd, sizeof(ks_int) * (size_t)n) == 0,
                   "%s: level 0 aggregates differ", name);
            free(gh);
            free(gd);
        } else {
            EXPECT(!!Lh->cf == !!Ld->cf && !!Lh->agg == !!Ld->agg, "%s: level %d lacks its "
                   "splitting or aggregates on one side", name, l);
        }
    }
    if (DEV != CPU) {
        unsigned want_device = (1u << KS_OP_STRENGTH) | (1u << KS_OP_DIAGONAL) |
                               (1u << KS_OP_WEIGHTS) | (1u << KS_OP_SPECTRAL) |
                               (agg ? 1u << KS_OP_TENTATIVE : 1u << KS_OP_PMIS);
        unsigned staged = ad->exec.host_ops & want_device;
        for (int op = 0; op < KS_NOPS; op++)
            EXPECT(!(staged & (1u << op)), "%s: step '%s' ran staged on the host", name,
                   ks_amg_op_names[op]);
    }
    ks_solver_destroy(&sh);
    ks_solver_destroy(&sd);
    ks_matrix_destroy(&Mh);
    ks_matrix_destroy(&Md);
    ks_backend_destroy(&hb);
    ks_backend_destroy(&db);
    notes_check(name);
}

START_TEST(amg_setup_poisson3d)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = KS_GEN_POISSON3D_7;
    p.nx = p.ny = p.nz = 20;
    ks_csr A;
    KS_CHECK(ks_generate(&p, &A));
    compare_setups("AMG setup, PMIS, 3D Poisson 20^3", &A, KS_AMG_CLASSICAL, 0);
    compare_setups("AMG setup, aggregation, 3D Poisson 20^3", &A, KS_AMG_AGGREGATION, 0);
    compare_setups("AMG setup, PMIS, aggressive (D2 D2), 3D Poisson 20^3", &A, KS_AMG_CLASSICAL,
                   KS_AMG_D2 + 1);
    compare_setups("AMG setup, PMIS, aggressive (D2 D1), 3D Poisson 20^3", &A, KS_AMG_CLASSICAL,
                   KS_AMG_D1 + 1);
    ks_csr_free(&A);
}
END_TEST

START_TEST(amg_setup_convdiff)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = KS_GEN_CONVDIFF3D;
    p.nx = p.ny = p.nz = 16;
    p.vx = 50;
    p.vy = -20;
    p.vz = 5;
    ks_csr A;
    KS_CHECK(ks_generate(&p, &A));
    compare_setups("AMG setup, PMIS, convdiff3d 16^3", &A, KS_AMG_CLASSICAL, 0);
    compare_setups("AMG setup, PMIS, aggressive (D2 D1), convdiff3d 16^3", &A, KS_AMG_CLASSICAL,
                   KS_AMG_D1 + 1);
    ks_csr_free(&A);
}
END_TEST

/* Real matrices for whole setups (those present: indices into mats). */
static const char *const setup_real[] = {"fv1", "poisson3Da"};
static int setup_mats[2], nsetup;

START_TEST(amg_setup_real)
{
    const tmat *m = &mats[setup_mats[_i]];
    char name[96];
    snprintf(name, sizeof name, "AMG setup, PMIS, %s", m->name);
    compare_setups(name, &m->A, KS_AMG_CLASSICAL, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("amg_cuda");
    DEV = ks_test_amg_device_table(&DEV_NAME);
    if (!DEV) {
        ks_test_skip(6, "no CUDA device: the cuda AMG setup steps against the cpu's (strength, "
                        "PMIS, tentative P0, spectral radius, diagonal check, smoother weights, "
                        "whole setups)");
        return ks_test_run(s);
    }
    /* The matrices are built here, once, and the forked tests inherit
     * them. libgomp's thread pool does not survive fork (a child's first
     * parallel region would wait for threads that are not there), so this
     * program keeps OpenMP at one thread, parent and children: the cpu
     * results do not depend on the thread count. */
    ks_test_set_threads(1);
    int missing = 0;
    build_matrices(&missing);
    if (missing)
        ks_test_skip(missing, "../shared/matrices absent or incomplete: real matrices for the "
                              "cuda AMG setup steps");
    TCase *tm = tcase_create("matrices");
    tcase_set_timeout(tm, 300);
    tcase_add_loop_test(tm, matrix_all_entries, 0, nmats);
    suite_add_tcase(s, tm);
    TCase *tc = tcase_create("cases");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, pmis_patterns);
    tcase_add_test(tc, invalid_inputs);
    tcase_add_test(tc, tentative_maps);
    tcase_add_test(tc, memory_limits);
    suite_add_tcase(s, tc);
    TCase *ta = tcase_create("setup");
    tcase_set_timeout(ta, 300);
    tcase_add_test(ta, amg_setup_poisson3d);
    tcase_add_test(ta, amg_setup_convdiff);
    const int nwanted = (int)(sizeof setup_real / sizeof setup_real[0]);
    for (int r = 0; r < nwanted; r++)
        for (int m = 0; m < nmats; m++)
            if (strcmp(mats[m].name, setup_real[r]) == 0)
                setup_mats[nsetup++] = m;
    if (nsetup)
        tcase_add_loop_test(ta, amg_setup_real, 0, nsetup);
    if (nsetup < nwanted)
        ks_test_skip(nwanted - nsetup,
                     "../shared/matrices absent: AMG setups on real matrices, cpu vs cuda");
    suite_add_tcase(s, ta);
    return ks_test_run(s);
}
