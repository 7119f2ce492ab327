/* One GPU a rank for the MPI examples: ks_comm_select_device before the
 * cuda backend is created (it runs on the device current then), and every
 * rank's GPU gathered for rank 0 to print. */
#include "rank_gpu.h"

#include <stdlib.h>
#include <string.h>

ks_error rank_backend_create(const ks_comm *c, const char *name, const char *map,
                             ks_backend **be)
{
    *be = NULL;
    int device = -1;
    ks_error e = strcmp(name, "cuda") ? KS_OK : ks_comm_select_device(c, map, &device);
    if (e == KS_OK)
        e = ks_comm_agree(c, ks_backend_create(name, be));
    return e;
}

ks_error rank_print_gpus(const ks_comm *c, const ks_backend *be, FILE *out, const char *prefix)
{
    const int n = ks_comm_size(c);
    ks_rank_device *all = calloc((size_t)n, sizeof *all);
    ks_error e = ks_comm_agree(c, all ? KS_OK : KS_ERR_MEMORY);
    if (e == KS_OK)
        e = ks_comm_gather_devices(c, be, all);
    for (int r = 0; e == KS_OK && ks_comm_rank(c) == 0 && r < n && all[0].device >= 0; r++)
        fprintf(out, "%srank %d: host %s, GPU %d (%s, %s)\n", prefix, r, all[r].host,
                all[r].device, all[r].name, all[r].pci_bus_id);
    free(all);
    return e;
}
