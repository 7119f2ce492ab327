/* Level 0's spectral estimate (the Chebyshev smoother's rho(D^-1 A)) on a
 * side queue of the backend, from a host thread, while the setup thread
 * builds the hierarchy on the main queue.
 *
 * Level 0 is the caller's matrix, known and unchanged from the start of a
 * setup, and its estimate (12 Lanczos steps, each a pass over the matrix:
 * 12 ms of a 0.2 s 7-point 256^3 setup on an H100) is needed only by the
 * smoother setup at the end. The coarser levels' steps leave the device
 * idle between small kernels and host decisions, and the side queue's
 * kernels fill those gaps. The thread runs the same kernels on the same
 * matrix, so the estimate has the same bits; a failure there is dropped
 * and the smoother setup computes the estimate itself (with the error, if
 * any, in its usual place). Only where the backend offers a side queue
 * (cuda) and level 0 is large enough for it to pay;
 * KS_AMG_SPECTRAL_ASYNC=0 in the environment turns it off. */
#include "hierarchy.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Below this many rows the estimate is cheap and the thread not worth it. */
#define KS_AMG_SPECTRAL_ASYNC_MIN_ROWS 65536

struct ks_amg_spectral_job {
    pthread_t thread;
    ks_backend *side;
    ks_sparse A;      /* level 0's arrays, on the side queue */
    ks_amg_exec exec; /* the thread's own (kernels.h keeps per-call state there) */
    double rho, seconds;
    ks_error e;
};

static void *spectral_thread(void *arg)
{
    struct ks_amg_spectral_job *j = arg;
    const double t0 = ks_wtime();
    j->e = j->side->ops->attach(j->side);
    if (j->e == KS_OK)
        j->e = ks_amgk_spectral_radius(&j->exec, &j->A, KS_AMG_SPECTRAL_STEPS, &j->rho);
    j->seconds = ks_wtime() - t0;
    return NULL;
}

static int wanted(const ks_amg *amg)
{
    const char *v = getenv("KS_AMG_SPECTRAL_ASYNC");
    if (v && strcmp(v, "0") == 0)
        return 0;
    const ks_amg_level *L0 = &amg->levels[0];
    return amg->smoother == KS_SMOOTHER_CHEBYSHEV && amg->prm.algorithm != KS_AMG_AGGREGATION &&
           !L0->rho_valid && L0->A.nrows >= KS_AMG_SPECTRAL_ASYNC_MIN_ROWS &&
           amg->be->ops->side && amg->be->ops->attach;
}

void ks_amg_spectral_start(ks_amg *amg)
{
    ks_amg_spectral_cancel(amg);
    if (!wanted(amg))
        return;
    ks_backend *side = amg->be->ops->side(amg->be);
    struct ks_amg_spectral_job *j = side ? calloc(1, sizeof *j) : NULL;
    if (!j)
        return; /* the smoother setup computes it */
    j->side = side;
    j->A = amg->levels[0].A;
    j->A.be = side;
    /* level 0's arrays were made before the setup began, which synchronised */
    if (pthread_create(&j->thread, NULL, spectral_thread, j) != 0) {
        free(j);
        return;
    }
    amg->spectral_job = j;
}

static void join(ks_amg *amg, int keep)
{
    struct ks_amg_spectral_job *j = amg->spectral_job;
    if (!j)
        return;
    pthread_join(j->thread, NULL);
    amg->spectral_job = NULL;
    if (keep && j->e == KS_OK) {
        ks_amg_level *L0 = &amg->levels[0];
        L0->rho = j->rho;
        L0->rho_valid = 1;
        ks_amg_trace(0, "spectral estimate on a side queue", j->seconds);
    }
    ks_amg_exec_free(&j->exec);
    free(j);
}

void ks_amg_spectral_finish(ks_amg *amg) { join(amg, 1); }

void ks_amg_spectral_cancel(ks_amg *amg) { join(amg, 0); }
