/* dia's tile walk in 256-thread blocks (vec256). */
#include "dia_spmm_walk.cuh"

ks_error ks_dia_spmm_walk_256(const ks_dia_spmm_args *a, int pairs)
{
    return walk<256>(a, pairs != 0);
}
