/* Cases shared by the halo transport tests under mpirun (test_mpi_nccl.c,
 * test_mpi_ipc.c): matrices made with a transport, layouts, products
 * chained on the backend, and a device transport checked against the
 * float64 serial product and the staged transport's bits. Every call is
 * collective and asserts through ALL (inside a Check test only). */
#ifndef KS_TEST_HALO_CASES_H
#define KS_TEST_HALO_CASES_H
#include "ks_test_mpi.h"

/* M of A's rows [begin, begin + count) made with `transport` (the comm's
 * setting, back to auto after). */
ks_matrix *halo_with_transport(ks_backend *b, const char *transport, const ks_csr *A,
                               ks_gint begin, ks_int count);
/* ks_matrix_create_dist of A's rows with `transport`: its error. */
ks_error halo_create_with(ks_backend *b, const char *transport, const ks_csr *A, ks_gint begin,
                          ks_int count);
/* Even rows, or (uneven = 1) a tenth on rank 0, or (uneven = 2) none. */
void halo_layout(int uneven, ks_int N, ks_gint *off);
/* One random matrix on b over `transport` against the serial product
 * (1e-14, and 1e-12 after 3 chained products) and the staged transport's
 * bits, and the halo statistics it counts; one_way: rank 0's rows keep
 * only its own columns (no ghosts there, while the others receive from
 * it). */
void halo_spmv_case(ks_backend *b, const char *transport, uint64_t seed, int uneven,
                    int one_way);
/* PCG + AMG (the default configuration) of a 7-point 16^3 Poisson on b
 * over `transport` and staged, even and uneven rows: converged, the same
 * iterations, residual and x, bit for bit (only the transport differs). */
void halo_amg_case(ks_backend *b, const char *transport);
/* Called from a suite's set-up (no assertion there). 1 when every rank
 * made *cuda, a cuda backend on its GPU of the default map (rank k of a
 * node on GPU k mod G), else 0 (also every rank). */
int halo_cuda_backend(ks_backend **cuda);
/* The most ranks the device tables of these tests hold. */
#define HALO_MAX_RANKS 8
/* ks_comm_gather_devices for cuda into all (nranks entries, at most
 * HALO_MAX_RANKS: more is refused with -1): 0, or -1
 * with the reason kept for the test halo_add_setup_test adds to t (one
 * failing test that says why). */
int halo_gather_devices(ks_backend *cuda, ks_rank_device *all);
void halo_add_setup_test(TCase *t);
/* Called from a suite's set-up (collective, no assertion there): 1 when
 * two ranks run on one GPU of one host, 0 when none do, -1 when the
 * ranks' devices could not be gathered (halo_gather_devices). */
int halo_gpus_shared(ks_backend *cuda);
#endif
