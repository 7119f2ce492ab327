/* The Chebyshev estimates (rho(D^-1 A)) of the first levels on a side
 * queue of the backend, from a host thread, while the setup thread builds
 * the hierarchy on the main queue.
 *
 * Level 0 is the caller's matrix, known and unchanged from the start of a
 * setup, and its estimate (12 Lanczos steps, each a pass over the matrix:
 * 12 ms of a 0.2 s 7-point 256^3 setup on an H100) is needed only by the
 * smoother setup at the end. Level l's operator exists once level l-1's
 * Galerkin product is done and is only read after that, so the estimates
 * of levels 1 and 2 (about 4 and 1.5 ms there, mostly latency) may follow on
 * the same thread, each while it has at least
 * KS_AMG_SPECTRAL_ASYNC_MIN_ROWS rows, as the coarser levels are built. Those coarser levels' steps leave the device
 * idle between small kernels and host decisions, and the side queue's
 * kernels fill the gaps. The thread runs the same kernels on the same
 * matrices, so the estimates have the same bits; a failure there is
 * dropped and the smoother setup computes the estimate itself (with the
 * error, if any, in its usual place). Only where the backend offers a side
 * queue (cuda) and a level is large enough for it to pay;
 * KS_AMG_SPECTRAL_ASYNC=N in the environment lets at most N levels go
 * there (0 turns it off; 1, level 0 alone, is the default: measured the
 * fastest, below). */
#include "hierarchy.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Below this many rows the estimate is cheap and the thread not worth it. */
#define KS_AMG_SPECTRAL_ASYNC_MIN_ROWS 65536
/* Levels 0 .. KS_AMG_SPECTRAL_ASYNC_LEVELS-1 may go to the thread, each
 * while it is large enough; by default only level 0: on an H100 at 7-point
 * 256^3 (pcg_amg_gpu.json, 2026-11-28, three alternating runs each) the
 * setup took 0.192 s with level 0 alone and 0.193-0.199 s with three, the
 * later levels' side kernels slowing the Galerkin products they overlap
 * and the coarse LU's join waiting for them. */
#define KS_AMG_SPECTRAL_ASYNC_LEVELS 3
#define KS_AMG_SPECTRAL_ASYNC_DEFAULT 1

struct ks_amg_spectral_job {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ks_backend *side;
    ks_amg_exec exec; /* the thread's own (kernels.h keeps per-call state there) */
    /* under mu: levels 0 .. given-1 are handed over; closed: no more come */
    int given, closed;
    ks_sparse A[KS_AMG_SPECTRAL_ASYNC_LEVELS]; /* the levels' arrays, on the side queue */
    double rho[KS_AMG_SPECTRAL_ASYNC_LEVELS], seconds[KS_AMG_SPECTRAL_ASYNC_LEVELS];
    ks_error e[KS_AMG_SPECTRAL_ASYNC_LEVELS];
    int exact0; /* level 0 found symmetric bit for bit (ks_amg.sym0) */
};

/* Level l once it is handed over; 0 when the setup closed the job first. */
static int next_level(struct ks_amg_spectral_job *j, int l)
{
    pthread_mutex_lock(&j->mu);
    while (j->given <= l && !j->closed)
        pthread_cond_wait(&j->cv, &j->mu);
    const int have = j->given > l;
    pthread_mutex_unlock(&j->mu);
    return have;
}

static void *spectral_thread(void *arg)
{
    struct ks_amg_spectral_job *j = arg;
    ks_error e = j->side->ops->attach(j->side);
    for (int l = 0; l < KS_AMG_SPECTRAL_ASYNC_LEVELS && next_level(j, l); l++) {
        const double t0 = ks_wtime();
        /* as ks_amg_level_spectral, with level 0's verdict kept here */
        j->e[l] = e != KS_OK ? e
                             : ks_amgk_spectral_radius(&j->exec, &j->A[l], KS_AMG_SPECTRAL_STEPS,
                                                       l > 0 && j->exact0, &j->rho[l],
                                                       l == 0 ? &j->exact0 : NULL);
        if (l == 0 && j->e[0] != KS_OK)
            j->exact0 = 0;
        j->seconds[l] = ks_wtime() - t0;
    }
    return NULL;
}

/* KS_AMG_SPECTRAL_ASYNC=N: at most N levels to the thread (0: none). */
static int levels_allowed(void)
{
    const char *v = getenv("KS_AMG_SPECTRAL_ASYNC");
    if (!v || !*v)
        return KS_AMG_SPECTRAL_ASYNC_DEFAULT;
    const long n = strtol(v, NULL, 10);
    return n < 0 ? 0 : n > KS_AMG_SPECTRAL_ASYNC_LEVELS ? KS_AMG_SPECTRAL_ASYNC_LEVELS : (int)n;
}

static int level_wanted(const ks_amg *amg, int l)
{
    if (l >= levels_allowed())
        return 0;
    const ks_amg_level *L = &amg->levels[l];
    return amg->smoother == KS_SMOOTHER_CHEBYSHEV && amg->prm.algorithm != KS_AMG_AGGREGATION &&
           !L->rho_valid && L->A.nrows >= KS_AMG_SPECTRAL_ASYNC_MIN_ROWS &&
           amg->be->ops->side && amg->be->ops->attach;
}

/* Hand level l (the next one) to the thread. */
static void give(struct ks_amg_spectral_job *j, const ks_amg *amg, int l)
{
    pthread_mutex_lock(&j->mu);
    j->A[l] = amg->levels[l].A;
    j->A[l].be = j->side;
    j->given = l + 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

void ks_amg_spectral_start(ks_amg *amg)
{
    ks_amg_spectral_cancel(amg);
    if (!level_wanted(amg, 0))
        return;
    ks_backend *side = amg->be->ops->side(amg->be);
    struct ks_amg_spectral_job *j = side ? calloc(1, sizeof *j) : NULL;
    if (!j)
        return; /* the smoother setup computes it */
    j->side = side;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    /* level 0's arrays were made before the setup began, which synchronised */
    give(j, amg, 0);
    if (pthread_create(&j->thread, NULL, spectral_thread, j) != 0) {
        pthread_cond_destroy(&j->cv);
        pthread_mutex_destroy(&j->mu);
        free(j);
        return;
    }
    amg->spectral_job = j;
}

ks_error ks_amg_spectral_give(ks_amg *amg, int l)
{
    struct ks_amg_spectral_job *j = amg->spectral_job;
    if (!j || j->given != l || !level_wanted(amg, l))
        return KS_OK;
    /* the side queue reads what the main queue wrote: finished first (the
     * setup's steps each end in a synchronisation, so this one waits for
     * nothing) */
    KS_TRY(ks_backend_sync(amg->be));
    give(j, amg, l);
    return KS_OK;
}

static void join(ks_amg *amg, int keep)
{
    struct ks_amg_spectral_job *j = amg->spectral_job;
    if (!j)
        return;
    pthread_mutex_lock(&j->mu);
    j->closed = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    pthread_join(j->thread, NULL);
    amg->spectral_job = NULL;
    for (int l = 0; keep && l < j->given; l++) {
        if (j->e[l] != KS_OK)
            continue;
        ks_amg_level *L = &amg->levels[l];
        L->rho = j->rho[l];
        L->rho_valid = 1;
        if (l == 0)
            amg->sym0 = j->exact0;
        ks_amg_trace(l, "spectral estimate on a side queue", j->seconds[l]);
    }
    ks_amg_exec_free(&j->exec);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

void ks_amg_spectral_finish(ks_amg *amg) { join(amg, 1); }

void ks_amg_spectral_cancel(ks_amg *amg) { join(amg, 0); }
