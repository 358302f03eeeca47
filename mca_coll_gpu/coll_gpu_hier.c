/* The hierarchical path across nodes (docs/multinode.md): building the
 * node-local team and the cross-node UCX group at module enable, and handing
 * device-buffer collectives to the core's gpucoll_hier_run.
 *
 * Out-of-band exchange over a subset. The team and the UCX group are each
 * built over a subset of the communicator (my node; the ranks with my local
 * index), but the only collective we have at enable is the displaced
 * allgather over the whole communicator. A subset allgather is therefore a
 * whole-communicator allgather from which each rank picks its members'
 * contributions. That only works if every rank makes the same sequence of
 * calls with the same sizes, which gpucoll_team_create and
 * gpucoll_ucx_group_create do not promise on failure paths (team_create
 * skips its second round when the first failed; either may return before
 * any exchange when a local allocation fails). So each call goes in two
 * rounds: a fixed-size header {active, phase, ok, bytes} from every rank,
 * then the payload padded to the largest announced size. After its create
 * call returns, every rank "drains": it keeps answering rounds with an
 * inactive header until all headers of a round are inactive. Ranks in
 * different states thus always make matching calls, a member whose phase or
 * size differs makes the call fail (cleanly) instead of mixing data, and the
 * final all-inactive round tells everyone whether every rank succeeded, so
 * the communicator keeps the hierarchical path everywhere or nowhere. */
#include "coll_gpu.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/proc/proc.h"

typedef struct hier_oob_ctx {
    mca_coll_gpu_module_t *m;
    const int *members; /* communicator ranks, in subset order */
    int nmembers;
    int phase;
} hier_oob_ctx_t;

typedef struct hier_oob_header {
    int32_t active; /* 1: a real call of the phase; 0: draining */
    int32_t phase;
    int32_t ok;     /* draining: this rank's create succeeded */
    int32_t pad;
    uint64_t bytes;
} hier_oob_header_t;

static int whole_allgather(mca_coll_gpu_module_t *m, const void *in, void *out, size_t bytes)
{
    return m->prev.allgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, m->comm, m->prev.allgather_module);
}

/* One round: headers, then the payload padded to the largest size announced.
 * Fills *headers (size entries) and, if any rank was active, *payload (size *
 * *maxb bytes, caller frees). */
static int oob_round(mca_coll_gpu_module_t *m, const hier_oob_header_t *mine, const void *in,
                     hier_oob_header_t *headers, char **payload, size_t *maxb)
{
    int size = ompi_comm_size(m->comm);
    *payload = NULL;
    *maxb = 0;
    if (whole_allgather(m, mine, headers, sizeof *mine) != OMPI_SUCCESS) return -1;
    for (int r = 0; r < size; r++)
        if (headers[r].active && headers[r].bytes > *maxb) *maxb = headers[r].bytes;
    if (*maxb == 0) return 0;
    if (*maxb > (size_t)INT32_MAX) return -1; /* every rank sees the same headers: all fail here */
    char *pad = calloc(1, *maxb);
    *payload = malloc((size_t)size * *maxb);
    int rc = -1;
    if (pad && *payload) {
        if (mine->active && mine->bytes) memcpy(pad, in, mine->bytes);
        rc = whole_allgather(m, pad, *payload, *maxb) == OMPI_SUCCESS ? 0 : -1;
    }
    /* Without the (small) buffers this rank cannot take part in the round:
     * the others then fail in MPI rather than mixing data. */
    free(pad);
    return rc;
}

/* gpucoll_oob_t.allgather over the subset in ctx. */
static int subset_allgather(const void *in, void *out, size_t bytes, void *ctxp)
{
    hier_oob_ctx_t *ctx = ctxp;
    int size = ompi_comm_size(ctx->m->comm);
    hier_oob_header_t mine = {1, ctx->phase, 1, 0, bytes};
    hier_oob_header_t *headers = malloc((size_t)size * sizeof *headers);
    if (headers == NULL) return -1; /* local; the drain keeps the others from blocking */
    char *payload = NULL;
    size_t maxb = 0;
    int rc = oob_round(ctx->m, &mine, in, headers, &payload, &maxb);
    for (int k = 0; rc == 0 && k < ctx->nmembers; k++) {
        const hier_oob_header_t *h = &headers[ctx->members[k]];
        if (!h->active || h->phase != ctx->phase || h->bytes != bytes || (bytes && !payload)) {
            rc = -1;
            break;
        }
        if (bytes) memcpy((char *)out + (size_t)k * bytes, payload + (size_t)ctx->members[k] * maxb, bytes);
    }
    free(payload);
    free(headers);
    return rc;
}

/* After this rank's create returned: answer rounds until nobody is active.
 * Returns 1 if every rank reported success. */
static int drain(mca_coll_gpu_module_t *m, int phase, int ok)
{
    int size = ompi_comm_size(m->comm);
    hier_oob_header_t mine = {0, phase, ok ? 1 : 0, 0, 0};
    hier_oob_header_t *headers = malloc((size_t)size * sizeof *headers);
    if (headers == NULL) return 0;
    int all_ok = 0;
    for (;;) {
        char *payload = NULL;
        size_t maxb = 0;
        int active = 0;
        if (oob_round(m, &mine, NULL, headers, &payload, &maxb) != 0) {
            free(payload);
            break;
        }
        free(payload);
        all_ok = 1;
        for (int r = 0; r < size; r++) {
            active |= headers[r].active;
            all_ok &= headers[r].ok && headers[r].phase == phase;
        }
        if (!active) break;
        all_ok = 0;
    }
    free(headers);
    return all_ok;
}

/* Lowest rank of the communicator on this host: equal for all ranks of a host. */
static int host_key(ompi_communicator_t *comm, bool *spans)
{
    int size = ompi_comm_size(comm), me = ompi_comm_rank(comm), key = me;
    *spans = false;
    for (int r = 0; r < size; r++) {
        if (r == me) continue;
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, r);
        if (proc != NULL && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)) {
            if (r < key) key = r;
        } else {
            *spans = true;
        }
    }
    return key;
}

bool coll_gpu_hier_wanted(mca_coll_gpu_module_t *m)
{
    ompi_communicator_t *comm = m->comm;
    const gpucoll_config_t *cfg = &mca_coll_gpu_component.config;
    int size = ompi_comm_size(comm);
    if (size < 2 || m->prev.allgather == NULL || m->prev.allreduce == NULL) return false;
    bool spans;
    (void)host_key(comm, &spans);
    /* Every rank sees the same: a second node means a remote peer for everyone,
     * and the parameters are the same everywhere. */
    bool virt = cfg->virtual_node_size > 0 && cfg->virtual_node_size < size;
    if (!spans && !virt) return false;
    if (cfg->inter_path == GPUCOLL_INTER_STAGED || cfg->path == GPUCOLL_PATH_STAGED ||
        mca_coll_gpu_component.stage_host_buffers) {
        COLL_GPU_VERBOSE(10, "%s spans %s nodes: no hierarchical path (staged by parameter)", comm->c_name,
                         spans ? "real" : "virtual");
        return false;
    }
    return true;
}

/* From the exchange of {host key, can, GPU key} per rank: the most ranks on
 * one GPU of one host (GPU key -1: no GPU, counted apart). */
static int most_ranks_on_one_gpu(const int *all, int size)
{
    int most = 1;
    for (int r = 0; r < size; r++) {
        int n = 0;
        for (int q = 0; q < size; q++) n += all[3 * q] == all[3 * r] && all[3 * q + 2] == all[3 * r + 2];
        if (n > most && all[3 * r + 2] >= 0) most = n;
    }
    return most;
}

/* What the steps of hier_ensure share: the exchange of {host key, can,
 * GPU key} per rank, the layout planned from it, and the reason when the
 * path cannot be built. */
typedef struct {
    int *all, *hosts, *rank_of, *members;
    gpucoll_hier_layout_t layout;
    char reason[256];
} hier_setup_t;

/* Where every rank runs, and whether it can build groups at all (no GPU
 * driver: only under select_without_gpu, which tests use to build the
 * groups in CI). Exchanged, so that all ranks decide alike. NULL, or why
 * not (every rank finds the same). */
static const char *hier_layout(mca_coll_gpu_module_t *m, hier_setup_t *s)
{
    ompi_communicator_t *comm = m->comm;
    const gpucoll_config_t *cfg = &mca_coll_gpu_component.config;
    const int size = ompi_comm_size(comm);
    bool spans;
    int mine[3] = {host_key(comm, &spans),
                   (gpucoll_driver_present() || mca_coll_gpu_component.select_without_gpu) && s->hosts &&
                       s->rank_of && s->members,
                   gpucoll_current_gpu_key()};
    /* A few bytes per rank: without them this rank cannot even answer the
     * exchange (the others would then fail in MPI, not hang in us). */
    if (s->all == NULL) {
        opal_output(0, "coll:gpu: %s: out of host memory while setting up the hierarchical path", comm->c_name);
        return "out of host memory";
    }
    if (whole_allgather(m, mine, s->all, sizeof mine) != OMPI_SUCCESS) return "the exchange of host ids failed";
    const char *why = NULL;
    for (int r = 0; r < size; r++) {
        s->hosts[r] = s->all[3 * r];
        if (!s->all[3 * r + 1]) {
            snprintf(s->reason, sizeof s->reason, "rank %d has no GPU driver (or ran out of memory)", r);
            why = s->reason;
        }
    }
    if (why) return why;
    gpucoll_status_t st =
        gpucoll_hier_plan(s->hosts, size, ompi_comm_rank(comm), cfg->virtual_node_size, &s->layout, s->rank_of);
    if (st != GPUCOLL_SUCCESS || s->layout.nnodes < 2) {
        snprintf(s->reason, sizeof s->reason, "%s", st != GPUCOLL_SUCCESS ? gpucoll_last_error() : "one node");
        return s->reason;
    }
    if (s->layout.local_size > cfg->max_peers) {
        snprintf(s->reason, sizeof s->reason, "%d ranks per node exceed max_peers=%d", s->layout.local_size,
                 cfg->max_peers);
        return s->reason;
    }
    return NULL;
}

/* Connects `h` (NULL: this rank could not make one; it still takes part):
 * phase 1 the node-local team over the ranks of my node, phase 2 the UCX
 * group over the ranks with my local index, each drained so that a rank
 * that fails stops everyone alike. NULL, or why not. */
static const char *hier_connect(mca_coll_gpu_module_t *m, hier_setup_t *s, gpucoll_hier_t *h)
{
    ompi_communicator_t *comm = m->comm;
    const gpucoll_hier_layout_t *l = &s->layout;
    /* Virtual nodes over one GPU run their teams' kernels at the same time:
     * the grids of every rank on that GPU must fit it together. */
    for (int j = 0; j < l->local_size; j++) s->members[j] = s->rank_of[l->node * l->local_size + j];
    hier_oob_ctx_t lctx = {m, s->members, l->local_size, 1};
    gpucoll_oob_t loob = {l->local_rank, l->local_size, subset_allgather, &lctx, coll_gpu_mpi_progress,
                          most_ranks_on_one_gpu(s->all, ompi_comm_size(comm))};
    gpucoll_status_t st = h ? gpucoll_hier_connect_local(h, &loob) : GPUCOLL_ERR_NO_MEMORY;
    if (st != GPUCOLL_SUCCESS) COLL_GPU_VERBOSE(10, "%s: node-local team: %s", comm->c_name, gpucoll_last_error());
    if (!drain(m, 1, st == GPUCOLL_SUCCESS)) return "a node could not build its node-local team";
    for (int n = 0; n < l->nnodes; n++) s->members[n] = s->rank_of[n * l->local_size + l->local_rank];
    hier_oob_ctx_t cctx = {m, s->members, l->nnodes, 2};
    gpucoll_oob_t coob = {l->node, l->nnodes, subset_allgather, &cctx, coll_gpu_mpi_progress, 0};
    st = gpucoll_hier_connect_cross(h, &coob);
    if (st != GPUCOLL_SUCCESS) COLL_GPU_VERBOSE(10, "%s: UCX group: %s", comm->c_name, gpucoll_last_error());
    if (!drain(m, 2, st == GPUCOLL_SUCCESS)) return "a rank could not build its cross-node UCX group";
    return NULL;
}

/* Builds m->hier (collective over the communicator, at its first collective
 * with a nonzero count: enable must not communicate, see coll_gpu_module.c). */
static bool hier_ensure(mca_coll_gpu_module_t *m)
{
    if (!m->hier_pending) return m->hier != NULL;
    m->hier_pending = false;
    const size_t size = (size_t)ompi_comm_size(m->comm);
    hier_setup_t s = {.all = malloc(size * 3 * sizeof(int)), .hosts = malloc(size * sizeof(int)),
                      .rank_of = malloc(size * sizeof(int)), .members = malloc(size * sizeof(int))};
    gpucoll_hier_t *h = NULL;
    const char *why = hier_layout(m, &s);
    if (!why) {
        if (gpucoll_hier_create(&s.layout, s.rank_of, &h) != GPUCOLL_SUCCESS) h = NULL; /* local: still take part */
        why = hier_connect(m, &s, h);
    }
    if (!why) {
        char desc[512];
        gpucoll_hier_describe(h, desc, sizeof desc);
        COLL_GPU_VERBOSE(10, "%s: hierarchical: %s", m->comm->c_name, desc);
        m->hier = h;
        h = NULL;
    } else if (mca_coll_gpu_component.config.inter_path == GPUCOLL_INTER_HIER) {
        opal_output(0, "coll:gpu: %s: no hierarchical path (inter_path=hier): %s; device buffers will be staged",
                    m->comm->c_name, why);
    } else {
        COLL_GPU_VERBOSE(10, "%s spans nodes: no hierarchical path (%s), device buffers will be staged",
                         m->comm->c_name, why);
    }
    gpucoll_hier_destroy(h); /* local: never waits on a peer before its GPU side exists */
    free(s.all);
    free(s.hosts);
    free(s.rank_of);
    free(s.members);
    return m->hier != NULL;
}

/* Every rank of the communicator: 1 if all passed ok != 0. Through the
 * displaced allreduce on host memory, so a node with host buffers (or a
 * broken hier object) simply votes 0 and nobody waits on it. */
static int hier_agree(mca_coll_gpu_module_t *m, int ok, int *all)
{
    *all = 0;
    return m->prev.allreduce(&ok, all, 1, MPI_INT, MPI_MIN, m->comm, m->prev.allreduce_module);
}

bool coll_gpu_hier_try(mca_coll_gpu_module_t *m, const coll_gpu_call_t *c, bool device_ok, int *rc)
{
    /* Every rank passes the same count and type signature, so skipping empty
     * and small calls is a shared decision (and costs them no agreement). */
    const size_t bytes = c->rcount * c->rdtype->super.size;
    if (bytes == 0 || bytes < mca_coll_gpu_component.config.hier_min_bytes || !hier_ensure(m)) return false;
    gpucoll_coll_args_t a;
    a.local_ok = coll_gpu_call_args(c, m->comm, &a) && device_ok && !m->force_staged;
    int ok = a.local_ok && gpucoll_hier_local_ok(m->hier, &a), all;
    int err = hier_agree(m, ok, &all);
    if (err != OMPI_SUCCESS) {
        *rc = err;
        return true;
    }
    if (!all) return false;
    if (!gpucoll_hier_prepared(m->hier)) {
        /* First agreed call: the node-local team sets up its GPU side. A node
         * where that fails must not leave the others waiting: agree again. */
        gpucoll_status_t st = gpucoll_hier_prepare(m->hier, &a);
        if (st != GPUCOLL_SUCCESS)
            COLL_GPU_VERBOSE(10, "%s: hierarchical path unavailable on this node: %s", m->comm->c_name,
                             gpucoll_last_error());
        if ((err = hier_agree(m, st == GPUCOLL_SUCCESS, &all)) != OMPI_SUCCESS) {
            *rc = err;
            return true;
        }
        if (!all) {
            gpucoll_hier_disable(m->hier);
            COLL_GPU_VERBOSE(10, "%s: hierarchical path off (a node could not set up its GPUs), device buffers "
                                 "will be staged", m->comm->c_name);
            return false;
        }
        COLL_GPU_VERBOSE(10, "%s: hierarchical path ready", m->comm->c_name);
    }
    gpucoll_status_t st = gpucoll_hier_run(m->hier, &a);
    if (st != GPUCOLL_SUCCESS) {
        *rc = coll_gpu_error(st, "hierarchical collective");
        return true;
    }
    COLL_GPU_VERBOSE(20, "%s: collective %d on %zu elements ran hierarchically", m->comm->c_name, (int)a.kind, a.count);
    *rc = OMPI_SUCCESS;
    return true;
}
