/* The distributed product y = alpha A x + beta y, overlapping the halo
 * exchange with computation: post the exchange of x's ghost entries, apply
 * the local block (which needs none of them) meanwhile, wait, then add the
 * ghost block's product. Each row's sum is thus split in two (local
 * columns, then ghost columns), so it may differ from a one-process
 * product in the last bits. */
#include "mpi_internal.h"

ks_error ks_dist_apply(ks_matrix_dist *base, double alpha, const ks_vec *x, double beta,
                       ks_vec *y)
{
    ks_dist_impl *d = (ks_dist_impl *)base;
    ks_error e = ks_halo_begin(d->halo, x->data, d->xghost->data);
    ks_error el = e == KS_OK ? ks_matrix_apply(base->local, alpha, x, beta, y) : KS_OK;
    /* Waited for after a failure too: no request outlives the call. */
    ks_error ew = ks_halo_end(d->halo, d->xghost->data);
    if (e == KS_OK)
        e = el != KS_OK ? el : ew;
    if (e == KS_OK && base->ghost)
        e = ks_matrix_apply(base->ghost, alpha, d->xghost, 1.0, y);
    return e;
}

/* The fused residual / smoother pass (spmv/fused.h) over the ranks: as the
 * product above, with the local block's fused pass in place of its SpMV
 * (t without the ghost columns), then the ghost block's share taken from
 * the rows it touches. Against the unfused pass (copy b, this product,
 * the vector update) it saves two sweeps over the level's vectors. */
ks_error ks_dist_fused_step(ks_matrix_dist *base, const ks_fused_step *f)
{
    ks_dist_impl *d = (ks_dist_impl *)base;
    ks_error e = ks_halo_begin(d->halo, f->x, d->xghost->data);
    ks_error el = e == KS_OK && base->local->A.nrows > 0 ? ks_matrix_fused_local(base->local, f)
                                                         : KS_OK;
    ks_error ew = ks_halo_end(d->halo, d->xghost->data);
    if (e == KS_OK)
        e = el != KS_OK ? el : ew;
    if (e == KS_OK && base->ghost)
        e = ks_matrix_fused_ghost(base->ghost, d->xghost->data, f);
    return e;
}
