"""The seeds of a request, derived from one secret.

`options.seed` is the run's secret seed (the C++ stage passes the engine's per-run
secret, `Job::run_seed()`, unless the pipeline sets `seed` to reproduce a run). Every
seed a child sees is derived from it and the task's id with SHA-256, so:
- nothing a candidate sees (its model seed, its trials' input seeds) lets it work out
  the secret, another task's seeds, or the seeds of a run not yet started: a table of
  answers built in advance for public seeds (KernelBench's 42 + 1 + trial) is useless;
- the same secret and task give the same seeds, so every candidate of a task in a run
  gets the same inputs (the reference is computed once per run) and a run is
  reproduced from the secret the store records (`runs.secret_seed`).
Only the trusted side (the server, the reference worker) derives the weight seed."""

import hashlib

# torch.manual_seed takes up to 2**64 - 1, NumPy's legacy seeding 2**32 - 1 (runner
# reduces it); 63 bits keep every seed a non-negative int64 as well.
_BITS = 63


def derive(secret, *labels):
    """A seed in [0, 2**63) from `secret` and `labels` (strings or integers)."""
    material = "\x1f".join(str(part) for part in (secret,) + labels).encode("utf-8")
    return int.from_bytes(hashlib.sha256(material).digest()[:8], "big") >> (64 - _BITS)


class RequestSeeds:
    """The seeds of one request for task `task_id` under `secret`."""

    def __init__(self, secret, task_id):
        self.secret = secret
        self.task_id = task_id

    @property
    def model(self):
        """Seeds torch (etc.) right before both constructors, Model and ModelNew: equal
        parameter shapes get equal default weights (KernelBench's convention)."""
        return derive(self.secret, self.task_id, "model")

    def model_redrawn(self, draw):
        """The model seed of the draw-th weights drawn again (draw >= 1), for a task whose
        output carries no information at the weights of the first (reference/host.py
        `plan`): a bias that saturates a clamp at some draws and not at others."""
        return derive(self.secret, self.task_id, "model", draw)

    def inputs(self, count):
        """Input seeds of trials 0..count-1."""
        return [derive(self.secret, self.task_id, "input", trial) for trial in range(count)]

    def varied(self, index):
        """Input seed of the index-th extra trial with scaled and shifted inputs (for a
        reference whose output is near-constant at its own input distribution)."""
        return derive(self.secret, self.task_id, "varied", index)
