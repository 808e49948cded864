"""Looks for any way to know a timed call's inputs before its call (the `publish`
change): honest relu, plus
- a memo of every input it was given (trials and timed calls), keyed by the bytes'
  digest: a timed call whose inputs were seen before (a trial's seed reused, a slot
  left holding the next call's inputs) would be answered from it; hits are counted;
- at each timed call's preparation (awake, no clock running), the input slots are
  read: if either already held the next call's inputs (published early) or anything but
  an earlier call's inputs, that is counted;
- the descriptors and the memfd mappings of its process are listed (a staging buffer
  lent by mistake would show as a fifth "kforge-buffer").
Everything it learns goes to its log (the response's log_tail); its outputs are honest."""
import hashlib
import json as _json
import os
import sys
import types

import torch

import kforge_harness.protocol.reporter as _reporter
import kforge_harness.candidate.candidate as _child

_seen = {}
_stats = {"calls": 0, "memo_hits": 0, "other_slot_new": 0, "other_slot_old": 0}
_child_ref = {}
_orig_prepare = _child.CandidateChild._prepare_call


def _digest(t):
    return hashlib.sha256(t.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()


def _probe(self, slot):
    buffer = self.buffers.get(f"input{slot}")
    if buffer is None:
        return
    n = 512 * 1024 * 4
    key = hashlib.sha256(bytes(buffer.raw[:min(n, buffer.nbytes)].numpy())).hexdigest()
    _stats["other_slot_old" if key in _seen else "other_slot_new"] += 1


def _prepare_call(self, command):
    # Each timed call's preparation (no clock runs, the child is awake): the other slot
    # holds the previous call's inputs, and the slot being prepared an earlier call's
    # (from the third call on), unless the next inputs reached either early.
    _child_ref["self"] = self
    _probe(self, 1 - command["slot"])
    if command["prepare"] >= 2:
        _probe(self, command["slot"])
    return _orig_prepare(self, command)


_child.CandidateChild._prepare_call = _prepare_call


def _loads(line, *args, **kwargs):
    command = _json.loads(line, *args, **kwargs)
    if isinstance(command, dict) and isinstance(command.get("time"), dict):
        print(f"probe: {command['time'].get('label')} loop begins; so far {_stats}", file=sys.stderr)
    return command


_reporter.json = types.SimpleNamespace(loads=_loads, dumps=_json.dumps)


def _listing():
    found = []
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            target = os.readlink('/proc/self/fd/' + name)
            if "memfd" in target:
                info = os.fstat(int(name))
                target += f" ino={info.st_ino} size={info.st_size}"
            found.append(f"{name}->{target}")
        except OSError as exc:
            found.append(f"{name}->?{exc.errno}")
    with open("/proc/self/maps", encoding="ascii", errors="replace") as handle:
        memfds = [line.split()[0] + " " + line.split()[-2] for line in handle if "memfd" in line]
    return found, memfds


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        fds, memfds = _listing()
        print(f"probe: fds {fds}", file=sys.stderr)
        print(f"probe: memfd mappings {memfds}", file=sys.stderr)
        for pid in (1, 2, 3):
            try:
                print(f"probe: /proc/{pid}/fd {os.listdir(f'/proc/{pid}/fd')}", file=sys.stderr)
            except OSError as exc:
                print(f"probe: /proc/{pid}/fd refused ({exc.errno})", file=sys.stderr)

    def forward(self, x):
        key = hashlib.sha256(bytes(x.reshape(-1)[:512 * 1024].contiguous().view(torch.uint8).numpy())).hexdigest()
        _stats["calls"] += 1
        if key in _seen:
            _stats["memo_hits"] += 1
            return _seen[key].clone()
        out = torch.relu(x)
        _seen[key] = out.clone()
        print(f"probe: {_stats}", file=sys.stderr) if _stats["calls"] % 10 == 0 else None
        return out
