"""kforge's isolated evaluation harness: a fork server that checks, compiles and runs
LLM-written kernels against a reference, one isolated child process per request.

The wire protocol is documented in PROTOCOL.md beside this package; README.md says how
the pieces fit together.
"""

import os

# The folder that holds this package (and rules/, kforge_cpp.py): what every child puts
# on its path and what a sandbox shows read-only.
HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Part of the verdict-cache key on the C++ side: bump it whenever a change here can turn
# a verdict around (new rules, new comparison semantics, new anti-cheat checks).
HARNESS_VERSION = "22"
