/* dia's SpMM and fused block pass on the cuda backend (dia_spmm_cuda.h):
 * the variant KS_DIA_SPMM chose picks the walk; the kernels are in
 * dia_spmm_walk.cuh, compiled one block size a file. */
#include "dia_spmm_cuda.h"

ks_error ks_dia_spmm_run(const ks_dia_spmm_args *a)
{
    if (a->nrows == 0)
        return KS_OK;
    if (a->dot_part) /* passes with dots: the default walk only (dia_spmm_walk.cuh) */
        return ks_dia_spmm_walk_1024(a, 1);
    switch (a->how.variant) {
    case KS_DIA_SPMM_OLD: return ks_dia_spmm_walk_old(a);
    case KS_DIA_SPMM_TILE: return ks_dia_spmm_walk_512(a, 0);
    case KS_DIA_SPMM_VEC256: return ks_dia_spmm_walk_256(a, 1);
    case KS_DIA_SPMM_VEC1024: return ks_dia_spmm_walk_1024(a, 1);
    default: return ks_dia_spmm_walk_512(a, 1); /* vec */
    }
}
