"""Test hook (tests.test_attacks_redteam14): the task host cannot read a child's memory on
this machine, as where Yama forbids it: timed outputs on the CPU cross by the child's
copy into the output slot, as on a GPU."""
from kforge_harness.handover import read as outputs_read

outputs_read.available = lambda: "a test hook says so"
