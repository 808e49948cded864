"""The runtime guard's tables are shared with its sealed copy: install() copies the
module's globals (a shallow dict copy), so _INTERNALS (a set) and _ACTIONS (a dict) are
the very objects the hook reads. Emptied from the module, nothing is refused: a frame,
the garbage collector's objects, code from a string, ctypes. Each escape below is one
the guard refuses to a candidate that did not empty them (UNSEAL = False: the control)."""
import builtins
import sys

import torch

import kforge_harness.anticheat.guards as _g

UNSEAL = True
if UNSEAL:
    _g._INTERNALS.clear()
    _g._ACTIONS.clear()

_frame = sys._getframe(0)                     # sys._getframe
_back = _frame.f_back                         # object.__getattr__ f_back
getattr(builtins, "ex" + "ec")("_RT19X = 1")   # exec / compile of a string
import gc  # noqa: E402
_n = len(gc.get_objects())                    # gc.get_objects
import ctypes  # noqa: E402
_libc = ctypes.CDLL(None)                     # ctypes.dlopen
_pid = _libc.getpid()                         # ctypes.call_function
print(f"RT19X unsealed: frame {_back is not None}, {_n} objects, getpid {_pid}", file=sys.stderr)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
