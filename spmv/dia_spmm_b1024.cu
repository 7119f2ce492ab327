/* dia's tile walk in 1024-thread blocks (vec1024, the default). */
#include "dia_spmm_walk.cuh"

ks_error ks_dia_spmm_walk_1024(const ks_dia_spmm_args *a, int pairs)
{
    return walk<1024>(a, pairs != 0);
}
