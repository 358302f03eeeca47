#include "ucx_test_util.h"

#include <chrono>
#include <cstdarg>
#include <cstdlib>
#include <cstring>

#include "gpu_port.h"

namespace ucx_test {

namespace {
int g_failures = 0;
constexpr int kMaxPrintedFailures = 20;

uint32_t mix(uint32_t a)
{
    a ^= a >> 16;
    a *= 0x7feb352dU;
    a ^= a >> 15;
    a *= 0x846ca68bU;
    a ^= a >> 16;
    return a;
}

int oob_allgather(const void *in, void *out, size_t bytes, void *ctx)
{
    MPI_Comm comm = *static_cast<MPI_Comm *>(ctx);
    return MPI_Allgather(in, int(bytes), MPI_BYTE, out, int(bytes), MPI_BYTE, comm) == MPI_SUCCESS ? 0 : 1;
}

MPI_Comm g_world = MPI_COMM_WORLD;

uint16_t half_bits_exact(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    uint16_t sign = uint16_t((b >> 16) & 0x8000);
    if ((b & 0x7fffffff) == 0) return sign;
    uint32_t e = ((b >> 23) & 0xff) - 112;
    return uint16_t(sign | (e << 10) | ((b & 0x7fffff) >> 13));
}

uint16_t bf16_bits_exact(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return uint16_t(b >> 16);
}

void gpu_check(gpuError_t err, const char *what)
{
    if (err == gpuSuccess) return;
    fprintf(stderr, "[rank %d] %s: %s\n", rank(), what, gpuGetErrorString(err));
    MPI_Abort(MPI_COMM_WORLD, 2);
}

struct CopyingReducer {
    bool device;
    uint64_t *calls;
};

gpucoll_status_t copying_reduce(void *inout, const void *in, size_t count, gpucoll_dtype_t dtype, gpucoll_op_t op,
                                void *ctx)
{
    CopyingReducer *r = static_cast<CopyingReducer *>(ctx);
    if (r->calls) ++*r->calls;
    if (!r->device) return gpucoll_ucx_host_reduce(inout, in, count, dtype, op, nullptr);
    size_t bytes = count * gpucoll_dtype_size(dtype);
    std::vector<uint8_t> a(bytes), b(bytes);
    gpu_check(gpuMemcpy(a.data(), inout, bytes, gpuMemcpyDeviceToHost), "reducer download");
    gpu_check(gpuMemcpy(b.data(), in, bytes, gpuMemcpyDeviceToHost), "reducer download");
    gpucoll_status_t st = gpucoll_ucx_host_reduce(a.data(), b.data(), count, dtype, op, nullptr);
    gpu_check(gpuMemcpy(inout, a.data(), bytes, gpuMemcpyHostToDevice), "reducer upload");
    return st;
}
} // namespace

Options parse_options(int argc, char **argv)
{
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> const char * {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s needs a value\n", a.c_str());
                exit(2);
            }
            return argv[++i];
        };
        if (a == "--device") o.device = true;
        else if (a == "--stage-host") o.stage_host = true;
        else if (a == "--quick") o.quick = true;
        else if (a == "--chunk") o.chunk = strtoull(value(), nullptr, 0);
        else if (a == "--depth") o.depth = atoi(value());
        else if (a == "--rcache") o.rcache = strtoull(value(), nullptr, 0);
        else if (a == "--timeout-ms") o.timeout_ms = atoi(value());
        else if (a == "--device-path") {
            std::string v = value();
            o.device_path = v == "direct"   ? GPUCOLL_UCX_DEVICE_PATH_DIRECT
                            : v == "staged" ? GPUCOLL_UCX_DEVICE_PATH_STAGED
                                            : GPUCOLL_UCX_DEVICE_PATH_AUTO;
        }
        else {
            fprintf(stderr,
                    "unknown option %s (known: --device --stage-host --quick --chunk N --depth N --rcache N "
                    "--timeout-ms N --device-path auto|direct|staged)\n",
                    a.c_str());
            exit(2);
        }
    }
    return o;
}

bool init(int *argc, char ***argv, const Options &opt)
{
    MPI_Init(argc, argv);
    if (!opt.device) return true;
    int count = 0;
    if (gpuGetDeviceCount(&count) != gpuSuccess) count = 0;
    int have = count > 0, all = 0;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) return false;
    MPI_Comm node;
    int local = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    gpu_check(gpuSetDevice(local % count), "gpuSetDevice");
    return true;
}

int finish_skip()
{
    if (rank() == 0) printf("SKIP: --device given but not every rank has a GPU\n");
    MPI_Finalize();
    return kSkip;
}

int rank()
{
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int size()
{
    int n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

gpucoll_ucx_config_t make_config(const Options &opt, int default_timeout_ms)
{
    gpucoll_ucx_config_t cfg;
    gpucoll_ucx_config_init(&cfg, nullptr);
    cfg.timeout_ms = opt.timeout_ms > 0 ? opt.timeout_ms : default_timeout_ms;
    if (opt.chunk) cfg.chunk_bytes = opt.chunk;
    if (opt.depth) cfg.pipeline_depth = opt.depth;
    if (opt.rcache) cfg.rcache_max_entries = opt.rcache;
    cfg.stage_host_buffers = opt.stage_host ? 1 : 0;
    cfg.device_path = opt.device_path;
    return cfg;
}

gpucoll_oob_t world_oob()
{
    gpucoll_oob_t oob{};
    oob.rank = rank();
    oob.size = size();
    oob.allgather = oob_allgather;
    oob.ctx = &g_world;
    return oob;
}

gpucoll_ucx_group_t *make_group(const gpucoll_ucx_config_t &cfg)
{
    gpucoll_oob_t oob = world_oob();
    gpucoll_ucx_group_t *g = nullptr;
    gpucoll_status_t st = gpucoll_ucx_group_create(&cfg, &oob, &g);
    if (st != GPUCOLL_SUCCESS) {
        fprintf(stderr, "[rank %d] gpucoll_ucx_group_create: %s: %s\n", rank(), gpucoll_status_name(st),
                gpucoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return g;
}

bool check(bool ok, const char *fmt, ...)
{
    if (ok) return true;
    if (g_failures++ < kMaxPrintedFailures) {
        char text[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof text, fmt, ap);
        va_end(ap);
        fprintf(stderr, "[rank %d] FAIL: %s\n", rank(), text);
    }
    return false;
}

bool check_status(gpucoll_status_t st, const char *what)
{
    return check(st == GPUCOLL_SUCCESS, "%s: %s: %s", what, gpucoll_status_name(st), gpucoll_last_error());
}

int local_failures() { return g_failures; }

int finish(const char *test_name)
{
    int total = 0;
    MPI_Allreduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank() == 0) {
        if (total) printf("FAIL %s: %d failed checks on %d ranks\n", test_name, total, size());
        else printf("PASS %s on %d ranks\n", test_name, size());
        fflush(stdout);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}

/* ---- Buffer ---- */

Buffer::Buffer(size_t bytes, bool device) : bytes_(bytes), device_(device)
{
    size_t alloc = bytes ? bytes : 1;
    if (device) gpu_check(gpuMalloc(&ptr_, alloc), "gpuMalloc");
    else ptr_ = aligned_alloc(64, (alloc + 63) / 64 * 64);
    if (!ptr_) MPI_Abort(MPI_COMM_WORLD, 2);
}

Buffer::~Buffer()
{
    if (device_) (void)gpuFree(ptr_);
    else free(ptr_);
}

void Buffer::upload(const void *host, size_t bytes, size_t offset)
{
    if (!bytes) return;
    char *dst = static_cast<char *>(ptr_) + offset;
    if (device_) gpu_check(gpuMemcpy(dst, host, bytes, gpuMemcpyHostToDevice), "upload");
    else memcpy(dst, host, bytes);
}

void Buffer::download(void *host, size_t bytes, size_t offset) const
{
    if (!bytes) return;
    const char *src = static_cast<const char *>(ptr_) + offset;
    if (device_) gpu_check(gpuMemcpy(host, src, bytes, gpuMemcpyDeviceToHost), "download");
    else memcpy(host, src, bytes);
}

std::vector<uint8_t> Buffer::to_host() const
{
    std::vector<uint8_t> v(bytes_);
    download(v.data(), bytes_);
    return v;
}

void Buffer::fill_byte(uint8_t value)
{
    if (device_) gpu_check(gpuMemset(ptr_, value, bytes_ ? bytes_ : 1), "gpuMemset");
    else memset(ptr_, value, bytes_ ? bytes_ : 1);
}

gpucoll_ucx_reducer_t copying_reducer(bool device, uint64_t *calls)
{
    /* Lives for the whole test; one per call site is plenty. */
    CopyingReducer *ctx = new CopyingReducer{device, calls};
    return gpucoll_ucx_reducer_t{copying_reduce, ctx};
}

/* ---- data ---- */

void fill_input(std::vector<uint8_t> &out, gpucoll_dtype_t dtype, gpucoll_op_t op, int r, size_t count, uint32_t salt)
{
    const size_t es = gpucoll_dtype_size(dtype);
    out.resize(count * es);
    const uint32_t base = mix(salt * 0x9e3779b9U ^ uint32_t(r) * 0x85ebca6bU ^ uint32_t(dtype) << 8 ^ uint32_t(op));
    for (size_t i = 0; i < count; ++i) {
        uint32_t h = mix(base ^ uint32_t(i) ^ uint32_t(i >> 32) * 0x27d4eb2fU);
        uint8_t *e = out.data() + i * es;
        if (!gpucoll_dtype_is_float(dtype)) {
            uint64_t bits = uint64_t(h) << 32 | mix(h + 1);
            if (op == GPUCOLL_OP_PROD) bits |= 1; /* odd: products stay non-zero */
            if (op == GPUCOLL_OP_LAND || op == GPUCOLL_OP_LOR || op == GPUCOLL_OP_LXOR) bits = h % 3 ? h % 5 : 0;
            memcpy(e, &bits, es); /* little-endian: the low bytes */
            continue;
        }
        double v;
        static const double prod_values[4] = {1.0, 2.0, -1.0, 0.5};
        if (op == GPUCOLL_OP_SUM) v = double(int(h % 7) - 3);
        else if (op == GPUCOLL_OP_PROD) v = prod_values[h % 4];
        else v = double(int(h % 199) - 99) + 0.5; /* never zero: fmax(-0, +0) is order-dependent */
        switch (dtype) {
        case GPUCOLL_FLOAT16: { uint16_t b = half_bits_exact(float(v)); memcpy(e, &b, 2); break; }
        case GPUCOLL_BFLOAT16: { uint16_t b = bf16_bits_exact(float(v)); memcpy(e, &b, 2); break; }
        case GPUCOLL_FLOAT32: { float f = float(v); memcpy(e, &f, 4); break; }
        default: memcpy(e, &v, 8); break;
        }
    }
}

std::vector<uint8_t> reference_reduction(gpucoll_dtype_t dtype, gpucoll_op_t op, int n, size_t count, uint32_t salt)
{
    std::vector<uint8_t> acc, next;
    fill_input(acc, dtype, op, 0, count, salt);
    for (int r = 1; r < n; ++r) {
        fill_input(next, dtype, op, r, count, salt);
        gpucoll_ucx_host_reduce(acc.data(), next.data(), count, dtype, op, nullptr);
    }
    return acc;
}

long first_difference(const std::vector<uint8_t> &a, const std::vector<uint8_t> &b, size_t esize)
{
    if (a.size() != b.size()) return 0;
    for (size_t i = 0; i < a.size(); i += esize)
        if (memcmp(&a[i], &b[i], esize) != 0) return long(i / esize);
    return -1;
}

double now_seconds()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace ucx_test
