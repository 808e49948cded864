"""HONEST: a ReLU whose model keeps 4 GiB of its own buffers from its constructor on
(CROWD_MB in 32 MiB pieces: precomputed tables, weights kept in a second layout -- a
candidate may use more memory than the reference). The arena is the reference's peak
plus 256 MiB (server.py _arena_mb); the pieces fill it first, the rest go to cuMemAlloc
(arena.py allocate's fallback), and since that fallback never fails, the caching
allocator never frees its cache back into the arena: every later allocation, the
call's output included, lies outside it. So each timed call's output is copied by the
child at its own cost and the verdict flagged outputs_copied_in_child, while the
reference pays no copy.

Expected (fairness): on a 256 MB ReLU (~0.11 ms) charged its ReLU plus one 256 MB copy,
speedup ~0.5 for the reference's own kernel (CROWD_MB = 0, its control: ~1.0)."""
import torch

CROWD_MB = 4096
PIECE_MB = 32


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.crowd = [torch.empty(PIECE_MB << 20, dtype=torch.uint8, device="cuda")
                      for _ in range(CROWD_MB // PIECE_MB)]

    def forward(self, x):
        return torch.relu(x)
