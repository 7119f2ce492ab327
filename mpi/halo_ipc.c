/* The halo's CUDA IPC transport (built with cuda only): between the GPUs
 * of one host, each receiver copies its ghost values out of its sources'
 * send buffers with cudaMemcpyAsync on its staging queue, so copy engines
 * move them and no kernel competes with the local product for the SMs
 * (NCCL's transfer kernels do).
 *
 * Per plan, made collectively (ks_ipc_setup): every rank on one host with
 * a GPU (ks_comm_gather_devices; ranks may share a GPU: only a process
 * cannot open its own handles); a send buffer of its own from cudaMalloc
 * (IPC handles refuse the backend's stream-ordered pool), which the
 * halo's gather fills as it is (h->send_be); two interprocess events,
 * "ready" (the send buffer is packed) and "pulled" (this rank has copied
 * what it receives). The handles go to every rank (MPI_Allgather), each
 * source says where the receiver's slice starts (MPI_Alltoall), and each
 * rank opens its sources' buffers and ready events and its destinations'
 * pulled events.
 *
 * An exchange (k = 1, 2, ...) is a pull. begin: as a sender, receive each
 * destination's "pulled k-1" token (MPI: a stream waits on the record an
 * event had when the wait was queued, so the host must know the record
 * exists), make the backend's queue wait for those events (nobody still
 * copies the last values), gather, record "ready", send a "ready k" token
 * to each destination; the staging queue waits for the backend's queue
 * (the ghost vector's last readers). end: as a receiver, receive each
 * source's "ready k" token, make the staging queue wait for its ready
 * event and copy the slice into the ghost vector, record "pulled", send
 * "pulled k" to each source (drained at its next begin or at destroy);
 * the backend's queue waits for the staging queue before the ghost
 * block's product. The host waits only for tokens, never for the GPU.
 * Tokens carry k, so ranks out of step are an error, not a wrong sum.
 * Each plan has tags of its own (a count of the comm's IPC plans, the
 * same on every rank: plans are made collectively). At destroy no rank
 * frees what others imported before they say "done" (ks_ipc_free). */
#include "mpi_internal.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tags IPC_TAG .. IPC_TAG + 3 * IPC_TAG_PLANS - 1 (below the other halo
 * tags, inside MPI's guaranteed 32767): ready, pulled and done of each
 * plan. */
#define IPC_TAG 0x1000
#define IPC_TAG_PLANS 4096

struct ks_ipc {
    int tag_ready, tag_pulled;
    long long count;           /* exchanges begun */
    int pulled_pending;        /* the pulled tokens of exchange `count` are posted */
    cudaStream_t main;         /* the backend's queue */
    cudaEvent_t ready, pulled; /* this rank's, interprocess */
    int own_events;            /* 2 once both are made */
    /* per source (nrecv): its send buffer, where this rank's slice starts
     * there, its ready event (opened) */
    double **src;
    ks_int *src_at;
    cudaEvent_t *src_ready;
    /* per destination (nsend): its pulled event (opened) */
    cudaEvent_t *dst_pulled;
    /* tokens: in (nrecv ready, then nsend pulled), out (one value each) */
    long long *tok_in, tok_ready, tok_pulled;
    /* ready in (nrecv), ready out (nsend), pulled in (nsend), pulled out (nrecv) */
    MPI_Request *rq;
    /* After the plan is destroyed (ks_ipc_free): what is left until every
     * neighbour has said it no longer touches this rank's send buffer and
     * events ("done": its imports closed after its queues finished), on
     * the comm's list (ks_ipc_reap). */
    int tag_done, ndone;       /* ndone requests: sends, then receives */
    MPI_Request *done_rq;
    long long done_out, *done_in;
    double *sbuf;
    struct ks_ipc *next;
};

/* What each rank publishes (plain bytes: every rank runs the same build). */
typedef struct ipc_handles {
    cudaIpcMemHandle_t buf;
    cudaIpcEventHandle_t ready, pulled;
} ipc_handles;

/* KS_OK for cudaSuccess; else KS_ERR_DEVICE naming the call and CUDA's
 * reason (the error consumed, so a later launch check is not blamed). */
static ks_error cu_check(cudaError_t r, const char *call)
{
    if (r == cudaSuccess)
        return KS_OK;
    (void)cudaGetLastError();
    return ks_seterr(KS_ERR_DEVICE, "halo transport ipc: %s failed: %s", call,
                     cudaGetErrorString(r));
}

static MPI_Request *rq_ready_in(ks_halo *h) { return h->ipc->rq; }
static MPI_Request *rq_ready_out(ks_halo *h) { return h->ipc->rq + h->nrecv; }
static MPI_Request *rq_pulled_in(ks_halo *h) { return h->ipc->rq + h->nrecv + h->nsend; }
static MPI_Request *rq_pulled_out(ks_halo *h) { return h->ipc->rq + h->nrecv + 2 * h->nsend; }

/* Wait for n requests (none posted: nothing to wait for). */
static ks_error wait_all(int n, MPI_Request *r, const char *what)
{
    return n > 0 ? ks_mpi_check(MPI_Waitall(n, r, MPI_STATUSES_IGNORE), what) : KS_OK;
}

/* Tokens k from n ranks (`ranks`), what they say checked. */
static ks_error check_tokens(const ks_halo *h, int n, const int *ranks, const long long *tok,
                             long long k, const char *what)
{
    for (int r = 0; r < n; r++)
        if (tok[r] != k)
            return ks_seterr(KS_ERR_MPI, "halo transport ipc: rank %d's %s token of "
                             "exchange %lld arrived in exchange %lld of rank %d (the ranks' "
                             "products are out of step)",
                             ranks[r], what, tok[r], k, h->kc->rank);
    return KS_OK;
}

/* Read off the same gathered table on every rank: the same verdict. */
ks_error ks_ipc_one_host(const ks_comm *c, ks_backend *be)
{
    return ks_comm_check_gpus(c, be, "halo transport ipc", KS_IPC_OTHER_HOSTS, NULL, NULL);
}

/* 1 on this rank when it sees every other rank's GPU (by PCI bus id) and
 * may access it (peer access between different GPUs), which opening
 * their buffers needs: not so where each rank was given one GPU through
 * CUDA_VISIBLE_DEVICES, or between GPUs without peer access. */
static int sees_peers(const ks_rank_device *all, int p, int me)
{
    for (int q = 0; q < p; q++) {
        if (q == me)
            continue;
        int d = -1, can = 0;
        if (cudaDeviceGetByPCIBusId(&d, all[q].pci_bus_id) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
        if (d != all[me].device &&
            (cudaDeviceCanAccessPeer(&can, all[me].device, d) != cudaSuccess || !can)) {
            (void)cudaGetLastError();
            return 0;
        }
    }
    return 1;
}

ks_error ks_ipc_auto_fits(const ks_comm *c, ks_backend *be, int *fits)
{
    *fits = 0;
    ks_rank_device *all = NULL;
    ks_error e = ks_comm_check_gpus(c, be, "halo transport auto", KS_IPC_OTHER_HOSTS,
                                    "a GPU a rank for ipc", &all);
    if (e == KS_ERR_UNSUPPORTED) { /* the same verdict on every rank: not ipc */
        ks_clear_error();
        return KS_OK;
    }
    KS_TRY(e);
    int ok = sees_peers(all, c->size, c->rank);
    free(all);
    KS_TRY(ks_mpi_check(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN,
                                      ks_comm_mpi_of(c)),
                        "MPI_Allreduce (ipc's peers)"));
    *fits = ok;
    return KS_OK;
}

/* Local: this rank's buffer, events, arrays and published handles. */
static ks_error make_own(ks_halo *h, ks_int nout, ipc_handles *mine)
{
    struct ks_ipc *ip = h->ipc;
    const size_t ns = (size_t)h->nsend, nr = (size_t)h->nrecv;
    ip->src = ks_calloc(nr + 1, sizeof *ip->src, "halo ipc sources");
    ip->src_at = ks_calloc(nr + 1, sizeof *ip->src_at, "halo ipc sources");
    ip->src_ready = ks_calloc(nr + 1, sizeof *ip->src_ready, "halo ipc sources");
    ip->dst_pulled = ks_calloc(ns + 1, sizeof *ip->dst_pulled, "halo ipc destinations");
    ip->tok_in = ks_calloc(nr + ns + 1, sizeof *ip->tok_in, "halo ipc tokens");
    ip->rq = ks_malloc((2 * (nr + ns) + 1) * sizeof *ip->rq, "halo ipc requests");
    ip->done_rq = ks_malloc((2 * (nr + ns) + 1) * sizeof *ip->done_rq, "halo ipc requests");
    ip->done_in = ks_calloc(nr + ns + 1, sizeof *ip->done_in, "halo ipc tokens");
    if (!ip->src || !ip->src_at || !ip->src_ready || !ip->dst_pulled || !ip->tok_in || !ip->rq ||
        !ip->done_rq || !ip->done_in)
        return KS_ERR_MEMORY;
    for (size_t r = 0; r < 2 * (nr + ns); r++)
        ip->rq[r] = ip->done_rq[r] = MPI_REQUEST_NULL;
    ip->main = (cudaStream_t)ks_cuda_stream(h->be);
    if (!ip->main)
        return ks_seterr(KS_ERR_UNSUPPORTED, "halo transport ipc: the %s backend is not cuda",
                         ks_backend_name(h->be));
    void *stage = NULL; /* made now, not inside the first exchange */
    KS_TRY(h->be->ops->stage_native(h->be, &stage));
    /* one entry at least: every rank has a buffer and a handle */
    KS_TRY(cu_check(cudaMalloc((void **)&h->send_be, ((size_t)nout + 1) * sizeof(double)),
                    "cudaMalloc (send buffer)"));
    const unsigned flags = cudaEventInterprocess | cudaEventDisableTiming;
    KS_TRY(cu_check(cudaEventCreateWithFlags(&ip->ready, flags), "cudaEventCreateWithFlags"));
    ip->own_events = 1;
    KS_TRY(cu_check(cudaEventCreateWithFlags(&ip->pulled, flags), "cudaEventCreateWithFlags"));
    ip->own_events = 2;
    KS_TRY(cu_check(cudaIpcGetMemHandle(&mine->buf, h->send_be), "cudaIpcGetMemHandle"));
    KS_TRY(cu_check(cudaIpcGetEventHandle(&mine->ready, ip->ready), "cudaIpcGetEventHandle"));
    return cu_check(cudaIpcGetEventHandle(&mine->pulled, ip->pulled), "cudaIpcGetEventHandle");
}

/* Local: each source's slice start (at: two int64 a rank, offset and
 * count, as the sources sent them) checked against this rank's plan, and
 * the neighbours' handles opened. */
static ks_error open_peers(ks_halo *h, const ipc_handles *all, const int64_t *at)
{
    struct ks_ipc *ip = h->ipc;
    for (int r = 0; r < h->nrecv; r++) {
        const int q = h->recv_rank[r];
        const ks_int n = h->recv_start[r + 1] - h->recv_start[r];
        if (at[2 * q + 1] != n)
            return ks_seterr(KS_ERR_SIZE, "halo transport ipc: rank %d sends %lld values, "
                             "rank %d expects %lld", q, (long long)at[2 * q + 1], h->kc->rank,
                             (long long)n);
        ip->src_at[r] = (ks_int)at[2 * q];
        char what[200];
        snprintf(what, sizeof what, "cudaIpcOpenMemHandle (rank %d's send buffer; every rank "
                 "must see the others' GPUs, no CUDA_VISIBLE_DEVICES of one GPU a rank, and "
                 "different GPUs need peer access)", q);
        KS_TRY(cu_check(cudaIpcOpenMemHandle((void **)&ip->src[r], all[q].buf,
                                             cudaIpcMemLazyEnablePeerAccess),
                        what));
        KS_TRY(cu_check(cudaIpcOpenEventHandle(&ip->src_ready[r], all[q].ready),
                        "cudaIpcOpenEventHandle (ready)"));
    }
    for (int r = 0; r < h->nsend; r++)
        KS_TRY(cu_check(cudaIpcOpenEventHandle(&ip->dst_pulled[r], all[h->send_rank[r]].pulled),
                        "cudaIpcOpenEventHandle (pulled)"));
    return KS_OK;
}

/* The neighbours' buffers and events this rank opened, closed (errors
 * ignored: nothing more can be done about them). */
static void close_imports(ks_halo *h)
{
    struct ks_ipc *ip = h->ipc;
    for (int r = 0; ip->src && r < h->nrecv; r++) {
        if (ip->src[r])
            (void)cudaIpcCloseMemHandle(ip->src[r]);
        if (ip->src_ready[r])
            (void)cudaEventDestroy(ip->src_ready[r]);
        ip->src[r] = NULL;
        ip->src_ready[r] = NULL;
    }
    for (int r = 0; ip->dst_pulled && r < h->nsend; r++) {
        if (ip->dst_pulled[r])
            (void)cudaEventDestroy(ip->dst_pulled[r]);
        ip->dst_pulled[r] = NULL;
    }
    (void)cudaGetLastError();
}

/* This rank's send buffer and events, and ip, freed (no neighbour uses
 * them any more). */
static void free_own(struct ks_ipc *ip)
{
    if (ip->own_events > 0)
        (void)cudaEventDestroy(ip->ready);
    if (ip->own_events > 1)
        (void)cudaEventDestroy(ip->pulled);
    if (ip->sbuf)
        (void)cudaFree(ip->sbuf);
    (void)cudaGetLastError();
    free(ip->src);
    free(ip->src_at);
    free(ip->src_ready);
    free(ip->dst_pulled);
    free(ip->tok_in);
    free(ip->rq);
    free(ip->done_rq);
    free(ip->done_in);
    free(ip);
}

/* 1 when every "done" of ip has gone and come (or cannot any more). */
static int all_done(struct ks_ipc *ip, int live)
{
    int flag = 0;
    if (!live || ip->ndone == 0)
        return 1;
    if (MPI_Testall(ip->ndone, ip->done_rq, &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
        return 1; /* a failed test gives up on the tokens, not the memory */
    return flag;
}

void ks_ipc_reap(ks_comm_mpi *m, double wait_s)
{
    int finalized = 1; /* after MPI_Finalize nothing is owed any more */
    const int live = MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized;
    const double until = ks_wtime() + wait_s;
    for (struct ks_ipc **at = &m->ipc_dead; *at;) {
        struct ks_ipc *ip = *at;
        int done = all_done(ip, live);
        while (!done && ks_wtime() < until)
            done = all_done(ip, live);
        if (!done && wait_s >= 0.0) {
            at = &ip->next;
            continue;
        }
        for (int r = 0; !done && r < ip->ndone; r++) /* given up: nothing lands later */
            if (ip->done_rq[r] != MPI_REQUEST_NULL) {
                (void)MPI_Cancel(&ip->done_rq[r]);
                (void)MPI_Request_free(&ip->done_rq[r]);
            }
        *at = ip->next;
        free_own(ip);
    }
}

ks_error ks_ipc_setup(ks_halo *h, ks_int nout)
{
    const ks_comm *c = h->kc;
    const MPI_Comm comm = h->comm;
    const int p = c->size;
    ks_comm_mpi *m = (ks_comm_mpi *)c;
    const int plan = m->ipc_plans++ % IPC_TAG_PLANS;
    ks_ipc_reap(m, 0.0); /* destroyed plans whose neighbours have said done */
    KS_TRY(ks_ipc_one_host(c, h->be));
    h->ipc = ks_calloc(1, sizeof *h->ipc, "halo ipc");
    ipc_handles mine, *all = ks_calloc((size_t)p, sizeof *all, "halo ipc handles");
    int64_t *out = ks_calloc(4 * (size_t)p, sizeof *out, "halo ipc slices");
    int64_t *in = out ? out + 2 * p : NULL;
    memset(&mine, 0, sizeof mine);
    ks_error e = h->ipc && all && out ? KS_OK : KS_ERR_MEMORY;
    if (e == KS_OK) {
        h->ipc->tag_ready = IPC_TAG + 3 * plan;
        h->ipc->tag_pulled = IPC_TAG + 3 * plan + 1;
        h->ipc->tag_done = IPC_TAG + 3 * plan + 2;
    }
    /* the handles and buffers belong to the backend's device */
    if (e == KS_OK && h->be->ops->attach)
        e = h->be->ops->attach(h->be);
    if (e == KS_OK)
        e = make_own(h, nout, &mine);
    e = ks_comm_agree(c, e);
    if (e == KS_OK) {
        for (int r = 0; r < h->nsend; r++) {
            out[2 * h->send_rank[r]] = h->send_start[r];
            out[2 * h->send_rank[r] + 1] = h->send_start[r + 1] - h->send_start[r];
        }
        e = ks_mpi_check(MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine,
                                       MPI_BYTE, comm),
                         "MPI_Allgather (halo ipc handles)");
        if (e == KS_OK)
            e = ks_mpi_check(MPI_Alltoall(out, 2, MPI_INT64_T, in, 2, MPI_INT64_T, comm),
                             "MPI_Alltoall (halo ipc slices)");
        if (e == KS_OK)
            e = open_peers(h, all, in);
        e = ks_comm_agree(c, e);
    }
    free(all);
    free(out);
    if (e != KS_OK) {
        /* every rank closes what it opened before any frees what it made
         * (the barrier on every rank: the error is agreed) */
        if (h->ipc)
            close_imports(h);
        (void)MPI_Barrier(comm);
        if (h->ipc) {
            h->ipc->sbuf = h->send_be;
            free_own(h->ipc);
        }
        h->ipc = NULL;
        h->send_be = NULL;
        return e;
    }
    return KS_OK;
}

/* Post n token sends of *tok (a long long) to ranks, tagged tag. */
static ks_error send_tokens(ks_halo *h, int n, const int *ranks, const long long *tok, int tag,
                            MPI_Request *rq)
{
    for (int r = 0; r < n; r++)
        KS_TRY(ks_mpi_check(MPI_Isend(tok, 1, MPI_LONG_LONG, ranks[r], tag, h->comm, &rq[r]),
                            "MPI_Isend (halo ipc token)"));
    return KS_OK;
}

/* Post n token receives into tok from ranks, tagged tag. */
static ks_error recv_tokens(ks_halo *h, int n, const int *ranks, long long *tok, int tag,
                            MPI_Request *rq)
{
    for (int r = 0; r < n; r++)
        KS_TRY(ks_mpi_check(MPI_Irecv(&tok[r], 1, MPI_LONG_LONG, ranks[r], tag, h->comm, &rq[r]),
                            "MPI_Irecv (halo ipc token)"));
    return KS_OK;
}

/* The sender's side up to the gather: the destinations have copied the
 * last values out of the send buffer (their pulled tokens on the host,
 * their pulled events on the backend's queue). */
static ks_error senders_wait(ks_halo *h)
{
    struct ks_ipc *ip = h->ipc;
    if (!ip->pulled_pending)
        return KS_OK;
    ip->pulled_pending = 0;
    KS_TRY(wait_all(h->nsend, rq_pulled_in(h), "MPI_Waitall (halo ipc pulled tokens)"));
    KS_TRY(check_tokens(h, h->nsend, h->send_rank, ip->tok_in + h->nrecv, ip->count - 1,
                        "pulled"));
    for (int r = 0; r < h->nsend; r++)
        KS_TRY(cu_check(cudaStreamWaitEvent(ip->main, ip->dst_pulled[r], 0),
                        "cudaStreamWaitEvent (pulled)"));
    return KS_OK;
}

ks_error ks_ipc_begin(ks_halo *h, const double *x, ks_int nout)
{
    struct ks_ipc *ip = h->ipc;
    ks_backend *be = h->be;
    ip->count++;
    /* the staging queue after the ghost vector's last readers (queued
     * before this exchange), not after the gather: the host waits for
     * neither */
    ks_error e = h->nrecv > 0 ? be->ops->stage_download(be, NULL, NULL, 0) : KS_OK;
    if (e == KS_OK)
        e = senders_wait(h);
    /* the last exchange's sends are done before their value changes */
    ks_error ew = wait_all(h->nsend, rq_ready_out(h), "MPI_Waitall (halo ipc ready tokens)");
    if (e == KS_OK)
        e = ew;
    if (e == KS_OK)
        e = recv_tokens(h, h->nrecv, h->recv_rank, ip->tok_in, ip->tag_ready, rq_ready_in(h));
    if (e == KS_OK && nout > 0)
        e = be->ops->gather(be, nout, h->idx_be, x, h->send_be);
    if (e == KS_OK && h->nsend > 0)
        e = cu_check(cudaEventRecord(ip->ready, ip->main), "cudaEventRecord (ready)");
    /* Sent after a failure too, so no destination waits forever; it then
     * copies stale values, and this rank returns the error. */
    ip->tok_ready = ip->count;
    ks_error es = send_tokens(h, h->nsend, h->send_rank, &ip->tok_ready, ip->tag_ready,
                              rq_ready_out(h));
    return e == KS_OK ? es : e;
}

ks_error ks_ipc_end(ks_halo *h, double *ghost)
{
    struct ks_ipc *ip = h->ipc;
    ks_backend *be = h->be;
    ks_error e = wait_all(h->nrecv, rq_ready_in(h), "MPI_Waitall (halo ipc ready tokens)");
    if (e == KS_OK)
        e = check_tokens(h, h->nrecv, h->recv_rank, ip->tok_in, ip->count, "ready");
    void *queue = NULL;
    if (e == KS_OK && h->nrecv > 0)
        e = be->ops->stage_native(be, &queue);
    const cudaStream_t s = (cudaStream_t)queue;
    for (int r = 0; r < h->nrecv && e == KS_OK; r++) {
        const ks_int at = h->recv_start[r], n = h->recv_start[r + 1] - at;
        e = cu_check(cudaStreamWaitEvent(s, ip->src_ready[r], 0), "cudaStreamWaitEvent (ready)");
        if (e == KS_OK)
            e = cu_check(cudaMemcpyAsync(ghost + at, ip->src[r] + ip->src_at[r],
                                         (size_t)n * sizeof *ghost, cudaMemcpyDeviceToDevice, s),
                         "cudaMemcpyAsync (ghost values)");
    }
    if (e == KS_OK && h->nrecv > 0)
        e = cu_check(cudaEventRecord(ip->pulled, s), "cudaEventRecord (pulled)");
    /* pulled tokens go out after a failure too (no source waits forever) */
    ks_error ew = wait_all(h->nrecv, rq_pulled_out(h), "MPI_Waitall (halo ipc pulled tokens)");
    ip->tok_pulled = ip->count;
    if (ew == KS_OK)
        ew = send_tokens(h, h->nrecv, h->recv_rank, &ip->tok_pulled, ip->tag_pulled,
                         rq_pulled_out(h));
    if (ew == KS_OK) {
        ew = recv_tokens(h, h->nsend, h->send_rank, ip->tok_in + h->nrecv, ip->tag_pulled,
                         rq_pulled_in(h));
        ip->pulled_pending = ew == KS_OK;
    }
    if (e == KS_OK)
        e = ew;
    /* the ghost block's product after the copies, on the device */
    if (e == KS_OK && h->nrecv > 0)
        e = be->ops->stage_upload(be, NULL, NULL, 0);
    return e;
}

void ks_ipc_free(ks_halo *h)
{
    struct ks_ipc *ip = h->ipc;
    if (!ip)
        return;
    /* An imported event or buffer must not be used once its maker freed
     * it, so no rank frees its own before every neighbour has closed its
     * imports of them: this rank drains the last exchange (its tokens;
     * its queues: its copies out of the sources' buffers, its waits on
     * the destinations' events, its gather), closes its imports, tells
     * every neighbour "done" and frees its own once every neighbour has
     * told it the same (now, or later from the comm's list: at the next
     * plan's setup or destroy, at the latest at ks_comm_destroy). Nothing
     * here waits for a neighbour's progress beyond the tokens of the last
     * exchange, which are sent at its end: destroys need no common order. */
    int finalized = 1; /* no MPI call after MPI_Finalize */
    const int live = MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized;
    if (live && ip->pulled_pending)
        (void)wait_all(h->nsend, rq_pulled_in(h), "MPI_Waitall (halo ipc pulled tokens)");
    ip->pulled_pending = 0;
    (void)h->be->ops->stage_wait(h->be);
    (void)h->be->ops->sync(h->be);
    if (live) {
        (void)wait_all(h->nrecv, rq_ready_in(h), "MPI_Waitall (halo ipc)");
        (void)wait_all(h->nsend, rq_ready_out(h), "MPI_Waitall (halo ipc)");
        (void)wait_all(h->nrecv, rq_pulled_out(h), "MPI_Waitall (halo ipc)");
    }
    close_imports(h);
    ip->sbuf = h->send_be;
    h->send_be = NULL;
    h->ipc = NULL;
    ks_comm_mpi *m = (ks_comm_mpi *)h->kc;
    if (live) {
        /* to sources and destinations alike (a rank may be both: two
         * tokens), and from both */
        const int n = h->nrecv + h->nsend;
        ks_error e = send_tokens(h, h->nrecv, h->recv_rank, &ip->done_out, ip->tag_done,
                                 ip->done_rq);
        if (e == KS_OK)
            e = send_tokens(h, h->nsend, h->send_rank, &ip->done_out, ip->tag_done,
                            ip->done_rq + h->nrecv);
        if (e == KS_OK)
            e = recv_tokens(h, h->nrecv, h->recv_rank, ip->done_in, ip->tag_done,
                            ip->done_rq + n);
        if (e == KS_OK)
            e = recv_tokens(h, h->nsend, h->send_rank, ip->done_in + h->nrecv, ip->tag_done,
                            ip->done_rq + n + h->nrecv);
        ip->ndone = 2 * n;
    }
    ip->next = m->ipc_dead;
    m->ipc_dead = ip;
    ks_ipc_reap(m, 0.0);
}
