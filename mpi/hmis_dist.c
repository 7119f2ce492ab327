/* HMIS over ranks: the Ruge-Stueben first pass inside each rank, then
 * PMIS across the ranks on what it left, with the serial measure and no
 * seam reset.
 *
 * The graph: pmis_graph_dist.c's joint graph of the rank's points and the
 * other ranks' points next to them (S and S^T across ranks), made once for
 * both stages.
 *
 * First pass: amg/cpu/hmis.c's RS pass (ks_amg_rs_first_pass) over the
 * rank's points, the other ranks' points counted but never decided, so a
 * point's measure, |S^T_i| plus its F dependents as they come, is the
 * serial one with its dependents on other ranks. Every rank's pass runs at
 * once, blind to the others' decisions.
 *
 * Second stage: distributed PMIS (ks_dist_pmis_graph) on the points the
 * pass left undecided (no dependents), with the serial measures, and the
 * serial fix-up over all points: an F point with strong connections but no
 * C point among them (on a seam: its C points were on the other side's
 * plan) becomes C. On one rank no point is external, so the result is
 * ks_amg_hmis's splitting exactly; on several it depends on the partition,
 * never on the run: every step is deterministic.
 *
 * Where two ranks' RS patterns meet, C points may sit side by side across
 * the seam (the patterns are out of phase wherever the blocks start at
 * different points of the grid's pattern, which only a pass over the ranks
 * in turn would avoid); that costs a few per cent of operator complexity and
 * few iterations. What was measured against it (PCG + AMG(JACOBI_L1, D2),
 * 7-point, even / uneven layouts, tests/test_mpi_amg_solve.c's settings,
 * iterations on 2 / 3 / 4 ranks):
 *  - ksolve's first version, after hypre's default (measure_type 0): RS
 *    on each rank's local block (a seam point then has fewer dependents
 *    than it has, as on the domain's boundary) and every point with an
 *    off-rank connection reset to PMIS's (both sides of each seam coarser
 *    and irregular): 16^3 (12 on one process) 14, 15, 14. (hypre's
 *    measure_type 1 adds the other ranks' dependents, as here.)
 *  - the local block's measure, only the points connected to a lower rank
 *    reset (the upper side of a seam PMIS's): 16^3 13/12, 14/13, 14/14;
 *    with one aggressive level (20 on one process) 21/20, 22/21, 23/22:
 *    A1 = P1^T A P1's distance-2 graph has wide seams, and PMIS on them
 *    keeps far fewer C points (16^3 over 4 ranks: 65 to 72 a rank against
 *    84 to 87 serially).
 *  - the serial measure with that reset: 13/12, 13/13, 14/13; aggressive
 *    19/20, 20/20, 21/21.
 *  - the serial measure, no reset (this file): 13/12, 13/13, 13/13;
 *    aggressive 19/20, 20/20, 20/20; 32^3 aggressive (21) 21/21, 21/21,
 *    21/21 (23/21, 22/23, 23/23 with the local measure and the one-sided
 *    reset).
 *  - with the one-sided reset, undecided points next to another rank's C
 *    point made F before PMIS (fitting one side to the other's pattern):
 *    worse, a whole plane of F
 *    points where the patterns are out of phase (16^3 aggressive, 4 ranks:
 *    24). */
#include "amg_dist.h"

#include <string.h>

ks_error ks_dist_hmis(const ks_dist_strength *S, unsigned long long seed, int *cf, ks_int *nc)
{
    static const char who[] = "distributed HMIS";
    ks_error e = ks_dist_split_args(S, cf, nc, who);
    if (e != KS_OK)
        return e;
    ks_dist_graph G;
    KS_TRY(ks_dist_graph_create(S, &G));
    const ks_int n = G.nloc;
    const size_t m = (size_t)G.nloc + (size_t)G.next + 1;
    int *cfx = ks_malloc(m * sizeof *cfx, "HMIS states");
    unsigned char *fixed = ks_malloc(m, "HMIS external flags");
    e = cfx && fixed ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK) /* the Ruge-Stueben pass reads the rows on the host */
        e = ks_dist_graph_host_rows(&G);
    e = ks_comm_agree(S->comm, e);
    if (e == KS_OK) {
        /* isolated points (no strong connection on any rank): F, outside
         * both stages; the external points undecided and fixed */
        for (ks_int j = 0; j < n + G.next; j++) {
            fixed[j] = j >= n;
            cfx[j] = j < n && G.srp[j] == G.srp[j + 1] && G.trp[j] == G.trp[j + 1]
                         ? KS_FPT : KS_UNDECIDED;
        }
        const ks_strength Sj = {n, G.srp, G.sci}, STj = {n, G.trp, G.tci};
        e = ks_comm_agree(S->comm, ks_amg_rs_first_pass(&Sj, &STj, fixed, cfx));
    }
    if (e == KS_OK) {
        memcpy(cf, cfx, (size_t)n * sizeof *cf);
        e = ks_dist_pmis_graph(S, &G, seed, cf, nc);
    }
    free(cfx);
    free(fixed);
    ks_dist_graph_free(&G);
    return e == KS_OK ? KS_OK : ks_adderr(e, "%s", who);
}
