/*
 * The CUDA executor's kernels: one block per lane (a channel, or a point-to-point peer),
 * each running its works' steps in order. A step is the same primitive the host executor
 * runs (coll/work.h), computed by the same schedule functions (coll/algo.h, compiled for
 * the device), over connectors whose FIFOs live in GPU memory (exec/cuda/fifos.c: the
 * receiver's buffer, written by the sender through NVLink or PCIe peer mappings).
 *
 * A step, Simple protocol:
 *   thread 0 waits: each receive connector's tail >= step + 1 (acquire, system scope), each
 *            send connector's head + NSTEPS > step (a free slot in the peer's FIFO)
 *   barrier
 *   all threads: value = fold(acc, recv slots, src * pre) then post; written to the user's
 *            output and to each send slot, 16 bytes per access when every pointer allows
 *   barrier
 *   thread 0: fence.acq_rel.sys, then for each send connector tail = step + 1 (the data
 *            before the flag), for each receive connector head = step + 1 (we are done
 *            reading the slot)
 * Receive slots are read with ld.global.cg (L2, not L1): the same slot comes back every
 * NSTEPS steps with new data written by another GPU, which L1 would not see.
 * Every wait watches the communicator's abort flag (host-mapped) and a deadline
 * (TIMEOUT): a dead peer or ncclCommAbort ends the kernel with an error, never a hang.
 *
 * The device code is in device/, one header per concern, in the order it builds up:
 *   sync.cuh         flag loads/stores, the clock, the stall check, wait_ge, the block's
 *                    current collective (for reports)
 *   arith.cuh        element types and arithmetic: Num<T>, fold, Scale, pre_mul, word forms
 *   simple.cuh       the Simple step: StepIO, 16-byte packs, step_wait/step_post/simple_io
 *   ll.cuh           LL lines and the LL step
 *   direct_conn.cuh  the one-shot's connector state per work and per chunk
 *   ll128.cuh        LL128 lines, the LL128 step and a one-shot chunk's LL128 batches
 *   direct.cuh       the one-pass one-shot AllReduce over LL and LL128 lines
 *   kernels.cuh      the kernels (bt_cuda_kernel, bt_cuda_direct_kernel), block_work and the
 *                    launch of one dtype's kernels (launch_typed)
 * A folder of its own keeps the pieces that only nvcc reads apart from the module's host
 * files (cuda_exec.c, enqueue.c, fifos.c, host_conns.c, the headers the rest of the library
 * includes), and out of the exec/cuda/*.cu glob in src/CMakeLists.txt: the headers are
 * included, never compiled alone.
 * Their functions have internal linkage (static), so every unit that includes them has its
 * own copy and nothing is defined twice at link time; the kernel templates are instantiated
 * for each dtype in one unit only.
 *
 * The units: kernel_<dtypes>.cu each instantiate the kernels of a few dtypes (kernel.h), so
 * that the build compiles them in parallel; which dtypes share a unit, and in which order, is
 * measured (kernel_i32_f16_bf16_e4m3.cu). With BATON_CUDA_RDC=ON they are relocatable
 * device code, device-linked once (src/CMakeLists.txt says why it is off by default). This one only
 * picks the launcher of the works' dtype.
 */
#include "coll/redop.h"
#include "exec/cuda/kargs.h"
#include "exec/cuda/kernel.h"

extern "C" int bt_cuda_kernel_launch(const struct bt_cuda_kargs *args, int nblocks, void *stream,
                                     void *done_event)
{
    switch (args->h.nworks > 0 ? args->works[0].redop.dtype : BT_UINT8) {
    case BT_INT8:
        return bt_cuda_kernel_launch_int8(args, nblocks, stream, done_event);
    case BT_UINT8:
        return bt_cuda_kernel_launch_uint8(args, nblocks, stream, done_event);
    case BT_INT32:
        return bt_cuda_kernel_launch_int32(args, nblocks, stream, done_event);
    case BT_UINT32:
        return bt_cuda_kernel_launch_uint32(args, nblocks, stream, done_event);
    case BT_INT64:
        return bt_cuda_kernel_launch_int64(args, nblocks, stream, done_event);
    case BT_UINT64:
        return bt_cuda_kernel_launch_uint64(args, nblocks, stream, done_event);
    case BT_FLOAT16:
        return bt_cuda_kernel_launch_float16(args, nblocks, stream, done_event);
    case BT_FLOAT32:
        return bt_cuda_kernel_launch_float32(args, nblocks, stream, done_event);
    case BT_FLOAT64:
        return bt_cuda_kernel_launch_float64(args, nblocks, stream, done_event);
    case BT_BFLOAT16:
        return bt_cuda_kernel_launch_bfloat16(args, nblocks, stream, done_event);
    case BT_FP8E4M3:
        return bt_cuda_kernel_launch_fp8e4m3(args, nblocks, stream, done_event);
    default:
        return bt_cuda_kernel_launch_fp8e5m2(args, nblocks, stream, done_event);
    }
}
