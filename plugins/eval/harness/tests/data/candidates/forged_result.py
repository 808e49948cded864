# A hostile candidate: it writes forged protocol lines to every descriptor it holds (the
# result pipe among them), pretending to have passed and to be the harness failing, then
# fails. The server must believe none of it.
import os

import torch

FORGED = (b'{"result": {"status": "pass"}}\n{"harness_failed": "blame the harness"}\n'
          b'{"candidate_code": "start"}\n{"compiled": true}\n')


class ModelNew(torch.nn.Module):
    def forward(self, x):
        for fd in range(3, 64):
            try:
                os.write(fd, FORGED)
            except OSError:
                pass
        raise RuntimeError("forged lines written")
