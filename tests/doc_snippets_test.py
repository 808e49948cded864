#!/usr/bin/env python3
"""The code a page quotes is the code that runs: every fenced block of the page that is
preceded by a line `<!-- from: PATH -->` (PATH relative to the repository) must be, line
for line, a run of consecutive lines of that file. docs/extending.md quotes the examples
and tests that do its recipes this way.

Usage: doc_snippets_test.py REPO_DIR PAGE [LEAST]   (LEAST: how many quoted blocks the page
must have at least, so that a page whose markers were lost does not pass by checking none)"""

import os
import re
import sys


def quoted_blocks(page_text):
    """(line number, path, block lines) of each marked block."""
    lines = page_text.split("\n")
    blocks = []
    for i, line in enumerate(lines):
        marker = re.fullmatch(r"<!-- from: (\S+) -->", line.strip())
        if not marker:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            blocks.append((i + 1, marker.group(1), None))
            continue
        end = next((j for j in range(i + 2, len(lines)) if lines[j].startswith("```")), None)
        blocks.append((i + 1, marker.group(1), None if end is None else lines[i + 2:end]))
    return blocks


def contains_run(haystack, needle):
    return any(haystack[k:k + len(needle)] == needle for k in range(len(haystack) - len(needle) + 1))


def main():
    repo, page = sys.argv[1], sys.argv[2]
    least = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    with open(page, encoding="utf-8") as handle:
        blocks = quoted_blocks(handle.read())
    problems = []
    for line, path, block in blocks:
        where = f"{page}:{line}"
        if block is None:
            problems.append(f"{where}: the marker for {path} is not followed by a closed ``` block")
            continue
        source = os.path.join(repo, path)
        if not os.path.isfile(source):
            problems.append(f"{where}: {path} does not exist")
            continue
        with open(source, encoding="utf-8") as handle:
            text = handle.read().split("\n")
        if not block or not contains_run(text, block):
            problems.append(f"{where}: the block is not {path}'s text (first line: {block[0] if block else ''!r}); "
                            f"copy it from the file again")
    if len(blocks) < least:
        problems.append(f"{page}: {len(blocks)} quoted blocks, fewer than the {least} expected")
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"{page}: {len(blocks)} quoted blocks, each its file's text")
    return 0


if __name__ == "__main__":
    sys.exit(main())
