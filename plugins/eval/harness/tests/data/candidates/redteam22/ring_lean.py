"""A lean timed loop (it replaces CandidateChild._timed_loop, as red team 21's early ring
did) that reports 0 ms for every call, so that the server's clock alone charges it, and
rings the task host's doorbell with its outputs' arena offsets at a moment of its
choosing (MODE). Its controls are this file with MODE "after_sync": the harness's own
order (the work, a sync, the ring). Knobs (VARIANTS in tests/test_attacks_redteam22.py):

MODE "drain" (attack 1 and 3): ring FIRST, before any work is launched, then watch the
    doorbell pipe (FIONREAD on the child's own write end: a pipe's ioctl counts the bytes
    it holds from either end) until the task host has read the ring. The host reads it in
    doorbell.heard(), which _answer_ring calls right AFTER _heard() queued its probe
    kernel: the probe is then already queued on an idle device and measures "not busy"
    (a few microseconds), so min(answer, busy) charges nothing. Only then is the work
    launched: it runs while the host checks the offsets and queues its copies (the
    "answer" that an honest child's bracket holds after its work, refunded with the
    reference's gap). The host's copies are launched one by one after that, each behind
    the probe, not behind the child's kernel (another context): on a task with many
    outputs (rows_relu: 256 copies queued at several microseconds each, against a
    kernel that writes a row in about 2 us) every copy is launched after its row is
    written, so the outputs are right and the whole kernel is hidden in the refunded
    answer. On one output (relu 256 MB) the copy starts some tens of microseconds into
    the kernel and races it: either it trails the kernel's writes (right outputs, the
    kernel hidden: HOLE) or it overtakes them (stale rows, caught by a spot check:
    cheat_detected, secure).
MODE "after_launch" (attack 2, with OP "clone"): red team 21's early ring (the work
    launched, then the ring, then a sync), but the work is a device-to-device
    cudaMemcpyAsync (torch's copy_ of a contiguous tensor): copy-engine work. The probe
    is a kernel on the compute engine, which the child's context does not occupy: it may
    run at once, reporting the device idle while the child's copy still runs, and the
    host's answer runs beside that copy unseen.
MODE "after_sync": the control (the harness's order).

OP: "relu" or "clone" (the task's operation). ROWS: the outputs are the rows of one
tensor (rows_relu, rows_clone: one kernel or one copy for all 256 outputs; the offsets
are the base's plus i rows). Every 10 calls the loop prints to stderr how long it waited
for the host to read the ring (microseconds) and whether FIONREAD worked (fallback: a
fixed spin of FALLBACK_US)."""
import array
import fcntl
import statistics
import sys
import termios
import time

import torch

import kforge_harness.candidate.candidate as _child

MODE = "drain"
OP = "relu"
ROWS = False
LIE_MS = 0.0
POST_US = 5.0  # after the host read the ring: its probe launched and run on an idle device
FALLBACK_US = 60.0  # where FIONREAD does not work: about a host's wake-up and probe
WAIT_LIMIT_S = 0.05  # never wait longer for the host (a host that does not listen): "timeout" in the log then means the attack misfired, not that it was caught
_views = {}
_kept = {}
_waits = []
_how = {"fionread": 0, "fallback": 0, "timeout": 0}


def _op(x):
    if OP == "clone":
        out = torch.empty_like(x)
        out.copy_(x)  # same device, same dtype, contiguous: cudaMemcpyAsync device to device
        return out
    return torch.relu(x)


def _spin(us):
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass


def _wait_heard(fd):
    """Until the host has read what we rang (the pipe is empty); the microseconds waited."""
    began = time.perf_counter()
    count = array.array("i", [0])
    try:
        while True:
            fcntl.ioctl(fd, termios.FIONREAD, count, True)
            if count[0] == 0:
                _how["fionread"] += 1
                break
            if time.perf_counter() - began > WAIT_LIMIT_S:
                _how["timeout"] += 1
                break
    except OSError:
        _how["fallback"] += 1
        _spin(FALLBACK_US)
    waited = (time.perf_counter() - began) * 1e6
    _spin(POST_US)
    return waited


def _offsets(self, out):
    if self._arena is None:
        return None
    base = self._arena.offsets([out])
    if base is None:
        return None
    if not ROWS:
        return base
    step = out[0].numel() * out.element_size()
    return [base[0] + i * step for i in range(out.shape[0])]


def _lean_loop(self, model):
    self._send({"prepared": True})
    slot = None
    fd = getattr(getattr(self._ring, "__self__", None), "fd", None)
    calls = 0
    while True:
        command = self._command()
        if command is None:
            return None
        _kept.clear()
        if "prepare" in command:
            slot = command["slot"]
            if slot not in _views:
                _views[slot] = self.session.lend_inputs(self.buffers.get(f"input{slot}"),
                                                        command["inputs"])(None, None)[0]
            self._send({"prepared_for": command["prepare"]})
            continue
        if "call" not in command:
            return command
        x = _views[slot]
        if MODE == "drain":
            # Where the output will lie: the caching allocator gives this call the block
            # the last call's output (freed at this command, _kept.clear()) had.
            out = torch.empty_like(x)
            offsets = _offsets(self, out)
            self._ring(offsets)
            _waits.append(_wait_heard(fd) if fd is not None else (_spin(FALLBACK_US) or FALLBACK_US))
            if OP == "clone":
                out.copy_(x)
            else:
                torch.clamp(x, min=0, out=out)
            torch.cuda.synchronize()
        else:
            out = _op(x)
            offsets = _offsets(self, out)
            if MODE == "after_launch":
                self._ring(offsets)
                torch.cuda.synchronize()
            else:
                torch.cuda.synchronize()
                self._ring(offsets)
        _kept["out"] = out  # alive until the next command, as the harness keeps it
        report = {"called": command["call"], "ms": LIE_MS, "tail_ms": 0.0}
        if offsets is None:
            report["copied"] = True  # not expected: no arena (the RT22 line says so)
        self._send(report)
        calls += 1
        if calls % 10 == 0:
            print(f"RT22 ring_lean MODE={MODE} OP={OP} ROWS={ROWS} calls={calls} offsets="
                  f"{'none' if offsets is None else len(offsets)} wait_us_median="
                  f"{statistics.median(_waits) if _waits else -1:.1f} how={_how}",
                  file=sys.stderr, flush=True)


_child.CandidateChild._timed_loop = _lean_loop


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = _op(x)
        return tuple(out.unbind(0)) if ROWS else out
