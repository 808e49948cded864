#!/bin/sh
# Runs `python -m kforge_harness ARGS` as a server on a host without cgroup v2 would: the
# freezer finds no cgroup2 mount and falls back to signals (procs.freeze_tree). Used by
# tests/test_attacks_redteam6.py as client.Server's `python`; "$1 $2" are "-m kforge_harness".
shift 2
exec "${KFORGE_TEST_PYTHON:-/usr/bin/python3}" -c 'import runpy, sys
import kforge_harness.server.freezer as freezer
freezer._cgroup2_mount = lambda: None
sys.argv = ["kforge_harness"] + sys.argv[1:]
runpy.run_module("kforge_harness", run_name="__main__", alter_sys=True)' "$@"
