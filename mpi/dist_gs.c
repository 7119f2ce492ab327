/* Hybrid (processor-block) Gauss-Seidel over ranks, as hypre's hybrid
 * smoothers: every rank sweeps its own rows with the other ranks' x
 * entries taken from one halo exchange at the start of the sweep,
 *
 *   x_ghost <- halo(x);   b_loc = b - A_ghost x_ghost;   GS sweep of A_local x = b_loc
 *
 * so the ranks' sweeps are Jacobi-coupled: the iterations depend on the
 * partition (and on one rank this is the one-process sweep exactly). The
 * local sweep is the format's own (the cpu csr's, itself Gauss-Seidel
 * within blocks of rows and Jacobi across them). */
#include "mpi_internal.h"

ks_error ks_dist_gs_sweep(ks_matrix_dist *base, const ks_vec *b, ks_vec *x, int reverse)
{
    ks_dist_impl *d = (ks_dist_impl *)base;
    ks_error e = ks_halo_begin(d->halo, x->data, d->xghost->data);
    /* Waited for after a failure too: no request outlives the call. */
    ks_error ew = ks_halo_end(d->halo, d->xghost->data);
    if (e == KS_OK)
        e = ew;
    if (e != KS_OK || !base->ghost)
        return e == KS_OK ? ks_matrix_gs_sweep(base->local, b, x, reverse) : e;
    if (!d->gs_rhs) { /* laid out as b, so vector operations take both */
        KS_TRY(ks_vec_create(base->local->be, ks_matrix_rows(base->local), &d->gs_rhs));
        d->gs_rhs->offsets = ks_layout_copy(base->comm, base->offsets);
        if (!d->gs_rhs->offsets) {
            ks_vec_destroy(&d->gs_rhs);
            return KS_ERR_MEMORY;
        }
        d->gs_rhs->comm = base->comm;
    }
    KS_TRY(ks_vec_copy(b, d->gs_rhs));
    KS_TRY(ks_matrix_apply(base->ghost, -1.0, d->xghost, 1.0, d->gs_rhs));
    return ks_matrix_gs_sweep(base->local, d->gs_rhs, x, reverse);
}
