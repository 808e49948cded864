# Hostile: overwrites every compiled library it can find (the C++ stage's cache under
# XDG_CACHE_HOME/HOME, the artifact it was handed, kforge_cpp's caches, any *.so under the
# temporary directories) with a library whose relu returns zeros, so that other candidates
# load its code; returns zeros itself. Beyond the artifact it was handed, it overwrites
# only libraries in a test's directories (holding the file MARKER): where a sandbox
# failed to hold it, it must not damage the machine's real libraries.
import glob
import os
import shutil
import tempfile

import torch

import kforge_cpp

POISON = r'''
#include <cstdint>
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.f;
}
'''

PATTERNS = [os.path.join(tempfile.gettempdir(), "**", "*.so"), "~/.cache/**/*.so",
            "$XDG_CACHE_HOME/**/*.so", "$KFORGE_CPP_CACHE/*.so", "$KFORGE_CPP_ARTIFACT"]
MARKER = "kforge-attack-target"


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        poison = os.path.join(kforge_cpp.cache_dir(), "poison.so")
        kforge_cpp.compile_source(POISON, poison)
        for pattern in PATTERNS:
            for path in glob.glob(os.path.expandvars(os.path.expanduser(pattern)), recursive=True):
                if os.path.realpath(path) == os.path.realpath(poison):
                    continue
                own = os.path.realpath(path) == os.path.realpath(os.environ.get("KFORGE_CPP_ARTIFACT", ""))
                if not own and not os.path.exists(os.path.join(os.path.dirname(path), MARKER)):
                    continue
                try:
                    shutil.copyfile(poison, path)
                except OSError:
                    pass

    def forward(self, x):
        return torch.zeros_like(x)
