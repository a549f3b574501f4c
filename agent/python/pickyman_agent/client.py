"""The PickyMan agent client: one connection per rank, one JSON line per call."""

import errno
import json
import os
import socket
import struct
import time
import warnings
from dataclasses import dataclass
from typing import Any, Dict, Optional

ENV_SOCKET = "PICKYMAN_AGENT_SOCKET"
# The uid the agent runs as; the operator sets it in every training container.
ENV_AGENT_UID = "PICKYMAN_AGENT_UID"
# Exit codes: done, and suspended after a checkpoint (128 + SIGTERM).
EXIT_DONE = 0
EXIT_SUSPENDED = 143
MODE_BOUNDARY = "boundary"
MODE_NOW = "now"


class AgentError(Exception):
    """A call the agent refused: code is malformed, out_of_order, forbidden or unknown_pod."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ResumePoint:
    """Where training starts: the epoch to begin (the number of epochs the checkpoint at path
    holds; 0 and "" for a fresh start).

    world_size is the number of workers (pods) of this admission and reference_world_size
    the size the job's epoch time and learning-rate schedule refer to (an elastic job's
    maximum size); they differ when an elastic job runs at another size. Both are 0 when the
    operator does not say (a rigid job, or an older operator)."""

    epoch: int
    path: str = ""
    world_size: int = 0
    reference_world_size: int = 0


@dataclass(frozen=True)
class CheckpointRequest:
    """A checkpoint the operator asks for: mode is MODE_BOUNDARY (finish the epoch, save) or
    MODE_NOW (stop at once and name the newest checkpoint); deadline is RFC 3339."""

    id: str
    mode: str
    deadline: str = ""


def pod_from_env() -> str:
    """The pod as "namespace/name": PICKYMAN_POD, or POD_NAMESPACE and POD_NAME (downward API),
    or "" when neither is set: the agent then takes the caller's pod from the socket's peer
    credentials alone (naming it only adds a check)."""
    pod = os.environ.get("PICKYMAN_POD")
    if pod:
        return pod
    ns, name = os.environ.get("POD_NAMESPACE"), os.environ.get("POD_NAME")
    if ns and name:
        return f"{ns}/{name}"
    return ""


def check_peer(sock: socket.socket, path: str, uid: Optional[int] = None) -> None:
    """Refuses a socket whose listener does not run as the agent's uid (its peer credentials,
    SO_PEERCRED): uid, or PICKYMAN_AGENT_UID; no check when neither is given. Whoever could
    put a socket at path would otherwise be told every request, and answer the resume point."""
    if uid is None:
        want = os.environ.get(ENV_AGENT_UID, "")
        if not want:
            return
        uid = int(want)
    pid, peer, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    if peer != uid:
        raise PermissionError(f"{path}: the listener (pid {pid}) runs as uid {peer}, not the agent's uid {uid} ({ENV_AGENT_UID})")


class Client:
    """A rank's session with the agent. Not safe for use from several threads at once.

    Outside PickyMan the client is a no-op: when no socket is named (PICKYMAN_AGENT_SOCKET
    unset) or nothing listens at the named path, connected is False and every call returns
    harmlessly (register and resume_point a fresh start, poll and requested None, the reports
    nothing), so the same training script runs anywhere. A named socket that is missing is
    waited for up to wait seconds first (the agent may be restarting) and then reported with a
    RuntimeWarning. A listener that is not the agent (check_peer) is still refused."""

    def __init__(self, path: Optional[str] = None, timeout: float = 90.0, wait: float = 5.0):
        self.path: str = path or os.environ.get(ENV_SOCKET, "")
        self._sock: Optional[socket.socket] = None
        self._file: Any = None
        self._last_poll = 0.0
        self._pending: Optional[CheckpointRequest] = None
        if not self.path:
            return
        deadline = time.monotonic() + wait
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            try:
                sock.connect(self.path)
                break
            except OSError as e:
                sock.close()
                if e.errno not in (errno.ENOENT, errno.ECONNREFUSED):
                    raise
                if time.monotonic() >= deadline:
                    warnings.warn(f"no PickyMan agent at {self.path} ({e.strerror}): checkpoint requests "
                                  "will not be seen", RuntimeWarning, stacklevel=2)
                    return
                time.sleep(0.1)
        try:
            check_peer(sock, self.path)
        except PermissionError:
            sock.close()
            raise
        self._sock = sock
        self._file = sock.makefile("rwb")

    @property
    def connected(self) -> bool:
        """Whether an agent answers: False outside PickyMan, where every call is a no-op."""
        return self._sock is not None

    def close(self) -> None:
        if self._sock is not None:
            self._file.close()
            self._sock.close()
            self._sock = self._file = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _call(self, op: str, **fields: Any) -> Dict[str, Any]:
        if self._sock is None:
            return {"ok": True}
        req: Dict[str, Any] = {"op": op}
        req.update({k: v for k, v in fields.items() if v not in (None, 0, "", 0.0)})
        self._file.write(json.dumps(req).encode() + b"\n")
        self._file.flush()
        line = self._file.readline()
        if not line:
            raise ConnectionError("the agent closed the connection")
        resp = json.loads(line)
        if not resp.get("ok"):
            raise AgentError(resp.get("code", "unknown"), resp.get("error", ""))
        return resp

    @staticmethod
    def _resume(resp: Dict[str, Any]) -> ResumePoint:
        r = resp.get("resume") or {}
        return ResumePoint(epoch=int(r.get("epoch", 0)), path=r.get("path", ""),
                           world_size=int(r.get("worldSize", 0)),
                           reference_world_size=int(r.get("referenceWorldSize", 0)))

    def register(self, pod: str, rank: int, world_size: int, retry: float = 5.0) -> ResumePoint:
        """Bind this connection to a rank of the caller's pod (pod "namespace/name" is checked
        against it; "" skips the check); returns where training starts.

        A restarted process may find its rank still held by its predecessor's connection
        for a moment; register retries that case for up to retry seconds."""
        deadline = time.monotonic() + retry
        while True:
            try:
                return self._resume(self._call("register", pod=pod, rank=rank, world_size=world_size))
            except AgentError as e:
                if e.code != "out_of_order" or "live connection" not in e.message or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def resume_point(self) -> ResumePoint:
        """Where training starts (as register answered)."""
        return self._resume(self._call("resume_point"))

    def epoch_begin(self, epoch: int) -> None:
        """Report that epoch begins: first the resume epoch, then the one after the last ended."""
        self._call("epoch_begin", epoch=epoch)

    def epoch_end(self, epoch: int, samples: int = 0, nbytes: int = 0) -> None:
        """Report an epoch's end, the samples processed and the storage bytes read."""
        self._call("epoch_end", epoch=epoch, samples=samples, bytes=nbytes)

    def poll(self, wait: float = 0.0) -> Optional[CheckpointRequest]:
        """The pending checkpoint request, waiting up to wait seconds; None if none."""
        resp = self._call("poll", wait_ms=int(wait * 1000))
        c = resp.get("checkpoint")
        if not c:
            return None
        return CheckpointRequest(id=c["id"], mode=c["mode"], deadline=c.get("deadline", ""))

    def requested(self, min_interval: float = 0.2) -> Optional[CheckpointRequest]:
        """Like poll(0), but asks the agent at most every min_interval seconds: cheap to
        call at every training step."""
        now = time.monotonic()
        if self._pending is None and now - self._last_poll >= min_interval:
            self._last_poll = now
            self._pending = self.poll(0)
        return self._pending

    def checkpoint_done(self, request_id: str, epoch: int, path: str, nbytes: int, seconds: float) -> None:
        """Report the checkpoint written for a request: the epoch to resume from, where it is,
        its size and how long writing took. Ranks that did not write report nbytes=0."""
        self._call("checkpoint_done", request_id=request_id, epoch=epoch, path=path,
                   bytes=nbytes, seconds=seconds)
        self._pending = None
