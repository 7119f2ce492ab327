/* ks_comm over MPI: a duplicate of the caller's communicator with
 * MPI_ERRORS_RETURN (every return code is checked and becomes KS_ERR_MPI),
 * and the reductions distributed vectors need. Sums gather every rank's
 * partial results and add them in rank order on every rank, so each rank
 * gets the same bits in every run with the same rank count (MPI_Allreduce
 * promises no order, and its order may differ by message size or rank). */
#include "mpi_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

ks_error ks_mpi_check(int rc, const char *call)
{
    if (rc == MPI_SUCCESS)
        return KS_OK;
    char why[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, why, &len) != MPI_SUCCESS)
        snprintf(why, sizeof why, "MPI error code %d", rc);
    return ks_seterr(KS_ERR_MPI, "%s failed: %s", call, why);
}

MPI_Comm ks_comm_mpi_of(const ks_comm *c) { return ((const ks_comm_mpi *)c)->comm; }

/* Gather k values of every rank, then combine them in rank order: the sum,
 * or the maximum (NaN when any is NaN: MPI_MAX could let it drop out, and a
 * NaN must stop every rank's solve). In chunks through the comm's scratch,
 * so no allocation can fail on one rank and leave the others waiting. */
static ks_error gather_combine(const ks_comm *c, double *v, int k, int max, const char *what)
{
    const ks_comm_mpi *m = (const ks_comm_mpi *)c;
    const int p = c->size;
    double *all = m->scratch;
    const double t0 = ks_wtime();
    for (int j0 = 0; j0 < k; j0 += KS_COMM_SCRATCH_K) {
        const int kk = k - j0 < KS_COMM_SCRATCH_K ? k - j0 : KS_COMM_SCRATCH_K;
        ks_error e = ks_mpi_check(
            MPI_Allgather(v + j0, kk, MPI_DOUBLE, all, kk, MPI_DOUBLE, m->comm), "MPI_Allgather");
        if (e != KS_OK)
            return ks_adderr(e, "%s", what);
        for (int j = 0; j < kk; j++) {
            double acc = all[j];
            for (int q = 1; q < p; q++) {
                const double x = all[(size_t)q * (size_t)kk + (size_t)j];
                if (!max)
                    acc += x;
                else if (isnan(acc) || isnan(x))
                    acc = NAN;
                else if (x > acc)
                    acc = x;
            }
            v[j0 + j] = acc;
        }
    }
    ks_comm_stats *st = (ks_comm_stats *)&m->stats;
    st->reductions++;
    st->reduce_seconds += ks_wtime() - t0;
    return KS_OK;
}

static ks_error comm_sum(const ks_comm *c, double *v, int k)
{
    return gather_combine(c, v, k, 0, "sum over ranks");
}

/* comm_sum in two halves: MPI_Iallgather of the values, then the same
 * rank-order sum as gather_combine's (the same bits). Counted as one
 * reduction, its seconds the wait alone (the overlapped work is not
 * communication). */
static ks_error comm_sum_begin(const ks_comm *c, const double *v, int k)
{
    ks_comm_mpi *m = (ks_comm_mpi *)c;
    if (m->split_k)
        return ks_seterr(KS_ERR_ARG, "split sum over ranks: one is pending already");
    if (k < 1 || k > KS_COMM_SPLIT_MAX)
        return ks_seterr(KS_ERR_ARG, "split sum over ranks: %d values (1 to %d)", k,
                         KS_COMM_SPLIT_MAX);
    memcpy(m->split, v, (size_t)k * sizeof *v);
    KS_TRY(ks_mpi_check(MPI_Iallgather(m->split, k, MPI_DOUBLE, m->split + KS_COMM_SPLIT_MAX, k,
                                       MPI_DOUBLE, m->comm, &m->split_req),
                        "MPI_Iallgather"));
    m->split_k = k;
    return KS_OK;
}

static ks_error comm_sum_end(const ks_comm *c, double *v, int k)
{
    ks_comm_mpi *m = (ks_comm_mpi *)c;
    if (m->split_k != k)
        return ks_seterr(KS_ERR_ARG, "split sum over ranks: %d values pending, %d asked for",
                         m->split_k, k);
    m->split_k = 0;
    const double t0 = ks_wtime();
    KS_TRY(ks_mpi_check(MPI_Wait(&m->split_req, MPI_STATUS_IGNORE), "MPI_Wait (split sum)"));
    const double *all = m->split + KS_COMM_SPLIT_MAX;
    for (int j = 0; j < k; j++) {
        double acc = all[j];
        for (int q = 1; q < c->size; q++)
            acc += all[(size_t)q * (size_t)k + (size_t)j];
        v[j] = acc;
    }
    m->stats.reductions++;
    m->stats.reduce_seconds += ks_wtime() - t0;
    return KS_OK;
}

static ks_error comm_max(const ks_comm *c, double *v, int k)
{
    return gather_combine(c, v, k, 1, "maximum over ranks");
}

/* ks_comm_agree; with same, the failing ranks too take the first one's
 * message, prefixed like the others' (every rank then says the same). */
static ks_error agree(const ks_comm *c, ks_error e, int same)
{
    const ks_comm_mpi *m = (const ks_comm_mpi *)c;
    const int p = c->size;
    int code = (int)e;
    /* The ranks' codes fit in the reductions' scratch (size x 4 doubles):
     * no allocation that could fail on one rank only. A ks_comm being
     * created has no scratch yet: a small comm's codes fit on the stack. */
    int stack[64], *codes = m->scratch ? (int *)m->scratch : p <= 64 ? stack : NULL;
    int *heap = codes ? NULL : ks_malloc((size_t)p * sizeof *heap, "error codes of the ranks");
    if (!codes && !heap)
        return KS_ERR_MEMORY; /* the others then wait: nothing better is possible */
    if (!codes)
        codes = heap;
    ks_error em = ks_mpi_check(MPI_Allgather(&code, 1, MPI_INT, codes, 1, MPI_INT, m->comm),
                               "MPI_Allgather (error codes)");
    int first = -1;
    for (int q = 0; q < p && em == KS_OK && first < 0; q++)
        if (codes[q] != KS_OK)
            first = q;
    ks_error failed = first >= 0 ? (ks_error)codes[first] : KS_OK;
    free(heap);
    if (em != KS_OK)
        return e != KS_OK ? e : em;
    if (first < 0)
        return KS_OK;
    /* The first failing rank's message goes to every rank. */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", c->rank == first ? ks_last_error() : "");
    em = ks_mpi_check(MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, m->comm),
                      "MPI_Bcast (error message)");
    if (e != KS_OK && !same) /* this rank failed itself: its own message stands */
        return e;
    if (em != KS_OK)
        return failed;
    msg[sizeof msg - 1] = '\0';
    return ks_seterr(failed, "rank %d: %s", first, msg);
}

ks_error ks_comm_agree(const ks_comm *c, ks_error e) { return agree(c, e, 0); }

ks_error ks_comm_agree_same(const ks_comm *c, ks_error e) { return agree(c, e, 1); }

static ks_error comm_agree(const ks_comm *c, ks_error e) { return ks_comm_agree(c, e); }

ks_error ks_comm_sum(const ks_comm *c, double *v, int k)
{
    if (!c || (!v && k > 0) || k < 0)
        return ks_seterr(KS_ERR_ARG, "ks_comm_sum: NULL comm or values, or k < 0");
    return comm_sum(c, v, k);
}

ks_error ks_comm_max(const ks_comm *c, double *v, int k)
{
    if (!c || (!v && k > 0) || k < 0)
        return ks_seterr(KS_ERR_ARG, "ks_comm_max: NULL comm or values, or k < 0");
    return comm_max(c, v, k);
}

ks_error ks_comm_sum_gint(const ks_comm *c, ks_gint *v, int k)
{
    if (!c || (!v && k > 0) || k < 0)
        return ks_seterr(KS_ERR_ARG, "ks_comm_sum_gint: NULL comm or values, or k < 0");
    /* Integer sums are exact in any order: MPI's own reduction. */
    return ks_mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, k, MPI_INT64_T, MPI_SUM,
                                      ks_comm_mpi_of(c)),
                        "MPI_Allreduce (integer sum)");
}

ks_error ks_comm_get_stats(const ks_comm *c, ks_comm_stats *stats)
{
    if (!c || !stats)
        return ks_seterr(KS_ERR_ARG, "ks_comm_get_stats: NULL %s", !c ? "comm" : "output");
    *stats = ((const ks_comm_mpi *)c)->stats;
    return KS_OK;
}

void ks_comm_reset_stats(ks_comm *c)
{
    if (c)
        memset(&((ks_comm_mpi *)c)->stats, 0, sizeof(ks_comm_stats));
}

static const ks_comm_ops mpi_comm_ops = {
    .sum = comm_sum,
    .max = comm_max,
    .agree = comm_agree,
    .sum_begin = comm_sum_begin,
    .sum_end = comm_sum_end,
};

ks_error ks_comm_create(MPI_Comm comm, ks_comm **out)
{
    if (!out)
        return ks_seterr(KS_ERR_ARG, "ks_comm_create: NULL output pointer");
    *out = NULL;
    int inited = 0, finalized = 0;
    KS_TRY(ks_mpi_check(MPI_Initialized(&inited), "MPI_Initialized"));
    KS_TRY(ks_mpi_check(MPI_Finalized(&finalized), "MPI_Finalized"));
    if (!inited || finalized)
        return ks_seterr(KS_ERR_ARG, "ks_comm_create: MPI is %s",
                         finalized ? "finalized" : "not initialised (MPI_Init first)");
    if (comm == MPI_COMM_NULL)
        return ks_seterr(KS_ERR_ARG, "ks_comm_create: MPI_COMM_NULL");
    MPI_Comm dup;
    KS_TRY(ks_mpi_check(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup"));
    ks_error e = ks_mpi_check(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN),
                              "MPI_Comm_set_errhandler");
    int rank = 0, size = 1;
    if (e == KS_OK)
        e = ks_mpi_check(MPI_Comm_rank(dup, &rank), "MPI_Comm_rank");
    if (e == KS_OK)
        e = ks_mpi_check(MPI_Comm_size(dup, &size), "MPI_Comm_size");
    if (e != KS_OK) {
        MPI_Comm_free(&dup);
        return ks_adderr(e, "ks_comm_create");
    }
    ks_comm_mpi *m = ks_calloc(1, sizeof *m, "ks_comm");
    if (m) {
        m->scratch = ks_malloc((size_t)size * KS_COMM_SCRATCH_K * sizeof *m->scratch,
                               "ks_comm scratch");
        m->split = ks_malloc(((size_t)size + 1) * KS_COMM_SPLIT_MAX * sizeof *m->split,
                             "ks_comm split-sum buffer");
    }
    if (!m || !m->scratch || !m->split)
        e = KS_ERR_MEMORY;
    /* the halo transport's default, for runs that cannot set it (tests) */
    const char *ht = getenv("KS_MPI_HALO");
    const int transport = ht && *ht ? ks_halo_transport_parse(ht) : KS_HALO_AUTO;
    if (e == KS_OK && transport < 0)
        e = ks_seterr(KS_ERR_ARG, "KS_MPI_HALO=%s: expected auto, staged, direct, nccl or ipc", ht);
    /* Every rank has its ks_comm, or none has. */
    const ks_comm_mpi probe = {{&mpi_comm_ops, rank, size}, dup, NULL, {0}, NULL,
                               MPI_REQUEST_NULL, 0, KS_HALO_AUTO, NULL, 0, NULL};
    e = ks_comm_agree(&probe.base, e);
    if (e != KS_OK) {
        if (m) {
            free(m->scratch);
            free(m->split);
        }
        free(m);
        MPI_Comm_free(&dup);
        return ks_adderr(e, "ks_comm_create");
    }
    m->base = probe.base;
    m->comm = dup;
    m->halo_transport = transport;
    *out = &m->base;
    return KS_OK;
}

void ks_comm_destroy(ks_comm **cp)
{
    ks_comm *c = cp ? *cp : NULL;
    if (!c)
        return;
    *cp = NULL; /* a second destroy of the same handle is a no-op */
    ks_comm_mpi *m = (ks_comm_mpi *)c;
#ifdef KS_HAVE_CUDA
    /* the IPC plans' last buffers, once their neighbours are done (every
     * rank destroyed its matrices first: only the tokens' travel is left;
     * a neighbour that never destroys its own is not waited for long) */
    ks_ipc_reap(m, 5.0);
    ks_ipc_reap(m, -1.0);
#endif
    int finalized = 1;
    if (MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized)
        MPI_Comm_free(&m->comm);
#ifdef KS_HAVE_NCCL
    ks_nccl_free(m->nccl);
#endif
    free(m->scratch);
    free(m->split);
    free(m);
}

ks_error ks_comm_set_halo_transport(ks_comm *c, const char *name)
{
    const int t = ks_halo_transport_parse(name);
    if (!c || t < 0)
        return ks_seterr(KS_ERR_ARG, "ks_comm_set_halo_transport: %s%s%s", !c ? "NULL comm" : "",
                         c ? "unknown transport " : "",
                         c ? (name ? name : "(NULL)") : "");
    ((ks_comm_mpi *)c)->halo_transport = t;
    return KS_OK;
}

const char *ks_comm_halo_transport(const ks_comm *c)
{
    return ks_halo_transport_name(c ? ((const ks_comm_mpi *)c)->halo_transport : KS_HALO_AUTO);
}

int ks_comm_rank(const ks_comm *c) { return c ? c->rank : 0; }
int ks_comm_size(const ks_comm *c) { return c ? c->size : 1; }
