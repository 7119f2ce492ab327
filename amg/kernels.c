/* The AMG setup's calls: each goes to the table of the backend its
 * operands live on; where that table lacks the operation, the operands are
 * copied to the host, the cpu kernel runs there and the results are copied
 * back (a staged step: counted, and named in the report). */
#include "kernels.h"

#include <string.h>

const char *const ks_amg_op_names[KS_NOPS] = {
    "strength",   "PMIS",           "HMIS",      "interpolation", "truncation",
    "projection", "aggregation",    "tentative", "smoothed P",    "spectral radius",
    "diagonal",   "smoother weights", "transpose", "SpGEMM",      "RAP",
    "numeric RAP", "pattern comparison"};

static const ks_amg_kernels *const tables[] = {
    &ks_amg_cpu_kernels,
#ifdef KS_HAVE_CUDA
    &ks_amg_cuda_kernels,
#endif
    NULL};

static const ks_amg_kernels *table_of(const ks_backend *be)
{
    for (int i = 0; be && tables[i]; i++)
        if (tables[i]->backend == be->ops->kind)
            return tables[i];
    return NULL;
}

void ks_amg_exec_free(ks_amg_exec *x)
{
    if (!x)
        return;
    ks_backend_destroy(&x->host);
    memset(x, 0, sizeof *x);
}

/* ------------------------------------------------------------- staging */
/* A staged step begins: the host backend exists, the step is counted. */
static ks_error stage(ks_amg_exec *x, ks_amg_op op)
{
    if (!x->host)
        KS_TRY(ks_backend_create("cpu", &x->host));
    x->host_steps++;
    x->host_ops |= 1u << op;
    return KS_OK;
}

/* H: X on the host backend (a copy; X may be NULL, then H is empty). */
static ks_error in(ks_amg_exec *x, const ks_sparse *X, ks_sparse *H)
{
    memset(H, 0, sizeof *H);
    return X ? ks_sparse_copy(X, x->host, H) : KS_OK;
}

/* out (on be) from the host result H, which is freed. */
static ks_error out(ks_sparse *H, ks_backend *be, ks_sparse *o)
{
    ks_error e = ks_sparse_copy(H, be, o);
    ks_sparse_free(H);
    return e;
}

/* Values of H back into X's existing arrays (same pattern). */
static ks_error out_values(const ks_sparse *H, ks_sparse *X)
{
    if (!X->nnz || !X->val)
        return KS_OK;
    return X->be->ops->upload(X->be, X->val, H->val, (size_t)X->nnz * sizeof(double));
}

/* A host copy of n bytes at p in be's memory (*h malloc'ed). */
static ks_error in_array(ks_backend *be, const void *p, size_t n, void **h)
{
    *h = ks_malloc(n + 1, "staged AMG array");
    if (!*h)
        return KS_ERR_MEMORY;
    ks_error e = n ? be->ops->download(be, *h, p, n) : KS_OK;
    if (e != KS_OK) {
        free(*h);
        *h = NULL;
    }
    return e;
}

/* A staged step's host array h (n bytes) into p on be when the step
 * succeeded (e); h is freed either way. */
static ks_error out_array(ks_error e, ks_backend *be, void *p, void *h, size_t n)
{
    if (e == KS_OK && n)
        e = be->ops->upload(be, p, h, n);
    free(h);
    return e;
}

static void free_all(ks_sparse *a, ks_sparse *b, ks_sparse *c)
{
    ks_sparse_free(a);
    ks_sparse_free(b);
    ks_sparse_free(c);
}

#define CPU (&ks_amg_cpu_kernels)

/* A step's output X: a structure the library built, which the next steps
 * need not check again (ks_sparse.valid). */
static ks_error produced(ks_error e, ks_sparse *X)
{
    if (e == KS_OK && X)
        X->valid = 1;
    return e;
}

/* A strength graph: valid, and without diagonal entries (the tables'
 * promise), so PMIS need not look for them. */
static ks_error produced_graph(ks_error e, ks_sparse *S)
{
    if (e == KS_OK)
        S->flags |= KS_SPARSE_NO_DIAG;
    return produced(e, S);
}

/* ------------------------------------------------------------ the calls */
ks_error ks_amgk_strength_classical(ks_amg_exec *x, const ks_sparse *A, double theta,
                                    double max_row_sum, ks_sparse *S)
{
    const ks_amg_kernels *K = table_of(A->be);
    if (K && K->strength_classical)
        return produced_graph(K->strength_classical(A, theta, max_row_sum, S), S);
    ks_sparse Ah, Sh;
    KS_TRY(stage(x, KS_OP_STRENGTH));
    KS_TRY(in(x, A, &Ah));
    ks_error e = CPU->strength_classical(&Ah, theta, max_row_sum, &Sh);
    ks_sparse_free(&Ah);
    return produced_graph(e == KS_OK ? out(&Sh, A->be, S) : e, S);
}

ks_error ks_amgk_strength_symmetric(ks_amg_exec *x, const ks_sparse *A, double theta,
                                    ks_sparse *S)
{
    const ks_amg_kernels *K = table_of(A->be);
    if (K && K->strength_symmetric)
        return produced_graph(K->strength_symmetric(A, theta, S), S);
    ks_sparse Ah, Sh;
    KS_TRY(stage(x, KS_OP_STRENGTH));
    KS_TRY(in(x, A, &Ah));
    ks_error e = CPU->strength_symmetric(&Ah, theta, &Sh);
    ks_sparse_free(&Ah);
    return produced_graph(e == KS_OK ? out(&Sh, A->be, S) : e, S);
}

/* PMIS or HMIS on S; block_rows < -1 means PMIS. */
static ks_error split(ks_amg_exec *x, const ks_sparse *S, unsigned long long seed, int block_rows,
                      int pmis, int *cf, ks_int *nc)
{
    const ks_amg_kernels *K = table_of(S->be);
    if (K && pmis && K->pmis)
        return K->pmis(S, seed, cf, nc);
    if (K && !pmis && K->hmis)
        return K->hmis(S, seed, block_rows, cf, nc);
    ks_sparse Sh;
    void *cfh = NULL;
    KS_TRY(stage(x, pmis ? KS_OP_PMIS : KS_OP_HMIS));
    KS_TRY(in(x, S, &Sh));
    cfh = ks_malloc((size_t)S->nrows * sizeof(int) + 1, "staged C/F splitting");
    ks_error e = cfh ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK)
        e = pmis ? CPU->pmis(&Sh, seed, cfh, nc) : CPU->hmis(&Sh, seed, block_rows, cfh, nc);
    ks_sparse_free(&Sh);
    return out_array(e, S->be, cf, cfh, (size_t)S->nrows * sizeof(int));
}

ks_error ks_amgk_pmis(ks_amg_exec *x, const ks_sparse *S, unsigned long long seed, int *cf,
                      ks_int *nc)
{
    return split(x, S, seed, 0, 1, cf, nc);
}

ks_error ks_amgk_hmis(ks_amg_exec *x, const ks_sparse *S, unsigned long long seed,
                      int block_rows, int *cf, ks_int *nc)
{
    return split(x, S, seed, block_rows, 0, cf, nc);
}

/* Rows [r0, r1) of P on host copies, by the cpu builders (the whole P is
 * the rows 0 .. n case, the same rows), for a backend whose table lacks
 * the entry. */
static ks_error interp_staged(ks_amg_exec *x, ks_amg_interp kind, const ks_sparse *A,
                              const ks_sparse *S, const int *cf, ks_int r0, ks_int r1,
                              ks_sparse *P)
{
    ks_sparse Ah, Sh, Ph;
    void *cfh = NULL;
    KS_TRY(stage(x, KS_OP_INTERP));
    ks_error e = in(x, A, &Ah);
    if (e == KS_OK)
        e = in(x, S, &Sh);
    if (e == KS_OK)
        e = in_array(A->be, cf, (size_t)A->nrows * sizeof(int), &cfh);
    if (e == KS_OK)
        e = (kind == KS_AMG_D1 ? CPU->interp_direct_rows : CPU->interp_extended_i_rows)(
            &Ah, &Sh, cfh, r0, r1, &Ph);
    free(cfh);
    free_all(&Ah, &Sh, NULL);
    return produced(e == KS_OK ? out(&Ph, A->be, P) : e, P);
}

ks_error ks_amgk_interp(ks_amg_exec *x, ks_amg_interp kind, const ks_sparse *A,
                        const ks_sparse *S, const int *cf, ks_sparse *P)
{
    const ks_amg_kernels *K = table_of(A->be);
    ks_error (*f)(const ks_sparse *, const ks_sparse *, const int *, ks_sparse *) =
        K ? (kind == KS_AMG_D1 ? K->interp_direct : K->interp_extended_i) : NULL;
    if (f)
        return produced(f(A, S, cf, P), P);
    return interp_staged(x, kind, A, S, cf, 0, A->nrows, P);
}

ks_error ks_amgk_interp_rows(ks_amg_exec *x, ks_amg_interp kind, const ks_sparse *A,
                             const ks_sparse *S, const int *cf, ks_int r0, ks_int r1,
                             ks_sparse *P)
{
    typedef ks_error (*rows_fn)(const ks_sparse *, const ks_sparse *, const int *, ks_int,
                                ks_int, ks_sparse *);
    const ks_amg_kernels *K = table_of(A->be);
    rows_fn f = K ? (kind == KS_AMG_D1 ? K->interp_direct_rows : K->interp_extended_i_rows)
                  : NULL;
    if (f)
        return produced(f(A, S, cf, r0, r1, P), P);
    return interp_staged(x, kind, A, S, cf, r0, r1, P);
}

ks_error ks_amgk_truncate(ks_amg_exec *x, ks_sparse *P, int max_elements, double factor)
{
    const ks_amg_kernels *K = table_of(P->be);
    if (K && K->interp_truncate)
        return produced(K->interp_truncate(P, max_elements, factor), P);
    ks_sparse Ph;
    KS_TRY(stage(x, KS_OP_TRUNCATE));
    KS_TRY(in(x, P, &Ph));
    ks_error e = CPU->interp_truncate(&Ph, max_elements, factor);
    if (e != KS_OK) {
        ks_sparse_free(&Ph);
        return e;
    }
    ks_backend *be = P->be;
    ks_sparse_free(P);
    return produced(out(&Ph, be, P), P);
}

ks_error ks_amgk_project(ks_amg_exec *x, const ks_sparse *Pn, ks_sparse *P, int truncated,
                         int *changed)
{
    const ks_amg_kernels *K = table_of(P->be);
    if (K && K->interp_project)
        return K->interp_project(Pn, P, truncated, changed);
    ks_sparse Nh, Ph;
    KS_TRY(stage(x, KS_OP_PROJECT));
    ks_error e = in(x, Pn, &Nh);
    if (e == KS_OK)
        e = in(x, P, &Ph);
    if (e == KS_OK)
        e = CPU->interp_project(&Nh, &Ph, truncated, changed);
    if (e == KS_OK && !*changed)
        e = out_values(&Ph, P);
    free_all(&Nh, &Ph, NULL);
    return e;
}

ks_error ks_amgk_aggregate(ks_amg_exec *x, const ks_sparse *S, unsigned long long seed,
                           ks_int *agg, ks_int *na)
{
    const ks_amg_kernels *K = table_of(S->be);
    if (K && K->aggregate)
        return K->aggregate(S, seed, agg, na);
    ks_sparse Sh;
    KS_TRY(stage(x, KS_OP_AGGREGATE));
    KS_TRY(in(x, S, &Sh));
    void *ah = ks_malloc((size_t)S->nrows * sizeof(ks_int) + 1, "staged aggregates");
    ks_error e = ah ? CPU->aggregate(&Sh, seed, ah, na) : KS_ERR_MEMORY;
    ks_sparse_free(&Sh);
    return out_array(e, S->be, agg, ah, (size_t)S->nrows * sizeof(ks_int));
}

ks_error ks_amgk_tentative(ks_amg_exec *x, ks_backend *be, ks_int n, const ks_int *agg,
                           ks_int na, ks_sparse *P0)
{
    const ks_amg_kernels *K = table_of(be);
    if (K && K->tentative_prolongator)
        return produced(K->tentative_prolongator(be, n, agg, na, P0), P0);
    void *ah = NULL;
    ks_sparse Ph;
    KS_TRY(stage(x, KS_OP_TENTATIVE));
    KS_TRY(in_array(be, agg, (size_t)n * sizeof(ks_int), &ah));
    ks_error e = CPU->tentative_prolongator(x->host, n, ah, na, &Ph);
    free(ah);
    return produced(e == KS_OK ? out(&Ph, be, P0) : e, P0);
}

ks_error ks_amgk_smooth_prolongator(ks_amg_exec *x, const ks_sparse *A, const ks_sparse *P0,
                                    double rho, ks_sparse *P)
{
    const ks_amg_kernels *K = table_of(A->be);
    if (K && K->smooth_prolongator)
        return produced(K->smooth_prolongator(A, P0, rho, P), P);
    ks_sparse Ah, Qh, Ph;
    KS_TRY(stage(x, KS_OP_SMOOTH_P));
    ks_error e = in(x, A, &Ah);
    if (e == KS_OK)
        e = in(x, P0, &Qh);
    if (e == KS_OK)
        e = CPU->smooth_prolongator(&Ah, &Qh, rho, &Ph);
    free_all(&Ah, &Qh, NULL);
    return produced(e == KS_OK ? out(&Ph, A->be, P) : e, P);
}

ks_error ks_amgk_spectral_radius(ks_amg_exec *x, const ks_sparse *A, int iters, int known_sym,
                                 double *rho, int *exact)
{
    const ks_amg_kernels *K = table_of(A->be);
    if (K && K->spectral_radius)
        return K->spectral_radius(A, iters, known_sym, rho, exact);
    ks_sparse Ah;
    if (exact)
        *exact = 0;
    KS_TRY(stage(x, KS_OP_SPECTRAL));
    KS_TRY(in(x, A, &Ah));
    ks_error e = CPU->spectral_radius(&Ah, iters, known_sym, rho, exact);
    ks_sparse_free(&Ah);
    return e;
}

ks_error ks_amgk_check_diagonal(ks_amg_exec *x, const ks_sparse *A, ks_int *bad,
                                double *value, int *stored)
{
    const ks_amg_kernels *K = table_of(A->be);
    if (K && K->check_diagonal)
        return K->check_diagonal(A, bad, value, stored);
    ks_sparse Ah;
    KS_TRY(stage(x, KS_OP_DIAGONAL));
    KS_TRY(in(x, A, &Ah));
    ks_error e = CPU->check_diagonal(&Ah, bad, value, stored);
    ks_sparse_free(&Ah);
    return e;
}

ks_error ks_amgk_smoother_weights(ks_amg_exec *x, const ks_sparse *A, ks_amg_smoother_kind kind,
                                  double omega, double *w)
{
    const ks_amg_kernels *K = table_of(A->be);
    if (K && K->smoother_weights)
        return K->smoother_weights(A, kind, omega, w);
    ks_sparse Ah;
    KS_TRY(stage(x, KS_OP_WEIGHTS));
    KS_TRY(in(x, A, &Ah));
    void *wh = ks_malloc((size_t)A->nrows * sizeof(double) + 1, "staged smoother weights");
    ks_error e = wh ? CPU->smoother_weights(&Ah, kind, omega, wh) : KS_ERR_MEMORY;
    ks_sparse_free(&Ah);
    return out_array(e, A->be, w, wh, (size_t)A->nrows * sizeof(double));
}

/* ---------------------------------------------- sparse products, staged */
/* 1 when the backend's sparse table has the entry at `off`. */
#define HAS_SPARSE(be, member) (ks_sparse_ops_of(be) && ks_sparse_ops_of(be)->member)

ks_error ks_amgk_transpose(ks_amg_exec *x, const ks_sparse *A, ks_sparse *AT)
{
    if (HAS_SPARSE(A->be, transpose))
        return produced(ks_sparse_transpose(A, AT), AT);
    ks_sparse Ah, Th;
    KS_TRY(stage(x, KS_OP_TRANSPOSE));
    KS_TRY(in(x, A, &Ah));
    ks_error e = ks_sparse_transpose(&Ah, &Th);
    ks_sparse_free(&Ah);
    return produced(e == KS_OK ? out(&Th, A->be, AT) : e, AT);
}

ks_error ks_amgk_spgemm(ks_amg_exec *x, const ks_sparse *A, const ks_sparse *B, ks_sparse *C)
{
    if (HAS_SPARSE(A->be, spgemm))
        return produced(ks_sparse_spgemm(A, B, C), C);
    ks_sparse Ah, Bh, Ch;
    KS_TRY(stage(x, KS_OP_SPGEMM));
    ks_error e = in(x, A, &Ah);
    if (e == KS_OK)
        e = in(x, B, &Bh);
    if (e == KS_OK)
        e = ks_sparse_spgemm(&Ah, &Bh, &Ch);
    free_all(&Ah, &Bh, NULL);
    return produced(e == KS_OK ? out(&Ch, A->be, C) : e, C);
}

ks_error ks_amgk_rap(ks_amg_exec *x, const ks_sparse *R, const ks_sparse *A, const ks_sparse *P,
                     ks_sparse *Ac)
{
    if (HAS_SPARSE(A->be, rap))
        return produced(ks_sparse_rap(R, A, P, Ac), Ac);
    ks_sparse Rh, Ah, Ph, Ch;
    KS_TRY(stage(x, KS_OP_RAP));
    ks_error e = in(x, R, &Rh);
    if (e == KS_OK)
        e = in(x, A, &Ah);
    if (e == KS_OK)
        e = in(x, P, &Ph);
    if (e == KS_OK)
        e = ks_sparse_rap(&Rh, &Ah, &Ph, &Ch);
    free_all(&Rh, &Ah, &Ph);
    return produced(e == KS_OK ? out(&Ch, A->be, Ac) : e, Ac);
}

ks_error ks_amgk_rap_numeric(ks_amg_exec *x, const ks_sparse *R, const ks_sparse *A,
                             const ks_sparse *P, ks_sparse *Ac, int *outside)
{
    if (HAS_SPARSE(A->be, rap_numeric))
        return ks_sparse_rap_numeric(R, A, P, Ac, outside);
    ks_sparse Rh, Ah, Ph, Ch;
    KS_TRY(stage(x, KS_OP_RAP_NUMERIC));
    ks_error e = in(x, R, &Rh);
    if (e == KS_OK)
        e = in(x, A, &Ah);
    if (e == KS_OK)
        e = in(x, P, &Ph);
    if (e == KS_OK)
        e = in(x, Ac, &Ch);
    if (e == KS_OK)
        e = ks_sparse_rap_numeric(&Rh, &Ah, &Ph, &Ch, outside);
    if (e == KS_OK && !*outside)
        e = out_values(&Ch, Ac);
    free_all(&Rh, &Ah, &Ph);
    ks_sparse_free(&Ch);
    return e;
}

ks_error ks_amgk_same_pattern(ks_amg_exec *x, const ks_sparse *A, const ks_sparse *B,
                              int *same)
{
    if (HAS_SPARSE(A->be, same_pattern))
        return ks_sparse_same_pattern(A, B, same);
    ks_sparse Ah, Bh;
    KS_TRY(stage(x, KS_OP_PATTERN));
    ks_error e = in(x, A, &Ah);
    if (e == KS_OK)
        e = in(x, B, &Bh);
    if (e == KS_OK)
        e = ks_sparse_same_pattern(&Ah, &Bh, same);
    free_all(&Ah, &Bh, NULL);
    return e;
}

ks_error ks_amgk_strength_classical_blocks(ks_amg_exec *x, const ks_sparse *L,
                                           const ks_sparse *G, ks_int nbelow, double theta,
                                           double max_row_sum, ks_sparse *SL, ks_sparse *SG)
{
    const ks_amg_kernels *K = table_of(L->be);
    if (K && K->strength_classical_blocks) {
        ks_error e = K->strength_classical_blocks(L, G, nbelow, theta, max_row_sum, SL, SG);
        produced_graph(e, SL);
        return produced(e, SG);
    }
    ks_sparse Lh = {0}, Gh = {0}, Sl, Sg;
    KS_TRY(stage(x, KS_OP_STRENGTH));
    ks_error e = in(x, L, &Lh);
    if (e == KS_OK)
        e = in(x, G, &Gh);
    if (e == KS_OK)
        e = CPU->strength_classical_blocks(&Lh, G ? &Gh : NULL, nbelow, theta, max_row_sum,
                                           &Sl, &Sg);
    free_all(&Lh, &Gh, NULL);
    if (e == KS_OK) {
        e = out(&Sl, L->be, SL);
        if (e == KS_OK)
            e = out(&Sg, L->be, SG);
        else
            ks_sparse_free(&Sg);
    }
    produced_graph(e, SL);
    return produced(e, SG);
}

ks_error ks_amgk_spectral_prepare_blocks(ks_amg_exec *x, const ks_sparse *L, const ks_sparse *G,
                                         double *d, ks_spectral_prep *out)
{
    const ks_amg_kernels *K = table_of(L ? L->be : NULL);
    if (!L || (K && K->spectral_prepare_blocks))
        return (K ? K : CPU)->spectral_prepare_blocks(L, G, d, out);
    ks_sparse Lh = {0}, Gh = {0};
    KS_TRY(stage(x, KS_OP_SPECTRAL));
    const size_t bytes = (size_t)L->nrows * sizeof(double);
    void *dh = NULL;
    ks_error e = in(x, L, &Lh);
    if (e == KS_OK)
        e = in(x, G, &Gh);
    if (e == KS_OK)
        e = (dh = ks_malloc(bytes + 1, "staged diagonal")) ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK)
        e = CPU->spectral_prepare_blocks(&Lh, G ? &Gh : NULL, dh, out);
    free_all(&Lh, &Gh, NULL);
    return dh ? out_array(e, L->be, d, dh, bytes) : e;
}

ks_error ks_amgk_spectral_scale_start(ks_amg_exec *x, ks_backend *be, ks_int n,
                                      ks_gint row_begin, int sym, double *d, double *start)
{
    const ks_amg_kernels *K = table_of(be);
    if (K && K->spectral_scale_start)
        return K->spectral_scale_start(be, n, row_begin, sym, d, start);
    if (!be || n < 0)
        return ks_seterr(KS_ERR_ARG, "ks_amg_spectral_scale_start: %s",
                         be ? "negative size" : "NULL backend");
    KS_TRY(stage(x, KS_OP_SPECTRAL));
    const size_t bytes = (size_t)n * sizeof(double);
    void *dh = NULL, *sh = NULL;
    KS_TRY(in_array(be, d, bytes, &dh));
    sh = ks_malloc(bytes + 1, "staged start vector");
    ks_error e = sh ? CPU->spectral_scale_start(x->host, n, row_begin, sym, dh, sh)
                    : KS_ERR_MEMORY;
    e = out_array(e, be, d, dh, bytes);
    return sh ? out_array(e, be, start, sh, bytes) : e;
}

/* The table where be's arrays are (the cpu's for the host, be NULL). */
static const ks_amg_kernels *table_where(const ks_backend *be)
{
    return be ? table_of(be) : CPU;
}

static ks_error no_kernels(const ks_backend *be, const char *op)
{
    return ks_seterr(KS_ERR_UNSUPPORTED, "%s: no kernels for the %s backend", op,
                     ks_backend_name(be));
}

ks_error ks_amgk_pmis_joint_step(ks_pmis_joint *J, int step, unsigned long long seed,
                                 ks_gint *count)
{
    const ks_amg_kernels *K = table_where(J->be);
    if (!K || !K->pmis_joint_step)
        return no_kernels(J->be, "distributed PMIS");
    return K->pmis_joint_step(J, step, seed, count);
}

ks_error ks_amgk_gather_int(ks_backend *be, const int *src, const ks_int *idx, ks_int n,
                            int *out)
{
    const ks_amg_kernels *K = table_where(be);
    if (!K || !K->gather_int)
        return no_kernels(be, "gather of ints");
    return K->gather_int(be, src, idx, n, out);
}

ks_error ks_amgk_symmetry_counts(ks_amg_exec *x, const ks_sparse *L, const double *d,
                                 int64_t cnt[4])
{
    const ks_amg_kernels *K = table_of(L ? L->be : NULL);
    if (!L || (K && K->symmetry_counts))
        return (K ? K : CPU)->symmetry_counts(L, d, cnt);
    ks_sparse Lh = {0};
    KS_TRY(stage(x, KS_OP_SPECTRAL));
    void *dh = NULL;
    ks_error e = in(x, L, &Lh);
    if (e == KS_OK)
        e = in_array(L->be, d, (size_t)L->nrows * sizeof(double), &dh);
    if (e == KS_OK)
        e = CPU->symmetry_counts(&Lh, dh, cnt);
    free(dh);
    free_all(&Lh, NULL, NULL);
    return e;
}
