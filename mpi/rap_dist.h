/* Private pieces of the distributed Galerkin product Ac = P^T A P (cpu
 * backend): the rows of P that A's ghost columns reference, fetched from
 * their owners; A P for this rank's rows; and P^T (A P) with the partial
 * coarse rows summed at their owners in a fixed order. Kept apart from
 * amg_dist.h (which other setup steps add to). Only mpi/ and the tests
 * include this. Not installed. */
#ifndef KS_RAP_DIST_H
#define KS_RAP_DIST_H

#include "amg_dist.h"

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
 * A's row layout. Uses A's halo plan (the owners send what it says). */
ks_error ks_dist_fetch_prows(const ks_matrix *A, const ks_dist_prows *P, ks_dist_ghost_prows *G);
void ks_dist_ghost_prows_free(ks_dist_ghost_prows *G);
/* Collective. Rows with global columns (rowptr, col, val: this rank's nown
 * rows) fetched through plan h: G's row g is the owner's row of this
 * rank's ghost g (the plan's order), columns as the owner holds them. */
ks_error ks_dist_fetch_grows(const ks_comm *c, const ks_halo *h, ks_int nown,
                             const ks_int *rowptr, const ks_gint *col, const double *val,
                             ks_int nghost, ks_dist_ghost_prows *G);

/* ----------------------------------------------------------- ap_dist.c */
/* Collective. AP = A P for this rank's rows (fine rows of A's layout,
 * global coarse columns ascending). Each AP(i,J) starts at 0.0 and adds
 * A(i,k) * P(k,J) in A's row order by global column k, then P's row
 * order: ks_csr_spgemm's order on the global matrices, so the rows are
 * the serial A*P's bit for bit. Explicit zeros are kept (the structural
 * pattern, as the serial product). */
ks_error ks_dist_ap(const ks_matrix *A, const ks_dist_prows *P, ks_dist_csr *AP);

/* ---------------------------------------------------------- rap_dist.c */
/* Collective. Ac = P^T (AP): this rank's rows of the coarse matrix (its C
 * points, P's coarse layout) with global columns ascending, ready for
 * ks_matrix_create_dist. Each rank forms P(i,J) * AP(i,:) for its fine
 * rows i and sends the rows J to their owners; an owner adds, into 0.0,
 * in the order of the sending rank, then its fine row (that is, global
 * fine row order), which is ks_csr_spgemm(P^T, A*P)'s order: the same
 * bits every run with any rank count, equal to that serial product. */
ks_error ks_dist_ptap(const ks_dist_prows *P, const ks_dist_csr *AP, ks_dist_csr *Ac);
/* Collective. Both steps: Ac = P^T A P. */
ks_error ks_dist_rap(const ks_matrix *A, const ks_dist_prows *P, ks_dist_csr *Ac);

#ifdef __cplusplus
}
#endif
#endif
