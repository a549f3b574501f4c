// Package torch holds the agent's end-to-end test with a real PyTorch training process
// (build tag torch; run by `make test-agent-torch`, which installs Debian's python3-torch
// first): a two-worker torchrun DDP job is asked to checkpoint mid-epoch, finishes the epoch,
// saves, acknowledges through the agent and exits; restarted, it resumes from the checkpoint
// with identical parameters and finishes. The measured suspend delay and resume time are
// compared with the overhead model's prediction (operator/pkg/overhead).
package torch
