/* The "AMG" preconditioner: the adapter from ks_precond_ops to the AMG
 * hierarchy (amg/), and the hierarchy behind a solver's preconditioner for
 * the tests and benchmarks that look inside. Not installed. */
#ifndef KS_PRECOND_AMG_H
#define KS_PRECOND_AMG_H

#include "solver_impl.h"
#include "../amg/hierarchy.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const ks_precond_ops ks_precond_amg_ops;
/* The hierarchy of an "AMG" preconditioner after setup, else NULL. */
const ks_amg *ks_precond_amg(const ks_precond *pc);

#ifdef __cplusplus
}
#endif
#endif
