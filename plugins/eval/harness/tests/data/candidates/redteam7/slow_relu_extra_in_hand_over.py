"""A slow ReLU (two passes of work per call) whose second pass is hidden from the call's
clock: forward computes relu(x) honestly; a dispatch mode entered at import performs an
extra pass over x when the hand-over's copy_ of that output runs (after the end event).
Against slow_relu_extra_in_call (the same work inside the call) this shows what the
server's clock lets a slower-than-reference candidate hide: timing_plan.charged charges
only what exceeds max_wall_gap_ms + max_gap_share * reference median + noise."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode

_pending = {}
_scratch = {}


class _Later(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.aten.copy_.default and "y" in _pending:
            y = _pending["y"]
            if args[1].data_ptr() == y.data_ptr():
                _pending.pop("y")
                x = _pending.pop("x")
                s = _scratch.get("s")
                if s is None or s.shape != x.shape:
                    s = _scratch["s"] = torch.empty_like(x)
                torch.clamp(x, min=0.0, out=s)  # the hidden pass
        return func(*args, **kwargs)


_Later().__enter__()


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        _pending["x"] = x
        _pending["y"] = y
        return y
