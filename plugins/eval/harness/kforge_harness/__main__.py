"""Command line: `python -m kforge_harness serve ...` (PROTOCOL.md) and the internal
`child` entry point that spawn mode execs."""

import argparse
import importlib
import os
import sys

from kforge_harness import HARNESS_VERSION, protocol
from kforge_harness.devices import Device


def _not_ready(message):
    sys.stdout.write(protocol.encode({"ready": False, "error": message}))
    sys.stdout.flush()
    return 1


def _prepare_triton():
    """Triton hashes its own compiler sources and libtriton (hundreds of MB) into every
    cache key, once per process, at the first kernel launch: ~0.5 s of a forked child's
    time. The hash is pure file I/O and lru_cached, so computing it here hands it to every
    child. Where a triton version keeps it elsewhere, children just pay it themselves."""
    for module_name in ("triton.runtime.cache", "triton.compiler.compiler"):
        try:
            key = getattr(importlib.import_module(module_name), "triton_key", None)
            if key is not None:
                key()
                return
        except Exception:  # noqa: BLE001 - a speed-up only; children compute it if need be
            continue


def _readiness(name):
    """(device, torch, None), or (None, None, why a server for device `name` cannot start
    with this interpreter)."""
    try:
        device = Device(name)
    except ValueError as exc:
        return None, None, str(exc)
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - any import failure means "not this python"
        return None, None, f"torch is not importable by {sys.executable}: {type(exc).__name__}: {exc}"
    problem = device.readiness_error(torch)
    return (None, None, problem) if problem else (device, torch, None)


def check_device(args):
    """The run-start check of a stage on a device: what serve would say, and, as this
    process is thrown away, whether the device is there (the server itself must not
    initialise it: its children fork from it)."""
    device, torch, problem = _readiness(args.device)
    if problem is None and device.is_accelerator:
        try:
            device.activate(torch)
        except Exception as exc:  # noqa: BLE001 - no driver, no such device: all one answer
            problem = f"{device.name} cannot be used by {sys.executable}: {type(exc).__name__}: {exc}"
    if problem:
        return _not_ready(problem)
    sys.stdout.write(protocol.encode({"ready": True}))
    return 0


def serve(args):
    device, torch, problem = _readiness(args.device)
    if problem:
        return _not_ready(problem)
    try:
        import triton
        triton_version = triton.__version__
    except Exception:  # noqa: BLE001 - triton is optional; a triton candidate says so
        triton_version = None
    else:
        _prepare_triton()
    # Everything a child needs is imported here, once, so a forked child starts warm.
    from kforge_harness import handover, sandbox  # noqa: F401
    from kforge_harness.anticheat import guards  # noqa: F401
    from kforge_harness.candidate import candidate  # noqa: F401
    from kforge_harness.devices import environment
    from kforge_harness.reference import host  # noqa: F401
    from kforge_harness.server import child, server  # noqa: F401
    from kforge_harness.tasks import runner  # noqa: F401
    if device.type == "cuda":
        # The arena's allocator (handover/arena.py), mapped before what the sandboxes
        # show is worked out: a candidate child has it (forked) or finds it (spawned).
        from kforge_harness.handover import arena
        arena.load_allocator_early()
    # What every sandbox shows (the libraries these imports mapped included): worked out
    # once, inherited by forked children, handed to spawned ones in a file.
    sandbox.prepare()
    scratch = args.scratch or None
    if scratch:
        os.makedirs(scratch, exist_ok=True)
    # Made before the ready line, which names how candidates are frozen between calls.
    from kforge_harness.server.freezer import Freezer
    freezer = Freezer.open()
    facts = environment.describe(device, torch, triton_version)
    facts["freezer"] = freezer.describe()
    sys.stdout.write(protocol.encode({
        "ready": True, "pid": os.getpid(), "python": sys.executable,
        "torch": torch.__version__, "triton": triton_version, "device": device.name,
        "mode": args.mode, "harness_version": HARNESS_VERSION,
        "environment": facts}))
    sys.stdout.flush()
    try:
        return server.Server(device, args.mode, args.max_children, scratch,
                             int(args.reference_store_mb) << 20, freezer).serve()
    except KeyboardInterrupt:  # Ctrl-C: serve() has killed the children on the way out
        return 130


def child_entry(args):
    """spawn mode: the freshly exec'd interpreter is one candidate child. It enters its
    sandbox before it imports anything that can start a thread (torch, numpy's BLAS and
    CUDA do at import on GPU hosts; enter() needs a single-threaded process): until then
    only modules that import neither are loaded, and what the sandbox shows is the
    server's answer (--sandbox-view), not one worked out from this process's imports."""
    from kforge_harness import sandbox
    from kforge_harness.server.child import candidate_main
    if not args.network:
        sandbox.load_view(args.sandbox_view)
    candidate_main(args.command_fd, args.result_fd, Device(args.device), args.workdir,
                   args.memory_base, args.hidden, args.network)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kforge_harness",
                                     description="kforge's isolated kernel-evaluation harness")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="serve requests on stdin (PROTOCOL.md)")
    serve_parser.add_argument("--device", default="cpu", help="cpu, cuda:N or npu:N")
    serve_parser.add_argument("--mode", choices=("fork", "spawn"), default="fork")
    serve_parser.add_argument("--max-children", type=int, default=1,
                              help="children running at the same time (default 1)")
    serve_parser.add_argument("--scratch", help="where the server's private directory goes "
                                                "(the reference store, children's directories)")
    serve_parser.add_argument("--reference-store-mb", type=float, default=8192,
                              help="bytes of reference outputs kept for reuse (default 8192 MB)")
    check_parser = commands.add_parser("check-device", help="whether a server for --device can "
                                       "start and the device is there (one JSON line)")
    check_parser.add_argument("--device", required=True, help="cpu, cuda:N or npu:N")
    child_parser = commands.add_parser("child", help="internal: a candidate child, spawn mode")
    child_parser.add_argument("--workdir", required=True)
    child_parser.add_argument("--result-fd", type=int, required=True)
    child_parser.add_argument("--command-fd", type=int, required=True)
    child_parser.add_argument("--hidden", action="append", default=[])
    child_parser.add_argument("--network", action="store_true")
    child_parser.add_argument("--sandbox-view", required=True,
                              help="the server's sandbox_fs.save_view() file")
    child_parser.add_argument("--device", required=True)
    child_parser.add_argument("--memory-base", type=int, required=True,
                              help="bytes the server's imports use; memory_mb comes on top")
    args = parser.parse_args(argv)
    return {"serve": serve, "check-device": check_device, "child": child_entry}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
