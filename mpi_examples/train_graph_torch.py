#!/usr/bin/env python3
"""Data-parallel training step captured in a CUDA graph, its gradient
allreduce queued on the stream by coll/gpu (python/coll_gpu_stream).

    mpirun -n 2 python3 train_graph_torch.py [--steps 60] [--check-every 10]

Every rank builds the same tiny MLP and trains it with plain SGD on its own
shard of a synthetic deterministic data set. One training step, forward,
backward, the gradients flattened into one buffer, one in-place allreduce
(sum) of it queued on the compute stream, the division by the number of
ranks, the gradients copied back and the optimizer step, is captured once
with torch.cuda.graph (after a few warm-up steps on a side stream, as
PyTorch's documentation asks) and replayed for the remaining steps, each
with the next batch copied into the graph's static input and target
tensors. No host step runs between the forward pass and the update.

Checks (exit 1 when one fails): every --check-every steps and at the end,
the weights equal to 1e-5 those of a second copy of the model trained eagerly
on the same batches, its gradients averaged with mpi4py's blocking
comm.Allreduce on host copies; every rank holds the same weights.
Exits 77 (skipped) without torch, mpi4py or a GPU on every rank.
"""
import argparse
import copy
import os
import sys

SKIPPED = 77


def skip(why):
    print(f"train_graph_torch: skipped: {why}", flush=True)
    sys.exit(SKIPPED)


try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    skip(f"no torch ({e})")
try:
    from mpi4py import MPI  # MPI_Init (and coll/gpu loaded) before CUDA is touched
except ImportError as e:
    skip(f"no mpi4py ({e})")
try:
    import coll_gpu_stream  # noqa: F401  (installed, or PYTHONPATH=python/)
except ImportError:  # run from the source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from coll_gpu_stream import IN_PLACE, StreamComm  # noqa: E402

FEATURES, HIDDEN, CLASSES = 32, 64, 4
TOLERANCE = 1e-5


def make_data(steps, n, device):
    """steps batches of n samples (all ranks' shards): a random tanh teacher labels Gaussian inputs."""
    g = torch.Generator().manual_seed(1234)
    teacher = torch.randn(FEATURES, CLASSES, generator=g)
    x = torch.randn(steps, n, FEATURES, generator=g)
    y = (torch.tanh(x @ teacher) + 0.1 * torch.randn(steps, n, CLASSES, generator=g)).argmax(dim=2)
    return x.to(device), y.to(device)


def make_model(device):
    torch.manual_seed(0)  # the same initial weights on every rank
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, CLASSES)).to(device)


def flat_weights(model):
    return torch.nn.utils.parameters_to_vector(model.parameters()).detach()


class GraphTrainer:
    """The model trained by a captured step (gradients averaged by coll/gpu on the stream)."""

    def __init__(self, model, sc, lr, batch, device):
        self.model, self.sc = model, sc
        self.params = list(model.parameters())
        self.opt = torch.optim.SGD(self.params, lr=lr)
        self.flat = torch.zeros(sum(p.numel() for p in self.params), device=device)
        self.static_x = torch.zeros(batch, FEATURES, device=device)
        self.static_y = torch.zeros(batch, dtype=torch.long, device=device)
        self.graph = None

    def _step(self):
        """One step on the static tensors, on the current stream (what the graph holds)."""
        loss = F.cross_entropy(self.model(self.static_x), self.static_y)
        loss.backward()
        torch.cat([p.grad.reshape(-1) for p in self.params], out=self.flat)
        # queued on the current stream (stream=None): the capture stream inside torch.cuda.graph
        self.sc.allreduce(IN_PLACE, self.flat, op=MPI.SUM)
        self.flat.div_(self.sc.size)
        offset = 0
        for p in self.params:
            p.grad.copy_(self.flat[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
        self.opt.step()
        return loss.detach()

    def load(self, x, y):
        self.static_x.copy_(x)
        self.static_y.copy_(y)

    def warm_up(self, batches):
        """Real training steps (the reference takes them too), eagerly on a side stream."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for x, y in batches:
                self.load(x, y)
                self.opt.zero_grad(set_to_none=True)
                self._step()
        torch.cuda.current_stream().wait_stream(side)

    def capture(self):
        self.graph = torch.cuda.CUDAGraph()
        self.opt.zero_grad(set_to_none=True)  # backward allocates the grads from the graph's pool
        with torch.cuda.graph(self.graph):
            self.static_loss = self._step()

    def step(self, x, y):
        self.load(x, y)
        self.graph.replay()
        return self.static_loss


class ReferenceTrainer:
    """The same model trained eagerly, gradients averaged by blocking mpi4py on the host."""

    def __init__(self, model, comm, lr):
        self.model, self.comm = model, comm
        self.params = list(model.parameters())
        self.opt = torch.optim.SGD(self.params, lr=lr)

    def step(self, x, y):
        self.opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        flat = torch.cat([p.grad.reshape(-1) for p in self.params]).cpu().numpy()  # waits for the GPU
        self.comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM)
        flat /= self.comm.Get_size()
        flat = torch.from_numpy(flat).to(self.params[0].device)
        offset = 0
        for p in self.params:
            p.grad.copy_(flat[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
        self.opt.step()
        return loss.detach()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--check-every", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3, help="eager steps on a side stream before the capture")
    ap.add_argument("--batch", type=int, default=64, help="samples per rank and step")
    ap.add_argument("--lr", type=float, default=0.05)
    args = ap.parse_args()
    if args.steps <= args.warmup:
        ap.error("--steps must exceed --warmup")

    comm = MPI.COMM_WORLD
    rank, nranks = comm.Get_rank(), comm.Get_size()
    have_gpu = torch.cuda.is_available() and torch.cuda.device_count() > 0
    if not comm.allreduce(have_gpu, op=MPI.LAND):
        skip("no GPU on some rank")
    local_rank = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank).Get_rank()
    torch.cuda.set_device(local_rank % torch.cuda.device_count())
    device = torch.device("cuda", torch.cuda.current_device())
    # float32 matmuls in float32, so that the two models compare tightly
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    sc = StreamComm(comm)
    sc.init()  # collective, once, before any capture

    x_all, y_all = make_data(args.steps, args.batch * nranks, device)
    shard = slice(rank * args.batch, (rank + 1) * args.batch)
    batches = [(x_all[i, shard], y_all[i, shard]) for i in range(args.steps)]

    model = make_model(device)
    ref = ReferenceTrainer(copy.deepcopy(model), comm, args.lr)
    trainer = GraphTrainer(model, sc, args.lr, args.batch, device)

    ok = True

    def compare(step):
        nonlocal ok
        w, w_ref = flat_weights(model), flat_weights(ref.model)
        diff = (w - w_ref).abs().max().item()
        w0 = w.cpu().numpy()
        comm.Bcast(w0, root=0)  # rank 0's weights, to compare every rank's with
        spread = (w - torch.from_numpy(w0).to(device)).abs().max().item()
        good = comm.allreduce(diff <= TOLERANCE and spread <= TOLERANCE, op=MPI.LAND)
        worst = comm.allreduce(max(diff, spread), op=MPI.MAX)
        if rank == 0:
            print(f"  step {step:4d}  loss {loss.item():.6f} (reference {ref_loss.item():.6f})  "
                  f"max |w - w_ref| and spread over ranks {worst:.2e}  {'ok' if good else 'WRONG'}", flush=True)
        ok = ok and good

    # warm-up steps (eager, side stream), mirrored by the reference
    trainer.warm_up(batches[:args.warmup])
    for x, y in batches[:args.warmup]:
        ref_loss = ref.step(x, y)
    trainer.capture()
    if rank == 0:
        print(f"train_graph_torch: {nranks} ranks, {sum(p.numel() for p in model.parameters())} parameters, "
              f"{args.warmup} warm-up steps, then one captured step replayed {args.steps - args.warmup} times")
    for step in range(args.warmup, args.steps):
        x, y = batches[step]
        loss = trainer.step(x, y)
        ref_loss = ref.step(x, y)
        if (step + 1) % args.check_every == 0 or step == args.steps - 1:
            compare(step + 1)
    torch.cuda.synchronize()
    status = sc.status()
    if status != MPI.SUCCESS:
        print(f"rank {rank}: stream_status: {MPI.Get_error_string(status)}", flush=True)
    ok = comm.allreduce(ok and status == MPI.SUCCESS, op=MPI.LAND)
    if rank == 0:
        print("train_graph_torch: OK" if ok else "train_graph_torch: FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
