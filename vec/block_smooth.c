/* ks_block_smooth_update and the cpu backend's kernel for it: one pass
 * where the step would otherwise be a pointwise multiply and an update
 * over the k columns (block_smooth.h). */
#include "block_smooth.h"
#include "smooth_value.h"

ks_error ks_cpu_bsmooth(ks_backend *be, ks_int n, int k, double a, double c, const double *w,
                        const double *b, const double *t, const double *xin,
                        const double *xprev, double *xout)
{
    (void)be;
    const int64_t work = (int64_t)n * k;
    (void)work;
#pragma omp parallel for schedule(static) if (work > 16384)
    for (ks_int i = 0; i < n; i++)
        for (int j = 0; j < k; j++) {
            const size_t e = (size_t)i * (size_t)k + (size_t)j;
            xout[e] = ks_smooth_value(a, c, w[i], xin, xprev, (ks_int)e, t ? b[e] - t[e] : b[e]);
        }
    return KS_OK;
}

/* B, and each of the others given, of one shape on one backend. */
static ks_error same_shape(const ks_block *B, const ks_block *Y, const char *name)
{
    if (!Y)
        return KS_OK;
    if (Y->be != B->be || Y->n != B->n || Y->k != B->k)
        return ks_seterr(Y->be != B->be ? KS_ERR_ARG : KS_ERR_SIZE,
                         "ks_block_smooth_update: %s is %ld x %d%s, B %ld x %d", name,
                         (long)Y->n, Y->k, Y->be != B->be ? " on another backend" : "",
                         (long)B->n, B->k);
    return KS_OK;
}

ks_error ks_block_smooth_update(double a, double c, const ks_vec *w, const ks_block *B,
                                const ks_block *T, const ks_block *Xin, const ks_block *Xprev,
                                ks_block *Xo)
{
    if (!w || !B || !Xo)
        return ks_seterr(KS_ERR_ARG, "ks_block_smooth_update: NULL %s",
                         !w ? "weights" : !B ? "B" : "Xo");
    KS_TRY(same_shape(B, T, "T"));
    KS_TRY(same_shape(B, Xin, "Xin"));
    KS_TRY(same_shape(B, Xprev, "Xprev"));
    KS_TRY(same_shape(B, Xo, "Xo"));
    if (w->be != B->be || w->n != B->n || w->comm)
        return ks_seterr(KS_ERR_SIZE, "ks_block_smooth_update: the weights are not a local "
                                      "vector of the blocks' %ld rows on their backend",
                         (long)B->n);
    if (!B->be->ops->bsmooth)
        return ks_seterr(KS_ERR_UNSUPPORTED, "ks_block_smooth_update: backend %s has no block "
                                             "smoothing kernel", B->be->ops->name);
    if (B->n == 0)
        return KS_OK;
    return B->be->ops->bsmooth(B->be, B->n, B->k, a, c, w->data, B->data, T ? T->data : NULL,
                               Xin ? Xin->data : NULL, Xprev ? Xprev->data : NULL, Xo->data);
}
