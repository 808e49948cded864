"""Work deferred past the child's clock through the output's container: forward returns
a tuple subclass holding only the input; the hand-over (candidate._hand_over) unpacks it
with judge.outputs.flat_leaves, which iterates any list/tuple (isinstance), so the
subclass's __iter__ runs the convolution after Clock.call stopped. The _PLAIN type check
applies to the leaves, never to the container. The event time is ~0; the work lands in
the server's bracket, where timing_plan.charged should bill it."""
import torch
import torch.nn as nn


class _Lazy(tuple):
    def __iter__(self):
        conv, x = tuple.__getitem__(self, 0), tuple.__getitem__(self, 1)
        return iter([conv(x)])

    def __len__(self):
        return 1


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, groups=groups, bias=False)

    def forward(self, x):
        return _Lazy((self.conv, x))
