"""A kernelbenchx unit whose argument is a CPU tensor on a GPU task (redteam20/cpu_row_sum,
64 MB in, 16 KB out). The harness's child (kbx_calls.LentUnit) gives the function a CPU
copy of the slot's device view: `fill` (device to host, 64 MB) before the call and
`write_back` (host to device, 64 MB) after it, inside the bracket, with the clock's bound
copy: both "grow with the bytes", so they are counted apart from harness_ms and the
reference's are refunded whole with its gap (README, "What it does not protect").

This candidate replaces kbx_calls.LentUnit (a module attribute kbx.py looks up per call,
as red team 12 did) with a subclass:
- MODE "skip_write_back": write_back does nothing and every report says 0 ms (the
  clock alone times it; its control "harness_liar" reports 0 ms with the copies done). The function does not change x, so the
  slot is unchanged and the host's inputs-unchanged check passes; the function's work is
  the honest CPU row sum of the filled copy. Gain: the reference's write_back, refunded: the clock shows
  the forward less it, at or below zero, so the charge is what the noise and the floor
  make it.
- MODE "read_slot": fill does nothing either, and the function
  reads the slot's device view the copy was meant to be filled from (kept per copy) and
  sums its rows on the GPU: what an honest GPU kernel would pay to get x on the device
  (its own host-to-device copy) is gone, and the refund of the reference's fill and
  write_back is left over for the clock to subtract.
The test makes the others by replacing the MODE line: "skip_write_back", and the controls
"harness" (the harness's own path, an honest CPU row sum) and "gpu_honest" (x moved to
the device by the function itself, then summed there, with the harness's fill and
write_back)."""
import torch

from kforge_harness.tasks import kbx_calls

MODE = "read_slot"  # or "skip_write_back"; controls "harness", "harness_liar", "gpu_honest"
WRITE_BACK = MODE in ("harness", "harness_liar", "gpu_honest")
READ_SLOT = MODE == "read_slot"
GPU_HONEST = MODE == "gpu_honest"
LIE = MODE in ("skip_write_back", "harness_liar")  # every call's report cut to 0 ms
_slot_of = {}


class _Lean(kbx_calls.LentUnit):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for view, value in self.copied:
            _slot_of[value.data_ptr()] = view

    def fill(self, copy):
        if not READ_SLOT:
            super().fill(copy)

    def write_back(self, copy):
        if WRITE_BACK:
            super().write_back(copy)


kbx_calls.LentUnit = _Lean

if LIE:
    # The harness's own loop, its bound _send rebound on the instance for the loop's time.
    import kforge_harness.candidate.candidate as _child

    _harness_loop = _child.CandidateChild._timed_loop

    def _lying_loop(self, model):
        send = self._send
        self._send = lambda message: send(dict(message, ms=0.0) if "called" in message else message)
        try:
            return _harness_loop(self, model)
        finally:
            self._send = send

    _child.CandidateChild._timed_loop = _lying_loop


def cpu_row_sum(x: torch.Tensor) -> torch.Tensor:
    if READ_SLOT:
        view = _slot_of.get(x.data_ptr())
        if view is not None:
            return view.sum(dim=1)
    if GPU_HONEST and torch.cuda.is_available():
        return x.to("cuda", non_blocking=False).sum(dim=1)
    return x.sum(dim=1)


# Seen on an H200 (the lead's working tree of 01:20 UTC, via the device tool;
# reference 0.95 to 1.09 ms, its gap 46 to 60 ms: the 64 MB fill and write_back are
# pageable copies, reference_harness_ms 0.37 to 0.48):
# - read_slot: pass 9.77x (candidate_ms 0.1, the floor; speedup_confirmed,
#   below_clock_resolution), against gpu_honest 0.117x (8.32 ms: its own host-to-device
#   copy of x) and harness 0.353x and 1.0. One run.
# - skip_write_back (lying): 10.40x (speedup_confirmed, below_clock_resolution,
#   speedup_over_10x, charged to the 0.1 ms floor), 1.0, 1.0, 2.18x (0.438 ms), 1.0;
#   harness_liar 1.0, 0.117x (timing_by_clock), 1.0. Skipping write_back with an honest
#   report gained nothing (0.986x): the clock only raises a report.
