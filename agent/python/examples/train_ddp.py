#!/usr/bin/env python3
"""Example PyTorch DDP training that cooperates with the PickyMan agent.

Run with torchrun, for example on CPU with two workers:

    PICKYMAN_AGENT_SOCKET=/var/run/pickyman/agent.sock PICKYMAN_POD=ns/pod \\
      torchrun --standalone --nproc_per_node=2 train_ddp.py --epochs 5 --ckpt-dir /ckpt

It trains a small MLP on synthetic data (generated from a seed per epoch, step and rank, so a
resumed run sees the same data as an uninterrupted one), reports every epoch to the agent,
and watches for checkpoint requests:

- mode "boundary": finish the current epoch, save, acknowledge, exit 143;
- mode "now": save at the next step (the partial epoch is lost), acknowledge, exit 143.

Rank 0 asks the agent; its decision reaches every rank by a broadcast, so all ranks stop at the
same step. A run that completes every epoch exits 0. On start each rank asks the agent where to
resume from and loads that checkpoint.

Elastic restore: a checkpoint written by W workers restores on any number of workers. The DDP
model and the optimizer state are the same on every rank, so they do not depend on the world
size; what does is the data and the learning rate, which the script keeps equivalent to the
run's first size (the reference size, kept in the checkpoint): an epoch is always
steps x batch x reference-size samples, so with W workers it has steps x reference / W steps
of W batches; and the learning rate follows the linear scaling rule, lr x W / reference, as the
global batch is W batches. The step count and rate in effect are printed with the "sized"
event.

When the agent's resume point gives the job's sizes (an elastic job: world_size workers of
reference_world_size, in pods), that reference takes precedence over the checkpoint's: it is
converted to ranks at this run's ranks per pod, reference = W x reference_world_size /
world_size, and the "sized" event then also names the agent's sizes and the checkpoint's
reference. Without them the script behaves as before.

Each notable moment is printed as a line "PICKYMAN_EVENT <json>" (with wall-clock time t) for
tests and logs.
"""

import argparse
import hashlib
import json
import os
import sys
import threading
import time

T_START = time.time()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pickyman_agent import EXIT_DONE, EXIT_SUSPENDED, MODE_NOW, Client, pod_from_env  # noqa: E402

NONE, BOUNDARY, NOW = 0, 1, 2


def event(name, **kw):
    kw.update(event=name, t=time.time(), rank=int(os.environ.get("RANK", "0")))
    print("PICKYMAN_EVENT " + json.dumps(kw, sort_keys=True), flush=True)


def param_hash(model):
    h = hashlib.sha256()
    for p in model.state_dict().values():
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def batch(args, epoch, step, rank):
    g = torch.Generator().manual_seed((epoch * 1_000_003 + step) * 131 + rank)
    x = torch.randn(args.batch, args.dim, generator=g)
    y = (x[:, : args.classes].argmax(dim=1) + epoch) % args.classes
    return x, y


def decide(agent, rank, device):
    """Rank 0 asks the agent; every rank learns its answer."""
    flag = torch.zeros(1, dtype=torch.int64, device=device)
    if rank == 0:
        req = agent.requested()
        if req is not None:
            flag[0] = NOW if req.mode == MODE_NOW else BOUNDARY
    dist.broadcast(flag, src=0)
    return int(flag[0])


def pack(model, opt, epoch, world, ref_world):
    """A checkpoint that loads with torch.load(weights_only=True): tensors, and everything else
    (epoch, sizes, the optimizer's hyperparameters and non-tensor state) as one JSON string.
    PyTorch 1.13's weights-only unpickler (Debian's python3-torch) has no opcode for a float,
    so an optimizer's state_dict as it is does not load that way."""
    o = opt.state_dict()
    tensors = {pid: {k: v for k, v in st.items() if torch.is_tensor(v)} for pid, st in o["state"].items()}
    scalars = {str(pid): {k: v for k, v in st.items() if not torch.is_tensor(v)} for pid, st in o["state"].items()}
    meta = dict(epoch=epoch, world=world, ref_world=ref_world, param_groups=o["param_groups"], opt_scalars=scalars)
    return {"model": model.state_dict(), "opt_state": tensors, "meta": json.dumps(meta)}


def load(path):
    """Reads a checkpoint written by pack without unpickling anything but tensors and plain
    containers (weights_only): a checkpoint someone else could write cannot run code here.
    Returns (meta, model state, optimizer state)."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    meta = json.loads(state["meta"])
    opt_state = {pid: dict(ts, **meta["opt_scalars"].get(str(pid), {})) for pid, ts in state["opt_state"].items()}
    return meta, state["model"], {"state": opt_state, "param_groups": meta["param_groups"]}


def save(args, model, opt, epoch, rank, world, ref_world):
    """Rank 0 writes the checkpoint; returns (path, bytes, seconds) for this rank."""
    path = os.path.join(args.ckpt_dir, f"ckpt-epoch{epoch}.pt")
    t0 = time.time()
    nbytes = 0
    if rank == 0:
        os.makedirs(args.ckpt_dir, exist_ok=True)
        tmp = path + ".tmp"
        torch.save(pack(model.module, opt, epoch, world, ref_world), tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
        nbytes = os.path.getsize(path)
        event("checkpoint", epoch=epoch, path=path, bytes=nbytes, hash=param_hash(model.module), world=world)
    dist.barrier()
    return path, nbytes, time.time() - t0


def agent_reference(start, world):
    """The reference world size in ranks that the agent's resume point gives, or None.

    The operator counts pods; a pod may run several ranks, so the reference in ranks is this
    run's ranks per pod times the reference in pods (kept an int when it divides evenly)."""
    if start.world_size <= 0 or start.reference_world_size <= 0:
        return None
    n = world * start.reference_world_size
    return n // start.world_size if n % start.world_size == 0 else n / start.world_size


def leave(code, grace=30.0):
    """Ends the process group and returns code: a barrier first, so that no rank exits (and
    gets its peers killed) before all have acknowledged or finished, then
    destroy_process_group under a watchdog. With gloo that call can hang now and then
    (pytorch/pytorch#75097) even after a barrier; everything that matters is written and
    acknowledged by then, so after grace seconds the process exits with code regardless."""
    dist.barrier()
    watchdog = threading.Timer(grace, lambda: (sys.stdout.flush(), os._exit(code)))
    watchdog.daemon = True
    watchdog.start()
    dist.destroy_process_group()
    watchdog.cancel()
    return code


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20, help="steps per epoch")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--lr", type=float, default=1e-3, help="learning rate at the reference world size")
    ap.add_argument("--step-delay", type=float, default=0.0,
                    help="seconds each step waits, standing in for reading a batch from storage")
    ap.add_argument("--ckpt-dir", default="/tmp/pickyman-ckpt")
    ap.add_argument("--ckpt-every", type=int, default=0,
                    help="also checkpoint every N epochs (0: only when the agent asks)")
    args = ap.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cpu")
    torch.manual_seed(0)

    agent = Client()
    start = agent.register(pod_from_env(), rank, world)
    event("registered", start_epoch=start.epoch, path=start.path, process_start=T_START)

    model = torch.nn.Sequential(
        torch.nn.Linear(args.dim, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, args.classes))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    ref_world = world  # the first run's world size; a checkpoint carries it on
    ckpt_ref = None  # the checkpoint's reference size, if one was loaded
    if start.epoch > 0:
        t0 = time.time()
        meta, model_state, opt_state = load(start.path)
        if meta["epoch"] != start.epoch:
            raise SystemExit(f"checkpoint {start.path} holds epoch {meta['epoch']}, want {start.epoch}")
        model.load_state_dict(model_state)
        opt.load_state_dict(opt_state)
        written = meta.get("world", world)
        ref_world = ckpt_ref = meta.get("ref_world", written)
        event("loaded", epoch=start.epoch, seconds=time.time() - t0, hash=param_hash(model),
              world=world, written_world=written)
    # The operator's reference size, when it gives one, takes precedence over the checkpoint's.
    sized = {}
    agent_ref = agent_reference(start, world)
    if agent_ref is not None:
        ref_world = agent_ref
        sized = dict(agent_world_size=start.world_size, agent_reference_world_size=start.reference_world_size,
                     checkpoint_reference_world=ckpt_ref)
    # Equivalent data and learning rate at this world size (see the module docstring).
    steps = max(1, round(args.steps * ref_world / world))
    for g in opt.param_groups:
        g["lr"] = args.lr * world / ref_world
    if rank == 0:
        event("sized", world=world, reference_world=ref_world, steps=steps, lr=args.lr * world / ref_world, **sized)
    ddp = DDP(model)
    loss_fn = torch.nn.CrossEntropyLoss()

    last = (start.epoch, start.path)  # the newest checkpoint: (epoch to resume from, path)
    for epoch in range(start.epoch, args.epochs):
        agent.epoch_begin(epoch)
        event("epoch_begin", epoch=epoch)
        nbytes = samples = 0
        for step in range(steps):
            if args.step_delay:
                time.sleep(args.step_delay)
            x, y = batch(args, epoch, step, rank)
            nbytes += x.numel() * x.element_size() + y.numel() * y.element_size()
            samples += len(x)
            opt.zero_grad()
            loss = loss_fn(ddp(x), y)
            loss.backward()
            opt.step()
            if decide(agent, rank, device) == NOW:
                # Stop at once: the work since the newest checkpoint is lost.
                req = agent.poll()
                agent.checkpoint_done(req.id, last[0], last[1], 0, 0.0)
                event("suspended", epoch=last[0], request=req.id, mode="now")
                return leave(EXIT_SUSPENDED)
        agent.epoch_end(epoch, samples, nbytes)
        event("epoch_end", epoch=epoch, loss=float(loss))
        flag = decide(agent, rank, device)
        periodic = args.ckpt_every > 0 and (epoch + 1) % args.ckpt_every == 0
        if flag != NONE or periodic:
            path, written, seconds = save(args, ddp, opt, epoch + 1, rank, world, ref_world)
            last = (epoch + 1, path)
        if flag != NONE:
            req = agent.poll()
            agent.checkpoint_done(req.id, epoch + 1, path, written, seconds)
            event("suspended", epoch=epoch + 1, request=req.id, mode="boundary", seconds=seconds)
            return leave(EXIT_SUSPENDED)

    event("done", epoch=args.epochs, hash=param_hash(model))
    return leave(EXIT_DONE)


if __name__ == "__main__":
    code = main()
    # Leave at once: with gloo (torch 1.13) a worker can hang in the interpreter's shutdown
    # after destroy_process_group, waiting on a background thread, and keep its launcher's
    # output open. Everything that matters is written and acknowledged by now.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
