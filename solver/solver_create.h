/* Internal entry point: create a solver from already parsed parameters
 * (tests, benchmarks and ks_solver_create, which passes the config's
 * params). Not installed. */
#ifndef KS_SOLVER_CREATE_H
#define KS_SOLVER_CREATE_H

#include "params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Like ks_solver_create, with the "solver" scope given as params. prm is
 * copied. Unknown solver or preconditioner names fail with KS_ERR_CONFIG. */
ks_error ks_solver_create_params(ks_backend *be, const ks_solver_params *prm, ks_solver **s);

#ifdef __cplusplus
}
#endif
#endif
