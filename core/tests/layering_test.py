#!/usr/bin/env python3
"""The runtime's layers include only what they link.

Usage: layering_test.py SOURCE_DIR kforge_engine=LINKS kforge_store=LINKS ...

Each argument names a layer (the static library kforge_<layer>, built from
core/src/<layer>/) and the libraries it links, as CMake has them (comma-separated). A
source of core/src/<layer>/ may include, in quotes, headers of its own layer, of the layers
it links (directly or through another layer), api.hpp, and util/ (header-only helpers of
every layer); util/ includes no layer. A folder of core/src that is neither a layer, util/
nor the test kit (testing/, which links all of libkforge) fails the test, so that a new
part of the runtime is placed in the layering before it is used.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
SOURCE_SUFFIXES = {".cpp", ".hpp", ".in"}
SHARED = {"util"}      # includable from every layer
OUTSIDE = {"testing"}  # not a layer: the test kit over libkforge's API


def main():
    source_dir = pathlib.Path(sys.argv[1]) / "core" / "src"
    links = {}
    for arg in sys.argv[2:]:
        target, _, deps = arg.partition("=")
        layer = target.removeprefix("kforge_")
        links[layer] = [d.removeprefix("kforge_") for d in deps.split(",") if d.startswith("kforge_")]
    if not links:
        sys.exit("no layers given (core/tests/CMakeLists.txt passes them)")

    def reachable(layer, seen=None):
        seen = set() if seen is None else seen
        if layer not in seen:
            seen.add(layer)
            for dep in links.get(layer, []):
                reachable(dep, seen)
        return seen

    problems = []
    folders = {p.name for p in source_dir.iterdir() if p.is_dir()}
    for folder in sorted(folders - set(links) - SHARED - OUTSIDE):
        problems.append(f"core/src/{folder}/ is no layer: add it to the layers in core/CMakeLists.txt "
                        f"(and to this test's arguments) or move its sources into one")
    for layer in links:
        if layer not in folders:
            problems.append(f"layer {layer} has no folder core/src/{layer}/")

    checked = 0
    for layer in sorted(set(links) | SHARED):
        allowed = set() if layer in SHARED else reachable(layer)
        for path in sorted((source_dir / layer).rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES:
                continue
            text = path.read_text(encoding="utf-8")
            for match in INCLUDE.finditer(text):
                header = match.group(1)
                checked += 1
                line = text.count("\n", 0, match.start()) + 1
                where = f"{path.relative_to(source_dir.parent.parent)}:{line}"
                if (path.parent / header).is_file() and "/" not in header:
                    continue  # beside the including file: its own layer
                top = header.split("/", 1)[0]
                if header == "api.hpp" or top in SHARED and layer not in SHARED:
                    continue
                if top in allowed:
                    continue
                if top in links:
                    problems.append(f'{where}: #include "{header}": layer {layer} does not link kforge_{top} '
                                    f"(it links {', '.join('kforge_' + d for d in links[layer]) or 'no layer'}); "
                                    f"move what it needs down a layer or the code up one")
                elif layer in SHARED:
                    problems.append(f'{where}: #include "{header}": {layer}/ is shared by every layer and '
                                    f"includes none")
                else:
                    problems.append(f'{where}: #include "{header}": not a header of a layer')
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
    order = ", ".join(f"{layer} -> {', '.join(sorted(reachable(layer) - {layer})) or '(nothing)'}"
                      for layer in sorted(links))
    print(f"{checked} includes follow the layering: {order}")


if __name__ == "__main__":
    main()
