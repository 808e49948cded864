"""The cost of outputs crossing from a candidate's child to the task host, per GB
(issue 20): the buffer the host lends (handover: exported device memory on CUDA, a sealed
memfd on the CPU), the child copying its output into it, and the host judging it (each
chunk copied before it is compared, judge.compare's statistics). Two processes, as in the
harness: this one owns the buffer, a spawned interpreter maps it from the descriptor.

    PYTHONPATH=plugins/eval/harness python3 bench/handover.py --device cuda:0 --gb 1 6.4
    PYTHONPATH=plugins/eval/harness /usr/bin/python3 bench/handover.py --device cpu --gb 0.25

Prints one line per size: GB, the child's copy into the buffer (s, GB/s), the host's
judging of it against a reference tensor (s, GB/s), and the round trip."""

import argparse
import json
import os
import socket
import subprocess
import sys
import time


def child(fd_socket, device_name, nbytes):
    import torch
    from kforge_harness import handover
    device = torch.device(device_name)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    sock = socket.socket(fileno=fd_socket)
    message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 1)
    description = json.loads(message)
    mapping = handover.open_buffer(description, fds[0], device)
    layout = handover.Layout.from_json(description["layout"])
    (view,) = handover.views(mapping, layout)
    output = torch.randn(view.shape, device=device)
    for _ in range(int(description["rounds"])):
        sock.recv(1)
        start = time.perf_counter()
        view.copy_(output)
        if device.type == "cuda":
            torch.cuda.synchronize()
        sock.send(json.dumps({"copy_s": time.perf_counter() - start}).encode())
    # The host judges against the same values: send them once, by seed.
    sock.recv(1)


def owner(device_name, sizes_gb, rounds):
    import torch
    from kforge_harness import handover
    from kforge_harness.devices import Device
    from kforge_harness.judge import compare
    from kforge_harness.judge.outputs import SnapshotLeaf, TensorLeaf
    from kforge_harness.protocol import DEFAULT_RULE
    device = Device(device_name)
    torch_device = device.activate(torch)
    kind = handover.kind_for(device)
    for gb in sizes_gb:
        elements = int(gb * (1 << 30)) // 4
        layout = handover.Layout.pack([("tensor", "float32", (elements,), elements * 4, None, False)])
        mapping = handover.allocate(layout.nbytes, device, kind)
        (view,) = handover.views(mapping, layout)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        process = subprocess.Popen(
            [sys.executable, __file__, "--child", str(theirs.fileno()), device_name],
            pass_fds=[theirs.fileno()], env=dict(os.environ))
        theirs.close()
        socket.send_fds(ours, [json.dumps(dict(handover.describe(mapping, "output"), layout=layout.to_json(),
                                               rounds=rounds)).encode()], [mapping.fd])
        copies, judges = [], []
        for _ in range(rounds):
            ours.send(b"g")
            copies.append(json.loads(ours.recv(1 << 16))["copy_s"])
            reference = view.detach().clone()  # what the child wrote: the judge's "reference"
            start = time.perf_counter()
            outcome = compare.compare_leaves([TensorLeaf(reference)], [SnapshotLeaf(view)], DEFAULT_RULE,
                                             workers=max(1, min(4, (os.cpu_count() or 1) // 2)))
            if device.is_accelerator:
                device.synchronize(torch)
            judges.append(time.perf_counter() - start)
            assert outcome.passed, outcome.message
            del reference
        ours.send(b"q")
        process.wait()
        mapping.close()
        copy, judge = min(copies), min(judges)
        print(json.dumps({"device": device_name, "handover": kind, "gb": gb,
                          "child_copy_s": round(copy, 4), "child_copy_gb_s": round(gb / copy, 2),
                          "host_judge_s": round(judge, 4), "host_judge_gb_s": round(gb / judge, 2),
                          "rounds": rounds}), flush=True)
        del view
        if torch_device.type == "cuda":
            torch.cuda.empty_cache()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(int(sys.argv[2]), sys.argv[3], None)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--gb", type=float, nargs="+", default=[0.25])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    owner(args.device, args.gb, args.rounds)


if __name__ == "__main__":
    main()
