/*
 * The pieces of an LL128 one-shot AllReduce on one GPU, per block: what a block of 512
 * threads moves when it only sends lines (loads of its input, 16-byte volatile stores with the
 * flag in lane 7), when it only receives lines that are already there (volatile loads, flag
 * check, fold with its input, stores), and when two "ranks" (two halves of the grid) exchange
 * lines through each other's FIFO in the three orders a kernel can take: per batch send then
 * receive, a chunk sent then received, or chunk i sent while chunk i - 1 is received. All in
 * one launch, so no host or launch effect is in the figures beyond one launch (the last row).
 * It measured why Baton's one-shot LL128 kernel moved 4-5 GB/s a block where the exchange
 * pattern allows 9-10 (bench/results/gpu-1xh200-ll128-2026-12-01.md).
 *
 *   baton-ll128-patterns [BYTES_PER_BLOCK [BLOCKS]]     (default 256 KB, 32 blocks a side)
 */
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cuda_runtime.h>
#define LINE 128
#define PAY 120
__device__ __forceinline__ void st_v(char *p, uint64_t a, uint64_t b, int mode)
{
    if (mode == 0)
        asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b)
                     : "memory");
    else if (mode == 1)
        asm volatile("st.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
    else
        asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b)
                     : "memory");
}
__device__ __forceinline__ void ld_v(const char *p, uint64_t *a, uint64_t *b, int mode)
{
    if (mode == 0)
        asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                     : "=l"(*a), "=l"(*b)
                     : "l"(p)
                     : "memory");
    else
        asm volatile("ld.global.cg.v2.u64 {%0, %1}, [%2];"
                     : "=l"(*a), "=l"(*b)
                     : "l"(p)
                     : "memory");
}
// lines [l0, l0 + nl) of a block's region, warp-rounds of 4 lines, batches of B rounds:
// send_lines loads the input and stores flagged lines (flavour: st_v), recv_lines waits for
// each line's flag (flavour: ld_v), folds it with the input and stores the sum
template <int B>
__device__ __forceinline__ void send_lines(char *sendf, const char *src, size_t l0, size_t nl,
                                           uint64_t flag, int flavour)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5, j = lane & 7,
        g = lane >> 3;
    size_t nr = (nl + nw * 4 - 1) / (nw * 4);
    for (size_t q0 = 0; q0 < nr; q0 += B) {
        uint64_t o0[B], o1[B];
#pragma unroll
        for (int k = 0; k < B; k++) {
            size_t line = l0 + ((q0 + k) * nw + warp) * 4 + g;
            if (line < l0 + nl) {
                o0[k] = *(const uint64_t *)(src + line * PAY + 16 * j);
                o1[k] = j < 7 ? *(const uint64_t *)(src + line * PAY + 16 * j + 8) : 0;
            }
        }
#pragma unroll
        for (int k = 0; k < B; k++) {
            size_t line = l0 + ((q0 + k) * nw + warp) * 4 + g;
            if (line < l0 + nl)
                st_v(sendf + line * LINE + 16 * j, o0[k], j < 7 ? o1[k] : flag, flavour);
        }
    }
}
template <int B>
__device__ __forceinline__ void recv_lines(const char *recvf, const char *src, char *dst, size_t l0,
                                           size_t nl, uint64_t flag, int flavour)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5, j = lane & 7,
        g = lane >> 3;
    size_t nr = (nl + nw * 4 - 1) / (nw * 4);
    for (size_t q0 = 0; q0 < nr; q0 += B) {
        uint64_t a[B], b[B], o0[B], o1[B];
#pragma unroll
        for (int k = 0; k < B; k++) {
            size_t line = l0 + ((q0 + k) * nw + warp) * 4 + g;
            a[k] = b[k] = 0;
            if (line < l0 + nl) {
                ld_v(recvf + line * LINE + 16 * j, &a[k], &b[k], flavour);
                o0[k] = *(const uint64_t *)(src + line * PAY + 16 * j);
                o1[k] = j < 7 ? *(const uint64_t *)(src + line * PAY + 16 * j + 8) : 0;
            }
        }
#pragma unroll
        for (int k = 0; k < B; k++) {
            size_t line = l0 + ((q0 + k) * nw + warp) * 4 + g;
            while (__any_sync(0xffffffffu, line < l0 + nl && j == 7 && b[k] != flag))
                ld_v(recvf + line * LINE + 16 * j, &a[k], &b[k], flavour);
            if (line < l0 + nl) {
                float2 x = *(float2 *)&a[k], y = *(float2 *)&o0[k];
                x.x += y.x;
                x.y += y.y;
                *(float2 *)(dst + line * PAY + 16 * j) = x;
                if (j < 7) {
                    float2 u = *(float2 *)&b[k], v = *(float2 *)&o1[k];
                    u.x += v.x;
                    u.y += v.y;
                    *(float2 *)(dst + line * PAY + 16 * j + 8) = u;
                }
            }
        }
    }
}
// each block: nlines lines of its own region
template <int B>
__global__ void k_send(char *fifo, const char *src, size_t nlines, int flavour, uint64_t flag)
{
    send_lines<B>(fifo + (size_t)blockIdx.x * nlines * LINE,
                  src + (size_t)blockIdx.x * nlines * PAY, 0, nlines, flag, flavour);
}
template <int B>
__global__ void k_recv(const char *fifo, const char *src, char *dst, size_t nlines, int flavour,
                       uint64_t flag)
{
    recv_lines<B>(fifo + (size_t)blockIdx.x * nlines * LINE,
                  src + (size_t)blockIdx.x * nlines * PAY, dst + (size_t)blockIdx.x * nlines * PAY,
                  0, nlines, flag, flavour);
}
// plain 16-byte copy per block, for reference
__global__ void k_copy(uint4 *d, const uint4 *s, size_t n)
{
    d += blockIdx.x * n;
    s += blockIdx.x * n;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x * 4) {
        uint4 v[4];
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (i + u * blockDim.x < n)
                v[u] = s[i + u * blockDim.x];
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (i + u * blockDim.x < n)
                d[i + u * blockDim.x] = v[u];
    }
}
// both "ranks" in one launch: block b < nb is rank 0's channel b, b + nb rank 1's; each sends
// its lines into the other's FIFO and folds the other's lines with its own input, in chunks of `cl`
// lines with a block barrier between chunks (Baton's shape); mode 0: per batch send then receive;
// 1: chunk sent then received; 2: send chunk i, receive i-1
template <int B>
__global__ void k_chunked(char *fifo0, char *fifo1, const char *src, char *dst, size_t nlines,
                          size_t cl, uint64_t flag, int mode)
{
    int nb = gridDim.x / 2, rank = blockIdx.x >= nb, ch = blockIdx.x % nb;
    char *sendf = (rank ? fifo0 : fifo1) + (size_t)ch * nlines * LINE;
    const char *recvf = (rank ? fifo1 : fifo0) + (size_t)ch * nlines * LINE;
    src += (size_t)blockIdx.x * nlines * PAY;
    dst += (size_t)blockIdx.x * nlines * PAY;
    size_t nch = (nlines + cl - 1) / cl;
    if (mode == 0) {
        for (size_t c = 0; c < nch; c++) {
            size_t l0 = c * cl, nl = nlines - l0 < cl ? nlines - l0 : cl;
            int nw = blockDim.x >> 5;
            size_t nr = (nl + nw * 4 - 1) / (nw * 4);
            // per batch: send B rounds then receive them
            for (size_t q0 = 0; q0 < nr; q0 += B) {
                size_t a0 = l0 + q0 * nw * 4, n0 = (size_t)B * nw * 4;
                if (a0 + n0 > l0 + nl)
                    n0 = l0 + nl - a0;
                send_lines<B>(sendf, src, a0, n0, flag, 0);
                recv_lines<B>(recvf, src, dst, a0, n0, flag, 0);
            }
            __syncthreads();
            __syncthreads();
        }
    } else {
        size_t lag = mode == 1 ? 0 : 1;
        for (size_t i = 0; i < nch + lag; i++) {
            if (i < nch) {
                size_t l0 = i * cl, nl = nlines - l0 < cl ? nlines - l0 : cl;
                send_lines<B>(sendf, src, l0, nl, flag, 0);
            }
            if (i >= lag) {
                size_t l0 = (i - lag) * cl, nl = nlines - l0 < cl ? nlines - l0 : cl;
                recv_lines<B>(recvf, src, dst, l0, nl, flag, 0);
            }
            __syncthreads();
            __syncthreads();
        }
    }
}
int main(int argc, char **argv)
{
    const size_t per = argc > 1 ? strtoull(argv[1], NULL, 0) : 256 * 1024; /* payload a block */
    const int nb = argc > 2 ? atoi(argv[2]) : 32;
    size_t nlines = per / PAY;
    char *fifo, *f1, *src, *dst;
    if (cudaMalloc(&fifo, nb * nlines * LINE + 4096) ||
        cudaMalloc(&f1, nb * nlines * LINE + 4096) || cudaMalloc(&src, 2 * nb * per + 4096) ||
        cudaMalloc(&dst, 2 * nb * per + 4096)) {
        fprintf(stderr, "baton-ll128-patterns: cudaMalloc failed\n");
        return 1;
    }
    cudaMemset(src, 0, 2 * nb * per);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    printf("# %zu bytes of payload per block, %d blocks a side, 512 threads; time per launch\n",
           per, nb);
    auto run = [&](const char *name, auto launch) {
        for (int i = 0; i < 3; i++)
            launch(i + 1);
        cudaEventRecord(e0);
        const int R = 20;
        for (int i = 0; i < R; i++)
            launch(i + 100);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        double us = ms * 1000 / R;
        int err = (int)cudaGetLastError();
        printf("%-36s %8.2f us  %6.2f GB/s a block%s\n", name, us, per / us / 1e3,
               err ? "  (CUDA error)" : "");
    };
    const char *st_names[] = {"st.volatile", "st.global (weak)", "st.relaxed.sys"};
    for (int mode = 0; mode < 3; mode++) {
        char n[64];
        snprintf(n, 64, "send only, %s", st_names[mode]);
        run(n, [&](int it) { k_send<4><<<nb, 512>>>(fifo, src, nlines, mode, it); });
    }
    k_send<4><<<nb, 512>>>(fifo, src, nlines, 0, 7);
    run("receive (lines there), ld.volatile",
        [&](int) { k_recv<4><<<nb, 512>>>(fifo, src, dst, nlines, 0, 7); });
    run("receive (lines there), ld.cg",
        [&](int) { k_recv<4><<<nb, 512>>>(fifo, src, dst, nlines, 1, 7); });
    const char *pair_names[] = {"exchange: per batch send, receive",
                                "exchange: chunk sent, received",
                                "exchange: send i, receive i - 1"};
    for (int mode = 0; mode < 3; mode++)
        run(pair_names[mode], [&](int it) {
            k_chunked<4><<<2 * nb, 512>>>(fifo, f1, src, dst, nlines, 512, it, mode);
        });
    run("copy 16 B (reference)",
        [&](int) { k_copy<<<nb, 512>>>((uint4 *)dst, (const uint4 *)src, per / 16); });
    run("empty launch", [&](int it) { k_send<4><<<nb, 512>>>(fifo, src, 0, 0, it); });
    return 0;
}
