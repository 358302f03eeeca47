// Host definitions of the device helpers that kernel_host_shim.h declares
// and that the host-run kernel tests share: the timer, the int and unsigned
// atomics, and the release store of flags and give-up words (acquire loads
// stay with each test: a test whose threads spin on them yields there).
// Definitions, not declarations: include in one file per test program.
#pragma once

#include <chrono>

uint64_t gpu_global_timer_ns()
{
    return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
int atomicExch(int *address, int value) { return __atomic_exchange_n(address, value, __ATOMIC_SEQ_CST); }
int atomicCAS(int *address, int compare, int value)
{
    __atomic_compare_exchange_n(address, &compare, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return compare;
}
unsigned atomicAdd(unsigned *address, unsigned value) { return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST); }
void gpu_store_release_sys(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
void gpu_store_relaxed_sys(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
