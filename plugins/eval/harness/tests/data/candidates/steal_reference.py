# A hostile candidate: it looks for the reference store on disk (the harness's scratch
# directory under the system's temporary directory) and returns the stored right answer
# of the trial's shape, without computing anything. Inside its sandbox the store is out
# of sight, so all it can return is zeros.
import glob
import os
import tempfile

import numpy as np
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        roots = {tempfile.gettempdir(), "/tmp", os.environ.get("TMPDIR", "/tmp")}
        for root in roots:
            for path in glob.glob(os.path.join(root, "kforge-harness-*", "store", "*", "*-0.bin")):
                if os.path.getsize(path) == x.numel() * x.element_size():
                    values = np.fromfile(path, dtype=np.float32)
                    stolen = torch.from_numpy(values).view_as(x)
                    # Each trial has its own inputs: take the file that matches this one.
                    if torch.equal(stolen, torch.relu(x)):
                        return stolen.clone()
        return torch.zeros_like(x)
