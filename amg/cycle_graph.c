/* The preconditioner's cycle as a replayed graph (backends that have one:
 * cuda). A V-cycle is a fixed sequence of 50-100 kernels, most of them on
 * levels of a few thousand rows where each costs its launch latency, not
 * its memory traffic; a CUDA graph issues the whole sequence with one call.
 * PCG and BiCGStab hand the same r and z every iteration, so one capture
 * serves the whole solve. The graph holds buffer addresses, so it is
 * captured again when b, x or level 0's matrix storage change
 * (ks_matrix_set_values replaces the storage) and dropped by every setup
 * and re-setup. KS_CUDA_GRAPH=0 in the environment turns it off (for
 * profilers that show kernels one by one). */
#include "hierarchy.h"

#include <stdlib.h>
#include <string.h>

void ks_amg_graph_reset(ks_amg *amg)
{
    if (amg->graph)
        amg->be->ops->graph_destroy(amg->be, amg->graph);
    amg->graph = NULL;
    amg->graph_b = amg->graph_x = NULL;
    amg->graph_A = NULL;
    amg->graph_off = 0;
}

static int graphs_wanted(const ks_amg *amg)
{
    /* A distributed cycle's halo exchanges are MPI calls and host waits,
     * which a graph cannot hold: it runs directly. */
    if (!amg->be->ops->capture_begin || amg->graph_off ||
        ks_matrix_distributed(amg->levels[0].Am))
        return 0;
    const char *env = getenv("KS_CUDA_GRAPH");
    return !amg->profile && !(env && strcmp(env, "0") == 0);
}

ks_error ks_amg_precond_cycle(ks_amg *amg, const ks_vec *b, ks_vec *x)
{
    if (!amg || !b || !x || amg->nlevels < 1 || !graphs_wanted(amg))
        return ks_amg_cycle(amg, b, x, 1);
    ks_backend *be = amg->be;
    const void *A = ks_matrix_storage_id(amg->levels[0].Am);
    if (amg->graph && (amg->graph_b != b->data || amg->graph_x != x->data || amg->graph_A != A))
        ks_amg_graph_reset(amg);
    if (!amg->graph) {
        /* Nothing runs while capturing: the cycle's calls are recorded,
         * then the graph is launched below. */
        if (be->ops->capture_begin(be) != KS_OK) {
            amg->graph_off = 1;
            return ks_amg_cycle(amg, b, x, 1);
        }
        ks_error e = ks_amg_cycle(amg, b, x, 1);
        void *g = NULL;
        ks_error ec = be->ops->capture_end(be, e == KS_OK, &g);
        if (e != KS_OK)
            return e;
        if (ec != KS_OK || !g) {
            /* Some call of the cycle cannot be captured: run it directly
             * from now on. */
            amg->graph_off = 1;
            return ks_amg_cycle(amg, b, x, 1);
        }
        amg->graph = g;
        amg->graph_b = b->data;
        amg->graph_x = x->data;
        amg->graph_A = A;
    }
    return be->ops->graph_launch(be, amg->graph);
}
