#!/usr/bin/env python3
"""Example PyTorch DDP training that cooperates with the PickyMan agent.

Run with torchrun, for example on CPU with two workers:

    PICKYMAN_AGENT_SOCKET=/var/run/pickyman/agent.sock PICKYMAN_POD=ns/pod \\
      torchrun --standalone --nproc_per_node=2 train_ddp.py --epochs 5 --ckpt-dir /ckpt

It trains a small MLP on synthetic data (generated from a seed per epoch, step and rank, so a
resumed run sees the same data as an uninterrupted one), or with --data-url on a dataset
object read from an HTTP object store every epoch: each step each rank reads its own byte
range of the object (a Range request on one kept-alive connection per rank), so an epoch reads
the whole object once, and trains on those bytes. pickyman_agent.Preemptible does the
coordination with the agent (see its module documentation):

- a "boundary" request: finish the current epoch, save, acknowledge, exit 143;
- a "now" request: stop after the current step and acknowledge the newest checkpoint (the
  partial epoch is lost; --ckpt-every N keeps one every N epochs), exit 143;
- SIGTERM: save after the current step (the checkpoint records the step; a resumed run skips
  the steps done), exit 143.

All ranks stop at the same step. A run that completes every epoch exits 0. On start each rank
loads the checkpoint the agent names (or, when it names none, the newest one this script
recorded in the checkpoint directory). Outside PickyMan (no agent socket) it trains as a plain
DDP script that still saves on SIGTERM and resumes from its newest checkpoint.

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
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

T_START = time.time()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pickyman_agent import Preemptible, Suspended  # noqa: E402


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


class Dataset:
    """A dataset object on an HTTP object store, read a byte range per step and rank."""

    def __init__(self, url, timeout=60.0):
        u = urllib.parse.urlsplit(url)
        if u.scheme != "http" or not u.hostname:
            raise SystemExit(f"--data-url {url!r}: want http://host[:port]/key")
        self.host, self.port, self.path = u.hostname, u.port or 80, u.path or "/"
        self.timeout = timeout
        self.conn = None
        self.size = int(self._request("HEAD", {}).getheader("Content-Length", "0"))
        if self.size <= 0:
            raise SystemExit(f"--data-url {url!r}: empty object")

    def _request(self, method, headers):
        for attempt in range(3):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.conn.request(method, self.path, headers=headers)
                resp = self.conn.getresponse()
                if method == "HEAD":
                    resp.read()
                if resp.status not in (200, 206):
                    body = resp.read()
                    raise SystemExit(f"{method} {self.path}: HTTP {resp.status}: {body[:200]!r}")
                return resp
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
                time.sleep(0.5)

    def read(self, index, parts):
        """Part index of parts equal parts of the object (the last takes the remainder)."""
        per = self.size // parts
        lo = index * per
        hi = self.size if index == parts - 1 else lo + per
        resp = self._request("GET", {"Range": f"bytes={lo}-{hi - 1}"})
        return resp.read()


def batch_from(args, data, epoch):
    """A batch made of bytes read from storage: batch x dim inputs in [0, 1], labels from them."""
    need = args.batch * args.dim
    raw = data * (need // max(1, len(data)) + 1) if len(data) < need else data
    x = torch.frombuffer(bytearray(raw[:need]), dtype=torch.uint8).float().div_(255).view(args.batch, args.dim)
    y = (x[:, : args.classes].argmax(dim=1) + epoch) % args.classes
    return x, y


def pack(model, opt, epoch, world, ref_world, step=0):
    """A checkpoint that loads with torch.load(weights_only=True): tensors, and everything else
    (epoch, sizes, the optimizer's hyperparameters and non-tensor state) as one JSON string.
    PyTorch 1.13's weights-only unpickler (Debian's python3-torch) has no opcode for a float,
    so an optimizer's state_dict as it is does not load that way."""
    o = opt.state_dict()
    tensors = {pid: {k: v for k, v in st.items() if torch.is_tensor(v)} for pid, st in o["state"].items()}
    scalars = {str(pid): {k: v for k, v in st.items() if not torch.is_tensor(v)} for pid, st in o["state"].items()}
    meta = dict(epoch=epoch, step=step, world=world, ref_world=ref_world, param_groups=o["param_groups"], opt_scalars=scalars)
    return {"model": model.state_dict(), "opt_state": tensors, "meta": json.dumps(meta)}


def load(path):
    """Reads a checkpoint written by pack without unpickling anything but tensors and plain
    containers (weights_only): a checkpoint someone else could write cannot run code here.
    Returns (meta, model state, optimizer state)."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    meta = json.loads(state["meta"])
    opt_state = {pid: dict(ts, **meta["opt_scalars"].get(str(pid), {})) for pid, ts in state["opt_state"].items()}
    return meta, state["model"], {"state": opt_state, "param_groups": meta["param_groups"]}


def save(args, model, opt, epoch, step, rank, world, ref_world):
    """Rank 0 writes the checkpoint that resumes at step of epoch and returns its path; the
    other ranks write nothing and return None."""
    if rank != 0:
        return None
    name = f"ckpt-epoch{epoch}.pt" if step == 0 else f"ckpt-epoch{epoch}-step{step}.pt"
    path = os.path.join(args.ckpt_dir, name)
    os.makedirs(args.ckpt_dir, exist_ok=True)
    tmp = path + ".tmp"
    torch.save(pack(model, opt, epoch, world, ref_world, step), tmp)
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)
    event("checkpoint", epoch=epoch, step=step, path=path, bytes=os.path.getsize(path), hash=param_hash(model), world=world)
    return path


def agent_reference(start, world):
    """The reference world size in ranks that the agent's resume point gives, or None.

    The operator counts pods; a pod may run several ranks, so the reference in ranks is this
    run's ranks per pod times the reference in pods (kept an int when it divides evenly)."""
    if start.world_size <= 0 or start.reference_world_size <= 0:
        return None
    n = world * start.reference_world_size
    return n // start.world_size if n % start.world_size == 0 else n / start.world_size


def leave(code, grace=30.0):
    """Ends the process group and the process with code (every rank passed a barrier before:
    Preemptible.finish, or the one before Suspended). destroy_process_group runs under a
    watchdog: with gloo it can hang now and then (pytorch/pytorch#75097), and after it a worker
    can hang in the interpreter's shutdown on a background thread (torch 1.13); everything that
    matters is written and acknowledged by then, so the process leaves with os._exit."""
    watchdog = threading.Timer(grace, lambda: (sys.stdout.flush(), os._exit(code)))
    watchdog.daemon = True
    watchdog.start()
    if dist.is_initialized():
        dist.destroy_process_group()
    watchdog.cancel()
    event("exit", code=code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


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
    ap.add_argument("--data-url", default="",
                    help="read the dataset from this HTTP object (http://host:port/key) every epoch")
    args = ap.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(args.dim, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, args.classes))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    ref_world = world  # the first run's world size; a checkpoint carries it on

    job = Preemptible(lambda epoch, step: save(args, model, opt, epoch, step, rank, world, ref_world),
                      ckpt_every=args.ckpt_every, latest=os.path.join(args.ckpt_dir, "latest.json"))
    start = job.resume
    event("registered", start_epoch=start.epoch, path=start.path, process_start=T_START, agent=job.agent.connected)

    ckpt_ref = None  # the checkpoint's reference size, if one was loaded
    first_step = 0  # the step to resume at in the first epoch (a SIGTERM checkpoint's)
    if start.path or start.epoch > 0:
        t0 = time.time()
        meta, model_state, opt_state = load(start.path)
        if meta["epoch"] != start.epoch:
            raise SystemExit(f"checkpoint {start.path} holds epoch {meta['epoch']}, want {start.epoch}")
        model.load_state_dict(model_state)
        opt.load_state_dict(opt_state)
        first_step = meta.get("step", 0)
        written = meta.get("world", world)
        ref_world = ckpt_ref = meta.get("ref_world", written)
        event("loaded", epoch=start.epoch, step=first_step, seconds=time.time() - t0, hash=param_hash(model),
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
    data = Dataset(args.data_url) if args.data_url else None
    if data is not None and rank == 0:
        event("dataset", url=args.data_url, bytes=data.size)
    ddp = DDP(model)
    loss_fn = torch.nn.CrossEntropyLoss()

    try:
        for epoch in range(start.epoch, args.epochs):
            first = first_step if epoch == start.epoch else 0
            job.epoch_begin(epoch, first)
            event("epoch_begin", epoch=epoch, step=first)
            nbytes = samples = 0
            for step in range(first, steps):
                if args.step_delay:
                    time.sleep(args.step_delay)
                if data is not None:
                    chunk = data.read(step * world + rank, steps * world)
                    nbytes += len(chunk)
                    x, y = batch_from(args, chunk, epoch)
                else:
                    x, y = batch(args, epoch, step, rank)
                    nbytes += x.numel() * x.element_size() + y.numel() * y.element_size()
                samples += len(x)
                opt.zero_grad()
                loss = loss_fn(ddp(x), y)
                loss.backward()
                opt.step()
                job.step_done()
            event("epoch_end", epoch=epoch, loss=float(loss))
            job.epoch_done(epoch, samples, nbytes)
    except Suspended as s:
        event("suspended", epoch=s.epoch, step=s.step, request=s.request.id if s.request else None, mode=s.reason)
        return s.code

    event("done", epoch=args.epochs, hash=param_hash(model))
    return job.finish()


if __name__ == "__main__":
    leave(main())
