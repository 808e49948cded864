#!/bin/sh
# Stands in for a device vendor's evaluator: `npu-eval.sh CANDIDATE TASK DEVICE` runs the
# candidate against the task's reference on the device and prints its verdict as one JSON
# line (examples/extending/device_runner.cpp says what it may hold). What it answers
# depends on words in the candidate, so that the tests and the example pipeline see every outcome.
candidate=$1 task=$2 device=$3
test -f "$task" || { echo "npu-eval: no task file '$task'" >&2; exit 2; }
echo "npu-eval: compiling $candidate for $device" >&2
if grep -q WRONG "$candidate"; then
  echo '{"status": "fail", "error_class": "numerical_mismatch", "message": "output 0 differs by up to 0.5", "metrics": {"trials": 5, "max_abs_diff": 0.5}}'
elif grep -q CRASH "$candidate"; then
  echo "npu-eval: device lost" >&2; exit 3
elif grep -q SLOW "$candidate"; then
  sleep 60
else
  echo "reference and candidate agree on 5 input sets"
  echo '{"status": "pass", "metrics": {"trials": 5, "max_abs_diff": 0, "speedup": 2.5, "candidate_ms": 2.0, "reference_ms": 5.0}, "environment": {"npu": "Ascend 910B", "cann": "8.0"}}'
fi
