/* HMIS coarsening (De Sterck, Falgout, Nolting, Yang 2008): a Ruge-Stueben
 * first pass, then PMIS on the points it left undecided.
 *
 * First pass: the measure of an undecided point is
 *     lambda_i = |S^T_i| + (number of F points among S^T_i),
 * i.e. points that many others depend on, and that F points need, go first.
 * Repeatedly the point with the largest lambda becomes C, its undecided
 * neighbours in the symmetrized graph (its strong dependents S^T_i and, for
 * a nonsymmetric S, its strong influences S_i) become F, and each new F
 * point j raises lambda_k of the undecided k it depends on (k in S_j).
 * Lambdas only grow, so buckets of doubly linked lists give O(nnz) work:
 * the top bucket pointer rises on an increase and otherwise only falls.
 * Ties: within a bucket the most recently raised point comes first (the
 * usual RS discipline, which sweeps the grid like a front); the initial
 * order puts the lowest index first. The pass is serial (it is inherently
 * sequential) and therefore deterministic.
 *
 * The pass stops when every undecided point has lambda = 0 (no undecided or
 * F point depends on it). With a structurally symmetric S such points are
 * isolated and were made F up front, so the PMIS stage has nothing to do on
 * one process; with a nonsymmetric S it decides the rest, and its fix-up
 * (pmis.c) gives HMIS the same guarantees as PMIS: every F point with
 * strong connections has a C point in S_i, and the C points are
 * independent in S + S^T except next to fix-up promotions. The PMIS stage
 * is called unconditionally so the MPI version only has to restrict the RS
 * pass to interior points. */
#include "coarsen_internal.h"

#include <string.h>

typedef struct buckets {
    ks_int *head; /* per lambda value: first point or -1 */
    ks_int *next, *prev;
    ks_int *lambda;
    ks_int top; /* no bucket above top is non-empty */
} buckets;

static void bucket_push(buckets *b, ks_int i)
{
    ks_int l = b->lambda[i];
    b->prev[i] = -1;
    b->next[i] = b->head[l];
    if (b->head[l] >= 0)
        b->prev[b->head[l]] = i;
    b->head[l] = i;
    if (l > b->top)
        b->top = l;
}

static void bucket_unlink(buckets *b, ks_int i)
{
    if (b->prev[i] >= 0)
        b->next[b->prev[i]] = b->next[i];
    else
        b->head[b->lambda[i]] = b->next[i];
    if (b->next[i] >= 0)
        b->prev[b->next[i]] = b->prev[i];
}

/* j becomes F; the undecided points it depends on gain weight. A point is
 * in the buckets exactly when it is undecided with lambda >= 1. */
static void make_fine(const ks_strength *S, int *cf, buckets *b, ks_int j)
{
    if (b->lambda[j] >= 1)
        bucket_unlink(b, j);
    cf[j] = KS_FPT;
    for (ks_int k = S->rowptr[j]; k < S->rowptr[j + 1]; k++) {
        ks_int m = S->colind[k];
        if (cf[m] != KS_UNDECIDED)
            continue;
        if (b->lambda[m] >= 1)
            bucket_unlink(b, m);
        b->lambda[m]++;
        bucket_push(b, m);
    }
}

static ks_error rs_first_pass(const ks_strength *S, const ks_strength *ST, int *cf)
{
    ks_int n = S->n, maxst = 0;
    for (ks_int i = 0; i < n; i++) {
        ks_int c = ST->rowptr[i + 1] - ST->rowptr[i];
        if (c > maxst)
            maxst = c;
    }
    /* lambda <= 2 |S^T_i|: each dependent counts once, and once more when F. */
    size_t nb = 2 * (size_t)maxst + 1;
    buckets b = {0};
    b.head = ks_malloc(nb * sizeof *b.head, "HMIS buckets");
    b.next = ks_malloc((size_t)n * sizeof *b.next, "HMIS bucket links");
    b.prev = ks_malloc((size_t)n * sizeof *b.prev, "HMIS bucket links");
    b.lambda = ks_malloc((size_t)n * sizeof *b.lambda, "HMIS measures");
    if (!b.head || !b.next || !b.prev || !b.lambda) {
        free(b.head);
        free(b.next);
        free(b.prev);
        free(b.lambda);
        return KS_ERR_MEMORY;
    }
    for (size_t l = 0; l < nb; l++)
        b.head[l] = -1;
    for (ks_int i = n - 1; i >= 0; i--) { /* pushed last = first out: lowest index */
        b.lambda[i] = ST->rowptr[i + 1] - ST->rowptr[i];
        if (cf[i] == KS_UNDECIDED && b.lambda[i] >= 1)
            bucket_push(&b, i);
    }
    for (;;) {
        while (b.top > 0 && b.head[b.top] < 0)
            b.top--;
        if (b.top == 0)
            break;
        ks_int i = b.head[b.top];
        bucket_unlink(&b, i);
        cf[i] = KS_CPT;
        for (ks_int k = ST->rowptr[i]; k < ST->rowptr[i + 1]; k++)
            if (cf[ST->colind[k]] == KS_UNDECIDED)
                make_fine(S, cf, &b, ST->colind[k]);
        for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++)
            if (cf[S->colind[k]] == KS_UNDECIDED)
                make_fine(S, cf, &b, S->colind[k]);
    }
    free(b.head);
    free(b.next);
    free(b.prev);
    free(b.lambda);
    return KS_OK;
}

ks_error ks_amg_hmis_ex(const ks_strength *S, unsigned long long seed, int *cf, ks_int *nc,
                        unsigned char *promoted)
{
    if (!cf || !nc)
        return ks_seterr(KS_ERR_ARG, "ks_amg_hmis: NULL %s", cf ? "nc" : "cf");
    KS_TRY(ks_strength_check(S, "ks_amg_hmis"));
    ks_strength ST;
    KS_TRY(ks_strength_transpose(S, &ST));
    ks_int n = S->n;
    for (ks_int i = 0; i < n; i++) /* isolated points: F, outside both passes */
        cf[i] = S->rowptr[i] == S->rowptr[i + 1] && ST.rowptr[i] == ST.rowptr[i + 1]
                    ? KS_FPT : KS_UNDECIDED;
    ks_error e = rs_first_pass(S, &ST, cf);
    if (e == KS_OK)
        e = ks_amg_pmis_stage(S, &ST, seed, cf, promoted);
    ks_strength_free(&ST);
    if (e != KS_OK)
        return e;
    ks_int c = 0;
#pragma omp parallel for schedule(static) reduction(+ : c)
    for (ks_int i = 0; i < n; i++)
        c += cf[i] == KS_CPT;
    *nc = c;
    return KS_OK;
}

ks_error ks_amg_hmis(const ks_strength *S, unsigned long long seed, int *cf, ks_int *nc)
{
    return ks_amg_hmis_ex(S, seed, cf, nc, NULL);
}
