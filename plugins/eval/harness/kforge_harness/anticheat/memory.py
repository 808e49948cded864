"""Device memory held by a candidate's processes, as the driver reports it to the server
(devices/memory_watch.py), against the share it was admitted with."""

from kforge_harness import protocol
from kforge_harness.devices.memory_watch import SLACK_MB


def over_share(held_mb, share_mb):
    """The verdict for a candidate holding more than its share (plus the driver's own
    slack), or None."""
    if held_mb <= float(share_mb) + SLACK_MB:
        return None
    return {"status": "fail", "error_class": protocol.OUT_OF_MEMORY,
            "message": (f"the candidate's processes held {held_mb:.0f} MiB of device memory, "
                        f"more than the {float(share_mb):.0f} MiB it was admitted with "
                        "(measured by the driver, from outside its process): stopped so that "
                        "the jobs beside it keep theirs"),
            "flags": ["out_of_memory", "device_memory_exceeded"]}
