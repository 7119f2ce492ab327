/* PMIS over ranks: amg/cpu/pmis.c's splitting of the global strength
 * graph, point for point, on the joint graph of pmis_graph_dist.c (own
 * points, then the external points of other ranks).
 *
 * Measures: (|S^T_i|, ks_coarsen_hash(seed, global i), global i), the
 * serial measure since the hash takes the global index; the external
 * points' counts come from their owners once.
 *
 * Rounds: the serial two passes. Select reads the states of the previous
 * round (the external ones exchanged at its end), update reads this
 * round's selections (exchanged between the passes), so every rank makes
 * the decisions of the serial loop. The loop ends on a global count.
 *
 * Fix-up: the serial pass visits the candidates (F points with strong
 * connections but no C point among them) in global index order and
 * promotes one when none of its earlier candidate neighbours in S_i was
 * promoted. As in amg/cuda/pmis.cu that is a rule a candidate can apply
 * once its earlier candidate neighbours are decided, so rounds with the
 * states exchanged reach the serial result; the undecided candidate of
 * smallest global index always decides, so every round makes progress. */
#include "amg_dist.h"

#include <string.h>

enum { UNSEEN = 0, PROMOTED = 1, KEPT = 2 }; /* a candidate's fix-up state */

typedef struct pmis_ctx {
    const ks_dist_graph *G;
    const ks_comm *c;
    ks_halo_typed x;   /* int exchange over the external points */
    int *cnt, *cf, *sel, *cand, *state; /* nloc + next each */
    uint64_t *h;
} pmis_ctx;

static ks_gint gid_of(const ks_dist_graph *G, ks_int j)
{
    return j < G->nloc ? G->row_begin + j : G->ext_gid[j - G->nloc];
}

/* Does j's measure beat i's? (pmis.c's beats, global index last) */
static int beats(const pmis_ctx *P, ks_int j, ks_int i)
{
    if (P->cnt[j] != P->cnt[i])
        return P->cnt[j] > P->cnt[i];
    if (P->h[j] != P->h[i])
        return P->h[j] > P->h[i];
    return gid_of(P->G, j) > gid_of(P->G, i);
}

static int is_local_max(const pmis_ctx *P, ks_int i)
{
    const ks_dist_graph *G = P->G;
    for (ks_int k = G->srp[i]; k < G->srp[i + 1]; k++)
        if (P->cf[G->sci[k]] == KS_UNDECIDED && beats(P, G->sci[k], i))
            return 0;
    for (ks_int k = G->trp[i]; k < G->trp[i + 1]; k++)
        if (P->cf[G->tci[k]] == KS_UNDECIDED && beats(P, G->tci[k], i))
            return 0;
    return 1;
}

static int has_selected(const pmis_ctx *P, ks_int i)
{
    const ks_dist_graph *G = P->G;
    for (ks_int k = G->srp[i]; k < G->srp[i + 1]; k++)
        if (P->sel[G->sci[k]])
            return 1;
    for (ks_int k = G->trp[i]; k < G->trp[i + 1]; k++)
        if (P->sel[G->tci[k]])
            return 1;
    return 0;
}

/* The states of every rank's own points agreed, then a global count. A
 * failed exchange on one rank becomes every rank's error before the sum. */
static ks_error exchange_and_count(pmis_ctx *P, int *own, ks_gint *v, int k)
{
    ks_error e = ks_comm_agree(P->c, ks_halo_typed_forward(&P->x, own, own + P->G->nloc));
    if (e == KS_OK)
        e = ks_comm_sum_gint(P->c, v, k);
    return e;
}

static ks_error rounds(pmis_ctx *P)
{
    const ks_dist_graph *G = P->G;
    const ks_int n = G->nloc;
    ks_gint und = 0;
#pragma omp parallel for schedule(static) reduction(+ : und)
    for (ks_int i = 0; i < n; i++) {
        if (P->cf[i] != KS_UNDECIDED)
            continue; /* decided before (ks_dist_pmis_from) */
        if (G->srp[i] == G->srp[i + 1] && G->trp[i] == G->trp[i + 1])
            P->cf[i] = KS_FPT; /* isolated: nothing to interpolate from or for */
        else
            und++;
    }
    KS_TRY(exchange_and_count(P, P->cf, &und, 1));
    while (und > 0) {
        ks_gint nsel = 0, nleft = 0;
#pragma omp parallel for schedule(static) reduction(+ : nsel)
        for (ks_int i = 0; i < n; i++) {
            P->sel[i] = P->cf[i] == KS_UNDECIDED && is_local_max(P, i);
            nsel += P->sel[i];
        }
        ks_error e = ks_halo_typed_forward(&P->x, P->sel, P->sel + n);
        e = ks_comm_agree(P->c, e);
        if (e != KS_OK)
            return e;
#pragma omp parallel for schedule(static) reduction(+ : nleft)
        for (ks_int i = 0; i < n; i++) {
            if (P->cf[i] != KS_UNDECIDED)
                continue;
            if (P->sel[i])
                P->cf[i] = KS_CPT;
            else if (has_selected(P, i))
                P->cf[i] = KS_FPT;
            else
                nleft++;
        }
        ks_gint v[2] = {nsel, nleft};
        KS_TRY(exchange_and_count(P, P->cf, v, 2));
        if (v[0] == 0) /* impossible: the largest undecided measure always wins */
            return ks_seterr(KS_ERR_NUMERIC, "distributed PMIS: no progress with %lld "
                             "undecided points", (long long)und);
        und = v[1];
    }
    return KS_OK;
}

static ks_error fixup(pmis_ctx *P)
{
    const ks_dist_graph *G = P->G;
    const ks_int n = G->nloc;
    ks_gint left = 0;
#pragma omp parallel for schedule(static) reduction(+ : left)
    for (ks_int i = 0; i < n; i++) {
        int need = P->cf[i] == KS_FPT && G->srp[i] < G->srp[i + 1];
        for (ks_int k = G->srp[i]; k < G->srp[i + 1] && need; k++)
            need = P->cf[G->sci[k]] != KS_CPT;
        P->cand[i] = need;
        left += need;
    }
    KS_TRY(exchange_and_count(P, P->cand, &left, 1));
    /* Never for a structurally symmetric S (pmis.c): usually done here. */
    while (left > 0) {
        ks_gint v = 0;
        /* In index order: a candidate decided this round informs the later
         * ones at once; either way the result is the same (states only go
         * from UNSEEN to final). */
        for (ks_int i = 0; i < n; i++) {
            if (!P->cand[i] || P->state[i] != UNSEEN)
                continue;
            const ks_gint gi = G->row_begin + i;
            int pending = 0, hit = 0;
            for (ks_int k = G->srp[i]; k < G->srp[i + 1] && !hit; k++) {
                const ks_int j = G->sci[k];
                if (P->cand[j] && gid_of(G, j) < gi) {
                    hit = P->state[j] == PROMOTED;
                    pending |= P->state[j] == UNSEEN;
                }
            }
            if (hit) {
                P->state[i] = KEPT;
            } else if (!pending) {
                P->state[i] = PROMOTED;
                P->cf[i] = KS_CPT;
            } else {
                v++;
            }
        }
        KS_TRY(exchange_and_count(P, P->state, &v, 1));
        if (v == left) /* impossible: the smallest undecided candidate decides */
            return ks_seterr(KS_ERR_NUMERIC, "distributed PMIS fix-up: no progress with %lld "
                             "undecided candidates", (long long)left);
        left = v;
    }
    return KS_OK;
}

ks_error ks_dist_pmis(const ks_dist_strength *S, unsigned long long seed, int *cf, ks_int *nc)
{
    const ks_int n = S && cf ? S->nloc : 0;
#pragma omp parallel for schedule(static)
    for (ks_int i = 0; i < n; i++)
        cf[i] = KS_UNDECIDED;
    return ks_dist_pmis_from(S, seed, cf, nc);
}

ks_error ks_dist_split_args(const ks_dist_strength *S, const int *cf, const ks_int *nc,
                            const char *who)
{
    if (!S || !S->comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL or empty strength graph", who);
    ks_error e = KS_OK;
    if ((!cf && S->nloc > 0) || !nc)
        e = ks_seterr(KS_ERR_ARG, "%s: NULL %s", who, nc ? "cf" : "nc");
    return ks_comm_agree(S->comm, e);
}

/* ks_dist_pmis_from on S's graph G (made by the caller). */
static ks_error pmis_on(const ks_dist_strength *S, const ks_dist_graph *G,
                        unsigned long long seed, int *cf, ks_int *nc)
{
    pmis_ctx P = {.G = G, .c = S->comm};
    ks_error e;
    const size_t m = (size_t)G->nloc + (size_t)G->next + 1;
    P.cnt = ks_malloc(m * sizeof(int), "PMIS measures");
    P.cf = ks_malloc(m * sizeof(int), "PMIS states");
    P.sel = ks_calloc(m, sizeof(int), "PMIS selections");
    P.cand = ks_calloc(m, sizeof(int), "PMIS fix-up candidates");
    P.state = ks_calloc(m, sizeof(int), "PMIS fix-up states");
    P.h = ks_malloc(m * sizeof *P.h, "PMIS random measures");
    e = ks_comm_agree(S->comm, P.cnt && P.cf && P.sel && P.cand && P.state && P.h
                                   ? KS_OK : KS_ERR_MEMORY);
    if (e == KS_OK)
        e = ks_halo_typed_create(S->comm, G->halo, MPI_INT, sizeof(int), &P.x);
    if (e == KS_OK) {
#pragma omp parallel for schedule(static)
        for (ks_int j = 0; j < G->nloc + G->next; j++) {
            P.h[j] = ks_coarsen_hash(seed, gid_of(G, j));
            P.cf[j] = j < G->nloc ? cf[j] : KS_UNDECIDED; /* external: the rounds' exchange */
        }
#pragma omp parallel for schedule(static)
        for (ks_int i = 0; i < G->nloc; i++)
            P.cnt[i] = G->trp[i + 1] - G->trp[i]; /* |S^T_i| over all ranks */
        e = ks_comm_agree(S->comm, ks_halo_typed_forward(&P.x, P.cnt, P.cnt + G->nloc));
    }
    double t = ks_wtime();
    if (e == KS_OK)
        e = rounds(&P);
    ks_amg_dist_substep(S->comm, "PMIS: rounds", &t);
    if (e == KS_OK)
        e = fixup(&P);
    ks_amg_dist_substep(S->comm, "PMIS: fix-up", &t);
    if (e == KS_OK) {
        ks_int c = 0;
#pragma omp parallel for schedule(static) reduction(+ : c)
        for (ks_int i = 0; i < G->nloc; i++) {
            cf[i] = P.cf[i];
            c += cf[i] == KS_CPT;
        }
        *nc = c;
    }
    ks_halo_typed_free(&P.x);
    free(P.cnt);
    free(P.cf);
    free(P.sel);
    free(P.cand);
    free(P.state);
    free(P.h);
    return e;
}

/* The checks, then PMIS on G, or on S's graph made here when G is NULL. */
static ks_error pmis_checked(const ks_dist_strength *S, const ks_dist_graph *G,
                             unsigned long long seed, int *cf, ks_int *nc)
{
    static const char who[] = "distributed PMIS";
    ks_error e = ks_dist_split_args(S, cf, nc, who);
    if (e != KS_OK)
        return e;
    ks_dist_graph own;
    if (!G) {
        KS_TRY(ks_dist_graph_create(S, &own));
        G = &own;
    }
    e = pmis_on(S, G, seed, cf, nc);
    if (G == &own)
        ks_dist_graph_free(&own);
    return e == KS_OK ? KS_OK : ks_adderr(e, "%s", who);
}

ks_error ks_dist_pmis_from(const ks_dist_strength *S, unsigned long long seed, int *cf,
                           ks_int *nc)
{
    return pmis_checked(S, NULL, seed, cf, nc);
}

ks_error ks_dist_pmis_graph(const ks_dist_strength *S, const ks_dist_graph *G,
                            unsigned long long seed, int *cf, ks_int *nc)
{
    return pmis_checked(S, G, seed, cf, nc);
}
