/* The halo's NCCL transport (built with NCCL only): the ghost values go
 * GPU to GPU with ncclSend / ncclRecv, where the MPI library cannot read
 * device memory (the GPU machines' Open MPI).
 *
 * One NCCL communicator per ks_comm, made when the first plan asks for it
 * (ncclGetUniqueId on rank 0, MPI_Bcast, ncclCommInitRank over the comm's
 * ranks with their ks_comm numbers) and destroyed with the comm. NCCL
 * cannot put two ranks on one GPU, so every rank's host and device (PCI
 * bus id) are gathered first and a shared GPU is refused on every rank
 * (ks_comm_gather_devices) before any NCCL call.
 *
 * An exchange is queued, never waited for: the gather fills the send
 * buffer on the backend's queue, the staging queue waits for it (an
 * event), and one NCCL group receives each source's values straight into
 * its slice of the ghost vector and sends each destination its slice, on
 * that queue; the local product runs meanwhile on the backend's queue,
 * and ks_halo_end makes that queue wait for the staging queue (an event)
 * before the ghost block's product. CUDA types come from nccl.h; the
 * stream and events are the backend's (vec/backend.h: stage_native,
 * stage_download / stage_upload of 0 bytes), the device's name vec/gpu.h's. */
#include "mpi_internal.h"
#include "../vec/gpu.h"

#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEVICE_KEY_LEN 64

struct ks_nccl {
    ncclComm_t comm;
    char device[DEVICE_KEY_LEN]; /* the PCI bus id of the device it was made on */
};

/* KS_OK for ncclSuccess; else KS_ERR_DEVICE naming the call and NCCL's
 * reason (and its last message, where it has one). */
static ks_error nccl_check(ncclResult_t r, const char *call)
{
    if (r == ncclSuccess)
        return KS_OK;
    const char *last = ncclGetLastError(NULL);
    return ks_seterr(KS_ERR_DEVICE, "%s failed: %s%s%s%s", call, ncclGetErrorString(r),
                     last && *last ? " (" : "", last && *last ? last : "",
                     last && *last ? ")" : "");
}

/* Collective: every rank its own GPU (ks_comm_check_gpus); dev: this
 * rank's device. */
static ks_error own_gpus(const ks_comm *c, ks_backend *be, char *dev)
{
    ks_rank_device *all = NULL;
    KS_TRY(ks_comm_check_gpus(c, be, "halo transport nccl", NULL,
                              "NCCL cannot put two ranks on one GPU: give each rank its own, "
                              "or use the staged transport",
                              &all));
    snprintf(dev, DEVICE_KEY_LEN, "%s", all[c->rank].pci_bus_id);
    free(all);
    return KS_OK;
}

/* This rank's device: be's PCI bus id. */
static ks_error device_of(ks_backend *be, char *dev)
{
    ks_gpu_desc d;
    KS_TRY(ks_backend_gpu(be, &d));
    snprintf(dev, DEVICE_KEY_LEN, "%s", d.device < 0 ? "(none)" : d.pci_bus_id);
    return KS_OK;
}

ks_error ks_nccl_ready(const ks_comm *c, ks_backend *be)
{
    ks_comm_mpi *m = (ks_comm_mpi *)c;
    char dev[DEVICE_KEY_LEN] = "";
    if (m->nccl) { /* made: the plan's device must be its device */
        ks_error e = device_of(be, dev);
        if (e == KS_OK && strcmp(dev, m->nccl->device))
            e = ks_seterr(KS_ERR_UNSUPPORTED,
                          "halo transport nccl: rank %d's NCCL communicator is on GPU %s, but "
                          "this matrix's backend on GPU %s (one GPU a rank over a comm)",
                          c->rank, m->nccl->device, dev);
        return ks_comm_agree(c, e);
    }
    KS_TRY(own_gpus(c, be, dev));
    struct ks_nccl *n = ks_calloc(1, sizeof *n, "NCCL communicator");
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ks_error e = n ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK && c->rank == 0)
        e = nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    e = ks_comm_agree(c, e);
    if (e == KS_OK)
        e = ks_mpi_check(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, ks_comm_mpi_of(c)),
                         "MPI_Bcast (NCCL id)");
    /* NCCL takes the device current on this thread: the backend's */
    if (e == KS_OK && be->ops->attach)
        e = be->ops->attach(be);
    e = ks_comm_agree(c, e);
    if (e == KS_OK)
        e = ks_comm_agree(c, nccl_check(ncclCommInitRank(&n->comm, c->size, id, c->rank),
                                        "ncclCommInitRank"));
    if (e != KS_OK) {
        if (n && n->comm) /* made here, failed elsewhere: no peer to finish with */
            (void)ncclCommAbort(n->comm);
        free(n);
        return ks_adderr(e, "halo transport nccl");
    }
    snprintf(n->device, sizeof n->device, "%s", dev);
    m->nccl = n;
    return KS_OK;
}

ks_error ks_nccl_exchange(ks_halo *h, double *ghost)
{
    ks_backend *be = h->be;
    const ncclComm_t comm = ((const ks_comm_mpi *)h->kc)->nccl->comm;
    void *queue = NULL;
    KS_TRY(be->ops->stage_native(be, &queue));
    /* the staging queue after the gather (and after the last reader of
     * the ghost vector, which the receives overwrite) */
    KS_TRY(be->ops->stage_download(be, NULL, NULL, 0));
    const cudaStream_t s = (cudaStream_t)queue;
    KS_TRY(nccl_check(ncclGroupStart(), "ncclGroupStart (halo)"));
    ks_error e = KS_OK;
    for (int r = 0; r < h->nrecv && e == KS_OK; r++) {
        const ks_int at = h->recv_start[r], n = h->recv_start[r + 1] - at;
        e = nccl_check(ncclRecv(ghost + at, (size_t)n, ncclDouble, h->recv_rank[r], comm, s),
                       "ncclRecv (halo)");
    }
    for (int r = 0; r < h->nsend && e == KS_OK; r++) {
        const ks_int at = h->send_start[r], n = h->send_start[r + 1] - at;
        e = nccl_check(ncclSend(h->send_be + at, (size_t)n, ncclDouble, h->send_rank[r], comm,
                                s),
                       "ncclSend (halo)");
    }
    /* the group ends even after a failure inside it */
    ks_error eg = nccl_check(ncclGroupEnd(), "ncclGroupEnd (halo)");
    return e != KS_OK ? e : eg;
}

void ks_nccl_free(struct ks_nccl *n)
{
    if (!n)
        return;
    (void)ncclCommDestroy(n->comm);
    free(n);
}
