/* The coarsest level's direct solve: a dense LU on the host (the level is
 * small) and its explicit inverse as a backend matrix, so the cycle's
 * coarse solve is one SpMV on every backend.
 *
 * On a device backend the host work (LU and inverse: 5-10 ms at ~300 rows,
 * up to 27 ms when the host's OpenMP team has slept through a GPU setup)
 * runs on a host thread while the device builds the levels' matrices and
 * smoother data: start downloads the coarsest matrix and launches the
 * thread, finish joins it and uploads the inverse. On a backend whose
 * memory is the host's, both run in start: the smoothers' setup uses
 * every core there, and an overlapping team would only compete. The work
 * is the same code either way, so the inverse has the same bits.
 * KS_AMG_COARSE_ASYNC=1 in the environment takes the thread on every
 * backend (tests exercise that path on the cpu). The thread runs the
 * LU on one core (see coarse_thread). */
#include "hierarchy.h"

#include <pthread.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Coarsest levels above coarse_max_rows still get the dense solve up to
 * this size (n^2 doubles: 32 MiB); beyond it the coarsest level is smoothed. */
#define KS_AMG_DENSE_LIMIT 2048

struct ks_amg_coarse_job {
    pthread_t thread;
    int running;       /* a thread was started and not joined yet */
    ks_csr H;          /* in: the coarsest matrix (host copy); the work frees it */
    ks_dense_lu lu;    /* out */
    ks_csr inv;        /* out */
    ks_error e;
    char msg[1024];    /* the work's error text (error messages are per thread) */
    double t_lu, t_inv;
};

static void job_free(struct ks_amg_coarse_job *j)
{
    ks_csr_free(&j->H);
    ks_dense_lu_free(&j->lu);
    ks_csr_free(&j->inv);
    free(j);
}

static void coarse_work(struct ks_amg_coarse_job *j)
{
    double t0 = ks_wtime();
    j->e = ks_dense_lu_factor(&j->H, &j->lu);
    ks_csr_free(&j->H);
    j->t_lu = ks_wtime() - t0;
    if (j->e == KS_OK) {
        t0 = ks_wtime();
        j->e = ks_dense_lu_inverse_csr(&j->lu, &j->inv);
        j->t_inv = ks_wtime() - t0;
    }
    if (j->e != KS_OK)
        snprintf(j->msg, sizeof j->msg, "%s", ks_last_error());
}

static void *coarse_thread(void *arg)
{
#ifdef _OPENMP
    /* One core: the work is hidden behind the device's anyway, and a second
     * team of every core's threads would spin beside the setup thread's own
     * team and slow its host work. */
    omp_set_num_threads(1);
#endif
    coarse_work(arg);
    return NULL;
}

static int async_wanted(const ks_amg *amg)
{
    const char *v = getenv("KS_AMG_COARSE_ASYNC");
    if (v && v[0])
        return strcmp(v, "0") != 0;
    return !amg->be->ops->host_memory;
}

ks_error ks_amg_coarse_start(ks_amg *amg)
{
    ks_amg_coarse_cancel(amg);
    int l = amg->nlevels - 1;
    const ks_sparse *A = &amg->levels[l].A;
    if (A->nrows == 0 || (A->nrows > amg->prm.coarse_max_rows && A->nrows > KS_AMG_DENSE_LIMIT))
        return KS_OK; /* smoothed instead (cycle.c) */
    double t0 = ks_wtime();
    struct ks_amg_coarse_job *j = ks_calloc(1, sizeof *j, "coarse solve job");
    if (!j)
        return ks_adderr(KS_ERR_MEMORY, "AMG coarsest level %d", l);
    ks_error e = ks_sparse_to_csr(A, &j->H);
    ks_amg_trace(l, "coarsest matrix to the host", ks_wtime() - t0);
    if (e != KS_OK) {
        job_free(j);
        return ks_adderr(e, "AMG coarsest level %d (%ld rows)", l, (long)A->nrows);
    }
    amg->coarse_job = j;
    /* Without a thread (none wanted, or none to be had) the work runs here. */
    if (!async_wanted(amg) || pthread_create(&j->thread, NULL, coarse_thread, j) != 0)
        coarse_work(j);
    else
        j->running = 1;
    amg->phase_seconds[KS_AMG_PHASE_COARSE] += ks_wtime() - t0;
    return KS_OK;
}

ks_error ks_amg_coarse_finish(ks_amg *amg)
{
    struct ks_amg_coarse_job *j = amg->coarse_job;
    if (!j)
        return KS_OK;
    int l = amg->nlevels - 1;
    double t0 = ks_wtime();
    const int overlapped = j->running;
    if (j->running)
        pthread_join(j->thread, NULL);
    j->running = 0;
    amg->coarse_job = NULL;
    /* What the caller waited for: all of it without a thread, else only
     * what the device's work did not hide. */
    amg->phase_seconds[KS_AMG_PHASE_COARSE] += ks_wtime() - t0;
    ks_amg_trace(l, overlapped ? "dense LU on a host thread" : "dense LU", j->t_lu);
    ks_amg_trace(l, overlapped ? "explicit inverse on a host thread" : "explicit inverse", j->t_inv);
    ks_error e = j->e;
    if (e != KS_OK) {
        ks_seterr(e, "%s", j->msg);
        job_free(j);
        return ks_adderr(e, "AMG coarsest level %d (%ld rows)", l,
                         (long)amg->levels[l].A.nrows);
    }
    ks_dense_lu_free(&amg->lu);
    amg->lu = j->lu;
    memset(&j->lu, 0, sizeof j->lu);
    t0 = ks_wtime();
    ks_spmv_params sp;
    ks_amg_level_spmv_params(amg, &sp);
    if (amg->coarse_inv)
        e = ks_matrix_set_values(amg->coarse_inv, j->inv.val);
    else
        e = ks_matrix_create(amg->be, &j->inv, "auto", &sp, &amg->coarse_inv);
    amg->phase_seconds[KS_AMG_PHASE_UPLOAD] += ks_wtime() - t0;
    ks_amg_trace(l, "explicit inverse uploaded", ks_wtime() - t0);
    job_free(j);
    if (e != KS_OK)
        return ks_adderr(e, "AMG coarsest level %d: uploading the inverse", l);
    return KS_OK;
}

void ks_amg_coarse_cancel(ks_amg *amg)
{
    struct ks_amg_coarse_job *j = amg->coarse_job;
    if (!j)
        return;
    if (j->running)
        pthread_join(j->thread, NULL);
    amg->coarse_job = NULL;
    job_free(j);
}
