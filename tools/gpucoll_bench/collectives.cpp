#include "collectives.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "check.hpp"
#include "coll_gpu_ext.h"
#include "mpi_types.hpp"

// Persistent collectives: MPI-4 names them MPI_<Coll>_init; Open MPI 4.1
// (which reports MPI 3.1) has them as MPIX_<Coll>_init in its pcollreq extension;
// Open MPI 5.0 has MPI_<Coll>_init while it still reports MPI 3.1.
#if MPI_VERSION >= 4 || (defined(OPEN_MPI) && OMPI_MAJOR_VERSION >= 5)
#define BENCH_PERSISTENT(name) MPI_##name##_init
#elif defined(OPEN_MPI)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define BENCH_PERSISTENT(name) MPIX_##name##_init
#endif
#endif

const char *coll_name(Coll c)
{
    switch (c) {
    case Coll::Allreduce: return "allreduce";
    case Coll::ReduceScatter: return "reduce_scatter";
    case Coll::Allgather: return "allgather";
    case Coll::Bcast: return "bcast";
    case Coll::Reduce: return "reduce";
    case Coll::Alltoall: return "alltoall";
    }
    return "?";
}

bool parse_coll(const std::string &s, Coll *out)
{
    static const Coll all[] = {Coll::Allreduce, Coll::ReduceScatter, Coll::Allgather,
                               Coll::Bcast, Coll::Reduce, Coll::Alltoall};
    for (Coll c : all)
        if (s == coll_name(c)) { *out = c; return true; }
    if (s == "reducescatter" || s == "reduce_scatter_block") { *out = Coll::ReduceScatter; return true; }
    if (s == "broadcast") { *out = Coll::Bcast; return true; }
    return false;
}

bool coll_is_reduction(Coll c)
{
    return c == Coll::Allreduce || c == Coll::ReduceScatter || c == Coll::Reduce;
}

bool coll_has_root(Coll c) { return c == Coll::Bcast || c == Coll::Reduce; }

double busbw_factor(Coll c, int n)
{
    switch (c) {
    case Coll::Allreduce: return 2.0 * (n - 1) / n;
    case Coll::ReduceScatter:
    case Coll::Allgather:
    case Coll::Alltoall: return (double)(n - 1) / n;
    case Coll::Bcast:
    case Coll::Reduce: return 1.0;
    }
    return 1.0;
}

const char *mode_name(Mode m)
{
    switch (m) {
    case Mode::Blocking: return "blocking";
    case Mode::Nonblocking: return "nonblocking";
    case Mode::Persistent: return "persistent";
    case Mode::Enqueue: return "enqueue";
    case Mode::Graph: return "graph";
    }
    return "?";
}

bool parse_mode(const std::string &s, Mode *out)
{
    for (Mode m : {Mode::Blocking, Mode::Nonblocking, Mode::Persistent, Mode::Enqueue, Mode::Graph})
        if (s == mode_name(m)) { *out = m; return true; }
    return false;
}

bool mode_on_stream(Mode m) { return m == Mode::Enqueue || m == Mode::Graph; }

bool mpi_persistent_supported()
{
#ifdef BENCH_PERSISTENT
    return true;
#else
    return false;
#endif
}

static bool per_rank_blocks(Coll c)
{
    return c == Coll::ReduceScatter || c == Coll::Allgather || c == Coll::Alltoall;
}

size_t Case::size_bytes() const
{
    size_t elems = per_rank_blocks(coll) ? chunk * nranks : chunk;
    return elems * dtype_size(dtype);
}

size_t Case::send_elems() const
{
    if (inplace || coll == Coll::Bcast) return 0;
    switch (coll) {
    case Coll::Allgather: return chunk;
    case Coll::ReduceScatter:
    case Coll::Alltoall: return chunk * nranks;
    default: return chunk;
    }
}

size_t Case::recv_elems() const
{
    switch (coll) {
    case Coll::ReduceScatter: return inplace ? chunk * nranks : chunk;
    case Coll::Allgather:
    case Coll::Alltoall: return chunk * nranks;
    default: return chunk;
    }
}

size_t Case::out_offset(bool nccl_layout) const
{
    if (coll == Coll::ReduceScatter && inplace && nccl_layout) return (size_t)rank * chunk;
    return 0;
}

size_t Case::out_elems() const
{
    if (coll == Coll::Reduce && rank != root) return 0;
    return (coll == Coll::Allgather || coll == Coll::Alltoall) ? chunk * nranks : chunk;
}

bool make_case(Coll c, DType t, Op op, bool inplace, int root, int nranks, int rank,
               size_t size_bytes, Case *out)
{
    size_t per = dtype_size(t) * (per_rank_blocks(c) ? (size_t)nranks : 1);
    Case k{c, t, op, inplace, root, nranks, rank, size_bytes / per};
    // bcast has only one buffer: it is always "in place"
    if (c == Coll::Bcast) k.inplace = true;
    if (!coll_is_reduction(c)) k.op = Op::Sum;
    *out = k;
    return k.chunk > 0;
}

// Least HBM traffic of one call when all k ranks' buffers are in one GPU's
// memory: every input byte the collective needs must be read at least once
// and every output byte written once, all through that one HBM, so
// (R + W) / (2 x copy rate) bounds the call (a copy of N bytes moves 2N).
// `in` and `out` are one rank's input and output bytes as the bench passes
// them to MPI. bcast reads only the root's buffer and writes the k-1 others;
// reduce writes only the root's output.
struct HbmTraffic {
    Coll coll;
    double (*read)(double in, int k);
    double (*write)(double out, int k);
};
static const HbmTraffic kHbmTraffic[] = {
    //  collective          R (bytes read)                           W (bytes written)
    {Coll::Allreduce,     [](double in, int k) { return k * in; }, [](double out, int k) { return k * out; }},
    {Coll::ReduceScatter, [](double in, int k) { return k * in; }, [](double out, int k) { return k * out; }},
    {Coll::Allgather,     [](double in, int k) { return k * in; }, [](double out, int k) { return k * out; }},
    {Coll::Bcast,         [](double in, int) { return in; },       [](double out, int k) { return (k - 1) * out; }},
    {Coll::Reduce,        [](double in, int k) { return k * in; }, [](double out, int) { return out; }},
    {Coll::Alltoall,      [](double in, int k) { return k * in; }, [](double out, int k) { return k * out; }},
};

double hbm_traffic_bytes(const Case &c)
{
    // one rank in place (bcast always is): the data is already where it
    // belongs and nothing has to move
    if (c.nranks == 1 && c.inplace) return 0;
    const double es = (double)dtype_size(c.dtype), k = c.nranks;
    // per rank: reduce_scatter and alltoall take k blocks in, allgather and
    // alltoall give k blocks out, everything else one block each way
    const double in = es * c.chunk * (c.coll == Coll::ReduceScatter || c.coll == Coll::Alltoall ? k : 1);
    const double out = es * c.chunk * (c.coll == Coll::Allgather || c.coll == Coll::Alltoall ? k : 1);
    for (const HbmTraffic &t : kHbmTraffic)
        if (t.coll == c.coll) return t.read(in, c.nranks) + t.write(out, c.nranks);
    return 0;
}

double input_value(int r, size_t i)
{
    return (double)((7 * (i % 17) + 13 * (size_t)r) % 17) - 8.0;
}

// Fills out[0..len) with input_value(r, i0 + k). Walks the period-17 pattern
// incrementally: the reference of a 1 GiB sweep touches billions of values.
static void input_block(int r, size_t i0, size_t len, double *out)
{
    unsigned k = (unsigned)((7 * (i0 % 17) + 13 * (size_t)r) % 17);
    for (size_t j = 0; j < len; j++) {
        out[j] = (double)k - 8.0;
        k += 7;
        if (k >= 17) k -= 17;
    }
}

static void store_block(DType t, void *buf, size_t at, const double *v, size_t len)
{
    for (size_t j = 0; j < len; j++) dtype_store(t, buf, at + j, v[j]);
}

static const size_t kBlock = 4096;

void fill_input(const Case &c, void *send_host, void *recv_host)
{
    std::vector<double> v(kBlock);
    void *dst = c.inplace ? recv_host : send_host;
    size_t base = 0, len = c.inplace ? c.recv_elems() : c.send_elems();
    if (c.coll == Coll::Allgather) {
        len = c.chunk;          // a rank contributes one block ...
        if (c.inplace) base = (size_t)c.rank * c.chunk;  // ... at its slot, in place
    }
    if (c.coll == Coll::Bcast) {
        if (c.rank != c.root) return;
        len = c.chunk;
    }
    for (size_t i = 0; i < len; i += kBlock) {
        size_t n = len - i < kBlock ? len - i : kBlock;
        input_block(c.rank, i, n, v.data());
        store_block(c.dtype, dst, base + i, v.data(), n);
    }
}

void fill_reference(const Case &c, void *ref)
{
    std::vector<double> acc(kBlock), tmp(kBlock);
    const size_t len = c.out_elems();
    for (size_t i = 0; i < len; i += kBlock) {
        size_t n = len - i < kBlock ? len - i : kBlock;
        switch (c.coll) {
        case Coll::Allreduce:
        case Coll::Reduce:
        case Coll::ReduceScatter: {
            // element k of my result reduces element (offset + k) of every rank
            size_t src = (c.coll == Coll::ReduceScatter ? (size_t)c.rank * c.chunk : 0) + i;
            input_block(0, src, n, acc.data());
            for (int r = 1; r < c.nranks; r++) {
                input_block(r, src, n, tmp.data());
                for (size_t j = 0; j < n; j++) acc[j] = op_apply(c.op, acc[j], tmp[j]);
            }
            break;
        }
        case Coll::Bcast:
            input_block(c.root, i, n, acc.data());
            break;
        case Coll::Allgather:
        case Coll::Alltoall:
            // block j of the output comes from rank j: its block 0 (allgather)
            // or the block it addressed to me (alltoall)
            for (size_t j = 0; j < n; j++) {
                size_t e = i + j, from = e / c.chunk, k = e % c.chunk;
                size_t src = (c.coll == Coll::Alltoall ? (size_t)c.rank * c.chunk : 0) + k;
                acc[j] = input_value((int)from, src);
            }
            break;
        }
        store_block(c.dtype, ref, i, acc.data(), n);
    }
}

size_t compare_output(const Case &c, const void *out, const void *ref, std::string *first_error)
{
    const size_t len = c.out_elems();
    if (std::memcmp(out, ref, len * dtype_size(c.dtype)) == 0) return 0;
    size_t errors = 0;
    // Every partial result is an integer of magnitude <= 8 * nranks: exact in
    // fp16 up to 2048 and in bf16 up to 256. Beyond that, implementations may
    // round partial sums differently, so allow (nranks-1) half-ulp roundings.
    double tol = 0;
    const double bound = 8.0 * c.nranks;
    if (dtype_inexact(c.dtype) && bound > (c.dtype == DType::F16 ? 2048.0 : 256.0))
        tol = dtype_epsilon(c.dtype) * bound * (c.nranks - 1) / 2;
    for (size_t i = 0; i < len; i++) {
        double got = dtype_load(c.dtype, out, i), want = dtype_load(c.dtype, ref, i);
        if (got == want || std::fabs(got - want) <= tol) continue;
        if (errors++ == 0 && first_error) {
            char msg[160];
            std::snprintf(msg, sizeof msg, "rank %d: element %zu is %g, expected %g",
                          c.rank, i, got, want);
            *first_error = msg;
        }
    }
    return errors;
}

// The arguments of every form of a call, with the in-place conventions
// applied once.
struct MpiArgs {
    const void *sb;        // send buffer, or MPI_IN_PLACE
    int scount;            // allgather/alltoall send side: ignored in place
    MPI_Datatype stype;
    void *rb;
    int n;                 // counts fit an int: sizes are capped in options
    MPI_Datatype t;
    MPI_Op op;
    int root;
};

static MpiArgs mpi_args(const Case &c, void *send, void *recv)
{
    MpiArgs a;
    a.t = bench_mpi_datatype(c.dtype);
    a.op = bench_mpi_op(c.dtype, c.op);
    a.n = (int)c.chunk;
    a.rb = recv;
    a.root = c.root;
    a.sb = c.inplace ? MPI_IN_PLACE : send;
    // MPI_IN_PLACE is legal for reduce only at the root; elsewhere the data sits in recv
    if (c.coll == Coll::Reduce && c.inplace && c.rank != c.root) a.sb = recv;
    a.scount = c.inplace ? 0 : a.n;
    a.stype = c.inplace ? MPI_DATATYPE_NULL : a.t;
    return a;
}

void mpi_run(MPI_Comm comm, const Case &c, void *send, void *recv)
{
    const MpiArgs a = mpi_args(c, send, recv);
    switch (c.coll) {
    case Coll::Allreduce: MPI_CHECK(MPI_Allreduce(a.sb, a.rb, a.n, a.t, a.op, comm)); break;
    case Coll::ReduceScatter: MPI_CHECK(MPI_Reduce_scatter_block(a.sb, a.rb, a.n, a.t, a.op, comm)); break;
    case Coll::Allgather: MPI_CHECK(MPI_Allgather(a.sb, a.scount, a.stype, a.rb, a.n, a.t, comm)); break;
    case Coll::Bcast: MPI_CHECK(MPI_Bcast(a.rb, a.n, a.t, a.root, comm)); break;
    case Coll::Reduce: MPI_CHECK(MPI_Reduce(a.sb, a.rb, a.n, a.t, a.op, a.root, comm)); break;
    case Coll::Alltoall: MPI_CHECK(MPI_Alltoall(a.sb, a.scount, a.stype, a.rb, a.n, a.t, comm)); break;
    }
}

void mpi_istart(MPI_Comm comm, const Case &c, void *send, void *recv, MPI_Request *r)
{
    const MpiArgs a = mpi_args(c, send, recv);
    switch (c.coll) {
    case Coll::Allreduce: MPI_CHECK(MPI_Iallreduce(a.sb, a.rb, a.n, a.t, a.op, comm, r)); break;
    case Coll::ReduceScatter: MPI_CHECK(MPI_Ireduce_scatter_block(a.sb, a.rb, a.n, a.t, a.op, comm, r)); break;
    case Coll::Allgather: MPI_CHECK(MPI_Iallgather(a.sb, a.scount, a.stype, a.rb, a.n, a.t, comm, r)); break;
    case Coll::Bcast: MPI_CHECK(MPI_Ibcast(a.rb, a.n, a.t, a.root, comm, r)); break;
    case Coll::Reduce: MPI_CHECK(MPI_Ireduce(a.sb, a.rb, a.n, a.t, a.op, a.root, comm, r)); break;
    case Coll::Alltoall: MPI_CHECK(MPI_Ialltoall(a.sb, a.scount, a.stype, a.rb, a.n, a.t, comm, r)); break;
    }
}

void mpi_persistent_init(MPI_Comm comm, const Case &c, void *send, void *recv, MPI_Request *r)
{
#ifdef BENCH_PERSISTENT
    const MpiArgs a = mpi_args(c, send, recv);
    const MPI_Info i = MPI_INFO_NULL;
    switch (c.coll) {
    case Coll::Allreduce: MPI_CHECK(BENCH_PERSISTENT(Allreduce)(a.sb, a.rb, a.n, a.t, a.op, comm, i, r)); break;
    case Coll::ReduceScatter:
        MPI_CHECK(BENCH_PERSISTENT(Reduce_scatter_block)(a.sb, a.rb, a.n, a.t, a.op, comm, i, r));
        break;
    case Coll::Allgather:
        MPI_CHECK(BENCH_PERSISTENT(Allgather)(a.sb, a.scount, a.stype, a.rb, a.n, a.t, comm, i, r));
        break;
    case Coll::Bcast: MPI_CHECK(BENCH_PERSISTENT(Bcast)(a.rb, a.n, a.t, a.root, comm, i, r)); break;
    case Coll::Reduce: MPI_CHECK(BENCH_PERSISTENT(Reduce)(a.sb, a.rb, a.n, a.t, a.op, a.root, comm, i, r)); break;
    case Coll::Alltoall:
        MPI_CHECK(BENCH_PERSISTENT(Alltoall)(a.sb, a.scount, a.stype, a.rb, a.n, a.t, comm, i, r));
        break;
    }
#else
    (void)comm, (void)c, (void)send, (void)recv, (void)r;
    bench_fatal(__FILE__, __LINE__, "mpi_persistent_init", "no persistent collectives in this MPI");
#endif
}

int mpi_enqueue(MPI_Comm comm, const Case &c, void *send, void *recv, void *stream)
{
    const MpiArgs a = mpi_args(c, send, recv);
    switch (c.coll) {
    case Coll::Allreduce: return coll_gpu_allreduce_enqueue(a.sb, a.rb, a.n, a.t, a.op, comm, stream);
    case Coll::ReduceScatter: return coll_gpu_reduce_scatter_block_enqueue(a.sb, a.rb, a.n, a.t, a.op, comm, stream);
    case Coll::Allgather:
        return coll_gpu_allgather_enqueue(a.sb, a.scount, a.stype, a.rb, a.n, a.t, comm, stream);
    case Coll::Bcast: return coll_gpu_bcast_enqueue(a.rb, a.n, a.t, a.root, comm, stream);
    case Coll::Reduce: return coll_gpu_reduce_enqueue(a.sb, a.rb, a.n, a.t, a.op, a.root, comm, stream);
    case Coll::Alltoall:
        return coll_gpu_alltoall_enqueue(a.sb, a.scount, a.stype, a.rb, a.n, a.t, comm, stream);
    }
    return MPI_ERR_ARG;
}

int mpi_stream_init(MPI_Comm comm) { return coll_gpu_stream_init(comm); }

std::string mpi_enqueue_name(Coll c)
{
    return std::string("coll_gpu_") + (c == Coll::ReduceScatter ? "reduce_scatter_block" : coll_name(c)) + "_enqueue";
}
