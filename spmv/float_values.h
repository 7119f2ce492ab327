/* The float_values option's one conversion: float64 matrix values rounded
 * to float32 (the formats keep float32, their sums stay float64). Host
 * side, for the layouts and the cuda setups alike. Not installed. */
#ifndef KS_FLOAT_VALUES_H
#define KS_FLOAT_VALUES_H

#include "../core/ks_internal.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A new buffer (free() it) holding src[0, n) rounded to float32. A finite
 * value beyond float's range is refused (KS_ERR_UNSUPPORTED, the message
 * names `what`, the index and the value) instead of becoming inf. */
ks_error ks_float_values_new(const double *src, size_t n, const char *what, float **dst);

/* The same rounding in place, v[k] = (float)v[k], so host code sees exactly
 * what a float32 copy of v holds. On refusal v is left partly rounded. */
ks_error ks_float_values_round(double *v, size_t n, const char *what);

#ifdef __cplusplus
}
#endif
#endif
