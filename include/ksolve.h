/* ksolve — preconditioned Krylov and AMG solvers for sparse linear systems
 * on NVIDIA GPUs and CPUs.
 *
 * Public C API. Object life cycle (PETSc style):
 *   create -> set options (config) -> setup -> solve/apply -> destroy.
 *
 * Every function that can fail returns a ks_error (KS_OK == 0). On failure
 * ks_last_error() returns a human-readable message for the calling thread,
 * naming the file and line, config key path or CUDA call that failed.
 * The library never aborts the process.
 */
#ifndef KSOLVE_H
#define KSOLVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KS_VERSION_MAJOR 0
#define KS_VERSION_MINOR 1
#define KS_VERSION_PATCH 0
#define KS_VERSION_STRING "0.1.0"

/* The version of the library linked at run time (KS_VERSION_STRING of the
 * headers it was built with), to compare with the headers compiled against. */
const char *ks_version(void);

/* Local (per-process) index type. Row-block distributed matrices (MPI) keep
 * local indices 32-bit and use ks_gint for global row/column numbers. */
typedef int32_t ks_int;
typedef int64_t ks_gint;

/* ------------------------------------------------------------------ errors */
typedef enum ks_error {
    KS_OK = 0,
    KS_ERR_ARG,         /* invalid argument (NULL, negative size, ...) */
    KS_ERR_MEMORY,      /* host or device allocation failed */
    KS_ERR_IO,          /* file cannot be opened, read or written */
    KS_ERR_FORMAT,      /* malformed input file (names file and line) */
    KS_ERR_CONFIG,      /* bad config key or value (names the key path) */
    KS_ERR_UNSUPPORTED, /* backend, format or feature not available */
    KS_ERR_DEVICE,      /* CUDA / cuBLAS / cuSPARSE failure */
    KS_ERR_NUMERIC,     /* NaN/Inf in data, zero diagonal, ... */
    KS_ERR_SIZE,        /* dimension mismatch or index overflow */
    KS_ERR_MPI          /* an MPI call failed (the message names it and MPI's reason) */
} ks_error;

/* Short name of an error code, e.g. "KS_ERR_FORMAT". */
const char *ks_error_name(ks_error e);
/* Message of the last failure on this thread ("" if none). */
const char *ks_last_error(void);
/* Clear the last-error message of this thread. */
void ks_clear_error(void);

/* ---------------------------------------------------------------- logging */
/* Levels of the library's own messages (ks_set_log_level shows those at or
 * below the level): */
#define KS_LOG_ERROR 0 /* errors only */
#define KS_LOG_WARN 1  /* and warnings */
#define KS_LOG_INFO 2  /* and information asked for in the config: the residual
                        * monitor, solve summaries, setup progress (default) */
#define KS_LOG_DEBUG 3 /* and debugging traces (the AMG setup steps) */

/* Receives each message, formatted, newline included: msg[len] == '\0'.
 * Modelled on AmgX's AMGX_register_print_callback. */
typedef void (*ks_print_fn)(const char *msg, int len, void *ctx);
/* Send the library's messages to fn (with ctx) instead of stdout/stderr;
 * fn NULL restores those (information on stdout, the rest on stderr).
 * Functions that take a FILE * (ks_solver_print_setup) still write there.
 * The callback and the level are process-wide: set them before other
 * threads call into the library, not while they do; the callback may be
 * called from any thread that calls the library. */
void ks_set_print_callback(ks_print_fn fn, void *ctx);
/* KS_LOG_ERROR .. KS_LOG_DEBUG (clamped to that range). */
void ks_set_log_level(int level);

/* --------------------------------------------------------------- host CSR */
/* Compressed sparse row matrix in host memory, 0-based, column indices
 * sorted and unique within each row. The struct is transparent so callers
 * can hand in their own arrays; ks_csr_free() frees arrays allocated by
 * ksolve (ks_csr_alloc, readers, generators) with free(). */
typedef struct ks_csr {
    ks_int nrows;
    ks_int ncols;
    ks_int nnz;
    ks_int *rowptr; /* nrows + 1 */
    ks_int *colind; /* nnz */
    double *val;    /* nnz */
} ks_csr;

ks_error ks_csr_alloc(ks_csr *A, ks_int nrows, ks_int ncols, ks_int nnz);
void ks_csr_free(ks_csr *A);
/* Deep copy. */
ks_error ks_csr_copy(const ks_csr *src, ks_csr *dst);
/* Check structure: rowptr monotone, indices in range, sorted, unique,
 * values finite. The message names the first offending row. */
ks_error ks_csr_validate(const ks_csr *A);
/* Build CSR from coordinate triplets (0-based); duplicates are summed and
 * their count returned in *ndup (may be NULL). Rows are sorted. */
ks_error ks_csr_from_coo(ks_int nrows, ks_int ncols, int64_t nent,
                         const ks_int *row, const ks_int *col, const double *val,
                         ks_csr *A, int64_t *ndup);
/* y = alpha*A*x + beta*y, float64 host reference (serial, simple). */
void ks_csr_spmv_ref(const ks_csr *A, double alpha, const double *x, double beta, double *y);

/* --------------------------------------------------------- Matrix Market */
typedef enum ks_mm_field { KS_MM_REAL, KS_MM_INTEGER, KS_MM_PATTERN } ks_mm_field;
typedef enum ks_mm_symmetry { KS_MM_GENERAL, KS_MM_SYMMETRIC, KS_MM_SKEW } ks_mm_symmetry;

typedef struct ks_mm_info {
    ks_mm_field field;
    ks_mm_symmetry symmetry;
    int64_t entries_stored;    /* entries in the file */
    int64_t duplicates_summed; /* duplicate (i,j) pairs summed on read */
} ks_mm_info;

/* Read a coordinate matrix (.mtx or .mtx.gz). Symmetric and skew files are
 * expanded; pattern files get value 1.0. info may be NULL. Before anything
 * is allocated, what the read takes at its peak (4 bytes a row, plus the
 * entries the rest of the file can hold) is checked against the memory
 * available (MemAvailable, the cgroup's room; the environment variable
 * KS_MEM_AVAILABLE replaces the figure): KS_ERR_MEMORY at the size line
 * otherwise, naming the bytes asked and available. The same holds for a
 * vector's dense allocation below. */
ks_error ks_mm_read_csr(const char *path, ks_csr *A, ks_mm_info *info);
/* Read a vector: array format (n x 1) or coordinate n x 1 / 1 x n.
 * *v is malloc'ed; free with free(). */
ks_error ks_mm_read_vector(const char *path, double **v, ks_int *n);
/* Write coordinate real general (".gz" suffix writes gzip). */
ks_error ks_mm_write_csr(const char *path, const ks_csr *A);
/* Write array real general n x 1. */
ks_error ks_mm_write_vector(const char *path, const double *v, ks_int n);

/* ------------------------------------------------------------- generators */
typedef enum ks_gen_kind {
    KS_GEN_POISSON2D_5,  /* 2D Laplacian, 5-point */
    KS_GEN_POISSON2D_9,  /* 2D Laplacian, 9-point */
    KS_GEN_POISSON3D_7,  /* 3D Laplacian, 7-point (cx, cy, cz scale each axis) */
    KS_GEN_POISSON3D_27, /* 3D Laplacian, 27-point */
    KS_GEN_ANISO3D,      /* 3D 7-point with coefficients cx, cy, cz */
    KS_GEN_CONVDIFF3D    /* 3D convection-diffusion, upwind, velocity vx, vy, vz */
} ks_gen_kind;

typedef struct ks_gen_params {
    ks_gen_kind kind;
    ks_int nx, ny, nz;   /* grid points per axis (nz ignored in 2D) */
    double cx, cy, cz;   /* diffusion coefficient per axis (default 1) */
    double vx, vy, vz;   /* convection velocity (convdiff only) */
} ks_gen_params;

/* Defaults: 7-point 3D, 10^3, coefficients 1, velocity (1,1,1). */
void ks_gen_params_default(ks_gen_params *p);
/* Names: "poisson2d_5", "poisson2d_9", "poisson3d_7", "poisson3d_27",
 * "aniso3d", "convdiff3d". */
ks_error ks_gen_kind_from_name(const char *name, ks_gen_kind *kind);
const char *ks_gen_kind_name(ks_gen_kind kind);
ks_error ks_generate(const ks_gen_params *p, ks_csr *A);

/* --------------------------------------------------------------- backends */
/* Every ks_<object>_destroy takes the handle's address, frees the object and
 * sets the handle to NULL, so destroying twice (or destroying NULL) is a
 * no-op rather than a double free. */
typedef struct ks_backend ks_backend;

/* name: "cpu" or "cuda". Fails with KS_ERR_UNSUPPORTED when the backend was
 * not compiled in or no device is present (the message says which). */
ks_error ks_backend_create(const char *name, ks_backend **be);
void ks_backend_destroy(ks_backend **be);
const char *ks_backend_name(const ks_backend *be);
/* 1 if ks_backend_create(name) would succeed, else 0 (no error is set). */
int ks_backend_available(const char *name);
/* Wait for all queued work (a no-op on the cpu backend). */
ks_error ks_backend_sync(ks_backend *be);
/* One line describing the device or CPU (model, threads). */
const char *ks_backend_description(const ks_backend *be);
/* Bytes allocated on the backend by every object on it and not yet freed,
 * and their peak since creation or the last reset. */
size_t ks_backend_memory_in_use(const ks_backend *be);
size_t ks_backend_memory_peak(const ks_backend *be);
void ks_backend_memory_reset_peak(ks_backend *be);
/* Refuse allocations that would take more than limit bytes in use (0: no
 * limit): KS_ERR_MEMORY naming the bytes asked, in use and the limit, the
 * call that needed them failing cleanly. For codes that share a device with
 * others, and for tests of out-of-memory paths. */
ks_error ks_backend_set_memory_limit(ks_backend *be, size_t limit);

/* ---------------------------------------------------------------- vectors */
typedef struct ks_vec ks_vec;

ks_error ks_vec_create(ks_backend *be, ks_int n, ks_vec **v);
void ks_vec_destroy(ks_vec **v);
ks_int ks_vec_size(const ks_vec *v);
ks_backend *ks_vec_backend(const ks_vec *v);
ks_error ks_vec_set_host(ks_vec *v, const double *host); /* upload n values */
ks_error ks_vec_get_host(const ks_vec *v, double *host); /* download n values */
/* Copy n doubles from / to memory of the vector's backend: a CUDA device
 * pointer on cuda (no host round trip), host memory on the cpu backend.
 * src must hold its values when called (its writers' streams done); both
 * return when the copy is complete. For device arrays of other libraries
 * (CuPy's __cuda_array_interface__ in the Python package). */
ks_error ks_vec_set_device(ks_vec *v, const void *src);
ks_error ks_vec_get_device(const ks_vec *v, void *dst);
ks_error ks_vec_fill(ks_vec *v, double a);
ks_error ks_vec_copy(const ks_vec *x, ks_vec *y);                       /* y = x */
ks_error ks_vec_scale(ks_vec *x, double a);                             /* x = a x */
ks_error ks_vec_axpy(double a, const ks_vec *x, ks_vec *y);             /* y += a x */
ks_error ks_vec_axpby(double a, const ks_vec *x, double b, ks_vec *y);  /* y = a x + b y */
ks_error ks_vec_pointwise_mult(const ks_vec *w, const ks_vec *x, ks_vec *y); /* y = w .* x */
ks_error ks_vec_dot(const ks_vec *x, const ks_vec *y, double *r);
ks_error ks_vec_norm2(const ks_vec *x, double *r);
ks_error ks_vec_norm1(const ks_vec *x, double *r);
ks_error ks_vec_norminf(const ks_vec *x, double *r);

/* ---------------------------------------------------------- block vectors */
/* A block of k vectors (columns) of n entries each, stored row-interleaved:
 * entry (i, j) at X[i*k + j], so a GPU thread group reading row i reads the
 * k columns in one coalesced access and a matrix row's values serve all k
 * columns (SpMM, ks_matrix_apply_block). Host arrays given to or taken from
 * a block use the same layout. 1 <= k <= KS_BLOCK_MAX_COLS. Per-column
 * scalars (a, b, c, results r) are host arrays of k doubles, entry j for
 * column j. Blocks are local to one process (no MPI distribution yet). */
#define KS_BLOCK_MAX_COLS 64
typedef struct ks_block ks_block;

ks_error ks_block_create(ks_backend *be, ks_int n, int k, ks_block **X);
void ks_block_destroy(ks_block **X);
ks_int ks_block_rows(const ks_block *X);
int ks_block_cols(const ks_block *X);
ks_backend *ks_block_backend(const ks_block *X);
ks_error ks_block_set_host(ks_block *X, const double *host); /* n*k values, row-interleaved */
ks_error ks_block_get_host(const ks_block *X, double *host);
/* v = X[:,j] and X[:,j] = v (v of n entries on X's backend). */
ks_error ks_block_get_col(const ks_block *X, int j, ks_vec *v);
ks_error ks_block_set_col(ks_block *X, int j, const ks_vec *v);
ks_error ks_block_fill(ks_block *X, double a);
ks_error ks_block_copy(const ks_block *X, ks_block *Y); /* Y = X (same n and k) */
/* X[:,j] *= a[j] */
ks_error ks_block_scale(ks_block *X, const double *a);
/* Y[:,j] += a[j] X[:,j] */
ks_error ks_block_axpy(const double *a, const ks_block *X, ks_block *Y);
/* Y[:,j] = a[j] X[:,j] + b[j] Y[:,j]; Y is not read in a column with b[j] == 0 */
ks_error ks_block_axpby(const double *a, const ks_block *X, const double *b, ks_block *Y);
/* Z[:,j] = a[j] X[:,j] + b[j] Y[:,j] + c[j] Z[:,j] (Z not read where c[j] == 0) */
ks_error ks_block_axpbypcz(const double *a, const ks_block *X, const double *b,
                           const ks_block *Y, const double *c, ks_block *Z);
/* Y[:,j] = w .* X[:,j] for every column (w a vector of n entries: a
 * diagonal preconditioner on k right-hand sides) */
ks_error ks_block_pointwise_mult(const ks_vec *w, const ks_block *X, ks_block *Y);
/* r[j] = X[:,j] . Y[:,j] (k values, one pass; each summed in a fixed order,
 * so the same build and backend give the same bits) */
ks_error ks_block_dot(const ks_block *X, const ks_block *Y, double *r);
/* r[j] = ||X[:,j]||_2 (overflow- and underflow-safe as ks_vec_norm2) */
ks_error ks_block_norm2(const ks_block *X, double *r);
/* Columns by index, for solvers that stop updating converged columns:
 * Y[:,i] = X[:,cols[i]] (gather) or X[:,cols[i]] = Y[:,i] (scatter) for
 * i < m, where Y has m columns and cols holds m distinct column numbers of
 * X (host array). */
ks_error ks_block_gather_cols(const ks_block *X, int m, const int *cols, ks_block *Y);
ks_error ks_block_scatter_cols(const ks_block *Y, int m, const int *cols, ks_block *X);
/* Compaction in place: X keeps only columns cols[0..m) in that order and
 * has m columns from then on (the kernels and SpMMs on it then move m
 * columns' bytes, not k). cols distinct, 1 <= m <= k. */
ks_error ks_block_keep_cols(ks_block *X, int m, const int *cols);

/* --------------------------------------------------- matrices (for SpMV) */
typedef struct ks_matrix ks_matrix;

/* Per-format parameters; 0 means "choose automatically". Formats ignore
 * parameters that do not apply to them. */
typedef struct ks_spmv_params {
    int threads_per_row; /* vector CSR / ELL-T: 1..32, a divisor of 32 */
    int slice_height;    /* sliced formats (C) */
    int sort_window;     /* SELL-C-sigma (sigma) */
    double max_fill;     /* padded formats refuse above this stored/nnz ratio */
    int ell_width;       /* HYB: ELL part width (0 = from the row-length distribution) */
    int block_rows;      /* blocked formats (bDIA, adaptive CSR): rows per block */
    int float_values;    /* 1: store the values as float32 (csr on cpu, csr_vector and
                          * dia on cuda; "auto" then picks those, or keeps bdia in
                          * float64, which moves as few bytes): a third less memory
                          * traffic, 6e-8 relative rounding of every value, for
                          * preconditioner operators (AMG hierarchy_precision) */
} ks_spmv_params;

/* Build matrix A on backend be in storage format `format` ("auto" picks
 * one for the backend). A is copied; the caller keeps ownership.
 * params may be NULL. */
ks_error ks_matrix_create(ks_backend *be, const ks_csr *A, const char *format,
                          const ks_spmv_params *params, ks_matrix **M);
/* As ks_matrix_create from CSR arrays already in memory of the backend (CUDA
 * device pointers on cuda: no host round trip; host memory on the cpu
 * backend), copied on the backend; the same rules (0-based, rows sorted,
 * no duplicates, finite values) checked there. The arrays are free to
 * change on return. For device matrices of other libraries (cupyx.scipy.sparse
 * in the Python package). */
ks_error ks_matrix_create_device(ks_backend *be, ks_int nrows, ks_int ncols, ks_int nnz,
                                 const ks_int *rowptr, const ks_int *colind, const double *val,
                                 const char *format, const ks_spmv_params *params,
                                 ks_matrix **M);
void ks_matrix_destroy(ks_matrix **M);
/* y = alpha*A*x + beta*y; x and y on the matrix's backend, distinct. */
ks_error ks_matrix_apply(ks_matrix *M, double alpha, const ks_vec *x, double beta, ks_vec *y);
/* Y = alpha*A*X + beta*Y for the k columns of blocks X (M's columns rows)
 * and Y (M's rows rows), one pass over the matrix for all k where the
 * format has an SpMM (ks_matrix_has_spmm); otherwise k SpMVs on columns
 * copied out and back (said once per matrix in the log, KS_LOG_INFO).
 * X, Y distinct, same k, on M's backend; Y not read when beta == 0.
 * Distributed matrices: KS_ERR_UNSUPPORTED (not yet done). */
ks_error ks_matrix_apply_block(ks_matrix *M, double alpha, const ks_block *X, double beta,
                               ks_block *Y);
/* 1 when M's format applies blocks in one pass (its own SpMM). */
int ks_matrix_has_spmm(const ks_matrix *M);
/* Y = A*X and dots[j] = X(:,j)'Y(:,j) for the k columns (a square M; dots a
 * host array of k), what CG needs of its SpMM: one pass over the matrix and
 * the blocks where the format sums the dots in its SpMM's epilogue (dia on
 * cuda), otherwise ks_matrix_apply_block and ks_block_dot. Y equals
 * ks_matrix_apply_block(M, 1, X, 0, Y)'s bit for bit; the dots are summed
 * in a fixed order (the same bits on every run), not ks_block_dot's.
 * KS_SPMM_DOT=0 turns the fused pass off (for A/B). */
ks_error ks_matrix_apply_block_dot(ks_matrix *M, const ks_block *X, ks_block *Y, double *dots);
/* Sizes; of a distributed matrix (ksolve_mpi.h) this rank's part: its
 * rows, the columns it owns (the length of its part of x), the nonzeros of
 * its rows. */
ks_int ks_matrix_rows(const ks_matrix *M);
ks_int ks_matrix_cols(const ks_matrix *M);
ks_int ks_matrix_nnz(const ks_matrix *M);
/* Rows of the whole matrix: ks_matrix_rows for a local matrix, the sum over
 * the ranks for a distributed one. */
ks_gint ks_matrix_global_rows(const ks_matrix *M);
/* A new vector shaped like M's rows, on M's backend (distributed like them
 * when M is distributed): the vectors a solve with M needs. */
ks_error ks_matrix_vec_create(const ks_matrix *M, ks_vec **v);
const char *ks_matrix_format(const ks_matrix *M);
/* Why "auto" chose that format (the matrix statistics behind the choice,
 * e.g. "banded: 7 occupied diagonals, fill 1.02, 125000 rows"); "" when the
 * format was named explicitly. */
const char *ks_matrix_format_reason(const ks_matrix *M);
ks_backend *ks_matrix_backend(const ks_matrix *M);
/* Host copy of the matrix in CSR (owned by M); of a distributed matrix its
 * local block (this rank's rows, the columns it owns, numbered from 0). */
const ks_csr *ks_matrix_host_csr(const ks_matrix *M);
/* Bytes one apply moves through memory (format's own layout). */
double ks_matrix_bytes_per_apply(const ks_matrix *M);
/* Replace the values (nnz entries, in the CSR order of the matrix given to
 * ks_matrix_create) keeping the sparsity pattern; for time-stepping codes
 * followed by ks_solver_resetup. Of a distributed matrix (ksolve_mpi.h):
 * collective, this rank's entries in the order of the rows it gave
 * ks_matrix_create_dist (its own order within each row); a value that is
 * not finite fails on every rank with the same message. */
ks_error ks_matrix_set_values(ks_matrix *M, const double *val);
/* The same from nnz doubles in the memory of the matrix's backend (a CUDA
 * device pointer on cuda: no host round trip; host memory on the cpu), as
 * ks_vec_set_device: val must hold its values when called. */
ks_error ks_matrix_set_values_device(ks_matrix *M, const void *val);
/* Seconds spent converting and uploading in ks_matrix_create. */
double ks_matrix_setup_seconds(const ks_matrix *M);

/* Names of the SpMV formats usable on a backend, NULL-terminated. */
const char *const *ks_spmv_format_names(const char *backend);

/* ----------------------------------------------------------------- config */
typedef struct ks_config ks_config;

/* JSON config (AmgX-style scopes, see docs/config.md): config_version and
 * the "solver" scope. Unknown keys (the ksolve tool's own, such as
 * "matrix" or "backend", included), wrong types and out-of-range values
 * fail with KS_ERR_CONFIG naming the key path (and line/column for JSON
 * syntax errors). */
ks_error ks_config_create_from_file(const char *path, ks_config **cfg);
ks_error ks_config_create_from_string(const char *json, ks_config **cfg);
/* Default config (PCG + classical AMG, relative tolerance 1e-8). */
ks_error ks_config_create_default(ks_config **cfg);
/* Set one key by path, e.g. ("solver.max_iters", "200") or
 * ("solver.preconditioner.solver", "JACOBI_L1"). The value is parsed as
 * JSON when it is valid JSON, otherwise taken as a string. */
ks_error ks_config_set(ks_config *cfg, const char *keypath, const char *value);
/* Pretty JSON of the full config with defaults filled in (free() it). */
char *ks_config_dump(const ks_config *cfg);
void ks_config_destroy(ks_config **cfg);

/* ----------------------------------------------------------------- solver */
typedef enum ks_solve_status {
    KS_SOLVE_CONVERGED = 0,
    KS_SOLVE_MAX_ITERS,   /* stopped at max_iters */
    KS_SOLVE_BREAKDOWN,   /* a Krylov quantity vanished; see breakdown */
    KS_SOLVE_DIVERGED,    /* residual grew beyond divergence tolerance */
    KS_SOLVE_NAN,         /* NaN or Inf appeared */
    KS_SOLVE_NOT_RUN
} ks_solve_status;

const char *ks_solve_status_name(ks_solve_status s);

typedef struct ks_solve_stats {
    ks_solve_status status;
    int iterations;
    double initial_residual;   /* ||r0|| in the configured norm */
    double final_residual;     /* last recurrence residual norm */
    double rhs_norm;           /* ||b|| in the configured norm */
    double relative_residual;  /* final_residual / reference of the criterion */
    double true_relative_residual; /* ||b - A x||_2 / ||b||_2 recomputed */
    double setup_seconds;
    double solve_seconds;
    char breakdown[96];        /* which quantity broke down, e.g. "p'Ap <= 0" */
    const double *history;     /* residual norms, iterations+1 entries (or NULL) */
    int history_len;
} ks_solve_stats;

typedef struct ks_solver ks_solver;

/* Create the solver described by cfg's "solver" scope on backend be. */
ks_error ks_solver_create(ks_backend *be, const ks_config *cfg, ks_solver **s);
/* Set up for A (preconditioner setup). A must outlive the solver's use.
 * A new setup releases the previous one first (an AMG hierarchy is not kept
 * beside the new one); if it fails, the solver refuses to solve until a
 * setup succeeds. */
ks_error ks_solver_setup(ks_solver *s, ks_matrix *A);
/* Re-setup after the values of A changed but not its pattern (see
 * ks_matrix_set_values): AMG keeps its coarsening and interpolation pattern
 * and recomputes the values, which is much cheaper than a fresh setup; over
 * ranks too, for every configuration. Another matrix than the last setup's,
 * or new values the kept pattern cannot hold (amg/resetup.c and
 * docs/mpi.md say when), rebuild: ks_hierarchy_info.resetup_rebuilt says
 * which happened. */
ks_error ks_solver_resetup(ks_solver *s, ks_matrix *A);
/* Solve A x = b using x as the initial guess. Returns KS_OK when the solve
 * ran (converged or not: see ks_solver_stats); an error only for invalid
 * use or device failure. */
ks_error ks_solver_solve(ks_solver *s, const ks_vec *b, ks_vec *x);
const ks_solve_stats *ks_solver_stats(const ks_solver *s);
/* Solve the k systems A X[:,j] = B[:,j] together (B, X: blocks of k
 * columns of the matrix's rows, on the solver's backend; X holds the
 * initial guesses and receives the solutions). CG/PCG, BiCGStab/PBiCGStab
 * and GMRES iterate on the k columns at once, each with its own scalars
 * and stopping rule, with one SpMM and one block preconditioner
 * application per iteration for the columns still running (a column that
 * stops is left as it is and no longer computed); the other methods
 * (FGMRES, PIPECG, PIPEBICGSTAB, AMG) solve the columns one after the
 * other. Each column ends as its single solve would (the same iterations
 * and status; results equal to rounding). Returns KS_OK when the solve
 * ran: ks_solver_stats_column has each column's statistics; ks_solver_stats
 * then summarises them (the most iterations, the first status that is not
 * CONVERGED, the largest relative residuals; no history). Local matrices
 * only (KS_ERR_UNSUPPORTED for a distributed one). */
ks_error ks_solver_solve_many(ks_solver *s, const ks_block *B, ks_block *X);
/* Columns of the last solve (1 after ks_solver_solve, k after
 * ks_solver_solve_many, 0 before any) and column j's statistics (its
 * residual history included when store_res_history is on); NULL for j out
 * of range. Valid until the next solve. */
int ks_solver_stats_count(const ks_solver *s);
const ks_solve_stats *ks_solver_stats_column(const ks_solver *s, int j);
/* Name of the method, e.g. "PCG", and of its preconditioner. */
const char *ks_solver_name(const ks_solver *s);
const char *ks_solver_preconditioner_name(const ks_solver *s);
/* Print what setup built (for AMG: the grid table, complexities and setup
 * time per phase) to out; prints nothing for simple preconditioners. */
void ks_solver_print_setup(const ks_solver *s, FILE *out);

/* What an AMG setup built, for reports, benchmarks and tuning. The arrays
 * belong to the solver and stay valid until its next setup, re-setup or
 * destroy. */
#define KS_MAX_PHASES 16
/* Steps of one cycle visit of a level, timed when profiling is on. */
typedef enum ks_cycle_step {
    KS_STEP_SMOOTH,     /* pre-smoothing passes (before the residual) */
    KS_STEP_RESIDUAL,   /* r = b - A x before restriction */
    KS_STEP_RESTRICT,   /* b_c = R r */
    KS_STEP_PROLONG,    /* x += P x_c */
    KS_STEP_COARSE,     /* the coarsest level's solve */
    KS_STEP_POSTSMOOTH, /* post-smoothing passes (after the correction) */
    KS_NSTEPS
} ks_cycle_step;

/* One level of ks_solver_hierarchy. Over MPI ranks (a distributed matrix)
 * rows and nonzeros are the whole level's, bytes this rank's. */
typedef struct ks_hierarchy_level {
    ks_int rows;
    int64_t nnz;
    int64_t p_nnz, r_nnz;    /* nonzeros of P and R to the next level (0 on the coarsest) */
    double bytes;            /* the level's operators (A, P, R; the coarsest also its
                              * inverse) where they live; level 0's A only as the
                              * cycle's own copy (FLOAT), never the caller's matrix */
    const char *format;      /* SpMV format of the level's operator */
    double step_seconds[KS_NSTEPS]; /* summed over the profiled cycles */
    long step_calls[KS_NSTEPS];
} ks_hierarchy_level;

typedef struct ks_hierarchy_info {
    int nlevels;                      /* 0: the solver has no AMG hierarchy */
    const ks_hierarchy_level *levels; /* nlevels entries, 0 = finest */
    const char *location;             /* "host" or "device": where the levels live */
    double grid_complexity;           /* sum of rows / rows of level 0 */
    double operator_complexity;       /* sum of nonzeros / nonzeros of level 0 */
    double bytes;                     /* the hierarchy's memory on its backend: what its
                                       * setup left allocated (operators, P, R, smoother data,
                                       * the levels' work vectors, the strength graphs and
                                       * splittings re-setup reuses; not the caller's matrix) */
    int coarse_direct;                /* 1: the coarsest level is solved by its explicit
                                       * inverse (one SpMV), 0: by smoothing sweeps */
    double setup_seconds;             /* the last setup or re-setup */
    int last_was_resetup;
    int resetup_rebuilt;              /* that re-setup rebuilt the whole hierarchy (another
                                       * matrix, a pattern the kept one cannot hold, or a
                                       * configuration without a values-only path); 0: only
                                       * values were recomputed */
    int nphases;                      /* setup time per phase */
    const char *phase_names[KS_MAX_PHASES];
    double phase_seconds[KS_MAX_PHASES];
    long profiled_cycles;             /* cycles timed step by step (see below) */
    const char *const *step_names;    /* KS_NSTEPS names: "presmooth", "residual", ... */
    int ranks;                        /* the MPI ranks the levels are distributed over;
                                       * 0: a one-process hierarchy (also a distributed
                                       * matrix's on a communicator of one rank, which
                                       * gets the one-process setup: docs/mpi.md) */
} ks_hierarchy_info;

/* z = M^-1 r: the preconditioner once (for AMG one cycle from z = 0), as
 * the Krylov method applies it, for codes that run their own outer
 * iteration. r and z distinct, on the solver's backend, of the matrix's
 * size; setup must have succeeded. */
ks_error ks_solver_precondition(ks_solver *s, const ks_vec *r, ks_vec *z);
/* Fill info (nlevels = 0 when the preconditioner is not AMG or setup has
 * not succeeded). */
ks_error ks_solver_hierarchy(const ks_solver *s, ks_hierarchy_info *info);
/* Profile the AMG cycles: while on, each cycle times every step on every
 * level (synchronising the backend around each, so cycles run slower, and
 * without graph replay) into ks_hierarchy_level.step_seconds. Turning it on
 * clears the sums. The block cycle of ks_solver_solve_many is profiled the
 * same way, its k columns' steps timed together and counted as one cycle. */
ks_error ks_solver_profile_cycles(ks_solver *s, int on);
void ks_solver_destroy(ks_solver **s);

/* ------------------------------------------------------------------ misc */
/* Wall-clock seconds (monotonic). */
double ks_wtime(void);

#ifdef __cplusplus
}
#endif
#endif /* KSOLVE_H */
