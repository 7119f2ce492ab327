/* Helpers shared by the benchmark programs (bench_util.c). */
#ifndef KS_BENCH_UTIL_H
#define KS_BENCH_UTIL_H

#include "ksolve.h"
#include "../vec/backend.h"

/* Median of v[0..n) (sorts v). */
double bench_median(double *v, int n);
/* GB/s of one copy on be's memory (device to device, or host with all
 * threads), read + write bytes counted, median of repeated copies of at
 * least 1 GiB (device) / 256 MiB (host) and 4x matrix_bytes; *mib and
 * *samples say how much was copied how often. NAN when it cannot run. */
double bench_copy_bandwidth(ks_backend *be, double matrix_bytes, double *mib, int *samples);

/* The backend `name`, or NULL after "<prog>: backend <name>: <why>" on stderr. */
ks_backend *bench_backend(const char *prog, const char *name);
/* t[r] = time of one fn(ctx) call: sample r times `batch` calls back to
 * back (batch 1: one call on an idle device, its launch latency included;
 * larger: launches overlap the previous kernel as in a solver loop) divided
 * by batch, after `warmup` calls; CUDA events on the cuda backend's stream,
 * else the wall clock after a sync. */
ks_error bench_time(ks_backend *be, ks_error (*fn)(void *ctx), void *ctx, int reps, int warmup,
                    int batch, double *t);

#endif
