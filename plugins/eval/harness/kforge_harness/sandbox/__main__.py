"""`python -m kforge_harness.sandbox run ...`: a command in a sandbox (the compile stages'
compilers)."""

from kforge_harness.sandbox import main

main()
