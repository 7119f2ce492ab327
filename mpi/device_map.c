/* One GPU a rank: the ranks of a node are numbered 0, 1, ... (MPI's shared
 * memory split, so no launcher's variables are needed) and the map turns
 * that number into a device, before the cuda backend is created (it takes
 * the device current on its thread). */
#include "device_map.h"
#include "../vec/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A map's list: the entries (decimal, in range for ngpus) and how many. */
static ks_error parse_list(const char *map, const char *what, int ngpus, int *list, int max,
                           int *n)
{
    *n = 0;
    for (const char *s = map;; s++) {
        long v = 0;
        const char *d = s;
        while (*s >= '0' && *s <= '9' && v <= 1000000)
            v = v * 10 + (*s++ - '0');
        if (s == d || (*s != ',' && *s != '\0') || v > 1000000)
            return ks_seterr(KS_ERR_ARG,
                             "%s \"%s\": expected local, none, a GPU index or a list of them "
                             "(e.g. 0,2,1,3)", what, map);
        if (v >= ngpus)
            return ks_seterr(KS_ERR_ARG, "%s \"%s\": GPU %ld, but this node has %d (0 to %d)",
                             what, map, v, ngpus, ngpus - 1);
        if (*n == max)
            return ks_seterr(KS_ERR_ARG, "%s \"%s\": more than %d entries", what, map, max);
        list[(*n)++] = (int)v;
        if (*s == '\0')
            return KS_OK;
    }
}

ks_error ks_device_map_pick(const char *map, const char *what, int local_rank, int ngpus,
                            int *device)
{
    *device = -1;
    if (!map || local_rank < 0)
        return ks_seterr(KS_ERR_ARG, "%s: no map, or a negative local rank", what);
    if (!strcmp(map, "none"))
        return KS_OK;
    if (ngpus < 1)
        return ks_seterr(KS_ERR_UNSUPPORTED,
                         "%s \"%s\": this node has no GPU (cudaGetDeviceCount found none)", what,
                         map);
    if (!strcmp(map, "local")) {
        *device = local_rank % ngpus;
        return KS_OK;
    }
    int list[256], n = 0;
    KS_TRY(parse_list(map, what, ngpus, list, 256, &n));
    *device = list[local_rank % n];
    return KS_OK;
}

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
    /* An explicit map, else the environment's, else one GPU a local rank. */
    const char *what = "GPU map";
    const char *env = getenv("KS_GPU_MAP");
    if (!map && env && env[0]) {
        map = env;
        what = "KS_GPU_MAP";
    }
    if (!map)
        map = "local";
    int local = 0, nlocal = 1, dev = -1;
    ks_error e = ks_comm_local_rank(c, &local, &nlocal);
    if (e == KS_OK)
        e = ks_device_map_pick(map, what, local, ks_gpu_count(), &dev);
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
