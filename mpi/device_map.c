/* One GPU a rank: the ranks of a node are numbered 0, 1, ... (MPI's shared
 * memory split, so no launcher's variables are needed) and the map turns
 * that number into a device, before the cuda backend is created (it takes
 * the device current on its thread). */
#include "mpi_internal.h"
#include "../vec/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ks_error ks_comm_local_rank(const ks_comm *c, int *local_rank, int *local_size)
{
    MPI_Comm node;
    KS_TRY(ks_mpi_check(MPI_Comm_split_type(ks_comm_mpi_of(c), MPI_COMM_TYPE_SHARED, c->rank,
                                            MPI_INFO_NULL, &node),
                        "MPI_Comm_split_type (the ranks of this node)"));
    ks_error e = ks_mpi_check(MPI_Comm_rank(node, local_rank), "MPI_Comm_rank (node)");
    if (e == KS_OK)
        e = ks_mpi_check(MPI_Comm_size(node, local_size), "MPI_Comm_size (node)");
    MPI_Comm_free(&node);
    return e;
}

ks_error ks_comm_select_device(const ks_comm *c, const char *map, int *device)
{
    if (!c || !device)
        return ks_seterr(KS_ERR_ARG, "ks_comm_select_device: NULL %s", !c ? "comm" : "output");
    *device = -1;
    const char *what;
    map = ks_gpu_map_resolve(map, &what);
    int local = 0, nlocal = 1, dev = -1;
    ks_error e = ks_comm_local_rank(c, &local, &nlocal);
    if (e == KS_OK)
        e = ks_gpu_map_pick(map, what, local, ks_gpu_count(), &dev);
    if (e == KS_OK && dev >= 0)
        e = ks_gpu_use(dev);
    KS_TRY(ks_comm_agree(c, e));
    *device = dev;
    return KS_OK;
}

ks_error ks_comm_gather_devices(const ks_comm *c, const ks_backend *be, ks_rank_device *all)
{
    if (!c || !all)
        return ks_seterr(KS_ERR_ARG, "ks_comm_gather_devices: NULL %s", !c ? "comm" : "output");
    ks_rank_device mine;
    memset(&mine, 0, sizeof mine);
    char host[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    ks_error e = ks_mpi_check(MPI_Get_processor_name(host, &len), "MPI_Get_processor_name");
    snprintf(mine.host, sizeof mine.host, "%.*s", e == KS_OK ? len : 0, host);
    ks_gpu_desc d;
    if (e == KS_OK)
        e = ks_backend_gpu(be, &d);
    if (e == KS_OK) {
        mine.device = d.device;
        snprintf(mine.name, sizeof mine.name, "%s", d.name);
        snprintf(mine.pci_bus_id, sizeof mine.pci_bus_id, "%s", d.pci_bus_id);
    }
    KS_TRY(ks_comm_agree(c, e));
    /* Plain bytes: every rank runs the same build, so the layout agrees. */
    return ks_mpi_check(MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine,
                                      MPI_BYTE, ks_comm_mpi_of(c)),
                        "MPI_Allgather (the ranks' devices)");
}

ks_error ks_comm_check_gpus(const ks_comm *c, ks_backend *be, const char *who,
                            const char *other_hosts, const char *shared, ks_rank_device **table)
{
    if (table)
        *table = NULL;
    const int p = c->size;
    ks_rank_device *all = ks_calloc((size_t)p, sizeof *all, "the ranks' GPUs");
    ks_error e = ks_comm_agree(c, all ? KS_OK : KS_ERR_MEMORY);
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_comm_gather_devices(c, be, all));
    /* the verdict read off the same table everywhere: the same on every rank */
    for (int q = 0; q < p && e == KS_OK; q++) {
        if (all[q].device < 0)
            e = ks_seterr(KS_ERR_UNSUPPORTED, "%s: rank %d's backend has no GPU", who, q);
        else if (other_hosts && strcmp(all[q].host, all[0].host))
            e = ks_seterr(KS_ERR_UNSUPPORTED, "%s: ranks 0 and %d run on different hosts (%s "
                          "and %s; %s)", who, q, all[0].host, all[q].host, other_hosts);
    }
    for (int q = 1; q < p && e == KS_OK && shared; q++)
        for (int r = 0; r < q && e == KS_OK; r++)
            if (!strcmp(all[q].host, all[r].host) &&
                !strcmp(all[q].pci_bus_id, all[r].pci_bus_id))
                e = ks_seterr(KS_ERR_UNSUPPORTED, "%s: ranks %d and %d share GPU %s on host %s "
                              "(%s)", who, r, q, all[q].pci_bus_id, all[q].host, shared);
    if (e == KS_OK && table) { /* handed over */
        *table = all;
        all = NULL;
    }
    free(all);
    return e;
}
