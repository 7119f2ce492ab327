/* Smoothed-aggregation setup steps: greedy aggregation (hand-checked small
 * graphs, cover/connectivity/size on Laplacians and random graphs, line
 * aggregates on an anisotropic problem), the tentative prolongator
 * (orthonormal columns), rho(D^-1 A) against known spectra (Lanczos and
 * power paths), the smoothed prolongator against a dense reference and on
 * constants, thread-count independence, and argument errors. */
#include "ks_test.h"
#include "amg/cpu/amg_cpu.h"
#include "amg/cpu/coarsen_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ------------------------------------------------------------- helpers */

static void free_strength(ks_strength *S)
{
    free(S->rowptr);
    free(S->colind);
    memset(S, 0, sizeof *S);
}

/* Strength = every off-diagonal entry of A (what the symmetric measure gives
 * for these Laplacians at theta <= 0.25); keeps the aggregation tests
 * independent of strength.c. */
static void pattern_strength(const ks_csr *A, ks_strength *S)
{
    S->n = A->nrows;
    S->rowptr = malloc(((size_t)A->nrows + 1) * sizeof *S->rowptr);
    S->colind = malloc(((size_t)A->nnz + 1) * sizeof *S->colind);
    ck_assert_ptr_nonnull(S->rowptr);
    ck_assert_ptr_nonnull(S->colind);
    ks_int m = 0;
    S->rowptr[0] = 0;
    for (ks_int i = 0; i < A->nrows; i++) {
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] != i)
                S->colind[m++] = A->colind[k];
        S->rowptr[i + 1] = m;
    }
}

/* Symmetric pattern graph from an undirected edge list (n points). */
static void graph_from_edges(ks_int n, int ne, const ks_int *u, const ks_int *v, ks_strength *S)
{
    ks_int *r = malloc(2 * (size_t)ne * sizeof *r + 1), *c = malloc(2 * (size_t)ne * sizeof *c + 1);
    double *x = malloc(2 * (size_t)ne * sizeof *x + 1);
    ck_assert(r && c && x);
    for (int e = 0; e < ne; e++) {
        r[2 * e] = u[e];
        c[2 * e] = v[e];
        r[2 * e + 1] = v[e];
        c[2 * e + 1] = u[e];
        x[2 * e] = x[2 * e + 1] = 1.0;
    }
    ks_csr G;
    KS_CHECK(ks_csr_from_coo(n, n, 2 * (int64_t)ne, r, c, x, &G, NULL));
    pattern_strength(&G, S);
    ks_csr_free(&G);
    free(r);
    free(c);
    free(x);
}

static void tridiag(ks_int n, double lo, double d, double up, ks_csr *A)
{
    ks_int *r = malloc(3 * (size_t)n * sizeof *r), *c = malloc(3 * (size_t)n * sizeof *c);
    double *v = malloc(3 * (size_t)n * sizeof *v);
    ck_assert(r && c && v);
    int64_t m = 0;
    for (ks_int i = 0; i < n; i++) {
        if (i > 0) {
            r[m] = i, c[m] = i - 1, v[m++] = lo;
        }
        r[m] = i, c[m] = i, v[m++] = d;
        if (i + 1 < n) {
            r[m] = i, c[m] = i + 1, v[m++] = up;
        }
    }
    KS_CHECK(ks_csr_from_coo(n, n, m, r, c, v, A, NULL));
    free(r);
    free(c);
    free(v);
}

static void gen(ks_gen_kind kind, ks_int nx, ks_int ny, ks_int nz, ks_csr *A)
{
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = kind;
    p.nx = nx;
    p.ny = ny;
    p.nz = nz;
    KS_CHECK(ks_generate(&p, A));
}

static uint64_t lcg_state;
static double lcg_unit(void) /* [0, 1) */
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg_state >> 11) / 9007199254740992.0;
}

/* A -> S A S with S = diag in [0.5, 2): same D^-1 A spectrum, uneven diagonal. */
static void symmetric_scale(ks_csr *A, uint64_t seed)
{
    lcg_state = seed;
    double *s = malloc((size_t)A->nrows * sizeof *s);
    ck_assert_ptr_nonnull(s);
    for (ks_int i = 0; i < A->nrows; i++)
        s[i] = 0.5 + 1.5 * lcg_unit();
    for (ks_int i = 0; i < A->nrows; i++)
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            A->val[k] *= s[i] * s[A->colind[k]];
    free(s);
}

typedef struct agg_stats {
    double avg;
    ks_int max;
    ks_int singletons;
} agg_stats;

/* Every point in exactly one aggregate, no aggregate empty, each aggregate
 * connected in S, singletons only for points without strong neighbours. */
static agg_stats check_aggregates(const ks_strength *S, const ks_int *agg, ks_int na)
{
    ks_int n = S->n;
    ck_assert_int_gt(na, 0);
    ck_assert_int_le(na, n);
    ks_int *size = calloc((size_t)na, sizeof *size);
    ks_int *root = malloc((size_t)na * sizeof *root);
    ks_int *seen = calloc((size_t)n, sizeof *seen), *queue = malloc((size_t)n * sizeof *queue);
    ck_assert(size && root && seen && queue);
    for (ks_int i = 0; i < n; i++) {
        ck_assert_msg(agg[i] >= 0 && agg[i] < na, "agg[%d] = %d outside [0, %d)", i, agg[i], na);
        if (size[agg[i]]++ == 0)
            root[agg[i]] = i;
    }
    agg_stats st = {(double)n / na, 0, 0};
    for (ks_int a = 0; a < na; a++) {
        ck_assert_msg(size[a] > 0, "aggregate %d is empty", a);
        if (size[a] > st.max)
            st.max = size[a];
        if (size[a] == 1) {
            st.singletons++;
            ks_int i = root[a];
            ck_assert_msg(S->rowptr[i + 1] == S->rowptr[i],
                          "point %d has strong neighbours but is a singleton", i);
        }
        /* breadth-first search inside the aggregate */
        ks_int head = 0, tail = 0, reached = 1;
        queue[tail++] = root[a];
        seen[root[a]] = 1;
        while (head < tail) {
            ks_int i = queue[head++];
            for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++) {
                ks_int j = S->colind[k];
                if (agg[j] == a && !seen[j]) {
                    seen[j] = 1;
                    queue[tail++] = j;
                    reached++;
                }
            }
        }
        ck_assert_msg(reached == size[a], "aggregate %d: %d of %d points connected", a,
                      reached, size[a]);
    }
    free(size);
    free(root);
    free(seen);
    free(queue);
    return st;
}

static agg_stats aggregate_stencil(ks_gen_kind kind, ks_int nx, ks_int ny, ks_int nz,
                                   const char *label)
{
    ks_csr A;
    gen(kind, nx, ny, nz, &A);
    ks_strength S;
    pattern_strength(&A, &S);
    ks_int *agg = malloc((size_t)A.nrows * sizeof *agg), na = -1;
    ck_assert_ptr_nonnull(agg);
    KS_CHECK(ks_amg_aggregate(&S, agg, &na));
    agg_stats st = check_aggregates(&S, agg, na);
    printf("aggregation %s: n %d, aggregates %d, average size %.2f, max %d\n", label,
           (int)A.nrows, (int)na, st.avg, (int)st.max);
    free(agg);
    free_strength(&S);
    ks_csr_free(&A);
    return st;
}

/* Dense row-major image. */
static double *dense(const ks_csr *A)
{
    double *d = calloc((size_t)A->nrows * (size_t)A->ncols + 1, sizeof *d);
    ck_assert_ptr_nonnull(d);
    for (ks_int i = 0; i < A->nrows; i++)
        for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            d[(size_t)i * A->ncols + A->colind[k]] += A->val[k];
    return d;
}

static double diag_of(const ks_csr *A, ks_int i)
{
    for (ks_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
        if (A->colind[k] == i)
            return A->val[k];
    return 0.0;
}

/* --------------------------------------------------------- aggregation */

/* i and j within distance two in the graph adj (n x n, dense), through
 * points of `in` only (i and j are in it). */
static int near2(const unsigned char *adj, const int *in, ks_int n, ks_int i, ks_int j)
{
    if (i == j || adj[(size_t)i * n + j])
        return 1;
    for (ks_int x = 0; x < n; x++)
        if (in[x] && adj[(size_t)i * n + x] && adj[(size_t)x * n + j])
            return 1;
    return 0;
}

/* One pass of the specification: distance-two independent roots among the
 * points of `in` (distances inside that set), by rounds of the largest key;
 * numbered from *count in index order; their neighbours in the set join
 * them (agg[]). */
static void ref_pass(const unsigned char *adj, const int *in, ks_int n, unsigned long long seed,
                     int min_nbrs, ks_int *agg, ks_int *count)
{
    enum { UND, ROOT, OUT };
    int *st = calloc((size_t)n + 1, sizeof *st), *newroot = calloc((size_t)n + 1, sizeof *newroot);
    ck_assert(st && newroot);
    for (ks_int i = 0; i < n; i++) {
        int deg = 0;
        for (ks_int j = 0; j < n; j++)
            deg |= in[i] && in[j] && adj[(size_t)i * n + j];
        st[i] = deg ? UND : OUT;
    }
    for (;;) {
        int any = 0;
        for (ks_int i = 0; i < n; i++) {
            newroot[i] = 0;
            if (st[i] != UND)
                continue;
            any = 1;
            uint64_t hi = ks_coarsen_hash(seed, i);
            int top = 1;
            for (ks_int j = 0; j < n && top; j++) {
                if (j == i || st[j] != UND || !near2(adj, in, n, i, j))
                    continue;
                uint64_t hj = ks_coarsen_hash(seed, j);
                top = hi > hj || (hi == hj && i > j);
            }
            newroot[i] = top;
        }
        if (!any)
            break;
        for (ks_int i = 0; i < n; i++) {
            if (st[i] != UND)
                continue;
            if (newroot[i]) {
                st[i] = ROOT;
                continue;
            }
            for (ks_int r = 0; r < n; r++)
                if (newroot[r] && near2(adj, in, n, i, r)) {
                    st[i] = OUT;
                    break;
                }
        }
    }
    for (ks_int i = 0; i < n; i++) { /* roots with too few neighbours make no aggregate */
        int deg = 0;
        for (ks_int j = 0; j < n; j++)
            deg += j != i && in[j] && adj[(size_t)i * n + j];
        if (in[i] && st[i] == ROOT && deg < min_nbrs)
            st[i] = OUT;
    }
    for (ks_int i = 0; i < n; i++)
        if (in[i] && st[i] == ROOT)
            agg[i] = (*count)++;
    ks_int *join = malloc(sizeof *join * ((size_t)n + 1));
    ck_assert_ptr_nonnull(join);
    for (ks_int i = 0; i < n; i++) {
        join[i] = -1;
        if (!in[i] || st[i] == ROOT)
            continue;
        for (ks_int r = 0; r < n; r++)
            if (in[r] && st[r] == ROOT && adj[(size_t)i * n + r] &&
                (join[i] < 0 || agg[r] < join[i]))
                join[i] = agg[r];
    }
    for (ks_int i = 0; i < n; i++)
        if (in[i] && st[i] != ROOT)
            agg[i] = join[i];
    free(join);
    free(st);
    free(newroot);
}

/* The aggregation's specification (amg/cpu/aggregate.c) written as plainly
 * as possible, serially, with distances from a dense adjacency matrix: the
 * production code must give exactly this. Neighbours are S_i then S^T_i in
 * that order (the tie-break of step 3 reads them so). */
static void ref_aggregate(const ks_strength *S, unsigned long long seed, ks_int *agg, ks_int *na)
{
    const ks_int n = S->n;
    unsigned char *adj = calloc((size_t)n * (size_t)n + 1, 1);
    ks_int *nb = malloc(sizeof *nb * (2 * (size_t)S->rowptr[n] + 1));
    ks_int *nbp = calloc((size_t)n + 1, sizeof *nbp), *before = malloc(sizeof *before * ((size_t)n + 1));
    int *in = calloc((size_t)n + 1, sizeof *in);
    ck_assert(adj && nb && nbp && in && before);
    ks_int m = 0;
    for (ks_int i = 0; i < n; i++) {
        nbp[i] = m;
        for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++)
            if (S->colind[k] != i)
                nb[m++] = S->colind[k];
        for (ks_int r = 0; r < n; r++) /* S^T_i: rows r holding i, ascending */
            for (ks_int k = S->rowptr[r]; k < S->rowptr[r + 1]; k++)
                if (S->colind[k] == i && r != i)
                    nb[m++] = r;
    }
    nbp[n] = m;
    for (ks_int i = 0; i < n; i++)
        for (ks_int k = nbp[i]; k < nbp[i + 1]; k++)
            adj[(size_t)i * n + nb[k]] = adj[(size_t)nb[k] * n + i] = 1;
    ks_int count = 0;
    for (ks_int i = 0; i < n; i++) {
        agg[i] = -1;
        in[i] = nbp[i + 1] > nbp[i];
    }
    ref_pass(adj, in, n, seed, 1, agg, &count); /* 1 */
    for (ks_int i = 0; i < n; i++)
        in[i] = in[i] && agg[i] < 0;
    ref_pass(adj, in, n, seed, 4, agg, &count); /* 2: at least 4 free neighbours */
    for (ks_int i = 0; i < n; i++)
        before[i] = agg[i];
    for (ks_int i = 0; i < n; i++) { /* 3 */
        if (before[i] >= 0 || nbp[i + 1] == nbp[i])
            continue;
        ks_int best = -1, best_links = 0;
        for (ks_int k = nbp[i]; k < nbp[i + 1]; k++) {
            ks_int a = before[nb[k]], links = 0;
            if (a < 0)
                continue;
            for (ks_int q = nbp[i]; q < nbp[i + 1]; q++)
                links += before[nb[q]] == a;
            if (links > best_links) {
                best_links = links;
                best = a;
            }
        }
        ck_assert_msg(best >= 0, "point %d has no aggregated neighbour", (int)i);
        agg[i] = best;
    }
    for (ks_int i = 0; i < n; i++) /* 4 */
        if (agg[i] < 0)
            agg[i] = count++;
    *na = count;
    free(adj);
    free(nb);
    free(nbp);
    free(in);
    free(before);
}

/* Production = specification on S, for several seeds; returns na.
 * Aggregates are connected in S when S is symmetric (check_aggregates
 * walks S's rows; a directed S connects them only through S^T too). */
static ks_int agg_matches_ref_sym(const ks_strength *S, ks_int *agg, int symmetric)
{
    ks_int *ref = malloc(sizeof *ref * ((size_t)S->n + 1)), na = -1, nr = -1;
    ck_assert_ptr_nonnull(ref);
    for (unsigned long long seed = 1; seed <= 4; seed++) {
        KS_CHECK(ks_amg_aggregate_seeded(S, seed, agg, &na));
        ref_aggregate(S, seed, ref, &nr);
        ck_assert_int_eq(na, nr);
        for (ks_int i = 0; i < S->n; i++)
            ck_assert_msg(agg[i] == ref[i], "seed %llu point %d: aggregate %d, specification %d",
                          seed, (int)i, (int)agg[i], (int)ref[i]);
        if (symmetric)
            check_aggregates(S, agg, na);
    }
    KS_CHECK(ks_amg_aggregate(S, agg, &na)); /* the default: seed 1 */
    free(ref);
    return na;
}

static ks_int agg_matches_ref(const ks_strength *S, ks_int *agg)
{
    return agg_matches_ref_sym(S, agg, 1);
}

START_TEST(aggregate_small_graphs_by_specification)
{
    /* paths of 7 and 6 points */
    const ks_int u7[] = {0, 1, 2, 3, 4, 5}, v7[] = {1, 2, 3, 4, 5, 6};
    ks_strength S;
    ks_int agg[64];
    graph_from_edges(7, 6, u7, v7, &S);
    ks_int na = agg_matches_ref(&S, agg);
    ck_assert(na >= 2 && na <= 3);
    free_strength(&S);
    graph_from_edges(6, 5, u7, v7, &S);
    agg_matches_ref(&S, agg);
    free_strength(&S);

    /* 0-1-2, 3 isolated, 4-5: the isolated point is a singleton, numbered
     * after every rooted aggregate */
    const ks_int u3[] = {0, 1, 4}, v3[] = {1, 2, 5};
    graph_from_edges(6, 3, u3, v3, &S);
    na = agg_matches_ref(&S, agg);
    ck_assert_int_eq(na, 3);
    ck_assert_int_eq(agg[3], 2);
    ck_assert_int_eq(agg[0], agg[1]);
    ck_assert_int_eq(agg[4], agg[5]);
    free_strength(&S);

    /* a star beside a path: step 3 joins by the most links */
    const ks_int us[] = {0, 0, 2, 4, 4, 5, 5, 5}, vs[] = {1, 2, 4, 6, 7, 6, 7, 8};
    graph_from_edges(9, 8, us, vs, &S);
    na = agg_matches_ref(&S, agg);
    ck_assert_int_eq(agg[3], na - 1); /* isolated point 3 */
    free_strength(&S);

    /* a 2D grid 8 x 8 (5-point) */
    ks_csr A;
    gen(KS_GEN_POISSON2D_5, 8, 8, 1, &A);
    pattern_strength(&A, &S);
    agg_matches_ref(&S, agg);
    free_strength(&S);
    ks_csr_free(&A);

    /* random sparse graphs, some points isolated */
    for (uint64_t seed = 1; seed <= 5; seed++) {
        lcg_state = seed * 104729;
        ks_int n = 20 + (ks_int)(40 * lcg_unit());
        int ne = (int)(n * (0.3 + 1.5 * lcg_unit()));
        ks_int u[200], v[200];
        for (int e = 0; e < ne; e++) {
            u[e] = (ks_int)(n * lcg_unit());
            v[e] = (ks_int)(n * lcg_unit());
            if (u[e] == v[e])
                v[e] = (v[e] + 1) % n;
        }
        graph_from_edges(n, ne, u, v, &S);
        agg_matches_ref(&S, agg);
        free_strength(&S);
    }

    /* a directed graph (one-way strong dependencies, a 3-cycle among them,
     * a stored diagonal): neighbours are S_i and S^T_i */
    ks_int rp[] = {0, 2, 3, 4, 6, 6, 8, 9};
    ks_int ci[] = {0, 1, 2, 0, 1, 5, 3, 6, 4};
    ks_strength D = {7, rp, ci};
    agg_matches_ref_sym(&D, agg, 0);
}
END_TEST

START_TEST(aggregate_laplacians)
{
    ks_csr A;
    tridiag(100, -1, 2, -1, &A);
    ks_strength S;
    pattern_strength(&A, &S);
    ks_int agg[100], na;
    KS_CHECK(ks_amg_aggregate(&S, agg, &na));
    agg_stats st = check_aggregates(&S, agg, na);
    ck_assert_int_eq(st.singletons, 0);
    /* roots at least 3 apart: a root, its two neighbours, and at most one
     * point on each side beyond them */
    ck_assert_int_le(st.max, 5);
    printf("aggregation 1D 3-pt n=100: aggregates %d, average size %.2f\n", (int)na, st.avg);
    ck_assert_msg(st.avg >= 2.5 && st.avg <= 4.5, "1D average aggregate size %g", st.avg);
    free_strength(&S);
    ks_csr_free(&A);

    st = aggregate_stencil(KS_GEN_POISSON2D_5, 64, 64, 1, "2D 5-pt 64^2");
    ck_assert_int_eq(st.singletons, 0);
    ck_assert_msg(st.avg >= 4.0 && st.avg <= 9.5, "2D average aggregate size %g", st.avg);
    ck_assert_int_le(st.max, 13);
    st = aggregate_stencil(KS_GEN_POISSON2D_9, 48, 48, 1, "2D 9-pt 48^2");
    ck_assert(st.avg >= 6.0 && st.avg <= 20.0);
    st = aggregate_stencil(KS_GEN_POISSON3D_7, 32, 32, 32, "3D 7-pt 32^3");
    ck_assert_int_eq(st.singletons, 0);
    ck_assert_msg(st.avg >= 5.0 && st.avg <= 20.0, "3D average aggregate size %g", st.avg);
    st = aggregate_stencil(KS_GEN_POISSON3D_27, 16, 16, 16, "3D 27-pt 16^3");
    ck_assert(st.avg >= 12.0 && st.avg <= 64.0);
}
END_TEST

START_TEST(aggregate_random_graphs)
{
    for (uint64_t seed = 1; seed <= 6; seed++) {
        lcg_state = seed * 7919;
        ks_int n = 200 + (ks_int)(1500 * lcg_unit());
        int ne = (int)(n * (0.5 + 3.0 * lcg_unit()));
        ks_int *u = malloc((size_t)ne * sizeof *u), *v = malloc((size_t)ne * sizeof *v);
        ck_assert(u && v);
        int m = 0;
        for (int e = 0; e < ne; e++) {
            ks_int a = (ks_int)(n * lcg_unit()), b = (ks_int)(n * lcg_unit());
            /* every 7th point stays isolated; self loops are dropped */
            if (a == b || a % 7 == 0 || b % 7 == 0)
                continue;
            u[m] = a;
            v[m++] = b;
        }
        ks_strength S;
        graph_from_edges(n, m, u, v, &S);
        ks_int *agg = malloc((size_t)n * sizeof *agg), na;
        ck_assert_ptr_nonnull(agg);
        KS_CHECK(ks_amg_aggregate(&S, agg, &na));
        agg_stats st = check_aggregates(&S, agg, na);
        ks_int isolated = 0;
        for (ks_int i = 0; i < n; i++)
            isolated += S.rowptr[i + 1] == S.rowptr[i];
        ck_assert_int_ge(isolated, (n + 6) / 7);
        ck_assert_int_eq(st.singletons, isolated);
        free(agg);
        free(u);
        free(v);
        free_strength(&S);
    }
}
END_TEST

START_TEST(aggregate_anisotropic_lines)
{
    /* cy << cx: the symmetric measure keeps only x links, so aggregates are
     * pieces of grid lines y = const */
    ks_gen_params p;
    ks_gen_params_default(&p);
    p.kind = KS_GEN_POISSON2D_5;
    p.nx = 30;
    p.ny = 20;
    p.cx = 1.0;
    p.cy = 1e-3;
    ks_csr A;
    KS_CHECK(ks_generate(&p, &A));
    ks_strength S;
    KS_CHECK(ks_amg_strength_symmetric(&A, 0.25, &S));
    ks_int *agg = malloc((size_t)A.nrows * sizeof *agg), na;
    ck_assert_ptr_nonnull(agg);
    KS_CHECK(ks_amg_aggregate(&S, agg, &na));
    agg_stats st = check_aggregates(&S, agg, na);
    ks_int *line = malloc((size_t)na * sizeof *line);
    ck_assert_ptr_nonnull(line);
    for (ks_int a = 0; a < na; a++)
        line[a] = -1;
    for (ks_int i = 0; i < A.nrows; i++) {
        ks_int y = i / p.nx; /* generator numbers x fastest */
        if (line[agg[i]] < 0)
            line[agg[i]] = y;
        ck_assert_int_eq(line[agg[i]], y);
    }
    ck_assert(st.avg >= 2.5 && st.avg <= 3.5);
    free(line);
    free(agg);
    ks_strength_free(&S);
    ks_csr_free(&A);
}
END_TEST

START_TEST(aggregate_errors)
{
    ks_int rp[] = {0, 1, 2}, ci[] = {1, 5}, agg[2], na;
    ks_strength S = {2, rp, ci};
    ck_assert_int_eq(ks_amg_aggregate(&S, agg, &na), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "out of range"));
    ck_assert_int_eq(ks_amg_aggregate(NULL, agg, &na), KS_ERR_ARG);
    ks_strength E = {0, rp, ci};
    na = 7;
    KS_CHECK(ks_amg_aggregate(&E, agg, &na));
    ck_assert_int_eq(na, 0);
}
END_TEST

/* ------------------------------------------------------- tentative P0 */

START_TEST(tentative_orthonormal)
{
    ks_csr A;
    gen(KS_GEN_POISSON2D_5, 13, 11, 1, &A);
    ks_strength S;
    pattern_strength(&A, &S);
    ks_int n = A.nrows, *agg = malloc((size_t)n * sizeof *agg), na;
    ck_assert_ptr_nonnull(agg);
    KS_CHECK(ks_amg_aggregate(&S, agg, &na));
    ks_csr P0;
    memset(&P0, 0xff, sizeof P0);
    KS_CHECK(ks_amg_tentative_prolongator(n, agg, na, &P0));
    KS_CHECK(ks_csr_validate(&P0));
    ck_assert_int_eq(P0.nrows, n);
    ck_assert_int_eq(P0.ncols, na);
    ck_assert_int_eq(P0.nnz, n);
    for (ks_int i = 0; i < n; i++) {
        ck_assert_int_eq(P0.rowptr[i + 1] - P0.rowptr[i], 1);
        ck_assert_int_eq(P0.colind[P0.rowptr[i]], agg[i]);
    }
    /* P0^T P0 = I, computed densely */
    double *D = dense(&P0);
    for (ks_int a = 0; a < na; a++)
        for (ks_int b = 0; b < na; b++) {
            double g = 0.0;
            for (ks_int i = 0; i < n; i++)
                g += D[(size_t)i * na + a] * D[(size_t)i * na + b];
            ck_assert_msg(fabs(g - (a == b)) < 1e-14, "(P0^T P0)(%d,%d) = %.17g", a, b, g);
        }
    free(D);
    ks_csr_free(&P0);
    free(agg);
    free_strength(&S);
    ks_csr_free(&A);
}
END_TEST

START_TEST(tentative_left_out_and_errors)
{
    const ks_int agg[] = {1, -1, 0, 1, 1};
    ks_csr P0;
    KS_CHECK(ks_amg_tentative_prolongator(5, agg, 2, &P0));
    KS_CHECK(ks_csr_validate(&P0));
    ck_assert_int_eq(P0.nnz, 4);
    ck_assert_int_eq(P0.rowptr[2] - P0.rowptr[1], 0); /* point left out */
    ck_assert_double_eq_tol(P0.val[P0.rowptr[0]], 1.0 / sqrt(3.0), 1e-16);
    ck_assert_double_eq(P0.val[P0.rowptr[2]], 1.0);
    ks_csr_free(&P0);

    const ks_int bad[] = {0, 2, 0};
    ck_assert_int_eq(ks_amg_tentative_prolongator(3, bad, 2, &P0), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "agg[1]"));
    const ks_int hole[] = {0, 2, 0};
    ck_assert_int_eq(ks_amg_tentative_prolongator(3, hole, 3, &P0), KS_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "aggregate 1"));
    ck_assert_int_eq(ks_amg_tentative_prolongator(-1, hole, 3, &P0), KS_ERR_ARG);
}
END_TEST

/* --------------------------------------------------- spectral radius */

static double rho_of(const ks_csr *A, int iters)
{
    double rho = NAN;
    KS_CHECK(ks_amg_spectral_radius_dinv_a(A, iters, &rho));
    return rho;
}

static void check_close(double est, double exact, double lo, double hi, const char *what)
{
    printf("rho(D^-1 A) %s: estimate %.6f, exact %.6f, ratio %.4f\n", what, est, exact,
           est / exact);
    ck_assert_msg(est >= lo * exact && est <= hi * exact, "%s: estimate %.8g, exact %.8g", what,
                  est, exact);
}

START_TEST(spectral_laplacians)
{
    ks_csr A;
    tridiag(100, -1, 2, -1, &A);
    double exact = 1.0 + cos(M_PI / 101);
    check_close(rho_of(&A, 20), exact, 0.97, 1.03, "1D n=100, 20 its");
    check_close(rho_of(&A, 10), exact, 0.95, 1.05, "1D n=100, 10 its");
    /* uneven diagonal (S A S) and negated matrix: same D^-1 A spectrum */
    symmetric_scale(&A, 99);
    check_close(rho_of(&A, 20), exact, 0.97, 1.03, "1D scaled");
    for (ks_int k = 0; k < A.nnz; k++)
        A.val[k] = -A.val[k];
    check_close(rho_of(&A, 20), exact, 0.97, 1.03, "1D scaled, negated");
    ks_csr_free(&A);

    /* fewer rows than steps: Lanczos ends on an invariant subspace, exact */
    tridiag(3, -1, 2, -1, &A);
    ck_assert_double_eq_tol(rho_of(&A, 20), 1.0 + cos(M_PI / 4), 1e-12);
    ks_csr_free(&A);
    tridiag(1, 0, 5, 0, &A);
    ck_assert_double_eq_tol(rho_of(&A, 5), 1.0, 1e-15);
    ks_csr_free(&A);

    gen(KS_GEN_POISSON2D_5, 32, 32, 1, &A);
    check_close(rho_of(&A, 20), 1.0 + cos(M_PI / 33), 0.97, 1.03, "2D 5-pt 32^2");
    ks_csr_free(&A);
    gen(KS_GEN_POISSON3D_7, 16, 16, 16, &A);
    check_close(rho_of(&A, 15), 1.0 + cos(M_PI / 17), 0.97, 1.03, "3D 7-pt 16^3");
    ks_csr_free(&A);
}
END_TEST

START_TEST(spectral_power_paths)
{
    /* symmetric but mixed-sign diagonal: blockdiag(T, -T); D^-1 A has T's
     * D^-1 T spectrum but is not similar to one symmetric form -> power */
    ks_csr T, A;
    tridiag(50, -1, 2, -1, &T);
    KS_CHECK(ks_csr_alloc(&A, 100, 100, 2 * T.nnz));
    for (ks_int i = 0; i <= 50; i++)
        A.rowptr[i] = T.rowptr[i];
    for (ks_int i = 1; i <= 50; i++)
        A.rowptr[50 + i] = T.nnz + T.rowptr[i];
    for (ks_int k = 0; k < T.nnz; k++) {
        A.colind[k] = T.colind[k];
        A.val[k] = T.val[k];
        A.colind[T.nnz + k] = T.colind[k] + 50;
        A.val[T.nnz + k] = -T.val[k];
    }
    check_close(rho_of(&A, 20), 1.0 + cos(M_PI / 51), 0.95, 1.06, "mixed-sign blocks (power)");
    ck_assert(rho_of(&A, 20) <= 2.0 + 1e-14); /* ||D^-1 A||_inf */
    ks_csr_free(&A);
    ks_csr_free(&T);

    /* nonsymmetric upwind tridiagonal: eigenvalues of D^-1 A are
     * 1 - 2 sqrt(lo*up)/d cos(k pi/(n+1)) */
    tridiag(100, -2, 3, -1, &A);
    double exact = 1.0 + 2.0 * sqrt(2.0) / 3.0 * cos(M_PI / 101);
    double est = rho_of(&A, 20);
    check_close(est, exact, 0.95, 1.06, "upwind 1D (power)");
    ck_assert(est <= 2.0 + 1e-14);
    ks_csr_free(&A);

    /* Symmetry detection: the symmetric 1D matrix stays below its bound
     * ||D^-1 A||_inf = 2 (Lanczos), an asymmetric value or a missing
     * partner entry switches to the power method, whose 1.05 safety factor
     * then hits that bound exactly. */
    tridiag(100, -1, 2, -1, &A);
    ck_assert(rho_of(&A, 20) < 2.0);
    A.val[A.rowptr[1]] = -1.001; /* a_10 */
    ck_assert_double_eq(rho_of(&A, 20), (1.001 + 2.0 + 1.0) / 2.0);
    ks_csr_free(&A);
    for (int drop = 0; drop < 2; drop++) {
        /* drop a_10 (an upper entry without partner) or a_01 (a lower one) */
        ks_int di = drop ? 0 : 1, dj = drop ? 1 : 0;
        ks_csr B;
        tridiag(100, -1, 2, -1, &B);
        KS_CHECK(ks_csr_alloc(&A, 100, 100, B.nnz - 1));
        ks_int m = 0;
        A.rowptr[0] = 0;
        for (ks_int i = 0; i < 100; i++) {
            for (ks_int k = B.rowptr[i]; k < B.rowptr[i + 1]; k++)
                if (!(i == di && B.colind[k] == dj)) {
                    A.colind[m] = B.colind[k];
                    A.val[m++] = B.val[k];
                }
            A.rowptr[i + 1] = m;
        }
        ck_assert_double_eq(rho_of(&A, 20), 2.0);
        ks_csr_free(&A);
        ks_csr_free(&B);
    }

    /* convection-diffusion 3D: result within [1, ||D^-1 A||_inf] */
    gen(KS_GEN_CONVDIFF3D, 10, 10, 10, &A);
    est = rho_of(&A, 15);
    ck_assert(est >= 1.0 && est <= 2.0);
    ks_csr_free(&A);
}
END_TEST

START_TEST(spectral_errors)
{
    ks_csr A;
    tridiag(5, -1, 2, -1, &A);
    double rho = 0;
    ck_assert_int_eq(ks_amg_spectral_radius_dinv_a(&A, 0, &rho), KS_ERR_ARG);
    ck_assert_int_eq(ks_amg_spectral_radius_dinv_a(NULL, 5, &rho), KS_ERR_ARG);
    A.val[A.rowptr[3] + 1] = 0.0; /* a_33 */
    ck_assert_int_eq(ks_amg_spectral_radius_dinv_a(&A, 5, &rho), KS_ERR_NUMERIC);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "row 3"));
    ks_csr_free(&A);
    tridiag(5, -1, 0, -1, &A); /* every diagonal a stored zero */
    ck_assert_int_eq(ks_amg_spectral_radius_dinv_a(&A, 5, &rho), KS_ERR_NUMERIC);
    ks_csr_free(&A);
    /* missing diagonal: 2 x 2 with off-diagonal entries only */
    const ks_int r[] = {0, 1}, c[] = {1, 0};
    const double v[] = {1.0, 1.0};
    KS_CHECK(ks_csr_from_coo(2, 2, 2, r, c, v, &A, NULL));
    ck_assert_int_eq(ks_amg_spectral_radius_dinv_a(&A, 5, &rho), KS_ERR_NUMERIC);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "missing"));
    A.ncols = 3;
    ck_assert_int_eq(ks_amg_spectral_radius_dinv_a(&A, 5, &rho), KS_ERR_SIZE);
    ks_csr_free(&A);
}
END_TEST

/* ------------------------------------------------------- smoothed P */

/* Aggregates + P0 + rho for A from its own pattern. */
static void sa_setup(const ks_csr *A, ks_int **agg, ks_int *na, ks_csr *P0, double *rho)
{
    ks_strength S;
    pattern_strength(A, &S);
    *agg = malloc((size_t)A->nrows * sizeof **agg);
    ck_assert_ptr_nonnull(*agg);
    KS_CHECK(ks_amg_aggregate(&S, *agg, na));
    KS_CHECK(ks_amg_tentative_prolongator(A->nrows, *agg, *na, P0));
    KS_CHECK(ks_amg_spectral_radius_dinv_a(A, 20, rho));
    free_strength(&S);
}

START_TEST(smoothed_matches_dense_reference)
{
    /* 7 x 6 grid with perturbed, nonsymmetric values */
    ks_csr A;
    gen(KS_GEN_POISSON2D_5, 7, 6, 1, &A);
    lcg_state = 5;
    for (ks_int k = 0; k < A.nnz; k++)
        A.val[k] *= 0.75 + 0.5 * lcg_unit();
    ks_int *agg, na;
    ks_csr P0, P;
    double rho;
    sa_setup(&A, &agg, &na, &P0, &rho);
    memset(&P, 0xff, sizeof P);
    KS_CHECK(ks_amg_smooth_prolongator(&A, &P0, rho, &P));
    KS_CHECK(ks_csr_validate(&P));
    ck_assert_int_eq(P.nrows, A.nrows);
    ck_assert_int_eq(P.ncols, na);

    ks_int n = A.nrows;
    double omega = 4.0 / (3.0 * rho);
    double *Ad = dense(&A), *P0d = dense(&P0), *Pd = dense(&P);
    char *pat = calloc((size_t)n * na, 1);
    ck_assert_ptr_nonnull(pat);
    for (ks_int i = 0; i < n; i++) {
        pat[(size_t)i * na + agg[i]] = 1;
        for (ks_int k = A.rowptr[i]; k < A.rowptr[i + 1]; k++)
            pat[(size_t)i * na + agg[A.colind[k]]] = 1;
    }
    ks_int expect_nnz = 0;
    for (ks_int i = 0; i < n; i++) {
        double dinv = 1.0 / Ad[(size_t)i * n + i];
        for (ks_int a = 0; a < na; a++) {
            double ap = 0.0;
            for (ks_int j = 0; j < n; j++)
                ap += Ad[(size_t)i * n + j] * P0d[(size_t)j * na + a];
            double ref = P0d[(size_t)i * na + a] - omega * dinv * ap;
            ck_assert_msg(fabs(Pd[(size_t)i * na + a] - ref) < 1e-14,
                          "P(%d,%d) = %.17g, reference %.17g", i, a, Pd[(size_t)i * na + a], ref);
            expect_nnz += pat[(size_t)i * na + a];
        }
    }
    ck_assert_int_eq(P.nnz, expect_nnz); /* exactly the structural product */
    free(pat);
    free(Ad);
    free(P0d);
    free(Pd);
    ks_csr_free(&P);
    ks_csr_free(&P0);
    free(agg);
    ks_csr_free(&A);
}
END_TEST

START_TEST(smoothed_preserves_constants)
{
    ks_csr A;
    gen(KS_GEN_POISSON2D_5, 20, 20, 1, &A);
    ks_int *agg, na, n = A.nrows;
    ks_csr P0, P;
    double rho;
    sa_setup(&A, &agg, &na, &P0, &rho);
    KS_CHECK(ks_amg_smooth_prolongator(&A, &P0, rho, &P));
    double omega = 4.0 / (3.0 * rho);

    /* c = sqrt(|aggregate|) gives P0 c = 1 */
    double *c = calloc((size_t)na, sizeof *c), *y = malloc((size_t)n * sizeof *y);
    double *z = malloc((size_t)n * sizeof *z), *ay = malloc((size_t)n * sizeof *ay);
    ck_assert(c && y && z && ay);
    for (ks_int i = 0; i < n; i++)
        c[agg[i]] += 1.0;
    for (ks_int a = 0; a < na; a++)
        c[a] = sqrt(c[a]);
    ks_csr_spmv_ref(&P0, 1.0, c, 0.0, y);
    for (ks_int i = 0; i < n; i++)
        ck_assert_double_eq_tol(y[i], 1.0, 1e-15);
    ks_csr_spmv_ref(&P, 1.0, c, 0.0, z);
    ks_int interior = 0;
    for (ks_int i = 0; i < n; i++) {
        double rs = 0.0;
        for (ks_int k = A.rowptr[i]; k < A.rowptr[i + 1]; k++)
            rs += A.val[k];
        double want = 1.0 - omega * rs / diag_of(&A, i);
        ck_assert_msg(fabs(z[i] - want) < 1e-14, "(P c)_%d = %.17g, want %.17g", i, z[i], want);
        if (rs == 0.0) {
            interior++;
            ck_assert_msg(fabs(z[i] - 1.0) < 1e-14, "interior row %d: (P c) = %.17g", i, z[i]);
        }
    }
    ck_assert_int_eq(interior, 18 * 18);

    /* any coarse vector: P c = (I - omega D^-1 A) P0 c */
    lcg_state = 11;
    for (ks_int a = 0; a < na; a++)
        c[a] = 2.0 * lcg_unit() - 1.0;
    ks_csr_spmv_ref(&P0, 1.0, c, 0.0, y);
    ks_csr_spmv_ref(&A, 1.0, y, 0.0, ay);
    ks_csr_spmv_ref(&P, 1.0, c, 0.0, z);
    for (ks_int i = 0; i < n; i++) {
        double want = y[i] - omega * ay[i] / diag_of(&A, i);
        ck_assert_double_eq_tol(z[i], want, 1e-14);
    }
    free(c);
    free(y);
    free(z);
    free(ay);
    ks_csr_free(&P);
    ks_csr_free(&P0);
    free(agg);
    ks_csr_free(&A);
}
END_TEST

START_TEST(smoothed_errors)
{
    ks_csr A, P0, P, B;
    tridiag(6, -1, 2, -1, &A);
    const ks_int agg[] = {0, 0, 1, 1, 1, 1};
    KS_CHECK(ks_amg_tentative_prolongator(6, agg, 2, &P0));
    ck_assert_int_eq(ks_amg_smooth_prolongator(&A, &P0, 0.0, &P), KS_ERR_ARG);
    ck_assert_int_eq(ks_amg_smooth_prolongator(&A, &P0, NAN, &P), KS_ERR_ARG);
    ck_assert_int_eq(ks_amg_smooth_prolongator(&A, &P0, 2.0, NULL), KS_ERR_ARG);
    tridiag(5, -1, 2, -1, &B);
    ck_assert_int_eq(ks_amg_smooth_prolongator(&B, &P0, 2.0, &P), KS_ERR_SIZE);
    ks_csr_free(&B);
    A.val[A.rowptr[4] + 1] = 0.0; /* a_44 */
    ck_assert_int_eq(ks_amg_smooth_prolongator(&A, &P0, 2.0, &P), KS_ERR_NUMERIC);
    ck_assert_ptr_nonnull(strstr(ks_last_error(), "row 4"));
    ks_csr_free(&P0);
    ks_csr_free(&A);
}
END_TEST

/* ------------------------------------------------------- determinism */

typedef struct sa_result {
    ks_int *agg, na;
    ks_csr P0, P;
    double rho, rho_power;
} sa_result;

static void run_all(const ks_csr *A, const ks_csr *N, int threads, sa_result *r)
{
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    ks_strength S;
    KS_CHECK(ks_amg_strength_symmetric(A, 0.25, &S));
    r->agg = malloc((size_t)A->nrows * sizeof *r->agg);
    ck_assert_ptr_nonnull(r->agg);
    KS_CHECK(ks_amg_aggregate(&S, r->agg, &r->na));
    KS_CHECK(ks_amg_tentative_prolongator(A->nrows, r->agg, r->na, &r->P0));
    KS_CHECK(ks_amg_spectral_radius_dinv_a(A, 20, &r->rho));
    KS_CHECK(ks_amg_spectral_radius_dinv_a(N, 20, &r->rho_power));
    KS_CHECK(ks_amg_smooth_prolongator(A, &r->P0, r->rho, &r->P));
    ks_strength_free(&S);
}

static void same_csr(const ks_csr *a, const ks_csr *b)
{
    ck_assert_int_eq(a->nrows, b->nrows);
    ck_assert_int_eq(a->ncols, b->ncols);
    ck_assert_int_eq(a->nnz, b->nnz);
    ck_assert(!memcmp(a->rowptr, b->rowptr, ((size_t)a->nrows + 1) * sizeof *a->rowptr));
    ck_assert(!memcmp(a->colind, b->colind, (size_t)a->nnz * sizeof *a->colind));
    ck_assert(!memcmp(a->val, b->val, (size_t)a->nnz * sizeof *a->val));
}

START_TEST(independent_of_thread_count)
{
    ks_csr A, N;
    gen(KS_GEN_POISSON2D_5, 110, 100, 1, &A); /* 11000 rows: parallel paths */
    symmetric_scale(&A, 3);
    gen(KS_GEN_CONVDIFF3D, 22, 22, 22, &N);
    sa_result r[3];
    for (int t = 0; t < 3; t++)
        run_all(&A, &N, t + 1, &r[t]);
    for (int t = 1; t < 3; t++) {
        ck_assert_int_eq(r[t].na, r[0].na);
        ck_assert(!memcmp(r[t].agg, r[0].agg, (size_t)A.nrows * sizeof *r[0].agg));
        same_csr(&r[t].P0, &r[0].P0);
        same_csr(&r[t].P, &r[0].P);
        ck_assert(r[t].rho == r[0].rho);
        ck_assert(r[t].rho_power == r[0].rho_power);
    }
    for (int t = 0; t < 3; t++) {
        free(r[t].agg);
        ks_csr_free(&r[t].P0);
        ks_csr_free(&r[t].P);
    }
    ks_csr_free(&A);
    ks_csr_free(&N);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("amg_aggregation");
    TCase *tc = tcase_create("aggregation");
    tcase_add_test(tc, aggregate_small_graphs_by_specification);
    tcase_add_test(tc, aggregate_laplacians);
    tcase_add_test(tc, aggregate_random_graphs);
    tcase_add_test(tc, aggregate_anisotropic_lines);
    tcase_add_test(tc, aggregate_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("tentative");
    tcase_add_test(tc, tentative_orthonormal);
    tcase_add_test(tc, tentative_left_out_and_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("spectral");
    tcase_add_test(tc, spectral_laplacians);
    tcase_add_test(tc, spectral_power_paths);
    tcase_add_test(tc, spectral_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("smoothed");
    tcase_add_test(tc, smoothed_matches_dense_reference);
    tcase_add_test(tc, smoothed_preserves_constants);
    tcase_add_test(tc, smoothed_errors);
    suite_add_tcase(s, tc);
    /* Tagged, to leave out under valgrind with CK_EXCLUDE_TAGS=threads
     * (Check reads no CK_EXCLUDE_CASE): it uses more threads than
     * OMP_NUM_THREADS=1, and libgomp's pool then shows as "possibly lost". */
    tc = tcase_create("threads");
    tcase_set_tags(tc, "threads");
    tcase_add_test(tc, independent_of_thread_count);
    suite_add_tcase(s, tc);
    return ks_test_run(s);
}
