#!/usr/bin/env python3
"""Data-parallel training with mpi4py + PyTorch, gradients averaged by MPI on
GPU memory (what Horovod does with its MPI backend).

    mpirun -n 2 python3 train_torch.py [--steps 40] [--bucket-kb 16] [--cpu]

Every rank builds the same MLP, takes its slice of a synthetic deterministic
classification data set, and after each backward pass averages the gradients
with comm.Allreduce(MPI.IN_PLACE, flat) on CUDA tensors: gradients are packed
into a few flat buckets first (Horovod's fusion buffer, DDP's buckets), so
there are a few large allreduces per step instead of one per tensor.

Checks (exit 1 when one fails): every rank ends with the same weights; the
loss curve and final weights equal those of a single-process run on the full
batch (computed here on rank 0), within float32 tolerance; the loss went down.
Exits 77 (skipped) without torch, mpi4py >= 3.1 or a GPU; --cpu runs on CPU
tensors instead (MPI then gets NumPy views of them).
"""
import argparse
import sys

SKIPPED = 77


def skip(why):
    print(f"train_torch: skipped: {why}", flush=True)
    sys.exit(SKIPPED)


try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    skip(f"no torch ({e})")
try:
    import mpi4py
    from mpi4py import MPI  # MPI_Init happens here, before CUDA is touched
except ImportError as e:
    skip(f"no mpi4py ({e})")

FEATURES, HIDDEN, CLASSES = 32, 64, 4


def mpi_buf(t):
    """What mpi4py gets for tensor t. A CUDA tensor goes as is: mpi4py reads
    its DLPack or __cuda_array_interface__ and gives MPI the device pointer.
    A CPU tensor goes as a NumPy view of the same memory."""
    return t if t.is_cuda else t.numpy()


def ready(t):
    """MPI reads memory directly: wait for the kernels that write t."""
    if t.is_cuda:
        torch.cuda.current_stream(t.device).synchronize()


class GradientBuckets:
    """Averages gradients over ranks: copy into flat buckets of about
    bucket_bytes, one in-place MPI_Allreduce (sum) per bucket, divide by the
    number of ranks, copy back."""

    def __init__(self, params, bucket_bytes, comm):
        self.comm = comm
        self.buckets = []
        current, nbytes = [], 0
        # reverse order like DDP: the last layers' gradients are ready first
        for p in reversed(list(params)):
            size = p.numel() * p.element_size()
            if current and nbytes + size > bucket_bytes:
                self.buckets.append(current)
                current, nbytes = [], 0
            current.append(p)
            nbytes += size
        if current:
            self.buckets.append(current)
        self.flats = [torch.empty(sum(p.numel() for p in b), dtype=b[0].dtype, device=b[0].device)
                      for b in self.buckets]

    def allreduce_mean(self):
        nranks = self.comm.Get_size()
        for params, flat in zip(self.buckets, self.flats):
            offset = 0
            for p in params:
                flat[offset:offset + p.numel()].copy_(p.grad.reshape(-1))
                offset += p.numel()
            ready(flat)
            self.comm.Allreduce(MPI.IN_PLACE, mpi_buf(flat))
            flat.div_(nranks)
            offset = 0
            for p in params:
                p.grad.copy_(flat[offset:offset + p.numel()].view_as(p.grad))
                offset += p.numel()


def make_data(n, device):
    """Deterministic data: a random tanh teacher labels Gaussian inputs."""
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(n, FEATURES, generator=g)
    teacher = torch.randn(FEATURES, CLASSES, generator=g)
    y = (torch.tanh(x @ teacher) + 0.1 * torch.randn(n, CLASSES, generator=g)).argmax(dim=1)
    return x.to(device), y.to(device)


def make_model(device):
    torch.manual_seed(0)  # the same initial weights on every rank
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, CLASSES)).to(device)


def train(model, x, y, steps, lr, average_gradients=None):
    """Full-batch SGD with momentum; returns the loss of every step."""
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if average_gradients:
            average_gradients()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses)


def flat_weights(model):
    return torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--samples", type=int, default=960, help="global batch (rounded to a multiple of ranks)")
    ap.add_argument("--bucket-kb", type=float, default=16, help="gradient bucket size")
    ap.add_argument("--cpu", action="store_true", help="CPU tensors (no GPU needed)")
    args = ap.parse_args()

    comm = MPI.COMM_WORLD
    rank, nranks = comm.Get_rank(), comm.Get_size()
    if tuple(int(v) for v in mpi4py.__version__.split(".")[:2]) < (3, 1):
        skip(f"mpi4py {mpi4py.__version__} cannot pass GPU buffers (needs >= 3.1)")
    local_rank = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank).Get_rank()
    have_gpu = not args.cpu and torch.cuda.is_available() and torch.cuda.device_count() > 0
    if not args.cpu and not comm.allreduce(have_gpu, op=MPI.LAND):
        skip("no GPU on some rank (use --cpu for CPU tensors)")
    if args.cpu:
        device = torch.device("cpu")
    else:
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
        # keep float32 matmuls in float32 so runs compare tightly
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False

    n = args.samples // nranks * nranks
    x, y = make_data(n, device)
    shard = slice(rank * (n // nranks), (rank + 1) * (n // nranks))
    model = make_model(device)

    # Horovod's broadcast_parameters: start from rank 0's weights (MPI_Bcast)
    w0 = flat_weights(model)
    ready(w0)
    comm.Bcast(mpi_buf(w0), root=0)
    torch.nn.utils.vector_to_parameters(w0, model.parameters())

    buckets = GradientBuckets(model.parameters(), int(args.bucket_kb * 1024), comm)
    local_losses = train(model, x[shard], y[shard], args.steps, args.lr, buckets.allreduce_mean)
    # equal shards: the full-batch loss is the mean of the shards' losses
    ready(local_losses)
    comm.Allreduce(MPI.IN_PLACE, mpi_buf(local_losses))
    losses = (local_losses / nranks).cpu()

    # 1. every rank holds the same weights (MPI_Allgather of the flat vector)
    w = flat_weights(model)
    everyone = torch.empty((nranks, w.numel()), dtype=w.dtype, device=device)
    ready(w)
    comm.Allgather(mpi_buf(w), mpi_buf(everyone))
    spread = (everyone - w).abs().max().item()
    scale = max(1.0, w.abs().max().item())

    ok, report = True, []
    if rank == 0:
        print(f"train_torch: {nranks} ranks, {device.type} tensors, {n} samples ({n // nranks} per rank), "
              f"{sum(len(b) for b in buckets.buckets)} tensors in {len(buckets.buckets)} gradient buckets, "
              f"{args.steps} steps")
        mpi_lib = MPI.Get_library_version().splitlines()[0].strip(" \x00")  # C string: trailing NUL
        print(f"train_torch: mpi4py {mpi4py.__version__}, {mpi_lib}")
        # 2. single-process reference over the full batch
        ref_model = make_model(device)
        ref_losses = train(ref_model, x, y, args.steps, args.lr).cpu()
        w_ref = flat_weights(ref_model)
        for step in range(0, args.steps, 10):
            print(f"  step {step:3d}  loss {losses[step].item():.6f}  single-process {ref_losses[step].item():.6f}")
        loss_diff = ((losses - ref_losses).abs() / ref_losses.abs()).max().item()
        w_diff = (w - w_ref).abs().max().item()
        checks = [
            ("same weights on every rank", spread <= 1e-6 * scale, f"max difference {spread:.2e}"),
            ("loss curve = single-process run", loss_diff <= 1e-4, f"max relative difference {loss_diff:.2e}"),
            ("weights = single-process run", w_diff <= 1e-4 * scale, f"max difference {w_diff:.2e}"),
            ("loss went down", bool(losses[-1] < 0.9 * losses[0]),
             f"{losses[0].item():.4f} -> {losses[-1].item():.4f}"),
        ]
        for what, passed, detail in checks:
            print(f"  {what:34s} {'ok' if passed else 'WRONG'}  ({detail})")
            ok = ok and passed
        print(f"train_torch: {'ok' if ok else 'FAILED'}", flush=True)
    ok = comm.bcast(ok, root=0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
