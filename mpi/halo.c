/* The halo exchange of a distributed matrix: each rank receives the x
 * entries of its ghost columns from their owners and sends its own entries
 * that other ranks' rows reference.
 *
 * The plan is built once per matrix. The ghosts are sorted by global id and
 * the layout is contiguous, so each owner's ghosts form one slice of the
 * ghost buffer: the receive counts come from one pass. The owners learn
 * what to send by receiving the ids themselves: MPI_Alltoall of the
 * counts, then MPI_Alltoallv of the id lists. (Both cost O(ranks) memory
 * per rank; a sparse exchange of the ids would not.)
 *
 * Each apply posts the receives straight into the ghost buffer, packs and
 * sends (begin), and waits (end), so the caller can compute the local
 * block's product meanwhile. The packing is the backend's gather. On a
 * backend without host memory (cuda; the MPI library is not assumed to
 * read device memory) the exchange stages through page-locked host
 * buffers with the backend's staging queue (stage_*: a second cuda
 * stream): begin queues the gather and the copy to the host, the caller
 * queues the local product, and end waits for that copy alone (the
 * local product runs on), sends, waits for the messages and queues the
 * copy of what arrived into the ghost vector beside the local product;
 * the ghost block's product waits for it on the device, not the host.
 * Where the MPI library reads device memory (CUDA-aware, asked at run
 * time) the device buffers go to MPI as they are; where NCCL is built
 * and every rank has a GPU of its own, NCCL moves them GPU to GPU on the
 * staging queue (halo_nccl.c); where every rank has a GPU of one host,
 * CUDA IPC copies them on the copy engines (halo_ipc.c, asked for by
 * name). Which one runs is the comm's setting,
 * agreed over the ranks when the plan is attached. */
#include "mpi_internal.h"

#include <limits.h>
#include <string.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

/* One tag for every exchange: ksolve's comm is a duplicate of its own, and
 * an apply's messages are all received before the next apply sends. */
#define HALO_TAG 0x6b73

/* The plan's arrays from the per-rank counts (p entries each). */
static ks_error plan_neighbours(ks_halo *h, int p, const int *rcount, const int *scount)
{
    for (int q = 0; q < p; q++) {
        h->nrecv += rcount[q] > 0;
        h->nsend += scount[q] > 0;
    }
    h->recv_rank = ks_malloc((size_t)h->nrecv * sizeof *h->recv_rank, "halo sources");
    h->send_rank = ks_malloc((size_t)h->nsend * sizeof *h->send_rank, "halo destinations");
    h->recv_start = ks_malloc(((size_t)h->nrecv + 1) * sizeof *h->recv_start, "halo slices");
    h->send_start = ks_malloc(((size_t)h->nsend + 1) * sizeof *h->send_start, "halo slices");
    h->req = ks_malloc(((size_t)h->nrecv + (size_t)h->nsend) * sizeof *h->req, "halo requests");
    if (!h->recv_rank || !h->send_rank || !h->recv_start || !h->send_start || !h->req)
        return KS_ERR_MEMORY;
    int a = 0, b = 0;
    h->recv_start[0] = h->send_start[0] = 0;
    for (int q = 0; q < p; q++) {
        if (rcount[q] > 0) {
            h->recv_rank[a] = q;
            h->recv_start[a + 1] = h->recv_start[a] + rcount[q];
            a++;
        }
        if (scount[q] > 0) {
            h->send_rank[b] = q;
            h->send_start[b + 1] = h->send_start[b] + scount[q];
            b++;
        }
    }
    for (int r = 0; r < h->nrecv + h->nsend; r++)
        h->req[r] = MPI_REQUEST_NULL;
    return KS_OK;
}

/* Each step that can fail on some ranks only ends in an agreement, and
 * the next collective runs only when every rank succeeded. */
ks_error ks_halo_create(const ks_comm *c, const ks_gint *offsets, const ks_gint *ghost_gid,
                        ks_int nghost, ks_halo **out)
{
    *out = NULL;
    const int p = c->size, me = c->rank;
    const MPI_Comm comm = ks_comm_mpi_of(c);
    ks_halo *h = ks_calloc(1, sizeof *h, "halo plan");
    int *cnt = ks_calloc(4 * (size_t)p, sizeof *cnt, "halo counts");
    ks_gint *want = NULL;
    long long nsend_all = 0;
    ks_error e = h && cnt ? KS_OK : KS_ERR_MEMORY;
    int *rcount = cnt, *scount = cnt + p, *rdispl = cnt + 2 * p, *sdispl = cnt + 3 * p;
    if (e == KS_OK) {
        h->comm = comm;
        h->kc = c;
        h->stats = &((ks_comm_mpi *)c)->stats;
        /* Ghosts ascend, layout blocks ascend: one walk finds the owners. */
        int q = 0;
        for (ks_int g = 0; g < nghost && e == KS_OK; g++) {
            while (q < p && ghost_gid[g] >= offsets[q + 1])
                q++;
            if (q >= p || q == me)
                e = ks_seterr(KS_ERR_ARG, "halo plan: ghost column %lld is %s",
                              (long long)ghost_gid[g],
                              q == me ? "owned by this rank" : "out of range");
            else
                rcount[q]++;
        }
    }
    e = ks_comm_agree(c, e);
    if (e == KS_OK) {
        e = ks_mpi_check(MPI_Alltoall(rcount, 1, MPI_INT, scount, 1, MPI_INT, comm),
                         "MPI_Alltoall (halo counts)");
        for (int q = 0; q < p && e == KS_OK; q++) {
            rdispl[q] = q ? rdispl[q - 1] + rcount[q - 1] : 0;
            sdispl[q] = (int)nsend_all;
            nsend_all += scount[q];
            if (nsend_all > INT_MAX)
                e = ks_seterr(KS_ERR_SIZE, "halo plan: rank %d sends more than %d values", me,
                              INT_MAX);
        }
        if (e == KS_OK)
            e = plan_neighbours(h, p, rcount, scount);
        if (e == KS_OK) {
            want = ks_malloc((size_t)nsend_all * sizeof *want, "halo ids");
            h->send_idx = ks_malloc((size_t)nsend_all * sizeof *h->send_idx, "halo send list");
            h->send_buf = ks_malloc((size_t)nsend_all * sizeof *h->send_buf, "halo send buffer");
            if (!want || !h->send_idx || !h->send_buf)
                e = KS_ERR_MEMORY;
        }
        e = ks_comm_agree(c, e);
    }
    if (e == KS_OK) {
        static const ks_gint none = 0; /* MPI wants a buffer even for 0 entries */
        e = ks_mpi_check(MPI_Alltoallv(nghost ? ghost_gid : &none, rcount, rdispl, MPI_INT64_T,
                                       want, scount, sdispl, MPI_INT64_T, comm),
                         "MPI_Alltoallv (halo ids)");
        /* What the others ask for must be this rank's: a check of the plan. */
        const ks_gint lo = offsets[me], hi = offsets[me + 1];
        for (long long k = 0; k < nsend_all && e == KS_OK; k++) {
            if (want[k] < lo || want[k] >= hi)
                e = ks_seterr(KS_ERR_ARG, "halo plan: rank %d was asked for row %lld, not its own",
                              me, (long long)want[k]);
            else
                h->send_idx[k] = (ks_int)(want[k] - lo);
        }
        e = ks_comm_agree(c, e);
    }
    free(want);
    free(cnt);
    if (e != KS_OK) {
        ks_halo_destroy(h);
        return ks_adderr(e, "halo plan");
    }
    *out = h;
    return KS_OK;
}

static ks_int halo_nout(const ks_halo *h)
{
    return h->nsend ? h->send_start[h->nsend] : 0;
}

int ks_halo_stage_always = 0;
const ks_backend *ks_halo_device_backend = NULL;

static const char *const transport_names[] = {"auto", "staged", "direct", "nccl", "ipc", "host"};

/* 1: auto runs ipc where every rank has its own GPU of one host (before
 * nccl, after direct); 0: auto never picks ipc (only asking for it runs
 * it). ipc's plans cost milliseconds where NCCL's communicator costs
 * 0.6 s and each new pair of ranks its first exchange's connection (four
 * H200s, 7-point 256³: from the matrix to the first solution 1.36 s with
 * ipc, 2.25 s with nccl), for 1-3 % more time an iteration. The one
 * switch of auto's choice of ipc (choose()). */
#define AUTO_PICKS_IPC 1

int ks_halo_transport_parse(const char *name)
{
    for (int t = KS_HALO_AUTO; name && t <= KS_HALO_IPC; t++)
        if (!strcmp(name, transport_names[t]))
            return t;
    return -1;
}

const char *ks_halo_transport_name(int t)
{
    return t >= KS_HALO_AUTO && t <= KS_HALO_HOST ? transport_names[t] : "?";
}

int ks_mpi_cuda_aware_force = -1;

int ks_mpi_cuda_aware(void)
{
    if (ks_mpi_cuda_aware_force >= 0)
        return ks_mpi_cuda_aware_force != 0;
    const char *v = getenv("KS_MPI_CUDA_AWARE");
    if (v && !strcmp(v, "0"))
        return 0;
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support() == 1;
#else
    return 0; /* no way to ask (or built without CUDA support): stage */
#endif
}

/* 1 when this build and be can run the NCCL transport. */
static int nccl_capable(const ks_backend *be)
{
#ifdef KS_HAVE_NCCL
    const ks_backend_ops *o = be->ops;
    return !o->host_memory && o->stage_native && o->stage_download && o->stage_upload &&
           o->stage_wait;
#else
    (void)be;
    return 0;
#endif
}

/* Why the NCCL transport cannot run (v: choose()'s minima). */
static ks_error nccl_refusal(const ks_backend *be, const int *v)
{
#ifndef KS_HAVE_NCCL
    (void)be;
    (void)v;
    return ks_seterr(KS_ERR_UNSUPPORTED, "halo transport nccl: this ksolve was built without "
                     "NCCL (meson -Dnccl=enabled, with cuda)");
#else
    if (!v[2])
        return ks_seterr(KS_ERR_UNSUPPORTED, "halo transport nccl: a rank's backend keeps its "
                         "vectors in host memory (NCCL moves device memory; this rank's: %s)",
                         ks_backend_name((ks_backend *)be));
    return ks_seterr(KS_ERR_UNSUPPORTED, "halo transport nccl: a rank's backend has no staging "
                     "queue to run NCCL on (stage_native; this rank's: %s)",
                     ks_backend_name((ks_backend *)be));
#endif
}

/* 1 when this build and be can run the IPC transport (a cuda backend). */
static int ipc_capable(const ks_backend *be)
{
#ifdef KS_HAVE_CUDA
    const ks_backend_ops *o = be->ops;
    return !o->host_memory && o->gather && o->stage_native && o->stage_download &&
           o->stage_upload && o->stage_wait && ks_cuda_stream((ks_backend *)be);
#else
    (void)be;
    return 0;
#endif
}

/* Why the IPC transport cannot run (v: choose()'s minima). */
static ks_error ipc_refusal(const ks_backend *be, const int *v)
{
#ifndef KS_HAVE_CUDA
    (void)be;
    (void)v;
    return ks_seterr(KS_ERR_UNSUPPORTED, "halo transport ipc: this ksolve was built without "
                     "CUDA (CUDA IPC moves device memory; meson -Dcuda=enabled)");
#else
    return ks_seterr(KS_ERR_UNSUPPORTED, "halo transport ipc: a rank's backend is not cuda "
                     "(CUDA IPC moves device memory between GPUs; this rank's: %s%s)",
                     ks_backend_name((ks_backend *)be),
                     v[2] ? "" : ", its vectors in host memory");
#endif
}

/* Collective: the transport that runs, the same verdict on every rank.
 * One reduction of what each rank asks for and can do; then, where NCCL
 * is to run or may, its communicator (which refuses ranks sharing a GPU:
 * auto then stages). */
static ks_error choose(ks_halo *h, ks_backend *be)
{
    const ks_comm *c = h->kc;
    const int want = ks_halo_stage_always ? KS_HALO_STAGED
                                          : ((const ks_comm_mpi *)c)->halo_transport;
    const int host = ks_backend_host_memory(be) && be != ks_halo_device_backend;
    /* minima: the setting (and its negative: equal everywhere?), every
     * rank's vectors on a device, every device rank's MPI reading them,
     * every rank able to run NCCL, every rank able to run IPC */
    int v[6] = {want, -want, !host, host || ks_mpi_cuda_aware(), nccl_capable(be),
                ipc_capable(be)};
    KS_TRY(ks_mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, 6, MPI_INT, MPI_MIN, h->comm),
                        "MPI_Allreduce (halo transport)"));
    if (v[0] != -v[1])
        return ks_seterr(KS_ERR_ARG, "halo transport: the ranks ask for different ones (%s and "
                         "%s; ks_comm_set_halo_transport or KS_MPI_HALO alike on every rank)",
                         ks_halo_transport_name(v[0]), ks_halo_transport_name(-v[1]));
    const int direct_ok = v[3], nccl_ok = v[2] && v[4], ipc_ok = v[2] && v[5];
    switch (want) {
    case KS_HALO_STAGED:
        h->transport = KS_HALO_STAGED;
        return KS_OK;
    case KS_HALO_DIRECT:
        if (!direct_ok)
            return ks_seterr(KS_ERR_UNSUPPORTED, "halo transport direct: the MPI library does "
                             "not read device memory on every rank (not CUDA-aware, or "
                             "KS_MPI_CUDA_AWARE=0): use staged, nccl or auto");
        h->transport = host ? KS_HALO_HOST : KS_HALO_DIRECT;
        return KS_OK;
    case KS_HALO_NCCL:
        if (!nccl_ok)
            return nccl_refusal(be, v);
        break;
    case KS_HALO_IPC: /* ks_ipc_setup checks the hosts */
        if (!ipc_ok)
            return ipc_refusal(be, v);
        h->transport = KS_HALO_IPC;
        return KS_OK;
    default: /* auto */
        if (host || direct_ok) {
            h->transport = host ? KS_HALO_HOST : KS_HALO_DIRECT;
            return KS_OK;
        }
        h->transport = KS_HALO_STAGED;
        if (c->size == 1) /* one rank: nothing travels */
            return KS_OK;
#ifdef KS_HAVE_CUDA
        if (AUTO_PICKS_IPC && ipc_ok) { /* else nccl where it can run, else staged */
            int fits = 0;
            KS_TRY(ks_ipc_auto_fits(c, be, &fits));
            if (fits) {
                h->transport = KS_HALO_IPC;
                return KS_OK;
            }
        }
#endif
        if (!nccl_ok)
            return KS_OK;
        break;
    }
#ifdef KS_HAVE_NCCL
    ks_error e = ks_nccl_ready(c, be);
    if (e == KS_ERR_UNSUPPORTED && want == KS_HALO_AUTO) { /* on every rank: stage */
        ks_clear_error();
        return KS_OK;
    }
    KS_TRY(e);
    h->transport = KS_HALO_NCCL;
#endif
    return KS_OK;
}

ks_error ks_halo_attach(ks_halo *h, ks_backend *be, ks_int nghost)
{
    h->be = be;
    h->nghost = nghost;
    KS_TRY(choose(h, be));
    const int staged = h->transport == KS_HALO_STAGED;
    const ks_int nout = halo_nout(h);
    if (!be->ops->gather)
        return ks_seterr(KS_ERR_UNSUPPORTED, "halo exchange: the %s backend has no gather",
                         ks_backend_name(be));
    if (staged && !(be->ops->stage_download && be->ops->stage_upload && be->ops->stage_wait))
        return ks_seterr(KS_ERR_UNSUPPORTED, "halo exchange: the %s backend has no staging "
                         "copies (stage_download, stage_upload, stage_wait)", ks_backend_name(be));
    h->staged = staged; /* destroy then waits for the staging queue */
    if (h->transport == KS_HALO_HOST) { /* the host arrays serve as they are */
        h->idx_be = h->send_idx;
        h->send_be = h->send_buf;
        return KS_OK;
    }
    if (h->transport == KS_HALO_IPC) { /* its send buffer is its own (cudaMalloc) */
        KS_TRY(ks_comm_agree(h->kc, ks_be_upload_new(be, h->send_idx,
                                                     (size_t)nout * sizeof *h->send_idx,
                                                     (void **)&h->idx_be, "halo send list")));
#ifdef KS_HAVE_CUDA
        return ks_ipc_setup(h, nout);
#endif
    }
    KS_TRY(ks_be_upload_new(be, h->send_idx, (size_t)nout * sizeof *h->send_idx,
                            (void **)&h->idx_be, "halo send list"));
    KS_TRY(ks_be_alloc(be, (size_t)nout * sizeof(double) + 1, (void **)&h->send_be,
                       "halo send buffer"));
    if (!staged) /* MPI or NCCL takes the device buffers themselves */
        return KS_OK;
    const size_t sb = (size_t)nout * sizeof(double) + 1, rb = (size_t)nghost * sizeof(double) + 1;
    if (be->ops->host_alloc) {
        KS_TRY(be->ops->host_alloc(be, sb, (void **)&h->send_host));
        KS_TRY(be->ops->host_alloc(be, rb, (void **)&h->recv_host));
    } else {
        h->send_host = ks_malloc(sb, "halo staging");
        h->recv_host = ks_malloc(rb, "halo staging");
        if (!h->send_host || !h->recv_host)
            return KS_ERR_MEMORY;
    }
    return KS_OK;
}

/* The sends of the packed entries (buf: where they are for MPI). */
static ks_error post_sends(ks_halo *h, double *buf)
{
    for (int r = 0; r < h->nsend; r++) {
        const ks_int s = h->send_start[r], n = h->send_start[r + 1] - s;
        KS_TRY(ks_mpi_check(MPI_Isend(buf + s, n, MPI_DOUBLE, h->send_rank[r], HALO_TAG, h->comm,
                                      &h->req[h->nrecv + r]),
                            "MPI_Isend (halo)"));
    }
    return KS_OK;
}

/* NCCL's exchange: the gather on be's queue, the messages on the staging
 * queue after it (end orders the ghost block's product after them). */
static ks_error begin_nccl(ks_halo *h, const double *x, double *ghost)
{
#ifdef KS_HAVE_NCCL
    const ks_int nout = halo_nout(h);
    if (nout > 0)
        KS_TRY(h->be->ops->gather(h->be, nout, h->idx_be, x, h->send_be));
    return h->nrecv + h->nsend > 0 ? ks_nccl_exchange(h, ghost) : KS_OK;
#else
    (void)x;
    (void)ghost;
    return ks_seterr(KS_ERR_UNSUPPORTED, "halo exchange: %s without NCCL",
                     ks_halo_transport_name(h->transport));
#endif
}

ks_error ks_halo_begin(ks_halo *h, const double *x, double *ghost)
{
    ks_backend *be = h->be;
    double *rbuf = h->staged ? h->recv_host : ghost;
    const double t0 = ks_wtime();
    if (h->transport == KS_HALO_NCCL) {
        KS_TRY(begin_nccl(h, x, ghost));
        goto counted;
    }
#ifdef KS_HAVE_CUDA
    if (h->transport == KS_HALO_IPC) {
        KS_TRY(ks_ipc_begin(h, x, halo_nout(h)));
        goto counted;
    }
#endif
    /* the last exchange's copy out of recv_host is done before it refills */
    if (h->staged)
        KS_TRY(be->ops->stage_wait(be));
    for (int r = 0; r < h->nrecv; r++) {
        const ks_int s = h->recv_start[r], n = h->recv_start[r + 1] - s;
        KS_TRY(ks_mpi_check(MPI_Irecv(rbuf + s, n, MPI_DOUBLE, h->recv_rank[r], HALO_TAG,
                                      h->comm, &h->req[r]),
                            "MPI_Irecv (halo)"));
    }
    const ks_int nout = halo_nout(h);
    double *buf = h->send_buf;
    if (nout > 0)
        KS_TRY(be->ops->gather(be, nout, h->idx_be, x, h->send_be));
    if (h->staged) {
        /* after the gather (and the last reader of the ghost vector, which
         * end's copy overwrites); end waits for it and sends */
        KS_TRY(be->ops->stage_download(be, h->send_host, h->send_be,
                                       (size_t)nout * sizeof *buf));
        h->sends_pending = 1;
    } else {
        if (h->transport == KS_HALO_DIRECT && nout > 0) { /* MPI reads them once they exist */
            KS_TRY(be->ops->sync(be));
            buf = h->send_be;
        }
        KS_TRY(post_sends(h, buf));
    }
counted:
    h->stats->halo_exchanges++;
    h->stats->halo_bytes_sent += (double)halo_nout(h) * sizeof(double);
    h->stats->halo_seconds += ks_wtime() - t0;
    return KS_OK;
}

ks_error ks_halo_end(ks_halo *h, double *ghost)
{
    ks_backend *be = h->be;
    const int n = h->nrecv + h->nsend;
    const double t0 = ks_wtime();
    ks_error e = KS_OK;
    if (h->transport == KS_HALO_NCCL) {
        /* be's later work (the ghost block's product) waits for NCCL's
         * messages on the device; the host waits for nothing */
        if (n > 0)
            e = be->ops->stage_upload(be, NULL, NULL, 0);
        h->stats->halo_seconds += ks_wtime() - t0;
        return e;
    }
#ifdef KS_HAVE_CUDA
    if (h->transport == KS_HALO_IPC) { /* the host waits for tokens, not copies */
        e = ks_ipc_end(h, ghost);
        h->stats->halo_seconds += ks_wtime() - t0;
        return e;
    }
#endif
    if (h->sends_pending) {
        /* The packed entries' copy alone (the local product queued after
         * it keeps running). Sent even if it failed, so no neighbour waits
         * for them forever; the error is returned. */
        h->sends_pending = 0;
        e = be->ops->stage_wait(be);
        ks_error es = post_sends(h, h->send_host);
        if (e == KS_OK)
            e = es;
    }
    if (n == 0)
        return e;
    ks_error ew = ks_mpi_check(MPI_Waitall(n, h->req, MPI_STATUSES_IGNORE), "MPI_Waitall (halo)");
    KS_TRY(e != KS_OK ? e : ew);
    /* queued beside the local product: what is timed is the enqueueing */
    if (h->staged && h->nghost > 0)
        KS_TRY(be->ops->stage_upload(be, ghost, h->recv_host,
                                     (size_t)h->nghost * sizeof *h->recv_host));
    h->stats->halo_seconds += ks_wtime() - t0;
    return KS_OK;
}

double ks_halo_bytes(const ks_halo *h)
{
    if (!h)
        return 0.0;
    const double nout = halo_nout(h);
    /* staged: the host lists, their copies on the backend, the staging
     * buffers (direct, nccl and ipc: the copies on the device not counted) */
    return nout * (sizeof(ks_int) + sizeof(double)) * (h->staged ? 3 : 1) +
           (h->staged ? (double)h->nghost * sizeof(double) : 0.0) +
           (h->nrecv + h->nsend) * (2.0 * sizeof(int) + sizeof(ks_int) + sizeof(MPI_Request));
}

void ks_halo_destroy(ks_halo *h)
{
    if (!h)
        return;
#ifdef KS_HAVE_CUDA
    if (h->transport == KS_HALO_IPC && h->be) /* first: it reads the neighbour lists */
        ks_ipc_free(h); /* its send buffer too: send_be NULL after */
#endif
    free(h->recv_rank);
    free(h->send_rank);
    free(h->recv_start);
    free(h->send_start);
    if ((h->staged || h->transport == KS_HALO_NCCL) && h->be)
        /* no staging copy or NCCL message outlives the buffers */
        (void)h->be->ops->stage_wait(h->be);
    if (h->transport != KS_HALO_HOST && h->be) {
        h->be->ops->free(h->be, h->idx_be);
        h->be->ops->free(h->be, h->send_be);
    }
    if (h->staged && h->be) {
        if (h->be->ops->host_free) {
            h->be->ops->host_free(h->be, h->send_host);
            h->be->ops->host_free(h->be, h->recv_host);
        } else {
            free(h->send_host);
            free(h->recv_host);
        }
    }
    free(h->send_idx);
    free(h->send_buf);
    free(h->req);
    free(h);
}
