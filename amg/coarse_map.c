/* Coarse numbering of the C points: their rank among the C points, in
 * index order (the column of P, and the row of the coarse matrix). */
#include "amg_impl.h"

#include <inttypes.h>

ks_error ks_amg_coarse_map(ks_int n, const int *cf, ks_int *cmap, ks_int *nc)
{
    if (n < 0)
        return ks_seterr(KS_ERR_ARG, "ks_amg_coarse_map: negative size %" PRId32, n);
    if ((n > 0 && (!cf || !cmap)) || !nc)
        return ks_seterr(KS_ERR_ARG, "ks_amg_coarse_map: NULL %s",
                         !nc ? "nc" : !cf ? "cf" : "cmap");
    /* Serial O(n) scan: a prefix sum this cheap is not worth threads. */
    ks_int c = 0;
    for (ks_int i = 0; i < n; i++) {
        if (cf[i] == KS_CPT)
            cmap[i] = c++;
        else if (cf[i] == KS_FPT)
            cmap[i] = -1;
        else
            return ks_seterr(KS_ERR_ARG, "ks_amg_coarse_map: point %" PRId32 " is %s (cf = %d), "
                             "expected C (%d) or F (%d)", i,
                             cf[i] == KS_UNDECIDED ? "undecided" : "not marked", cf[i], KS_CPT,
                             KS_FPT);
    }
    *nc = c;
    return KS_OK;
}
