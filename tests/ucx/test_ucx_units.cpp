/* Single-process unit tests of the UCX transport's pieces: the host
 * reduction's corner cases (integer wrap-around, logical ops, 16-bit float
 * rounding) and the registration cache's LRU bound. No MPI. */
#include <ucp/api/ucp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpucoll_ucx.h"
#include "registration_cache.h"

namespace {

int failures = 0;

void expect(bool ok, const char *what)
{
    if (!ok) {
        ++failures;
        fprintf(stderr, "FAIL: %s\n", what);
    }
}

template <typename T> T reduce1(gpucoll_dtype_t dt, gpucoll_op_t op, T a, T b)
{
    gpucoll_ucx_host_reduce(&a, &b, 1, dt, op, nullptr);
    return a;
}

void test_host_reduce()
{
    expect(reduce1<int8_t>(GPUCOLL_INT8, GPUCOLL_OP_SUM, 127, 1) == -128, "int8 sum wraps");
    expect(reduce1<int16_t>(GPUCOLL_INT16, GPUCOLL_OP_PROD, 300, 300) == int16_t(90000 & 0xffff), "int16 prod wraps");
    expect(reduce1<uint16_t>(GPUCOLL_UINT16, GPUCOLL_OP_PROD, 65535, 65535) == 1, "uint16 prod in unsigned");
    expect(reduce1<int64_t>(GPUCOLL_INT64, GPUCOLL_OP_MIN, -5, 3) == -5, "int64 min");
    expect(reduce1<uint32_t>(GPUCOLL_UINT32, GPUCOLL_OP_MAX, 0xffffffffu, 3) == 0xffffffffu, "uint32 max");
    expect(reduce1<int32_t>(GPUCOLL_INT32, GPUCOLL_OP_LAND, 7, 2) == 1, "land gives 1");
    expect(reduce1<int32_t>(GPUCOLL_INT32, GPUCOLL_OP_LXOR, 7, 2) == 0, "lxor of two trues");
    expect(reduce1<uint8_t>(GPUCOLL_UINT8, GPUCOLL_OP_BXOR, 0xf0, 0x3c) == 0xcc, "bxor");
    expect(reduce1<double>(GPUCOLL_FLOAT64, GPUCOLL_OP_MAX, -1.0, 2.5) == 2.5, "double max");
    /* fp16: 1 + 2^-11 is a tie between 1 and 1 + 2^-10: even mantissa wins. */
    expect(reduce1<uint16_t>(GPUCOLL_FLOAT16, GPUCOLL_OP_SUM, 0x3c00, 0x1000) == 0x3c00, "fp16 tie to even");
    /* 1 + 2^-10 + 2^-11 ties between odd 0x3c01 and even 0x3c02. */
    expect(reduce1<uint16_t>(GPUCOLL_FLOAT16, GPUCOLL_OP_SUM, 0x3c01, 0x1000) == 0x3c02, "fp16 tie up to even");
    expect(reduce1<uint16_t>(GPUCOLL_FLOAT16, GPUCOLL_OP_SUM, 0x7bff, 0x7bff) == 0x7c00, "fp16 overflow to inf");
    expect(reduce1<uint16_t>(GPUCOLL_FLOAT16, GPUCOLL_OP_PROD, 0x0001, 0x3800) == 0x0000, "fp16 subnormal tie to 0");
    expect(reduce1<uint16_t>(GPUCOLL_FLOAT16, GPUCOLL_OP_SUM, 0x0001, 0x0001) == 0x0002, "fp16 subnormal sum");
    expect(reduce1<uint16_t>(GPUCOLL_FLOAT16, GPUCOLL_OP_MAX, 0xc000, 0x3c00) == 0x3c00, "fp16 max -2 vs 1");
    /* bf16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7. */
    expect(reduce1<uint16_t>(GPUCOLL_BFLOAT16, GPUCOLL_OP_SUM, 0x3f80, 0x3b80) == 0x3f80, "bf16 tie to even");
    expect(reduce1<uint16_t>(GPUCOLL_BFLOAT16, GPUCOLL_OP_SUM, 0x3f80, 0x3f80) == 0x4000, "bf16 1 + 1");
    int8_t a = 1, b = 1;
    expect(gpucoll_ucx_host_reduce(&a, &b, 1, GPUCOLL_FLOAT32, GPUCOLL_OP_BAND, nullptr) == GPUCOLL_ERR_INVALID,
           "band on float is invalid");
}

void test_registration_cache()
{
    ucp_config_t *config = nullptr;
    ucp_params_t params = {};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    ucp_context_h context = nullptr;
    if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK || ucp_init(&params, config, &context) != UCS_OK) {
        expect(false, "ucp_init");
        return;
    }
    ucp_config_release(config);
    std::vector<std::vector<char>> buffers(4, std::vector<char>(8192));
    {
        gpucoll_ucx::RegistrationCache cache(context, 2);
        auto key = [&](int i) {
            gpucoll_ucx::RegistrationKey k;
            k.base = reinterpret_cast<uintptr_t>(buffers[i].data());
            k.length = buffers[i].size();
            return k;
        };
        gpucoll_ucx::RegistrationCache::Ref r0, r1, r2, r0again;
        expect(cache.acquire(key(0), &r0) == GPUCOLL_SUCCESS && r0.memh(), "map 0");
        expect(cache.acquire(key(1), &r1) == GPUCOLL_SUCCESS, "map 1");
        expect(cache.acquire(key(0), &r0again) == GPUCOLL_SUCCESS && r0again.memh() == r0.memh(), "hit 0");
        expect(cache.acquire(key(2), &r2) == GPUCOLL_SUCCESS, "map 2 while all are in use");
        expect(cache.size() == 3 && cache.stats().evictions == 0, "entries in use are never evicted");
        cache.release(&r1); /* 1 is now unused and least recently used */
        expect(cache.size() == 2 && cache.stats().evictions == 1, "release evicts down to the bound");
        cache.release(&r0);
        cache.release(&r0again);
        cache.release(&r2);
        expect(cache.size() == 2, "bound holds");
        gpucoll_ucx::RegistrationCache::Ref again;
        expect(cache.acquire(key(2), &again) == GPUCOLL_SUCCESS && cache.stats().hits == 2, "2 still cached");
        cache.release(&again);
        expect(cache.invalidate(key(2).base) == 0 && cache.size() == 1, "invalidate unmaps");
        expect(cache.stats().misses == 3, "three mappings in all");
    } /* the destructor unmaps the rest before the context goes */
    ucp_cleanup(context);
}

} // namespace

int main()
{
    test_host_reduce();
    test_registration_cache();
    if (failures) {
        printf("FAIL ucx units: %d failed checks\n", failures);
        return 1;
    }
    printf("PASS ucx units\n");
    return 0;
}
