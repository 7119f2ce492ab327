/* Fused vector operations for the Krylov methods: one pass over memory
 * where the public API would need two. Same argument checks as ks_vec_*.
 * Not installed. */
#ifndef KS_VEC_FUSED_H
#define KS_VEC_FUSED_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The checks every operation on x and y makes (present, one backend, one
 * size and layout), alone: for callers that must refuse on every rank alike
 * before a collective reduction. */
ks_error ks_vec_check_same(const ks_vec *x, const ks_vec *y, const char *fn, const char *xn,
                           const char *yn);
/* r[0] = x.y and r[1] = u.v */
ks_error ks_vec_dot2(const ks_vec *x, const ks_vec *y, const ks_vec *u, const ks_vec *v,
                     double r[2]);
/* r[j] = x[j].y[j] for j < k: one pass over the vectors (in chunks of
 * KS_VEC_MULTI_MAX) and, for distributed vectors, one reduction of the k
 * values over the ranks. Each r[j] has the bits ks_vec_dot(x[j], y[j])
 * gives. */
ks_error ks_vec_mdot(int k, const ks_vec *const *x, const ks_vec *const *y, double *r);
/* ks_vec_mdot in two halves, so that work (a preconditioner, an SpMV)
 * runs while distributed vectors' sums travel between the ranks: begin
 * computes the local sums and starts their combination, end finishes it
 * and r holds what ks_vec_mdot gives (the same bits). Every begin that
 * returns KS_OK must be followed by its end, on every rank, before the
 * comm's next reduction (one pending at a time); a local failure in begin
 * is reported by end. Local vectors, a comm without split sums, or k >
 * KS_COMM_SPLIT_MAX: begin does it all. */
typedef struct ks_vec_pending {
    const ks_comm *comm; /* a split sum in flight on it, else NULL */
    double *r;
    int k;
    ks_error local; /* begin's local outcome */
} ks_vec_pending;
ks_error ks_vec_mdot_begin(int k, const ks_vec *const *x, const ks_vec *const *y, double *r,
                           ks_vec_pending *p);
ks_error ks_vec_mdot_end(ks_vec_pending *p);
/* y += sum_{j<k} a[j] x[j] in one pass (per chunk of KS_VEC_MULTI_MAX). */
ks_error ks_vec_maxpy(int k, const double *a, const ks_vec *const *x, ks_vec *y);
/* z = a x + b y + c z */
ks_error ks_vec_axpbypcz(double a, const ks_vec *x, double b, const ks_vec *y, double c,
                         ks_vec *z);
/* y += a x, then *r = ||y||_2 */
ks_error ks_vec_axpy_norm2(double a, const ks_vec *x, ks_vec *y, double *r);
/* Y[:,j] += a[j] X[:,j], then r[j] = ||Y[:,j]||_2: ks_block_axpy and
 * ks_block_norm2 in one pass over Y where the backend has the fused kernel
 * (the same bits either way; a column whose squared sum over- or
 * underflowed gets the careful norm, as ks_block_norm2). The block Krylov
 * methods' ks_vec_axpy_norm2. */
ks_error ks_block_axpy_norm2(const double *a, const ks_block *X, ks_block *Y, double *r);
/* Y[:,j] += a[j] P[:,j], then P[:,j] = Z[:,j] + b[j] P[:,j]: ks_block_axpy
 * and ks_block_axpby(1, Z, b, P) in one pass over P where the backend has
 * the fused kernel (the same bits either way). Block CG's x update, put
 * off to its next search direction. Y, P, Z distinct. */
ks_error ks_block_axpy_aypx(const double *a, ks_block *P, ks_block *Y, const double *b,
                            const ks_block *Z);
/* xout = xin + c (w .* r) + a (xin - xprev), see backend.h (xin, xprev
 * may be NULL: zero). */
ks_error ks_vec_smooth_update(double a, double c, const ks_vec *w, const ks_vec *r,
                              const ks_vec *xin, const ks_vec *xprev, ks_vec *xout);

#ifdef __cplusplus
}
#endif
#endif
