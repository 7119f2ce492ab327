/* KS_CSR_BLOCK_PAIR's parsing and the pair kernels' choice
 * (csr_block_pair.h). */
#include "csr_block_pair.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

ks_error ks_csr_block_pair_get(int *on)
{
    const char *s = getenv("KS_CSR_BLOCK_PAIR");
    *on = 1;
    if (!s || !*s || strcmp(s, "1") == 0)
        return KS_OK;
    if (strcmp(s, "0") == 0) {
        *on = 0;
        return KS_OK;
    }
    return ks_seterr(KS_ERR_ARG, "KS_CSR_BLOCK_PAIR=%s: expected 0 (one column a thread) or 1 "
                                 "(two, the default)", s);
}

int ks_csr_block_pair_aligned(const void *const *p, int n)
{
    for (int i = 0; i < n; i++)
        if ((uintptr_t)p[i] & 15u) /* NULL is aligned */
            return 0;
    return 1;
}

ks_error ks_csr_block_lanes_get(int *lanes)
{
    const char *s = getenv("KS_CSR_BLOCK_LANES");
    *lanes = 0;
    if (!s || !*s)
        return KS_OK;
    if (strcmp(s, "spmv") == 0) {
        *lanes = -1;
        return KS_OK;
    }
    static const char *const ok[] = {"1", "2", "4", "8", "16", "32"};
    for (int i = 0; i < 6; i++)
        if (strcmp(s, ok[i]) == 0) {
            *lanes = 1 << i;
            return KS_OK;
        }
    return ks_seterr(KS_ERR_ARG, "KS_CSR_BLOCK_LANES=%s: expected 1, 2, 4, 8, 16 or 32 (threads "
                                 "an entry), spmv (the SpMV's), or unset (chosen by the matrix)",
                     s);
}

static int log2_of(int v)
{
    int sh = 0;
    while ((1 << sh) < v && sh < 5)
        sh++;
    return sh;
}

int ks_csr_block_lanes_shift(int lanes, ks_int nrows, ks_int nnz, int k, int nsm, int spmv_lanes)
{
    if (lanes > 0)
        return log2_of(lanes);
    if (nrows <= 0 || k <= 0)
        return 0;
    const long long threads = (long long)nrows * k, target = (long long)nsm * 2048;
    if (lanes == 0 && (nsm <= 0 || threads >= target))
        return 0;
    if (spmv_lanes > 0)
        return log2_of(spmv_lanes);
    int sh = 0;
    while (sh < 5 && (nsm <= 0 || (threads << sh) < target) &&
           (long long)nnz >= 4LL * (1LL << sh) * (long long)nrows)
        sh++;
    return sh;
}

int ks_csr_block_pair_use(int on, int k, int aligned)
{
    return on && k > 0 && k % 2 == 0 && aligned;
}
