"""Unit tests of the client and Preemptible (standard library only, no PyTorch):

    python3 -m unittest discover -s agent/python/tests -v

A fake agent (a thread on a Unix socket) answers the protocol; SIGTERM is tested on a real
child process that trains a loop of sleeps with Preemptible."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import pickyman_agent  # noqa: E402
from pickyman_agent import (  # noqa: E402
    ENV_AGENT_UID,
    ENV_SOCKET,
    EXIT_SUSPENDED,
    Client,
    Preemptible,
    ResumePoint,
    Suspended,
)


class FakeAgent:
    """Answers one connection at a time: register with resume, poll with request (a dict, or
    None), every other call ok; records every request."""

    def __init__(self, path, resume=None, request=None):
        self.path = path
        self.resume = resume or {}
        self.request = request
        self.calls = []
        self.lock = threading.Lock()
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(8)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self._conn, args=(conn,), daemon=True).start()

    def _conn(self, conn):
        f = conn.makefile("rwb")
        for line in f:
            req = json.loads(line)
            with self.lock:
                self.calls.append(req)
                resp = {"ok": True}
                if req["op"] in ("register", "resume_point"):
                    resp["resume"] = self.resume
                elif req["op"] == "poll" and self.request is not None:
                    resp["checkpoint"] = self.request
                elif req["op"] == "checkpoint_done":
                    self.request = None
            f.write(json.dumps(resp).encode() + b"\n")
            f.flush()

    def ops(self, op):
        with self.lock:
            return [c for c in self.calls if c["op"] == op]

    def close(self):
        self.srv.close()


class Env(unittest.TestCase):
    """Each test in its own directory, without the agent's variables of the caller."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        keys = (ENV_SOCKET, ENV_AGENT_UID, "PICKYMAN_POD")
        saved = {k: os.environ.pop(k) for k in keys if k in os.environ}

        def restore():
            for k in keys:
                os.environ.pop(k, None)
            os.environ.update(saved)
        self.addCleanup(restore)

    def agent(self, **kw):
        """A fake agent at the socket the environment names, checked as the agent's uid."""
        a = FakeAgent(os.path.join(self.dir, "agent.sock"), **kw)
        self.addCleanup(a.close)
        os.environ[ENV_SOCKET] = a.path
        os.environ[ENV_AGENT_UID] = str(os.getuid())
        return a


class NoAgent(Env):
    def test_no_socket_variable_is_a_noop(self):
        c = Client()
        self.assertFalse(c.connected)
        self.assertEqual(c.register("", 0, 1), ResumePoint(0, ""))
        self.assertEqual(c.resume_point(), ResumePoint(0))
        c.epoch_begin(0)
        c.epoch_end(0, 10, 100)
        t0 = time.monotonic()
        self.assertIsNone(c.poll(5.0))
        self.assertLess(time.monotonic() - t0, 1.0, "a no-op poll must not wait")
        self.assertIsNone(c.requested(0))
        c.checkpoint_done("x", 1, "/p", 1, 0.1)
        c.close()
        c.close()

    def test_missing_socket_is_a_noop_with_a_warning(self):
        missing = os.path.join(self.dir, "none.sock")
        os.environ[ENV_SOCKET] = missing
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c = Client(wait=0.3)
        self.assertFalse(c.connected)
        self.assertTrue(any(issubclass(x.category, RuntimeWarning) and missing in str(x.message) for x in w), [str(x.message) for x in w])
        self.assertEqual(c.register("ns/pod", 0, 1).epoch, 0)
        self.assertIsNone(c.poll())

    def test_socket_that_appears_is_waited_for(self):
        path = os.path.join(self.dir, "agent.sock")
        threading.Timer(0.3, lambda: self.addCleanup(FakeAgent(path, resume={"epoch": 2, "path": "/c"}).close)).start()
        c = Client(path, wait=5.0)
        self.assertTrue(c.connected)
        self.assertEqual(c.register("", 0, 1), ResumePoint(2, "/c"))
        c.close()

    def test_other_listener_is_still_refused(self):
        self.agent()
        os.environ[ENV_AGENT_UID] = str(os.getuid() + 1)  # another uid than the listener's
        with self.assertRaises(PermissionError):
            Client(os.path.join(self.dir, "agent.sock"))

    def test_loop_without_agent_trains_to_the_end(self):
        saved = []
        job = Preemptible(lambda e, s: saved.append((e, s)) or None, handle_sigterm=False)
        self.assertEqual(job.resume, ResumePoint(0))
        for epoch in range(job.resume.epoch, 3):
            job.epoch_begin(epoch)
            for _ in range(4):
                job.step_done()
            job.epoch_done(epoch, 4, 400)
        self.assertEqual(job.finish(), 0)
        self.assertEqual(saved, [], "nothing asked for a checkpoint")


class WithAgent(Env):
    def test_protocol_lines(self):
        a = self.agent(resume={"epoch": 3, "path": "/ckpt/3.pt", "worldSize": 2, "referenceWorldSize": 4})
        os.environ[ENV_AGENT_UID] = str(os.getuid())
        with Client(a.path) as c:
            self.assertTrue(c.connected)
            self.assertEqual(c.register("team/p", 1, 2), ResumePoint(3, "/ckpt/3.pt", 2, 4))
            c.epoch_begin(3)
            c.epoch_end(3, 5, 50)
        self.assertEqual(a.calls, [
            {"op": "register", "pod": "team/p", "rank": 1, "world_size": 2},
            {"op": "epoch_begin", "epoch": 3},
            {"op": "epoch_end", "epoch": 3, "samples": 5, "bytes": 50},
        ])

    def _train(self, job, epochs, steps, on_step=None):
        try:
            for epoch in range(job.resume.epoch, epochs):
                job.epoch_begin(epoch)
                for step in range(steps):
                    if on_step:
                        on_step(epoch, step)
                    job.step_done()
                job.epoch_done(epoch)
        except Suspended as s:
            return s
        return job.finish()

    def _saver(self, saved):
        def save(epoch, step):
            path = os.path.join(self.dir, f"c-{epoch}-{step}")
            with open(path, "wb") as f:
                f.write(b"x" * 1000)
            saved.append((epoch, step))
            return path
        return save

    def test_boundary_request_saves_at_the_epoch_end(self):
        a = self.agent(resume={"epoch": 1, "path": os.path.join(self.dir, "c-1-0")})
        saved = []
        job = Preemptible(self._saver(saved), handle_sigterm=False, poll_interval=0)

        def ask(epoch, step):
            if (epoch, step) == (2, 1):
                a.request = {"id": "r1", "mode": "boundary"}
        s = self._train(job, 5, 4, ask)
        self.assertIsInstance(s, Suspended)
        self.assertEqual((s.code, s.reason, s.epoch, s.step, s.request.id), (EXIT_SUSPENDED, "boundary", 3, 0, "r1"))
        self.assertEqual(saved, [(3, 0)])
        done = a.ops("checkpoint_done")
        self.assertEqual(len(done), 1)
        self.assertEqual({k: done[0][k] for k in ("request_id", "epoch", "path", "bytes")},
                         {"request_id": "r1", "epoch": 3, "path": os.path.join(self.dir, "c-3-0"), "bytes": 1000})
        # The epoch was ended before the checkpoint was reported.
        self.assertLess(a.calls.index(a.ops("epoch_end")[-1]), a.calls.index(done[0]))

    def test_now_request_acknowledges_the_newest_checkpoint(self):
        a = self.agent()
        saved = []
        job = Preemptible(self._saver(saved), handle_sigterm=False, poll_interval=0, ckpt_every=1)

        def ask(epoch, step):
            if (epoch, step) == (1, 2):
                a.request = {"id": "r2", "mode": "now"}
        s = self._train(job, 5, 4, ask)
        self.assertEqual((s.reason, s.epoch, s.step), ("now", 1, 0))
        self.assertEqual(saved, [(1, 0)], "a now request saves nothing")
        done = a.ops("checkpoint_done")
        self.assertEqual([(d["request_id"], d["epoch"], d["path"]) for d in done], [("r2", 1, os.path.join(self.dir, "c-1-0"))])

    def test_latest_record_under_the_agent_only_at_its_epoch(self):
        latest = os.path.join(self.dir, "latest.json")
        ckpt = os.path.join(self.dir, "c-2-3")
        open(ckpt, "w").close()
        with open(latest, "w") as f:
            json.dump({"epoch": 2, "step": 3, "path": ckpt}, f)
        self.agent(resume={"epoch": 2})
        job = Preemptible(lambda e, s: None, handle_sigterm=False, latest=latest)
        self.assertEqual(job.resume, ResumePoint(2, ckpt))
        job.close()
        os.unlink(os.path.join(self.dir, "agent.sock"))
        self.agent(resume={"epoch": 1})
        job = Preemptible(lambda e, s: None, handle_sigterm=False, latest=latest)
        self.assertEqual(job.resume, ResumePoint(1), "the agent's epoch comes first")
        job.close()


# A child that trains 3 epochs of 50 steps of 20 ms with Preemptible, printing each step and
# each save; argv: the checkpoint directory.
CHILD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[2])
from pickyman_agent import Preemptible, Suspended
d = sys.argv[1]
def save(epoch, step):
    path = os.path.join(d, f"ckpt-{epoch}-{step}")
    with open(path, "w") as f:
        f.write("x" * 10)
    print("saved", epoch, step, flush=True)
    return path
job = Preemptible(save, latest=os.path.join(d, "latest.json"))
start_step = 0
if job.resume.path:
    start_step = int(job.resume.path.rsplit("-", 1)[1])
print("resume", job.resume.epoch, start_step, flush=True)
for epoch in range(job.resume.epoch, 3):
    first = start_step if epoch == job.resume.epoch else 0
    job.epoch_begin(epoch, first)
    for step in range(first, 50):
        time.sleep(0.02)
        print("step", epoch, step, flush=True)
        job.step_done()
    job.epoch_done(epoch)
print("done", flush=True)
sys.exit(job.finish())
"""


class Sigterm(Env):
    def _start(self, env):
        return subprocess.Popen([sys.executable, "-c", CHILD, self.dir, os.path.join(HERE, "..")],
                                stdout=subprocess.PIPE, text=True, env=env)

    def _run_until_sigterm(self, env, at_step):
        p = self._start(env)
        lines = []
        for line in p.stdout:
            lines.append(line.split())
            if lines[-1] == ["step", "1", str(at_step)]:
                p.send_signal(signal.SIGTERM)
                break
        out = p.stdout.read()
        p.stdout.close()
        code = p.wait(timeout=30)
        lines += [l.split() for l in out.splitlines()]
        return code, lines

    def test_sigterm_saves_after_the_step_and_exits_143(self):
        env = {k: v for k, v in os.environ.items() if k not in (ENV_SOCKET, ENV_AGENT_UID)}
        code, lines = self._run_until_sigterm(env, 10)
        self.assertEqual(code, EXIT_SUSPENDED, lines)
        saves = [l for l in lines if l[0] == "saved"]
        self.assertEqual(len(saves), 1, lines)
        epoch, step = int(saves[0][1]), int(saves[0][2])
        self.assertEqual(epoch, 1)
        # Saved after the step in progress (or one of the next few, as the signal comes when
        # this process has read the line), long before the epoch's end at step 50.
        self.assertTrue(11 <= step <= 20, lines)
        last = [l for l in lines if l[0] == "step"][-1]
        self.assertEqual((int(last[1]), int(last[2]) + 1), (epoch, step), "no step after the save")
        with open(os.path.join(self.dir, "latest.json")) as f:
            self.assertEqual(json.load(f), {"epoch": 1, "step": step, "path": os.path.join(self.dir, f"ckpt-1-{step}")})

        # Run again (no agent): it resumes from the recorded step and finishes.
        p = self._start(env)
        out, _ = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, out)
        got = [l.split() for l in out.splitlines()]
        self.assertEqual(got[0], ["resume", "1", str(step)])
        self.assertEqual(got[1], ["step", "1", str(step)])
        self.assertEqual(got[-1], ["done"])

    def test_sigterm_acknowledges_a_pending_now_request(self):
        a = self.agent()
        env = dict(os.environ, **{ENV_SOCKET: a.path, ENV_AGENT_UID: str(os.getuid())})
        p = self._start(env)
        for line in p.stdout:
            if line.split() == ["step", "1", "5"]:
                # A now request the child has not polled yet: its SIGTERM save answers it. The
                # lock holds back an answer to a poll until the signal is sent.
                with a.lock:
                    a.request = {"id": "kill", "mode": "now"}
                    p.send_signal(signal.SIGTERM)
                break
        p.stdout.read()
        p.stdout.close()
        self.assertEqual(p.wait(timeout=30), EXIT_SUSPENDED)
        done = a.ops("checkpoint_done")
        self.assertEqual(len(done), 1, a.calls)
        self.assertEqual(done[0]["request_id"], "kill")
        self.assertEqual(done[0]["epoch"], 1, "a mid-epoch checkpoint resumes in the epoch in progress")
        self.assertTrue(done[0]["path"].startswith(os.path.join(self.dir, "ckpt-1-")), done[0])
        self.assertEqual(done[0]["bytes"], 10)

    def test_sigterm_does_not_acknowledge_a_boundary_request_mid_epoch(self):
        a = self.agent(request={"id": "b", "mode": "boundary"})
        env = dict(os.environ, **{ENV_SOCKET: a.path, ENV_AGENT_UID: str(os.getuid())})
        p = self._start(env)
        for line in p.stdout:
            if line.split() == ["step", "0", "5"]:
                p.send_signal(signal.SIGTERM)
                break
        p.stdout.read()
        p.stdout.close()
        self.assertEqual(p.wait(timeout=30), EXIT_SUSPENDED)
        self.assertEqual(a.ops("checkpoint_done"), [], "the agent refuses a boundary checkpoint inside an epoch")


class Package(unittest.TestCase):
    def test_typed_public_api(self):
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(pickyman_agent.__file__), "py.typed")))
        import inspect
        for name in pickyman_agent.__all__:
            obj = getattr(pickyman_agent, name)
            funcs = [obj] if inspect.isfunction(obj) else [
                f for n, f in vars(obj).items() if inspect.isfunction(f) and not n.startswith("_") or n == "__init__"
            ] if inspect.isclass(obj) else []
            for f in funcs:
                sig = inspect.signature(f)
                for p in sig.parameters.values():
                    if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                        self.assertIsNot(p.annotation, p.empty, f"{name}.{f.__name__}({p.name}) has no type")
                if f.__name__ != "__init__":
                    self.assertIsNot(sig.return_annotation, sig.empty, f"{name}.{f.__name__} has no return type")


if __name__ == "__main__":
    unittest.main()
