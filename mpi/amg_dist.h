/* Private pieces of the distributed AMG setup (on host arrays: a cuda
 * level's are read through ks_matrix_host_csr): classical
 * strength across rank boundaries, PMIS with ghost measures and states
 * exchanged, the global numbering of the C points, direct and extended+i
 * interpolation rows and their truncation (the Galerkin product is in
 * rap_dist.h). The level loop over them is amg_dist_setup.h's. Only mpi/
 * and the tests include this. Not installed. */
#ifndef KS_AMG_DIST_H
#define KS_AMG_DIST_H

#include "mpi_internal.h"
#include "../amg/kernels.h"
#include "../amg/cpu/coarsen_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------- amg_dist_classical.c */
/* Under KS_AMG_TRACE, rank 0 prints a sub-step of a setup phase (its own
 * wall time since *t0, no reduction, so callable where not every rank
 * passes; c NULL: MPI_COMM_WORLD's rank 0) and moves *t0 on; otherwise
 * nothing but *t0 moved on. */
void ks_amg_dist_substep(const ks_comm *c, const char *what, double *t0);

/* ------------------------------------------------------- halo_typed.c */
/* The neighbour exchange of a ks_halo plan for any element type (the
 * plan's own buffers hold doubles): owners send the entries of their rows
 * that other ranks ghost, in the plan's order. The buffers are allocated
 * once (collective: agreed), so an exchange allocates nothing. */
typedef struct ks_halo_typed {
    const ks_halo *h;  /* borrowed */
    MPI_Datatype type;
    size_t size;       /* bytes of one element */
    unsigned char *buf;
    MPI_Request *req;
} ks_halo_typed;

/* Collective. Elements of `size` bytes, MPI type `type`. */
ks_error ks_halo_typed_create(const ks_comm *c, const ks_halo *h, MPI_Datatype type, size_t size,
                              ks_halo_typed *x);
/* ghost[g] = the owner's own[row] for every ghost g of the plan. Not
 * collective, but every neighbour must call it: callers agree on the
 * outcome before their next collective. Waits for every request posted,
 * also after a failure. */
ks_error ks_halo_typed_forward(ks_halo_typed *x, const void *own, void *ghost);
/* The same with the values to send already packed in the plan's send order
 * (ks_halo_typed_count of them; packed NULL: the exchange's own buffer). */
ks_error ks_halo_typed_forward_packed(ks_halo_typed *x, const void *packed, void *ghost);
ks_int ks_halo_typed_count(const ks_halo_typed *x);
void ks_halo_typed_free(ks_halo_typed *x);

/* -------------------------------------------------------- halo_rows.c */
/* Own row `row`'s entries (elements of the size given to the fetch) packed
 * at out; returns their count (out NULL: only counts). */
typedef ks_int (*ks_halo_row_pack)(const void *ctx, ks_int row, void *out);

/* Collective (agreed). Whole rows through plan h: the owners send, for
 * every row a neighbour ghosts, its entries as pack writes them; this
 * rank gets its nghost ghost rows in the plan's order: *rowptr (nghost + 1
 * offsets) and *in (rowptr[nghost] entries of `size` bytes), malloc'ed.
 * nown: this rank's own rows (what the plan's send indices count). */
ks_error ks_halo_rows_fetch(const ks_comm *c, const ks_halo *h, ks_int nown, ks_int nghost,
                            size_t size, ks_halo_row_pack pack, const void *ctx, ks_int **rowptr,
                            void **in);

/* ----------------------------------------------------- strength_dist.c */
/* A distributed strength graph: this rank's rows i (local numbers), their
 * strong columns split like the matrix (owned columns in `local`, local
 * numbers; other ranks' columns in the ghost part, numbered as the
 * matrix's ghost block). The layout, ghost ids and halo plan are the
 * matrix's (borrowed: A outlives S). */
typedef struct ks_dist_strength {
    const ks_comm *comm;
    const ks_gint *offsets;   /* size + 1, the matrix's */
    ks_gint row_begin;
    ks_int nloc, nghost;      /* nghost: the matrix's ghost count */
    const ks_gint *ghost_gid; /* nghost, ascending */
    const ks_halo *halo;      /* the matrix's plan */
    ks_strength local;        /* nloc x nloc */
    ks_int *grp, *gci;        /* ghost part: nloc + 1 row pointers, ghost numbers */
    ks_sparse dlocal, dghost; /* made on a device: the same two parts there (the
                               * interpolation's local system reads them), until
                               * ks_dist_strength_drop_dev; else empty */
} ks_dist_strength;
/* Frees S's device copies (the host parts stay). */
void ks_dist_strength_drop_dev(ks_dist_strength *S);

/* Collective. The classical strength of a distributed cpu matrix A, row
 * for row what ks_amg_strength_classical gives for the global matrix
 * (theta, max_row_sum and the sign rule the same; each row's sum is taken
 * in global column order, so the max_row_sum test sees the same bits). */
ks_error ks_dist_strength_classical(const ks_matrix *A, double theta, double max_row_sum,
                                    ks_dist_strength *S);
void ks_dist_strength_free(ks_dist_strength *S);

/* ---------------------------------------------------- pmis_graph_dist.c */
/* S and S^T of this rank's points in one numbering: 0 .. nloc-1 the own
 * points, nloc + e the external point ext_gid[e]: every other rank's
 * point this rank's rows depend on (S's ghost part) or that depends on
 * one of this rank's points (S^T across ranks, learnt from the owners of
 * those rows). The plan `halo` fills values of the external points. */
typedef struct ks_dist_graph {
    ks_int nloc, next;
    ks_gint row_begin;
    ks_gint *ext_gid;       /* next, ascending */
    ks_int *srp, *sci;      /* S: nloc rows, columns in the joint numbering */
    ks_int *trp, *tci;      /* S^T: nloc rows, the same numbering */
    ks_halo *halo;          /* over ext_gid */
    /* Where the strength's device parts made it (be NULL: host only): the
     * same rows and ext_gid in be's memory, where PMIS's rounds run. */
    ks_backend *be;
    ks_sparse dS, dT;
    ks_gint *dext_gid;
} ks_dist_graph;

/* Collective. */
ks_error ks_dist_graph_create(const ks_dist_strength *S, ks_dist_graph *G);
/* G's rows on the host (srp, sci, trp, tci): a graph made on a device
 * keeps them there until this downloads them. Local. */
ks_error ks_dist_graph_host_rows(ks_dist_graph *G);
void ks_dist_graph_free(ks_dist_graph *G);

/* ---------------------------------------------------------- pmis_dist.c */
/* Collective. cf[i] (nloc entries) for this rank's points: the splitting
 * ks_amg_pmis gives for the global strength graph with the same seed,
 * point for point (the serial fix-up included, reproduced in rounds). *nc:
 * this rank's C points. */
ks_error ks_dist_pmis(const ks_dist_strength *S, unsigned long long seed, int *cf, ks_int *nc);
/* Collective. The same rounds from the states cf holds on entry (KS_CPT
 * and KS_FPT kept, KS_UNDECIDED points decided), then the fix-up over all
 * points: ks_amg_pmis_stage of the global graph, as HMIS's second stage
 * (hmis_dist.c). */
ks_error ks_dist_pmis_from(const ks_dist_strength *S, unsigned long long seed, int *cf,
                           ks_int *nc);
/* Collective. ks_dist_pmis_from on G, S's graph (ks_dist_graph_create),
 * which the caller made for its own use too. */
ks_error ks_dist_pmis_graph(const ks_dist_strength *S, const ks_dist_graph *G,
                            unsigned long long seed, int *cf, ks_int *nc);
/* Collective. The splitters' argument check (S, cf where S has points,
 * nc), agreed; `who` names the splitter in the message. */
ks_error ks_dist_split_args(const ks_dist_strength *S, const int *cf, const ks_int *nc,
                            const char *who);

/* ---------------------------------------------------------- hmis_dist.c */
/* Collective. HMIS over ranks: ks_amg_hmis's RS first pass on each
 * rank's rows of the global strength graph (the other ranks' points
 * counted, not decided), then ks_dist_pmis_from's stage on what it left.
 * On one rank: ks_amg_hmis's splitting, point for point; on more, a
 * splitting of the partition (the same every run). */
ks_error ks_dist_hmis(const ks_dist_strength *S, unsigned long long seed, int *cf, ks_int *nc);

/* ------------------------------------------------------ coarse_ids_dist.c */
/* The coarse grid's global numbering: each rank's C points consecutively
 * in index order after those of the lower ranks (the serial order of the
 * C points). */
typedef struct ks_dist_coarse {
    ks_gint nc_global, c_begin; /* this rank's C points: c_begin .. + nc - 1 */
    ks_int nc;
    ks_gint *cid;               /* nloc: coarse id of each own point, -1 for F */
    int *ghost_cf;              /* nghost (S's ghost numbering): the owners' cf */
    ks_gint *ghost_cid;         /* nghost: their coarse ids, -1 for F */
} ks_dist_coarse;

/* Collective. From this rank's splitting cf of S's points. */
ks_error ks_dist_coarse_ids(const ks_dist_strength *S, const int *cf, ks_dist_coarse *C);
void ks_dist_coarse_free(ks_dist_coarse *C);
/* The C points of cf[0, n) in index order, threaded (chunk counts, then
 * their scan): cid (if not NULL) gets first, first + 1, ... at the C points
 * and -1 at the F points; list (if not NULL) gets src[i] of each C point i,
 * compact. Local. */
void ks_dist_cpt_walk(const int *cf, ks_int n, ks_gint first, ks_gint *cid,
                      const ks_gint *src, ks_gint *list);

/* -------------------------------------------------------- interp_dist.c */
/* This rank's rows of an interpolation P (fine rows row_begin .. + nloc
 * - 1) with global coarse column ids, ascending in each row. The coarse
 * layout is each rank's C count: this rank's coarse points are c_begin ..
 * c_begin + nc - 1. */
typedef struct ks_dist_prows_dev ks_dist_prows_dev;
typedef struct ks_dist_prows {
    const ks_comm *comm;
    ks_int nloc;
    ks_gint row_begin;
    ks_gint c_begin, nc_global;
    ks_int nc;
    ks_int *rowptr;  /* nloc + 1 */
    ks_gint *col;    /* rowptr[nloc] global coarse ids */
    double *val;
    ks_dist_prows_dev *dev; /* NULL, or the same rows where a device built them */
} ks_dist_prows;

/* Interpolation rows as a device builder left them (ks_dist_interp on a
 * backend with device memory): the rows of the builder's local system,
 * this rank's from r0 on (none before: the builders fill those only), the
 * columns its C points in point order (compact: the other ranks' below
 * this rank's range first, then this rank's c_begin .. c_begin + nc - 1,
 * then the others above), ext the global ids of the others, ascending.
 * Valid while the host rows are the same rows in the same coarse layout
 * (c_begin, nc): what changes them drops it (ks_dist_prows_drop_dev). */
struct ks_dist_prows_dev {
    ks_sparse rows;
    ks_int r0;
    ks_gint c_begin;
    ks_int nc;
    ks_gint *ext;
    ks_int next;
};
/* Frees P's device rows (P->dev NULL after). */
void ks_dist_prows_drop_dev(ks_dist_prows *P);
/* Local. P's own rows on the device as a view (rows r0 .. r0 + nloc - 1 of
 * the builder's) with the map of their compact columns (ext borrowed: free
 * the map's table with ks_gmap_free); 0 when P has no valid device rows. */
int ks_dist_prows_dev_view(const ks_dist_prows *P, ks_sparse *T, ks_gmap *cols);

/* Truncation of interpolation rows as they are built (ks_dist_interp):
 * ks_amg_interp_truncate's parameters; both 0 (or no struct): none. */
typedef struct ks_dist_trunc {
    int max_elements;
    double factor;
} ks_dist_trunc;

/* 1 when tr (may be NULL) truncates anything. */
int ks_dist_trunc_active(const ks_dist_trunc *tr);

/* Collective. Interpolation `kind` (D1 or extended+i) of this rank's rows:
 * row for row what ks_amg_interp_direct / ks_amg_interp_extended_i give
 * for the global matrix, strength and splitting (the same columns and the
 * same bits), truncated as tr says (NULL: not truncated), which gives the
 * rows ks_dist_prows_truncate would. A is the matrix S was built from; cf
 * and C this rank's splitting and coarse numbering. be: where the rows are
 * built: a backend with device memory (cuda) runs its AMG kernels' row
 * builders (and truncation) on the rank's local system, any other (or
 * NULL) the cpu builders on the host. Extended+i fetches the rows of
 * strong F neighbours on other ranks (ks_dist_fetch_ext_rows). A zero
 * diagonal on an F row fails on every rank (each names its first such
 * row). */
ks_error ks_dist_interp(ks_backend *be, const ks_matrix *A, const ks_dist_strength *S,
                        const int *cf, const ks_dist_coarse *C, ks_amg_interp kind,
                        const ks_dist_trunc *tr, ks_dist_prows *P);
/* Collective. ks_dist_interp of D1 on the host, untruncated. */
ks_error ks_dist_interp_direct(const ks_matrix *A, const ks_dist_strength *S, const int *cf,
                               const ks_dist_coarse *C, ks_dist_prows *P);
void ks_dist_prows_free(ks_dist_prows *P);

/* --------------------------------------------------------- prows_dist.c */
/* Collective. ks_amg_interp_truncate's rule on every row (in place): the
 * rows equal the serial truncation of the global P's rows. */
ks_error ks_dist_prows_truncate(ks_dist_prows *P, int max_elements, double factor);
/* Collective. P's rows split by the coarse layout, what RAP reads: local
 * (nloc x nc, columns minus c_begin) and ghost (other ranks' coarse
 * points, numbered in ascending global order, ghost_gid). */
ks_error ks_dist_prows_split(const ks_dist_prows *P, ks_dist_split *out);
/* Local: the same split on this rank alone (no agreement). */
ks_error ks_dist_prows_split_local(const ks_dist_prows *P, ks_dist_split *out);
/* Rows a task takes in the setup's copies by blocks of rows (P's split,
 * the PMIS graph's joint rows): 4096; tests set fewer, so that small
 * problems have many blocks. */
extern int ks_dist_block_rows;

/* ---------------------------------------------------- rows_fetch_dist.c */
/* What extended+i reads beyond this rank's rows: for every strong F
 * neighbour k (on another rank) of one of this rank's F rows, row k of A
 * with, for each column, whether S_k holds it and its coarse id (-1: F).
 * Rows ascend by global id (gid), columns within a row too. */
typedef struct ks_dist_ext_rows {
    ks_int n;
    ks_gint *gid;           /* n */
    ks_int *rowptr;         /* n + 1 */
    ks_gint *col;           /* global columns */
    double *val;
    unsigned char *strong;  /* 1 where S_k holds the column */
    ks_gint *cid;           /* the column's coarse id, -1 for an F point */
    ks_halo *halo;          /* the plan over gid (who sends which rows) */
} ks_dist_ext_rows;

/* Collective. A, S, cf, C as for ks_dist_interp_direct. */
ks_error ks_dist_fetch_ext_rows(const ks_matrix *A, const ks_dist_strength *S, const int *cf,
                                const ks_dist_coarse *C, ks_dist_ext_rows *R);
void ks_dist_ext_rows_free(ks_dist_ext_rows *R);

/* Collective. ks_dist_interp of extended+i on the host, untruncated. */
ks_error ks_dist_interp_extended_i(const ks_matrix *A, const ks_dist_strength *S, const int *cf,
                                   const ks_dist_coarse *C, ks_dist_prows *P);

/* ------------------------------------------------------ interp_local.c */
/* Local. This rank's rows of P (direct with R NULL, else extended+i with
 * the fetched rows R) by the serial builder on the rank's local system:
 * A's blocks AL and AG (NULL: none), S, the splitting and coarse ids;
 * truncated as tr says (NULL: not); P's layout fields are the caller's.
 * be as for ks_dist_interp: a backend with device memory builds (and
 * truncates) on its device, else (or NULL) the cpu builders run; there
 * the local system's A is made from dAL and dAG (the same blocks where
 * they live, with values; NULL: from the host blocks, uploaded). A zero
 * diagonal on an F row fails naming its global row; `who` prefixes the
 * builders' messages. */
/* 1 where the interpolation's local system is made and built by be's own
 * operations (a device; the cpu under KS_AMG_DIST_LOCAL=device, for tests);
 * then A's host blocks are not read (the rows other ranks fetch are taken
 * out where A lives). */
int ks_amg_dist_local_on_backend(const ks_backend *be);
ks_error ks_dist_interp_rows(ks_backend *be, const ks_csr *AL, const ks_csr *AG,
                             const ks_sparse *dAL, const ks_sparse *dAG,
                             const ks_dist_strength *S, const int *cf, const ks_dist_coarse *C,
                             const ks_dist_ext_rows *R, const ks_dist_trunc *tr,
                             ks_dist_prows *P, const char *who);

#ifdef __cplusplus
}
#endif
#endif
