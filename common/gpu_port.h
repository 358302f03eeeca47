/* The one portability header between CUDA and HIP.
 *
 * Every other source file of coll/gpu is written once against the `gpu*`
 * names below; this is the only file that tests platform macros. Build with
 * COLL_GPU_HIP defined (CMake does it for -DCOLL_GPU_PLATFORM=HIP) to target
 * AMD GPUs through HIP, otherwise CUDA is used. */
#ifndef GPUCOLL_GPU_PORT_H
#define GPUCOLL_GPU_PORT_H

#include <stddef.h>
#include <stdint.h>

/* What gpu_port_stream_device answers where the runtime has no way to tell. */
#define GPU_PORT_DEVICE_UNKNOWN (-2)

#if defined(COLL_GPU_HIP)
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#define GPU_PLATFORM_NAME "HIP"
typedef hipError_t gpuError_t;
typedef hipStream_t gpuStream_t;
typedef hipEvent_t gpuEvent_t;
typedef hipIpcMemHandle_t gpuIpcMemHandle_t;
typedef hipDeviceProp_t gpuDeviceProp_t;
typedef hipFuncAttributes gpuFuncAttributes;
#define gpuSuccess hipSuccess
#define gpuErrorPeerAccessAlreadyEnabled hipErrorPeerAccessAlreadyEnabled
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuPeekAtLastError hipPeekAtLastError
#define gpuErrorLaunchOutOfResources hipErrorLaunchOutOfResources
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define gpuDeviceGetPCIBusId hipDeviceGetPCIBusId
#define gpuDeviceCanAccessPeer hipDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess hipDeviceEnablePeerAccess
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuHostAlloc hipHostMalloc
#define gpuHostAllocPortable hipHostMallocPortable
#define gpuHostAllocMapped hipHostMallocMapped
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuPointerGetAttributes hipPointerGetAttributes
#define gpuFreeHost hipHostFree
#define gpuMemset hipMemset
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemcpy hipMemcpy
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuStreamIsCapturing hipStreamIsCapturing
#define gpuStreamCaptureStatus hipStreamCaptureStatus
#define gpuStreamCaptureStatusNone hipStreamCaptureStatusNone
#define gpuThreadExchangeStreamCaptureMode hipThreadExchangeStreamCaptureMode
#define gpuStreamCaptureMode hipStreamCaptureMode
#define gpuStreamCaptureModeRelaxed hipStreamCaptureModeRelaxed
#define gpuMemcpyDefault hipMemcpyDefault
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamCreateWithPriority hipStreamCreateWithPriority
#define gpuDeviceGetStreamPriorityRange hipDeviceGetStreamPriorityRange
#define gpuStreamDefault hipStreamDefault
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamQuery hipStreamQuery
#define gpuEventQuery hipEventQuery
#define gpuErrorNotReady hipErrorNotReady
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventDestroy hipEventDestroy
#define gpuIpcGetMemHandle hipIpcGetMemHandle
#define gpuIpcOpenMemHandle hipIpcOpenMemHandle
#define gpuIpcCloseMemHandle hipIpcCloseMemHandle
#define gpuIpcMemLazyEnablePeerAccess hipIpcMemLazyEnablePeerAccess
#define gpuLaunchKernel hipLaunchKernel
#define gpuFuncGetAttributes hipFuncGetAttributes
typedef hipGraph_t gpuGraph_t;
typedef hipGraphExec_t gpuGraphExec_t;
typedef hipGraphNode_t gpuGraphNode_t;
typedef hipKernelNodeParams gpuKernelNodeParams;
#define gpuGraphCreate hipGraphCreate
#define gpuGraphAddKernelNode hipGraphAddKernelNode
#define gpuGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define gpuGraphExecKernelNodeSetParams hipGraphExecKernelNodeSetParams
#define gpuGraphLaunch hipGraphLaunch
#define gpuGraphExecDestroy hipGraphExecDestroy
#define gpuGraphDestroy hipGraphDestroy
/* Raises the current device's per-thread stack to at least `bytes`, so that
 * no launch has to grow it (CUDA waits for the running kernels to do so).
 * HIP (5.2) has no stack limit to raise. */
static inline gpuError_t gpu_port_reserve_stack(size_t bytes)
{
    (void)bytes;
    return hipSuccess;
}
/* Whether processes share `device` through NVIDIA's MPS: HIP has no such service. */
static inline int gpu_port_mps_enabled(int device)
{
    (void)device;
    return 0;
}
/* gpu_port_stream_device: see the CUDA one. HIP has the call from 5.6 on. */
#if HIP_VERSION >= 50600000
static inline int gpu_port_stream_device(gpuStream_t stream)
{
    hipDevice_t device = -1;
    if (hipStreamGetDevice(stream, &device) == hipSuccess) return (int)device;
    (void)hipGetLastError();
    return -1;
}
#else
static inline int gpu_port_stream_device(gpuStream_t stream)
{
    (void)stream;
    return GPU_PORT_DEVICE_UNKNOWN;
}
#endif
#define GPU_WARP_SIZE 64
/* HIP's kernel arguments are addressable in place already. */
#define GPU_GRID_CONSTANT
#else
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#define GPU_PLATFORM_NAME "CUDA"
typedef cudaError_t gpuError_t;
typedef cudaStream_t gpuStream_t;
typedef cudaEvent_t gpuEvent_t;
typedef cudaIpcMemHandle_t gpuIpcMemHandle_t;
typedef cudaDeviceProp gpuDeviceProp_t;
typedef cudaFuncAttributes gpuFuncAttributes;
#define gpuSuccess cudaSuccess
#define gpuErrorPeerAccessAlreadyEnabled cudaErrorPeerAccessAlreadyEnabled
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuPeekAtLastError cudaPeekAtLastError
#define gpuErrorLaunchOutOfResources cudaErrorLaunchOutOfResources
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuDeviceGetPCIBusId cudaDeviceGetPCIBusId
#define gpuDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess cudaDeviceEnablePeerAccess
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuHostAlloc cudaHostAlloc
#define gpuHostAllocPortable cudaHostAllocPortable
#define gpuHostAllocMapped cudaHostAllocMapped
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuPointerGetAttributes cudaPointerGetAttributes
#define gpuFreeHost cudaFreeHost
#define gpuMemset cudaMemset
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuStreamIsCapturing cudaStreamIsCapturing
#define gpuStreamCaptureStatus cudaStreamCaptureStatus
#define gpuStreamCaptureStatusNone cudaStreamCaptureStatusNone
#define gpuThreadExchangeStreamCaptureMode cudaThreadExchangeStreamCaptureMode
#define gpuStreamCaptureMode cudaStreamCaptureMode
#define gpuStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
#define gpuMemcpyDefault cudaMemcpyDefault
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamCreateWithPriority cudaStreamCreateWithPriority
#define gpuDeviceGetStreamPriorityRange cudaDeviceGetStreamPriorityRange
#define gpuStreamDefault cudaStreamDefault
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamQuery cudaStreamQuery
#define gpuEventQuery cudaEventQuery
#define gpuErrorNotReady cudaErrorNotReady
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventDestroy cudaEventDestroy
#define gpuIpcGetMemHandle cudaIpcGetMemHandle
#define gpuIpcOpenMemHandle cudaIpcOpenMemHandle
#define gpuIpcCloseMemHandle cudaIpcCloseMemHandle
#define gpuIpcMemLazyEnablePeerAccess cudaIpcMemLazyEnablePeerAccess
#define gpuLaunchKernel cudaLaunchKernel
#define gpuFuncGetAttributes cudaFuncGetAttributes
typedef cudaGraph_t gpuGraph_t;
typedef cudaGraphExec_t gpuGraphExec_t;
typedef cudaGraphNode_t gpuGraphNode_t;
typedef cudaKernelNodeParams gpuKernelNodeParams;
#define gpuGraphCreate cudaGraphCreate
#define gpuGraphAddKernelNode cudaGraphAddKernelNode
#define gpuGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#define gpuGraphExecKernelNodeSetParams cudaGraphExecKernelNodeSetParams
#define gpuGraphLaunch cudaGraphLaunch
#define gpuGraphExecDestroy cudaGraphExecDestroy
#define gpuGraphDestroy cudaGraphDestroy
/* Raises the current device's per-thread stack to at least `bytes`, so that
 * no launch has to grow it (CUDA waits for the running kernels to do so). */
static inline gpuError_t gpu_port_reserve_stack(size_t bytes)
{
    size_t have = 0;
    cudaError_t e = cudaDeviceGetLimit(&have, cudaLimitStackSize);
    if (e == cudaSuccess && have < bytes) e = cudaDeviceSetLimit(cudaLimitStackSize, bytes);
    return e;
}
/* Whether this process's contexts on `device` go through an MPS server,
 * whose clients' kernels run on the GPU at the same time. */
static inline int gpu_port_mps_enabled(int device)
{
    int on = 0;
    return cudaDeviceGetAttribute(&on, cudaDevAttrMpsEnabled, device) == cudaSuccess && on;
}
/* The ordinal of the GPU that `stream` belongs to (the legacy and
 * per-thread default streams: the current GPU's); -1 for what is not a live
 * stream, GPU_PORT_DEVICE_UNKNOWN where the runtime cannot tell. Runtimes
 * before 12.8 have no call for it: the driver tells the stream's context
 * instead (below). */
#if CUDART_VERSION >= 12080
static inline int gpu_port_stream_device(gpuStream_t stream)
{
    int device = -1;
    if (cudaStreamGetDevice(stream, &device) == cudaSuccess) return device;
    (void)cudaGetLastError();
    return -1;
}
#else
#define GPU_PORT_STREAM_DEVICE_FROM_CONTEXT 1
#define gpu_port_stream_device(stream) gpu_port_stream_context_device((void *)(stream))
#endif
#define GPU_WARP_SIZE 32
/* A kernel parameter whose address is taken is otherwise copied into every
 * thread's stack first (PeerArgs, 480 bytes: a 544-byte stack frame per
 * thread, 2.4-3.9 us per call of a 512-thread block, H200). */
#define GPU_GRID_CONSTANT __grid_constant__
#endif

/* ---- device-side helpers (only in GPU compilation units) ---------------- */
#if defined(__CUDACC__) || defined(__HIPCC__)
/* 16-bit floats travel as raw bits; these convert to and from fp32. */
__device__ __forceinline__ float gpu_half_bits_to_float(uint16_t bits)
{
    __half h;
    *reinterpret_cast<uint16_t *>(&h) = bits;
    return __half2float(h);
}
__device__ __forceinline__ uint16_t gpu_float_to_half_bits(float f)
{
    __half h = __float2half_rn(f);
    return *reinterpret_cast<uint16_t *>(&h);
}
/* Nanoseconds from a clock that all SMs of a GPU share: bounds device spins. */
__device__ __forceinline__ uint64_t gpu_global_timer_ns()
{
#if defined(COLL_GPU_HIP)
    /* wall_clock64() only exists from ROCm 5.3 on; the builtins it wraps are
     * older. The counter runs at a constant 100 MHz on CDNA (gfx90a/gfx94x). */
#if __has_builtin(__builtin_readsteadycounter)
    return __builtin_readsteadycounter() * 10;
#else
    return __builtin_amdgcn_s_memrealtime() * 10;
#endif
#else
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#endif
}
/* Release store / acquire load of a flag in (possibly peer) memory, at system scope. */
__device__ __forceinline__ void gpu_store_release_sys(uint64_t *p, uint64_t v)
{
#if defined(COLL_GPU_HIP)
    /* Explicit system scope: the flag may live in a peer GPU's memory. */
    __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
#else
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#endif
}
// Block-wide OR of `pred` that is also a barrier for the block. HIP 5.2's
// __syncthreads_or does not compile for gfx90a (its wave reduction selects
// a gfx10 intrinsic), so HIP goes through shared memory; the first barrier
// keeps thread 0's reset from racing with reads of an earlier call.
__device__ __forceinline__ int gpu_block_any(int pred)
{
#if defined(COLL_GPU_HIP)
    __shared__ int any;
    __syncthreads();
    if (threadIdx.x == 0) any = 0;
    __syncthreads();
    if (pred) atomicOr(&any, 1);
    __syncthreads();
    return any;
#else
    return __syncthreads_or(pred);
#endif
}

__device__ __forceinline__ uint64_t gpu_load_acquire_sys(const uint64_t *p)
{
#if defined(COLL_GPU_HIP)
    return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
#else
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
#endif
}
/* A word in (possibly peer) memory stored or loaded whole and uncached, with
 * no ordering against other accesses: the LL acknowledgements
 * (kernels/ll_lines.cuh), whose writers have finished the reads they
 * acknowledge and whose readers only test them before storing. */
__device__ __forceinline__ void gpu_store_relaxed_sys(uint64_t *p, uint64_t v)
{
#if defined(COLL_GPU_HIP)
    __hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
#else
    asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#endif
}
__device__ __forceinline__ uint64_t gpu_load_relaxed_sys(const uint64_t *p)
{
#if defined(COLL_GPU_HIP)
    return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
#else
    uint64_t v;
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
#endif
}
/* A 16-byte line of the flag-in-data protocol (kernels/ll_lines.cuh), stored
 * to or loaded from (possibly peer) memory without caching. The promise the
 * protocol needs: each aligned 8-byte half is written and read whole, so a
 * reader that sees a half's flag sees that half's data. No ordering between
 * lines and no fence: that is what makes it fast. */
__device__ __forceinline__ void gpu_store_line(uint4 *p, uint4 v)
{
#if defined(COLL_GPU_HIP)
    uint64_t *q = reinterpret_cast<uint64_t *>(p);
    __hip_atomic_store(q, (uint64_t)v.y << 32 | v.x, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
    __hip_atomic_store(q + 1, (uint64_t)v.w << 32 | v.z, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
#else
    asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
#endif
}
__device__ __forceinline__ uint4 gpu_load_line(const uint4 *p)
{
    uint4 v;
#if defined(COLL_GPU_HIP)
    const uint64_t *q = reinterpret_cast<const uint64_t *>(p);
    uint64_t lo = __hip_atomic_load(q, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
    uint64_t hi = __hip_atomic_load(q + 1, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
    v.x = (uint32_t)lo; v.y = (uint32_t)(lo >> 32); v.z = (uint32_t)hi; v.w = (uint32_t)(hi >> 32);
#else
    asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
#endif
    return v;
}
#endif

/* ---- host-side pointer query that never initialises the GPU runtime ----- */
#ifdef __cplusplus
extern "C" {
#endif
typedef enum gpu_port_mem_kind {
    GPU_PORT_MEM_HOST = 0,
    GPU_PORT_MEM_DEVICE = 1,
    GPU_PORT_MEM_MANAGED = 2
} gpu_port_mem_kind_t;

typedef struct gpu_port_ptr_info {
    gpu_port_mem_kind_t kind;
    int device;              /* ordinal of the GPU the memory lives on, -1 for host */
    int ipc_capable;         /* 1 if legacy IPC handles can be taken of it */
    unsigned long long buffer_id; /* unique per allocation for the life of the process */
    void *base;              /* start of the allocation */
    size_t size;             /* size of the allocation */
} gpu_port_ptr_info_t;

/* Classifies `ptr`. Loads the driver lazily (dlopen) and never initialises
 * it: if the process has not initialised the GPU driver, no pointer can be
 * device memory and the answer is "host" at once. Returns 0 on success. */
int gpu_port_query_pointer(const void *ptr, gpu_port_ptr_info_t *info);
/* The same, but only kind and device (one driver call instead of two: this
 * is on every collective's path); the other fields are left zero. */
int gpu_port_query_kind(const void *ptr, gpu_port_ptr_info_t *info);
/* 1 if a GPU driver library could be loaded in this process. */
int gpu_port_driver_present(void);
/* The ordinal of the GPU whose context is current in the calling thread:
 * the application has started using that GPU. -1 if none. Never creates a
 * context. */
int gpu_port_context_device(void);
#ifdef GPU_PORT_STREAM_DEVICE_FROM_CONTEXT
int gpu_port_stream_context_device(void *stream);
#endif
#ifdef __cplusplus
}
#endif

/* ---- implementation: compiled once, in common/gpu_port.c ---------------- */
#if defined(GPU_PORT_IMPLEMENTATION)
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#if defined(COLL_GPU_HIP)
int gpu_port_driver_present(void) { return 1; }
int gpu_port_context_device(void)
{
    int d = -1;
    return hipGetDevice(&d) == hipSuccess ? d : -1;
}
int gpu_port_query_pointer(const void *ptr, gpu_port_ptr_info_t *info);
int gpu_port_query_kind(const void *ptr, gpu_port_ptr_info_t *info) { return gpu_port_query_pointer(ptr, info); }
int gpu_port_query_pointer(const void *ptr, gpu_port_ptr_info_t *info)
{
    hipPointerAttribute_t a;
    memset(info, 0, sizeof *info);
    info->device = -1;
    if (ptr == NULL || hipPointerGetAttributes(&a, ptr) != hipSuccess) {
        (void)hipGetLastError();
        return 0;
    }
    if (a.isManaged) info->kind = GPU_PORT_MEM_MANAGED;
    else if (a.memoryType == hipMemoryTypeDevice) info->kind = GPU_PORT_MEM_DEVICE;
    else return 0;
    info->device = a.device;
    info->ipc_capable = info->kind == GPU_PORT_MEM_DEVICE;
    info->base = (void *)ptr;
    info->buffer_id = (unsigned long long)(uintptr_t)ptr;
    return 0;
}
#else
typedef CUresult (*gpu_port_get_attrs_fn)(unsigned, CUpointer_attribute *, void **, CUdeviceptr);
static gpu_port_get_attrs_fn gpu_port_get_attrs;
static pthread_once_t gpu_port_once = PTHREAD_ONCE_INIT;

typedef CUresult (*gpu_port_ctx_current_fn)(CUcontext *);
typedef CUresult (*gpu_port_ctx_device_fn)(CUdevice *);
static gpu_port_ctx_current_fn gpu_port_ctx_current;
static gpu_port_ctx_device_fn gpu_port_ctx_device;
#ifdef GPU_PORT_STREAM_DEVICE_FROM_CONTEXT
typedef CUresult (*gpu_port_stream_ctx_fn)(CUstream, CUcontext *);
typedef CUresult (*gpu_port_ctx_push_fn)(CUcontext);
typedef CUresult (*gpu_port_ctx_pop_fn)(CUcontext *);
static gpu_port_stream_ctx_fn gpu_port_stream_ctx;
static gpu_port_ctx_push_fn gpu_port_ctx_push;
static gpu_port_ctx_pop_fn gpu_port_ctx_pop;
#endif

static void gpu_port_load_driver(void)
{
    /* Loading libcuda does not initialise it; only the application does that. */
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    gpu_port_get_attrs = (gpu_port_get_attrs_fn)dlsym(lib, "cuPointerGetAttributes");
    gpu_port_ctx_current = (gpu_port_ctx_current_fn)dlsym(lib, "cuCtxGetCurrent");
    gpu_port_ctx_device = (gpu_port_ctx_device_fn)dlsym(lib, "cuCtxGetDevice");
#ifdef GPU_PORT_STREAM_DEVICE_FROM_CONTEXT
    gpu_port_stream_ctx = (gpu_port_stream_ctx_fn)dlsym(lib, "cuStreamGetCtx");
    gpu_port_ctx_push = (gpu_port_ctx_push_fn)dlsym(lib, "cuCtxPushCurrent_v2");
    gpu_port_ctx_pop = (gpu_port_ctx_pop_fn)dlsym(lib, "cuCtxPopCurrent_v2");
#endif
}

#ifdef GPU_PORT_STREAM_DEVICE_FROM_CONTEXT
/* The device of the stream's context, made current for the one query. */
int gpu_port_stream_context_device(void *stream)
{
    CUcontext ctx = NULL, popped = NULL;
    CUdevice dev = -1;
    if (!gpu_port_driver_present() || !gpu_port_stream_ctx || !gpu_port_ctx_push || !gpu_port_ctx_pop ||
        !gpu_port_ctx_device)
        return GPU_PORT_DEVICE_UNKNOWN;
    if (gpu_port_stream_ctx((CUstream)stream, &ctx) != CUDA_SUCCESS || ctx == NULL) return -1;
    if (gpu_port_ctx_push(ctx) != CUDA_SUCCESS) return GPU_PORT_DEVICE_UNKNOWN;
    if (gpu_port_ctx_device(&dev) != CUDA_SUCCESS) dev = GPU_PORT_DEVICE_UNKNOWN;
    gpu_port_ctx_pop(&popped);
    return (int)dev;
}
#endif

int gpu_port_context_device(void)
{
    CUcontext ctx = NULL;
    CUdevice dev = -1;
    if (!gpu_port_driver_present() || !gpu_port_ctx_current || !gpu_port_ctx_device) return -1;
    /* CUDA_ERROR_NOT_INITIALIZED: nobody in this process uses CUDA yet. */
    if (gpu_port_ctx_current(&ctx) != CUDA_SUCCESS || ctx == NULL) return -1;
    return gpu_port_ctx_device(&dev) == CUDA_SUCCESS ? (int)dev : -1;
}

int gpu_port_driver_present(void)
{
    pthread_once(&gpu_port_once, gpu_port_load_driver);
    return gpu_port_get_attrs != NULL;
}

int gpu_port_query_kind(const void *ptr, gpu_port_ptr_info_t *info)
{
    /* Attributes every driver knows. */
    CUpointer_attribute kind_attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    unsigned int mem_type = 0, is_managed = 0;
    int ordinal = -1;
    void *kind_data[] = {&mem_type, &is_managed, &ordinal};

    memset(info, 0, sizeof *info);
    info->device = -1;
    if (ptr == NULL || !gpu_port_driver_present()) return 0;
    /* CUDA_ERROR_NOT_INITIALIZED: nobody in this process uses CUDA yet. */
    if (gpu_port_get_attrs(3, kind_attrs, kind_data, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS) return 0;
    if (is_managed) info->kind = GPU_PORT_MEM_MANAGED;
    else if (mem_type == CU_MEMORYTYPE_DEVICE) info->kind = GPU_PORT_MEM_DEVICE;
    else return 0;
    info->device = ordinal;
    info->ipc_capable = !is_managed;
    return 0;
}

int gpu_port_query_pointer(const void *ptr, gpu_port_ptr_info_t *info)
{
    gpu_port_query_kind(ptr, info);
    if (info->kind == GPU_PORT_MEM_HOST) return 0;
    /* The details, which older drivers may not all answer. */
    CUpointer_attribute detail_attrs[] = {CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                          CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    unsigned long long buffer_id = 0;
    CUdeviceptr base = 0;
    size_t size = 0;
    void *detail_data[] = {&buffer_id, &base, &size};
    if (gpu_port_get_attrs(3, detail_attrs, detail_data, (CUdeviceptr)(uintptr_t)ptr) == CUDA_SUCCESS) {
        info->buffer_id = buffer_id;
        info->base = (void *)(uintptr_t)base;
        info->size = size;
    }
    return 0;
}
#endif
#endif /* GPU_PORT_IMPLEMENTATION */

#endif
