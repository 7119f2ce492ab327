/* One GPU a rank (mpi/device_map.c) under mpirun on 1 to 3 ranks: the
 * ranks of each node get distinct local ranks 0 .. (ranks there) - 1; a
 * malformed map (given, or from KS_GPU_MAP) fails on every rank naming it;
 * "none" leaves the device alone; every rank's host is gathered in rank
 * order, with no GPU on the cpu backend. With a GPU on every rank
 * (self-checking on any node): "local" puts rank k of a node on GPU
 * k mod G, an index beyond the node's GPUs is refused, and a cuda backend
 * created afterwards reports that GPU with its name and PCI bus id, ranks
 * of one node on distinct GPUs while there are enough. The pure map:
 * test_gpu_map.c. */
#include "ks_test_mpi.h"
#include "mpi/mpi_internal.h"
#include "vec/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int have_gpu; /* every rank sees at least one */

/* Every rank's host (MPI's processor name) and local rank, in rank order. */
static ks_rank_device *hosts_and_locals(int *local, int *locals)
{
    ks_rank_device *all = calloc((size_t)nranks, sizeof *all);
    ck_assert_ptr_nonnull(all);
    KS_ALL(ks_comm_gather_devices(comm, be, all));
    int nlocal = 0;
    KS_ALL(ks_comm_local_rank(comm, local, &nlocal));
    ck_assert_int_eq(MPI_Allgather(local, 1, MPI_INT, locals, 1, MPI_INT, MPI_COMM_WORLD),
                     MPI_SUCCESS);
    int same = 0;
    for (int q = 0; q < nranks; q++)
        same += !strcmp(all[q].host, all[rank].host);
    ALL(nlocal == same, "rank %d: %d ranks on its node, %d share its host", rank, nlocal, same);
    return all;
}

START_TEST(test_local_ranks)
{
    int local = -1, locals[8];
    ks_rank_device *all = hosts_and_locals(&local, locals);
    /* ranks of a host: distinct local ranks, each below their count there */
    int ok = 1;
    for (int q = 0; q < nranks; q++) {
        int count = 0;
        for (int p = 0; p < nranks; p++) {
            if (strcmp(all[p].host, all[q].host))
                continue;
            count++;
            ok &= p == q || locals[p] != locals[q];
        }
        ok &= locals[q] >= 0 && locals[q] < count && all[q].host[0] && all[q].device == -1 &&
              !all[q].name[0] && !all[q].pci_bus_id[0];
    }
    ALL(ok, "rank %d: local ranks or hosts wrong (its local rank %d, host '%s')", rank, local,
        all[rank].host);
    free(all);
}
END_TEST

START_TEST(test_bad_maps)
{
    int dev = 5;
    /* the same typo on every rank, and on one rank only: all fail alike */
    EXPECT_ERR(ks_comm_select_device(comm, "0,x", &dev), KS_ERR_ARG, "GPU map \"0,x\"");
    EXPECT_ERR(ks_comm_select_device(comm, rank == nranks - 1 ? "1;2" : "none", &dev),
               KS_ERR_ARG, "\"1;2\": expected local, none");
    setenv("KS_GPU_MAP", "gpu0", 1);
    EXPECT_ERR(ks_comm_select_device(comm, NULL, &dev), KS_ERR_ARG, "KS_GPU_MAP \"gpu0\"");
    KS_ALL(ks_comm_select_device(comm, "none", &dev)); /* a given map wins */
    ALL(dev == -1, "rank %d: none gave device %d", rank, dev);
    unsetenv("KS_GPU_MAP");
    EXPECT_ERR(ks_comm_select_device(NULL, "none", &dev), KS_ERR_ARG, "NULL comm");
    if (!have_gpu)
        EXPECT_ERR(ks_comm_select_device(comm, NULL, &dev), KS_ERR_UNSUPPORTED,
                   "\"local\": this node has no GPU");
}
END_TEST

/* With a GPU on every rank: the default map, the refused index, and the
 * GPUs a cuda backend reports. */
START_TEST(test_gpus)
{
    const int g = ks_gpu_count();
    int local = -1, locals[8], dev = -1;
    free(hosts_and_locals(&local, locals));
    char map[32];
    snprintf(map, sizeof map, "0,%d", g);
    EXPECT_ERR(ks_comm_select_device(comm, map, &dev), KS_ERR_ARG, "but this node has");
    KS_ALL(ks_comm_select_device(comm, NULL, &dev));
    ALL(dev == local % g, "rank %d (local %d): GPU %d, expected %d of %d", rank, local, dev,
        local % g, g);
    ks_backend *cu = NULL;
    KS_ALL(ks_backend_create("cuda", &cu));
    ks_rank_device *all = calloc((size_t)nranks, sizeof *all);
    ck_assert_ptr_nonnull(all);
    KS_ALL(ks_comm_gather_devices(comm, cu, all));
    int ok = 1;
    for (int q = 0; q < nranks; q++) {
        ok &= all[q].device == locals[q] % g && all[q].name[0] && all[q].pci_bus_id[0];
        for (int p = 0; p < q; p++) /* one node's ranks on distinct cards while enough */
            if (!strcmp(all[p].host, all[q].host) && locals[q] < g && locals[p] < g)
                ok &= strcmp(all[p].pci_bus_id, all[q].pci_bus_id) != 0;
    }
    if (rank == 0)
        for (int q = 0; q < nranks; q++)
            printf("rank %d: host %s, GPU %d (%s, %s)\n", q, all[q].host, all[q].device,
                   all[q].name, all[q].pci_bus_id);
    ALL(ok, "rank %d: the gathered GPUs do not follow local rank mod %d", rank, g);
    free(all);
    ks_backend_destroy(&cu);
}
END_TEST

static void after(void)
{
    if (rank == 0 && !have_gpu)
        printf("SKIPPED: 1 (no GPU on every rank: the default map and the GPUs reported)\n");
}

static Suite *suite(void)
{
    Suite *s = suite_create("mpi_gpu");
    TCase *t = tcase_create("mpi_gpu");
    tcase_set_timeout(t, 120);
    have_gpu = ks_gpu_count() > 0;
    MPI_Allreduce(MPI_IN_PLACE, &have_gpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    tcase_add_test(t, test_local_ranks);
    tcase_add_test(t, test_bad_maps);
    if (have_gpu)
        tcase_add_test(t, test_gpus);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    return ks_test_mpi_run(&argc, &argv, "test_mpi_gpu", suite, after);
}
