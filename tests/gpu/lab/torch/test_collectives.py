"""Every torch.distributed collective over the NCCL backend, in place and out of place, every
dtype torch sends (fp8: all_gather), against references computed here (issue 6). Values are small integers,
so every result is exact whatever the reduction order. Run with torchrun:
    BATON_EXPECT=baton LD_PRELOAD=<build>/lib/libnccl.so.2 torchrun --nproc_per_node 2 test_collectives.py
"""
import torch
import torch.distributed as dist

from common import check, expect_library, same, setup

rank, world, dev = setup()
expect_library()
R = dist.ReduceOp

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int32, torch.int64]
SIZES = [0, 1, 7, (1 << 20) + 3]


def value(r, n, dtype, op):
    """Rank r's input: small integers (products stay within every dtype)."""
    i = torch.arange(n, dtype=torch.int64)
    v = (1 + (i + r) % 2) if op == R.PRODUCT else ((i % 5) + r + 1)
    return v.to(dtype)


def reduce_ref(n, dtype, op):
    xs = [value(r, n, dtype, op).double() for r in range(world)]
    acc = xs[0].clone()
    for x in xs[1:]:
        if op in (R.SUM, R.AVG):
            acc += x
        elif op == R.PRODUCT:
            acc *= x
        elif op == R.MIN:
            acc = torch.minimum(acc, x)
        else:
            acc = torch.maximum(acc, x)
    if op == R.AVG:
        acc = acc / world if dtype.is_floating_point else torch.div(acc, world, rounding_mode="floor")
    return acc.to(dtype)


def ops_for(dtype):
    ops = [R.SUM, R.PRODUCT, R.MIN, R.MAX]
    if dtype.is_floating_point:
        ops.append(R.AVG)
    return ops


ncases = 0
for dtype in FLOATS + INTS:
    for n in SIZES:
        for op in ops_for(dtype):
            # all_reduce, in place
            t = value(rank, n, dtype, op).to(dev)
            dist.all_reduce(t, op=op)
            same(t, reduce_ref(n, dtype, op), f"all_reduce {dtype} n={n} {op}")
            # reduce to rank 0
            t = value(rank, n, dtype, op).to(dev)
            dist.reduce(t, dst=0, op=op)
            if rank == 0:
                same(t, reduce_ref(n, dtype, op), f"reduce {dtype} n={n} {op}")
            # reduce_scatter_tensor (out of place) and in place (output a view of the input)
            full = torch.cat([value(rank, n, dtype, op)] * world).to(dev)
            out = torch.empty(n, dtype=dtype, device=dev)
            dist.reduce_scatter_tensor(out, full, op=op)
            same(out, reduce_ref(n, dtype, op), f"reduce_scatter_tensor {dtype} n={n} {op}")
            dist.reduce_scatter_tensor(full[rank * n:(rank + 1) * n], full, op=op)
            same(full[rank * n:(rank + 1) * n], reduce_ref(n, dtype, op),
                 f"reduce_scatter_tensor in place {dtype} n={n} {op}")
            ncases += 4
        # copies: broadcast from the last rank, all_gather (list and tensor, in place too)
        t = value(rank, n, dtype, R.SUM).to(dev)
        dist.broadcast(t, src=world - 1)
        same(t, value(world - 1, n, dtype, R.SUM), f"broadcast {dtype} n={n}")
        mine = value(rank, n, dtype, R.SUM).to(dev)
        outs = [torch.empty(n, dtype=dtype, device=dev) for _ in range(world)]
        dist.all_gather(outs, mine)
        for r in range(world):
            same(outs[r], value(r, n, dtype, R.SUM), f"all_gather {dtype} n={n} block {r}")
        big = torch.empty(world * n, dtype=dtype, device=dev)
        dist.all_gather_into_tensor(big, mine)
        for r in range(world):
            same(big[r * n:(r + 1) * n], value(r, n, dtype, R.SUM),
                 f"all_gather_into_tensor {dtype} n={n} block {r}")
        big.fill_(0)  # in place: only our own block holds data before the call
        big.view(world, n)[rank].copy_(mine)
        dist.all_gather_into_tensor(big, big[rank * n:(rank + 1) * n])
        for r in range(world):
            same(big[r * n:(r + 1) * n], value(r, n, dtype, R.SUM),
                 f"all_gather_into_tensor in place {dtype} n={n} block {r}")
        ncases += 4

def scalar_as(factor, dtype):
    """The factor the library reads: torch 2.11 passes a 4-byte float as the host scalar for
    bfloat16 and NCCL reads the datatype's 2 bytes, its low half (0.5 and 2.0 read as 0.0:
    NVIDIA's NCCL gives zeros). Baton reads the same bytes, as a drop-in must."""
    import struct
    if dtype != torch.bfloat16:
        return factor
    low = struct.unpack("<I", struct.pack("<f", factor))[0] & 0xFFFF
    return struct.unpack("<f", struct.pack("<I", low << 16))[0]


# PREMUL_SUM (torch's _make_nccl_premul_sum: ncclRedOpCreatePreMulSum, destroyed right after)
for dtype in FLOATS:
    for factor in (0.5, 2.0):
        t = value(rank, 1000, dtype, R.SUM).to(dev)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(factor))
        ref = sum(value(r, 1000, dtype, R.SUM).double() * scalar_as(factor, dtype)
                  for r in range(world))
        same(t, ref.to(dtype), f"all_reduce PREMUL_SUM {factor} {dtype}", atol=1e-2, rtol=1e-2)
        ncases += 1

# bool (sent as uint8): MAX is "any", MIN is "all"
b = torch.tensor([rank == 0, True, False], device=dev)
dist.all_reduce(b, op=R.MAX)
same(b, torch.tensor([True, True, False]), "all_reduce bool MAX")
b = torch.tensor([rank == 0, True, False], device=dev)
dist.all_reduce(b, op=R.MIN)
same(b, torch.tensor([world == 1, True, False]), "all_reduce bool MIN")

# fp8: copies (all_gather)
for dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
    mine = value(rank, 64, torch.float32, R.SUM).to(dtype).to(dev)
    outs = [torch.empty(64, dtype=dtype, device=dev) for _ in range(world)]
    dist.all_gather(outs, mine)
    for r in range(world):
        same(outs[r].float(), value(r, 64, torch.float32, R.SUM).to(dtype).float(),
             f"all_gather {dtype} block {r}")
    ncases += 1

# all_to_all_single with uneven splits, zeros included: rank r sends (r + d) % 3 elements to d
ins = [(rank + d) % 3 for d in range(world)]
outs_n = [(s + rank) % 3 for s in range(world)]
x = torch.cat([torch.full(((rank + d) % 3,), rank * 100 + d, dtype=torch.int32) for d in range(world)]).to(dev)
y = torch.empty(sum(outs_n), dtype=torch.int32, device=dev)
dist.all_to_all_single(y, x, output_split_sizes=outs_n, input_split_sizes=ins)
ref = torch.cat([torch.full(((s + rank) % 3,), s * 100 + rank, dtype=torch.int32) for s in range(world)])
same(y, ref, "all_to_all_single uneven")
# all_to_all with lists
xs = [torch.full((5,), rank * 10 + d, dtype=torch.float32, device=dev) for d in range(world)]
ys = [torch.empty(5, dtype=torch.float32, device=dev) for _ in range(world)]
dist.all_to_all(ys, xs)
for s in range(world):
    same(ys[s], torch.full((5,), s * 10 + rank, dtype=torch.float32), f"all_to_all from {s}")
ncases += 2

# gather / scatter (grouped send/recv underneath)
g = [torch.empty(4, device=dev) for _ in range(world)] if rank == 0 else None
dist.gather(torch.full((4,), float(rank), device=dev), gather_list=g, dst=0)
if rank == 0:
    for r in range(world):
        same(g[r], torch.full((4,), float(r)), f"gather block {r}")
sc = [torch.full((4,), float(r + 7), device=dev) for r in range(world)] if rank == 0 else None
o = torch.empty(4, device=dev)
dist.scatter(o, scatter_list=sc, src=0)
same(o, torch.full((4,), float(rank + 7)), "scatter")

# point to point: send/recv, isend/irecv, batch_isend_irecv around the ring
nxt, prv = (rank + 1) % world, (rank - 1) % world
if world > 1:
    s = torch.full((1000,), float(rank), device=dev)
    r_ = torch.empty(1000, device=dev)
    if rank % 2 == 0:
        dist.send(s, nxt)
        dist.recv(r_, prv)
    else:
        dist.recv(r_, prv)
        dist.send(s, nxt)
    same(r_, torch.full((1000,), float(prv)), "send/recv")
    r_.fill_(-1.0)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, s, nxt), dist.P2POp(dist.irecv, r_, prv)])
    for q in reqs:
        q.wait()
    same(r_, torch.full((1000,), float(prv)), "batch_isend_irecv")
    ncases += 2

# barrier, then groups: all ranks, and rank 0 alone (others pass NOCOLOR to ncclCommSplit)
dist.barrier()
grp = dist.new_group(list(range(world)))
t = torch.ones(10, device=dev)
dist.all_reduce(t, group=grp)
same(t, torch.full((10,), float(world)), "all_reduce in new_group")
solo = dist.new_group([0])
if rank == 0:
    t = torch.full((3,), 5.0, device=dev)
    dist.all_reduce(t, group=solo)
    same(t, torch.full((3,), 5.0), "all_reduce in a 1-rank group")
dist.barrier()
ncases += 2

torch.cuda.synchronize()
if rank == 0:
    print(f"test_collectives: {ncases} cases passed on {world} ranks", flush=True)
dist.destroy_process_group()
