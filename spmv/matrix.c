/* The public ks_matrix_* API: validate, pick the format, build its layout
 * and backend state, check operands of every apply. */
#include "csr_layout.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *kind_name(ks_backend_kind k)
{
    return k == KS_BACKEND_CUDA ? "cuda" : k == KS_BACKEND_CPU ? "cpu" : "unknown";
}

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
static ks_error resolve_format(ks_backend_kind kind, const ks_csr *A, const char *format,
                               const ks_spmv_format_ops **ops, char *reason, size_t reason_len)
{
    char names[512];
    const char *name = format && format[0] ? format : "auto";
    reason[0] = '\0';
    if (strcmp(name, "auto") == 0) {
        name = ks_spmv_format_auto_reason(A, kind, reason, reason_len);
        if (!name)
            return ks_seterr(KS_ERR_UNSUPPORTED, "no SpMV format for backend %s",
                             kind_name(kind));
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
                             name, kind_name(all[i]->backend), kind_name(kind), kind_name(kind),
                             names);
    ks_backend_kind missing = ks_spmv_format_missing_backend(name);
    if (missing)
        return ks_seterr(KS_ERR_UNSUPPORTED,
                         "SpMV format '%s' needs the %s backend, which this build lacks; "
                         "formats for %s: %s, auto",
                         name, kind_name(missing), kind_name(kind), names);
    return ks_seterr(KS_ERR_ARG, "unknown SpMV format '%s'; formats for %s: %s, auto", name,
                     kind_name(kind), names);
}

/* "auto" chose a format whose layout refused A (statistics cannot foresee
 * every refusal, e.g. a max_fill the caller lowered): take the format that
 * holds any matrix, csr_vector, and say so in the reason. */
#define KS_AUTO_FALLBACK "csr_vector"
static ks_error auto_fallback(ks_matrix *m, const ks_spmv_params *prm, void **layout)
{
    const ks_spmv_format_ops *fb = ks_spmv_format_find(KS_AUTO_FALLBACK, m->be->ops->kind);
    if (!fb || fb == m->ops)
        return KS_ERR_UNSUPPORTED;
    /* The refusal message goes last: truncation cuts its sizes, not the gist. */
    char why[sizeof m->format_reason];
    int w = snprintf(why, sizeof why, "%s refused, fallback %s: ", m->ops->name, fb->name);
    if (w > 0 && (size_t)w < sizeof why)
        snprintf(why + w, sizeof why - (size_t)w, "%s", ks_last_error());
    ks_error e = fb->layout_build(&m->host, prm, layout);
    if (e != KS_OK)
        return e;
    memcpy(m->format_reason, why, sizeof why);
    m->ops = fb;
    ks_clear_error();
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
        return ks_adderr(e, "ks_matrix_create: invalid CSR");

    const ks_spmv_format_ops *ops;
    char reason[sizeof ((ks_matrix *)0)->format_reason];
    KS_TRY(resolve_format(be->ops->kind, A, format, &ops, reason, sizeof reason));

    ks_spmv_params prm;
    memset(&prm, 0, sizeof prm);
    if (params)
        prm = *params;
    if (prm.float_values && !ops->float_values) {
        /* "auto" keeps bdia (no column indices: 8 bytes a nonzero in
         * float64, what float32 CSR moves), else takes a format that keeps
         * float32 values. */
        const ks_spmv_format_ops *f = ks_spmv_format_find(
            be->ops->kind == KS_BACKEND_CUDA ? KS_AUTO_FALLBACK : "csr", be->ops->kind);
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

    ks_matrix *m = ks_calloc(1, sizeof *m, "ks_matrix");
    if (!m)
        return KS_ERR_MEMORY;
    m->be = be;
    m->ops = ops;
    m->params = prm;
    snprintf(m->format_reason, sizeof m->format_reason, "%s", reason);
    e = ks_csr_copy(A, &m->host);
    if (e != KS_OK) {
        free(m);
        return ks_adderr(e, "ks_matrix_create: copying the CSR");
    }

    /* setup_seconds covers conversion and upload, not validation or the
     * host copy every format shares. */
    double t0 = ks_wtime();
    void *layout = NULL;
    e = ops->layout_build(&m->host, &prm, &layout);
    if (e == KS_ERR_UNSUPPORTED && reason[0])
        e = auto_fallback(m, &prm, &layout);
    if (e != KS_OK) {
        ks_adderr(e, "SpMV format '%s'", m->ops->name);
        goto fail;
    }
    ops = m->ops;
    m->bytes_per_apply = ops->layout_bytes(layout);
    e = ops->setup(be, layout, &m->state);
    ops->layout_free(layout);
    if (e != KS_OK) {
        ks_adderr(e, "SpMV format '%s' setup on %s", ops->name, be->ops->name);
        goto fail;
    }
    e = be->ops->sync(be); /* count asynchronous uploads in the setup time */
    if (e != KS_OK)
        goto fail;
    m->setup_seconds = ks_wtime() - t0;
    *M = m;
    return KS_OK;

fail:
    if (m->state)
        ops->destroy(be, m->state);
    ks_csr_free(&m->host);
    free(m);
    return e;
}

void ks_matrix_destroy(ks_matrix *M)
{
    if (!M)
        return;
    if (M->state)
        M->ops->destroy(M->be, M->state);
    ks_csr_free(&M->host);
    free(M);
}

ks_error ks_matrix_apply(ks_matrix *M, double alpha, const ks_vec *x, double beta, ks_vec *y)
{
    if (!M || !x || !y)
        return ks_seterr(KS_ERR_ARG, "ks_matrix_apply: NULL %s",
                         !M ? "matrix" : !x ? "x" : "y");
    if (x->be != M->be || y->be != M->be)
        return ks_seterr(KS_ERR_ARG,
                         "ks_matrix_apply: %s is on another backend object than the matrix",
                         x->be != M->be ? "x" : "y");
    if (x->n != M->host.ncols)
        return ks_seterr(KS_ERR_SIZE, "ks_matrix_apply: x has %d entries, matrix has %d columns",
                         (int)x->n, (int)M->host.ncols);
    if (y->n != M->host.nrows)
        return ks_seterr(KS_ERR_SIZE, "ks_matrix_apply: y has %d entries, matrix has %d rows",
                         (int)y->n, (int)M->host.nrows);
    if (x == y || (x->data == y->data && x->n > 0))
        return ks_seterr(KS_ERR_ARG, "ks_matrix_apply: x and y must be distinct vectors");
    if (M->host.nrows == 0)
        return KS_OK;
    ks_error e = M->ops->apply(M->be, M->state, alpha, x->data, beta, y->data);
    if (e != KS_OK)
        return ks_adderr(e, "SpMV format '%s'", M->ops->name);
    return KS_OK;
}

ks_error ks_matrix_set_values(ks_matrix *M, const double *val)
{
    if (!M || (!val && M->host.nnz > 0))
        return ks_seterr(KS_ERR_ARG, "ks_matrix_set_values: NULL %s", M ? "values" : "matrix");
    ks_int nnz = M->host.nnz;
    for (ks_int k = 0; k < nnz; k++)
        if (!isfinite(val[k])) {
            ks_int row = 0;
            while (M->host.rowptr[row + 1] <= k)
                row++;
            return ks_seterr(KS_ERR_NUMERIC,
                             "ks_matrix_set_values: value %ld (row %ld, column %ld) is %g",
                             (long)k, (long)row, (long)M->host.colind[k], val[k]);
        }
    /* Most formats keep their own copies in their own layouts (padded,
     * sliced, permuted, float32, on the device), so the backend state is
     * rebuilt from the host CSR with the new values: the same path as
     * ks_matrix_create, minus validation and format choice. The old values
     * come back on failure so M stays consistent, except when val is the
     * host CSR's own array (AMG re-setup writes the values there first):
     * then there is nothing to restore, and a caller that gets an error
     * must not use M's backend state any more (the AMG hierarchy is
     * dropped). */
    const int inplace = val == M->host.val;
    double *old = NULL;
    if (!inplace) {
        old = ks_malloc((size_t)nnz * sizeof *old + 1, "old matrix values");
        if (!old)
            return KS_ERR_MEMORY;
        memcpy(old, M->host.val, (size_t)nnz * sizeof *old);
        memcpy(M->host.val, val, (size_t)nnz * sizeof *old);
    }

    double t0 = ks_wtime();
    void *layout = NULL, *state = NULL;
    ks_error e = M->ops->layout_build(&M->host, &M->params, &layout);
    if (e != KS_OK) {
        ks_adderr(e, "ks_matrix_set_values: SpMV format '%s'", M->ops->name);
    } else {
        e = M->ops->setup(M->be, layout, &state);
        M->ops->layout_free(layout);
        if (e != KS_OK)
            ks_adderr(e, "ks_matrix_set_values: SpMV format '%s' setup on %s", M->ops->name,
                      M->be->ops->name);
    }
    if (e == KS_OK)
        e = M->be->ops->sync(M->be);
    if (e != KS_OK) {
        if (state)
            M->ops->destroy(M->be, state);
        if (old)
            memcpy(M->host.val, old, (size_t)nnz * sizeof *old);
        free(old);
        return e;
    }
    free(old);
    if (M->state)
        M->ops->destroy(M->be, M->state);
    M->state = state;
    M->setup_seconds = ks_wtime() - t0;
    return KS_OK;
}

ks_int ks_matrix_rows(const ks_matrix *M) { return M ? M->host.nrows : 0; }
ks_int ks_matrix_cols(const ks_matrix *M) { return M ? M->host.ncols : 0; }
ks_int ks_matrix_nnz(const ks_matrix *M) { return M ? M->host.nnz : 0; }
const char *ks_matrix_format(const ks_matrix *M) { return M ? M->ops->name : NULL; }
const char *ks_matrix_format_reason(const ks_matrix *M) { return M ? M->format_reason : ""; }
ks_backend *ks_matrix_backend(const ks_matrix *M) { return M ? M->be : NULL; }
const ks_csr *ks_matrix_host_csr(const ks_matrix *M) { return M ? &M->host : NULL; }
double ks_matrix_bytes_per_apply(const ks_matrix *M) { return M ? M->bytes_per_apply : 0.0; }
double ks_matrix_setup_seconds(const ks_matrix *M) { return M ? M->setup_seconds : 0.0; }
