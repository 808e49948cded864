"""A process of the candidate's that leaves its tree: torch's DataLoader forks workers
from torch's frames, which the audit hook trusts. A worker (candidate code) starts a
DataLoader of its own whose worker (the grandchild) ignores SIGTERM and spins; the
worker gives up on it (timeout=1) and leaves by os._exit (not joining it). The grandchild, orphaned, is reparented to the nearest subreaper.
If that is above the process the server freezes (procs.descendants), the signal freezer
neither stops it nor counts its CPU time: it loads the machine while the reference is
timed. It stops itself after 60 s (a bounded probe). Forward is an honest ReLU."""
import multiprocessing
import os
import signal
import sys
import time

import torch


_MAIN = os.getpid()


class _Spin(torch.utils.data.Dataset):
    def __len__(self):
        return 1

    def __getitem__(self, i):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print(f"redteam7 grandchild {os.getpid()} ppid {os.getppid()}", file=sys.stderr, flush=True)
        end = time.monotonic() + 60
        x = spun = 0
        told = 0
        while time.monotonic() < end:
            if told < 25 and time.monotonic() > end - 58 + 2 * told:
                told += 1
                with open("/proc/1/cmdline", "rb") as f:
                    init = f.read()[:80]
                print(f"redteam7 grandchild {os.getpid()} ppid now {os.getppid()} (pid 1: {init}), "
                      f"spun {spun} rounds of 2 ms while the candidate was stopped", file=sys.stderr, flush=True)
            try:
                with open(f"/proc/{_MAIN}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[1].split()[0]
            except OSError:
                return torch.tensor([x])
            if state == b"T":  # the candidate is frozen: the reference is timed, or between calls
                stop = time.monotonic() + 0.002
                while time.monotonic() < stop:
                    x += 1
                spun += 1
            else:
                time.sleep(0.0005)
        return torch.tensor([x])


class _Leave(torch.utils.data.Dataset):
    def __len__(self):
        return 1

    def __getitem__(self, i):
        multiprocessing.current_process().daemon = False  # workers may not fork otherwise
        try:
            next(iter(torch.utils.data.DataLoader(_Spin(), num_workers=1, timeout=1)))
        except RuntimeError:
            pass
        os._exit(0)  # the worker leaves its spinning child behind (not joined)


try:
    next(iter(torch.utils.data.DataLoader(_Leave(), num_workers=1, timeout=30)))
except RuntimeError as exc:
    print(f"redteam7 worker ended: {str(exc)[:100]}", file=sys.stderr, flush=True)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
