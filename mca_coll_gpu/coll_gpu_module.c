/* Selection and the module's life: which communicators we serve, what we
 * displace, and the node-local team the peer-to-peer path needs. */
#include "coll_gpu.h"

#include "ompi/group/group.h"
#include "ompi/proc/proc.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/util/info.h"

int mca_coll_gpu_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void)enable_progress_threads;
    (void)enable_mpi_threads; /* 4.1 passes true whatever level the application asked for */
    if (!mca_coll_gpu_component.enable) {
        COLL_GPU_VERBOSE(10, "disabled by coll_gpu_enable=0");
        return OMPI_ERR_NOT_AVAILABLE;
    }
    if (coll_gpu_check_runtime_version() != OMPI_SUCCESS) return OMPI_ERR_NOT_AVAILABLE;
    /* No driver, no device memory: stepping aside costs nothing and is always right. */
    if (!gpucoll_driver_present()) {
        if (mca_coll_gpu_component.select_without_gpu) {
            COLL_GPU_VERBOSE(10, "no GPU driver in this process; selected anyway (select_without_gpu), "
                                 "every call passes through");
            return OMPI_SUCCESS;
        }
        COLL_GPU_VERBOSE(10, "stepping aside: no GPU driver (libcuda) could be loaded in this process");
        return OMPI_ERR_NOT_AVAILABLE;
    }
    return OMPI_SUCCESS;
}

static int gpu_module_enable(mca_coll_base_module_t *module, ompi_communicator_t *comm);
static int gpu_module_disable(mca_coll_base_module_t *module, ompi_communicator_t *comm);

static void gpu_module_construct(mca_coll_gpu_module_t *m)
{
    memset(&m->prev, 0, sizeof m->prev);
    m->comm = NULL;
    m->force_staged = false;
    m->team = NULL;
    m->team_pending = false;
    m->hier = NULL;
    m->hier_pending = false;
    m->stream_team = NULL;
    m->stream_tried = false;
}

static void gpu_module_destruct(mca_coll_gpu_module_t *m)
{
    /* Disable may not have run (enable failed part way): release what is held. */
#define COLL_GPU_RELEASE(name) \
    if (m->prev.name##_module) OBJ_RELEASE(m->prev.name##_module);
    COLL_GPU_WRAPPED(COLL_GPU_RELEASE)
#undef COLL_GPU_RELEASE
    /* Waits for its enqueued kernels (they end, or stop because a peer is
     * gone); later launches of graphs that hold them do nothing. Before the
     * ordinary team, whose registered windows those kernels may read. */
    if (m->stream_team) gpucoll_team_destroy(m->stream_team);
    m->stream_team = NULL;
    if (m->team) gpucoll_team_destroy(m->team);
    m->team = NULL;
    /* Local and bounded: no MPI call (Open MPI 4.1 destroys the module after
     * unselecting it, possibly at different times on different ranks); the
     * UCX group close never waits on a peer, the node-local team leaves its
     * GPU memory to the watcher until its peers have left. */
    gpucoll_hier_destroy(m->hier);
    m->hier = NULL;
}

OBJ_CLASS_INSTANCE(mca_coll_gpu_module_t, mca_coll_base_module_t, gpu_module_construct, gpu_module_destruct);

static bool info_forces_staged(ompi_communicator_t *comm)
{
    opal_info_t *info = comm->super.s_info;
    char value[32];
    int flag = 0;
    if (info == NULL) return false;
    if (coll_gpu_info_get(info, "coll_gpu_path", value, sizeof value, &flag) != OPAL_SUCCESS || !flag)
        return false;
    return strcmp(value, "staged") == 0;
}

mca_coll_base_module_t *mca_coll_gpu_comm_query(ompi_communicator_t *comm, int *priority)
{
    mca_coll_gpu_module_t *m = OBJ_NEW(mca_coll_gpu_module_t);
    if (m == NULL) return NULL;
    *priority = mca_coll_gpu_component.priority;
    m->super.coll_module_enable = gpu_module_enable;
    m->super.coll_module_disable = gpu_module_disable;
    /* On an intercommunicator the kinds MPI defines there with data (no
     * scan, exscan, barrier or neighbourhood collectives): those slots stay
     * with the modules below. */
    const bool inter = OMPI_COMM_IS_INTER(comm);
    coll_gpu_entries_install_reductions(&m->super, inter);
    coll_gpu_entries_install_movement(&m->super);
    if (!inter) coll_gpu_entries_install_neighbor(&m->super);
    return &m->super;
}

/* The team is built with the allgather we displaced, on host memory. */
static int team_allgather(const void *in, void *out, size_t bytes, void *ctx)
{
    mca_coll_gpu_module_t *m = ctx;
    return m->prev.allgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, m->comm,
                             m->prev.allgather_module);
}

void coll_gpu_mpi_progress(void) { opal_progress(); }

static bool team_eligible(ompi_communicator_t *comm)
{
    const gpucoll_config_t *cfg = &mca_coll_gpu_component.config;
    int size = ompi_comm_size(comm);
    /* path=staged is not here: a process may set it alone (environment),
     * so it only makes this rank's agreements say "cannot" (force_staged). */
    if (mca_coll_gpu_component.stage_host_buffers || size < 2 || !gpucoll_driver_present())
        return false;
    /* Virtual nodes split this communicator: the hierarchical path serves it. */
    if (cfg->virtual_node_size > 0 && cfg->virtual_node_size < size) return false;
    if (size > cfg->max_peers) {
        COLL_GPU_VERBOSE(10, "%s: %d ranks exceed max_peers=%d, device buffers will be staged", comm->c_name, size,
                         cfg->max_peers);
        return false;
    }
    /* Look each peer up (ompi_group_have_remote_peers counts procs not yet
     * instantiated as remote, which would turn the team off needlessly). */
    for (int r = 0; r < size; r++) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, r);
        if (proc != ompi_proc_local() && (proc == NULL || !OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags))) {
            COLL_GPU_VERBOSE(10, "%s spans nodes: device buffers will be staged", comm->c_name);
            return false;
        }
    }
    return true;
}

static int gpu_module_enable(mca_coll_base_module_t *module, ompi_communicator_t *comm)
{
    mca_coll_gpu_module_t *m = COLL_GPU_MODULE(module);
    m->comm = comm;
    /* comm->c_coll holds the lower-priority modules' functions at this point.
     * Where none exists we install nothing either. */
#define COLL_GPU_SAVE(name)                                           \
    m->prev.name = comm->c_coll->coll_##name;                         \
    m->prev.name##_module = comm->c_coll->coll_##name##_module;       \
    if (m->prev.name && m->prev.name##_module) {                      \
        OBJ_RETAIN(m->prev.name##_module);                            \
    } else {                                                          \
        m->prev.name = NULL;                                          \
        m->prev.name##_module = NULL;                                 \
        m->super.coll_##name = NULL;                                  \
    }
    COLL_GPU_WRAPPED(COLL_GPU_SAVE)
#undef COLL_GPU_SAVE

    /* Per process (MPI lets info values differ between processes): it
     * enters only this rank's answers to the agreements, never whether a
     * collective step (the team's creation, the GPU set-up) runs. */
    m->force_staged = info_forces_staged(comm) || mca_coll_gpu_component.config.path == GPUCOLL_PATH_STAGED;
    /* The level the application got is known once MPI_Init_thread runs
     * (before any communicator is enabled); the core orders its streams
     * for it. The same on every call. */
    if (mca_coll_gpu_component.config.thread_multiple != (int)ompi_mpi_thread_multiple) {
        mca_coll_gpu_component.config.thread_multiple = ompi_mpi_thread_multiple;
        gpucoll_core_configure(&mca_coll_gpu_component.config);
    }
    /* No communication here: for communicators other than WORLD/SELF, Open MPI
     * enables modules from a completion callback of the communicator's
     * activation, where a blocking exchange can deadlock (MPI_Comm_split_type
     * hung that way). The team is built at the first collective instead. */
    const bool intra = !OMPI_COMM_IS_INTER(comm);
    m->team_pending = intra && m->prev.allgather && team_eligible(comm);
    m->hier_pending = intra && !m->team_pending && coll_gpu_hier_wanted(m);
    COLL_GPU_VERBOSE(10, "enabled on %s (%d ranks)%s%s%s%s%s", comm->c_name, ompi_comm_size(comm),
                     intra ? "" : ", an intercommunicator: device buffers staged",
                     ompi_mpi_thread_multiple ? ", MPI_THREAD_MULTIPLE" : "",
                     m->team_pending ? ", peer-to-peer team at first use" : "",
                     m->hier_pending ? ", hierarchical path at first use" : "",
                     m->force_staged ? ", staged by info" : "");
    return OMPI_SUCCESS;
}

bool coll_gpu_team_ensure(mca_coll_gpu_module_t *m)
{
    if (!m->team_pending) return m->team != NULL;
    m->team_pending = false;
    gpucoll_oob_t oob = {ompi_comm_rank(m->comm), ompi_comm_size(m->comm), team_allgather, m,
                              coll_gpu_mpi_progress, 0};
    if (gpucoll_team_create(&oob, &m->team) != GPUCOLL_SUCCESS) {
        /* Every rank reaches the same verdict: the exchange is collective. */
        COLL_GPU_VERBOSE(10, "%s: no peer-to-peer team (%s), device buffers will be staged", m->comm->c_name,
                         gpucoll_last_error());
        m->team = NULL;
        return false;
    }
    COLL_GPU_VERBOSE(10, "%s: peer-to-peer team ready (%d ranks)", m->comm->c_name, ompi_comm_size(m->comm));
    return true;
}

bool coll_gpu_stream_team_ensure(mca_coll_gpu_module_t *m)
{
    if (m->stream_tried) return m->stream_team != NULL;
    m->stream_tried = true;
    /* Node-local communicators only, as for the ordinary team: alike. */
    if (!(m->team_pending || m->team)) return false;
    gpucoll_oob_t oob = {ompi_comm_rank(m->comm), ompi_comm_size(m->comm), team_allgather, m,
                         coll_gpu_mpi_progress, 0};
    gpucoll_status_t st = gpucoll_team_create(&oob, &m->stream_team);
    if (st == GPUCOLL_SUCCESS) st = gpucoll_stream_setup(m->stream_team, !m->force_staged);
    if (st != GPUCOLL_SUCCESS) {
        COLL_GPU_VERBOSE(10, "%s: no GPU path for stream-ordered collectives (%s): they synchronise and run as "
                         "ordinary collectives", m->comm->c_name, gpucoll_last_error());
        gpucoll_team_destroy(m->stream_team);
        m->stream_team = NULL;
        return false;
    }
    /* The windows registered on the communicator serve these calls too
     * (alike: the ordinary team exists on every rank or on none). */
    if (m->team) gpucoll_stream_use_windows(m->stream_team, m->team);
    COLL_GPU_VERBOSE(10, "%s: stream-ordered collectives ready (%d ranks)", m->comm->c_name, ompi_comm_size(m->comm));
    return true;
}

int coll_gpu_stream_team_renew(mca_coll_gpu_module_t *m)
{
    if (!m->stream_tried || m->stream_team == NULL) return MPI_SUCCESS; /* alike on every rank */
    /* Past the barrier every rank has posted the keys of all its calls, so
     * each compares them all; then a rank that found no error agrees with
     * one that did. */
    int rc = MPI_Barrier(m->comm);
    if (rc != MPI_SUCCESS) return rc;
    int failed = gpucoll_stream_status(m->stream_team) != GPUCOLL_SUCCESS, any = 0;
    rc = MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, m->comm);
    if (rc != MPI_SUCCESS || !any) return rc;
    /* Every rank's old kernels end (a partner of one that stopped would wait
     * for it); graphs holding them do nothing once the old team is gone. */
    gpucoll_team_t *old = m->stream_team;
    gpucoll_stream_stop(old);
    m->stream_team = NULL;
    m->stream_tried = false;
    COLL_GPU_VERBOSE(10, "%s: an enqueued collective failed on some rank: stream-ordered collectives start afresh",
                     m->comm->c_name);
    const bool ready = coll_gpu_stream_team_ensure(m);
    /* Only then, outside anything collective: its end waits for the kernels
     * queued on the caller's streams before the old team's, which may
     * include another communicator's whose peer is still in this call. */
    gpucoll_team_destroy(old);
    return ready ? MPI_SUCCESS : MPI_ERR_OTHER;
}

/* 4.1/5.0 call disable once per installed slot: keep it idempotent. */
static int gpu_module_disable(mca_coll_base_module_t *module, ompi_communicator_t *comm)
{
    (void)module;
    (void)comm;
    return OMPI_SUCCESS;
}
