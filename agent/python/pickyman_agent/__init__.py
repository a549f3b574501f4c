"""Client for the PickyMan node agent's local API (standard library only).

A training process calls the agent on the node over a Unix socket whose path is in the
environment variable PICKYMAN_AGENT_SOCKET. The wire format is line-delimited JSON, one
request and one response per line; the protocol is described in agent/pkg/protocol/doc.go
(the pod annotations and exit codes in api/agent/v1alpha1/doc.go) and docs/agent.md.

With a plain PyTorch (DDP) loop, Preemptible does the polling, the agreement between ranks,
the acknowledgement and the exit code (see pickyman_agent.preemptible)::

    from pickyman_agent import Preemptible
    job = Preemptible(save)                             # save(epoch, step) -> path or None
    for epoch in range(job.resume.epoch, epochs):
        job.epoch_begin(epoch)
        for batch in loader:
            ...train one step...
            job.step_done()
        job.epoch_done(epoch)
    job.finish()

Outside PickyMan (no agent socket) every call is a no-op. The calls themselves, in every
rank::

    from pickyman_agent import Client, EXIT_SUSPENDED
    agent = Client()
    start = agent.register(pod, rank, world_size)      # ResumePoint(epoch, path, world_size,
                                                        #   reference_world_size)
    for epoch in range(start.epoch, epochs):
        agent.epoch_begin(epoch)
        ...train...
        agent.epoch_end(epoch, samples, nbytes)
        req = agent.poll()                              # CheckpointRequest or None
        if req:
            ...save...
            agent.checkpoint_done(req.id, epoch + 1, path, nbytes, seconds)
            sys.exit(EXIT_SUSPENDED)
"""

from .client import (
    AgentError,
    CheckpointRequest,
    Client,
    ResumePoint,
    ENV_AGENT_UID,
    ENV_SOCKET,
    EXIT_DONE,
    EXIT_SUSPENDED,
    MODE_BOUNDARY,
    MODE_NOW,
    check_peer,
    pod_from_env,
)
from .preemptible import Preemptible, Suspended

__all__ = [
    "AgentError",
    "CheckpointRequest",
    "Client",
    "Preemptible",
    "ResumePoint",
    "Suspended",
    "ENV_AGENT_UID",
    "ENV_SOCKET",
    "EXIT_DONE",
    "EXIT_SUSPENDED",
    "MODE_BOUNDARY",
    "MODE_NOW",
    "check_peer",
    "pod_from_env",
]
