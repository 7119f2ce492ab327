/* bench_halo: the halo exchange of a distributed SpMV over each halo
 * transport (staged, direct, nccl, ipc: docs/mpi.md "Halo transports").
 *
 *   mpirun -np P bench_halo [--n 128] [--backend cuda] [--reps 200] [--warmup 20]
 *                           [--transports staged,direct,nccl,ipc]
 *
 * Every rank owns an n^3 slab of the 7-point Poisson grid n x n x nP
 * (ks_generate_dist), so an inner rank receives 2 n^2 ghost values a
 * product and sends as many. For each transport asked for, the matrix is
 * made with it (ks_comm_set_halo_transport; one that cannot run here is
 * reported and skipped) and three things are timed, each after a barrier,
 * each ending with the backend synchronised (MPI_Wtime; the slowest rank's
 * time of each repetition; median over --reps after --warmup):
 *   exchange: the halo exchange and the ghost block's product alone
 *             (ks_halo_begin, ks_halo_end, y += A_ghost x_ghost);
 *   local:    the local block's product alone;
 *   full:     the distributed product, the exchange overlapping the local
 *             block's product.
 * One line a transport: those medians, the bytes the busiest rank sends
 * an exchange and their rate over the exchange's time, and how much of the
 * exchange the full product hides: (exchange + local - full) / exchange.
 *
 * It times the halo's pieces apart, so it reads the library's private
 * plan (mpi/mpi_internal.h) as the tests do. On cuda each rank takes its
 * GPU by ks_comm_select_device (KS_GPU_MAP, else rank k of a node on GPU
 * k mod G). Exit status 0, or 2 on a usage or library error. */
#include "ksolve_mpi.h"
#include "../mpi/mpi_internal.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct opts {
    int n, reps, warmup;
    const char *backend, *transports;
} opts;

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){.n = 128, .reps = 200, .warmup = 20, .transports = "staged,direct,nccl,ipc",
                .backend = ks_backend_available("cuda") ? "cuda" : "cpu"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return 0;
        if (!strcmp(a, "--n"))
            o->n = atoi(v);
        else if (!strcmp(a, "--reps"))
            o->reps = atoi(v);
        else if (!strcmp(a, "--warmup"))
            o->warmup = atoi(v);
        else if (!strcmp(a, "--backend"))
            o->backend = v;
        else if (!strcmp(a, "--transports"))
            o->transports = v;
        else
            return 0;
        i++;
    }
    return o->n >= 1 && o->n <= 1000 && o->reps >= 1 && o->warmup >= 0;
}

enum { T_EXCHANGE, T_LOCAL, T_FULL };

static ks_error run_once(int what, ks_matrix *M, ks_vec *x, ks_vec *y)
{
    ks_dist_impl *d = (ks_dist_impl *)M->dist;
    if (what == T_LOCAL)
        return ks_matrix_apply(d->base.local, 1.0, x, 0.0, y);
    if (what == T_FULL)
        return ks_matrix_apply(M, 1.0, x, 0.0, y);
    ks_error e = ks_halo_begin(d->halo, x->data, d->xghost->data);
    ks_error ew = ks_halo_end(d->halo, d->xghost->data);
    if (e == KS_OK)
        e = ew;
    if (e == KS_OK && d->base.ghost)
        e = ks_matrix_apply(d->base.ghost, 1.0, d->xghost, 1.0, y);
    return e;
}

/* Median over the repetitions of the slowest rank's seconds. */
static ks_error time_it(const ks_comm *comm, int what, ks_matrix *M, ks_vec *x, ks_vec *y,
                        const opts *o, double *t, double *median)
{
    ks_backend *be = ks_matrix_backend(M);
    for (int r = 0; r < o->warmup + o->reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        ks_error e = run_once(what, M, x, y);
        if (e == KS_OK)
            e = ks_backend_sync(be);
        KS_TRY(ks_comm_agree(comm, e));
        if (r >= o->warmup)
            t[r - o->warmup] = MPI_Wtime() - t0;
    }
    KS_TRY(ks_comm_agree(comm, ks_mpi_check(MPI_Allreduce(MPI_IN_PLACE, t, o->reps, MPI_DOUBLE,
                                                          MPI_MAX, MPI_COMM_WORLD),
                                            "MPI_Allreduce")));
    *median = bench_median(t, o->reps);
    return KS_OK;
}

/* One transport's line (rank 0), or why it cannot run here. */
static ks_error bench_transport(ks_comm *comm, ks_backend *be, const ks_dist_csr *R,
                                const char *name, const opts *o, double *t)
{
    ks_matrix *M = NULL;
    ks_vec *x = NULL, *y = NULL;
    KS_TRY(ks_comm_set_halo_transport(comm, name));
    ks_error e = ks_matrix_create_dist(be, comm, R->nrows, R->ncols_global, R->rowptr, R->colind,
                                       R->val, "auto", NULL, &M);
    if (e == KS_ERR_UNSUPPORTED) { /* on every rank alike */
        if (ks_comm_rank(comm) == 0)
            printf("halo %-7s not available here: %s\n", name, ks_last_error());
        return KS_OK;
    }
    if (e == KS_OK)
        e = ks_matrix_vec_create(M, &x);
    if (e == KS_OK)
        e = ks_matrix_vec_create(M, &y);
    if (e == KS_OK)
        e = ks_vec_fill(x, 1.0);
    e = ks_comm_agree(comm, e);
    double med[3] = {0, 0, 0};
    for (int w = T_EXCHANGE; w <= T_FULL && e == KS_OK; w++)
        e = time_it(comm, w, M, x, y, o, t, &med[w]);
    ks_int nghost = 0, nsend = 0;
    int nb = 0;
    double sent = 0.0;
    if (e == KS_OK)
        e = ks_matrix_halo_size(M, &nghost, &nsend, &nb);
    if (e == KS_OK) {
        sent = (double)nsend * sizeof(double);
        e = ks_comm_max(comm, &sent, 1);
    }
    if (e == KS_OK && ks_comm_rank(comm) == 0) {
        const double hidden = med[T_EXCHANGE] > 0
                                  ? (med[T_EXCHANGE] + med[T_LOCAL] - med[T_FULL]) /
                                        med[T_EXCHANGE]
                                  : 0.0;
        printf("halo %-7s (runs %-6s) %d ranks  exchange %9.2f us  %8.1f KiB sent a rank  "
               "%6.2f GB/s  local %9.2f us  full %9.2f us  hidden %5.1f %%\n",
               name, ks_matrix_halo_transport(M), ks_comm_size(comm), med[T_EXCHANGE] * 1e6,
               sent / 1024.0, med[T_EXCHANGE] > 0 ? sent / med[T_EXCHANGE] * 1e-9 : 0.0,
               med[T_LOCAL] * 1e6, med[T_FULL] * 1e6, 100.0 * hidden);
        fflush(stdout);
    }
    ks_vec_destroy(&x);
    ks_vec_destroy(&y);
    ks_matrix_destroy(&M);
    return e;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    ks_comm *comm = NULL;
    ks_backend *be = NULL;
    ks_dist_csr R = {0};
    opts o;
    int rc = 2;
    double *t = NULL;
    if (ks_comm_create(MPI_COMM_WORLD, &comm) != KS_OK) {
        fprintf(stderr, "bench_halo: ks_comm_create: %s\n", ks_last_error());
        MPI_Finalize();
        return 2;
    }
    const int rank = ks_comm_rank(comm), p = ks_comm_size(comm);
    if (!parse(argc, argv, &o)) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np P bench_halo [--n 128] [--backend cpu|cuda] "
                            "[--reps 200] [--warmup 20] [--transports staged,direct,nccl,ipc]\n");
        goto done;
    }
    ks_gen_params g;
    ks_gen_params_default(&g);
    g.kind = KS_GEN_POISSON3D_7;
    g.nx = g.ny = o.n;
    g.nz = o.n * p;
    t = malloc((size_t)o.reps * sizeof *t);
    int gpu = -1;
    ks_error e = strcmp(o.backend, "cuda") ? KS_OK : ks_comm_select_device(comm, NULL, &gpu);
    if (e == KS_OK)
        e = ks_backend_create(o.backend, &be);
    if (e == KS_OK)
        e = t ? KS_OK : KS_ERR_MEMORY;
    e = ks_comm_agree(comm, e);
    if (e == KS_OK)
        e = ks_generate_dist(comm, &g, (ks_int)o.n * o.n * o.n, &R);
    if (e == KS_OK && rank == 0)
        printf("# bench_halo: 7-point %d x %d x %d, a slab of %d^3 rows a rank, %s backend (rank 0: "
               "%s); median of %d after %d, the slowest rank's\n",
               g.nx, g.ny, g.nz, o.n, o.backend, ks_backend_description(be), o.reps, o.warmup);
    char list[256];
    snprintf(list, sizeof list, "%s", o.transports);
    for (char *s = strtok(list, ","); s && e == KS_OK; s = strtok(NULL, ","))
        e = bench_transport(comm, be, &R, s, &o, t);
    if (e != KS_OK) {
        if (rank == 0)
            fprintf(stderr, "bench_halo: %s (%s)\n", ks_last_error(), ks_error_name(e));
        goto done;
    }
    rc = 0;
done:
    free(t);
    ks_dist_csr_free(&R);
    ks_backend_destroy(&be);
    ks_comm_destroy(&comm);
    MPI_Finalize();
    return rc;
}
