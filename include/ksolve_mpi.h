/* ksolve over MPI: matrices and vectors distributed in contiguous row
 * blocks over the ranks of a communicator (docs/mpi.md). The Krylov
 * methods run unchanged on them: ks_matrix_apply exchanges the ghost
 * values of x with the neighbouring ranks, and every reduction of a
 * distributed vector adds the ranks' partial results in rank order, so all
 * ranks see the same bits, run after run with the same rank count.
 *
 * Collective calls (marked so) must be made by every rank of the
 * communicator in the same order. A collective call that fails on one rank
 * fails on every rank (the others get the failing rank's message, prefixed
 * with its number), so no rank is left waiting. Every operation of a
 * distributed solve (ks_matrix_apply, the reductions of ks_vec_dot and the
 * norms, ks_solver_setup and ks_solver_solve on a distributed matrix) is
 * collective too.
 *
 * AMG on a distributed matrix: classical AMG with PMIS on the cpu backend
 * (the coarsest level gathered and solved on every rank); its other options
 * fail with KS_ERR_UNSUPPORTED naming them (docs/mpi.md).
 *
 * Not done yet: distributed matrices on the cuda backend, a
 * parallel read of a Matrix Market file (rank 0 reads it and sends the
 * rows). */
#ifndef KSOLVE_MPI_H
#define KSOLVE_MPI_H

#include <mpi.h>

#include "ksolve.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ communicator */
typedef struct ks_comm ks_comm;

/* Collective. A ks_comm over a duplicate of comm (ksolve's messages never
 * meet the caller's) with MPI_ERRORS_RETURN, so a failing MPI call becomes
 * KS_ERR_MPI naming the call and MPI's reason. MPI must be initialised. */
ks_error ks_comm_create(MPI_Comm comm, ks_comm **c);
/* Collective (frees the duplicate; after MPI_Finalize only the memory).
 * Destroy the matrices and vectors made on c first. */
void ks_comm_destroy(ks_comm **c);
int ks_comm_rank(const ks_comm *c);
int ks_comm_size(const ks_comm *c);
/* Collective. The outcome of a step that may have failed on some ranks
 * only: e on the ranks where it failed; on the others the failure of the
 * lowest failing rank (its code, and its message prefixed "rank N: "), so
 * every rank can stop before the next collective call instead of waiting
 * there alone. KS_OK when every rank succeeded. */
ks_error ks_comm_agree(const ks_comm *c, ks_error e);
/* Collective. v[0..k) = the sum over the ranks of each rank's v[0..k),
 * added in rank order: the same bits on every rank and in every run with
 * the same rank count (what the distributed vectors' reductions use). */
ks_error ks_comm_sum(const ks_comm *c, double *v, int k);
/* Collective. v[0..k) = the maximum over the ranks (NaN when any is NaN). */
ks_error ks_comm_max(const ks_comm *c, double *v, int k);
/* Collective. v[0..k) = the exact sum over the ranks. */
ks_error ks_comm_sum_gint(const ks_comm *c, ks_gint *v, int k);

/* Not collective. How the halo exchanges of distributed matrices made on
 * c afterwards move their values (docs/mpi.md "Halo transports"):
 *   "staged": through page-locked host buffers and MPI;
 *   "direct": the vectors' memory to MPI as it is (device memory: a
 *             CUDA-aware MPI);
 *   "nccl":   NCCL sends and receives GPU to GPU (a build with NCCL, every
 *             rank its own GPU);
 *   "ipc":    CUDA IPC copies GPU to GPU on the copy engines (a build with
 *             CUDA, every rank's backend cuda, all ranks on one host; ranks
 *             may share a GPU); auto does not pick it;
 *   "auto":   the default: direct where MPI reads the vectors' memory
 *             (always for host memory), else nccl where it can run, else
 *             staged.
 * KS_MPI_HALO in the environment gives the default before any call. Set
 * the same on every rank: matrix creation agrees it over the ranks, and a
 * transport that cannot run there (nccl without NCCL or with two ranks on
 * one GPU, ipc off cuda or over several hosts, direct without a CUDA-aware
 * MPI) fails with KS_ERR_UNSUPPORTED
 * on every rank, saying why. KS_ERR_ARG for another name. */
ks_error ks_comm_set_halo_transport(ks_comm *c, const char *transport);
/* The setting ("auto", "staged", "direct", "nccl" or "ipc"). */
const char *ks_comm_halo_transport(const ks_comm *c);

/* What this rank spent communicating since ks_comm_create or the last
 * ks_comm_reset_stats: the halo exchanges of distributed matrix products
 * on c (the host's time: posting them, staging device buffers, and
 * waiting for them; the local product they overlap is not counted; with
 * nccl the host only queues them (ipc: queues them and waits for the
 * neighbours' tokens), so the figure is that queueing, and the
 * transfer's own time shows in bench/bench_halo) and the reductions
 * (ks_comm_sum, ks_comm_max and the vectors' dot products and norms). */
typedef struct ks_comm_stats {
    long long halo_exchanges;
    double halo_seconds;
    double halo_bytes_sent; /* values sent by this rank, in bytes */
    long long reductions;
    double reduce_seconds;
} ks_comm_stats;
/* Not collective: this rank's figures. */
ks_error ks_comm_get_stats(const ks_comm *c, ks_comm_stats *stats);
void ks_comm_reset_stats(ks_comm *c);

/* ------------------------------------------------------------ one GPU a rank */
/* Collective. Makes this rank's GPU current on the calling thread, so a
 * cuda backend created afterwards on it runs there (call it first). map:
 *   "local"      the rank's place among the ranks of c on its node (MPI's
 *                shared-memory split) modulo the node's GPUs: rank k of a
 *                node on GPU k mod G (the default);
 *   "none"       the current device is left alone (*device = -1), for a
 *                caller that chooses it itself;
 *   "N"          every rank on GPU N;
 *   "N,M,..."    the node's k-th rank on the (k mod length)-th entry.
 * NULL: the environment variable KS_GPU_MAP (same syntax) when set and not
 * empty, else "local"; an explicit map wins over KS_GPU_MAP. The GPUs are
 * those the process sees (CUDA_VISIBLE_DEVICES applies). *device: the GPU
 * chosen. A malformed map or an index beyond the node's GPUs is KS_ERR_ARG,
 * no GPU (or a build without CUDA) KS_ERR_UNSUPPORTED, naming the map (and
 * KS_GPU_MAP when it came from there), on every rank alike. */
ks_error ks_comm_select_device(const ks_comm *c, const char *map, int *device);

/* Collective. This rank's fair share of the CPUs it may run on: the CPUs
 * of its affinity mask divided among the ranks of its node with the same
 * mask (at least 1). Under mpirun the ranks of a node often share one mask
 * (--bind-to none, or one package each), and OpenMP's default, a thread a
 * CPU of the mask, then puts several threads on each core; the tool takes
 * this count when neither --threads nor OMP_NUM_THREADS says one. */
ks_error ks_comm_share_threads(const ks_comm *c, int *threads);

/* A rank's host and the GPU its backend runs on. */
typedef struct ks_rank_device {
    char host[64];        /* MPI_Get_processor_name, truncated */
    int device;           /* the GPU's index; -1: the backend has none (cpu) */
    char name[96];        /* "NVIDIA H100 80GB HBM3"; "" without a GPU */
    char pci_bus_id[32];  /* "0000:1b:00.0"; "" without a GPU */
} ks_rank_device;
/* Collective. Every rank's ks_rank_device for be (each rank's own backend),
 * in rank order, on every rank: all has ks_comm_size(c) entries. */
ks_error ks_comm_gather_devices(const ks_comm *c, const ks_backend *be, ks_rank_device *all);

/* ----------------------------------------------------------------- vectors */
/* Collective. A vector with nlocal entries on this rank, the ranks' parts
 * following each other in rank order. ks_vec_size, ks_vec_set_host and
 * ks_vec_get_host see this rank's part; the reductions (ks_vec_dot, the
 * norms) are over all ranks and collective. Vectors of one operation must
 * be laid out alike over one ks_comm (KS_ERR_SIZE or KS_ERR_ARG on every
 * rank otherwise). */
ks_error ks_vec_create_dist(ks_backend *be, const ks_comm *comm, ks_int nlocal, ks_vec **v);
/* The comm v is distributed over (NULL for a local vector). */
const ks_comm *ks_vec_comm(const ks_vec *v);
/* Global index of this rank's first entry (0 for a local vector) and the
 * entries of all ranks together (ks_vec_size for a local vector). */
ks_gint ks_vec_row_begin(const ks_vec *v);
ks_gint ks_vec_global_size(const ks_vec *v);

/* ---------------------------------------------------------------- matrices */
/* Collective. A square matrix of ncols_global rows and columns from each
 * rank's rows: rank r holds rows offset_r .. offset_r + nlocal_rows - 1,
 * offset_r being the sum of the lower ranks' nlocal_rows (a rank may have
 * none); the ranks' nlocal_rows must add up to ncols_global. rowptr
 * (nlocal_rows + 1, from 0), colind (global column numbers, 0-based) and
 * val are this rank's CSR rows; they are copied. Each row's columns may
 * come in any order (they are sorted); a column given twice in a row is
 * refused (not summed), as are columns outside 0..ncols_global-1 and
 * values that are not finite: KS_ERR_ARG naming the rank, the local and
 * global row and the column. The columns x's ranks hold are split alike:
 * x and y of an apply are laid out like the rows (ks_matrix_vec_create).
 *
 * Each rank keeps a local block (the columns it owns) in `format` (NULL or
 * "auto": the backend's choice) and a ghost block (the other ranks'
 * columns, compressed; auto's format on the cpu, coo on cuda: docs/mpi.md).
 * Any backend (cpu, cuda). ks_matrix_rows, ks_matrix_cols and
 * ks_matrix_nnz are this rank's; ks_matrix_global_rows the whole.
 * ks_matrix_set_values(_device) later takes new values in the order of
 * these rowptr/colind (collective; docs/mpi.md "New values"). */
ks_error ks_matrix_create_dist(ks_backend *be, const ks_comm *comm, ks_int nlocal_rows,
                               ks_gint ncols_global, const ks_int *rowptr, const ks_gint *colind,
                               const double *val, const char *format,
                               const ks_spmv_params *params, ks_matrix **M);
/* The comm M is distributed over (NULL for a local matrix). */
const ks_comm *ks_matrix_comm(const ks_matrix *M);
/* Global number of this rank's first row (0 for a local matrix). */
ks_gint ks_matrix_row_begin(const ks_matrix *M);
/* Not collective. This rank's halo of a distributed M: the ghost values it
 * receives per product, the values it sends, and its neighbour ranks (those
 * it receives from or sends to). A local matrix has none: all zero. */
ks_error ks_matrix_halo_size(const ks_matrix *M, ks_int *nghost, ks_int *nsend, int *neighbours);
/* The transport M's halo exchange runs: "host" (a host-memory backend's
 * vectors to MPI), "staged", "direct", "nccl" or "ipc" (the same on every rank);
 * NULL for a local matrix. */
const char *ks_matrix_halo_transport(const ks_matrix *M);

/* ------------------------------------------------------ parallel generation */
/* One rank's rows of a matrix with global column numbers. */
typedef struct ks_dist_csr {
    ks_int nrows;       /* this rank's rows */
    ks_int nnz;
    ks_gint row_begin;  /* global number of the first of them */
    ks_gint nrows_global, ncols_global;
    ks_int *rowptr;     /* nrows + 1, from 0 */
    ks_gint *colind;    /* nnz global columns, sorted within each row */
    double *val;        /* nnz */
} ks_dist_csr;

void ks_dist_csr_free(ks_dist_csr *A);

/* Collective. This rank's rows of the matrix ks_generate(p) makes (the
 * same values, bit for bit), and nothing else: no rank ever holds the
 * whole matrix. nlocal < 0: even row blocks (the first n mod p ranks one
 * row more); else this rank's row count (the counts must add up to the
 * grid's rows). Hand the result to ks_matrix_create_dist. */
ks_error ks_generate_dist(const ks_comm *comm, const ks_gen_params *p, ks_int nlocal,
                          ks_dist_csr *A);

/* ------------------------------------------------------------ Matrix Market */
/* Collective. This rank's rows of the square matrix in the Matrix Market
 * file path (.mtx, or .mtx.gz read directly): bit for bit the rows that
 * ks_mm_read_csr gives one process (symmetric and skew files expanded,
 * pattern values 1.0, duplicates summed in file order). Rank 0 reads the
 * file once and sends each rank its rows in chunks as it reads: no rank
 * holds the whole matrix (rank 0 holds its own rows and a chunk per rank).
 * nlocal < 0: even row blocks (the first n mod p ranks one row more); else
 * this rank's row count (a rank may have none; the counts must add up to
 * the matrix's rows: KS_ERR_SIZE on every rank otherwise). Every rank
 * returns the same outcome: a missing file (KS_ERR_IO), a malformed line
 * (KS_ERR_FORMAT, "path:LINE: what is wrong"), a matrix that is not square
 * (KS_ERR_SIZE), the other ranks' messages prefixed "rank 0: ". info (may
 * be NULL): the file's field and symmetry, its entries and the duplicates
 * summed, over the whole file, the same on every rank. Hand the result to
 * ks_matrix_create_dist; free it with ks_dist_csr_free. */
ks_error ks_mm_read_dist(const ks_comm *comm, const char *path, ks_int nlocal, ks_dist_csr *A,
                         ks_mm_info *info);
/* Collective. This rank's part of the vector file path (what
 * ks_mm_read_vector reads), split like rows: nlocal entries here (pass the
 * matrix's rows, ks_dist_csr.nrows or ks_matrix_rows; nlocal < 0: even
 * blocks); the counts must add up to the file's length (KS_ERR_SIZE on
 * every rank otherwise). Rank 0 reads the file and scatters the parts.
 * *v: malloc'ed, *n entries; free with free(). */
ks_error ks_mm_read_vector_dist(const ks_comm *comm, const char *path, ks_int nlocal,
                                double **v, ks_int *n);
/* Collective. The ranks' parts (nlocal entries each, in rank order)
 * gathered on rank 0, which writes them as ks_mm_write_vector does (array
 * real general; ".gz" writes gzip); its outcome on every rank. */
ks_error ks_mm_write_vector_dist(const ks_comm *comm, const char *path, const double *v,
                                 ks_int nlocal);

#ifdef __cplusplus
}
#endif
#endif /* KSOLVE_MPI_H */
