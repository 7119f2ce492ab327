/* The "AMG" preconditioner: z = one cycle on A z = r from z = 0. Setup
 * builds the hierarchy on the matrix's backend; re-setup keeps its patterns
 * (amg/resetup.c). */
#include "precond_amg.h"

#ifdef KS_HAVE_MPI
#include "../mpi/amg_dist_hierarchy.h"
#endif

/* The matrix a one-process hierarchy is built on: A, or a distributed
 * A's local block when A lives on one rank (its hierarchy is then the one
 * the distributed setup would make, and its setup runs every step on the
 * device where A does); NULL for a matrix over several ranks. */
static ks_matrix *one_process_matrix(ks_matrix *A)
{
    if (!ks_matrix_distributed(A))
        return A;
#ifdef KS_HAVE_MPI
    return ks_amg_dist_one_rank_block(A);
#else
    return NULL;
#endif
}

/* The hierarchy of A: the distributed setup (mpi/) for a matrix over
 * ranks, which exists only in a build with MPI. */
static ks_error build_hierarchy(ks_precond *pc, ks_matrix *A, ks_amg **amg)
{
    ks_matrix *L = one_process_matrix(A);
    if (L)
        return ks_amg_setup(pc->be, &pc->prm.amg, L, amg);
#ifdef KS_HAVE_MPI
    return ks_amg_setup_dist(pc->be, &pc->prm.amg, A, amg);
#else
    return ks_seterr(KS_ERR_UNSUPPORTED, "AMG on a distributed matrix: built without MPI");
#endif
}

static ks_error amg_pc_setup(ks_precond *pc, ks_matrix *A)
{
    /* The old hierarchy goes first: building the new one beside it would
     * double the peak memory (host and device) of every repeated setup. A
     * failed setup leaves no preconditioner (include/ksolve.h says so). */
    ks_amg_destroy(pc->data);
    pc->data = NULL;
    /* Said here, not by whichever level-0 step trips on it first (the
     * Chebyshev estimate did, naming its own internals). */
    if (ks_matrix_global_rows(A) == 0)
        return ks_seterr(KS_ERR_SIZE, "AMG setup: the matrix is 0 x 0 (no unknowns): there is "
                         "nothing to coarsen or smooth; AMG needs at least one row");
    ks_amg *amg = NULL;
    KS_TRY(build_hierarchy(pc, A, &amg));
    pc->data = amg;
    return KS_OK;
}

static ks_error amg_pc_resetup(ks_precond *pc, ks_matrix *A)
{
    if (!pc->data)
        return amg_pc_setup(pc, A);
    const ks_amg *amg = pc->data;
    ks_matrix *L = one_process_matrix(A);
    if (L && amg->ranks == 0)
        return ks_amg_resetup(pc->data, L);
    if (L || amg->ranks == 0) /* the kind of hierarchy changed (the environment did) */
        return amg_pc_setup(pc, A);
#ifdef KS_HAVE_MPI
    return ks_amg_resetup_dist(pc->data, A);
#else
    return amg_pc_setup(pc, A); /* refuses the distributed matrix */
#endif
}

static ks_error amg_pc_apply(ks_precond *pc, const ks_vec *r, ks_vec *z)
{
    if (!pc->data)
        return ks_seterr(KS_ERR_ARG, "AMG apply before setup");
    const ks_amg *amg = pc->data;
    if (amg->ranks == 0 && (r->comm || z->comm)) {
        /* one rank's one-process hierarchy: its cycle works on local
         * vectors, so it gets local views of the rank's parts */
        ks_vec rl = {r->be, r->n, r->data, NULL, NULL}, zl = {z->be, z->n, z->data, NULL, NULL};
        return ks_amg_precond_cycle(pc->data, &rl, &zl);
    }
    return ks_amg_precond_cycle(pc->data, r, z);
}

/* The block cycle where the hierarchy has one; Gauss-Seidel smoothers
 * (and a hierarchy over ranks) apply the single cycle to each column. */
static ks_error amg_pc_apply_block(ks_precond *pc, const ks_block *R, ks_block *Z)
{
    if (!pc->data)
        return ks_seterr(KS_ERR_ARG, "AMG apply before setup");
    if (!ks_amg_has_block_cycle(pc->data)) {
        if (!pc->block_fallback_said) {
            pc->block_fallback_said = 1;
            ks_log(KS_LOG_INFO, "ksolve: the AMG cycle with this smoother (Gauss-Seidel) or "
                                "over MPI ranks has no block form: one cycle per column\n");
        }
        return ks_precond_apply_columns(pc, R, Z);
    }
    return ks_amg_cycle_block(pc->data, R, Z);
}

static ks_error amg_pc_apply_block_dot(ks_precond *pc, const ks_block *R, ks_block *Z,
                                       double *dots)
{
    if (!pc->data || !ks_amg_has_block_cycle(pc->data)) {
        KS_TRY(amg_pc_apply_block(pc, R, Z));
        return ks_block_dot(R, Z, dots);
    }
    return ks_amg_cycle_block_dot(pc->data, R, Z, dots);
}

static void amg_pc_destroy(ks_precond *pc)
{
    ks_amg_destroy(pc->data);
    pc->data = NULL;
}

static void amg_pc_print(const ks_precond *pc, FILE *out)
{
    if (pc->data)
        ks_amg_print(pc->data, out);
}

static ks_error amg_pc_hierarchy(ks_precond *pc, ks_hierarchy_info *info)
{
    return ks_amg_info(pc->data, info);
}

static ks_error amg_pc_profile(ks_precond *pc, int on)
{
    if (!pc->data)
        return ks_seterr(KS_ERR_ARG, "AMG cycle profile: no hierarchy (setup first)");
    return ks_amg_profile(pc->data, on);
}

const ks_precond_ops ks_precond_amg_ops = {
    .name = "AMG",
    .setup = amg_pc_setup,
    .apply = amg_pc_apply,
    .destroy = amg_pc_destroy,
    .resetup = amg_pc_resetup,
    .print = amg_pc_print,
    .hierarchy = amg_pc_hierarchy,
    .profile = amg_pc_profile,
    .apply_block = amg_pc_apply_block,
    .apply_block_dot = amg_pc_apply_block_dot,
};

const ks_amg *ks_precond_amg(const ks_precond *pc)
{
    if (!pc || pc->ops != &ks_precond_amg_ops || !pc->data)
        return NULL;
    const ks_amg *amg = pc->data;
    return amg->nlevels > 0 ? amg : NULL;
}
