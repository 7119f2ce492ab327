/* Public vector API: argument checks, then the backend's kernel. Every
 * vector of one operation must live on the same backend object (a cuda
 * backend orders its work on its own stream) and have the same size.
 * Distributed vectors (comm set) must share the comm and the layout, and
 * their reductions end with the comm's combination of the ranks' partial
 * results. */
#include "vec_fused.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------- checks */

static ks_error need(const ks_vec *v, const char *fn, const char *name)
{
    if (!v)
        return ks_seterr(KS_ERR_ARG, "%s: vector %s is NULL", fn, name);
    return KS_OK;
}

static ks_error need_out(const void *p, const char *fn, const char *name)
{
    if (!p)
        return ks_seterr(KS_ERR_ARG, "%s: result pointer %s is NULL", fn, name);
    return KS_OK;
}

/* x and y both local, or both spread over one comm in one layout. Every
 * rank holds the same offsets, so a mismatch is refused on every rank
 * alike (no rank goes on to a reduction the others never join). */
static ks_error same_layout(const ks_vec *x, const ks_vec *y, const char *fn, const char *xn,
                            const char *yn)
{
    if (x->comm != y->comm)
        return ks_seterr(KS_ERR_ARG, "%s: %s is %s, %s is %s", fn, xn,
                         x->comm ? "distributed" : "local", yn,
                         !y->comm ? "local" : x->comm ? "distributed over another ks_comm"
                                                      : "distributed");
    if (!x->comm || x->offsets == y->offsets ||
        !memcmp(x->offsets, y->offsets, ((size_t)x->comm->size + 1) * sizeof *x->offsets))
        return KS_OK;
    const int me = x->comm->rank;
    return ks_seterr(KS_ERR_SIZE,
                     "%s: %s and %s are distributed differently (%s: %lld entries in all, "
                     "%lld on rank %d; %s: %lld in all, %lld on rank %d)",
                     fn, xn, yn, xn, (long long)x->offsets[x->comm->size], (long long)x->n, me,
                     yn, (long long)y->offsets[y->comm->size], (long long)y->n, me);
}

/* x and y both present, on one backend, of one size (and layout). */
static ks_error same(const ks_vec *x, const ks_vec *y, const char *fn, const char *xn,
                     const char *yn)
{
    KS_TRY(need(x, fn, xn));
    KS_TRY(need(y, fn, yn));
    KS_TRY(same_layout(x, y, fn, xn, yn));
    if (x->be != y->be)
        return ks_seterr(KS_ERR_ARG,
                         "%s: vectors %s (backend %s at %p) and %s (backend %s at %p) live on "
                         "different backend objects",
                         fn, xn, x->be->ops->name, (void *)x->be, yn, y->be->ops->name,
                         (void *)y->be);
    if (x->n != y->n)
        return ks_seterr(KS_ERR_SIZE, "%s: size mismatch: %s has %ld entries, %s has %ld", fn,
                         xn, (long)x->n, yn, (long)y->n);
    return KS_OK;
}

#define OPS(v) ((v)->be->ops)

/* A reduction's last step: a distributed vector's partial results r[0..k)
 * combined over the ranks (summed in rank order, or their maximum). Every
 * rank gets here, a rank without entries too, and a rank whose local part
 * failed with e brings NaN, so every rank sees NaN and stops instead of
 * waiting alone in the next collective. */
ks_error ks_vec_check_same(const ks_vec *x, const ks_vec *y, const char *fn, const char *xn,
                           const char *yn)
{
    return same(x, y, fn, xn, yn);
}

static ks_error combine(const ks_vec *v, ks_error e, double *r, int k, int max)
{
    if (!v->comm)
        return e;
    if (e != KS_OK)
        for (int i = 0; i < k; i++)
            r[i] = NAN;
    ks_error ec = max ? v->comm->ops->max(v->comm, r, k) : v->comm->ops->sum(v->comm, r, k);
    return e != KS_OK ? e : ec;
}

/* ------------------------------------------------------- life cycle */

ks_error ks_vec_create(ks_backend *be, ks_int n, ks_vec **v)
{
    if (!v)
        return ks_seterr(KS_ERR_ARG, "ks_vec_create: NULL output pointer");
    *v = NULL;
    if (!be)
        return ks_seterr(KS_ERR_ARG, "ks_vec_create: NULL backend");
    if (n < 0)
        return ks_seterr(KS_ERR_ARG, "ks_vec_create: negative size %ld", (long)n);
    ks_vec *w = ks_calloc(1, sizeof *w, "vector header");
    if (!w)
        return KS_ERR_MEMORY;
    w->be = be;
    w->n = n;
    /* An empty vector has no storage; every kernel returns at once for n == 0. */
    if (n > 0) {
        ks_error e = ks_be_alloc(be, (size_t)n * sizeof(double), (void **)&w->data, "vector");
        if (e != KS_OK) {
            free(w);
            return ks_adderr(e, "ks_vec_create(n=%ld)", (long)n);
        }
    }
    *v = w;
    return KS_OK;
}

void ks_vec_destroy(ks_vec **vp)
{
    ks_vec *v = vp ? *vp : NULL;
    if (!v)
        return;
    *vp = NULL; /* a second destroy of the same handle is a no-op */
    if (v->data)
        v->be->ops->free(v->be, v->data);
    free(v->offsets);
    free(v);
}

ks_int ks_vec_size(const ks_vec *v) { return v ? v->n : 0; }

ks_backend *ks_vec_backend(const ks_vec *v) { return v ? v->be : NULL; }

ks_error ks_vec_set_host(ks_vec *v, const double *host)
{
    KS_TRY(need(v, "ks_vec_set_host", "v"));
    if (v->n == 0)
        return KS_OK;
    if (!host)
        return ks_seterr(KS_ERR_ARG, "ks_vec_set_host: NULL host array");
    return OPS(v)->upload(v->be, v->data, host, (size_t)v->n * sizeof(double));
}

ks_error ks_vec_get_host(const ks_vec *v, double *host)
{
    KS_TRY(need(v, "ks_vec_get_host", "v"));
    if (v->n == 0)
        return KS_OK;
    if (!host)
        return ks_seterr(KS_ERR_ARG, "ks_vec_get_host: NULL host array");
    return OPS(v)->download(v->be, host, v->data, (size_t)v->n * sizeof(double));
}

/* Copies between a vector and memory of its backend (CUDA device memory on
 * cuda, host memory on the cpu backend), through the backend's copy op, for
 * callers that hold their data there already (CuPy arrays from Python). The
 * backend is synchronised after the copy, so the caller may use or free the
 * memory on return whatever stream it works on. */
ks_error ks_vec_set_device(ks_vec *v, const void *src)
{
    KS_TRY(need(v, "ks_vec_set_device", "v"));
    if (v->n == 0)
        return KS_OK;
    if (!src)
        return ks_seterr(KS_ERR_ARG, "ks_vec_set_device: NULL source pointer");
    KS_TRY(OPS(v)->copy(v->be, v->data, src, (size_t)v->n * sizeof(double)));
    return OPS(v)->sync(v->be);
}

ks_error ks_vec_get_device(const ks_vec *v, void *dst)
{
    KS_TRY(need(v, "ks_vec_get_device", "v"));
    if (v->n == 0)
        return KS_OK;
    if (!dst)
        return ks_seterr(KS_ERR_ARG, "ks_vec_get_device: NULL destination pointer");
    KS_TRY(OPS(v)->copy(v->be, dst, v->data, (size_t)v->n * sizeof(double)));
    return OPS(v)->sync(v->be);
}

/* -------------------------------------------------- streaming kernels */

ks_error ks_vec_fill(ks_vec *v, double a)
{
    KS_TRY(need(v, "ks_vec_fill", "v"));
    return v->n ? OPS(v)->fill(v->be, v->n, a, v->data) : KS_OK;
}

ks_error ks_vec_copy(const ks_vec *x, ks_vec *y)
{
    KS_TRY(same(x, y, "ks_vec_copy", "x", "y"));
    if (x == y || x->n == 0)
        return KS_OK;
    return OPS(x)->copy(x->be, y->data, x->data, (size_t)x->n * sizeof(double));
}

ks_error ks_vec_scale(ks_vec *x, double a)
{
    KS_TRY(need(x, "ks_vec_scale", "x"));
    return x->n ? OPS(x)->scale(x->be, x->n, a, x->data) : KS_OK;
}

ks_error ks_vec_axpy(double a, const ks_vec *x, ks_vec *y)
{
    KS_TRY(same(x, y, "ks_vec_axpy", "x", "y"));
    return x->n ? OPS(x)->axpy(x->be, x->n, a, x->data, y->data) : KS_OK;
}

ks_error ks_vec_axpby(double a, const ks_vec *x, double b, ks_vec *y)
{
    KS_TRY(same(x, y, "ks_vec_axpby", "x", "y"));
    return x->n ? OPS(x)->axpby(x->be, x->n, a, x->data, b, y->data) : KS_OK;
}

ks_error ks_vec_pointwise_mult(const ks_vec *w, const ks_vec *x, ks_vec *y)
{
    KS_TRY(same(w, x, "ks_vec_pointwise_mult", "w", "x"));
    KS_TRY(same(x, y, "ks_vec_pointwise_mult", "x", "y"));
    return x->n ? OPS(x)->pmul(x->be, x->n, w->data, x->data, y->data) : KS_OK;
}

ks_error ks_vec_axpbypcz(double a, const ks_vec *x, double b, const ks_vec *y, double c,
                         ks_vec *z)
{
    KS_TRY(same(x, y, "ks_vec_axpbypcz", "x", "y"));
    KS_TRY(same(y, z, "ks_vec_axpbypcz", "y", "z"));
    return x->n ? OPS(x)->axpbypcz(x->be, x->n, a, x->data, b, y->data, c, z->data) : KS_OK;
}

ks_error ks_vec_smooth_update(double a, double c, const ks_vec *w, const ks_vec *r,
                              const ks_vec *xin, const ks_vec *xprev, ks_vec *xout)
{
    KS_TRY(same(w, r, "ks_vec_smooth_update", "w", "r"));
    KS_TRY(same(r, xout, "ks_vec_smooth_update", "r", "xout"));
    if (xin)
        KS_TRY(same(xin, xout, "ks_vec_smooth_update", "xin", "xout"));
    if (xprev)
        KS_TRY(same(xprev, xout, "ks_vec_smooth_update", "xprev", "xout"));
    if (xin == xout && xprev && a != 0.0)
        return ks_seterr(KS_ERR_ARG, "ks_vec_smooth_update: xin and xout must differ when "
                                     "xprev is read");
    return w->n ? OPS(w)->smooth_update(w->be, w->n, a, c, w->data, r->data,
                                        xin ? xin->data : NULL, xprev ? xprev->data : NULL,
                                        xout->data)
                : KS_OK;
}

/* ----------------------------------------------------------- reductions */

ks_error ks_vec_dot(const ks_vec *x, const ks_vec *y, double *r)
{
    KS_TRY(same(x, y, "ks_vec_dot", "x", "y"));
    KS_TRY(need_out(r, "ks_vec_dot", "r"));
    *r = 0.0;
    ks_error e = x->n ? OPS(x)->dot(x->be, x->n, x->data, y->data, r) : KS_OK;
    return combine(x, e, r, 1, 0);
}

ks_error ks_vec_dot2(const ks_vec *x, const ks_vec *y, const ks_vec *u, const ks_vec *v,
                     double r[2])
{
    KS_TRY(same(x, y, "ks_vec_dot2", "x", "y"));
    KS_TRY(same(y, u, "ks_vec_dot2", "y", "u"));
    KS_TRY(same(u, v, "ks_vec_dot2", "u", "v"));
    KS_TRY(need_out(r, "ks_vec_dot2", "r"));
    r[0] = r[1] = 0.0;
    ks_error e = x->n ? OPS(x)->dot2(x->be, x->n, x->data, y->data, u->data, v->data, r) : KS_OK;
    return combine(x, e, r, 2, 0);
}

/* The local sums of ks_vec_mdot (after its checks), chunk by chunk:
 * r[0..k), e on failure. */
static ks_error mdot_local(int k, const ks_vec *const *x, const ks_vec *const *y, double *r)
{
    const ks_vec *v = x[0];
    ks_error e = KS_OK;
    for (int j = 0; j < k; j++)
        r[j] = 0.0;
    const double *xp[KS_VEC_MULTI_MAX], *yp[KS_VEC_MULTI_MAX];
    for (int j0 = 0; j0 < k && v->n && e == KS_OK; j0 += KS_VEC_MULTI_MAX) {
        int kc = k - j0 < KS_VEC_MULTI_MAX ? k - j0 : KS_VEC_MULTI_MAX;
        for (int j = 0; j < kc; j++) {
            xp[j] = x[j0 + j]->data;
            yp[j] = y[j0 + j]->data;
        }
        e = OPS(v)->mdot(v->be, v->n, kc, xp, yp, r + j0);
    }
    return e;
}

/* Every pair checked first: a misfit refuses on every rank before the
 * reduction. */
static ks_error mdot_check(int k, const ks_vec *const *x, const ks_vec *const *y, double *r,
                           const char *fn)
{
    KS_TRY(need_out(r, fn, "r"));
    if (k < 1 || !x || !y)
        return ks_seterr(KS_ERR_ARG, "%s: %d pairs, x list %p, y list %p", fn, k,
                         (const void *)x, (const void *)y);
    for (int j = 0; j < k; j++) {
        KS_TRY(same(x[j], y[j], fn, "x[j]", "y[j]"));
        KS_TRY(same(x[0], x[j], fn, "x[0]", "x[j]"));
    }
    return KS_OK;
}

/* One combination of all k values over the ranks. */
ks_error ks_vec_mdot(int k, const ks_vec *const *x, const ks_vec *const *y, double *r)
{
    KS_TRY(mdot_check(k, x, y, r, "ks_vec_mdot"));
    ks_error e = mdot_local(k, x, y, r);
    return combine(x[0], e, r, k, 0);
}

ks_error ks_vec_mdot_begin(int k, const ks_vec *const *x, const ks_vec *const *y, double *r,
                           ks_vec_pending *p)
{
    if (!p)
        return ks_seterr(KS_ERR_ARG, "ks_vec_mdot_begin: NULL pending record");
    p->comm = NULL;
    p->local = KS_OK;
    KS_TRY(mdot_check(k, x, y, r, "ks_vec_mdot_begin"));
    const ks_vec *v = x[0];
    ks_error e = mdot_local(k, x, y, r);
    const ks_comm *c = v->comm;
    if (!c || !c->ops->sum_begin || k > KS_COMM_SPLIT_MAX) {
        p->local = combine(v, e, r, k, 0);
        return KS_OK;
    }
    if (e != KS_OK) /* the other ranks see NaN, as in combine */
        for (int j = 0; j < k; j++)
            r[j] = NAN;
    KS_TRY(c->ops->sum_begin(c, r, k));
    p->comm = c;
    p->r = r;
    p->k = k;
    p->local = e;
    return KS_OK;
}

ks_error ks_vec_mdot_end(ks_vec_pending *p)
{
    if (!p)
        return ks_seterr(KS_ERR_ARG, "ks_vec_mdot_end: NULL pending record");
    ks_error ec = KS_OK;
    if (p->comm) {
        ec = p->comm->ops->sum_end(p->comm, p->r, p->k);
        p->comm = NULL;
    }
    return p->local != KS_OK ? p->local : ec;
}

ks_error ks_vec_maxpy(int k, const double *a, const ks_vec *const *x, ks_vec *y)
{
    if (k < 1 || !a || !x)
        return ks_seterr(KS_ERR_ARG, "ks_vec_maxpy: %d terms, a %p, x list %p", k,
                         (const void *)a, (const void *)x);
    for (int j = 0; j < k; j++) {
        KS_TRY(same(x[j], y, "ks_vec_maxpy", "x[j]", "y"));
        if (x[j] == y)
            return ks_seterr(KS_ERR_ARG, "ks_vec_maxpy: x[%d] is y", j);
    }
    const double *xp[KS_VEC_MULTI_MAX];
    for (int j0 = 0; j0 < k && y->n; j0 += KS_VEC_MULTI_MAX) {
        int kc = k - j0 < KS_VEC_MULTI_MAX ? k - j0 : KS_VEC_MULTI_MAX;
        for (int j = 0; j < kc; j++)
            xp[j] = x[j0 + j]->data;
        KS_TRY(OPS(y)->maxpy(y->be, y->n, kc, a + j0, xp, y->data));
    }
    return KS_OK;
}

/* ||x||_2 when sqrt(x.x) overflowed to Inf or underflowed to 0 (the fast
 * path costs nothing more otherwise), as LAPACK's dnrm2 avoids both: the
 * entries scaled by 2^-e near 1/max|x_i| (exact), squared and summed, then
 * 2^e sqrt(sum). A copy, so x is untouched; deterministic like the dot. */
static ks_error norm2_rescaled(const ks_vec *x, double *r)
{
    double m = 0.0;
    ks_error e = x->n ? OPS(x)->norminf(x->be, x->n, x->data, &m) : KS_OK;
    KS_TRY(combine(x, e, &m, 1, 1));
    if (!(m > 0.0) || !isfinite(m))
        return KS_OK; /* a zero vector's 0, or Inf / NaN entries: *r stands */
    int ex;
    frexp(m, &ex);
    ex = ex > 1023 ? 1023 : ex < -1022 ? -1022 : ex; /* 2^ex and 2^-ex both normal */
    double s = 0.0, *t = NULL;
    size_t bytes = (size_t)x->n * sizeof(double);
    e = x->n ? ks_be_alloc(x->be, bytes, (void **)&t, "norm scaling vector") : KS_OK;
    if (e == KS_OK && x->n)
        e = OPS(x)->copy(x->be, t, x->data, bytes);
    if (e == KS_OK && x->n)
        e = OPS(x)->scale(x->be, x->n, ldexp(1.0, -ex), t);
    if (e == KS_OK && x->n)
        e = OPS(x)->dot(x->be, x->n, t, t, &s);
    if (t)
        OPS(x)->free(x->be, t);
    KS_TRY(combine(x, e, &s, 1, 0)); /* every rank takes part, as in norm2 */
    *r = ldexp(sqrt(s), ex);
    return KS_OK;
}

ks_error ks_vec_norm2(const ks_vec *x, double *r)
{
    KS_TRY(need(x, "ks_vec_norm2", "x"));
    KS_TRY(need_out(r, "ks_vec_norm2", "r"));
    *r = 0.0;
    double s = 0.0;
    ks_error e = x->n ? OPS(x)->dot(x->be, x->n, x->data, x->data, &s) : KS_OK;
    KS_TRY(combine(x, e, &s, 1, 0)); /* the ranks' squared sums, then one root */
    *r = sqrt(s);
    if (*r == 0.0 || isinf(*r)) /* the same on every rank: s is the combined sum */
        return norm2_rescaled(x, r);
    return KS_OK;
}

ks_error ks_vec_norm1(const ks_vec *x, double *r)
{
    KS_TRY(need(x, "ks_vec_norm1", "x"));
    KS_TRY(need_out(r, "ks_vec_norm1", "r"));
    *r = 0.0;
    ks_error e = x->n ? OPS(x)->norm1(x->be, x->n, x->data, r) : KS_OK;
    return combine(x, e, r, 1, 0);
}

ks_error ks_vec_norminf(const ks_vec *x, double *r)
{
    KS_TRY(need(x, "ks_vec_norminf", "x"));
    KS_TRY(need_out(r, "ks_vec_norminf", "r"));
    *r = 0.0;
    ks_error e = x->n ? OPS(x)->norminf(x->be, x->n, x->data, r) : KS_OK;
    return combine(x, e, r, 1, 1);
}

ks_error ks_vec_axpy_norm2(double a, const ks_vec *x, ks_vec *y, double *r)
{
    KS_TRY(same(x, y, "ks_vec_axpy_norm2", "x", "y"));
    KS_TRY(need_out(r, "ks_vec_axpy_norm2", "r"));
    *r = 0.0;
    if (!y->comm) {
        KS_TRY(x->n ? OPS(x)->axpy_norm2(x->be, x->n, a, x->data, y->data, r) : KS_OK);
        /* the fused squares overflowed or underflowed: the careful norm of y */
        return *r == 0.0 || isinf(*r) ? ks_vec_norm2(y, r) : KS_OK;
    }
    /* Distributed: the ranks' squared sums must be added before the square
     * root, which the fused kernel takes locally; so the update, then the
     * local squared sum (a second pass over y). */
    double s = 0.0;
    ks_error e = x->n ? OPS(x)->axpy(x->be, x->n, a, x->data, y->data) : KS_OK;
    if (e == KS_OK && x->n)
        e = OPS(x)->dot(x->be, x->n, y->data, y->data, &s);
    KS_TRY(combine(y, e, &s, 1, 0));
    *r = sqrt(s);
    return *r == 0.0 || isinf(*r) ? norm2_rescaled(y, r) : KS_OK;
}
