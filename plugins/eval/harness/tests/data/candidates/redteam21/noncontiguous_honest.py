"""HONEST: a ReLU whose output tensor has the right shape, dtype and values but is not
contiguous, as many honest kernels return it (a transposed result, C^T = (B^T A^T)
computed and returned as .t(); a padded Triton output sliced back to its size).

MODE "transpose": torch.relu(x.t().contiguous()).t() -- right values, strides (1, B).
MODE "padded":    torch.relu(F.pad(x, (0, 64)))[:, :D] -- right values, row stride D+64.

Trials: the harness copies the output into the slot with clock.copy, which honours
strides. Timed calls on a CUDA device with an arena: the task host copies leaf.nbytes
raw bytes from the tensor's data_ptr (host.py _copy_out; Arena.offsets in arena.py takes
data_ptr() and numel()*element_size() only, and candidate.py _place has no contiguity
check), which would be the storage's order, not the tensor's -- but the harness's loop
settles every output right after its events (timing.py Clock.settle: .contiguous(),
resolve_neg/conj, allocated on the main thread, so in the arena). Expected: SECURE
(pass) in the harness's loop; a regression test for the day settle moves or the arena
path takes outputs before it. A lean loop of the candidate's own that rings a strided
tensor's offset only hurts itself (its outputs judged in storage order)."""
import torch
import torch.nn.functional as F

MODE = "transpose"


class ModelNew(torch.nn.Module):
    def forward(self, x):
        if MODE == "transpose":
            return torch.relu(x.t().contiguous()).t()
        return torch.relu(F.pad(x, (0, 64)))[:, :x.shape[1]]
