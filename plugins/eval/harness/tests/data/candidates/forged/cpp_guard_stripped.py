"""A `cpp` candidate with no kernel at all: torch computes its forward (the compute guard,
a dispatch mode during each trial's forward, records "torch computed aten::relu"), and
the record is erased on its way out: the child sends the guard's record in its trial
report ({"trial", "facts", "guard"}), and Channel.send looks up `protocol.encode` in the
reporter module's globals at each call; the candidate rebinds it to drop "guard".
(torch.relu is reached through a built name for L1's sake.)"""
import torch
import kforge_harness.protocol as _protocol

_real_encode = _protocol.encode


def _encode(obj, *args, **kwargs):
    if isinstance(obj, dict) and "guard" in obj:
        obj = dict(obj, guard=[])
    return _real_encode(obj, *args, **kwargs)


_protocol.encode = _encode
_op = getattr(torch, "re" + "lu")


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return _op(x)
