/* PIPEBICGSTAB's fallback to the unpipelined iteration (pipebicgstab.c
 * decides when; pipebicgstab_plain.c iterates). Not installed. */
#ifndef KS_PIPEBICGSTAB_H
#define KS_PIPEBICGSTAB_H

#include "krylov.h"

/* |r0'r| below this times ||r0|| ||r||: the shadow residual has become
 * nearly orthogonal to r, and alpha, beta would come from cancellation
 * (which the pipelined recurrences amplify): restart with r0 = r. */
#define KS_PIPE_SHADOW_TOL 1e-11

/* The vectors the plain iteration works in, borrowed from PIPEBICGSTAB's
 * work space. With the identity preconditioner ph is p and qh is q. */
typedef struct ks_pbs_plain_vecs {
    ks_vec *r, *r0, *p, *ph, *bp, *q, *qh, *y, *tr;
} ks_pbs_plain_vecs;

/* Right-preconditioned BiCGStab from x, with r = b - A x already computed,
 * a new shadow residual r0 = r, numbering its iterations from `it` on
 * (the solve's statistics and history continue). Three reductions per
 * iteration: (r0,B p); (q,y), (y,y), (q,q); (r0,r), (r,r). Returns when the
 * solve's status is set. */
ks_error ks_pipebicgstab_plain(ks_solver *s, const ks_vec *b, ks_vec *x,
                               const ks_pbs_plain_vecs *v, int it);

#endif
