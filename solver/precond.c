/* Preconditioner factory and the identity preconditioner. */
#include "krylov.h"
#include "precond_amg.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static ks_error identity_setup(ks_precond *pc, ks_matrix *A)
{
    (void)pc;
    (void)A;
    return KS_OK;
}

static ks_error identity_apply(ks_precond *pc, const ks_vec *r, ks_vec *z)
{
    (void)pc;
    return ks_vec_copy(r, z);
}

static ks_error identity_apply_block(ks_precond *pc, const ks_block *R, ks_block *Z)
{
    (void)pc;
    return ks_block_copy(R, Z);
}

static void identity_destroy(ks_precond *pc) { (void)pc; }

ks_error ks_precond_apply_block(ks_precond *pc, const ks_block *R, ks_block *Z)
{
    if (pc->ops->apply_block)
        return pc->ops->apply_block(pc, R, Z);
    return ks_precond_apply_columns(pc, R, Z);
}

ks_error ks_precond_apply_block_dot(ks_precond *pc, const ks_block *R, ks_block *Z,
                                    double *dots)
{
    if (pc->ops->apply_block_dot)
        return pc->ops->apply_block_dot(pc, R, Z, dots);
    KS_TRY(ks_precond_apply_block(pc, R, Z));
    return ks_block_dot(R, Z, dots);
}

ks_error ks_precond_apply_columns(ks_precond *pc, const ks_block *R, ks_block *Z)
{
    /* Column by column through two vectors. */
    ks_vec *r = NULL, *z = NULL;
    ks_error e = ks_vec_create(pc->be, R->n, &r);
    if (e == KS_OK)
        e = ks_vec_create(pc->be, R->n, &z);
    for (int j = 0; j < R->k && e == KS_OK; j++) {
        e = ks_block_get_col(R, j, r);
        if (e == KS_OK)
            e = pc->ops->apply(pc, r, z);
        if (e == KS_OK)
            e = ks_block_set_col(Z, j, z);
    }
    ks_vec_destroy(&r);
    ks_vec_destroy(&z);
    return e;
}

const ks_precond_ops ks_precond_identity_ops = {
    .name = "NOSOLVER",
    .setup = identity_setup,
    .apply = identity_apply,
    .destroy = identity_destroy,
    .apply_block = identity_apply_block,
};

static const struct {
    const char *name;
    const ks_precond_ops *ops;
} pc_table[] = {
    {"NOSOLVER", &ks_precond_identity_ops},
    {"JACOBI", &ks_precond_jacobi_ops},
    {"BLOCK_JACOBI", &ks_precond_jacobi_ops}, /* AmgX's name; blocks of 1 here */
    {"JACOBI_L1", &ks_precond_jacobi_l1_ops},
    {"AMG", &ks_precond_amg_ops},
};

ks_error ks_precond_create(ks_backend *be, const ks_precond_params *prm, ks_precond **pc)
{
    if (!pc)
        return ks_seterr(KS_ERR_ARG, "ks_precond_create: NULL output pointer");
    *pc = NULL;
    if (!be || !prm)
        return ks_seterr(KS_ERR_ARG, "ks_precond_create: NULL backend or params");
    const ks_precond_ops *ops = NULL;
    for (size_t i = 0; i < sizeof pc_table / sizeof pc_table[0]; i++)
        if (strcasecmp(prm->solver, pc_table[i].name) == 0)
            ops = pc_table[i].ops;
    if (!ops)
        return ks_seterr(KS_ERR_CONFIG,
                         "preconditioner.solver: unknown preconditioner '%s' (expected NOSOLVER, "
                         "JACOBI, BLOCK_JACOBI, JACOBI_L1, AMG)",
                         prm->solver);
    if (ops != &ks_precond_identity_ops &&
        (!(prm->relaxation_factor > 0.0) || !isfinite(prm->relaxation_factor)))
        return ks_seterr(KS_ERR_CONFIG,
                         "preconditioner.relaxation_factor: %g is not a positive finite number",
                         prm->relaxation_factor);
    if (ops == &ks_precond_amg_ops)
        KS_TRY(ks_amg_params_check(&prm->amg, "solver.preconditioner"));
    ks_precond *p = ks_calloc(1, sizeof *p, "preconditioner");
    if (!p)
        return KS_ERR_MEMORY;
    p->ops = ops;
    p->be = be;
    p->prm = *prm;
    *pc = p;
    return KS_OK;
}

void ks_precond_destroy(ks_precond *pc)
{
    if (!pc)
        return;
    pc->ops->destroy(pc);
    free(pc);
}
