"""Tests of the Python harness: unittest, CPU only (see README.md for the command)."""
