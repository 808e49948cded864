"""What the machine that judges candidates runs: GPU model (and which card: its UUID),
driver, CUDA, torch, Triton, compilers, host (a Slurm step's node). The server reports it in its ready line (PROTOCOL.md), the eval plugin
hands it to the run store with every verdict of eval.run, and reports and `kforge compare`
show it, so that timings taken on different hardware or software are never compared
unawares.

The server must not initialise the device (its children fork from it), so the GPU is
described by `nvidia-smi` in a subprocess, never through torch.cuda. Every field is
best-effort: a tool that is missing leaves its field out rather than failing the server."""

import os
import platform
import re
import shutil
import socket
import subprocess

_TOOL_TIMEOUT_S = 10


def _first_line(command):
    """The first non-empty line a tool prints, or None when it is missing or fails."""
    if shutil.which(command[0]) is None:
        return None
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return lines[0] if lines else None


def _nvcc_release():
    """`nvcc --version` ends with e.g. 'Cuda compilation tools, release 12.4, V12.4.131'."""
    if shutil.which("nvcc") is None:
        return None
    try:
        done = subprocess.run(["nvcc", "--version"], capture_output=True, text=True,
                              timeout=_TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"release ([0-9.]+), (V[0-9.]+)", done.stdout)
    return f"{match.group(1)} ({match.group(2)})" if match else None


def _visible_index(index):
    """The physical GPU a process-local CUDA index names, under CUDA_VISIBLE_DEVICES (numeric
    lists only; UUIDs are matched by nvidia-smi's own query instead)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if not visible:
        return str(index)
    entries = [entry.strip() for entry in visible.split(",") if entry.strip()]
    return entries[index] if index < len(entries) else None


def nvidia_gpu(index):
    """(model, driver) of CUDA device `index` by nvidia-smi, or (None, None). nvidia-smi
    counts in PCI bus order, as CUDA does with CUDA_DEVICE_ORDER=PCI_BUS_ID."""
    physical = _visible_index(index)
    if physical is None:
        return None, None
    line = _first_line(["nvidia-smi", f"--id={physical}", "--query-gpu=name,driver_version",
                        "--format=csv,noheader"])
    if not line or "," not in line:
        return None, None
    name, driver = (part.strip() for part in line.rsplit(",", 1))
    return name or None, driver or None


def nvidia_gpu_uuid(index):
    """The UUID of CUDA device `index` by nvidia-smi (which card of a model judged: a cluster's
    report tells its GPUs apart by it), or None."""
    physical = _visible_index(index)
    if physical is None:
        return None
    return _first_line(["nvidia-smi", f"--id={physical}", "--query-gpu=uuid", "--format=csv,noheader"])


def _host():
    """The machine's name: its Slurm node name inside a job step (what Slurm's tools and
    reports call it), else the host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def _cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def describe(device, torch, triton_version):
    """The environment of a server for `device` (a devices.Device) as a flat dict of strings;
    fields that cannot be learnt are left out."""
    facts = {
        "device": device.name,
        "host": _host(),
        "os": platform.platform(),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
        "torch": getattr(torch, "__version__", None),
        "triton": triton_version,
        "cuda": getattr(getattr(torch, "version", None), "cuda", None),
        "nvcc": _nvcc_release(),
        "cxx": _first_line(["c++", "--version"]),
    }
    if device.type == "cuda":
        facts["gpu"], facts["driver"] = nvidia_gpu(device.index)
        facts["gpu_uuid"] = nvidia_gpu_uuid(device.index)
    return {key: str(value) for key, value in facts.items() if value}
