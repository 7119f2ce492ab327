/* PMIS coarsening (De Sterck, Yang, Heys 2006) on the symmetrized strength
 * graph S + S^T.
 *
 * Measure of point i: the pair (|S^T_i|, hash(seed, i)), i.e. |S^T_i| + a
 * random fraction in [0,1), compared exactly, with the index as the final
 * tie-break so that no two points ever tie. Each round:
 *   1. every undecided point whose measure beats all its undecided
 *      neighbours (in S_i and S^T_i) is selected (reads cf, writes sel);
 *   2. selected points become C and every undecided neighbour of a selected
 *      point becomes F (reads sel, writes only its own cf entry).
 * The two passes never write what the same pass reads, so the result does
 * not depend on the thread count. The undecided point with the largest
 * measure is always selected, so every round makes progress.
 *
 * Why both directions make F: the C points then form an independent set of
 * the symmetrized graph. With a structurally symmetric S every such F point
 * i has its C neighbour in S_i. With a nonsymmetric S a point that only a
 * C point depends on can end as F with no C in S_i (a 3-cycle of
 * dependencies shows both properties cannot always hold together), so a
 * final serial fix-up, in index order, turns every F point that has strong
 * connections but no C point among them into a C point. This keeps the
 * guarantee interpolation needs -- every F point with S_i nonempty has a
 * C point in S_i -- and gives up independence only next to promoted points.
 * Points with no strong connection in either direction are F from the
 * start (they get empty interpolation rows). */
#include "coarsen_internal.h"

#include <inttypes.h>
#include <string.h>

/* Does j's measure beat i's? */
static inline int beats(const ks_strength *ST, const uint64_t *h, ks_int j, ks_int i)
{
    ks_int cj = ST->rowptr[j + 1] - ST->rowptr[j], ci = ST->rowptr[i + 1] - ST->rowptr[i];
    if (cj != ci)
        return cj > ci;
    if (h[j] != h[i])
        return h[j] > h[i];
    return j > i;
}

static int is_local_max(const ks_strength *S, const ks_strength *ST, const uint64_t *h,
                        const int *cf, ks_int i)
{
    for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++) {
        ks_int j = S->colind[k];
        if (cf[j] == KS_UNDECIDED && beats(ST, h, j, i))
            return 0;
    }
    for (ks_int k = ST->rowptr[i]; k < ST->rowptr[i + 1]; k++) {
        ks_int j = ST->colind[k];
        if (cf[j] == KS_UNDECIDED && beats(ST, h, j, i))
            return 0;
    }
    return 1;
}

static int has_selected_neighbour(const ks_strength *S, const ks_strength *ST,
                                  const unsigned char *sel, ks_int i)
{
    for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1]; k++)
        if (sel[S->colind[k]])
            return 1;
    for (ks_int k = ST->rowptr[i]; k < ST->rowptr[i + 1]; k++)
        if (sel[ST->colind[k]])
            return 1;
    return 0;
}

ks_error ks_amg_pmis_stage(const ks_strength *S, const ks_strength *ST, unsigned long long seed,
                           int *cf, unsigned char *promoted)
{
    ks_int n = S->n;
    uint64_t *h = ks_malloc((size_t)n * sizeof *h, "PMIS random measures");
    unsigned char *sel = ks_calloc((size_t)n, 1, "PMIS selection flags");
    if (!h || !sel) {
        free(h);
        free(sel);
        return KS_ERR_MEMORY;
    }
    ks_int undecided = 0;
#pragma omp parallel for schedule(static) reduction(+ : undecided)
    for (ks_int i = 0; i < n; i++) {
        h[i] = ks_coarsen_hash(seed, i);
        if (cf[i] == KS_UNDECIDED) {
            if (S->rowptr[i] == S->rowptr[i + 1] && ST->rowptr[i] == ST->rowptr[i + 1])
                cf[i] = KS_FPT; /* isolated: nothing to interpolate from or for */
            else
                undecided++;
        }
    }
    while (undecided > 0) {
        ks_int nsel = 0;
#pragma omp parallel for schedule(static) reduction(+ : nsel)
        for (ks_int i = 0; i < n; i++) {
            sel[i] = cf[i] == KS_UNDECIDED && is_local_max(S, ST, h, cf, i);
            nsel += sel[i];
        }
        if (nsel == 0) { /* impossible: the largest undecided measure always wins */
            free(h);
            free(sel);
            return ks_seterr(KS_ERR_NUMERIC, "ks_amg_pmis: no progress with %" PRId32
                             " undecided points", undecided);
        }
        ks_int left = 0;
#pragma omp parallel for schedule(static) reduction(+ : left)
        for (ks_int i = 0; i < n; i++) {
            if (cf[i] != KS_UNDECIDED)
                continue;
            if (sel[i])
                cf[i] = KS_CPT;
            else if (has_selected_neighbour(S, ST, sel, i))
                cf[i] = KS_FPT;
            else
                left++;
        }
        undecided = left;
    }
    free(h);

    /* Fix-up (see the file comment); never fires for a symmetric S. Serial
     * in index order: deterministic, and an earlier promotion can satisfy a
     * later point. Promotions only add C points, so only F points without a
     * C point in S_i beforehand can need one: those are found in parallel,
     * and the serial pass visits just them, in index order, rechecking each
     * against the promotions made so far (the same decisions as a serial
     * pass over all points). */
    if (promoted && n > 0)
        memset(promoted, 0, (size_t)n);
    ks_int ncand = 0;
#pragma omp parallel for schedule(static) reduction(+ : ncand)
    for (ks_int i = 0; i < n; i++) {
        int need = cf[i] == KS_FPT && S->rowptr[i] < S->rowptr[i + 1];
        for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1] && need; k++)
            need = cf[S->colind[k]] != KS_CPT;
        sel[i] = (unsigned char)need;
        ncand += need;
    }
    ks_amg_pmis_fixup(S, sel, ncand, cf, promoted);
    free(sel);
    return KS_OK;
}

/* The serial pass of the fix-up over the candidates (also the cuda PMIS's,
 * on host copies: the same decisions on both backends). */
void ks_amg_pmis_fixup(const ks_strength *S, const unsigned char *cand, ks_int ncand, int *cf,
                       unsigned char *promoted)
{
    for (ks_int i = 0; i < S->n && ncand > 0; i++) {
        if (!cand[i])
            continue;
        ncand--;
        int has_c = 0;
        for (ks_int k = S->rowptr[i]; k < S->rowptr[i + 1] && !has_c; k++)
            has_c = cf[S->colind[k]] == KS_CPT;
        if (!has_c) {
            cf[i] = KS_CPT;
            if (promoted)
                promoted[i] = 1;
        }
    }
}

ks_error ks_amg_pmis_ex(const ks_strength *S, unsigned long long seed, int *cf, ks_int *nc,
                        unsigned char *promoted)
{
    if (!cf || !nc)
        return ks_seterr(KS_ERR_ARG, "ks_amg_pmis: NULL %s", cf ? "nc" : "cf");
    KS_TRY(ks_strength_check(S, "ks_amg_pmis"));
    ks_strength ST;
    KS_TRY(ks_strength_transpose_unchecked(S, &ST));
    ks_int n = S->n;
    for (ks_int i = 0; i < n; i++)
        cf[i] = KS_UNDECIDED;
    ks_error e = ks_amg_pmis_stage(S, &ST, seed, cf, promoted);
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

ks_error ks_amg_pmis(const ks_strength *S, unsigned long long seed, int *cf, ks_int *nc)
{
    return ks_amg_pmis_ex(S, seed, cf, nc, NULL);
}
