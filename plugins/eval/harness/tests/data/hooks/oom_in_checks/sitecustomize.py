"""Test hook (tests.test_reference): the task host's NaN count of the reference's outputs
runs out of memory, as the whole-tensor count did on KernelBench's 6 GiB activations."""
from kforge_harness.reference import host


def _out_of_memory(values):
    raise MemoryError("out of memory counting NaNs")


host.nan_count = _out_of_memory
