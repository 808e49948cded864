"""Hosts of any size (issue 20): what a reference may allocate does not depend on the
host's core count. torch starts one compute thread per core, each with a stack both
memory limits count; a 64- or 128-core host is simulated here by asking torch for that
many threads (OMP_NUM_THREADS), and the same reference under the same memory limit must
pass as it does with 2."""

import unittest

from tests import client

# 64 MB of weights, a limit that fits it with room to spare, and less than 128 threads'
# stacks (8 MB each).
SIZES = {"in_features": 4096, "out_features": 4096}
MEMORY_MB = 640


def run_linear(threads):
    server = client.Server(mode="fork", max_children=1,
                           extra_env={"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)})
    try:
        req = client.request(f"linear-{threads}", "run", "linear", language="python", sizes=SIZES,
                             options={"trials": 2}, limits={"timeout_s": 120, "memory_mb": MEMORY_MB})
        response = server.ask(req, timeout=300)[req["id"]]
    finally:
        server.close()
    print(f"\n[{threads} threads] {response.get('status')} {response.get('error_class')} "
          f"{str(response.get('message'))[:300]}", flush=True)
    return response


class HostSizeTest(unittest.TestCase):
    def test_a_reference_passes_on_2_64_and_128_cores_alike(self):
        for threads in (2, 64, 128):
            with self.subTest(threads=threads):
                self.assertEqual(run_linear(threads)["status"], "pass")


if __name__ == "__main__":
    unittest.main()
