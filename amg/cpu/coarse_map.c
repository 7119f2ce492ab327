/* Coarse numbering of the C points: their rank among the C points, in
 * index order (the column of P, and the row of the coarse matrix). */
#include "amg_cpu.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many points one serial scan beats the two-pass parallel one. */
#define KS_COARSE_MAP_PAR 65536

ks_error ks_amg_coarse_map(ks_int n, const int *cf, ks_int *cmap, ks_int *nc)
{
    if (n < 0)
        return ks_seterr(KS_ERR_ARG, "ks_amg_coarse_map: negative size %" PRId32, n);
    if ((n > 0 && (!cf || !cmap)) || !nc)
        return ks_seterr(KS_ERR_ARG, "ks_amg_coarse_map: NULL %s",
                         !nc ? "nc" : !cf ? "cf" : "cmap");
    /* Blocks of consecutive points: count C points and find the first bad
     * one per block, scan the counts, then number each block from its
     * offset. The numbering is the serial one for any block count. */
    int nb = 1;
#ifdef _OPENMP
    if (n >= KS_COARSE_MAP_PAR)
        nb = omp_get_max_threads();
#endif
    ks_int cnt_small[2], *cnt = nb > 1 ? malloc(((size_t)nb + 1) * sizeof *cnt) : cnt_small;
    if (!cnt) { /* no room for the block counts: one block */
        nb = 1;
        cnt = cnt_small;
    }
    ks_int bad = n;
#pragma omp parallel for schedule(static, 1) num_threads(nb) if (nb > 1) reduction(min : bad)
    for (int b = 0; b < nb; b++) {
        const ks_int lo = (ks_int)((int64_t)n * b / nb), hi = (ks_int)((int64_t)n * (b + 1) / nb);
        ks_int c = 0;
        for (ks_int i = lo; i < hi; i++) {
            if (cf[i] == KS_CPT) {
                c++;
            } else if (cf[i] != KS_FPT) {
                if (i < bad)
                    bad = i;
                break;
            }
        }
        cnt[b + 1] = c;
    }
    if (bad < n) {
        if (cnt != cnt_small)
            free(cnt);
        return ks_seterr(KS_ERR_ARG, "ks_amg_coarse_map: point %" PRId32 " is %s (cf = %d), "
                         "expected C (%d) or F (%d)", bad,
                         cf[bad] == KS_UNDECIDED ? "undecided" : "not marked", cf[bad], KS_CPT,
                         KS_FPT);
    }
    cnt[0] = 0;
    for (int b = 0; b < nb; b++)
        cnt[b + 1] += cnt[b];
#pragma omp parallel for schedule(static, 1) num_threads(nb) if (nb > 1)
    for (int b = 0; b < nb; b++) {
        const ks_int lo = (ks_int)((int64_t)n * b / nb), hi = (ks_int)((int64_t)n * (b + 1) / nb);
        ks_int c = cnt[b];
        for (ks_int i = lo; i < hi; i++)
            cmap[i] = cf[i] == KS_CPT ? c++ : -1;
    }
    *nc = cnt[nb];
    if (cnt != cnt_small)
        free(cnt);
    return KS_OK;
}
