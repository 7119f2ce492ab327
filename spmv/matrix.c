/* The public ks_matrix_* API: validate, pick the format, build its layout
 * and backend state, check operands of every apply. */
#include "csr_layout.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Every matrix gets a fresh id (ks_matrix_id). */
static unsigned long long new_id(void)
{
    static _Atomic unsigned long long next = 1;
    return next++;
}


static ks_error released(const char *fn);

/* "a, b, c" of the formats registered for backend kind k. */
static void list_formats(ks_backend_kind k, char *buf, size_t len)
{
    const ks_spmv_format_ops *const *all = ks_spmv_format_all();
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; all[i]; i++) {
        if (all[i]->backend != k)
            continue;
        int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", all[i]->name);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
    if (!buf[0])
        snprintf(buf, len, "(none)");
}

/* ops for format ("auto" or "" -> the statistics-based choice, with why in
 * reason; reason is "" for a named format). */
static ks_error resolve_format(ks_backend_kind kind, const ks_sparse_stats *st, const char *format,
                               const ks_spmv_format_ops **ops, char *reason, size_t reason_len)
{
    char names[512];
    const char *name = format && format[0] ? format : "auto";
    reason[0] = '\0';
    if (strcmp(name, "auto") == 0) {
        name = ks_spmv_format_auto_stats(st, kind, reason, reason_len);
        if (!name)
            return ks_seterr(KS_ERR_UNSUPPORTED, "no SpMV format for backend %s",
                             ks_backend_kind_name(kind));
    }
    *ops = ks_spmv_format_find(name, kind);
    if (*ops)
        return KS_OK;
    list_formats(kind, names, sizeof names);
    const ks_spmv_format_ops *const *all = ks_spmv_format_all();
    for (int i = 0; all[i]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return ks_seterr(KS_ERR_UNSUPPORTED,
                             "SpMV format '%s' runs on the %s backend, not %s; formats for "
                             "%s: %s, auto",
                             name, ks_backend_kind_name(all[i]->backend),
                             ks_backend_kind_name(kind), ks_backend_kind_name(kind), names);
    ks_backend_kind missing = ks_spmv_format_missing_backend(name);
    if (missing)
        return ks_seterr(KS_ERR_UNSUPPORTED,
                         "SpMV format '%s' needs the %s backend, which this build lacks; "
                         "formats for %s: %s, auto",
                         name, ks_backend_kind_name(missing), ks_backend_kind_name(kind), names);
    return ks_seterr(KS_ERR_ARG, "unknown SpMV format '%s'; formats for %s: %s, auto", name,
                     ks_backend_kind_name(kind), names);
}

/* The host CSR a layout is built from: on host-memory backends A's own
 * arrays (a view), else a copy downloaded for the build (*tmp = 1: the
 * caller frees it after the build). */
static ks_error host_for_layout(const ks_matrix *m, ks_csr *H, int *tmp)
{
    *tmp = 0;
    if (ks_backend_host_memory(m->be)) {
        *H = ks_sparse_as_csr(&m->A);
        return KS_OK;
    }
    if (m->host_owned) { /* a host copy was asked for earlier: current values */
        *H = m->host;
        return KS_OK;
    }
    *tmp = 1;
    return ks_sparse_to_csr(&m->A, H);
}

/* The format's state from m->A: straight from the backend CSR when the
 * format can (and the values are not about to be refused by it), else
 * through its host layout. */
static ks_error build_state_(ks_matrix *m, const ks_spmv_format_ops *ops, void **state,
                             double *bytes)
{
    *state = NULL;
    if (ops->setup_sparse)
        return ops->setup_sparse(m->be, &m->A, &m->params, state, bytes);
    ks_csr H;
    int tmp;
    KS_TRY(host_for_layout(m, &H, &tmp));
    void *layout = NULL;
    ks_error e = ops->layout_build(&H, &m->params, &layout);
    if (e == KS_OK) {
        *bytes = ops->layout_bytes(layout);
        e = ops->setup(m->be, layout, state);
        ops->layout_free(layout);
    }
    if (tmp)
        ks_csr_free(&H);
    return e;
}

/* build_state_, counting what the state holds on the backend: the bytes
 * in use there grew by that much (its temporaries are freed by then), so no
 * format has to count its own arrays. */
static ks_error build_state(ks_matrix *m, const ks_spmv_format_ops *ops, void **state,
                            double *bytes)
{
    const size_t before = ks_backend_memory_in_use(m->be);
    ks_error e = build_state_(m, ops, state, bytes);
    if (e == KS_OK) {
        size_t after = ks_backend_memory_in_use(m->be);
        m->state_bytes = after > before ? (double)(after - before) : 0.0;
    }
    return e;
}

/* "auto" chose a format that refused A (statistics cannot foresee every
 * refusal, e.g. a max_fill the caller lowered): take the format that holds
 * any matrix, csr_vector, and say so in the reason. */
#define KS_AUTO_FALLBACK "csr_vector"
static ks_error auto_fallback(ks_matrix *m, double *bytes)
{
    const ks_spmv_format_ops *fb = ks_spmv_format_find(KS_AUTO_FALLBACK, m->be->ops->kind);
    if (!fb || fb == m->ops)
        return KS_ERR_UNSUPPORTED;
    /* The refusal message goes last: truncation cuts its sizes, not the gist. */
    char why[sizeof m->format_reason];
    int w = snprintf(why, sizeof why, "%s refused, fallback %s: ", m->ops->name, fb->name);
    if (w > 0 && (size_t)w < sizeof why)
        snprintf(why + w, sizeof why - (size_t)w, "%s", ks_last_error());
    ks_error e = build_state(m, fb, &m->state, bytes);
    if (e != KS_OK)
        return e;
    memcpy(m->format_reason, why, sizeof why);
    m->ops = fb;
    ks_clear_error();
    return KS_OK;
}

/* "auto" or a named format from st (the matrix's statistics), with float32
 * values when asked: fills m->ops, m->params, m->format_reason. */
static ks_error choose_format(ks_matrix *m, const ks_sparse_stats *st, const char *format,
                              const ks_spmv_params *params)
{
    ks_backend *be = m->be;
    const ks_spmv_format_ops *ops;
    char reason[sizeof m->format_reason];
    KS_TRY(resolve_format(be->ops->kind, st, format, &ops, reason, sizeof reason));

    ks_spmv_params prm;
    memset(&prm, 0, sizeof prm);
    if (params)
        prm = *params;
    if (prm.float_values && !ops->float_values) {
        /* "auto" keeps bdia (no column indices: 8 bytes a nonzero in
         * float64, what float32 CSR moves), else takes a format that keeps
         * float32 values. */
        const ks_spmv_format_ops *f = ks_spmv_format_float(be->ops->kind, KS_AUTO_FALLBACK);
        int banded = !strcmp(ops->name, "bdia");
        if (!reason[0] || (!banded && (!f || !f->float_values)))
            return ks_seterr(KS_ERR_UNSUPPORTED,
                             "SpMV format '%s' stores float64 values only; float_values needs "
                             "csr (cpu), csr_vector or dia (cuda)",
                             ops->name);
        char why[sizeof reason];
        if (banded) {
            snprintf(why, sizeof why, "%s (float64 values: as few bytes as float32 CSR); %s",
                     ops->name, reason);
            prm.float_values = 0;
        } else {
            snprintf(why, sizeof why, "float32 values: %s (%s would keep float64)", f->name,
                     ops->name);
            ops = f;
        }
        memcpy(reason, why, sizeof reason);
    }
    m->ops = ops;
    m->params = prm;
    snprintf(m->format_reason, sizeof m->format_reason, "%s", reason);
    return KS_OK;
}

/* m->stats, counted unless known: from H, m->A on the host, when the
 * caller has that at hand, else where m->A lives. */
static ks_error matrix_stats(ks_matrix *m, const ks_csr *H)
{
    if (m->stats_known)
        return KS_OK;
    const double fill = ks_spmv_format_auto_dia_fill(m->be->ops->kind, m->A.nrows);
    if (H)
        ks_csr_row_stats(H, fill, &m->stats);
    else
        KS_TRY(ks_sparse_row_stats(&m->A, fill, &m->stats));
    m->stats_known = 1;
    return KS_OK;
}

/* The common tail of the creators: m->A holds the matrix; H is it on the
 * host when the caller has that at hand (NULL: the statistics "auto" reads
 * are counted where the matrix lives, unless m has them already). */
static ks_error finish_create(ks_matrix *m, const ks_csr *H, const char *format,
                              const ks_spmv_params *params)
{
    const int choose = (!format || !format[0] || !strcmp(format, "auto")) &&
                       ks_spmv_format_auto_reads_stats(m->be->ops->kind);
    ks_error e = choose ? matrix_stats(m, H) : KS_OK;
    if (e == KS_OK)
        e = choose_format(m, choose ? &m->stats : NULL, format, params);
    KS_TRY(e);
    /* setup_seconds covers conversion and upload, not validation or the
     * backend CSR every format shares. */
    double t0 = ks_wtime();
    double bytes = 0.0;
    e = build_state(m, m->ops, &m->state, &bytes);
    if (e == KS_ERR_UNSUPPORTED && m->format_reason[0])
        e = auto_fallback(m, &bytes);
    if (e != KS_OK)
        return ks_adderr(e, "SpMV format '%s' on %s", m->ops->name, m->be->ops->name);
    m->bytes_per_apply = bytes;
    KS_TRY(m->be->ops->sync(m->be)); /* count asynchronous uploads in the setup time */
    m->setup_seconds = ks_wtime() - t0;
    if (ks_backend_host_memory(m->be))
        m->host = ks_sparse_as_csr(&m->A);
    return KS_OK;
}

ks_error ks_matrix_create(ks_backend *be, const ks_csr *A, const char *format,
                          const ks_spmv_params *params, ks_matrix **M)
{
    if (!M)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_create: NULL output pointer");
    *M = NULL;
    if (!be || !A)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_create: NULL %s", be ? "matrix" : "backend");
    ks_error e = ks_csr_validate(A);
    if (e != KS_OK)
        return ks_adderr(e, "ks_matrix_create");
    ks_matrix *m = ks_calloc(1, sizeof *m, "ks_matrix");
    if (!m)
        return KS_ERR_MEMORY;
    m->be = be;
    m->id = new_id();
    e = ks_sparse_from_csr(be, A, 0, &m->A);
    m->A.valid = e == KS_OK; /* ks_csr_validate passed above */
    if (e == KS_OK)
        e = finish_create(m, A, format, params);
    if (e != KS_OK) {
        ks_matrix_destroy(&m);
        return ks_adderr(e, "ks_matrix_create");
    }
    *M = m;
    return KS_OK;
}

ks_error ks_matrix_create_device(ks_backend *be, ks_int nrows, ks_int ncols, ks_int nnz,
                                 const ks_int *rowptr, const ks_int *colind, const double *val,
                                 const char *format, const ks_spmv_params *params,
                                 ks_matrix **M)
{
    if (!M)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_create_device: NULL output pointer");
    *M = NULL;
    if (!be)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_create_device: NULL backend");
    if (nrows < 0 || ncols < 0 || nnz < 0)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_create_device: negative size (%ld x %ld, %ld "
                         "nonzeros)", (long)nrows, (long)ncols, (long)nnz);
    if (!rowptr || (nnz > 0 && (!colind || !val)))
        return ks_seterr(KS_ERR_ARG, "ks_matrix_create_device: NULL %s array",
                         !rowptr ? "rowptr" : !colind ? "colind" : "val");
    ks_sparse S;
    KS_TRY(ks_sparse_alloc(be, nrows, ncols, nnz, 0, &S));
    ks_error e = be->ops->copy(be, S.rowptr, rowptr, ((size_t)nrows + 1) * sizeof(ks_int));
    if (e == KS_OK && nnz > 0)
        e = be->ops->copy(be, S.colind, colind, (size_t)nnz * sizeof(ks_int));
    if (e == KS_OK && nnz > 0)
        e = be->ops->copy(be, S.val, val, (size_t)nnz * sizeof(double));
    if (e == KS_OK)
        e = be->ops->sync(be); /* the caller's arrays are free to change on return */
    if (e == KS_OK)
        e = ks_sparse_validate(&S); /* the one structure check, on the backend */
    if (e != KS_OK) {
        ks_sparse_free(&S);
        return ks_adderr(e, "ks_matrix_create_device");
    }
    S.valid = 1;
    e = ks_matrix_create_sparse(be, &S, format, params, M); /* takes S's arrays */
    return e == KS_OK ? KS_OK : ks_adderr(e, "ks_matrix_create_device");
}

ks_error ks_matrix_create_sparse(ks_backend *be, ks_sparse *A, const char *format,
                                 const ks_spmv_params *params, ks_matrix **M)
{
    if (!M)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_create_sparse: NULL output pointer");
    *M = NULL;
    if (!be || !A || A->be != be || !A->val) {
        ks_sparse_free(A);
        return ks_seterr(KS_ERR_ARG, "ks_matrix_create_sparse: %s",
                         !be || !A ? "NULL argument"
                         : A->be != be ? "the CSR lives on another backend object"
                                       : "the CSR has no values");
    }
    ks_matrix *m = ks_calloc(1, sizeof *m, "ks_matrix");
    if (!m) {
        ks_sparse_free(A);
        return KS_ERR_MEMORY;
    }
    m->be = be;
    m->id = new_id();
    m->A = *A;
    memset(A, 0, sizeof *A);
    ks_error e = finish_create(m, NULL, format, params);
    if (e != KS_OK) {
        ks_matrix_destroy(&m);
        return e;
    }
    *M = m;
    return KS_OK;
}

/* A view of A; "auto" takes the statistics of *of (counted there first
 * when it has none) when of is not NULL. */
static ks_error create_view(const char *fn, ks_backend *be, const ks_sparse *A, ks_matrix *of,
                            const char *format, const ks_spmv_params *params, ks_matrix **M)
{
    if (!M)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output pointer", fn);
    *M = NULL;
    if (!be || !A || A->be != be || !A->val)
        return ks_seterr(KS_ERR_ARG, "%s: %s", fn,
                         !be || !A ? "NULL argument"
                         : A->be != be ? "the CSR lives on another backend object"
                                       : "the CSR has no values");
    const int choose = (!format || !format[0] || !strcmp(format, "auto")) &&
                       ks_spmv_format_auto_reads_stats(be->ops->kind);
    if (of && choose)
        KS_TRY(matrix_stats(of, NULL));
    ks_matrix *m = ks_calloc(1, sizeof *m, "ks_matrix");
    if (!m)
        return KS_ERR_MEMORY;
    m->be = be;
    m->id = new_id();
    m->A = *A;
    m->A_borrowed = 1;
    if (of && of->stats_known) {
        m->stats = of->stats;
        m->stats_known = 1;
    }
    ks_error e = finish_create(m, NULL, format, params);
    if (e != KS_OK) {
        ks_matrix_destroy(&m);
        return e;
    }
    *M = m;
    return KS_OK;
}

ks_error ks_matrix_create_view(ks_backend *be, const ks_sparse *A, const char *format,
                               const ks_spmv_params *params, ks_matrix **M)
{
    return create_view("ks_matrix_create_view", be, A, NULL, format, params, M);
}

ks_error ks_matrix_create_view_of(const ks_matrix *M, const char *format,
                                  const ks_spmv_params *params, ks_matrix **V)
{
    if (!M) {
        if (V)
            *V = NULL;
        return ks_seterr(KS_ERR_ARG, "ks_matrix_create_view_of: NULL matrix");
    }
    if (M->values_released) {
        if (V)
            *V = NULL;
        return released("ks_matrix_create_view_of");
    }
    /* The statistics are a cache of M's pattern, as ks_matrix_host_csr's
     * copy is: M's const is for callers. */
    return create_view("ks_matrix_create_view_of", M->be, &M->A, (ks_matrix *)M, format, params,
                       V);
}

void ks_matrix_destroy(ks_matrix **Mp)
{
    ks_matrix *M = Mp ? *Mp : NULL;
    if (!M)
        return;
    *Mp = NULL; /* a second destroy of the same handle is a no-op */
    if (M->state)
        M->ops->destroy(M->be, M->state);
    if (M->host_owned)
        ks_csr_free(&M->host);
    if (!M->A_borrowed)
        ks_sparse_free(&M->A);
    if (M->dist)
        M->dist->ops->destroy(M->dist);
    free(M);
}

ks_error ks_matrix_wrap_dist(ks_matrix_dist *d, ks_matrix **M)
{
    *M = NULL;
    ks_matrix *m = ks_calloc(1, sizeof *m, "ks_matrix");
    if (!m) {
        d->ops->destroy(d);
        return KS_ERR_MEMORY;
    }
    const ks_matrix *L = d->local;
    /* A view of the local block: what reads the matrix's CSR (Jacobi's
     * diagonal) sees this rank's rows and owned columns. */
    m->be = L->be;
    m->ops = L->ops;
    m->params = L->params;
    m->A = L->A;
    m->A_borrowed = 1;
    m->id = new_id();
    /* On a host-memory backend the whole matrix's CSR is the local block's
     * (a view). On a device backend nothing is copied here: a host copy is
     * made on the first ks_matrix_host_csr and freed with the matrix. */
    if (ks_backend_host_memory(L->be)) {
        const ks_csr *H = ks_matrix_host_csr(L);
        if (H)
            m->host = *H;
    }
    m->bytes_per_apply = L->bytes_per_apply + (d->ghost ? d->ghost->bytes_per_apply : 0.0);
    m->setup_seconds = L->setup_seconds + (d->ghost ? d->ghost->setup_seconds : 0.0);
    memcpy(m->format_reason, L->format_reason, sizeof m->format_reason);
    m->dist = d;
    *M = m;
    return KS_OK;
}

ks_error ks_matrix_apply(ks_matrix *M, double alpha, const ks_vec *x, double beta, ks_vec *y)
{
    if (!M || !x || !y)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_apply: NULL %s",
                         !M ? "matrix" : !x ? "x" : "y");
    if (M->dist)
        return ks_matrix_dist_apply(M, alpha, x, beta, y);
    if (x->be != M->be || y->be != M->be)
        return ks_seterr(KS_ERR_ARG,
                         "ks_matrix_apply: %s is on another backend object than the matrix",
                         x->be != M->be ? "x" : "y");
    if (x->n != M->A.ncols)
        return ks_seterr(KS_ERR_SIZE, "ks_matrix_apply: x has %d entries, matrix has %d columns",
                         (int)x->n, (int)M->A.ncols);
    if (y->n != M->A.nrows)
        return ks_seterr(KS_ERR_SIZE, "ks_matrix_apply: y has %d entries, matrix has %d rows",
                         (int)y->n, (int)M->A.nrows);
    if (x == y || (x->data == y->data && x->n > 0))
        return ks_seterr(KS_ERR_ARG, "ks_matrix_apply: x and y must be distinct vectors");
    if (M->A.nrows == 0)
        return KS_OK;
    if (!M->state)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_apply: the matrix has no SpMV state (a "
                                     "failed change of values)");
    ks_error e = M->ops->apply(M->be, M->state, alpha, x->data, beta, y->data);
    if (e != KS_OK)
        return ks_adderr(e, "SpMV format '%s'", M->ops->name);
    return KS_OK;
}

/* Rebuild the state from A's current values; the old state goes only when
 * the new one stands. */
static ks_error rebuild_state(ks_matrix *M)
{
    double t0 = ks_wtime(), bytes = 0.0;
    void *state = NULL;
    ks_error e = build_state(M, M->ops, &state, &bytes);
    if (e != KS_OK)
        ks_adderr(e, "SpMV format '%s' setup on %s", M->ops->name, M->be->ops->name);
    if (e == KS_OK)
        e = M->be->ops->sync(M->be);
    if (e != KS_OK) {
        if (state)
            M->ops->destroy(M->be, state);
        return e;
    }
    if (M->state)
        M->ops->destroy(M->be, M->state);
    M->state = state;
    M->setup_seconds = ks_wtime() - t0;
    return KS_OK;
}

/* First entry of val that is not finite (nnz when all are). */
static ks_int first_nonfinite(const double *val, ks_int nnz)
{
    for (ks_int k = 0; k < nnz; k++)
        if (!isfinite(val[k]))
            return k;
    return nnz;
}

/* Values changed in place: a distributed matrix's sit in two blocks, in
 * another order than the caller's (ks_matrix_set_values takes them). */
static ks_error not_dist(const char *fn)
{
    return ks_seterr(KS_ERR_UNSUPPORTED, "%s: not yet for a distributed matrix", fn);
}

static ks_error released(const char *fn)
{
    return ks_seterr(KS_ERR_ARG, "%s: the matrix's values were released "
                                 "(ks_matrix_acquire_values first)", fn);
}

/* The error for the non-finite host value val[bad], naming its row and
 * column. */
static ks_error nonfinite_value(const ks_matrix *M, const char *fn, const double *val, ks_int bad)
{
    ks_csr H;
    int tmp;
    ks_int row = 0, col = -1;
    if (host_for_layout(M, &H, &tmp) == KS_OK) {
        while (H.rowptr[row + 1] <= bad)
            row++;
        col = H.colind[bad];
        if (tmp)
            ks_csr_free(&H);
    }
    return ks_seterr(KS_ERR_NUMERIC, "%s: value %ld (row %ld, column %ld) is %g", fn, (long)bad,
                     (long)row, (long)col, val[bad]);
}

/* KS_OK when the nnz values at val (in the backend's memory when
 * on_backend) are all finite; else the error naming the first bad one.
 * Device values are checked by their max norm (NaN and Inf survive it),
 * and looked at on the host only when that says one is bad. */
static ks_error values_finite(const ks_matrix *M, const char *fn, const void *val, int on_backend)
{
    const ks_int nnz = M->A.nnz;
    ks_backend *be = M->be;
    if (!on_backend || ks_backend_host_memory(be)) {
        const ks_int bad = first_nonfinite(val, nnz);
        return bad < nnz ? nonfinite_value(M, fn, val, bad) : KS_OK;
    }
    double r = 0.0;
    if (nnz > 0)
        KS_TRY(be->ops->norminf(be, nnz, val, &r));
    if (isfinite(r))
        return KS_OK;
    double *h = ks_malloc((size_t)nnz * sizeof(double), "values to check");
    if (!h)
        return KS_ERR_MEMORY;
    ks_error e = be->ops->download(be, h, val, (size_t)nnz * sizeof(double));
    if (e == KS_OK)
        e = nonfinite_value(M, fn, h, first_nonfinite(h, nnz));
    free(h);
    return e;
}

/* ks_matrix_set_values and ks_matrix_set_values_device: val in host memory
 * or in the backend's (on_backend). */
static ks_error set_values(ks_matrix *M, const void *val, int on_backend, const char *fn)
{
    if (M && M->dist) { /* the blocks' values in the caller's order: mpi/ */
        ks_error e = M->dist->ops->set_values(M->dist, val, on_backend, fn);
        /* the blocks drop their own host copies; this one (ks_matrix_host_csr
         * of the whole matrix on a device backend) would keep the old values */
        if (e == KS_OK && M->host_owned) {
            ks_csr_free(&M->host);
            M->host_owned = 0;
        }
        return e;
    }
    if (!M || (!val && M->A.nnz > 0))
        return ks_seterr(KS_ERR_ARG, "%s: NULL %s", fn, M ? "values" : "matrix");
    if (M->values_released)
        return released(fn);
    const ks_int nnz = M->A.nnz;
    const size_t bytes = (size_t)nnz * sizeof(double);
    KS_TRY(values_finite(M, fn, val, on_backend));
    /* Most formats keep their own copies in their own layouts (padded,
     * sliced, permuted, float32, on the device), so the state is rebuilt
     * from the CSR with the new values. The old values come back on
     * failure so M stays consistent, except when val is the CSR's own
     * array (the caller wrote there: nothing to restore; the state is then
     * dropped on failure, as ks_matrix_values_changed does). */
    const int inplace = val == (const void *)M->A.val;
    double *old = NULL;
    ks_backend *be = M->be;
    if (!inplace && nnz > 0) {
        KS_TRY(ks_be_alloc(be, bytes, (void **)&old, "previous matrix values"));
        ks_error e = be->ops->copy(be, old, M->A.val, bytes);
        if (e == KS_OK)
            e = on_backend                    ? be->ops->copy(be, M->A.val, val, bytes)
                : ks_backend_host_memory(be) ? (memcpy(M->A.val, val, bytes), KS_OK)
                                             : be->ops->upload(be, M->A.val, val, bytes);
        if (e != KS_OK) {
            be->ops->free(be, old);
            return ks_adderr(e, "%s", fn);
        }
    }
    if (inplace)
        return ks_matrix_values_changed(M);
    ks_error e = KS_OK;
    if (M->host_owned && nnz > 0)
        e = on_backend ? be->ops->download(be, M->host.val, M->A.val, bytes)
                       : (memcpy(M->host.val, val, bytes), KS_OK);
    if (e == KS_OK)
        e = rebuild_state(M);
    if (e != KS_OK && old) {
        (void)be->ops->copy(be, M->A.val, old, bytes);
        if (M->host_owned)
            (void)be->ops->download(be, M->host.val, old, bytes);
    }
    if (old)
        be->ops->free(be, old);
    return e;
}

ks_error ks_matrix_set_values(ks_matrix *M, const double *val)
{
    return set_values(M, val, 0, "ks_matrix_set_values");
}

ks_error ks_matrix_set_values_device(ks_matrix *M, const void *val)
{
    return set_values(M, val, 1, "ks_matrix_set_values_device");
}

double *ks_matrix_values(ks_matrix *M) { return M && !M->dist ? M->A.val : NULL; }

ks_error ks_matrix_release_values(ks_matrix *M, int *rel)
{
    *rel = 0;
    if (!M || M->A_borrowed || M->values_released || !M->state || !M->A.val ||
        !M->ops->reads_values || M->ops->reads_values(M->state))
        return KS_OK;
    if (M->host_owned) { /* a cache of the values too */
        ks_csr_free(&M->host);
        M->host_owned = 0;
    }
    M->be->ops->free(M->be, M->A.val);
    M->A.val = NULL;
    M->host.val = NULL; /* host-memory backends: host views A */
    M->values_released = 1;
    *rel = 1;
    return KS_OK;
}

ks_error ks_matrix_acquire_values(ks_matrix *M, double **val)
{
    *val = NULL;
    if (!M)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_acquire_values: NULL matrix");
    if (M->values_released) {
        KS_TRY(ks_be_alloc(M->be, (size_t)M->A.nnz * sizeof(double) + 1, (void **)&M->A.val,
                           "matrix values"));
        if (ks_backend_host_memory(M->be))
            M->host.val = M->A.val;
        M->values_released = 0;
    }
    *val = M->A.val;
    return KS_OK;
}

ks_error ks_matrix_values_changed(ks_matrix *M)
{
    if (!M)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_values_changed: NULL matrix");
    if (M->dist)
        return not_dist("ks_matrix_values_changed");
    if (M->values_released)
        return released("ks_matrix_values_changed");
    if (M->host_owned && M->A.nnz > 0)
        KS_TRY(M->be->ops->download(M->be, M->host.val, M->A.val,
                                    (size_t)M->A.nnz * sizeof(double)));
    ks_error e = rebuild_state(M);
    if (e != KS_OK && M->state) {
        /* the state holds the old values: unusable with the new ones */
        M->ops->destroy(M->be, M->state);
        M->state = NULL;
    }
    return e;
}

ks_int ks_matrix_rows(const ks_matrix *M) { return M ? M->A.nrows : 0; }
ks_int ks_matrix_cols(const ks_matrix *M) { return M ? M->A.ncols : 0; }
ks_int ks_matrix_nnz(const ks_matrix *M)
{
    if (M && M->dist && M->dist->ghost)
        return M->A.nnz + M->dist->ghost->A.nnz;
    return M ? M->A.nnz : 0;
}
const char *ks_matrix_format(const ks_matrix *M) { return M ? M->ops->name : NULL; }
const char *ks_matrix_format_reason(const ks_matrix *M) { return M ? M->format_reason : ""; }
ks_backend *ks_matrix_backend(const ks_matrix *M) { return M ? M->be : NULL; }
double ks_matrix_bytes_per_apply(const ks_matrix *M) { return M ? M->bytes_per_apply : 0.0; }
double ks_matrix_setup_seconds(const ks_matrix *M) { return M ? M->setup_seconds : 0.0; }
const ks_sparse *ks_matrix_sparse(const ks_matrix *M) { return M ? &M->A : NULL; }
/* A distributed matrix has neither: its passes would need the halo. */
int ks_matrix_has_gs_sweep(const ks_matrix *M)
{
    if (M && M->dist) /* square: the sweep updates x by its own rows */
        return M->dist->ops->gs_sweep && !M->dist->col_offsets &&
               ks_matrix_has_gs_sweep(M->dist->local);
    return M && M->ops->gs_sweep != NULL;
}
int ks_matrix_has_fused_step(const ks_matrix *M)
{
    if (!M)
        return 0;
    if (!M->dist)
        return M->ops->fused_step != NULL;
    /* Distributed: the local block's pass beside the halo, then the ghost
     * block's share (ks_dist_ops.fused_step). */
    const ks_matrix_dist *d = M->dist;
    return d->ops->fused_step && d->local->ops->fused_step &&
           (!d->ghost || d->ghost->ops->fused_ghost);
}
int ks_matrix_float_values(const ks_matrix *M) { return M && M->params.float_values; }
const void *ks_matrix_storage_id(const ks_matrix *M)
{
    return !M ? NULL : M->dist ? (const void *)M->dist : M->state;
}
unsigned long long ks_matrix_id(const ks_matrix *M) { return M ? M->id : 0; }

const ks_csr *ks_matrix_host_csr(const ks_matrix *M)
{
    if (!M)
        return NULL;
    if (M->values_released) {
        (void)released("ks_matrix_host_csr");
        return NULL;
    }
    if (ks_backend_host_memory(M->be) || M->host_owned)
        return &M->host;
    /* A device matrix: a host copy now, kept (and kept current) from here
     * on. The accessor's const is for callers; the copy is a cache. */
    ks_matrix *m = (ks_matrix *)M;
    if (ks_sparse_to_csr(&m->A, &m->host) != KS_OK)
        return NULL;
    m->host_owned = 1;
    return &m->host;
}

void ks_matrix_host_csr_free(ks_matrix *M)
{
    if (!M)
        return;
    if (M->host_owned) {
        ks_csr_free(&M->host);
        M->host_owned = 0;
    }
    if (M->dist) {
        ks_matrix_host_csr_free(M->dist->local);
        ks_matrix_host_csr_free(M->dist->ghost);
    }
}

ks_error ks_matrix_gs_sweep(const ks_matrix *M, const ks_vec *b, ks_vec *x, int reverse)
{
    if (!M || !b || !x)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_gs_sweep: NULL argument");
    if (M->dist)
        return ks_matrix_dist_gs_sweep(M, b, x, reverse);
    if (!M->ops->gs_sweep)
        return ks_seterr(KS_ERR_UNSUPPORTED, "SpMV format '%s' has no Gauss-Seidel sweep",
                         M->ops->name);
    if (b->be != M->be || x->be != M->be || b->n != M->A.nrows || x->n != M->A.nrows ||
        M->A.nrows != M->A.ncols)
        return ks_seterr(KS_ERR_SIZE, "ks_matrix_gs_sweep: vectors must match the square "
                                      "matrix and live on its backend object");
    return M->ops->gs_sweep(M->be, M->state, b->data, x->data, reverse);
}

double ks_matrix_memory_bytes(const ks_matrix *M)
{
    if (!M)
        return 0.0;
    if (M->dist)
        return ks_matrix_memory_bytes(M->dist->local) + ks_matrix_memory_bytes(M->dist->ghost) +
               M->dist->halo_bytes;
    double b = M->A_borrowed ? 0.0 : ks_sparse_bytes(&M->A);
    if (!M->state)
        return b;
    /* The format's own arrays: as it counts them, else what its setup
     * allocated on the backend. */
    return b + (M->ops->state_bytes ? M->ops->state_bytes(M->state) : M->state_bytes);
}
