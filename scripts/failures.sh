#!/usr/bin/env bash
# The failed assertions of a ctest log (Testing/Temporary/LastTest.log): each unittest
# FAIL/ERROR block with its traceback and each GoogleTest failure with the lines after it,
# at most 40 lines per failure.
#
#   scripts/failures.sh BUILD/Testing/Temporary/LastTest.log
set -uo pipefail
log=${1:?usage: scripts/failures.sh LastTest.log}
echo "==== the failed assertions, from $log ===="
awk '
  /^[0-9]+\/[0-9]+ Testing: / { test = $0 }
  /^(FAIL|ERROR): / { block = 1; lines = 0; print "--- " test }
  / Failure$/ { gtest = 7; print "--- " test }
  block {
    if (/^=+$/ || /^Ran [0-9]+ tests? in /) { block = 0; print ""; next }
    if (lines++ < 40) print
    next
  }
  gtest > 0 { print; if (--gtest == 0) print "" }
' "$log"
