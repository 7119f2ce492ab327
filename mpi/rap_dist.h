/* Private pieces of the distributed Galerkin product Ac = P^T A P (cpu
 * backend): the rows of P that A's ghost columns reference, fetched from
 * their owners; A P for this rank's rows; and P^T (A P) with the partial
 * coarse rows summed at their owners in a fixed order. Kept apart from
 * amg_dist.h (which other setup steps add to). Only mpi/ and the tests
 * include this. Not installed. */
#ifndef KS_RAP_DIST_H
#define KS_RAP_DIST_H

#include "amg_dist.h"
#include "../sparse/sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------- rap_fetch_dist.c */
/* P's rows of A's ghost columns: row g is P's row of global fine point
 * ghost_gid[g] of A (the matrix's ghost numbering), with global coarse
 * columns ascending, as its owner holds it. */
typedef struct ks_dist_ghost_prows {
    ks_int n;        /* A's ghost count */
    ks_int *rowptr;  /* n + 1 */
    ks_gint *col;
    double *val;
} ks_dist_ghost_prows;

/* Collective. A: a distributed cpu matrix; P: this rank's rows of P over
 * A's column layout (its row layout when square). Uses A's halo plan (the
 * owners send what it says). */
ks_error ks_dist_fetch_prows(const ks_matrix *A, const ks_dist_prows *P, ks_dist_ghost_prows *G);
void ks_dist_ghost_prows_free(ks_dist_ghost_prows *G);
/* Collective. Rows with global columns (rowptr, col, val: this rank's nown
 * rows) fetched through plan h: G's row g is the owner's row of this
 * rank's ghost g (the plan's order), columns as the owner holds them. */
ks_error ks_dist_fetch_grows(const ks_comm *c, const ks_halo *h, ks_int nown,
                             const ks_int *rowptr, const ks_gint *col, const double *val,
                             ks_int nghost, ks_dist_ghost_prows *G);
/* Collective. The same for own rows T with compact columns of cols (sent
 * as global ids). */
ks_error ks_dist_fetch_grows_compact(const ks_comm *c, const ks_halo *h, const ks_csr *T,
                                     const ks_gmap *cols, ks_int nghost, ks_dist_ghost_prows *G);
/* Collective. The same with the rows on the device (dT): only the rows
 * the plan sends are taken there (ks_sparse_extract_rows) and downloaded. */
ks_error ks_dist_fetch_grows_device(const ks_comm *c, const ks_halo *h, const ks_sparse *dT,
                                    const ks_gmap *cols, ks_int nghost, ks_dist_ghost_prows *G);

/* -------------------------------------------------------- local_rows.c */
/* Local. Own rows (rp, col, val: global columns, rows->hi - rows->lo of
 * them) and fetched rows G (one per ext id of `rows`, in its order)
 * stacked in the compact order of `rows`, columns through `cols`: a host
 * CSR the serial kernels read. Row-parallel. */
ks_error ks_stack_rows(const ks_dist_ghost_prows *G, const ks_gmap *rows, const ks_int *rp,
                       const ks_gint *col, const double *val, const ks_gmap *cols, ks_csr *B);
/* Local. The same with the own rows' columns compact numbers of another
 * map, tab[k] their numbers in cols (a lookup, no hashing). */
ks_error ks_stack_rows_mapped(const ks_dist_ghost_prows *G, const ks_gmap *rows,
                              const ks_int *rp, const ks_int *ccol, const ks_int *tab,
                              const double *val, const ks_gmap *cols, ks_csr *B);
/* Local. T (compact columns of `cols`) as rows with global columns; T's
 * arrays are taken or freed, also on failure. */
ks_error ks_compact_to_global(ks_csr *T, const ks_gmap *cols, ks_gint row_begin,
                              ks_gint nrows_global, ks_gint ncols_global, ks_dist_csr *out);
/* Local. T = L B of host CSRs, on backend be: the cpu spgemm where be is
 * NULL or keeps host memory, else both uploaded, the backend's spgemm,
 * T downloaded. The device product reproduces the cpu one bit for bit
 * (sparse/cuda/spgemm.cu), so where it runs changes no result; but with
 * KS_SPGEMM=cusparse, whose products agree with the cpu's to rounding. */
ks_error ks_local_spgemm(ks_backend *be, const ks_csr *L, const ks_csr *B, ks_csr *T);
/* Local. The same with the right factor already on the device (be's), and
 * the left one too where dL is given (then L is not read); with keep the
 * product stays there (T: its shape and row pointers only). */
ks_error ks_local_spgemm_device(ks_backend *be, const ks_csr *L, const ks_sparse *dL,
                                const ks_sparse *dB, ks_csr *T, ks_sparse *keep);
/* Local. The rows ks_stack_rows_mapped makes, made on be's device: the
 * fetched rows G (mapped to cm's numbers here, uploaded) around M's rows
 * (on the device: nb of G's rows before them), M's column c as tab[c] (a
 * host table of M->ncols entries, each a number of cm). */
ks_error ks_stack_rows_device(ks_backend *be, const ks_dist_ghost_prows *G, ks_int nb,
                              const ks_sparse *M, const ks_int *tab, const ks_gmap *cm,
                              ks_sparse *dB);
/* Local. *T = L times the rows that ks_stack_rows makes of (G, rows, rp,
 * col, val, cols), by ks_local_spgemm on be, with the compact columns of
 * `cols`; L: a host CSR over the compact numbers of `rows` (read only),
 * or dL (NULL, or on be's device: then L is not read) the same already
 * there, sorted rows (read in place, not uploaded). dM (NULL, or on be's
 * device): the own rows (rp, col, val) as they are there, their columns
 * numbered through the host table mtab into cols; then the rows are
 * stacked on the device (ks_stack_rows_device), not on the host.
 * keep (may be NULL): where the product ran on the device, it stays there
 * too (the next product reads it there), and unless `entries` T gets only
 * its shape and row pointers (colind, val NULL); else keep is left empty
 * and T is whole. */
ks_error ks_local_product_compact(ks_backend *be, const ks_csr *L, const ks_sparse *dL,
                                  const ks_dist_ghost_prows *G, const ks_gmap *rows,
                                  const ks_int *rp, const ks_gint *col, const double *val,
                                  const ks_sparse *dM, const ks_int *mtab, const ks_gmap *cols,
                                  ks_csr *T, ks_sparse *keep, int entries);
/* Local. The fetched rows G with their global columns as compact numbers
 * of `cols` (every one there): the pieces ks_sparse_stack_rows puts
 * around rows already on the device. */
ks_error ks_fetched_rows(const ks_dist_ghost_prows *G, const ks_gmap *cols, ks_csr *F);
/* Local. T (compact columns of `cols`, each row ascending) split as
 * ks_dist_csr_split splits the same rows with global columns, rows square
 * over cols' range: the local block (the range's columns, less its first)
 * and the ghost block (the ids outside it that the rows use, numbered in
 * ascending order; ghost_gid their ids), no entry_pos. *refused = 1 and
 * nothing made when a row does not ascend or a value is not finite: the
 * caller's checked path (global columns, ks_dist_csr_split) decides. T is
 * read only. */
ks_error ks_compact_split(const ks_csr *T, const ks_gmap *cols, int *refused, ks_dist_split *S);
/* Local. The same split of dT on its device (ks_sparse_mark_cols,
 * ks_sparse_split_cols): S's blocks are made there (S->dlocal, S->dghost;
 * S->local and S->ghost hold their shapes only), the ghost ids on the
 * host; refused as ks_compact_split. dT is read only. */
ks_error ks_compact_split_device(const ks_sparse *dT, const ks_gmap *cols, int *refused,
                                 ks_dist_split *S);

/* ----------------------------------------------------------- ap_dist.c */
/* Collective. AP = A P for this rank's rows (A's row layout, global
 * coarse columns ascending; A may be rectangular, P's rows laid out as its
 * columns: the aggressive P1 P2). Each AP(i,J) starts at 0.0 and adds
 * A(i,k) * P(k,J) in A's row order by global column k, then P's row
 * order: ks_csr_spgemm's order on the global matrices, so the rows are
 * the serial A*P's bit for bit. Explicit zeros are kept (the structural
 * pattern, as the serial product). */
ks_error ks_dist_ap(const ks_matrix *A, const ks_dist_prows *P, ks_dist_csr *AP);
/* Rows whose columns are compact numbers of a map (gmap.c): a local
 * product as it comes out, before its columns become global ids. */
typedef struct ks_dist_compact {
    ks_csr T;       /* nrows x ks_gmap_size(&cols); colind, val NULL when only dT has them */
    ks_sparse dT;   /* T on the device where it was made there, else empty */
    ks_gmap cols;   /* owns its ids */
    ks_gint row_begin, nrows_global, ncols_global;
} ks_dist_compact;
void ks_dist_compact_free(ks_dist_compact *X);
/* Collective. ks_dist_ap's rows left compact, for a product that would
 * compact them again (ks_dist_ptap_r_compact): the same entries. */
ks_error ks_dist_ap_compact(const ks_matrix *A, const ks_dist_prows *P, ks_dist_compact *AP);
/* Collective. The same, but where the product runs on the device its
 * entries stay there only (AP->T: shape and row pointers): for R (A P)
 * with R = P^T, which stacks them there and fetches other ranks' rows
 * from there (ks_dist_fetch_grows_device). */
ks_error ks_dist_ap_compact_device(const ks_matrix *A, const ks_dist_prows *P, ks_dist_compact *AP);

/* ---------------------------------------------------- transpose_dist.c */
/* Local. Where each of P's entries goes in a buffer laid out by destination
 * (the rank owning its coarse column in layout coff of p ranks), each
 * destination's entries in fine row order and a row's in column order:
 * at[k] for entry k, count[r] entries for rank r (displacements: the
 * counts in rank order). Threaded by row chunks, the serial places. The
 * transpose packs by it, its re-setup plan keeps it. Returns P's entry
 * count, -1 when out of memory (the message set). */
ks_int ks_dist_transpose_places(const ks_dist_prows *P, const ks_gint *coff, int p, ks_int *at,
                                int64_t *count);
/* Collective. R = P^T: R's rows are this rank's coarse points (layout
 * coff, each rank's C count), its columns global fine ids ascending (P's
 * row layout foff); held in a ks_dist_prows whose "coarse" fields describe
 * R's columns (c_begin, nc: this rank's fine rows; nc_global: all fine
 * rows), so ks_dist_prows_split splits it by the fine layout. */
ks_error ks_dist_prows_transpose(const ks_dist_prows *P, const ks_gint *foff, const ks_gint *coff,
                                 ks_dist_prows *R);
/* Collective. The same R without this rank's own entries (those of P's
 * rows here in this rank's coarse range): only the entries from other
 * ranks' rows, R's ghost columns, which is what a transpose of P's local
 * block elsewhere (on the device) lacks. */
ks_error ks_dist_prows_transpose_others(const ks_dist_prows *P, const ks_gint *foff,
                                        const ks_gint *coff, ks_dist_prows *R);

/* ---------------------------------------------------------- rap_dist.c */
/* Collective. Ac = R (AP) with R = P^T (ks_dist_prows_transpose): this
 * rank's rows of the coarse matrix (its rows of R, P's coarse layout) with
 * global columns ascending, ready for ks_matrix_create_dist. AP's rows of
 * R's columns on other ranks (fine layout foff) are fetched from their
 * owners; each Ac(J,c) starts at 0.0 and adds R(J,i) AP(i,c) by ascending
 * fine row i, which is ks_csr_spgemm(P^T, A*P)'s order: the same bits
 * every run with any rank or thread count, equal to that serial product. */
ks_error ks_dist_ptap_r(const ks_dist_prows *R, const ks_dist_csr *AP, const ks_gint *foff,
                        ks_dist_csr *Ac);
/* Collective. The same from A P's compact rows (ks_dist_ap_compact): its
 * columns go to the product's numbering through a table, not back to
 * global ids and through the hash again. The same bits. */
ks_error ks_dist_ptap_r_compact(ks_backend *be, const ks_dist_prows *R, const ks_dist_compact *AP,
                                const ks_gint *foff, ks_dist_csr *Ac);
/* Collective. The same from P (R = P^T made here; P's coarse layout must
 * be its ranks' C counts). */
ks_error ks_dist_ptap(const ks_dist_prows *P, const ks_dist_csr *AP, ks_dist_csr *Ac);
/* Collective. Both steps: Ac = P^T A P; with R = P^T at hand, rap_r. */
ks_error ks_dist_rap(const ks_matrix *A, const ks_dist_prows *P, ks_dist_csr *Ac);
ks_error ks_dist_rap_r(const ks_matrix *A, const ks_dist_prows *P, const ks_dist_prows *R,
                       ks_dist_csr *Ac);
/* Collective. ks_dist_rap_r's rows split as ks_matrix_create_dist splits
 * them (local and ghost blocks, no entry_pos), made from the compact
 * product without global columns in between: the same blocks and ghost
 * ids, for ks_dist_matrix_from_split. */
ks_error ks_dist_rap_split(const ks_matrix *A, const ks_dist_prows *P, const ks_dist_prows *R,
                           ks_dist_split *S);
/* Collective. The same with R as a distributed transfer matrix whose
 * blocks live on the device (rows: P's coarse layout; columns: the fine
 * layout), A on the device: R's rows merged there (ks_sparse_merge_blocks)
 * are the rows ks_dist_rap_split stacks from host rows, so the blocks are
 * the same bits. */
ks_error ks_dist_rap_split_m(const ks_matrix *A, const ks_dist_prows *P, const ks_matrix *Rm,
                             ks_dist_split *S);

/* ------------------------------------------------ transpose_numeric_dist.c */
/* R = P^T's values kept for re-setup: where each of P's entries goes in
 * the send buffer, the byte counts, and where each arrival goes in R. */
typedef struct ks_dist_transpose_plan {
    int made;
    int *scount, *sdispl; /* per rank, bytes (one array of 2 p) */
    ks_int *send_at;      /* P's entries */
    ks_int *recv_at;      /* the arrivals (nrecv) */
    int64_t nrecv;
} ks_dist_transpose_plan;
/* Collective. The plan of ks_dist_prows_transpose(P, ., coff, R) from the
 * patterns of P and of the R it made. */
ks_error ks_dist_transpose_plan_make(const ks_dist_prows *P, const ks_dist_prows *R,
                                     const ks_gint *coff, ks_dist_transpose_plan *t);
/* Collective. R's values from P's new values on the plan's patterns: the
 * values ks_dist_prows_transpose gives, values only on the wire. */
ks_error ks_dist_transpose_numeric(const ks_dist_prows *P, const ks_dist_transpose_plan *t,
                                   ks_dist_prows *R);
void ks_dist_transpose_plan_free(ks_dist_transpose_plan *t);

/* Local. A's rows, its local (AL) and ghost (AG, may be NULL) blocks
 * merged into one CSR over the compact fine numbers of fm (AG's columns
 * are fm's ext ids): the left operand of A P. */
ks_error ks_dist_merge_blocks(const ks_csr *AL, const ks_csr *AG, const ks_gmap *fm, ks_csr *M);

/* ------------------------------------------------- rap_numeric_dist.c */
/* A level's Galerkin product kept for re-setup: the fetched rows' lengths,
 * the plan over R's ghost fine columns, the compact operands and both
 * products' patterns (values refilled on each product). */
typedef struct ks_dist_rap_plan {
    int made;
    /* A P: P's rows of A's ghost columns (A's halo plan) */
    ks_int *pg_rowptr;   /* A's ghost count + 1 */
    ks_int pg_nb;        /* of them below this rank's rows */
    ks_csr B;            /* P's own and fetched rows stacked, compact coarse columns */
    ks_csr T;            /* A P, compact columns */
    ks_gint *ap_col;     /* its global columns */
    /* R (A P): A P's rows of R's ghost fine columns */
    ks_gmap fm;          /* R's fine columns */
    ks_halo *h;          /* the plan over fm.ext */
    ks_int *ag_rowptr;   /* fm.next + 1 */
    ks_csr Rm;           /* R, compact fine columns */
    ks_csr B2;           /* A P's own and fetched rows stacked */
    ks_csr T2;           /* Ac, compact columns */
    ks_gint *ac_col;     /* its global columns */
} ks_dist_rap_plan;

/* Collective. Ac = R (A P) as ks_dist_rap_r computes it (the same bits),
 * keeping the plan; *Ac is a view of the plan's arrays (valid until the
 * next call or the plan's free; not to be freed). */
ks_error ks_dist_rap_plan_make(const ks_matrix *A, const ks_dist_prows *P,
                               const ks_dist_prows *R, ks_dist_rap_plan *pl, ks_dist_csr *Ac);
/* Collective. The same product for new values of A, P and R on the
 * patterns the plan was made with: values only travel (through the kept
 * plans) and the numeric spgemm passes fill the kept patterns, the bits
 * of a fresh product. *Ac as above. */
ks_error ks_dist_rap_plan_numeric(const ks_matrix *A, const ks_dist_prows *P,
                                  const ks_dist_prows *R, ks_dist_rap_plan *pl, ks_dist_csr *Ac);
void ks_dist_rap_plan_free(ks_dist_rap_plan *pl);

#ifdef __cplusplus
}
#endif
#endif
