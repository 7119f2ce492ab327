/* Public block-vector API (ks_block_*): argument checks, then the backend's
 * block kernels. As for ks_vec, every block of one operation must live on
 * the same backend object and have the same shape. */
#include "backend.h"
#include "vec_fused.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define OPS(X) ((X)->be->ops)

static ks_error need(const ks_block *X, const char *fn, const char *name)
{
    if (!X)
        return ks_seterr(KS_ERR_ARG, "%s: block %s is NULL", fn, name);
    return KS_OK;
}

static ks_error need_scalars(const double *a, const char *fn, const char *name)
{
    if (!a)
        return ks_seterr(KS_ERR_ARG, "%s: per-column scalar array %s is NULL", fn, name);
    return KS_OK;
}

/* X and Y present, on one backend object, of one shape. */
static ks_error same(const ks_block *X, const ks_block *Y, const char *fn, const char *xn,
                     const char *yn)
{
    KS_TRY(need(X, fn, xn));
    KS_TRY(need(Y, fn, yn));
    if (X->be != Y->be)
        return ks_seterr(KS_ERR_ARG,
                         "%s: blocks %s (backend %s at %p) and %s (backend %s at %p) live on "
                         "different backend objects",
                         fn, xn, X->be->ops->name, (void *)X->be, yn, Y->be->ops->name,
                         (void *)Y->be);
    if (X->n != Y->n || X->k != Y->k)
        return ks_seterr(KS_ERR_SIZE,
                         "%s: shape mismatch: %s is %ld x %d, %s is %ld x %d (rows x columns)",
                         fn, xn, (long)X->n, X->k, yn, (long)Y->n, Y->k);
    return KS_OK;
}

/* v a local vector of X's rows on X's backend. */
static ks_error same_vec(const ks_block *X, const ks_vec *v, const char *fn, const char *vn)
{
    if (!v)
        return ks_seterr(KS_ERR_ARG, "%s: vector %s is NULL", fn, vn);
    if (v->comm)
        return ks_seterr(KS_ERR_UNSUPPORTED,
                         "%s: vector %s is distributed; blocks are local (not yet done "
                         "over MPI)", fn, vn);
    if (v->be != X->be)
        return ks_seterr(KS_ERR_ARG, "%s: vector %s and the block live on different backend "
                                     "objects", fn, vn);
    if (v->n != X->n)
        return ks_seterr(KS_ERR_SIZE, "%s: vector %s has %ld entries, the block %ld rows", fn,
                         vn, (long)v->n, (long)X->n);
    return KS_OK;
}

static ks_error check_col(const ks_block *X, int j, const char *fn)
{
    if (j < 0 || j >= X->k)
        return ks_seterr(KS_ERR_ARG, "%s: column %d out of range (the block has %d)", fn, j,
                         X->k);
    return KS_OK;
}

/* m distinct column numbers of a block of k columns, 1 <= m <= k. */
static ks_error check_cols(int k, int m, const int *cols, const char *fn)
{
    if (!cols)
        return ks_seterr(KS_ERR_ARG, "%s: NULL column list", fn);
    if (m < 1 || m > k)
        return ks_seterr(KS_ERR_ARG, "%s: %d columns asked of a block of %d", fn, m, k);
    unsigned char seen[KS_BLOCK_MAX_COLS] = {0};
    for (int q = 0; q < m; q++) {
        if (cols[q] < 0 || cols[q] >= k)
            return ks_seterr(KS_ERR_ARG, "%s: column %d out of range (the block has %d)", fn,
                             cols[q], k);
        if (seen[cols[q]]++)
            return ks_seterr(KS_ERR_ARG, "%s: column %d listed twice", fn, cols[q]);
    }
    return KS_OK;
}

static size_t bytes_of(const ks_block *X) { return (size_t)X->n * (size_t)X->k * sizeof(double); }

/* ------------------------------------------------------- life cycle */

ks_error ks_block_create(ks_backend *be, ks_int n, int k, ks_block **X)
{
    if (!X)
        return ks_seterr(KS_ERR_ARG, "ks_block_create: NULL output pointer");
    *X = NULL;
    if (!be)
        return ks_seterr(KS_ERR_ARG, "ks_block_create: NULL backend");
    if (n < 0)
        return ks_seterr(KS_ERR_ARG, "ks_block_create: negative size %ld", (long)n);
    if (k < 1 || k > KS_BLOCK_MAX_COLS)
        return ks_seterr(KS_ERR_ARG, "ks_block_create: %d columns (1 to %d allowed)", k,
                         KS_BLOCK_MAX_COLS);
    /* kernels index the n*k entries with ks_int */
    if ((int64_t)n * k > INT32_MAX)
        return ks_seterr(KS_ERR_SIZE, "ks_block_create: %ld rows x %d columns exceed %ld "
                                      "entries", (long)n, k, (long)INT32_MAX);
    if (!be->ops->bdot)
        return ks_seterr(KS_ERR_UNSUPPORTED, "ks_block_create: backend %s has no block "
                                             "kernels", be->ops->name);
    ks_block *w = ks_calloc(1, sizeof *w, "block header");
    if (!w)
        return KS_ERR_MEMORY;
    w->be = be;
    w->n = n;
    w->k = k;
    if (n > 0) {
        ks_error e = ks_be_alloc(be, bytes_of(w), (void **)&w->data, "block vector");
        if (e != KS_OK) {
            free(w);
            return ks_adderr(e, "ks_block_create(n=%ld, k=%d)", (long)n, k);
        }
    }
    *X = w;
    return KS_OK;
}

void ks_block_destroy(ks_block **Xp)
{
    ks_block *X = Xp ? *Xp : NULL;
    if (!X)
        return;
    *Xp = NULL;
    if (X->data)
        X->be->ops->free(X->be, X->data);
    free(X);
}

ks_int ks_block_rows(const ks_block *X) { return X ? X->n : 0; }
int ks_block_cols(const ks_block *X) { return X ? X->k : 0; }
ks_backend *ks_block_backend(const ks_block *X) { return X ? X->be : NULL; }

ks_error ks_block_set_host(ks_block *X, const double *host)
{
    KS_TRY(need(X, "ks_block_set_host", "X"));
    if (X->n == 0)
        return KS_OK;
    if (!host)
        return ks_seterr(KS_ERR_ARG, "ks_block_set_host: NULL host array");
    return OPS(X)->upload(X->be, X->data, host, bytes_of(X));
}

ks_error ks_block_get_host(const ks_block *X, double *host)
{
    KS_TRY(need(X, "ks_block_get_host", "X"));
    if (X->n == 0)
        return KS_OK;
    if (!host)
        return ks_seterr(KS_ERR_ARG, "ks_block_get_host: NULL host array");
    return OPS(X)->download(X->be, host, X->data, bytes_of(X));
}

ks_error ks_block_get_col(const ks_block *X, int j, ks_vec *v)
{
    KS_TRY(need(X, "ks_block_get_col", "X"));
    KS_TRY(same_vec(X, v, "ks_block_get_col", "v"));
    KS_TRY(check_col(X, j, "ks_block_get_col"));
    return X->n ? OPS(X)->bgather(X->be, X->n, X->k, X->data, 1, &j, v->data) : KS_OK;
}

ks_error ks_block_set_col(ks_block *X, int j, const ks_vec *v)
{
    KS_TRY(need(X, "ks_block_set_col", "X"));
    KS_TRY(same_vec(X, v, "ks_block_set_col", "v"));
    KS_TRY(check_col(X, j, "ks_block_set_col"));
    return X->n ? OPS(X)->bscatter(X->be, X->n, 1, v->data, &j, X->k, X->data) : KS_OK;
}

/* -------------------------------------------------- streaming kernels */

ks_error ks_block_fill(ks_block *X, double a)
{
    KS_TRY(need(X, "ks_block_fill", "X"));
    return X->n ? OPS(X)->fill(X->be, X->n * X->k, a, X->data) : KS_OK;
}

ks_error ks_block_copy(const ks_block *X, ks_block *Y)
{
    KS_TRY(same(X, Y, "ks_block_copy", "X", "Y"));
    if (X == Y || X->n == 0)
        return KS_OK;
    return OPS(X)->copy(X->be, Y->data, X->data, bytes_of(X));
}

ks_error ks_block_scale(ks_block *X, const double *a)
{
    KS_TRY(need(X, "ks_block_scale", "X"));
    KS_TRY(need_scalars(a, "ks_block_scale", "a"));
    return X->n ? OPS(X)->baxpby(X->be, X->n, X->k, NULL, NULL, a, X->data) : KS_OK;
}

ks_error ks_block_axpy(const double *a, const ks_block *X, ks_block *Y)
{
    KS_TRY(same(X, Y, "ks_block_axpy", "X", "Y"));
    KS_TRY(need_scalars(a, "ks_block_axpy", "a"));
    double one[KS_BLOCK_MAX_COLS];
    for (int j = 0; j < X->k; j++)
        one[j] = 1.0;
    return X->n ? OPS(X)->baxpby(X->be, X->n, X->k, a, X->data, one, Y->data) : KS_OK;
}

ks_error ks_block_axpby(const double *a, const ks_block *X, const double *b, ks_block *Y)
{
    KS_TRY(same(X, Y, "ks_block_axpby", "X", "Y"));
    KS_TRY(need_scalars(a, "ks_block_axpby", "a"));
    KS_TRY(need_scalars(b, "ks_block_axpby", "b"));
    return X->n ? OPS(X)->baxpby(X->be, X->n, X->k, a, X->data, b, Y->data) : KS_OK;
}

ks_error ks_block_axpbypcz(const double *a, const ks_block *X, const double *b,
                           const ks_block *Y, const double *c, ks_block *Z)
{
    KS_TRY(same(X, Y, "ks_block_axpbypcz", "X", "Y"));
    KS_TRY(same(Y, Z, "ks_block_axpbypcz", "Y", "Z"));
    KS_TRY(need_scalars(a, "ks_block_axpbypcz", "a"));
    KS_TRY(need_scalars(b, "ks_block_axpbypcz", "b"));
    KS_TRY(need_scalars(c, "ks_block_axpbypcz", "c"));
    return X->n ? OPS(X)->baxpbypcz(X->be, X->n, X->k, a, X->data, b, Y->data, c, Z->data)
                : KS_OK;
}

ks_error ks_block_pointwise_mult(const ks_vec *w, const ks_block *X, ks_block *Y)
{
    KS_TRY(same(X, Y, "ks_block_pointwise_mult", "X", "Y"));
    KS_TRY(same_vec(X, w, "ks_block_pointwise_mult", "w"));
    return X->n ? OPS(X)->bpmul(X->be, X->n, X->k, w->data, X->data, Y->data) : KS_OK;
}

/* ----------------------------------------------------------- reductions */

ks_error ks_block_dot(const ks_block *X, const ks_block *Y, double *r)
{
    KS_TRY(same(X, Y, "ks_block_dot", "X", "Y"));
    if (!r)
        return ks_seterr(KS_ERR_ARG, "ks_block_dot: NULL result array");
    for (int j = 0; j < X->k; j++)
        r[j] = 0.0;
    return X->n ? OPS(X)->bdot(X->be, X->n, X->k, X->data, Y->data, r) : KS_OK;
}

/* One column's norm the careful way (ks_vec_norm2 rescales), for columns
 * whose squared sum overflowed or underflowed. */
static ks_error col_norm2(const ks_block *X, int j, double *r)
{
    ks_vec *v = NULL;
    KS_TRY(ks_vec_create(X->be, X->n, &v));
    ks_error e = ks_block_get_col(X, j, v);
    if (e == KS_OK)
        e = ks_vec_norm2(v, r);
    ks_vec_destroy(&v);
    return e;
}

ks_error ks_block_norm2(const ks_block *X, double *r)
{
    KS_TRY(ks_block_dot(X, X, r));
    for (int j = 0; j < X->k; j++) {
        r[j] = sqrt(r[j]);
        if (r[j] == 0.0 || isinf(r[j]))
            KS_TRY(col_norm2(X, j, &r[j]));
    }
    return KS_OK;
}

ks_error ks_block_axpy_norm2(const double *a, const ks_block *X, ks_block *Y, double *r)
{
    KS_TRY(same(X, Y, "ks_block_axpy_norm2", "X", "Y"));
    KS_TRY(need_scalars(a, "ks_block_axpy_norm2", "a"));
    if (!r)
        return ks_seterr(KS_ERR_ARG, "ks_block_axpy_norm2: NULL result array");
    if (!OPS(X)->baxpy_dot || X == Y) {
        KS_TRY(ks_block_axpy(a, X, Y));
        return ks_block_norm2(Y, r);
    }
    for (int j = 0; j < X->k; j++)
        r[j] = 0.0;
    KS_TRY(X->n ? OPS(X)->baxpy_dot(X->be, X->n, X->k, a, X->data, Y->data, r) : KS_OK);
    for (int j = 0; j < X->k; j++) {
        r[j] = sqrt(r[j]);
        if (r[j] == 0.0 || isinf(r[j]))
            KS_TRY(col_norm2(Y, j, &r[j]));
    }
    return KS_OK;
}

ks_error ks_block_axpy_aypx(const double *a, ks_block *P, ks_block *Y, const double *b,
                            const ks_block *Z)
{
    const char *fn = "ks_block_axpy_aypx";
    KS_TRY(same(P, Y, fn, "P", "Y"));
    KS_TRY(same(P, Z, fn, "P", "Z"));
    KS_TRY(need_scalars(a, fn, "a"));
    KS_TRY(need_scalars(b, fn, "b"));
    if (P == Y || P == Z || Y == Z)
        return ks_seterr(KS_ERR_ARG, "%s: P, Y and Z must be distinct blocks", fn);
    if (!OPS(P)->baxpy_aypx) {
        double one[KS_BLOCK_MAX_COLS];
        for (int j = 0; j < P->k; j++)
            one[j] = 1.0;
        KS_TRY(ks_block_axpy(a, P, Y));
        return ks_block_axpby(one, Z, b, P);
    }
    return P->n ? OPS(P)->baxpy_aypx(P->be, P->n, P->k, a, P->data, Y->data, b, Z->data)
                : KS_OK;
}

/* ------------------------------------------------------------ columns */

/* Y (m columns) and columns cols of X (gather_cols, scatter_cols). */
static ks_error check_sub(const ks_block *X, int m, const int *cols, const ks_block *Y,
                          const char *fn)
{
    KS_TRY(need(X, fn, "X"));
    KS_TRY(need(Y, fn, "Y"));
    KS_TRY(check_cols(X->k, m, cols, fn));
    if (Y->be != X->be || Y->n != X->n || Y->k != m)
        return ks_seterr(Y->be != X->be ? KS_ERR_ARG : KS_ERR_SIZE,
                         "%s: Y must be a %ld x %d block on X's backend (is %ld x %d%s)", fn,
                         (long)X->n, m, (long)Y->n, Y->k,
                         Y->be != X->be ? ", on another backend" : "");
    if (X == Y)
        return ks_seterr(KS_ERR_ARG, "%s: X and Y must differ", fn);
    return KS_OK;
}

ks_error ks_block_gather_cols(const ks_block *X, int m, const int *cols, ks_block *Y)
{
    KS_TRY(check_sub(X, m, cols, Y, "ks_block_gather_cols"));
    return X->n ? OPS(X)->bgather(X->be, X->n, X->k, X->data, m, cols, Y->data) : KS_OK;
}

ks_error ks_block_scatter_cols(const ks_block *Y, int m, const int *cols, ks_block *X)
{
    KS_TRY(check_sub(X, m, cols, Y, "ks_block_scatter_cols"));
    return X->n ? OPS(X)->bscatter(X->be, X->n, m, Y->data, cols, X->k, X->data) : KS_OK;
}

/* Into new storage of n*m, then the old freed: the gather cannot run in
 * place (rows overlap as the stride shrinks). */
ks_error ks_block_keep_cols(ks_block *X, int m, const int *cols)
{
    const char *fn = "ks_block_keep_cols";
    KS_TRY(need(X, fn, "X"));
    KS_TRY(check_cols(X->k, m, cols, fn));
    if (X->n == 0 || m == X->k) {
        int ident = 1;
        for (int q = 0; q < m; q++)
            ident &= cols[q] == q;
        if (X->n == 0 || ident) {
            X->k = m;
            return KS_OK;
        }
    }
    double *d = NULL;
    KS_TRY(ks_be_alloc(X->be, (size_t)X->n * (size_t)m * sizeof(double), (void **)&d,
                       "compacted block vector"));
    ks_error e = OPS(X)->bgather(X->be, X->n, X->k, X->data, m, cols, d);
    if (e != KS_OK) {
        OPS(X)->free(X->be, d);
        return e;
    }
    OPS(X)->free(X->be, X->data);
    X->data = d;
    X->k = m;
    return KS_OK;
}
