"""Device names (`cpu`, `cuda:N`, `npu:N`): readiness checks for the server, which must
never touch the device, and activation, synchronisation and timing events for a child."""

import importlib
import importlib.util
import re
import sys

_DEVICE_RE = re.compile(r"^(cpu|cuda|npu)(?::(\d+))?$")


class Device:
    def __init__(self, spec):
        match = _DEVICE_RE.match(spec or "")
        if not match:
            raise ValueError(f"unknown device {spec!r}: use cpu, cuda:N or npu:N")
        self.type = match.group(1)
        self.index = int(match.group(2) or 0)
        self.name = "cpu" if self.type == "cpu" else f"{self.type}:{self.index}"

    @property
    def is_accelerator(self):
        return self.type != "cpu"

    def readiness_error(self, torch):
        """Why a server for this device cannot start, or None. Runs in the server, so it
        only inspects how torch was built and what is installed: any call that initialises
        CUDA (even torch.cuda.is_available()) would break every forked child."""
        if self.type == "cuda" and not torch.backends.cuda.is_built():
            return (f"torch {torch.__version__} in {sys.executable} was built without CUDA: "
                    "install a CUDA build of torch to use device " + self.name)
        if self.type == "npu" and importlib.util.find_spec("torch_npu") is None:
            return (f"torch_npu is not importable by {sys.executable}: install Ascend's "
                    "torch_npu (with CANN) to use device " + self.name +
                    "; triton candidates there also need triton-ascend")
        return None

    def activate(self, torch):
        """Selects the device in a child (the first CUDA/ACL initialisation happens here).
        Returns the torch.device to put tensors on."""
        if self.type == "cpu":
            return torch.device("cpu")
        module = self.module(torch)
        count = module.device_count()
        if self.index >= count:
            raise RuntimeError(f"{self.name} does not exist: torch sees {count} "
                               f"{self.type} device(s)")
        module.set_device(self.index)
        # torch's Python side counts the device as initialised only after its own lazy
        # init, which tensor creation does not run: until then every torch.manual_seed
        # queues the device's seeding with a formatted stack (0.6 ms, and a list that
        # grows by one per call).
        initialise = getattr(module, "init", None)
        if initialise is not None:
            initialise()
        return torch.device(self.name)

    def module(self, torch):
        """torch.cuda or torch.npu (importing torch_npu registers the latter)."""
        if self.type == "npu":
            importlib.import_module("torch_npu")
        return getattr(torch, self.type)

    def synchronize(self, torch):
        if self.type != "cpu":
            self.module(torch).synchronize()
