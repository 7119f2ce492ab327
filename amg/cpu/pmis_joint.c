/* The distributed PMIS's steps on the host (amg/kernels.h, pmis_joint_step;
 * the driver and the exchanges: mpi/pmis_dist.c). The rounds are
 * amg/cpu/pmis.c's two passes on the joint graph; the fix-up visits a
 * rank's candidates in index order, so one decided in a round informs the
 * later ones at once (the outcome is the same either way). */
#include "amg_cpu.h"
#include "coarsen_internal.h"

static ks_gint gid_of(const ks_pmis_joint *J, ks_int j)
{
    return j < J->nloc ? J->row_begin + j : J->ext_gid[j - J->nloc];
}

/* Does j's measure beat i's? (pmis.c's beats, global index last) */
static int beats(const ks_pmis_joint *J, ks_int j, ks_int i)
{
    if (J->cnt[j] != J->cnt[i])
        return J->cnt[j] > J->cnt[i];
    if (J->h[j] != J->h[i])
        return J->h[j] > J->h[i];
    return gid_of(J, j) > gid_of(J, i);
}

static int is_local_max(const ks_pmis_joint *J, ks_int i)
{
    for (ks_int k = J->srp[i]; k < J->srp[i + 1]; k++)
        if (J->cf[J->sci[k]] == KS_UNDECIDED && beats(J, J->sci[k], i))
            return 0;
    for (ks_int k = J->trp[i]; k < J->trp[i + 1]; k++)
        if (J->cf[J->tci[k]] == KS_UNDECIDED && beats(J, J->tci[k], i))
            return 0;
    return 1;
}

static int has_selected(const ks_pmis_joint *J, ks_int i)
{
    for (ks_int k = J->srp[i]; k < J->srp[i + 1]; k++)
        if (J->sel[J->sci[k]])
            return 1;
    for (ks_int k = J->trp[i]; k < J->trp[i + 1]; k++)
        if (J->sel[J->tci[k]])
            return 1;
    return 0;
}

static ks_gint init(ks_pmis_joint *J, unsigned long long seed)
{
    const ks_int n = J->nloc, m = J->nloc + J->next;
    ks_gint und = 0;
#pragma omp parallel for schedule(static)
    for (ks_int j = 0; j < m; j++) {
        J->h[j] = ks_coarsen_hash(seed, gid_of(J, j));
        J->sel[j] = J->cand[j] = J->fix[j] = 0;
        if (j >= n)
            J->cf[j] = KS_UNDECIDED; /* the rounds' exchange brings it */
    }
#pragma omp parallel for schedule(static) reduction(+ : und)
    for (ks_int i = 0; i < n; i++) {
        J->cnt[i] = J->trp[i + 1] - J->trp[i]; /* |S^T_i| over all ranks */
        if (J->cf[i] != KS_UNDECIDED)
            continue; /* decided before (ks_dist_pmis_from) */
        if (J->srp[i] == J->srp[i + 1] && J->trp[i] == J->trp[i + 1])
            J->cf[i] = KS_FPT; /* isolated: nothing to interpolate from or for */
        else
            und++;
    }
    return und;
}

static ks_gint fixup_round(ks_pmis_joint *J)
{
    ks_gint v = 0;
    for (ks_int i = 0; i < J->nloc; i++) {
        if (!J->cand[i] || J->fix[i] != KS_PMIS_UNSEEN)
            continue;
        const ks_gint gi = J->row_begin + i;
        int pending = 0, hit = 0;
        for (ks_int k = J->srp[i]; k < J->srp[i + 1] && !hit; k++) {
            const ks_int j = J->sci[k];
            if (J->cand[j] && gid_of(J, j) < gi) {
                hit = J->fix[j] == KS_PMIS_PROMOTED;
                pending |= J->fix[j] == KS_PMIS_UNSEEN;
            }
        }
        if (hit) {
            J->fix[i] = KS_PMIS_KEPT;
        } else if (!pending) {
            J->fix[i] = KS_PMIS_PROMOTED;
            J->cf[i] = KS_CPT;
        } else {
            v++;
        }
    }
    return v;
}

ks_error ks_amg_cpu_pmis_joint_step(ks_pmis_joint *J, int step, unsigned long long seed,
                                    ks_gint *count)
{
    const ks_int n = J->nloc;
    ks_gint c = 0;
    switch (step) {
    case KS_PMIS_INIT: c = init(J, seed); break;
    case KS_PMIS_SELECT:
#pragma omp parallel for schedule(static) reduction(+ : c)
        for (ks_int i = 0; i < n; i++) {
            J->sel[i] = J->cf[i] == KS_UNDECIDED && is_local_max(J, i);
            c += J->sel[i];
        }
        break;
    case KS_PMIS_UPDATE:
#pragma omp parallel for schedule(static) reduction(+ : c)
        for (ks_int i = 0; i < n; i++) {
            if (J->cf[i] != KS_UNDECIDED)
                continue;
            if (J->sel[i])
                J->cf[i] = KS_CPT;
            else if (has_selected(J, i))
                J->cf[i] = KS_FPT;
            else
                c++;
        }
        break;
    case KS_PMIS_CANDIDATES:
#pragma omp parallel for schedule(static) reduction(+ : c)
        for (ks_int i = 0; i < n; i++) {
            int need = J->cf[i] == KS_FPT && J->srp[i] < J->srp[i + 1];
            for (ks_int k = J->srp[i]; k < J->srp[i + 1] && need; k++)
                need = J->cf[J->sci[k]] != KS_CPT;
            J->cand[i] = need;
            c += need;
        }
        break;
    case KS_PMIS_FIXUP: c = fixup_round(J); break;
    default: return ks_seterr(KS_ERR_ARG, "distributed PMIS: no step %d", step);
    }
    *count = c;
    return KS_OK;
}

ks_error ks_amg_cpu_gather_int(ks_backend *be, const int *src, const ks_int *idx, ks_int n,
                               int *out)
{
    (void)be;
#pragma omp parallel for schedule(static)
    for (ks_int k = 0; k < n; k++)
        out[k] = src[idx[k]];
    return KS_OK;
}
