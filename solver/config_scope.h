/* The config engine's internal API (solver/config.c) for the ksolve tool.
 * Not installed. */
#ifndef KS_CONFIG_SCOPE_H
#define KS_CONFIG_SCOPE_H

#include "params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Apply n (keypath, value) pairs like ks_config_set, then validate once, so
 * the order of command-line overrides does not matter (e.g. setting
 * "solver.solver" to CG before "solver.preconditioner" to NOSOLVER). On
 * error the config is unchanged. */
ks_error ks_config_set_many(ks_config *cfg, int n, const char *const *keys,
                            const char *const *values);

#ifdef __cplusplus
}
#endif
#endif
