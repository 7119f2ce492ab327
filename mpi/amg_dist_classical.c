/* What the distributed level loop (amg_dist_setup.c) and the aggressive
 * second stage (aggressive_dist.c) share: classical coarsening of one
 * distributed matrix into interpolation rows, the stall rule, the phase
 * timing, and transfer rows made distributed matrices. */
#include "amg_dist_setup.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* As the serial driver: a level keeping more than this fraction of its
 * rows (or none) ends the coarsening. */
#define KS_AMG_DIST_STALL_RATIO 0.9

int ks_amg_dist_stalls(ks_gint nc, ks_gint n)
{
    return nc == 0 || (double)nc > KS_AMG_DIST_STALL_RATIO * (double)n;
}

/* Time since *t0 into phase ph (and the trace), *t0 moved on. */
/* This process's CPU seconds (the trace's second figure: on a shared or
 * oversubscribed machine a rank's wall time includes its waits). */
static double cpu_seconds(void)
{
    struct timespec ts;
    return clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0 ? ts.tv_sec + 1e-9 * ts.tv_nsec
                                                             : 0.0;
}

static double trace_cpu0; /* the CPU time at the last phase's end */

void ks_amg_dist_trace_start(void) { trace_cpu0 = cpu_seconds(); }

/* The trace (KS_AMG_TRACE): rank 0 prints the step with the slowest
 * rank's wall and CPU time and the least CPU time of a rank (one
 * MPI_Reduce, only when tracing: every rank passes here at the same
 * steps); a wide gap between the CPU figures is imbalance, a wall time
 * well above the CPU time waiting (or, oversubscribed, sharing a core). */
void ks_amg_dist_phase(ks_amg *amg, int l, ks_amg_phase ph, const char *what, double *t0)
{
    const double t = ks_wtime();
    amg->phase_seconds[ph] += t - *t0;
    if (ks_amg_tracing()) {
        const double cpu = cpu_seconds();
        const ks_comm *c = ks_matrix_comm(amg->levels[0].Am);
        const double mine[3] = {t - *t0, cpu - trace_cpu0, trace_cpu0 - cpu};
        double most[3] = {mine[0], mine[1], mine[2]};
        const ks_error e = c->size == 1 ? KS_OK
                           : ks_mpi_check(MPI_Reduce(mine, most, 3, MPI_DOUBLE, MPI_MAX, 0,
                                                     ks_comm_mpi_of(c)),
                                          "MPI_Reduce (setup trace)");
        if (c->rank == 0 && e == KS_OK) {
            char text[200];
            snprintf(text, sizeof text, "%s [%d rank%s: cpu %.3f ms slowest, %.3f ms least]",
                     what, c->size, c->size == 1 ? "" : "s", 1e3 * most[1], -1e3 * most[2]);
            ks_amg_trace(l, text, most[0]);
        }
        trace_cpu0 = cpu_seconds(); /* the trace's own time counts nowhere */
        *t0 = ks_wtime();
        return;
    }
    *t0 = t;
}

void ks_amg_dist_substep(const ks_comm *c, const char *what, double *t0)
{
    const double t = ks_wtime();
    int world = 0; /* no communicator at hand: MPI_COMM_WORLD's rank 0 speaks */
    if (!c && ks_amg_tracing())
        MPI_Comm_rank(MPI_COMM_WORLD, &world);
    if (ks_amg_tracing() && (c ? c->rank : world) == 0)
        ks_log((ks_log_level() >= KS_LOG_DEBUG ? KS_LOG_DEBUG : KS_LOG_INFO) | KS_LOG_STDERR,
               "ksolve AMG   rank 0: %s %.3f ms\n", what, 1e3 * (t - *t0));
    *t0 = t;
}

int ks_amg_dist_truncating(const ks_amg_params *p)
{
    return p->interp_max_elements > 0 || p->interp_truncation_factor > 0.0;
}

const char *ks_amg_dist_level_format(const ks_amg *amg)
{
    return amg->prm.level_format[0] ? amg->prm.level_format : "auto";
}

/* After e (agreed): S's blocks as a transfer matrix with rows laid out by
 * roff and columns by coff (copied); S freed either way. Collective. */
static ks_error split_matrix(ks_amg *amg, const ks_comm *c, ks_error e, const ks_gint *roff,
                             const ks_gint *coff, ks_dist_split *S, ks_matrix **M)
{
    ks_gint *ro = e == KS_OK ? ks_layout_copy(c, roff) : NULL;
    ks_gint *co = e == KS_OK ? ks_layout_copy(c, coff) : NULL;
    if (e == KS_OK)
        e = ks_comm_agree(c, ro && co ? KS_OK : KS_ERR_MEMORY);
    if (e == KS_OK) {
        double t = ks_wtime();
        e = ks_dist_matrix_from_split(amg->be, c, ro, co, S, ks_amg_dist_level_format(amg),
                                      NULL, M);
        ks_amg_dist_substep(c, "transfer matrix: its blocks' formats and halo plan", &t);
    } else {
        free(ro);
        free(co);
    }
    ks_dist_split_free(S);
    return e;
}

ks_error ks_amg_dist_transfer_matrix(ks_amg *amg, const ks_dist_prows *X, const ks_gint *roff,
                                     const ks_gint *coff, ks_matrix **M)
{
    const ks_comm *c = X->comm;
    ks_dist_split S = {0};
    /* Rows a device built, in their layout still: split there (the same
     * blocks as ks_dist_prows_split's), so the matrix is made without a
     * host split or an upload; refused (a value not finite): the host's. */
    ks_sparse T;
    ks_gmap cm;
    int refused = 1;
    ks_error e = KS_OK;
    double t = ks_wtime();
    if (ks_dist_prows_dev_view(X, &T, &cm)) {
        e = ks_compact_split_device(&T, &cm, &refused, &S);
        ks_gmap_free(&cm);
    }
    if (e == KS_OK && refused)
        e = ks_dist_prows_split_local(X, &S);
    ks_amg_dist_substep(c, refused ? "transfer matrix: split on the host"
                                   : "transfer matrix: split on the device", &t);
    return split_matrix(amg, c, ks_comm_agree(c, e), roff, coff, &S, M);
}

ks_error ks_amg_dist_transpose_matrix(ks_amg *amg, const ks_dist_prows *P, const ks_gint *foff,
                                      const ks_gint *coff, const ks_matrix *Pm, ks_matrix **Rm)
{
    const ks_comm *c = P->comm;
    ks_dist_prows Ro;
    ks_dist_split S = {0};
    double t = ks_wtime();
    ks_error e = ks_dist_prows_transpose_others(P, foff, coff, &Ro);
    /* R's local block stays empty here: no own entries came */
    if (e == KS_OK)
        e = ks_dist_prows_split_local(&Ro, &S);
    ks_dist_prows_free(&Ro);
    if (e == KS_OK) {
        const ks_csr shape = {S.local.nrows, S.local.ncols, 0, NULL, NULL, NULL};
        ks_csr_free(&S.local);
        S.local = shape;
        e = ks_sparse_transpose(ks_matrix_sparse(Pm->dist->local), &S.dlocal);
    }
    if (e == KS_OK && (S.dlocal.nrows != S.local.nrows || S.dlocal.ncols != S.local.ncols))
        e = ks_seterr(KS_ERR_SIZE, "R = P^T: P's local block is %ld x %ld, R's %ld x %ld",
                      (long)S.dlocal.ncols, (long)S.dlocal.nrows, (long)S.local.nrows,
                      (long)S.local.ncols);
    if (e == KS_OK)
        S.local.nnz = S.dlocal.nnz;
    e = ks_comm_agree(c, e);
    ks_amg_dist_substep(c, "R = P^T: others' entries and the local block's transpose", &t);
    return split_matrix(amg, c, e, coff, foff, &S, Rm);
}

ks_error ks_amg_dist_classical_p_keep(ks_amg *amg, int l, const ks_matrix *A,
                                      unsigned long long seed, ks_amg_interp kind, int *stalled,
                                      ks_dist_prows *P, ks_dist_level_keep *keep)
{
    const ks_amg_params *p = &amg->prm;
    const ks_comm *c = ks_matrix_comm(A);
    ks_dist_strength S;
    ks_dist_coarse Cid;
    memset(&S, 0, sizeof S);
    memset(&Cid, 0, sizeof Cid);
    memset(P, 0, sizeof *P);
    int *cf = NULL;
    ks_int nc = 0;
    *stalled = 0;
    double t = ks_wtime();
    ks_error e = ks_dist_strength_classical(A, p->strength_threshold, p->max_row_sum, &S);
    ks_amg_dist_phase(amg, l, KS_AMG_PHASE_STRENGTH, "distributed strength", &t);
    if (e == KS_OK) {
        cf = ks_malloc((size_t)S.nloc * sizeof *cf + 1, "AMG C/F splitting");
        e = ks_comm_agree(c, cf ? KS_OK : KS_ERR_MEMORY);
    }
    if (e == KS_OK)
        e = p->selector == KS_AMG_HMIS ? ks_dist_hmis(&S, seed, cf, &nc)
                                       : ks_dist_pmis(&S, seed, cf, &nc);
    if (e == KS_OK)
        e = ks_dist_coarse_ids(&S, cf, &Cid);
    ks_amg_dist_phase(amg, l, KS_AMG_PHASE_COARSENING, "distributed PMIS | HMIS and coarse ids",
                      &t);
    if (e == KS_OK && ks_amg_dist_stalls(Cid.nc_global, ks_matrix_global_rows(A)))
        *stalled = 1;
    /* On the device the rows are truncated where they are built (the same
     * rows as ks_dist_prows_truncate's, without a pass on the host; its
     * time counts as interpolation's); on the host after, as serially. */
    const ks_dist_trunc tr = {p->interp_max_elements, p->interp_truncation_factor};
    const int fold = ks_amg_dist_truncating(p) && !ks_backend_host_memory(amg->be);
    if (e == KS_OK && !*stalled) {
        e = ks_dist_interp(amg->be, A, &S, cf, &Cid, kind, fold ? &tr : NULL, P);
        ks_amg_dist_phase(amg, l, KS_AMG_PHASE_INTERP,
                          fold ? "distributed interpolation and truncation"
                               : "distributed interpolation",
                          &t);
    }
    if (e == KS_OK && !*stalled && ks_amg_dist_truncating(p) && !fold) {
        e = ks_dist_prows_truncate(P, p->interp_max_elements, p->interp_truncation_factor);
        ks_amg_dist_phase(amg, l, KS_AMG_PHASE_TRUNCATION, "distributed truncation", &t);
    }
    if (e == KS_OK && !*stalled && keep) { /* the re-setup's (moved, not freed) */
        ks_dist_strength_drop_dev(&S); /* the re-setup reads the host parts */
        keep->S = S;
        keep->cf = cf;
        keep->C = Cid;
        memset(&S, 0, sizeof S);
        memset(&Cid, 0, sizeof Cid);
        cf = NULL;
    }
    free(cf);
    ks_dist_coarse_free(&Cid);
    ks_dist_strength_free(&S);
    return e;
}

