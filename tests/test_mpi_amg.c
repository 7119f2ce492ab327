/* The distributed AMG setup's first steps, under mpirun on 1 to 4 ranks
 * (tests/meson.build): classical strength, PMIS, the coarse numbering,
 * direct interpolation and its truncation across rank boundaries against
 * the serial cpu kernels on the global matrix (bit for bit) (generated 7-point, 27-point, anisotropic and convection-diffusion
 * problems, random nonsymmetric matrices whose splitting needs the serial
 * fix-up), layouts with a rank without rows, several seeds; two runs the
 * same; errors on one rank failing on all. HMIS over ranks: the serial
 * splitting on one rank, its PMIS stage from the serial RS states the
 * serial splitting on any, a valid splitting the same twice.
 *
 * As in test_mpi.c: Check runs without fork, every assertion is combined
 * over the ranks first, only rank 0 prints Check's summary. Every rank
 * builds the small global matrix for the reference; the distributed path
 * only sees its own rows. */
#include "ks_test_mpi.h"
#include "ksolve_mpi.h"
#include "mpi/amg_dist.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif



/* ---------------------------------------------------------- the problems */

/* Layouts of N rows: 0 even blocks; 1 uneven, rank 1 without rows; 2
 * uneven, the last rank without rows (rank 0 with 2 ranks). */
#define NLAYOUTS 3
static void layout(int kind, ks_int N, ks_gint *off)
{
    ks_int count[8] = {0};
    if (kind == 0) {
        for (int q = 0; q < nranks; q++)
            count[q] = N / nranks + (q < N % nranks);
    } else {
        const int empty = nranks == 1 ? -1 : kind == 1 ? 1 : nranks == 2 ? 0 : nranks - 1;
        int weight[8], wsum = 0;
        for (int q = 0; q < nranks; q++) {
            weight[q] = q == empty ? 0 : 1 + (q * 7 + kind) % 3;
            wsum += weight[q];
        }
        ks_int given = 0;
        for (int q = 0; q < nranks; q++) {
            count[q] = (ks_int)((int64_t)N * weight[q] / wsum);
            given += count[q];
        }
        count[empty == 0 ? 1 % nranks : 0] += N - given;
    }
    off[0] = 0;
    for (int q = 0; q < nranks; q++)
        off[q + 1] = off[q] + count[q];
}

/* Generated problems: 7-point, 27-point, anisotropic, convection-diffusion
 * (strong upwinding: its strength graph is not symmetric). */
#define NGEN 4
static void generated(int which, ks_csr *A)
{
    ks_gen_params g;
    ks_gen_params_default(&g);
    static const ks_gen_kind kinds[NGEN] = {KS_GEN_POISSON3D_7, KS_GEN_POISSON3D_27,
                                            KS_GEN_ANISO3D, KS_GEN_CONVDIFF3D};
    g.kind = kinds[which];
    g.nx = 7;
    g.ny = 6;
    g.nz = 5;
    if (g.kind == KS_GEN_ANISO3D) {
        g.cx = 1.0;
        g.cy = 0.01;
        g.cz = 100.0;
    }
    if (g.kind == KS_GEN_CONVDIFF3D) {
        g.vx = 30.0;
        g.vy = -12.0;
        g.vz = 3.0;
    }
    KS_CHECK(ks_generate(&g, A));
}

/* A random nonsymmetric N x N matrix, the same on every rank: mostly
 * negative off-diagonal entries (some positive), a positive diagonal in
 * most rows (negative or missing in a few), some rows empty, columns near
 * the row or anywhere (so rows reach other ranks and the strength graph
 * has one-way dependencies: the serial fix-up has work). lower: the
 * entries above the diagonal positive, so (with a positive diagonal) a
 * point depends only on lower ones: many fix-up candidates depending on
 * earlier candidates, also on other ranks. */
static void random_matrix_ex(uint64_t seed, ks_int N, int lower, int full_diag, ks_csr *A)
{
    ks_test_rng_seed(seed);
    const int64_t cap = (int64_t)N * 8 + 8;
    ks_int *r = malloc((size_t)cap * sizeof *r), *c = malloc((size_t)cap * sizeof *c);
    double *v = malloc((size_t)cap * sizeof *v);
    ck_assert(r && c && v);
    int64_t m = 0;
    for (ks_int i = 0; i < N; i++) {
        const uint64_t kind = ks_test_rng_next() % 20;
        if (kind == 0 && !full_diag)
            continue; /* an empty row */
        if (kind != 1 || full_diag) {
            r[m] = c[m] = i;
            v[m++] = (kind == 2 ? -1.0 : 1.0) * (2.0 + ks_test_urand());
        }
        const int len = (int)(ks_test_rng_next() % 6);
        for (int k = 0; k < len; k++) {
            ks_int j = ks_test_rng_next() % 2
                           ? (ks_int)((i + N - 3 + (ks_int)(ks_test_rng_next() % 7)) % N)
                           : (ks_int)(ks_test_rng_next() % (uint64_t)N);
            r[m] = i;
            c[m] = j;
            const int neg = lower ? j < i : ks_test_rng_next() % 5 != 0;
            v[m++] = neg ? -ks_test_urand() : 0.5 * ks_test_urand();
        }
    }
    KS_CHECK(ks_csr_from_coo(N, N, m, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
}

/* full_diag: every row has a (nonzero) diagonal, so that direct
 * interpolation is not refused for a zero one and its rows get compared. */
static void random_matrix(uint64_t seed, ks_int N, int lower, ks_csr *A)
{
    random_matrix_ex(seed, N, lower, 0, A);
}

/* The distributed matrix of this rank's rows of A in layout off. */
static ks_matrix *distribute(const ks_csr *A, const ks_gint *off)
{
    const ks_gint lo = off[rank], hi = off[rank + 1];
    const ks_int nloc = (ks_int)(hi - lo), base = A->rowptr[lo];
    const ks_int nnz = A->rowptr[hi] - base;
    ks_int *rp = malloc(((size_t)nloc + 1) * sizeof *rp);
    ks_gint *ci = malloc(((size_t)nnz + 1) * sizeof *ci);
    ck_assert(rp && ci);
    for (ks_int i = 0; i <= nloc; i++)
        rp[i] = A->rowptr[lo + i] - base;
    for (ks_int k = 0; k < nnz; k++)
        ci[k] = A->colind[base + k];
    ks_matrix *M = NULL;
    KS_ALL(ks_matrix_create_dist(be, comm, nloc, A->ncols, rp, ci, A->val + base, "auto", NULL,
                                 &M));
    free(rp);
    free(ci);
    return M;
}

/* ------------------------------------------------------------- checks */

static int cmp_g(const void *a, const void *b)
{
    const ks_gint x = *(const ks_gint *)a, y = *(const ks_gint *)b;
    return (x > y) - (x < y);
}

/* The distributed strength's rows (both parts, global ids) against the
 * serial rows of the same global points; returns the first bad row or -1. */
static ks_gint strength_mismatch(const ks_dist_strength *D, const ks_strength *S)
{
    ks_gint row[256];
    for (ks_int i = 0; i < D->nloc; i++) {
        const ks_gint g = D->row_begin + i;
        ks_int m = 0;
        for (ks_int k = D->local.rowptr[i]; k < D->local.rowptr[i + 1] && m < 256; k++)
            row[m++] = D->row_begin + D->local.colind[k];
        for (ks_int k = D->grp[i]; k < D->grp[i + 1] && m < 256; k++)
            row[m++] = D->ghost_gid[D->gci[k]];
        qsort(row, (size_t)m, sizeof *row, cmp_g);
        const ks_int b = S->rowptr[g], len = S->rowptr[g + 1] - b;
        if (len != m)
            return g;
        for (ks_int k = 0; k < m; k++)
            if (row[k] != S->colind[b + k])
                return g;
    }
    return -1;
}

static int owner(const ks_gint *off, ks_gint g)
{
    int q = 0;
    while (g >= off[q + 1])
        q++;
    return q;
}

/* How often the serial fix-up decided a candidate by an earlier candidate
 * on another rank (which the distributed fix-up must hear about). cf is
 * the final splitting, prom the promotions. */
static long cross_rank_fixups(const ks_strength *S, const int *cf, const unsigned char *prom,
                              const ks_gint *off)
{
    const ks_int N = S->n;
    int *pre = malloc((size_t)N * sizeof *pre + 1);
    unsigned char *cand = malloc((size_t)N + 1);
    ck_assert(pre && cand);
    for (ks_int i = 0; i < N; i++)
        pre[i] = prom[i] ? KS_FPT : cf[i];
    for (ks_int i = 0; i < N; i++) {
        int c = pre[i] == KS_FPT && S->rowptr[i] < S->rowptr[i + 1];
        for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1] && c; k++)
            c = pre[S->colind[k]] != KS_CPT;
        cand[i] = (unsigned char)c;
    }
    long n = 0;
    for (ks_int i = 0; i < N; i++)
        for (ks_int k = S->rowptr[i]; cand[i] && k < S->rowptr[i + 1]; k++) {
            const ks_int j = S->colind[k];
            n += j < i && cand[j] && owner(off, j) != owner(off, i);
        }
    free(pre);
    free(cand);
    return n;
}

/* The first of this rank's rows of DP that differs from the serial P's
 * row of the same point (columns, or values bit for bit), or -1. */
static ks_gint prows_mismatch(const ks_dist_prows *DP, const ks_csr *P)
{
    for (ks_int i = 0; i < DP->nloc; i++) {
        const ks_gint g = DP->row_begin + i;
        const ks_int b = P->rowptr[g], len = P->rowptr[g + 1] - b;
        const ks_int db = DP->rowptr[i];
        if (DP->rowptr[i + 1] - db != len)
            return g;
        for (ks_int k = 0; k < len; k++)
            if (DP->col[db + k] != P->colind[b + k] ||
                memcmp(&DP->val[db + k], &P->val[b + k], sizeof(double)))
                return g;
    }
    return -1;
}

/* The split by the coarse layout holds DP's rows: local columns inside
 * this rank's coarse range, ghost ids ascending, outside it and each
 * used, and the two parts merged give DP's row back. */
static int split_ok(const ks_dist_prows *DP, const ks_dist_split *X)
{
    const ks_int ng = X->ghost.ncols;
    if (X->local.nrows != DP->nloc || X->ghost.nrows != DP->nloc || X->local.ncols != DP->nc)
        return 0;
    unsigned char *used = calloc((size_t)ng + 1, 1);
    ck_assert(used);
    int ok = 1;
    for (ks_int g = 0; ok && g < ng; g++)
        ok = (g == 0 || X->ghost_gid[g] > X->ghost_gid[g - 1]) &&
             (X->ghost_gid[g] < DP->c_begin || X->ghost_gid[g] >= DP->c_begin + DP->nc);
    for (ks_int i = 0; ok && i < DP->nloc; i++) {
        ks_int kl = X->local.rowptr[i], kg = X->ghost.rowptr[i];
        for (ks_int k = DP->rowptr[i]; ok && k < DP->rowptr[i + 1]; k++) {
            const ks_gint cl = kl < X->local.rowptr[i + 1]
                                   ? DP->c_begin + X->local.colind[kl] : INT64_MAX;
            const ks_gint cg = kg < X->ghost.rowptr[i + 1]
                                   ? X->ghost_gid[X->ghost.colind[kg]] : INT64_MAX;
            if (cl < cg) {
                ok = cl == DP->col[k] && X->local.val[kl] == DP->val[k] &&
                     X->local.colind[kl] < DP->nc;
                kl++;
            } else {
                ok = cg == DP->col[k] && X->ghost.val[kg] == DP->val[k];
                used[X->ghost.colind[kg]] = 1;
                kg++;
            }
        }
        ok = ok && kl == X->local.rowptr[i + 1] && kg == X->ghost.rowptr[i + 1];
    }
    for (ks_int g = 0; ok && g < ng; g++)
        ok = used[g];
    free(used);
    return ok;
}

/* Direct interpolation, its truncation and split against the serial
 * kernels on the global matrix. Adds to stats[2] the problems whose rows
 * were compared (not refused for a zero diagonal). */
static void check_interp(const ks_csr *A, const ks_strength *S, const int *cfs,
                         const ks_matrix *M, const ks_dist_strength *D, const int *cf,
                         const ks_dist_coarse *C, const char *what, long *stats)
{
    ks_csr P;
    const ks_error es = ks_amg_interp_direct(A, S, cfs, &P);
    /* The serial refusal's row (its message goes with the next call). */
    long zrow = -1;
    const char *z = es == KS_OK ? NULL : strstr(ks_last_error(), "zero diagonal at row ");
    if (z)
        zrow = strtol(z + strlen("zero diagonal at row "), NULL, 10);
    ks_dist_prows DP;
    const ks_error ed = ks_dist_interp_direct(M, D, cf, C, &DP);
    if (es != KS_OK) {
        /* Serially refused: the same refusal on every rank, naming the
         * same (first) row. */
        ALL(es == KS_ERR_NUMERIC && zrow >= 0, "%s: serial interpolation failed otherwise",
            what);
        /* A rank names its own first such row, the others the lowest
         * failing rank's, which is the serial (global) first. */
        long expect = -1;
        for (ks_int i = 0; i < D->nloc && expect < 0; i++) {
            const ks_int g = (ks_int)(D->row_begin + i);
            double dg = 0.0;
            for (ks_int k = A->rowptr[g]; k < A->rowptr[g + 1]; k++)
                if (A->colind[k] == g)
                    dg = A->val[k];
            if (cfs[g] != KS_CPT && dg == 0.0)
                expect = g;
        }
        if (expect < 0)
            expect = zrow;
        const char *dz = strstr(ks_last_error(), "zero diagonal at row ");
        const long drow = dz ? strtol(dz + strlen("zero diagonal at row "), NULL, 10) : -1;
        ALL(ed == KS_ERR_NUMERIC && drow == expect, "%s: serially refused at row %ld, here "
            "expected at %ld, distributed %s (%s)", what, zrow, expect, ks_error_name(ed),
            ks_last_error());
        return;
    }
    ALL(ed == KS_OK, "%s: distributed direct interpolation: %s: %s", what, ks_error_name(ed),
        ks_last_error());
    stats[2]++;
    ALL(DP.nc == C->nc && DP.c_begin == C->c_begin && DP.nc_global == P.ncols,
        "%s: coarse layout of P", what);
    ks_gint bad = prows_mismatch(&DP, &P);
    ALL(bad < 0, "%s: direct interpolation row %lld differs from the serial one", what,
        (long long)bad);
    ks_dist_split X;
    KS_ALL(ks_dist_prows_split(&DP, &X));
    ALL(split_ok(&DP, &X), "%s: P's split by the coarse layout does not hold its rows", what);
    ks_dist_split_free(&X);
    /* Truncations of the same rows: a cap, a drop, both, one element. */
    static const struct { int max; double factor; } tr[] = {{4, 0.0}, {0, 0.2}, {2, 0.3},
                                                           {1, 0.0}};
    for (size_t t = 0; t < sizeof tr / sizeof tr[0]; t++) {
        ks_csr Pt;
        KS_CHECK(ks_csr_copy(&P, &Pt));
        KS_CHECK(ks_amg_interp_truncate(&Pt, tr[t].max, tr[t].factor));
        ks_dist_prows DT;
        KS_ALL(ks_dist_interp_direct(M, D, cf, C, &DT));
        KS_ALL(ks_dist_prows_truncate(&DT, tr[t].max, tr[t].factor));
        bad = prows_mismatch(&DT, &Pt);
        ALL(bad < 0, "%s: truncation (%d, %g): row %lld differs from the serial one", what,
            tr[t].max, tr[t].factor, (long long)bad);
        KS_ALL(ks_dist_prows_split(&DT, &X));
        ALL(split_ok(&DT, &X), "%s: truncated P's split does not hold its rows", what);
        ks_dist_split_free(&X);
        ks_dist_prows_free(&DT);
        /* truncated as they are built (the local system's rows) */
        const ks_dist_trunc dt = {tr[t].max, tr[t].factor};
        KS_ALL(ks_dist_interp(NULL, M, D, cf, C, KS_AMG_D1, &dt, &DT));
        bad = prows_mismatch(&DT, &Pt);
        ALL(bad < 0, "%s: truncation (%d, %g) folded into the interpolation: row %lld differs "
            "from the serial one", what, tr[t].max, tr[t].factor, (long long)bad);
        ks_dist_prows_free(&DT);
        ks_csr_free(&Pt);
    }
    ks_dist_prows_free(&DP);
    ks_csr_free(&P);
}

/* The fetched rows of strong F neighbours on other ranks: exactly those
 * points (serial S and splitting), each with its row of A (bit for bit),
 * S's flags and the serial coarse ids (sid) of its columns; 0 if not. */
static int ext_rows_ok(const ks_csr *A, const ks_strength *S, const int *cfs,
                       const ks_gint *sid, const ks_dist_strength *D, const ks_dist_ext_rows *R)
{
    const ks_int N = A->nrows;
    const ks_gint lo = D->row_begin, hi = lo + D->nloc;
    unsigned char *need = calloc((size_t)N + 1, 1);
    ck_assert(need);
    for (ks_gint i = lo; i < hi; i++)
        for (ks_int k = S->rowptr[i]; cfs[i] != KS_CPT && k < S->rowptr[i + 1]; k++) {
            const ks_int j = S->colind[k];
            if (cfs[j] != KS_CPT && (j < lo || j >= hi))
                need[j] = 1;
        }
    ks_int want = 0;
    for (ks_int j = 0; j < N; j++)
        want += need[j];
    int ok = R->n == want;
    for (ks_int r = 0; ok && r < R->n; r++) {
        const ks_gint g = R->gid[r];
        ok = g >= 0 && g < N && need[g] && (r == 0 || g > R->gid[r - 1]);
        const ks_int b = ok ? A->rowptr[g] : 0, len = ok ? A->rowptr[g + 1] - b : 0;
        ok = ok && R->rowptr[r + 1] - R->rowptr[r] == len;
        ks_int s = ok ? S->rowptr[g] : 0;
        for (ks_int k = 0; ok && k < len; k++) {
            const ks_int q = R->rowptr[r] + k, j = A->colind[b + k];
            while (s < S->rowptr[g + 1] && S->colind[s] < j)
                s++;
            const int strong = s < S->rowptr[g + 1] && S->colind[s] == j;
            ok = R->col[q] == j && !memcmp(&R->val[q], &A->val[b + k], sizeof(double)) &&
                 R->strong[q] == strong && R->cid[q] == sid[j];
        }
    }
    free(need);
    return ok;
}

/* One problem in one layout: strength, PMIS (seeds), the coarse ids and
 * direct interpolation (truncated too) against the serial ones. Adds to
 * stats[0] the serial fix-up's promotions, to stats[1] its cross-rank
 * decisions (the callers check the fix-up was exercised), to stats[2] the
 * interpolations compared row for row, to stats[3] the rows of strong F
 * neighbours fetched from other ranks. */
/* What interpolation needs: every F point with strong connections has a
 * C point among them (ghost columns' splitting included). The first
 * global point of this rank's without one, or -1. */
static ks_gint first_lonely(const ks_dist_strength *D, const int *cf, const ks_dist_coarse *C)
{
    for (ks_int i = 0; i < D->nloc; i++) {
        if (cf[i] != KS_FPT || (D->local.rowptr[i] == D->local.rowptr[i + 1] &&
                                D->grp[i] == D->grp[i + 1]))
            continue;
        int has_c = 0;
        for (ks_int k = D->local.rowptr[i]; k < D->local.rowptr[i + 1]; k++)
            has_c |= cf[D->local.colind[k]] == KS_CPT;
        for (ks_int k = D->grp[i]; k < D->grp[i + 1]; k++)
            has_c |= C->ghost_cf[D->gci[k]] == KS_CPT;
        if (!has_c)
            return D->row_begin + i;
    }
    return -1;
}

static void check_problem(const ks_csr *A, int lay, double theta, double mrs, const char *what,
                          long *stats)
{
    ks_gint off[9];
    layout(lay, A->nrows, off);
    const ks_gint lo = off[rank];
    ks_strength S;
    KS_CHECK(ks_amg_strength_classical(A, theta, mrs, &S));
    ks_matrix *M = distribute(A, off);
    ks_dist_strength D;
    KS_ALL(ks_dist_strength_classical(M, theta, mrs, &D));
    const ks_gint bad = strength_mismatch(&D, &S);
    ALL(bad < 0, "%s, layout %d, theta %g, max_row_sum %g: strength row %lld differs from the "
        "serial one", what, lay, theta, mrs, (long long)bad);

    const ks_int N = A->nrows, n = D.nloc;
    int *cfs = malloc((size_t)N * sizeof *cfs + 1), *cf = malloc((size_t)n * sizeof *cf + 1);
    int *cf2 = malloc((size_t)n * sizeof *cf2 + 1);
    unsigned char *prom = malloc((size_t)N + 1);
    ck_assert(cfs && cf && cf2 && prom);
    static const unsigned long long seeds[] = {0, 1, 12345, 0x9E3779B97F4A7C15ULL};
    for (size_t si = 0; si < sizeof seeds / sizeof seeds[0]; si++) {
        const unsigned long long seed = seeds[si];
        ks_int ncs = 0, nc = -1, nc2 = -1;
        KS_CHECK(ks_amg_pmis_ex(&S, seed, cfs, &ncs, prom));
        for (ks_int i = 0; i < N; i++)
            stats[0] += prom[i];
        stats[1] += cross_rank_fixups(&S, cfs, prom, off);
        KS_ALL(ks_dist_pmis(&D, seed, cf, &nc));
        ks_gint first = -1;
        for (ks_int i = 0; i < n && first < 0; i++)
            if (cf[i] != cfs[lo + i])
                first = lo + i;
        ALL(first < 0, "%s, layout %d, seed %llu: point %lld is %d, serially %d", what, lay,
            seed, (long long)first, first < 0 ? 0 : cf[first - lo],
            first < 0 ? 0 : cfs[first]);
        /* Determinism: a second run, the same splitting. */
        KS_ALL(ks_dist_pmis(&D, seed, cf2, &nc2));
        ALL(nc2 == nc && !memcmp(cf, cf2, (size_t)n * sizeof *cf), "%s, seed %llu: two runs "
            "differ", what, seed);

        /* The coarse numbering: 0 .. nc-1 in the serial order, here and
         * for the ghosts. */
        ks_dist_coarse C;
        KS_ALL(ks_dist_coarse_ids(&D, cf, &C));
        ks_gint *sid = malloc((size_t)N * sizeof *sid + 1);
        ck_assert(sid);
        ks_gint next = 0;
        for (ks_int i = 0; i < N; i++)
            sid[i] = cfs[i] == KS_CPT ? next++ : -1;
        int ok = C.nc_global == ncs && C.nc == nc;
        for (ks_int i = 0; ok && i < n; i++)
            ok = C.cid[i] == sid[lo + i];
        for (ks_int g = 0; ok && g < D.nghost; g++)
            ok = C.ghost_cid[g] == sid[D.ghost_gid[g]] && C.ghost_cf[g] == cfs[D.ghost_gid[g]];
        ALL(ok, "%s, layout %d, seed %llu: coarse ids differ from the serial numbering (%lld "
            "C points, serially %ld)", what, lay, seed, (long long)C.nc_global, (long)ncs);
        const ks_gint lonely = first_lonely(&D, cf, &C);
        ALL(lonely < 0, "%s, seed %llu: F point %lld has strong connections but no C point",
            what, seed, (long long)lonely);
        check_interp(A, &S, cfs, M, &D, cf, &C, what, stats);
        ks_dist_ext_rows R;
        KS_ALL(ks_dist_fetch_ext_rows(M, &D, cf, &C, &R));
        stats[3] += R.n;
        ALL(ext_rows_ok(A, &S, cfs, sid, &D, &R), "%s, layout %d, seed %llu: the fetched rows "
            "of strong F neighbours differ from the global matrix's", what, lay, seed);
        ks_dist_ext_rows_free(&R);
        free(sid);
        ks_dist_coarse_free(&C);
    }
    free(cfs);
    free(cf);
    free(cf2);
    free(prom);
    ks_dist_strength_free(&D);
    ks_matrix_destroy(&M);
    ks_strength_free(&S);
}

/* ------------------------------------------------------------- the tests */

START_TEST(test_generated)
{
    static const char *names[NGEN] = {"poisson3d_7", "poisson3d_27", "aniso3d", "convdiff3d"};
    long stats[4] = {0, 0, 0, 0};
    for (int w = 0; w < NGEN; w++) {
        ks_csr A;
        generated(w, &A);
        for (int lay = 0; lay < NLAYOUTS; lay++) {
            check_problem(&A, lay, 0.25, 1.0, names[w], stats);
            check_problem(&A, lay, 0.5, 0.9, names[w], stats);
        }
        ks_csr_free(&A);
    }
    /* The upwinded problem's strength graph is one-way in places. */
    ALL(stats[0] > 0, "no generated problem needed the serial fix-up: its distributed "
        "reproduction went untested");
    /* Rows were fetched across ranks (none on one rank). */
    ALL(nranks == 1 ? stats[3] == 0 : stats[3] > 0, "%ld rows fetched on %d ranks", stats[3],
        nranks);
    /* Nonzero diagonals: every interpolation (problems x layouts x
     * thresholds x seeds) was compared row for row. */
    ALL(stats[2] == NGEN * NLAYOUTS * 2 * 4, "%ld of %d interpolations compared", stats[2],
        NGEN * NLAYOUTS * 2 * 4);
}
END_TEST

START_TEST(test_random)
{
    long stats[4] = {0, 0, 0, 0};
    for (int trial = 0; trial < 12; trial++) {
        ks_csr A;
        const int lower = trial >= 8;
        random_matrix(40 + (uint64_t)trial, 37 + 23 * (trial % 8), lower, &A);
        char what[64];
        snprintf(what, sizeof what, "random %smatrix %d", lower ? "lower " : "", trial);
        const int lay = trial % NLAYOUTS;
        check_problem(&A, lay, trial % 2 ? 0.5 : 0.25, trial % 3 ? 1.0 : 0.8, what, stats);
        ks_csr_free(&A);
    }
    ALL(stats[0] > 0, "no random matrix needed the serial fix-up");
    /* Empty rows and missing diagonals: the refusal path ran too. */
    ALL(stats[2] < 12 * 4, "no random matrix had an F row with a zero diagonal");
}
END_TEST

/* Random matrices with every diagonal present (negative in a few rows):
 * direct interpolation and its truncation compared row for row, with
 * both signs of couplings, rows reaching other ranks, empty ranks. */
START_TEST(test_random_interp)
{
    long stats[4] = {0, 0, 0, 0};
    for (int trial = 0; trial < 9; trial++) {
        ks_csr A;
        const int lower = trial % 3 == 2;
        random_matrix_ex(90 + (uint64_t)trial, 41 + 19 * trial, lower, 1, &A);
        char what[64];
        snprintf(what, sizeof what, "random full-diagonal matrix %d", trial);
        check_problem(&A, trial % NLAYOUTS, trial % 2 ? 0.5 : 0.25, 1.0, what, stats);
        ks_csr_free(&A);
    }
    ALL(stats[2] > 9 * 4 / 2, "only %ld of %d interpolations compared", stats[2], 9 * 4);
}
END_TEST

/* A strength graph whose serial fix-up decides a point by a candidate on
 * the rank before: at every boundary between ranks, a = the last point of
 * one rank, b = the first of the next, with S_b = {a}, S_a = {x}, S_x
 * empty, and hubs H_a, H_b, H_x depending on a, b, x with 5 leaves each
 * (the leaves depend on their hub). The hubs win round one whatever the
 * random bits (5 dependents against at most 2), so a, b, x and the leaves
 * are F; a and b are then candidates (all of S_a, S_b is F). The serial
 * pass promotes a, which satisfies b: b stays F. A distributed fix-up
 * that did not hear of a's promotion would promote b too. */
static void boundary_fixup_matrix(const ks_gint *off, ks_csr *A)
{
    const ks_int N = (ks_int)off[nranks];
    ks_int *r = malloc(4 * (size_t)N * sizeof *r), *c = malloc(4 * (size_t)N * sizeof *c);
    double *v = malloc(4 * (size_t)N * sizeof *v);
    unsigned char *used = calloc((size_t)N, 1);
    ck_assert(r && c && v && used);
    int64_t m = 0;
    for (ks_int i = 0; i < N; i++) { /* every diagonal 1 */
        r[m] = c[m] = i;
        v[m++] = 1.0;
    }
#define DEP(i, j) (r[m] = (i), c[m] = (j), v[m++] = -1.0)
    ks_int t_prev = 0, free_at = 0;
    for (int q = 1; q < nranks; q++) {
        const ks_int t = (ks_int)off[q];
        if (t <= 0 || t >= N || t == t_prev)
            continue; /* no boundary here (an empty rank) */
        t_prev = t;
        used[t - 1] = used[t] = 1;
    }
    /* Free points for the rest of each gadget, in index order. */
    t_prev = 0;
    for (int q = 1; q < nranks; q++) {
        const ks_int t = (ks_int)off[q], a = t - 1, b = t;
        if (t <= 0 || t >= N || t == t_prev)
            continue;
        t_prev = t;
        ks_int pts[19], k = 0;
        while (k < 19 && free_at < N) {
            if (!used[free_at]) {
                used[free_at] = 1;
                pts[k++] = free_at;
            }
            free_at++;
        }
        ck_assert_msg(k == 19, "boundary_fixup_matrix: N too small");
        const ks_int x = pts[0], ha = pts[1], hb = pts[2], hx = pts[3];
        DEP(b, a);
        DEP(a, x);
        DEP(ha, a);
        DEP(hb, b);
        DEP(hx, x);
        for (int l = 0; l < 5; l++) {
            DEP(pts[4 + l], ha);
            DEP(pts[9 + l], hb);
            DEP(pts[14 + l], hx);
        }
    }
#undef DEP
    KS_CHECK(ks_csr_from_coo(N, N, m, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
    free(used);
}

START_TEST(test_fixup_across_ranks)
{
    long stats[4] = {0, 0, 0, 0};
    for (int lay = 0; lay < NLAYOUTS; lay++) {
        ks_gint off[9];
        layout(lay, 25 * nranks + 10, off);
        ks_csr A;
        boundary_fixup_matrix(off, &A);
        check_problem(&A, lay, 0.25, 1.0, "boundary fix-up", stats);
        ks_csr_free(&A);
    }
    /* b was decided by a, across the boundary, in every layout with one. */
    ALL(nranks == 1 || stats[1] > 0, "the serial fix-up never crossed a rank boundary");
}
END_TEST

/* More ranks than rows: most ranks hold one row or none. */
START_TEST(test_tiny)
{
    ks_csr A;
    random_matrix(7, 3, 0, &A);
    long stats[4] = {0, 0, 0, 0};
    for (int lay = 0; lay < NLAYOUTS; lay++)
        check_problem(&A, lay, 0.25, 1.0, "3 rows", stats);
    ks_csr_free(&A);
}
END_TEST

/* A bad parameter on one rank fails on every rank (no rank waits in a
 * collective the others left); a local matrix is refused. */
START_TEST(test_errors)
{
    ks_csr A;
    generated(0, &A);
    ks_gint off[9];
    layout(0, A.nrows, off);
    ks_matrix *M = distribute(&A, off);
    ks_dist_strength D;
    ks_error e = ks_dist_strength_classical(M, rank == nranks - 1 ? 1.5 : 0.25, 1.0, &D);
    ALL(e == KS_ERR_ARG && strstr(ks_last_error(), "strength_threshold"),
        "theta 1.5 on rank %d: got %s (%s)", nranks - 1, ks_error_name(e), ks_last_error());
    e = ks_dist_strength_classical(M, 0.25, rank == 0 ? 0.0 : 1.0, &D);
    ALL(e == KS_ERR_ARG && strstr(ks_last_error(), "max_row_sum"),
        "max_row_sum 0 on rank 0: got %s (%s)", ks_error_name(e), ks_last_error());
    /* PMIS with no cf on one rank that has points */
    KS_ALL(ks_dist_strength_classical(M, 0.25, 1.0, &D));
    int *cf = malloc((size_t)D.nloc * sizeof *cf + 1);
    ks_int nc;
    e = ks_dist_pmis(&D, 1, rank == nranks - 1 && D.nloc > 0 ? NULL : cf, &nc);
    ALL(e == KS_ERR_ARG, "PMIS without cf on rank %d: got %s (%s)", nranks - 1,
        ks_error_name(e), ks_last_error());
    e = ks_dist_hmis(&D, 1, rank == nranks - 1 && D.nloc > 0 ? NULL : cf, &nc);
    ALL(e == KS_ERR_ARG && strstr(ks_last_error(), "HMIS"), "HMIS without cf on rank %d: got "
        "%s (%s)", nranks - 1, ks_error_name(e), ks_last_error());
    /* a splitting with an undecided point on one rank */
    KS_ALL(ks_dist_pmis(&D, 1, cf, &nc));
    if (rank == 0 && D.nloc > 0)
        cf[0] = KS_UNDECIDED;
    ks_dist_coarse C;
    e = ks_dist_coarse_ids(&D, cf, &C);
    ALL(e == KS_ERR_ARG && strstr(ks_last_error(), "neither C nor F"),
        "undecided point: got %s (%s)", ks_error_name(e), ks_last_error());
    /* interpolation: no coarse ids on one rank; a bad truncation factor
     * on one rank */
    if (rank == 0 && D.nloc > 0)
        cf[0] = KS_FPT;
    KS_ALL(ks_dist_coarse_ids(&D, cf, &C));
    ks_dist_prows DP;
    e = ks_dist_interp_direct(M, &D, cf, rank == nranks - 1 ? NULL : &C, &DP);
    ALL(e == KS_ERR_ARG, "interpolation without coarse ids on rank %d: got %s (%s)",
        nranks - 1, ks_error_name(e), ks_last_error());
    KS_ALL(ks_dist_interp_direct(M, &D, cf, &C, &DP));
    e = ks_dist_prows_truncate(&DP, 2, rank == 0 ? 1.5 : 0.2);
    ALL(e == KS_ERR_ARG && strstr(ks_last_error(), "factor"),
        "truncation factor 1.5 on rank 0: got %s (%s)", ks_error_name(e), ks_last_error());
    ks_dist_prows_free(&DP);
    ks_dist_coarse_free(&C);
    free(cf);
    ks_dist_strength_free(&D);
    ks_matrix_destroy(&M);
    ks_matrix *L = NULL;
    KS_CHECK(ks_matrix_create(be, &A, "auto", NULL, &L));
    e = ks_dist_strength_classical(L, 0.25, 1.0, &D);
    ck_assert_msg(e == KS_ERR_ARG && strstr(ks_last_error(), "not distributed"), "%s",
                  ks_last_error());
    ks_matrix_destroy(&L);
    ks_csr_free(&A);
}
END_TEST

/* ------------------------------------------------------------------ HMIS */

/* Distributed HMIS (RS inside each rank, PMIS across) on one problem and
 * layout: on one rank ks_amg_hmis's splitting point for point; on any
 * rank count the same splitting twice, every F point with strong
 * connections has a C point among them (ghosts included), no undecided
 * point. Its second stage alone (ks_dist_pmis_from), started from the
 * serial RS pass's states of the global graph, gives ks_amg_hmis's
 * splitting on every rank count. stats[0]: boundary points the stage
 * decided that the RS pass had not (work across ranks for the PMIS from
 * given states). */
static void check_hmis(const ks_csr *A, int lay, double theta, const char *what, long *stats)
{
    ks_gint off[9];
    layout(lay, A->nrows, off);
    const ks_gint lo = off[rank];
    ks_strength S, ST;
    KS_CHECK(ks_amg_strength_classical(A, theta, 1.0, &S));
    KS_CHECK(ks_strength_transpose(&S, &ST));
    ks_matrix *M = distribute(A, off);
    ks_dist_strength D;
    KS_ALL(ks_dist_strength_classical(M, theta, 1.0, &D));
    const ks_int N = A->nrows, n = D.nloc;
    int *cfs = malloc((size_t)N * sizeof *cfs + 1), *rs = malloc((size_t)N * sizeof *rs + 1);
    int *cf = malloc((size_t)n * sizeof *cf + 1), *cf2 = malloc((size_t)n * sizeof *cf2 + 1);
    ck_assert(cfs && rs && cf && cf2);
    /* the serial RS pass's states (isolated points F first, as HMIS) */
    for (ks_int i = 0; i < N; i++)
        rs[i] = S.rowptr[i] == S.rowptr[i + 1] && ST.rowptr[i] == ST.rowptr[i + 1]
                    ? KS_FPT : KS_UNDECIDED;
    KS_CHECK(ks_amg_rs_first_pass(&S, &ST, NULL, rs));
    static const unsigned long long seeds[] = {0, 12345};
    for (size_t si = 0; si < sizeof seeds / sizeof seeds[0]; si++) {
        const unsigned long long seed = seeds[si];
        ks_int ncs = 0, nc = -1, nc2 = -1;
        KS_CHECK(ks_amg_hmis(&S, seed, cfs, &ncs));
        KS_ALL(ks_dist_hmis(&D, seed, cf, &nc));
        KS_ALL(ks_dist_hmis(&D, seed, cf2, &nc2));
        ALL(nc2 == nc && !memcmp(cf, cf2, (size_t)n * sizeof *cf),
            "%s, layout %d, seed %llu: two HMIS runs differ", what, lay, seed);
        ks_gint first = -1;
        for (ks_int i = 0; i < n && first < 0 && nranks == 1; i++)
            if (cf[i] != cfs[lo + i])
                first = lo + i;
        ALL(first < 0, "%s, seed %llu: HMIS on one rank: point %lld is %d, serially %d", what,
            seed, (long long)first, first < 0 ? 0 : cf[first - lo], first < 0 ? 0 : cfs[first]);
        ks_dist_coarse C;
        KS_ALL(ks_dist_coarse_ids(&D, cf, &C)); /* refuses an undecided point */
        const ks_gint lonely = first_lonely(&D, cf, &C);
        ALL(lonely < 0, "%s, layout %d, seed %llu: HMIS: F point %lld has strong connections "
            "but no C point", what, lay, seed, (long long)lonely);
        ks_dist_coarse_free(&C);
        /* the PMIS stage from the serial RS states: the serial HMIS */
        for (ks_int i = 0; i < n; i++) {
            cf[i] = rs[lo + i];
            stats[0] += rs[lo + i] == KS_UNDECIDED;
        }
        KS_ALL(ks_dist_pmis_from(&D, seed, cf, &nc));
        first = -1;
        for (ks_int i = 0; i < n && first < 0; i++)
            if (cf[i] != cfs[lo + i])
                first = lo + i;
        ALL(first < 0, "%s, layout %d, seed %llu: PMIS from the RS states: point %lld is %d, "
            "serially %d", what, lay, seed, (long long)first, first < 0 ? 0 : cf[first - lo],
            first < 0 ? 0 : cfs[first]);
    }
    free(cfs);
    free(rs);
    free(cf);
    free(cf2);
    ks_dist_strength_free(&D);
    ks_matrix_destroy(&M);
    ks_strength_free(&ST);
    ks_strength_free(&S);
}

START_TEST(test_hmis)
{
    static const char *names[NGEN] = {"poisson3d_7", "poisson3d_27", "aniso3d", "convdiff3d"};
    long stats[1] = {0};
    for (int w = 0; w < NGEN; w++) {
        ks_csr A;
        generated(w, &A);
        for (int lay = 0; lay < NLAYOUTS; lay++) {
            check_hmis(&A, lay, 0.25, names[w], stats);
            check_hmis(&A, lay, 0.5, names[w], stats);
        }
        ks_csr_free(&A);
    }
    for (int trial = 0; trial < 9; trial++) {
        ks_csr A;
        random_matrix(140 + (uint64_t)trial, 37 + 23 * trial, trial % 3 == 2, &A);
        char what[64];
        snprintf(what, sizeof what, "random matrix %d", trial);
        check_hmis(&A, trial % NLAYOUTS, trial % 2 ? 0.5 : 0.25, what, stats);
        ks_csr_free(&A);
    }
    for (int lay = 0; lay < NLAYOUTS; lay++) { /* more ranks than rows */
        ks_csr A;
        random_matrix(7, 3, 0, &A);
        check_hmis(&A, lay, 0.25, "3 rows", stats);
        ks_csr_free(&A);
    }
    ALL(stats[0] > 0, "the RS pass left no point to the PMIS stage");
}
END_TEST

/* ------------------------------------------------ extended+i interpolation */

/* Extended+i rows of one splitting against ks_amg_interp_extended_i on
 * the global matrix (columns, values bit for bit), and their truncations
 * against the serial truncation; a serial refusal (zero diagonal on an F
 * row) must fail on every rank, each naming its own first such row or
 * else the lowest failing rank's. Adds to stats[0] the interpolations
 * compared, to stats[1] the rows of strong F neighbours read from other
 * ranks, to stats[2] the refusals. */
static void check_ext(const ks_csr *A, const ks_strength *S, const int *cfs,
                      const ks_matrix *M, const ks_dist_strength *D, const int *cf,
                      const ks_dist_coarse *C, const char *what, long *stats)
{
    ks_csr P;
    const ks_error es = ks_amg_interp_extended_i(A, S, cfs, &P);
    long zrow = -1;
    const char *z = es == KS_OK ? NULL : strstr(ks_last_error(), "zero diagonal at row ");
    if (z)
        zrow = strtol(z + strlen("zero diagonal at row "), NULL, 10);
    ks_dist_prows DP;
    const ks_error ed = ks_dist_interp_extended_i(M, D, cf, C, &DP);
    if (es != KS_OK) {
        ALL(es == KS_ERR_NUMERIC && zrow >= 0, "%s: serial extended+i failed otherwise",
            what);
        long expect = -1;
        for (ks_int i = 0; i < D->nloc && expect < 0; i++) {
            const ks_int g = (ks_int)(D->row_begin + i);
            double dg = 0.0;
            for (ks_int k = A->rowptr[g]; k < A->rowptr[g + 1]; k++)
                if (A->colind[k] == g)
                    dg = A->val[k];
            if (cfs[g] != KS_CPT && dg == 0.0)
                expect = g;
        }
        if (expect < 0)
            expect = zrow;
        const char *dz = strstr(ks_last_error(), "zero diagonal at row ");
        const long drow = dz ? strtol(dz + strlen("zero diagonal at row "), NULL, 10) : -1;
        ALL(ed == KS_ERR_NUMERIC && drow == expect, "%s: extended+i serially refused at row "
            "%ld, here expected at %ld, distributed %s (%s)", what, zrow, expect,
            ks_error_name(ed), ks_last_error());
        stats[2]++;
        return;
    }
    ALL(ed == KS_OK, "%s: distributed extended+i: %s: %s", what, ks_error_name(ed),
        ks_last_error());
    stats[0]++;
    ALL(DP.nc == C->nc && DP.c_begin == C->c_begin && DP.nc_global == P.ncols,
        "%s: coarse layout of extended+i P", what);
    ks_gint bad = prows_mismatch(&DP, &P);
    ALL(bad < 0, "%s: extended+i row %lld differs from the serial one", what, (long long)bad);
    ks_dist_ext_rows R;
    KS_ALL(ks_dist_fetch_ext_rows(M, D, cf, C, &R));
    stats[1] += R.n;
    ks_dist_ext_rows_free(&R);
    static const struct { int max; double factor; } tr[] = {{4, 0.0}, {0, 0.2}, {3, 0.1},
                                                           {1, 0.0}};
    for (size_t t = 0; t < sizeof tr / sizeof tr[0]; t++) {
        ks_csr Pt;
        KS_CHECK(ks_csr_copy(&P, &Pt));
        KS_CHECK(ks_amg_interp_truncate(&Pt, tr[t].max, tr[t].factor));
        ks_dist_prows DT;
        KS_ALL(ks_dist_interp_extended_i(M, D, cf, C, &DT));
        KS_ALL(ks_dist_prows_truncate(&DT, tr[t].max, tr[t].factor));
        bad = prows_mismatch(&DT, &Pt);
        ALL(bad < 0, "%s: extended+i truncated (%d, %g): row %lld differs from the serial "
            "one", what, tr[t].max, tr[t].factor, (long long)bad);
        ks_dist_prows_free(&DT);
        /* truncated as they are built (the local system's rows) */
        const ks_dist_trunc dt = {tr[t].max, tr[t].factor};
        KS_ALL(ks_dist_interp(NULL, M, D, cf, C, KS_AMG_D2, &dt, &DT));
        bad = prows_mismatch(&DT, &Pt);
        ALL(bad < 0, "%s: extended+i truncated (%d, %g) as built: row %lld differs from the "
            "serial one", what, tr[t].max, tr[t].factor, (long long)bad);
        ks_dist_prows_free(&DT);
        ks_csr_free(&Pt);
    }
    ks_dist_prows_free(&DP);
    ks_csr_free(&P);
}

/* One problem in one layout: strength, PMIS and coarse ids as in
 * check_problem (checked there), then extended+i for several seeds. */
static void check_ext_problem(const ks_csr *A, int lay, double theta, double mrs,
                              const char *what, long *stats)
{
    ks_gint off[9];
    layout(lay, A->nrows, off);
    ks_strength S;
    KS_CHECK(ks_amg_strength_classical(A, theta, mrs, &S));
    ks_matrix *M = distribute(A, off);
    ks_dist_strength D;
    KS_ALL(ks_dist_strength_classical(M, theta, mrs, &D));
    const ks_int N = A->nrows, n = D.nloc;
    int *cfs = malloc((size_t)N * sizeof *cfs + 1), *cf = malloc((size_t)n * sizeof *cf + 1);
    unsigned char *prom = malloc((size_t)N + 1);
    ck_assert(cfs && cf && prom);
    static const unsigned long long seeds[] = {0, 7, 0x9E3779B97F4A7C15ULL};
    for (size_t si = 0; si < sizeof seeds / sizeof seeds[0]; si++) {
        ks_int ncs = 0, nc = -1;
        KS_CHECK(ks_amg_pmis_ex(&S, seeds[si], cfs, &ncs, prom));
        KS_ALL(ks_dist_pmis(&D, seeds[si], cf, &nc));
        int same = 1;
        for (ks_int i = 0; i < n; i++)
            same &= cf[i] == cfs[D.row_begin + i];
        ALL(same, "%s, layout %d, seed %llu: splitting differs", what, lay, seeds[si]);
        ks_dist_coarse C;
        KS_ALL(ks_dist_coarse_ids(&D, cf, &C));
        char w[160];
        snprintf(w, sizeof w, "%s, layout %d, theta %g, seed %llu", what, lay, theta, seeds[si]);
        check_ext(A, &S, cfs, M, &D, cf, &C, w, stats);
        ks_dist_coarse_free(&C);
    }
    free(cfs);
    free(cf);
    free(prom);
    ks_dist_strength_free(&D);
    ks_matrix_destroy(&M);
    ks_strength_free(&S);
}

/* Generated problems and random matrices (full diagonals of both signs;
 * some with zero diagonals, for the refusal), every layout, several seeds
 * and thresholds; rows read across ranks on more than one rank. */
START_TEST(test_extended_interp)
{
    static const char *names[NGEN] = {"poisson3d_7", "poisson3d_27", "aniso3d", "convdiff3d"};
    long stats[3] = {0, 0, 0};
    for (int w = 0; w < NGEN; w++) {
        ks_csr A;
        generated(w, &A);
        for (int lay = 0; lay < NLAYOUTS; lay++) {
            check_ext_problem(&A, lay, 0.25, 1.0, names[w], stats);
            check_ext_problem(&A, lay, 0.5, 0.9, names[w], stats);
        }
        ks_csr_free(&A);
    }
    ALL(stats[0] == NGEN * NLAYOUTS * 2 * 3, "%ld of %d generated extended+i compared",
        stats[0], NGEN * NLAYOUTS * 2 * 3);
    for (int trial = 0; trial < 12; trial++) {
        ks_csr A;
        char what[64];
        if (trial < 9) {
            random_matrix_ex(190 + (uint64_t)trial, 41 + 19 * trial, trial % 3 == 2, 1, &A);
            snprintf(what, sizeof what, "random full-diagonal matrix %d", trial);
        } else {
            random_matrix(240 + (uint64_t)trial, 60 + 17 * trial, 0, &A);
            snprintf(what, sizeof what, "random matrix %d", trial);
        }
        check_ext_problem(&A, trial % NLAYOUTS, trial % 2 ? 0.5 : 0.25, 1.0, what, stats);
        ks_csr_free(&A);
    }
    ALL(nranks == 1 ? stats[1] == 0 : stats[1] > 0, "%ld rows read across %d ranks",
        stats[1], nranks);
    ALL(stats[2] > 0, "no matrix had the zero-diagonal refusal");
    /* 3 rows: most ranks hold one row or none. */
    ks_csr A;
    random_matrix_ex(11, 3, 0, 1, &A);
    for (int lay = 0; lay < NLAYOUTS; lay++)
        check_ext_problem(&A, lay, 0.25, 1.0, "3 rows", stats);
    ks_csr_free(&A);
}
END_TEST

/* Extended+i: no coarse ids on one rank, or a matrix that is not
 * distributed, fails on every rank (before the fetch's messages); the
 * next call then runs as usual. */
START_TEST(test_extended_errors)
{
    ks_csr A;
    generated(1, &A);
    ks_gint off[9];
    layout(1, A.nrows, off);
    ks_matrix *M = distribute(&A, off);
    ks_dist_strength D;
    KS_ALL(ks_dist_strength_classical(M, 0.25, 1.0, &D));
    int *cf = malloc((size_t)D.nloc * sizeof *cf + 1);
    ck_assert(cf);
    ks_int nc;
    KS_ALL(ks_dist_pmis(&D, 3, cf, &nc));
    ks_dist_coarse C;
    KS_ALL(ks_dist_coarse_ids(&D, cf, &C));
    ks_dist_prows DP;
    ks_error e = ks_dist_interp_extended_i(M, &D, cf, rank == nranks - 1 ? NULL : &C, &DP);
    ALL(e == KS_ERR_ARG, "extended+i without coarse ids on rank %d: got %s (%s)", nranks - 1,
        ks_error_name(e), ks_last_error());
    ks_matrix *L = NULL;
    KS_CHECK(ks_matrix_create(be, &A, "auto", NULL, &L));
    e = ks_dist_interp_extended_i(rank == 0 ? L : M, &D, cf, &C, &DP);
    ALL(e == KS_ERR_ARG && strstr(ks_last_error(), "extended+i"),
        "extended+i with a local matrix on rank 0: got %s (%s)", ks_error_name(e),
        ks_last_error());
    ks_matrix_destroy(&L);
    KS_ALL(ks_dist_interp_extended_i(M, &D, cf, &C, &DP));
    ALL(DP.nloc == D.nloc && DP.rowptr[DP.nloc] >= C.nc,
        "extended+i rows after the errors");
    ks_dist_prows_free(&DP);
    ks_dist_coarse_free(&C);
    free(cf);
    ks_dist_strength_free(&D);
    ks_matrix_destroy(&M);
    ks_csr_free(&A);
}
END_TEST

/* ------------------------------------------------ truncation in place */

typedef struct tr_cand {
    double mag;
    ks_int pos;
} tr_cand;

static int tr_cmp(const void *a, const void *b)
{
    const tr_cand *x = a, *y = b;
    if (x->mag != y->mag)
        return x->mag > y->mag ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* The rule on one row as the distributed truncation ran it before it was
 * done in place (copied rows whose columns were positions): drop below
 * factor * max, keep the max_elements largest (ties: lower position),
 * rescale to the old sum when anything went. Returns the kept count,
 * written to the front of col and val. */
static ks_int tr_reference(ks_gint *col, double *val, ks_int m, int maxe, double fac)
{
    double sum = 0.0, mx = 0.0;
    for (ks_int k = 0; k < m; k++) {
        sum += val[k];
        mx = fabs(val[k]) > mx ? fabs(val[k]) : mx;
    }
    tr_cand *c = malloc(((size_t)m + 1) * sizeof *c);
    unsigned char *keep = calloc((size_t)m + 1, 1);
    ck_assert(c && keep);
    ks_int nc = 0;
    for (ks_int k = 0; k < m; k++)
        if (!(fac > 0.0 && fabs(val[k]) < fac * mx))
            c[nc++] = (tr_cand){fabs(val[k]), k};
    qsort(c, (size_t)nc, sizeof *c, tr_cmp);
    const ks_int nk = maxe > 0 && nc > maxe ? maxe : nc;
    for (ks_int q = 0; q < nk; q++)
        keep[c[q].pos] = 1;
    if (nk < m) {
        double kept = 0.0;
        for (ks_int k = 0; k < m; k++)
            if (keep[k])
                kept += val[k];
        const double scale = kept != 0.0 ? sum / kept : 1.0;
        ks_int w = 0;
        for (ks_int k = 0; k < m; k++)
            if (keep[k]) {
                col[w] = col[k];
                val[w++] = val[k] * scale;
            }
    }
    free(c);
    free(keep);
    return nk;
}

/* Rows long enough for the threaded passes, values drawn from a few
 * magnitudes (ties for the rule to break), some rows empty or short:
 * ks_dist_prows_truncate with 1 to 3 threads against tr_reference, bit
 * for bit, under several rules (the qsort path past 16 kept entries too). */
START_TEST(test_truncate_in_place)
{
    const ks_int n = 40000;
    static const struct {
        int max;
        double factor;
    } tr[] = {{4, 0.0}, {0, 0.3}, {3, 0.2}, {20, 0.0}, {2, 1.0}};
    ks_dist_prows P0 = {0};
    P0.comm = comm;
    P0.nloc = n;
    P0.row_begin = (ks_gint)rank * n;
    P0.nc_global = (ks_gint)nranks * 4 * n;
    P0.rowptr = malloc(((size_t)n + 1) * sizeof *P0.rowptr);
    ck_assert(P0.rowptr);
    ks_test_rng_seed(77 + (uint64_t)rank);
    int saved = 1;
#ifdef _OPENMP
    saved = omp_get_max_threads();
#endif
    P0.rowptr[0] = 0;
    for (ks_int i = 0; i < n; i++)
        P0.rowptr[i + 1] = P0.rowptr[i] + (ks_int)(ks_test_rng_next() % 10 == 0
                                                       ? 17 + ks_test_rng_next() % 20
                                                       : ks_test_rng_next() % 9);
    const ks_int nnz = P0.rowptr[n];
    P0.col = malloc((size_t)nnz * sizeof *P0.col + 1);
    P0.val = malloc((size_t)nnz * sizeof *P0.val + 1);
    ck_assert(P0.col && P0.val);
    for (ks_int i = 0; i < n; i++) {
        ks_gint c = (ks_gint)(ks_test_rng_next() % 50);
        for (ks_int k = P0.rowptr[i]; k < P0.rowptr[i + 1]; k++) {
            P0.col[k] = c;
            c += 1 + (ks_gint)(ks_test_rng_next() % 5);
            P0.val[k] = (ks_test_rng_next() % 3 ? 0.25 : -0.125) *
                        (double)(1 + ks_test_rng_next() % 4);
        }
    }
    for (size_t t = 0; t < sizeof tr / sizeof *tr; t++) {
        /* the reference */
        ks_int *rrp = malloc(((size_t)n + 1) * sizeof *rrp);
        ks_gint *rcol = malloc((size_t)nnz * sizeof *rcol + 1);
        double *rval = malloc((size_t)nnz * sizeof *rval + 1);
        ck_assert(rrp && rcol && rval);
        rrp[0] = 0;
        for (ks_int i = 0; i < n; i++) {
            const ks_int b = P0.rowptr[i], m = P0.rowptr[i + 1] - b;
            memcpy(rcol + rrp[i], P0.col + b, (size_t)m * sizeof *rcol);
            memcpy(rval + rrp[i], P0.val + b, (size_t)m * sizeof *rval);
            rrp[i + 1] = rrp[i] + tr_reference(rcol + rrp[i], rval + rrp[i], m, tr[t].max,
                                               tr[t].factor);
        }
        for (int threads = 1; threads <= 3; threads++) {
            ks_dist_prows P = P0;
            P.rowptr = malloc(((size_t)n + 1) * sizeof *P.rowptr);
            P.col = malloc((size_t)nnz * sizeof *P.col + 1);
            P.val = malloc((size_t)nnz * sizeof *P.val + 1);
            ck_assert(P.rowptr && P.col && P.val);
            memcpy(P.rowptr, P0.rowptr, ((size_t)n + 1) * sizeof *P.rowptr);
            memcpy(P.col, P0.col, (size_t)nnz * sizeof *P.col);
            memcpy(P.val, P0.val, (size_t)nnz * sizeof *P.val);
            ks_test_set_threads(threads);
            KS_ALL(ks_dist_prows_truncate(&P, tr[t].max, tr[t].factor));
            const ks_int w = rrp[n];
            const int same =
                memcmp(P.rowptr, rrp, ((size_t)n + 1) * sizeof *rrp) == 0 &&
                memcmp(P.col, rcol, (size_t)w * sizeof *rcol) == 0 &&
                memcmp(P.val, rval, (size_t)w * sizeof *rval) == 0;
            ALL(same, "truncation (%d, %g) with %d threads differs from the reference",
                tr[t].max, tr[t].factor, threads);
            ALL(w < nnz, "truncation (%d, %g) dropped nothing", tr[t].max, tr[t].factor);
            ks_dist_prows_free(&P);
        }
        free(rrp);
        free(rcol);
        free(rval);
    }
    ks_test_set_threads(saved);
    ks_dist_prows_free(&P0);
}
END_TEST

static Suite *amg_suite(void)
{
    Suite *s = suite_create("mpi_amg");
    TCase *t = tcase_create("coarsen");
    tcase_add_test(t, test_generated);
    tcase_add_test(t, test_random);
    tcase_add_test(t, test_random_interp);
    tcase_add_test(t, test_fixup_across_ranks);
    tcase_add_test(t, test_tiny);
    tcase_add_test(t, test_extended_interp);
    tcase_add_test(t, test_hmis);
    tcase_add_test(t, test_truncate_in_place);
    suite_add_tcase(s, t);
    t = tcase_create("errors");
    tcase_add_test(t, test_errors);
    tcase_add_test(t, test_extended_errors);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    return ks_test_mpi_run(&argc, &argv, "test_mpi_amg", amg_suite, NULL);
}
