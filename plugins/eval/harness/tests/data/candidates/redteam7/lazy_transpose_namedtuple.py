"""redteam6's lazy_transposed_view inside a tuple subclass (a namedtuple would do, but
collections.namedtuple execs a string, which the audit hook refuses): timing.Clock.settle
walks only `type(out) is tuple` (and lists/dicts), while the hand-over's flat_leaves
unpacks any tuple subclass through tuple's own methods. The transposed view reaches the
hand-over's copy_ unsettled, and the transpose runs there, after the end event."""
import torch


class Out(tuple):
    pass


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return Out(((x * 2.0).t(),))
