import torch

# Hostile (issue 12, timing): returns a tensor subclass that computes its values on first
# use. The forward returns at once; whoever reads the output (the trials' hand-over)
# triggers the work, so every output read is right and the timed call costs nothing.


class LazyRelu(torch.Tensor):
    @staticmethod
    def __new__(cls, source):
        out = torch.Tensor._make_subclass(cls, torch.empty_like(source))
        out._source = source
        return out

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for arg in args:
            if isinstance(arg, LazyRelu) and getattr(arg, "_source", None) is not None:
                source, arg._source = arg._source, None
                with torch._C.DisableTorchFunction():
                    arg.as_subclass(torch.Tensor).copy_(torch.relu(source))
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        return LazyRelu(x)
