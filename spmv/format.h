/* SpMV storage-format seam. A format is a host layout built from CSR (with
 * validation and its own float64 reference apply, so CI without a GPU tests
 * every layout) plus a backend state built from that layout (upload, handles,
 * analysis) with the real apply. Not installed. */
#ifndef KS_FORMAT_H
#define KS_FORMAT_H

#include "../sparse/sparse.h"
#include "fused.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks_spmv_format_ops {
    const char *name;            /* "csr", "csr_vector", "cusparse", ... */
    ks_backend_kind backend;     /* backend its apply runs on */
    const char *description;     /* one line for --help and reports */

    /* Host layout: convert + validate. Refuse (KS_ERR_UNSUPPORTED with the
     * reason and a size estimate) when the matrix does not suit the format. */
    ks_error (*layout_build)(const ks_csr *A, const ks_spmv_params *prm, void **layout);
    /* y = alpha*A*x + beta*y from the layout, on the host, in float64. */
    void (*layout_apply)(const void *layout, double alpha, const double *x, double beta,
                         double *y);
    /* Bytes one apply moves: matrix data, x reads (once per entry unless the
     * format stages x), y read (if beta != 0) and write. Counted with beta = 0. */
    double (*layout_bytes)(const void *layout);
    void (*layout_free)(void *layout);

    /* Backend state from the layout (the layout is freed afterwards). The
     * layout is always built from the matrix's own host CSR, which lives as
     * long as the matrix, so a state may keep pointers to arrays the layout
     * borrowed from it (csr on the cpu does; ks_matrix_set_values changes
     * the host values before it builds the new state). */
    ks_error (*setup)(ks_backend *be, const void *layout, void **state);
    ks_error (*apply)(ks_backend *be, void *state, double alpha, const double *x, double beta,
                      double *y);
    void (*destroy)(ks_backend *be, void *state);

    /* Optional (NULL when the format cannot): one in-place Gauss-Seidel sweep
     * for A x = b, hybrid in the hypre sense (Gauss-Seidel inside each
     * thread's row block, Jacobi across blocks); reverse != 0 runs the rows
     * backwards (the second half of a symmetric sweep). AMG smoothers use it. */
    ks_error (*gs_sweep)(ks_backend *be, void *state, const double *b, double *x, int reverse);

    /* Convert the layout back to CSR (round-trip tests; padding dropped,
     * explicit zeros of the original kept). Every format provides it. */
    ks_error (*layout_to_csr)(const void *layout, ks_csr *A);

    /* Optional (NULL: ks_matrix_fused_step does a copy, the SpMV and a
     * vector update instead): the fused residual / smoother pass of fused.h
     * in one kernel. Last, so positional initialisers may leave it out. */
    ks_error (*fused_step)(ks_backend *be, void *state, const ks_fused_step *f);

    /* 1 when the format honours ks_spmv_params.float_values (values kept
     * as float32, sums in float64); ks_matrix_create refuses the others. */
    int float_values;

    /* Optional (NULL: the state is built from a host layout, made from a
     * host copy of A when A's backend has no host memory): the state
     * straight from the matrix's CSR on the backend, with no host round
     * trip. The state may keep A's arrays (A lives as long as the matrix).
     * *bytes = what one apply moves (as layout_bytes). */
    ks_error (*setup_sparse)(ks_backend *be, const ks_sparse *A, const ks_spmv_params *prm,
                             void **state, double *bytes);
    /* Optional: bytes the state holds in the backend's memory beyond the
     * matrix's CSR arrays it keeps (NULL: what the backend counted while
     * the state was built, for ks_matrix_memory_bytes; a format that
     * allocates outside the backend, as csr on the cpu, counts itself). */
    double (*state_bytes)(const void *state);
    /* Optional: 0 when the state never reads the matrix's CSR values (it
     * keeps its own float32 copy), 1 when it does; NULL: it does. Lets
     * ks_matrix_release_values free the float64 values. */
    int (*reads_values)(const void *state);
    /* Optional (NULL: ks_matrix_apply_block runs k SpMVs on columns copied
     * out of the block): Y = alpha A X + beta Y for k row-interleaved
     * columns (X[i*k + j], 1 <= k <= KS_BLOCK_MAX_COLS), one pass over the
     * matrix for all k; Y not read when beta == 0. Each column's sum in the
     * order apply sums it where the format can (so a column of the SpMM
     * equals the SpMV to rounding). */
    ks_error (*spmm)(ks_backend *be, void *state, int k, double alpha, const double *X,
                     double beta, double *Y);
    /* Optional (NULL: ks_matrix_fused_block refuses; the AMG block cycle
     * then applies the format through a view in a format that has it, or
     * the SpMM and an update): the fused pass of fused.h on k
     * row-interleaved columns (ks_fused_bload), one pass over the matrix
     * and the blocks. Each column's row sum in the order spmm sums it. */
    ks_error (*fused_block)(ks_backend *be, void *state, int k, const ks_fused_step *f);
    /* Optional (NULL: ks_matrix_apply_block_dot runs the SpMM, then a block
     * dot): Y = A X (spmm's Y with alpha 1, beta 0, bit for bit) and
     * dots[j] = X(:,j)'Y(:,j) (a host array of k), summed in the SpMM's
     * epilogue in a fixed order, so the blocks are not read again. */
    ks_error (*spmm_dot)(ks_backend *be, void *state, int k, const double *X, double *Y,
                         double *dots);
    /* Optional (NULL: ks_matrix_fused_block_dot runs fused_block, then a
     * block dot): the fused pass f (f->xo set) and dots[j] = B(:,j)'Xo(:,j)
     * (a host array of k) summed in its epilogue in a fixed order, Xo as
     * fused_block makes it bit for bit. */
    ks_error (*fused_block_dot)(ks_backend *be, void *state, int k, const ks_fused_step *f,
                                double *dots);
    /* Optional (NULL: a distributed matrix whose ghost block has this
     * format takes the unfused residual pass): the ghost block's share of
     * the fused pass f, made by the local block's fused_step without it.
     * For every row i with entries, g = (A xg)_i over the ghost values xg:
     * r_i -= g when f->r, xo_i -= c w_i g when f->xo (fused.h,
     * ks_fused_ghost_store; the step is linear in t = b - A x). Rows
     * without entries are not touched. */
    ks_error (*fused_ghost)(ks_backend *be, void *state, const double *xg,
                            const ks_fused_step *f);
} ks_spmv_format_ops;

/* Registry (spmv/registry.c). */
const ks_spmv_format_ops *ks_spmv_format_find(const char *name, ks_backend_kind backend);
/* 1 when name is "auto" or a format of any backend, compiled in or not (a
 * config names formats before a backend is chosen, and loads the same in
 * every build); else 0 with the allowed names, comma separated, in list. */
int ks_spmv_format_name_known(const char *name, char *list, size_t len);
/* All registered formats, NULL-terminated (every backend). */
const ks_spmv_format_ops *const *ks_spmv_format_all(void);
/* A format of backend kind k that keeps float32 values: `prefer` when it
 * does, else the first registered; NULL when none. */
const ks_spmv_format_ops *ks_spmv_format_float(ks_backend_kind k, const char *prefer);
/* "csr on the cpu backend": the formats with a Gauss-Seidel sweep, into buf. */
const char *ks_spmv_gs_where(char *buf, size_t len);
/* Name of a format of backend kind k with a Gauss-Seidel sweep, or NULL. */
const char *ks_spmv_format_with_gs(ks_backend_kind k);
/* The choice "auto" makes from a matrix's statistics (the cpu backend's
 * needs none: st may be NULL there), with why in reason. */
const char *ks_spmv_format_auto_stats(const ks_sparse_stats *st, ks_backend_kind backend,
                                      char *reason, size_t len);
/* 1 when "auto" on backend kind k reads statistics (cpu: one format). */
int ks_spmv_format_auto_reads_stats(ks_backend_kind k);
/* The largest DIA fill "auto" on backend kind k could take for a matrix of
 * nrows rows (0: it never takes dia there): the statistics to count for it
 * (ks_sparse_row_stats' dia_max_fill), whose occupied diagonals are then
 * counted only where they could decide. */
double ks_spmv_format_auto_dia_fill(ks_backend_kind k, ks_int nrows);
/* Format "auto" resolves to for A on backend (statistics-based choice). */
const char *ks_spmv_format_auto(const ks_csr *A, ks_backend_kind backend);
/* The same choice (spmv/auto.c), with why in reason (the statistics behind
 * it; "" when NULL is returned). reason may be NULL. */
const char *ks_spmv_format_auto_reason(const ks_csr *A, ks_backend_kind backend, char *reason,
                                       size_t len);

/* The fused pass of fused.h on M (square): the format's own kernel when it
 * has one, else r = b - A x into r (then r is required: it is the scratch),
 * then the vector update. Vectors as in ks_fused_step; r, w, xprev, xo may
 * be NULL where the step does not use them. wkind / wscale say how w was
 * made (KS_W_VECTOR, 0 when unknown), so a format may rebuild w_i from the
 * row it reads instead of reading w. */
ks_error ks_matrix_fused_step(const ks_matrix *M, const ks_vec *b, const ks_vec *x, ks_vec *r,
                              double a, double c, const ks_vec *w, int wkind, double wscale,
                              const ks_vec *xprev, ks_vec *xo);

/* Two Jacobi-type steps from x = 0 in one pass (a Chebyshev start):
 * x1 = c0 w.*b, then xo = x1 + c w.*(b - A x1) + a x1. Formats with a
 * fused pass make x1 from b as they read it (ks_fused_step.xw) and store it
 * into x1 only when keep_x1 (a third step needs it as x_old); formats
 * without one always write x1 and take ks_matrix_fused_step with r as its
 * scratch (r may be NULL only for formats with a fused pass). b, w, x1, r,
 * xo distinct. */
ks_error ks_matrix_fused_step_from_zero(const ks_matrix *M, const ks_vec *b, double c0, double a,
                                        double c, const ks_vec *w, int wkind, double wscale,
                                        ks_vec *x1, int keep_x1, ks_vec *r, ks_vec *xo);

/* The fused pass on k-column blocks (M square and local, its format's
 * fused_block op): for every entry (i, j), with t = B - A X,
 *   R(i, j) = t                                             when R
 *   Xo(i, j) = X + c w_i t + a (X - Xprev)                  when Xo
 * Xprev NULL: zero (not read when a == 0); it may be Xo. xw != NULL: the
 * iterate is not stored but made from B by a Jacobi step, X(i, j) = (xs
 * xw_i) B(i, j) (X must then be NULL, and X1, when given, stores it). w
 * required with Xo. Every block of B's shape; R, Xo, X1 distinct from X, B
 * and each other. KS_ERR_UNSUPPORTED when the format has no fused_block. */
ks_error ks_matrix_fused_block(const ks_matrix *M, const ks_block *B, const ks_block *X,
                               const ks_vec *xw, double xs, ks_block *R, double a, double c,
                               const ks_vec *w, const ks_block *Xprev, ks_block *Xo,
                               ks_block *X1);
int ks_matrix_has_fused_block(const ks_matrix *M);
/* ks_matrix_fused_block with Xo required, and dots[j] = B(:,j)'Xo(:,j) (a
 * host array of B's k): in the pass's epilogue where the format has
 * fused_block_dot (dia on cuda), else the pass and ks_block_dot. The AMG
 * block cycle's last step makes CG's r'z this way (B = r, Xo = z).
 * KS_SPMM_DOT=0 takes the two calls. */
ks_error ks_matrix_fused_block_dot(const ks_matrix *M, const ks_block *B, const ks_block *X,
                                   const ks_vec *xw, double xs, ks_block *R, double a,
                                   double c, const ks_vec *w, const ks_block *Xprev,
                                   ks_block *Xo, ks_block *X1, double *dots);
/* Name of a format of backend kind k with a fused block pass, or NULL. */
const char *ks_spmv_format_with_fused_block(ks_backend_kind k);

/* A distributed matrix's own part (mpi/ builds it, ksolve_mpi.h): this
 * rank's row block as a local block (the columns this rank owns, numbered
 * 0..nloc-1) and a ghost block (other ranks' columns, numbered 0..nghost-1
 * in ascending global order), each a ks_matrix of its own. The ks_matrix
 * holding it views the local block's CSR, so its rows, columns, sparse
 * CSR, host CSR and diagonal are the local block's; it has no format state
 * of its own, and ks_matrix_apply checks the vectors' layouts, then hands
 * over to ops->apply. */
typedef struct ks_matrix_dist ks_matrix_dist;
typedef struct ks_dist_ops {
    /* y = alpha A x + beta y over the ranks (collective): the halo exchange
     * overlapped with the local block's SpMV, then the ghost block's. x and
     * y are checked: M's layout, distinct. */
    ks_error (*apply)(ks_matrix_dist *d, double alpha, const ks_vec *x, double beta, ks_vec *y);
    /* ks_matrix_set_values(_device) (collective): val holds this rank's
     * entries in the order its rows were given at create (in the
     * backend's memory when on_backend); fn names the caller. */
    ks_error (*set_values)(ks_matrix_dist *d, const void *val, int on_backend, const char *fn);
    /* One hybrid Gauss-Seidel sweep for A x = b in place (collective): x's
     * halo exchanged, then the local block swept with the ghost values
     * moved to the right side. b and x are checked: M's layout, distinct;
     * the local block has a sweep. */
    ks_error (*gs_sweep)(ks_matrix_dist *d, const ks_vec *b, ks_vec *x, int reverse);
    /* The fused pass of fused.h over the ranks (collective): the halo
     * exchange of f->x overlapped with the local block's fused_step, then
     * the ghost block's fused_ghost. Called only when both blocks have
     * them (ks_matrix_fused_step checks), f->xw NULL, f->wkind not L1 (the
     * l1 sum spans the ghost columns the local block does not see). */
    ks_error (*fused_step)(ks_matrix_dist *d, const ks_fused_step *f);
    void (*destroy)(ks_matrix_dist *d);
} ks_dist_ops;

struct ks_matrix_dist {
    const ks_dist_ops *ops;
    const ks_comm *comm;
    ks_gint *offsets;   /* comm->size + 1: where each rank's rows start, the same on
                         * every rank; the columns are split alike (square) */
    ks_gint *col_offsets; /* NULL (square), or the columns' own layout: an AMG
                         * transfer operator (mpi/), whose x is laid out thus */
    ks_matrix *local;   /* owned columns */
    ks_matrix *ghost;   /* ghost columns; NULL when this rank's rows have none */
    double halo_bytes;  /* the halo exchange's buffers, the ghost ids, the input
                         * entries' places (ks_matrix_set_values) */
};

/* Matrix object: the matrix as CSR in its backend's memory (a ks_sparse,
 * what setup code reads and re-setup writes) and the format's state built
 * from it. No host copy is kept on a backend without host memory; one is
 * made on demand (ks_matrix_host_csr) and then owned. A distributed matrix
 * has dist set (see ks_matrix_dist above); NULL for every local one. */
struct ks_matrix {
    ks_backend *be;
    const ks_spmv_format_ops *ops;
    ks_spmv_params params; /* as given at create, reused when values change */
    void *state;
    ks_sparse A;           /* the CSR on be (owned unless A_borrowed) */
    int A_borrowed;        /* ks_matrix_create_view: A's arrays are someone else's */
    unsigned long long id; /* ks_matrix_id */
    ks_csr host;           /* host CSR: a view of A's arrays on host-memory backends,
                            * else a copy made by ks_matrix_host_csr (host_owned) */
    int host_owned;
    int values_released;   /* ks_matrix_release_values freed A.val */
    double bytes_per_apply;
    double state_bytes;    /* what the state holds on be: the backend's bytes in
                            * use grew by this much when it was built */
    double setup_seconds;
    char format_reason[160]; /* why "auto" chose ops; "" when the format was named */
    ks_sparse_stats stats; /* the row statistics "auto" reads, of A's pattern (which never
                            * changes), so counted at most once a matrix: stats_known */
    int stats_known;
    ks_matrix_dist *dist;  /* NULL: a local matrix */
    int spmm_fallback_said; /* ks_matrix_apply_block logged its k-SpMV fallback */
};

/* The matrix holding distributed part d (M takes d: on failure d is
 * destroyed). d's blocks must be built. */
ks_error ks_matrix_wrap_dist(ks_matrix_dist *d, ks_matrix **M);
/* 1 when M is distributed over ranks. */
int ks_matrix_distributed(const ks_matrix *M);
/* ks_matrix_apply of a distributed matrix (spmv/matrix_dist.c). */
ks_error ks_matrix_dist_apply(ks_matrix *M, double alpha, const ks_vec *x, double beta,
                              ks_vec *y);
/* v laid out like distributed M's rows (square M), else an error naming
 * fn and the vector's name. */
ks_error ks_matrix_dist_check_vec(const ks_matrix *M, const ks_vec *v, const char *fn,
                                  const char *name);
/* A block of a distributed matrix: the format's fused_step on it (local
 * block; M->A.nrows > 0), or its fused_ghost over the ghost values xg. */
ks_error ks_matrix_fused_local(const ks_matrix *M, const ks_fused_step *f);
ks_error ks_matrix_fused_ghost(const ks_matrix *G, const double *xg, const ks_fused_step *f);
/* ks_matrix_gs_sweep of a distributed matrix (spmv/matrix_dist.c): the
 * vectors checked, then ks_dist_ops.gs_sweep. */
ks_error ks_matrix_dist_gs_sweep(const ks_matrix *M, const ks_vec *b, ks_vec *x, int reverse);
/* The outcome of a step that may fail on some ranks only (see
 * ks_comm_ops.agree): e itself for a local matrix. Collective for a
 * distributed one. */
ks_error ks_matrix_agree(const ks_matrix *M, ks_error e);
/* s[i] = sum_{j != i} |a_ij| over the whole row i (a distributed matrix's
 * ghost entries included); s shaped like M's rows (ks_matrix_vec_create). */
ks_error ks_matrix_offdiag_abs_sums(const ks_matrix *M, ks_vec *s);

/* M from a CSR already on be: M takes A's arrays (A is left empty, also on
 * failure, when they are freed). A must be valid (ks_sparse_validate). */
ks_error ks_matrix_create_sparse(ks_backend *be, ks_sparse *A, const char *format,
                                 const ks_spmv_params *params, ks_matrix **M);
/* M sharing A's arrays (no copy; A must outlive M, and after a change of
 * A's values M needs ks_matrix_values_changed): a second storage format of
 * the same matrix, e.g. AMG's float32 copy of level 0. */
ks_error ks_matrix_create_view(ks_backend *be, const ks_sparse *A, const char *format,
                               const ks_spmv_params *params, ks_matrix **M);
/* ks_matrix_create_view of M's CSR (M must outlive V): "auto" reads M's row
 * statistics, counted once for both (M keeps them). */
ks_error ks_matrix_create_view_of(const ks_matrix *M, const char *format,
                                  const ks_spmv_params *params, ks_matrix **V);
/* A number no other matrix of this process has had. */
unsigned long long ks_matrix_id(const ks_matrix *M);
/* The matrix's CSR on its backend. */
const ks_sparse *ks_matrix_sparse(const ks_matrix *M);
/* The CSR's values, writable in place (re-setup writes new values there);
 * then ks_matrix_values_changed rebuilds the format's state from them. If
 * that fails, M's state is gone: M must not be applied until a later call
 * succeeds. */
double *ks_matrix_values(ks_matrix *M);
ks_error ks_matrix_values_changed(ks_matrix *M);
/* Free the CSR's float64 values when the format's state keeps its own
 * copy and never reads them (*released = 1; else nothing happens): a
 * matrix applied only through a float32 state then lives once on its
 * backend. Until ks_matrix_acquire_values the matrix still applies, but its
 * values cannot be read or changed (ks_matrix_values gives NULL, host CSR
 * and set_values / values_changed fail). ks_matrix_acquire_values gives
 * the matrix a values array again (uninitialised after a release: write
 * every value, then ks_matrix_values_changed) in *val. */
ks_error ks_matrix_release_values(ks_matrix *M, int *released);
ks_error ks_matrix_acquire_values(ks_matrix *M, double **val);
/* What the format can do, for code outside spmv/: a Gauss-Seidel sweep, a
 * fused residual / smoothing pass, float32 values. */
int ks_matrix_has_gs_sweep(const ks_matrix *M);
int ks_matrix_has_fused_step(const ks_matrix *M);
int ks_matrix_float_values(const ks_matrix *M);
/* Free the host copy ks_matrix_host_csr made of a matrix on a backend
 * without host memory (a distributed matrix's: its blocks' too); the next
 * call makes it again. Nothing on a host-memory backend (the copy is a
 * view there). Pointers from earlier calls become invalid. */
void ks_matrix_host_csr_free(ks_matrix *M);
/* One hybrid Gauss-Seidel sweep for M x = b in place (see gs_sweep). */
ks_error ks_matrix_gs_sweep(const ks_matrix *M, const ks_vec *b, ks_vec *x, int reverse);
/* Bytes M holds in its backend's memory: its CSR and the format's own
 * arrays (arrays the state shares with the CSR counted once). */
double ks_matrix_memory_bytes(const ks_matrix *M);
/* Changes whenever M's storage is rebuilt (create, values changed): what
 * a captured graph of kernels reading M depends on. */
const void *ks_matrix_storage_id(const ks_matrix *M);

#ifdef __cplusplus
}
#endif
#endif
