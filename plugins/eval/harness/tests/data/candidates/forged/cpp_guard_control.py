"""Control for cpp_guard_stripped: the same torch-computed `cpp` candidate without the
encode rebinding (the compute guard's record reaches the server)."""
import torch

_op = getattr(torch, "re" + "lu")


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return _op(x)
