/* Distributed vectors: a local vector of this rank's part with the comm
 * and the layout attached; vec/ does the rest (vec/comm.h). */
#include "mpi_internal.h"

ks_error ks_vec_create_dist(ks_backend *be, const ks_comm *comm, ks_int nlocal, ks_vec **v)
{
    const char *fn = "ks_vec_create_dist";
    if (!v)
        return ks_seterr(KS_ERR_ARG, "%s: NULL output pointer", fn);
    *v = NULL;
    if (!comm)
        return ks_seterr(KS_ERR_ARG, "%s: NULL comm", fn);
    ks_error e = !be ? ks_seterr(KS_ERR_ARG, "%s: NULL backend on rank %d", fn, comm->rank)
                 : nlocal < 0 ? ks_seterr(KS_ERR_ARG, "%s: negative size %ld on rank %d", fn,
                                          (long)nlocal, comm->rank)
                              : KS_OK;
    KS_TRY(ks_comm_agree(comm, e));
    ks_gint *offsets;
    KS_TRY(ks_layout_gather(comm, nlocal, &offsets));
    ks_vec *w = NULL;
    e = ks_comm_agree(comm, ks_vec_create(be, nlocal, &w));
    if (e != KS_OK) {
        ks_vec_destroy(&w);
        free(offsets);
        return ks_adderr(e, "%s", fn);
    }
    w->comm = comm;
    w->offsets = offsets;
    *v = w;
    return KS_OK;
}

const ks_comm *ks_vec_comm(const ks_vec *v) { return v ? v->comm : NULL; }

ks_gint ks_vec_row_begin(const ks_vec *v)
{
    return v && v->comm ? v->offsets[v->comm->rank] : 0;
}

ks_gint ks_vec_global_size(const ks_vec *v)
{
    if (!v)
        return 0;
    return v->comm ? v->offsets[v->comm->size] : (ks_gint)v->n;
}
