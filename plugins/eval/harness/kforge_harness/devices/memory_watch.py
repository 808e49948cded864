"""Device memory per process, as the driver reports it (NVML), read by the server from
outside the processes it watches: a candidate can allocate past torch's allocator limit
in its own process (native code, another allocator), never past what the driver counts.

The server never initialises CUDA; NVML is the management library beside it (no CUDA
context). Processes are matched by their PID in the server's PID namespace, which is how
NVML reports them on a host; where the server itself runs in a container that hides the
host's PIDs, NVML's PIDs match none and the watch sees nothing (usage_by_pid is empty)."""

import ctypes
import sys

# What a process holds beyond what it was admitted with before it is stopped: its CUDA
# context (~500 MiB on an H100) and the allocator's rounding are counted by the driver
# but not by the admission's estimate of the task's need.
SLACK_MB = 1024


class _ProcessInfo(ctypes.Structure):  # nvmlProcessInfo_t (v2 and v3)
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


class _ProcessInfoV1(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]


class MemoryWatch:
    def __init__(self, lib):
        self.lib = lib
        count = ctypes.c_uint()
        if lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            raise OSError("nvmlDeviceGetCount failed")
        self.handles = []
        for index in range(count.value):
            handle = ctypes.c_void_p()
            if lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) == 0:
                self.handles.append(handle)
        for name, struct in (("nvmlDeviceGetComputeRunningProcesses_v3", _ProcessInfo),
                             ("nvmlDeviceGetComputeRunningProcesses_v2", _ProcessInfo),
                             ("nvmlDeviceGetComputeRunningProcesses", _ProcessInfoV1)):
            if hasattr(lib, name):
                self.query, self.struct = getattr(lib, name), struct
                break
        else:
            raise OSError("NVML lists no compute processes")

    def usage_by_pid(self):
        """{pid: bytes of device memory} over every GPU (a sandboxed candidate sees only
        its own), or None when NVML cannot say now."""
        usage = {}
        for handle in self.handles:
            count = ctypes.c_uint(0)
            infos = None
            for _ in range(3):  # the list can grow between the two calls
                infos = (self.struct * max(1, count.value))()
                result = self.query(handle, ctypes.byref(count), infos)
                if result == 0:
                    break
                if result != 7:  # NVML_ERROR_INSUFFICIENT_SIZE: count now says how many
                    return None
            else:
                return None
            for info in infos[:count.value]:
                if info.usedGpuMemory < (1 << 63):  # NVML_VALUE_NOT_AVAILABLE is ~0
                    usage[info.pid] = usage.get(info.pid, 0) + info.usedGpuMemory
        return usage


def open_watch(device):
    """A MemoryWatch for a CUDA device's server, or None (the CPU, an NPU, no NVML)."""
    if device.type != "cuda":
        return None
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
        if lib.nvmlInit_v2() != 0:
            raise OSError("nvmlInit failed")
        return MemoryWatch(lib)
    except (OSError, AttributeError) as exc:
        print(f"kforge_harness: device memory cannot be watched from outside the candidates "
              f"({exc}): only torch's allocator limit holds them to their share", file=sys.stderr)
        return None
