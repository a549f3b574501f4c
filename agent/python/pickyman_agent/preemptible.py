"""Preemptible: the agent's coordination for a plain PyTorch (DDP) training loop.

One object per rank, made after ``dist.init_process_group`` (or in a single process without
one)::

    job = Preemptible(save)                 # save(epoch, step) -> path written, or None
    start = job.resume                      # ResumePoint: load start.path when it is set
    for epoch in range(start.epoch, epochs):
        job.epoch_begin(epoch)
        for batch in loader:
            ...train one step...
            job.step_done()                 # a "now" request or SIGTERM: raises Suspended
        job.epoch_done(epoch)               # a boundary request: saves, raises Suspended
    job.finish()

Rank 0 asks the agent (at most every poll_interval seconds); every rank adds whether it got
SIGTERM; one all_reduce (MAX) gives every rank the same decision at the same step, so all
ranks save, acknowledge and stop together. Suspended is a SystemExit whose code is
EXIT_SUSPENDED (143), what the operator expects after a checkpoint: left uncaught, the
process exits with it.

- boundary request: at the end of the epoch, save(epoch + 1, 0), acknowledge, Suspended;
- now request: stop after the current step and acknowledge the newest checkpoint (the resume
  point or the last one saved), without saving: the work since then is lost;
- SIGTERM (the pod is being deleted): save(epoch, step) after the current step, without
  waiting for the epoch's end, acknowledge a pending now request with it, Suspended. The
  checkpoint holds a partial epoch: save must record the step and the loading code skip the
  steps done. A step longer than the pod's termination grace period is killed first.

Outside PickyMan (no agent socket) there are no requests, but SIGTERM still saves and exits
143, and with latest set the next run resumes from that checkpoint.
"""

import json
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Optional, Tuple

from .client import (
    EXIT_DONE,
    EXIT_SUSPENDED,
    MODE_BOUNDARY,
    MODE_NOW,
    AgentError,
    CheckpointRequest,
    Client,
    ResumePoint,
    pod_from_env,
)

# Why a training stops, in increasing precedence (the all_reduce takes the maximum).
_NONE, _BOUNDARY, _NOW, _SIGTERM = 0, 1, 2, 3
REASON_BOUNDARY = MODE_BOUNDARY
REASON_NOW = MODE_NOW
REASON_SIGTERM = "sigterm"
_REASONS = {_BOUNDARY: REASON_BOUNDARY, _NOW: REASON_NOW, _SIGTERM: REASON_SIGTERM}

SaveFn = Callable[[int, int], Optional[str]]


class Suspended(SystemExit):
    """Raised on every rank once the checkpoint is saved and acknowledged and all ranks
    passed a barrier; its code is EXIT_SUSPENDED.

    reason is "boundary", "now" or "sigterm"; epoch and step the position the checkpoint
    resumes from (step 0: the start of epoch); path the checkpoint (on the rank that wrote
    it; "" elsewhere, and for a now request without one); request the acknowledged request,
    or None (SIGTERM without a pending now request)."""

    def __init__(self, reason: str, epoch: int, step: int, path: str,
                 request: Optional[CheckpointRequest]):
        super().__init__(EXIT_SUSPENDED)
        self.reason = reason
        self.epoch = epoch
        self.step = step
        self.path = path
        self.request = request


def _process_group() -> Any:
    """torch.distributed when a process group is initialized, else None."""
    if "torch" not in sys.modules:
        return None
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if dist.is_available() and dist.is_initialized():
        return dist
    return None


def _size(path: str) -> int:
    """The bytes at path: a file's size, or the sum over a directory's files."""
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    return os.path.getsize(path) if os.path.exists(path) else 0


class Preemptible:
    """A rank's coordination with the agent for one training run.

    save(epoch, step) writes a checkpoint that resumes at step of epoch (step 0 at an
    epoch's end) and returns its path, or None on a rank that writes nothing (usually every
    rank but 0). It is called on every rank, at the same point, and followed by a barrier.

    ckpt_every > 0 also saves every ckpt_every epochs (the checkpoint a now request names).
    latest, a file path, records the newest checkpoint (written by rank 0); a run whose agent
    names no checkpoint resumes from it: outside PickyMan always, under PickyMan when it holds
    the epoch the agent resumes from (the operator's resume point without a path, after a
    checkpoint it was not told of). handle_sigterm installs the SIGTERM handler (main thread
    only). client, rank and world_size default to a Client() and the process group's."""

    def __init__(self, save: SaveFn, *, ckpt_every: int = 0, latest: Optional[str] = None,
                 handle_sigterm: bool = True, poll_interval: float = 0.2, ack_wait: float = 10.0,
                 client: Optional[Client] = None, rank: Optional[int] = None,
                 world_size: Optional[int] = None):
        self._dist = _process_group()
        if self._dist is not None:
            rank = self._dist.get_rank() if rank is None else rank
            world_size = self._dist.get_world_size() if world_size is None else world_size
        self.rank: int = 0 if rank is None else rank
        self.world_size: int = 1 if world_size is None else world_size
        self._save_fn = save
        self._ckpt_every = ckpt_every
        self._latest = latest
        self._poll_interval = poll_interval
        self._ack_wait = ack_wait
        self.agent: Client = client if client is not None else Client()
        self.resume: ResumePoint = self._start(self.agent.register(pod_from_env(), self.rank, self.world_size))
        # The newest checkpoint: (epoch, step, path), what a now request acknowledges.
        self._newest: Tuple[int, int, str] = (self.resume.epoch, 0, self.resume.path)
        self._epoch = self.resume.epoch
        self._step = 0
        self._saved: Tuple[int, float] = (0, 0.0)  # the last save's bytes and seconds
        self._sigterm = False
        self._old_handler: Any = None
        if handle_sigterm and threading.current_thread() is threading.main_thread():
            self._old_handler = signal.signal(signal.SIGTERM, self._on_sigterm)

    # -- the loop --

    def epoch_begin(self, epoch: int, step: int = 0) -> None:
        """Report that epoch begins; step is its first step (not 0 when resuming mid-epoch)."""
        self._epoch, self._step = epoch, step
        self.agent.epoch_begin(epoch)

    def step_done(self) -> None:
        """Call after every training step, on every rank: raises Suspended after a now request
        or SIGTERM. Collective (one all_reduce of one integer)."""
        self._step += 1
        flag = self._decide(self._poll_interval)
        if flag == _SIGTERM:
            path = self._save(self._epoch, self._step)
            req = self._request(MODE_NOW, wait=False)
            self._ack(req, self._epoch, path)
            self._leave(_SIGTERM, self._epoch, self._step, path, req)
        if flag == _NOW:
            epoch, step, path = self._newest
            req = self._request(MODE_NOW, wait=True)
            self._ack(req, epoch, path, fresh=False)
            self._leave(_NOW, epoch, step, path, req)

    def epoch_done(self, epoch: int, samples: int = 0, nbytes: int = 0) -> None:
        """Call at the end of every epoch, on every rank, with its samples and the storage bytes
        read: reports them, saves every ckpt_every epochs, and on any request or SIGTERM saves
        the next epoch's start, acknowledges and raises Suspended. Collective."""
        self.agent.epoch_end(epoch, samples, nbytes)
        flag = self._decide(0.0)
        periodic = self._ckpt_every > 0 and (epoch + 1) % self._ckpt_every == 0
        path = ""
        if flag != _NONE or periodic:
            path = self._save(epoch + 1, 0)
        if flag != _NONE:
            req = self._request(None, wait=flag != _SIGTERM)
            self._ack(req, epoch + 1, path)
            self._leave(flag, epoch + 1, 0, path, req)

    def finish(self) -> int:
        """Call once the last epoch is done, on every rank: waits for every rank (so none exits
        and gets its peers stopped early), restores the SIGTERM handler and returns EXIT_DONE."""
        if self._dist is not None:
            self._dist.barrier()
        self.close()
        return EXIT_DONE

    def close(self) -> None:
        """Restore the previous SIGTERM handler and close the agent connection."""
        if self._old_handler is not None:
            signal.signal(signal.SIGTERM, self._old_handler)
            self._old_handler = None
        self.agent.close()

    def __enter__(self) -> "Preemptible":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def sigterm(self) -> bool:
        """Whether this rank received SIGTERM."""
        return self._sigterm

    # -- internals --

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        self._sigterm = True

    def _start(self, rp: ResumePoint) -> ResumePoint:
        """The agent's resume point, or the latest record when the agent names no checkpoint."""
        if rp.path or not self._latest:
            return rp
        try:
            with open(self._latest) as f:
                rec = json.load(f)
            epoch, path = int(rec["epoch"]), str(rec["path"])
        except (OSError, ValueError, KeyError, TypeError):
            return rp
        if not os.path.exists(path) or (self.agent.connected and epoch != rp.epoch):
            return rp
        return ResumePoint(epoch, path, rp.world_size, rp.reference_world_size)

    def _decide(self, min_interval: float) -> int:
        """Every rank's flag, the same on all: rank 0's request and any rank's SIGTERM."""
        flag = _SIGTERM if self._sigterm else _NONE
        if self.rank == 0 and flag == _NONE:
            req = self.agent.requested(min_interval)
            if req is not None:
                flag = _NOW if req.mode == MODE_NOW else _BOUNDARY
            if self._sigterm:  # arrived while asking: SIGTERM comes first
                flag = _SIGTERM
        if self._dist is None:
            return flag
        import torch

        device = torch.device("cpu")
        if self._dist.get_backend() == "nccl":
            device = torch.device("cuda", torch.cuda.current_device())
        t = torch.tensor([flag], dtype=torch.int64, device=device)
        self._dist.all_reduce(t, op=self._dist.ReduceOp.MAX)
        return int(t.item())

    def _request(self, mode: Optional[str], wait: bool) -> Optional[CheckpointRequest]:
        """This rank's pending request (of mode, when given), or None. Rank 0 has seen it when
        wait is set: another rank (whose pod's agent may not have it yet) waits for it, ack_wait
        seconds at most; a SIGTERM save acknowledges only a request already there."""
        req = self.agent.requested(0.0)
        if req is None and self.rank != 0 and wait:
            req = self.agent.poll(self._ack_wait)
        if req is None or (mode is not None and req.mode != mode):
            return None
        return req

    def _save(self, epoch: int, step: int) -> str:
        t0 = time.monotonic()
        path = self._save_fn(epoch, step) or ""
        nbytes = _size(path) if path else 0
        if self._dist is not None:
            self._dist.barrier()
        self._saved = (nbytes, time.monotonic() - t0)
        self._newest = (epoch, step, path)
        if self._latest and path and self.rank == 0:
            tmp = self._latest + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"epoch": epoch, "step": step, "path": path}, f)
            os.replace(tmp, self._latest)
        return path

    def _ack(self, req: Optional[CheckpointRequest], epoch: int, path: str, fresh: bool = True) -> None:
        """Acknowledge req with the checkpoint at path; a failed acknowledgement is reported on
        stderr and does not stop the suspension (the operator's deadline covers it)."""
        if req is None:
            return
        nbytes, seconds = self._saved if fresh else (0, 0.0)
        try:
            self.agent.checkpoint_done(req.id, epoch, path, nbytes, seconds)
        except (AgentError, OSError) as e:
            print(f"pickyman_agent: rank {self.rank}: acknowledging {req.id}: {e}", file=sys.stderr, flush=True)

    def _leave(self, flag: int, epoch: int, step: int, path: str, req: Optional[CheckpointRequest]) -> None:
        if self._dist is not None:
            self._dist.barrier()
        self.close()
        raise Suspended(_REASONS[flag], epoch, step, path, req)
