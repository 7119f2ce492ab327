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

/* The rounds' arrays where the table runs them (J.be: the graph's device;
 * NULL: the host) and the exchange of their external entries. On a device
 * the values a rank sends are packed there and downloaded (boundary points
 * only), exchanged by MPI and the received ones uploaded into the external
 * part. */
typedef struct pmis_ctx {
    ks_pmis_joint J;
    const ks_comm *c;
    ks_halo_typed x;   /* int exchange over the external points */
    ks_int nout;       /* values this rank sends an exchange */
    ks_int *idx;       /* device: the plan's send list */
    int *packed;       /* device: nout */
    int *hsend, *hrecv; /* device: host copies, nout and next */
} pmis_ctx;

/* a's external entries from their owners (a: one of J's arrays). Not
 * collective; every rank calls it and agrees after. */
static ks_error exchange(pmis_ctx *P, int *a)
{
    ks_pmis_joint *J = &P->J;
    if (!J->be)
        return ks_halo_typed_forward(&P->x, a, a + J->nloc);
    ks_backend *be = J->be;
    ks_error e = ks_amgk_gather_int(be, a, P->idx, P->nout, P->packed);
    if (e == KS_OK && P->nout > 0)
        e = be->ops->download(be, P->hsend, P->packed, (size_t)P->nout * sizeof(int));
    /* called also after a failure here, so the neighbours' messages match */
    ks_error x = ks_halo_typed_forward_packed(&P->x, P->hsend, P->hrecv);
    if (e == KS_OK)
        e = x;
    if (e == KS_OK && J->next > 0)
        e = be->ops->upload(be, a + J->nloc, P->hrecv, (size_t)J->next * sizeof(int));
    return e;
}

/* The arrays agreed, then a global count. */
static ks_error exchange_and_count(pmis_ctx *P, int *a, ks_gint *v, int k)
{
    ks_error e = ks_comm_agree(P->c, exchange(P, a));
    if (e == KS_OK)
        e = ks_comm_sum_gint(P->c, v, k);
    return e;
}

static ks_error step(pmis_ctx *P, int s, unsigned long long seed, ks_gint *count)
{
    return ks_comm_agree(P->c, ks_amgk_pmis_joint_step(&P->J, s, seed, count));
}

static ks_error rounds(pmis_ctx *P, unsigned long long seed)
{
    ks_gint und = 0;
    KS_TRY(step(P, KS_PMIS_INIT, seed, &und));
    KS_TRY(ks_comm_agree(P->c, exchange(P, P->J.cnt)));
    KS_TRY(exchange_and_count(P, P->J.cf, &und, 1));
    while (und > 0) {
        ks_gint v[2] = {0, 0};
        KS_TRY(step(P, KS_PMIS_SELECT, seed, &v[0]));
        KS_TRY(ks_comm_agree(P->c, exchange(P, P->J.sel)));
        KS_TRY(step(P, KS_PMIS_UPDATE, seed, &v[1]));
        KS_TRY(exchange_and_count(P, P->J.cf, v, 2));
        if (v[0] == 0) /* impossible: the largest undecided measure always wins */
            return ks_seterr(KS_ERR_NUMERIC, "distributed PMIS: no progress with %lld "
                             "undecided points", (long long)und);
        und = v[1];
    }
    return KS_OK;
}

static ks_error fixup(pmis_ctx *P, unsigned long long seed)
{
    ks_gint left = 0;
    KS_TRY(step(P, KS_PMIS_CANDIDATES, seed, &left));
    KS_TRY(exchange_and_count(P, P->J.cand, &left, 1));
    /* Never for a structurally symmetric S (pmis.c): usually done here. */
    while (left > 0) {
        ks_gint v = 0;
        KS_TRY(step(P, KS_PMIS_FIXUP, seed, &v));
        KS_TRY(exchange_and_count(P, P->J.fix, &v, 1));
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

/* Allocations where J.be says (the host when NULL). */
static void *pmis_alloc(ks_backend *be, size_t bytes, const char *what)
{
    if (!be)
        return ks_malloc(bytes, what);
    void *p = NULL;
    return ks_be_alloc(be, bytes, &p, what) == KS_OK ? p : NULL;
}

static void pmis_free(ks_backend *be, void *p)
{
    if (!be)
        free(p);
    else if (p)
        be->ops->free(be, p);
}

static void ctx_free(pmis_ctx *P)
{
    ks_backend *be = P->J.be;
    void *dev[] = {P->J.cnt, P->J.cf, P->J.sel, P->J.cand, P->J.fix, P->J.h, P->J.scratch,
                   P->idx, P->packed};
    for (size_t k = 0; k < sizeof dev / sizeof dev[0]; k++)
        pmis_free(be, dev[k]);
    free(P->hsend);
    free(P->hrecv);
    ks_halo_typed_free(&P->x);
}

/* ks_dist_pmis_from on S's graph G (made by the caller): the rounds where
 * G's rows live (a device when the strength's device parts made it). */
static ks_error pmis_on(const ks_dist_strength *S, const ks_dist_graph *G,
                        unsigned long long seed, int *cf, ks_int *nc)
{
    pmis_ctx P;
    memset(&P, 0, sizeof P);
    P.c = S->comm;
    ks_pmis_joint *J = &P.J;
    ks_backend *be = G->be;
    J->be = be;
    J->nloc = G->nloc;
    J->next = G->next;
    J->row_begin = G->row_begin;
    J->ext_gid = be ? G->dext_gid : G->ext_gid;
    J->srp = be ? G->dS.rowptr : G->srp;
    J->sci = be ? G->dS.colind : G->sci;
    J->trp = be ? G->dT.rowptr : G->trp;
    J->tci = be ? G->dT.colind : G->tci;
    const size_t m = (size_t)G->nloc + (size_t)G->next + 1;
    J->cnt = pmis_alloc(be, m * sizeof(int), "PMIS measures");
    J->cf = pmis_alloc(be, m * sizeof(int), "PMIS states");
    J->sel = pmis_alloc(be, m * sizeof(int), "PMIS selections");
    J->cand = pmis_alloc(be, m * sizeof(int), "PMIS fix-up candidates");
    J->fix = pmis_alloc(be, m * sizeof(int), "PMIS fix-up states");
    J->h = pmis_alloc(be, m * sizeof *J->h, "PMIS random measures");
    J->scratch = pmis_alloc(be, sizeof(int), "PMIS step count");
    ks_error e = J->cnt && J->cf && J->sel && J->cand && J->fix && J->h && J->scratch
                     ? KS_OK : KS_ERR_MEMORY;
    e = ks_comm_agree(S->comm, e);
    if (e == KS_OK)
        e = ks_halo_typed_create(S->comm, G->halo, MPI_INT, sizeof(int), &P.x);
    if (e == KS_OK && be) { /* the exchange's device and host buffers */
        P.nout = ks_halo_typed_count(&P.x);
        P.packed = pmis_alloc(be, (size_t)P.nout * sizeof(int) + 1, "PMIS send values");
        P.hsend = ks_malloc((size_t)P.nout * sizeof(int) + 1, "PMIS send values");
        P.hrecv = ks_malloc((size_t)G->next * sizeof(int) + 1, "PMIS received values");
        e = P.packed && P.hsend && P.hrecv ? KS_OK : KS_ERR_MEMORY;
        if (e == KS_OK && P.nout > 0) /* a rank sending nothing has no list */
            e = ks_be_upload_new(be, G->halo->send_idx, (size_t)P.nout * sizeof(ks_int),
                                 (void **)&P.idx, "PMIS send list");
        if (e == KS_OK && G->nloc > 0)
            e = be->ops->upload(be, J->cf, cf, (size_t)G->nloc * sizeof(int));
        e = ks_comm_agree(S->comm, e);
    } else if (e == KS_OK && G->nloc > 0) {
        memcpy(J->cf, cf, (size_t)G->nloc * sizeof(int));
    }
    double t = ks_wtime();
    if (e == KS_OK)
        e = rounds(&P, seed);
    ks_amg_dist_substep(S->comm, "PMIS: rounds", &t);
    if (e == KS_OK)
        e = fixup(&P, seed);
    ks_amg_dist_substep(S->comm, "PMIS: fix-up", &t);
    if (e == KS_OK && G->nloc > 0)
        e = be ? be->ops->download(be, cf, J->cf, (size_t)G->nloc * sizeof(int))
               : (memcpy(cf, J->cf, (size_t)G->nloc * sizeof(int)), KS_OK);
    e = ks_comm_agree(S->comm, e);
    if (e == KS_OK) {
        ks_int c = 0;
#pragma omp parallel for schedule(static) reduction(+ : c)
        for (ks_int i = 0; i < G->nloc; i++)
            c += cf[i] == KS_CPT;
        *nc = c;
    }
    ctx_free(&P);
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
