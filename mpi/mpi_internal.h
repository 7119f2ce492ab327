/* Private pieces of mpi/: the MPI side of ks_comm, row layouts, the split
 * of a rank's rows into local and ghost blocks, the halo exchange, and the
 * distributed part of a matrix. Only mpi/ includes mpi.h. Not installed. */
#ifndef KS_MPI_INTERNAL_H
#define KS_MPI_INTERNAL_H

#include "ksolve_mpi.h"
#include "../spmv/format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- comm.c */
/* Reductions of up to this many values gather into the comm's scratch. */
#define KS_COMM_SCRATCH_K 4

typedef struct ks_comm_mpi {
    ks_comm base;     /* first: what vec/ sees (vec/comm.h) */
    MPI_Comm comm;    /* the duplicate, MPI_ERRORS_RETURN */
    double *scratch;  /* size * KS_COMM_SCRATCH_K doubles */
    /* Bookkeeping, updated through const handles (reductions and halo
     * plans hold the comm as const: counting changes no result). */
    ks_comm_stats stats;
    /* The split-phase sum (comm.c): its values, then every rank's
     * ((size + 1) * KS_COMM_SPLIT_MAX doubles), the request, the pending
     * count (0: none) and when it began. */
    double *split;
    MPI_Request split_req;
    int split_k;
    /* The halo transport matrices made on this comm ask for
     * (ks_halo_transport: ks_comm_set_halo_transport, else KS_MPI_HALO,
     * else auto), and the NCCL communicator of halo_nccl.c, made on first
     * use and destroyed with the comm (NULL: none). */
    int halo_transport;
    struct ks_nccl *nccl;
    /* IPC halo plans made on this comm (halo_ipc.c: each plan's message
     * tags; the same count on every rank, plans being collective). */
    int ipc_plans;
    /* Destroyed IPC plans whose send buffers and events wait for their
     * neighbours' "done" (halo_ipc.c, ks_ipc_reap). */
    struct ks_ipc *ipc_dead;
} ks_comm_mpi;

/* Collective. ks_comm_agree, the first failing rank's message (prefixed
 * "rank R: ") on every rank, that rank's and the other failing ones'
 * included: the same error wherever it is read. */
ks_error ks_comm_agree_same(const ks_comm *c, ks_error e);
/* Collective (device_map.c). This rank's place among the ranks of c on
 * its node (MPI_COMM_TYPE_SHARED) and how many there are. */
ks_error ks_comm_local_rank(const ks_comm *c, int *local_rank, int *local_size);
/* Collective: KS_OK when every rank's backend has a GPU and, where
 * other_hosts is given, all ranks run on one host and, where shared is
 * given, no two ranks of a host share a GPU (ks_comm_gather_devices); else
 * KS_ERR_UNSUPPORTED on every rank, "who: " naming the first offence and
 * ending with the hint given for it. table (may be NULL): on KS_OK the
 * gathered table, c's size entries in rank order, the caller's to free. */
ks_error ks_comm_check_gpus(const ks_comm *c, ks_backend *be, const char *who,
                            const char *other_hosts, const char *shared, ks_rank_device **table);
/* The MPI communicator under c. */
MPI_Comm ks_comm_mpi_of(const ks_comm *c);
/* KS_OK for MPI_SUCCESS; else KS_ERR_MPI naming `call` and MPI's reason. */
ks_error ks_mpi_check(int rc, const char *call);

/* ---------------------------------------------------------- exchange.c */
/* Collective: every rank sends scount[r] bytes at out + sdispl[r] to rank r
 * (MPI_Alltoall of the counts, then MPI_Alltoallv of the bytes) and gets
 * what the others send it in *in (malloc'ed, ranks in order; *nbytes its
 * size; rcount/rdispl filled). Every step is agreed over the ranks, so a
 * failure on one (too many bytes, no memory, MPI) fails all; `what` names
 * the entries in messages. */
ks_error ks_exchange_bytes(const ks_comm *c, const void *out, const int *scount,
                           const int *sdispl, int *rcount, int *rdispl, void **in,
                           int64_t *nbytes, const char *what);

/* ----------------------------------------------------------- layout.c */
/* Collective: (*offsets)[0..size] from each rank's count (malloc'ed; the
 * same on every rank): rank r holds offsets[r] .. offsets[r+1]-1. */
ks_error ks_layout_gather(const ks_comm *c, ks_int nlocal, ks_gint **offsets);
/* Local. A malloc'ed copy of the layout off (size + 1 offsets); NULL when
 * out of memory. */
ks_gint *ks_layout_copy(const ks_comm *c, const ks_gint *off);
/* Even row blocks of n rows over p ranks, the first n mod p one row more:
 * rank r's first row and count. */
void ks_layout_even(ks_gint n, int p, int r, ks_gint *begin, ks_gint *count);
/* The rank owning global row g of the layout off (p + 1 offsets; empty
 * ranks hold nothing: the last rank whose block starts at or before g). */
int ks_layout_owner(const ks_gint *off, int p, ks_gint g);
/* Per-thread counts of entries bound for each of p ranks (pos[q * p + r]:
 * thread q's for rank r, `used` threads) become each thread's first place
 * in a buffer ordered by rank, then by thread; count[r] gets rank r's
 * total. Returns the sum of all counts. */
int64_t ks_layout_rank_scan(int64_t *pos, int used, int p, int64_t *count);
/* Collective: the offsets of n rows, from each rank's count (nlocal >= 0;
 * KS_ERR_SIZE on every rank when they do not add up to n) or even blocks
 * (nlocal < 0). */
ks_error ks_layout_make(const ks_comm *c, ks_int nlocal, ks_gint n, ks_gint **offsets);

/* ---------------------------------------------------------- gint_sort.c */
/* Local. v[0..n) ascending (KS_ERR_MEMORY only for more than 64 ids). */
ks_error ks_gint_sort(ks_gint *v, int64_t n);
/* Local. v[0..n) ascending with each id once, in its first *m places. */
ks_error ks_gint_sort_unique(ks_gint *v, int64_t n, int64_t *m);

/* -------------------------------------------------------------- gmap.c */
/* A compact 32-bit numbering of global ids that orders like them: the ext
 * ids below lo, all of lo .. hi - 1, the ext ids above (ext ascending,
 * none in the range). An open-addressing table finds an ext id's place:
 * the setup looks up every ghost entry, and a binary search per entry
 * dominated it on several ranks. */
typedef struct ks_gmap_slot {
    ks_gint g;
    ks_int k; /* ext[k] == g; -1: empty */
} ks_gmap_slot;

typedef struct ks_gmap {
    ks_gint lo, hi;
    ks_gint *ext;
    ks_int next, nbelow; /* nbelow: ext ids below lo */
    int own_ext;         /* ext is the map's (ks_gmap_make), else borrowed */
    ks_gmap_slot *slot;  /* hmask + 1 slots (NULL when ext is empty) */
    uint64_t hmask;
    int hshift;
} ks_gmap;

/* Local. The map of [lo, hi) and the ids of ids1 and ids2 outside it. */
ks_error ks_gmap_make(ks_gint lo, ks_gint hi, const ks_gint *ids1, int64_t n1,
                      const ks_gint *ids2, int64_t n2, ks_gmap *m);
/* The map of [lo, hi) and ext (ascending, outside the range), ext borrowed
 * (the table is the map's: ks_gmap_free). */
ks_error ks_gmap_borrow(ks_gint lo, ks_gint hi, const ks_gint *ext, ks_int next, ks_gmap *m);
void ks_gmap_free(ks_gmap *m);
/* Compact number of global id g (which the map holds), and back. */
ks_int ks_gmap_find(const ks_gmap *m, ks_gint g);
/* Position in ext of an id outside the range (which the map holds). */
ks_int ks_gmap_ext_find(const ks_gmap *m, ks_gint g);
ks_gint ks_gmap_gid(const ks_gmap *m, ks_int k);
static inline ks_int ks_gmap_size(const ks_gmap *m)
{
    return m->next + (ks_int)(m->hi - m->lo);
}

/* ----------------------------------------------------------- mm_dist.c */
/* Collective: KS_OK on every rank when each host's ranks together fit what
 * reading a file asks of them (`need`: this rank's bytes, rows r0 to
 * r0 + nloc - 1) in the memory that host has (core/host_memory.h: the
 * smallest figure its ranks see); else KS_ERR_MEMORY on every rank, the
 * message (agreed) "path:line: <what> on rank R (rows ...) ... needs X,
 * but Y of memory is available (source)", as the one-process reader's. */
ks_error ks_dist_memory_check(const ks_comm *c, uint64_t need, const char *path, long line,
                              const char *what, ks_gint r0, ks_int nloc);

/* --------------------------------------------------------- dist_csr.c */
/* A rank's rows split by column owner. */
typedef struct ks_dist_split {
    ks_csr local;       /* nloc x nloc: owned columns, minus the first row */
    ks_csr ghost;       /* nloc x nghost: other ranks' columns, by ghost number */
    ks_gint *ghost_gid; /* nghost (= ghost.ncols) global columns, ascending */
    ks_int *entry_pos;  /* ks_dist_csr_split only (else NULL): input entry k's place,
                         * k' < local.nnz in the local block's values, else
                         * k' - local.nnz in the ghost block's */
    ks_sparse dlocal, dghost; /* made on a device (ks_compact_split_device): the blocks
                               * there, local and ghost holding only their shapes;
                               * else empty */
} ks_dist_split;

/* Local (no communication): rows row_begin .. row_begin+nloc-1 of a
 * matrix with ncols columns from the caller's CSR with global columns.
 * Checks rowptr, column ranges, finite values; sorts each row; refuses a
 * column given twice. Messages name the rank, the local and global row. */
ks_error ks_dist_csr_split(int rank, ks_gint row_begin, ks_gint ncols, ks_int nloc,
                           const ks_int *rowptr, const ks_gint *colind, const double *val,
                           ks_dist_split *S);
void ks_dist_split_free(ks_dist_split *S);

/* ------------------------------------------------------------- halo.c */
/* How a halo's values travel (docs/mpi.md "Halo transports"). The setting
 * names the first five; what runs is one of the last five. */
typedef enum ks_halo_transport {
    KS_HALO_AUTO = 0, /* direct where MPI reads device memory, else nccl, else staged */
    KS_HALO_STAGED,   /* through page-locked host buffers (the backend's stage_* ops) */
    KS_HALO_DIRECT,   /* the backend's buffers to MPI as they are (CUDA-aware MPI) */
    KS_HALO_NCCL,     /* NCCL sends and receives between the GPUs (halo_nccl.c) */
    KS_HALO_IPC,      /* CUDA IPC copies between the GPUs of one host (halo_ipc.c) */
    KS_HALO_HOST      /* runs only: a host-memory backend's vectors to MPI */
} ks_halo_transport;
/* The setting's value of a name ("auto", "staged", "direct", "nccl",
 * "ipc"), or -1. */
int ks_halo_transport_parse(const char *name);
const char *ks_halo_transport_name(int t);

/* The communication plan of one matrix: which ranks send this rank which
 * of their x entries (its ghosts), and which of its own entries it sends
 * to which ranks. Built once; every apply runs begin, then end. */
typedef struct ks_halo {
    MPI_Comm comm;
    int nrecv, nsend;     /* neighbour ranks */
    int *recv_rank, *send_rank;
    ks_int *recv_start;   /* nrecv + 1: each source's slice of the ghost buffer */
    ks_int *send_start;   /* nsend + 1: each destination's slice of send_idx */
    ks_int *send_idx;     /* local rows whose x values go out, by destination */
    double *send_buf;
    MPI_Request *req;     /* nrecv receives, then nsend sends */
    /* The vectors' backend (ks_halo_attach). Without host memory (cuda)
     * the exchange stages: the entries are gathered on the backend
     * (idx_be -> send_be), copied to host buffers, sent; what arrives lands
     * in recv_host and is copied into the ghost vector. */
    ks_backend *be;
    const ks_comm *kc;    /* the plan's comm (its transport setting, its NCCL communicator) */
    ks_halo_transport transport; /* what runs (ks_halo_attach) */
    int staged;           /* transport == KS_HALO_STAGED */
    int sends_pending;    /* staged: begin queued the packed entries' copy to the host
                           * (the backend's staging queue); end waits for it, sends */
    ks_int nghost;
    ks_int *idx_be;       /* send_idx on be */
    double *send_be;      /* the packed entries on be */
    double *send_host;    /* staged: be's host buffers (host_alloc) */
    double *recv_host;
    ks_comm_stats *stats; /* the plan's comm's (ks_comm_get_stats) */
    struct ks_ipc *ipc;   /* ipc: the peers' opened buffers and events (halo_ipc.c) */
} ks_halo;

/* Collective: the plan for a rank whose rows reference the nghost global
 * columns ghost_gid (ascending, none owned by this rank) in layout
 * offsets. */
ks_error ks_halo_create(const ks_comm *c, const ks_gint *offsets, const ks_gint *ghost_gid,
                        ks_int nghost, ks_halo **h);
/* Collective. The backend of the vectors the plan exchanges, the
 * transport (the comm's setting, agreed over the ranks: a setting that
 * cannot run is KS_ERR_UNSUPPORTED on every rank, saying why) and its
 * buffers (staged: the host ones; nccl: the comm's NCCL communicator, made
 * on first use; ipc: ks_ipc_setup). Local failures are the caller's to agree. */
ks_error ks_halo_attach(ks_halo *h, ks_backend *be, ks_int nghost);
/* Tests: plans attached while this is set stage on any backend, whatever
 * the setting (the cpu then runs the path cuda takes, with copies that
 * are memcpy). */
extern int ks_halo_stage_always;
/* Tests: plans attached to this backend take its vectors for device memory
 * (a cpu backend then runs a device backend's transports: staged, or
 * direct where MPI is CUDA-aware; its matrices stay host ones, the cpu's
 * formats needing host memory). NULL: none. */
extern const ks_backend *ks_halo_device_backend;
/* 1 when the MPI library reads and writes device memory (Open MPI's
 * MPIX_Query_cuda_support at run time, where the library was built with
 * the extension); KS_MPI_CUDA_AWARE=0 in the environment says 0 anyway. */
int ks_mpi_cuda_aware(void);
/* Tests: -1 (the default) asks as above; 0 or 1 is the answer instead,
 * whatever the library and the environment say (no machine here has a
 * CUDA-aware MPI: 1 runs the direct transport on ks_halo_device_backend,
 * tests/test_mpi.c). */
extern int ks_mpi_cuda_aware_force;
/* Post the receives into ghost (nghost doubles), pack x's entries the
 * neighbours need and send them; returns once the sends are posted (a
 * staged exchange only queues the packing and its copy to the host, and
 * end sends). x and ghost are in the attached backend's memory. */
ks_error ks_halo_begin(ks_halo *h, const double *x, double *ghost);
/* Wait until the neighbours' values have arrived and the sends are done;
 * staged, the copy into ghost is queued on the backend's staging queue,
 * and work queued on the backend afterwards waits for it. */
ks_error ks_halo_end(ks_halo *h, double *ghost);
/* Host bytes the plan holds. */
double ks_halo_bytes(const ks_halo *h);
void ks_halo_destroy(ks_halo *h);

/* -------------------------------------------------------- halo_nccl.c */
#ifdef KS_HAVE_NCCL
/* Collective. The comm's NCCL communicator on be's device (made on first
 * call: ncclGetUniqueId on rank 0, MPI_Bcast, ncclCommInitRank). Refused
 * before any NCCL call, KS_ERR_UNSUPPORTED on every rank naming them,
 * when a rank has no GPU or two ranks share one (NCCL cannot put two
 * ranks on one device; ks_comm_gather_devices tells),
 * or when be's device is not the one the communicator was made on; NCCL's
 * failures are KS_ERR_DEVICE naming the call. */
ks_error ks_nccl_ready(const ks_comm *c, ks_backend *be);
/* Queues h's sends and receives on be's staging queue after the work
 * queued on be (the gather): each source's values straight into its
 * slice of ghost, each destination's slice of h->send_be sent. The caller
 * orders later work on be after them (stage_upload of 0 bytes). */
ks_error ks_nccl_exchange(ks_halo *h, double *ghost);
void ks_nccl_free(struct ks_nccl *n);
#endif

/* --------------------------------------------------------- halo_ipc.c */
#ifdef KS_HAVE_CUDA
/* Collective: KS_OK when every rank's backend has a GPU and all run on one
 * host (ks_comm_gather_devices), else KS_ERR_UNSUPPORTED on every rank
 * naming the first rank that does not. */
ks_error ks_ipc_one_host(const ks_comm *c, ks_backend *be);
/* Collective: *fits = 1 on every rank when auto may run ipc: every rank
 * has its own GPU, all on one host, and each sees the others' GPUs and may
 * access them (no CUDA_VISIBLE_DEVICES of one GPU a rank, peer access);
 * else 0. Errors only for failures (memory, MPI), agreed. */
ks_error ks_ipc_auto_fits(const ks_comm *c, ks_backend *be, int *fits);
/* ks_comm_check_gpus's hint where ranks run on several hosts. */
#define KS_IPC_OTHER_HOSTS "CUDA IPC joins the GPUs of one host: use nccl or staged"
/* Collective (h attached to a cuda backend, idx_be made): refused on every
 * rank, KS_ERR_UNSUPPORTED naming them, unless every rank has a GPU and
 * all run on one host; then h->send_be (nout values) from cudaMalloc, the
 * interprocess events, the handles exchanged and the neighbours' opened
 * (a failure anywhere: KS_ERR_DEVICE or KS_ERR_MPI naming the call on
 * every rank, all of it given back). */
ks_error ks_ipc_setup(ks_halo *h, ks_int nout);
/* begin: the last pulls of the send buffer waited for (host tokens,
 * device events), x's nout entries gathered into it, the destinations
 * told; end: the sources' slices copied into ghost on the staging queue,
 * the sources told, later work on be ordered after the copies. */
ks_error ks_ipc_begin(ks_halo *h, const double *x, ks_int nout);
ks_error ks_ipc_end(ks_halo *h, double *ghost);
/* Not collective. The last exchange drained (its tokens, this rank's
 * queues), the neighbours' handles closed, "done" sent to each; this
 * rank's send buffer and events go to the comm's list until each
 * neighbour's "done" came (ks_ipc_reap). */
void ks_ipc_free(ks_halo *h);
/* Frees the listed plans whose neighbours have all said "done", trying
 * for up to wait_s seconds (0: once); those still waiting stay listed,
 * or (wait_s < 0) are freed anyway, their tokens cancelled.
 * ks_comm_destroy gives them a few seconds, then frees them anyway. */
void ks_ipc_reap(ks_comm_mpi *m, double wait_s);
#endif

/* ---------------------------------------------------------- mm_dist.c */
/* Tests: entries per message of ks_mm_read_dist, as rank 0 sets it (0:
 * the default), so that small files travel in many messages. */
extern int ks_mm_dist_chunk;

/* ------------------------------------------------------ dist_matrix.c */
typedef struct ks_dist_impl {
    ks_matrix_dist base;  /* first: what spmv/ sees (spmv/format.h) */
    ks_halo *halo;
    ks_vec *xghost;       /* x's ghost entries, filled by the halo exchange */
    ks_gint *ghost_gid;   /* global column of each ghost */
    ks_int nghost;
    ks_int *entry_pos;    /* the split's (NULL: built by the AMG, no caller order) */
    ks_vec *gs_rhs;       /* the Gauss-Seidel sweep's right side (dist_gs.c; made on first use) */
} ks_dist_impl;

/* Collective. The distributed matrix of split rows S (its blocks and ghost
 * ids taken, the blocks copied where the backend has no host memory: free
 * S after) with rows
 * laid out by row_offsets and columns by col_offsets (both size + 1, the
 * same on every rank, taken, also on failure; col_offsets NULL: square, the
 * rows' layout). S's local block holds the columns this rank owns in the
 * column layout. The AMG transfer operators P and R are such matrices. */
ks_error ks_dist_matrix_from_split(ks_backend *be, const ks_comm *comm, ks_gint *row_offsets,
                                   ks_gint *col_offsets, ks_dist_split *S, const char *format,
                                   const ks_spmv_params *params, ks_matrix **M);

/* Collective. A copy of the distributed M (its layouts, ghost columns and
 * values) whose blocks are made anew with `format` (the local block; the
 * ghost block "auto") and params (the ghost block takes float_values
 * alone), with a halo plan of its own: the AMG's float32 hierarchy. M is
 * read through its blocks' host CSR. */
ks_error ks_dist_matrix_recast(const ks_matrix *M, const char *format,
                               const ks_spmv_params *params, ks_matrix **out);

/* Not collective. Forget the caller's entry order of a distributed M that
 * no caller will give new values (the AMG's coarse operators): its
 * ks_int per entry is freed; ks_matrix_set_values then refuses M. */
void ks_dist_drop_entry_order(ks_matrix *M);
/* Collective. New values for d (ks_dist_ops.set_values; dist_values.c). */
ks_error ks_dist_set_values(ks_matrix_dist *d, const void *val, int on_backend, const char *fn);

/* One hybrid (processor-block) Gauss-Seidel sweep (dist_gs.c;
 * ks_dist_ops.gs_sweep). */
ks_error ks_dist_gs_sweep(ks_matrix_dist *d, const ks_vec *b, ks_vec *x, int reverse);

/* y = alpha A x + beta y: the halo exchange around the local block's
 * product, then the ghost block's (dist_apply.c; ks_dist_ops.apply). */
ks_error ks_dist_apply(ks_matrix_dist *d, double alpha, const ks_vec *x, double beta, ks_vec *y);
/* The distributed fused pass (ks_dist_ops.fused_step, mpi/dist_apply.c). */
ks_error ks_dist_fused_step(ks_matrix_dist *d, const ks_fused_step *f);

#ifdef __cplusplus
}
#endif
#endif
