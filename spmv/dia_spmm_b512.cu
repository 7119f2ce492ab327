/* dia's tile walk in 512-thread blocks (tile, vec), and `old`: its own
 * kernel for the SpMM; the fused passes, which it has no form of, as
 * `tile`. (Passes with dots take the default walk: dia_spmm_cuda.cu.) */
#include "dia_spmm_walk.cuh"

ks_error ks_dia_spmm_walk_512(const ks_dia_spmm_args *a, int pairs)
{
    return walk<512>(a, pairs != 0);
}

ks_error ks_dia_spmm_walk_old(const ks_dia_spmm_args *a)
{
    if (a->f)
        return walk<512>(a, false);
    return a->valf ? run_old<float>(a, a->valf) : run_old<double>(a, a->val);
}
