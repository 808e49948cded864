"""kforge's isolated evaluation harness: a fork server that checks, compiles and runs
LLM-written kernels against a reference, one isolated child process per request.

The wire protocol is documented in PROTOCOL.md beside this package; README.md says how
the pieces fit together.
"""

# Part of the verdict-cache key on the C++ side: bump it whenever a change here can turn
# a verdict around (new rules, new comparison semantics, new anti-cheat checks).
HARNESS_VERSION = "10"
