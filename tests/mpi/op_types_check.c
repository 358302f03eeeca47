/* Every predefined datatype x every predefined op MPI allows on it, through
 * allreduce (also in place), reduce and reduce_scatter_block, in every form,
 * against MPI_Reduce_local on host memory.
 *
 *   op_types_check [--mem host|device] [--one-gpu] [--forms LIST]
 *
 * The types are those of MPI-3.1 section 5.9.2 (op_types.h): C and Fortran
 * integers, MPI_AINT, MPI_OFFSET, MPI_COUNT, floating point, logical, byte,
 * complex, and the pair types with MINLOC / MAXLOC. Inputs are negative and
 * positive, above 2^31 and 2^32 where the type is wide enough, so that a
 * reduction that takes a signed type for an unsigned one (or a narrower one)
 * gives another result; reals are exact in any order of summation.
 * The expected result is computed on every rank from every rank's inputs
 * with MPI_Reduce_local (rank 0's first) on host memory: what Open MPI's own
 * host functions give. A pair the library refuses there is skipped (counted).
 * Counts 7 and 1031 (per block for reduce_scatter_block, so LL and larger
 * kernels both run); the root of reduce is the last rank.
 * Forms (--forms, comma separated; all by default): blocking, nonblocking,
 * persistent (started twice, new inputs before the second start; skipped
 * where the MPI has no persistent collectives) and enqueued
 * (coll_gpu_*_enqueue on a stream; device memory only).
 * host: validates this program against Open MPI's own collectives (or, with
 * coll_gpu_stage_host_buffers, the staged path); device: cudaMalloc'ed
 * buffers (exit 77 without a GPU). Prints each failure, exits 1 if any. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_gpu_ext.h"
#include "op_types.h"
#include "test_forms.h"
#include "test_gpu.h"

enum { K_ALLREDUCE, K_ALLREDUCE_IN_PLACE, K_REDUCE, K_RSB, K_KINDS };
enum { F_BLOCKING, F_NONBLOCKING, F_PERSISTENT, F_ENQUEUED, F_FORMS };
static const char *kind_names[K_KINDS] = {"allreduce", "allreduce(in place)", "reduce", "reduce_scatter_block"};
static const char *form_names[F_FORMS] = {"blocking", "nonblocking", "persistent", "enqueued"};

static int rank, size, on_device, failures, checks, skipped;
static cudaStream_t stream;

/* One (type, op, kind, count): host images and the buffers the call names. */
typedef struct {
    const op_type_t *t;
    const op_op_t *o;
    int kind, vsize;
    size_t count, n_in, n_out; /* count as MPI names it; elements in and out on this rank */
    MPI_Aint extent;
    unsigned char *in, *want, *got; /* host: this rank's input, expected output, result */
    void *sbuf, *rbuf;              /* host or device */
} ocase_t;

static void fill_input(ocase_t *c, int r, int g, unsigned char *img)
{
    memset(img, 0, c->n_in * c->extent);
    for (size_t j = 0; j < c->n_in; j++) op_type_value(c->t, c->vsize, r, j, g, img + j * c->extent);
}

/* The reduction of every rank's generation g by Open MPI's host functions;
 * this rank's input of it stays in c->in. */
static void expect(ocase_t *c, int g)
{
    unsigned char *acc = malloc(c->n_in * c->extent), *other = malloc(c->n_in * c->extent);
    fill_input(c, 0, g, acc);
    for (int r = 1; r < size; r++) {
        fill_input(c, r, g, other);
        MPI_Reduce_local(other, acc, (int)c->n_in, c->t->type, c->o->op);
    }
    size_t first = c->kind == K_RSB ? (size_t)rank * c->count : 0;
    memcpy(c->want, acc + first * c->extent, c->n_out * c->extent);
    fill_input(c, rank, g, c->in);
    free(acc);
    free(other);
}

/* Writes generation g's input where the call reads it. */
static void load_input(ocase_t *c, int g)
{
    expect(c, g);
    if (c->kind == K_ALLREDUCE_IN_PLACE) {
        test_mem_put(on_device, c->rbuf, c->in, c->n_in * c->extent);
        return;
    }
    test_mem_put(on_device, c->sbuf, c->in, c->n_in * c->extent);
    memset(c->got, 0xa5, c->n_out * c->extent);
    test_mem_put(on_device, c->rbuf, c->got, c->n_out * c->extent);
}

static const char *case_name(const ocase_t *c, int form, int g, char *buf, size_t len)
{
    snprintf(buf, len, "%s %s %s %s count %zu%s", c->t->name, c->o->name, kind_names[c->kind], form_names[form],
             c->count, g ? " (second start)" : "");
    return buf;
}

static void check_result(ocase_t *c, int form, int g, int rc)
{
    char what[160];
    checks++;
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "rank %d FAIL %s: %s\n", rank, case_name(c, form, g, what, sizeof what), msg);
        failures++;
        return;
    }
    if (c->kind == K_REDUCE && rank != size - 1) return; /* only the root's output is defined */
    test_mem_get(on_device, c->got, c->rbuf, c->n_out * c->extent);
    for (size_t j = 0; j < c->n_out; j++) {
        const unsigned char *w = c->want + j * c->extent, *o = c->got + j * c->extent;
        if (op_type_same(c->t, c->vsize, w, o)) continue;
        fprintf(stderr, "rank %d FAIL %s: element %zu is", rank, case_name(c, form, g, what, sizeof what), j);
        for (MPI_Aint b = 0; b < c->extent; b++) fprintf(stderr, "%s%02x", b ? "" : " 0x", o[c->extent - 1 - b]);
        fprintf(stderr, ", Open MPI's host functions give");
        for (MPI_Aint b = 0; b < c->extent; b++) fprintf(stderr, "%s%02x", b ? "" : " 0x", w[c->extent - 1 - b]);
        fprintf(stderr, " (bytes, most significant first)\n");
        failures++;
        return;
    }
}

static const void *send_of(const ocase_t *c) { return c->kind == K_ALLREDUCE_IN_PLACE ? MPI_IN_PLACE : c->sbuf; }

static int run_blocking(ocase_t *c)
{
    const int n = (int)c->count, root = size - 1;
    MPI_Datatype t = c->t->type;
    MPI_Op op = c->o->op;
    switch (c->kind) {
    case K_REDUCE: return MPI_Reduce(c->sbuf, c->rbuf, n, t, op, root, MPI_COMM_WORLD);
    case K_RSB: return MPI_Reduce_scatter_block(c->sbuf, c->rbuf, n, t, op, MPI_COMM_WORLD);
    default: return MPI_Allreduce(send_of(c), c->rbuf, n, t, op, MPI_COMM_WORLD);
    }
}

/* Starts the nonblocking form (persistent: initialises it) into *req. */
static int start_request(ocase_t *c, int persistent, MPI_Request *req)
{
    const int n = (int)c->count, root = size - 1;
    MPI_Datatype t = c->t->type;
    MPI_Op op = c->o->op;
    MPI_Comm w = MPI_COMM_WORLD;
    if (!persistent) {
        switch (c->kind) {
        case K_REDUCE: return MPI_Ireduce(c->sbuf, c->rbuf, n, t, op, root, w, req);
        case K_RSB: return MPI_Ireduce_scatter_block(c->sbuf, c->rbuf, n, t, op, w, req);
        default: return MPI_Iallreduce(send_of(c), c->rbuf, n, t, op, w, req);
        }
    }
#ifdef P
    switch (c->kind) {
    case K_REDUCE: return P(Reduce)(c->sbuf, c->rbuf, n, t, op, root, w, MPI_INFO_NULL, req);
    case K_RSB: return P(Reduce_scatter_block)(c->sbuf, c->rbuf, n, t, op, w, MPI_INFO_NULL, req);
    default: return P(Allreduce)(send_of(c), c->rbuf, n, t, op, w, MPI_INFO_NULL, req);
    }
#else
    return MPI_ERR_UNSUPPORTED_OPERATION;
#endif
}

static int run_enqueued(ocase_t *c)
{
    const int n = (int)c->count, root = size - 1;
    MPI_Datatype t = c->t->type;
    MPI_Op op = c->o->op;
    int rc;
    switch (c->kind) {
    case K_REDUCE: rc = coll_gpu_reduce_enqueue(c->sbuf, c->rbuf, n, t, op, root, MPI_COMM_WORLD, stream); break;
    case K_RSB: rc = coll_gpu_reduce_scatter_block_enqueue(c->sbuf, c->rbuf, n, t, op, MPI_COMM_WORLD, stream); break;
    default: rc = coll_gpu_allreduce_enqueue(send_of(c), c->rbuf, n, t, op, MPI_COMM_WORLD, stream); break;
    }
    if (cudaStreamSynchronize(stream) != cudaSuccess && rc == MPI_SUCCESS) rc = MPI_ERR_OTHER;
    return rc == MPI_SUCCESS ? coll_gpu_stream_status(MPI_COMM_WORLD) : rc;
}

static void run_form(ocase_t *c, int form)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int rc;
    load_input(c, 0);
    switch (form) {
    case F_BLOCKING: check_result(c, form, 0, run_blocking(c)); return;
    case F_ENQUEUED: check_result(c, form, 0, run_enqueued(c)); return;
    case F_NONBLOCKING:
        rc = start_request(c, 0, &req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        check_result(c, form, 0, rc);
        return;
    }
    rc = start_request(c, 1, &req);
    if (rc != MPI_SUCCESS) {
        check_result(c, form, 0, rc);
        return;
    }
    for (int g = 0; g < 2 && rc == MPI_SUCCESS; g++) {
        if (g) load_input(c, g);
        rc = MPI_Start(&req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        check_result(c, form, g, rc);
    }
    MPI_Request_free(&req);
}

static void run_case(const op_type_t *t, const op_op_t *o, int kind, size_t count, const int *forms)
{
    MPI_Aint lb;
    ocase_t c = {.t = t, .o = o, .kind = kind, .vsize = op_type_vsize(t), .count = count};
    MPI_Type_get_extent(t->type, &lb, &c.extent);
    c.n_in = kind == K_RSB ? count * (size_t)size : count;
    c.n_out = count;
    c.in = malloc(c.n_in * c.extent);
    c.want = malloc(c.n_out * c.extent);
    c.got = malloc(c.n_out * c.extent);
    c.sbuf = test_mem_alloc(on_device, -1, c.n_in * c.extent);
    c.rbuf = test_mem_alloc(on_device, -1, c.n_in * c.extent);
    for (int f = 0; f < F_FORMS; f++)
        if (forms[f]) run_form(&c, f);
    test_mem_free(on_device, c.sbuf);
    test_mem_free(on_device, c.rbuf);
    free(c.in);
    free(c.want);
    free(c.got);
}

/* Whether Open MPI reduces `o` on `t` on host memory (else nothing to hold the collectives to). */
static int host_reduces(const op_type_t *t, const op_op_t *o)
{
    unsigned char a[64] = {0}, b[64] = {0};
    int vsize = op_type_vsize(t), tsize = 0;
    if (vsize == 0 || MPI_Type_size(t->type, &tsize) != MPI_SUCCESS || tsize == 0) return 0;
    op_type_value(t, vsize, 0, 0, 0, a);
    op_type_value(t, vsize, 1, 0, 0, b);
    return MPI_Reduce_local(a, b, 1, t->type, o->op) == MPI_SUCCESS;
}

/* Whether the comma-separated `list` names `form`. */
static int listed(const char *list, const char *form)
{
    const size_t n = strlen(form);
    for (const char *p = list; p != NULL; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, form, n) && (p[n] == ',' || p[n] == '\0')) return 1;
    return 0;
}

static void parse_forms(const char *list, int *forms)
{
    for (int f = 0; f < F_FORMS; f++) forms[f] = list == NULL || listed(list, form_names[f]);
#ifndef P
    forms[F_PERSISTENT] = 0;
#endif
    if (!on_device) forms[F_ENQUEUED] = 0; /* the stream API takes device memory */
}

int main(int argc, char **argv)
{
    int mem_device = 0, one_gpu = 0, forms[F_FORMS];
    const char *form_list = NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mem") && i + 1 < argc) mem_device = !strcmp(argv[++i], "device");
        else if (!strcmp(argv[i], "--one-gpu")) one_gpu = 1;
        else if (!strcmp(argv[i], "--forms") && i + 1 < argc) form_list = argv[++i];
    }
    if (mem_device && test_select_gpu(one_gpu, NULL, NULL) < 0) {
        if (rank == 0) printf("op_types_check: no GPU: skipped\n");
        MPI_Finalize();
        return 77;
    }
    on_device = mem_device;
    parse_forms(form_list, forms);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (forms[F_ENQUEUED] && (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
                              coll_gpu_stream_init(MPI_COMM_WORLD) != MPI_SUCCESS)) {
        fprintf(stderr, "rank %d FAIL: no stream for the enqueued form\n", rank);
        failures++;
        forms[F_ENQUEUED] = 0;
    }
    static const size_t counts[] = {7, 1031};
    for (int t = 0; t < OP_NTYPES; t++)
        for (int o = 0; o < OP_NOPS; o++) {
            if (!(op_ops[o].groups & op_types[t].group)) continue;
            if (!host_reduces(&op_types[t], &op_ops[o])) {
                skipped++;
                continue;
            }
            for (int k = 0; k < K_KINDS; k++)
                for (int n = 0; n < 2; n++) run_case(&op_types[t], &op_ops[o], k, counts[n], forms);
        }
    if (stream) cudaStreamDestroy(stream);
    int rc = test_tally(failures, checks, "op_types_check (%s buffers, %d type/op pairs without a host reduction)",
                        on_device ? "device" : "host", skipped);
    MPI_Finalize();
    return rc;
}
