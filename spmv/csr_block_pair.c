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

int ks_csr_block_pair_use(int on, int k, int aligned)
{
    return on && k > 0 && k % 2 == 0 && aligned;
}
