/* The staged path: device buffers are copied to pinned host memory, the
 * displaced (host) collective runs on the copies, results are copied back.
 * This is what makes every collective correct on device memory; the peer
 * path of the core replaces it where it can. */
#include "coll_gpu.h"

#include <stdlib.h>

#define COLL_GPU_STAGE_MAX 2

typedef struct stage_buf {
    char *user;        /* the caller's pointer */
    char *host;        /* host copy of [user + lo, user + hi): pinned, or pageable */
    bool pageable;
    ptrdiff_t lo, hi;  /* staged region, relative to user */
    ptrdiff_t out_lo, out_hi; /* part copied back (empty: nothing) */
} stage_buf_t;

/* A rank whose staging fails must still take part in the collective: the
 * others are already in it (or will be) and cannot learn of our failure, so
 * leaving would hang them. So a failed pinned allocation falls back to
 * pageable memory, and a failed copy in is remembered (`deferred`) and
 * returned once the collective is over, without copying results back. Only
 * a rank that cannot get host memory at all stays out (`error`). */
struct coll_gpu_stage {
    int n;
    int error;    /* OMPI error: this rank cannot take part */
    int deferred; /* OMPI error to return after the collective */
    stage_buf_t buf[COLL_GPU_STAGE_MAX];
};

bool coll_gpu_is_device(const void *ptr)
{
    if (ptr == NULL || ptr == MPI_IN_PLACE || ptr == MPI_BOTTOM) return false;
    return mca_coll_gpu_component.stage_host_buffers || gpucoll_mem_kind(ptr) != GPUCOLL_MEM_HOST;
}

bool coll_gpu_data_on_device(const void *buf, ompi_datatype_t *dtype, ptrdiff_t displ)
{
    if (buf != MPI_BOTTOM || dtype == NULL || dtype == MPI_DATATYPE_NULL) return coll_gpu_is_device(buf);
    ptrdiff_t true_lb, true_extent;
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    return coll_gpu_is_device((const char *)buf + displ + true_lb);
}

bool coll_gpu_w_data_on_device(const void *buf, ompi_datatype_t *const *dtypes, const int *counts,
                               const int *displs, const MPI_Aint *adispls, int n)
{
    if (buf != MPI_BOTTOM) return coll_gpu_is_device(buf);
    for (int i = 0; i < n; i++) /* the first block that holds data says where they all are */
        if (counts[i] > 0) return coll_gpu_data_on_device(buf, dtypes[i], displs ? displs[i] : adispls[i]);
    return false;
}

coll_gpu_stage_t *coll_gpu_stage_new(void) { return calloc(1, sizeof(coll_gpu_stage_t)); }

/* Host memory for a copy: pinned up to staging_pinned_max_bytes (or when
 * that cannot be had, *pageable), NULL if there is none at all. */
static char *host_alloc(size_t bytes, bool *pageable)
{
    size_t pinned_max = mca_coll_gpu_component.staging_pinned_max_bytes;
    char *p = pinned_max == 0 || bytes <= pinned_max ? gpucoll_host_alloc(bytes) : NULL;
    *pageable = p == NULL;
    return p ? p : malloc(bytes);
}

static void host_free(char *p, size_t bytes, bool pageable)
{
    if (pageable) free(p);
    else gpucoll_host_free(p, bytes);
}

static void *stage_region(coll_gpu_stage_t *st, const void *buf, ptrdiff_t lo, ptrdiff_t hi, bool in, bool out)
{
    /* The data's own first byte: with MPI_BOTTOM the datatype holds the address. */
    if (st == NULL || st->error || hi <= lo || !coll_gpu_is_device((const char *)buf + lo)) return (void *)buf;
    if (st->n == COLL_GPU_STAGE_MAX) {
        st->error = OMPI_ERR_BAD_PARAM;
        return (void *)buf;
    }
    stage_buf_t *b = &st->buf[st->n];
    size_t bytes = (size_t)(hi - lo);
    if ((b->host = host_alloc(bytes, &b->pageable)) == NULL) {
        st->error = coll_gpu_error(GPUCOLL_ERR_NO_MEMORY, "staging a device buffer in host memory");
        return (void *)buf;
    }
    /* A send and a receive buffer given as MPI_BOTTOM (the types holding the
     * addresses) come back as host - lo each, and could come back equal: the
     * displaced module would take the call for one in place. A second copy,
     * taken while the first is held, lies elsewhere. */
    for (int i = 0; i < st->n; i++) {
        if (st->buf[i].host - st->buf[i].lo != b->host - lo) continue;
        bool pageable;
        char *other = host_alloc(bytes, &pageable);
        host_free(b->host, bytes, b->pageable);
        b->host = other;
        b->pageable = pageable;
        if (other == NULL) {
            st->error = coll_gpu_error(GPUCOLL_ERR_NO_MEMORY, "staging a device buffer in host memory");
            return (void *)buf;
        }
    }
    b->user = (char *)buf;
    b->lo = lo;
    b->hi = hi;
    b->out_lo = out ? lo : 0;
    b->out_hi = out ? hi : 0;
    st->n++;
    if (in && !st->deferred) {
        gpucoll_status_t s = gpucoll_copy(b->host, b->user + lo, bytes);
        if (s != GPUCOLL_SUCCESS) st->deferred = coll_gpu_error(s, "copying a device buffer to host");
    }
    return b->host - lo;
}

void *coll_gpu_stage(coll_gpu_stage_t *st, const void *buf, ompi_datatype_t *dtype, size_t count, bool in, bool out)
{
    ptrdiff_t gap = 0;
    if (count == 0 || buf == MPI_IN_PLACE) return (void *)buf;
    ptrdiff_t span = opal_datatype_span(&dtype->super, count, &gap);
    /* Copying back a span with holes must not overwrite the holes with
     * whatever the host copy held there: bring them in first. */
    bool holes = !ompi_datatype_is_contiguous_memory_layout(dtype, count);
    return stage_region(st, buf, gap, gap + span, in || (out && holes), out);
}

void *coll_gpu_stage_v(coll_gpu_stage_t *st, const void *buf, ompi_datatype_t *dtype, const int *counts,
                       const int *displs, int n, bool in, bool out)
{
    ptrdiff_t lb, extent, gap, lo = PTRDIFF_MAX, hi = PTRDIFF_MIN;
    if (buf == MPI_IN_PLACE) return (void *)buf;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    for (int i = 0; i < n; i++) {
        if (counts[i] <= 0) continue;
        ptrdiff_t span = opal_datatype_span(&dtype->super, (size_t)counts[i], &gap);
        ptrdiff_t start = (ptrdiff_t)displs[i] * extent + gap;
        if (start < lo) lo = start;
        if (start + span > hi) hi = start + span;
    }
    /* Blocks may leave gaps (or hold holes) that the copy back must preserve. */
    return lo < hi ? stage_region(st, buf, lo, hi, in || out, out) : (void *)buf;
}

/* Block i at byte offset displs[i] (int) or adispls[i] (MPI_Aint), whichever is given. */
static void *stage_w_any(coll_gpu_stage_t *st, const void *buf, ompi_datatype_t *const *dtypes, const int *counts,
                         const int *displs, const MPI_Aint *adispls, int n, bool in, bool out)
{
    ptrdiff_t gap, lo = PTRDIFF_MAX, hi = PTRDIFF_MIN;
    if (buf == MPI_IN_PLACE) return (void *)buf;
    for (int i = 0; i < n; i++) {
        if (counts[i] <= 0) continue;
        ptrdiff_t span = opal_datatype_span(&dtypes[i]->super, (size_t)counts[i], &gap);
        ptrdiff_t start = (displs ? (ptrdiff_t)displs[i] : (ptrdiff_t)adispls[i]) + gap;
        if (start < lo) lo = start;
        if (start + span > hi) hi = start + span;
    }
    return lo < hi ? stage_region(st, buf, lo, hi, in || out, out) : (void *)buf;
}

void *coll_gpu_stage_w(coll_gpu_stage_t *st, const void *buf, ompi_datatype_t *const *dtypes, const int *counts,
                       const int *displs, int n, bool in, bool out)
{
    return stage_w_any(st, buf, dtypes, counts, displs, NULL, n, in, out);
}

void *coll_gpu_stage_w_aint(coll_gpu_stage_t *st, const void *buf, ompi_datatype_t *const *dtypes,
                            const int *counts, const MPI_Aint *displs, int n, bool in, bool out)
{
    return stage_w_any(st, buf, dtypes, counts, NULL, displs, n, in, out);
}

void coll_gpu_stage_limit_out(coll_gpu_stage_t *st, ompi_datatype_t *dtype, size_t offset, size_t count)
{
    if (st == NULL || st->n == 0) return;
    stage_buf_t *b = &st->buf[st->n - 1];
    ptrdiff_t lb, extent, gap = 0;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ptrdiff_t span = count ? opal_datatype_span(&dtype->super, count, &gap) : 0;
    b->out_lo = (ptrdiff_t)offset * extent + gap;
    b->out_hi = b->out_lo + span;
}

int coll_gpu_stage_failed(coll_gpu_stage_t *st)
{
    if (st == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    if (!st->error) return OMPI_SUCCESS;
    int rc = st->error;
    coll_gpu_stage_release(st, rc);
    return rc;
}

int coll_gpu_stage_release(coll_gpu_stage_t *st, int rc)
{
    if (rc == OMPI_SUCCESS) rc = st->deferred;
    for (int i = 0; i < st->n; i++) {
        stage_buf_t *b = &st->buf[i];
        if (rc == OMPI_SUCCESS && b->out_hi > b->out_lo) {
            /* From page-locked memory the copy has landed when it returns;
             * from pageable memory its DMA may still be running. */
            void *dst = b->user + b->out_lo;
            const void *src = b->host + (b->out_lo - b->lo);
            size_t n = (size_t)(b->out_hi - b->out_lo);
            gpucoll_status_t s = b->pageable ? gpucoll_copy_landed(dst, src, n) : gpucoll_copy(dst, src, n);
            if (s != GPUCOLL_SUCCESS) rc = coll_gpu_error(s, "copying a result back to the device");
        }
        host_free(b->host, (size_t)(b->hi - b->lo), b->pageable);
    }
    free(st);
    return rc;
}

int coll_gpu_stage_finish(coll_gpu_stage_t *st, int rc, ompi_communicator_t *comm, ompi_request_t **request)
{
    if (request == NULL || rc != OMPI_SUCCESS) return coll_gpu_stage_release(st, rc);
    if (st->n == 0 && !st->deferred) { /* nothing to copy back */
        free(st);
        return coll_gpu_request_hold(rc, request, comm);
    }
    return coll_gpu_request_wrap(request, st, comm);
}
