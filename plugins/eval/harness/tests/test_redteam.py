"""Red-team attacks on the harness's trust boundary (tests/data/candidates/redteam/).

Each test starts its own fork-mode CPU server (the reference's timing is cached per
server: a fresh one makes each attack meet a fresh reference timing), runs one candidate,
and prints status / error_class / speedup / message. They document what got through; they
do not assert the harness catches it."""

import json
import os
import unittest

from tests import client

TIMING = {"enabled": True}
TIMEOUT_S = 120


def run(name, task="relu", language="python", options=None, server=None, request_id=None):
    own = server is None
    server = server or client.Server(mode="fork", max_children=2)
    try:
        opts = {"trials": 2, "timing": dict(TIMING)}
        opts.update(options or {})
        req = client.request(request_id or name, "run", task, "redteam/" + name, language=language,
                             options=opts, limits={"timeout_s": TIMEOUT_S})
        response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
    finally:
        if own:
            server.close()
    metrics = response.get("metrics") or {}
    keys = ("speedup", "candidate_ms", "reference_ms", "timing_charged_ms", "timing_gap_ms",
            "reference_gap_ms", "confirm_gap_ms", "timing_spot_checks", "max_abs_diff")
    print(f"\n[{name} on {task}] status={response.get('status')} "
          f"error_class={response.get('error_class')} flags={response.get('flags')}\n  "
          + " ".join(f"{k}={metrics[k]:.4g}" if isinstance(metrics.get(k), float) else f"{k}={metrics.get(k)}"
                     for k in keys)
          + f"\n  message={str(response.get('message'))[:600]!r}", flush=True)
    return response


def check(name, language="cpp"):
    """L1 (the `check` action) on redteam/`name`."""
    server = client.Server(mode="fork", max_children=1)
    try:
        req = client.request("check-" + name, "check", "relu", "redteam/" + name, language=language)
        response = server.ask(req, timeout=120)[req["id"]]
    finally:
        server.close()
    print(f"\n[L1 check {name}] status={response.get('status')} "
          f"error_class={response.get('error_class')} message={str(response.get('message'))[:300]!r}",
          flush=True)
    return response


class RedTeam(unittest.TestCase):
    def test_00_honest_control(self):
        run("honest_relu")

    def test_01_forge_report_median(self):
        run("forge_report_median")

    def test_02_slow_reference_cpu(self):
        run("slow_reference_cpu", task="grouped_conv")

    def test_02b_honest_control_conv(self):
        run("honest_conv", task="grouped_conv")

    def test_03_hidden_work_mad(self):
        run("hidden_work_mad", task="softmax")

    def test_03b_honest_control_softmax(self):
        run("honest_softmax", task="softmax")

    def test_01b_forge_report_tiny(self):
        run("forge_report_tiny")

    def test_01c_forge_report_conv(self):
        run("forge_report_conv", task="grouped_conv")

    def test_01d_forge_report_plain_conv(self):
        run("forge_report_plain_conv", task="grouped_conv")

    def test_04_cpp_guard_stripped(self):
        run("cpp_guard_stripped", language="cpp")

    def test_04b_cpp_guard_control(self):
        run("cpp_guard_control", language="cpp")

    def test_05_cpp_l1_clean_forge(self):
        check("cpp_l1_clean_forge")
        run("cpp_l1_clean_forge", language="cpp")

    def test_05b_cpp_honest_control(self):
        check("cpp_honest_relu")
        run("cpp_honest_relu", language="cpp")

    def test_06_cpp_l1_clean_torch(self):
        check("cpp_l1_clean_torch")
        run("cpp_l1_clean_torch", language="cpp")

    def test_07_neighbor_hog(self):
        """An honest timed candidate (honest_conv) beside neighbor_hog on one server."""
        server = client.Server(mode="fork", max_children=2)
        try:
            hog = client.request("neighbor_hog", "run", "relu", "redteam/neighbor_hog",
                                 language="python", options={"trials": 3, "timing": {"enabled": False}},
                                 limits={"timeout_s": TIMEOUT_S})
            server.send(hog)
            run("honest_conv", task="grouped_conv", server=server, request_id="honest-beside-hog")
            print(server.receive(1, timeout=TIMEOUT_S + 100)[0].get("status"), "<- neighbor_hog")
        finally:
            server.close()


if __name__ == "__main__":
    unittest.main()
