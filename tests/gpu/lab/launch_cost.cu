/*
 * What the host pays per launch for the size of a kernel's parameters, with and without the
 * programmatic event Baton's launches record (exec/cuda/device/launch.cuh), and per pointer
 * query (runtime against driver). Host time per call, the median of REPS batches of N calls,
 * queued on one stream held by a wait on host memory (released after each batch). A lab program,
 * not a test: nvcc -O2 -arch=sm_90 tests/gpu/lab/launch_cost.cu -lcuda -o launch_cost &&
 * ./launch_cost
 */
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>
#include <vector>

template <int B> struct Params {
    char bytes[B];
};

template <int B> __global__ void empty_kernel(const __grid_constant__ Params<B> p)
{
    if (p.bytes[threadIdx.x % B] == 123 && blockIdx.x == 1 << 30)
        printf("never\n");
}

static const int N = 200, REPS = 21;
static volatile unsigned *gate; /* host-mapped: the stream waits until it is 1 */

/* The stream waits on the gate while a batch is queued, so the host's time is its own (with
 * the GPU running them, a batch of empty kernels took the GPU's time, ~4.5 us each). */
template <typename F> static double per_call_us(F call, cudaStream_t s)
{
    std::vector<double> t;
    for (int r = 0; r < REPS; r++) {
        *gate = 0;
        cuStreamWaitValue32((CUstream)s, (CUdeviceptr)(uintptr_t)gate, 1, CU_STREAM_WAIT_VALUE_GEQ);
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < N; i++)
            call();
        auto t1 = std::chrono::steady_clock::now();
        *gate = 1;
        cudaStreamSynchronize(s);
        t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / N);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

template <int B> static void launches(cudaStream_t s, cudaEvent_t ev)
{
    Params<B> p;
    memset(&p, 0, sizeof(p));
    double plain = per_call_us([&] { empty_kernel<B><<<8, 512, 0, s>>>(p); }, s);
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticEvent;
    at[0].val.programmaticEvent.event = ev;
    at[0].val.programmaticEvent.flags = 0;
    at[0].val.programmaticEvent.triggerAtBlockStart = 0;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(8);
    cfg.blockDim = dim3(512);
    cfg.stream = s;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    double progev = per_call_us([&] { cudaLaunchKernelEx(&cfg, empty_kernel<B>, p); }, s);
    double recorded = per_call_us(
        [&] {
            empty_kernel<B><<<8, 512, 0, s>>>(p);
            cudaEventRecord(ev, s);
        },
        s);
    printf("params %6d B: launch %.3f us, with programmatic event %.3f us, launch + "
           "cudaEventRecord %.3f us\n",
           B, plain, progev, recorded);
}

int main()
{
    cudaSetDevice(0);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaEvent_t ev;
    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    void *g = nullptr;
    cudaHostAlloc(&g, 64, cudaHostAllocMapped);
    gate = (volatile unsigned *)g;
    empty_kernel<8><<<1, 32, 0, s>>>(Params<8>{});
    cudaStreamSynchronize(s);
    launches<8>(s, ev);
    launches<312>(s, ev);
    launches<552>(s, ev);
    launches<1032>(s, ev);
    launches<2048>(s, ev);
    launches<7760>(s, ev);

    void *dev = nullptr, *pinned = nullptr, *managed = nullptr;
    cudaMalloc(&dev, 1 << 20);
    cudaMallocHost(&pinned, 1 << 20);
    cudaMallocManaged(&managed, 1 << 20);
    std::vector<char> pageable(1 << 20);
    struct {
        const char *name;
        void *p;
    } ptrs[] = {
        {"device", dev}, {"pinned", pinned}, {"managed", managed}, {"pageable", pageable.data()}};
    for (auto &q : ptrs) {
        int rt_type = -1, drv_type = -1;
        double rt = per_call_us(
            [&] {
                cudaPointerAttributes a;
                if (cudaPointerGetAttributes(&a, q.p) == cudaSuccess)
                    rt_type = a.type;
                else
                    (void)cudaGetLastError();
            },
            s);
        double drv = per_call_us(
            [&] {
                CUpointer_attribute at[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                             CU_POINTER_ATTRIBUTE_IS_MANAGED};
                unsigned type = 0;
                int managed_flag = 0;
                void *data[2] = {&type, &managed_flag};
                if (cuPointerGetAttributes(2, at, data, (CUdeviceptr)q.p) == CUDA_SUCCESS)
                    drv_type = (int)type + 10 * managed_flag;
            },
            s);
        double one = per_call_us(
            [&] {
                unsigned type = 0;
                (void)cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                            (CUdeviceptr)q.p);
            },
            s);
        printf("pointer %-8s: cudaPointerGetAttributes %.3f us (type %d), "
               "cuPointerGetAttributes(type, managed) %.3f us (type + 10 managed: %d), "
               "cuPointerGetAttribute(type) %.3f us\n",
               q.name, rt, rt_type, drv, drv_type, one);
    }
    printf("done: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    return 0;
}
