/* The cpu backend's block-vector kernels (vec/block_cpu.c), for its ops
 * table in vec/cpu.c. Not installed. */
#ifndef KS_BLOCK_CPU_H
#define KS_BLOCK_CPU_H

#include "backend.h"

ks_error ks_cpu_baxpby(ks_backend *be, ks_int n, int k, const double *a, const double *x,
                       const double *b, double *y);
ks_error ks_cpu_baxpy_aypx(ks_backend *be, ks_int n, int k, const double *a, double *p,
                           double *y, const double *b, const double *z);
ks_error ks_cpu_baxpbypcz(ks_backend *be, ks_int n, int k, const double *a, const double *x,
                          const double *b, const double *y, const double *c, double *z);
ks_error ks_cpu_bpmul(ks_backend *be, ks_int n, int k, const double *w, const double *x,
                      double *y);
ks_error ks_cpu_bgather(ks_backend *be, ks_int n, int kx, const double *x, int m,
                        const int *cols, double *y);
ks_error ks_cpu_bscatter(ks_backend *be, ks_int n, int m, const double *y, const int *cols,
                         int kx, double *x);

#endif
