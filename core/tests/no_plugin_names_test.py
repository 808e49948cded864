#!/usr/bin/env python3
"""The engine knows no plugin, benchmark, task format or device vendor by name.

Three checks over the code of core/src, core/cli and core/include (comments are prose and
are left out; string literals and identifiers are code):

1. No string literal names a kind of a bundled plugin: "<prefix>.<name>" where the prefix
   is a folder of plugins/ or an old prefix kept as an alias ("tasks.", "candidates.").
2. No string literal (but abi.h's definitions) spells out a well-known name of
   kforge/abi.h (KF_KEY_*, KF_METRIC_*, KF_TIMING_*, KF_ERROR_*, KF_ENV_*) instead of using
   its macro, so that what the reports read is what the SDK tells a plugin's author. A few well-known values are also keys of
   the output files (report.json's "speedup", results.jsonl's "device"): OUTPUT_KEYS allows
   those, and only those.
3. No benchmark, task format, framework or device vendor word (VENDOR_WORDS) in any
   identifier or string literal: a runner, a benchmark's tables or a device the engine has
   never heard of gets everything the bundled ones get. ABI_WORDS allows a word only in
   kforge/abi.h and only where the ABI itself defines it; it is empty: the ABI names no
   vendor either.

Usage: no_plugin_names_test.py SOURCE_DIR
"""
import os
import re
import sys

# Words that name a benchmark, a task format, a framework or a device vendor. Long words
# match anywhere in a token (KF_FORMAT_KERNELBENCHX, kFormatKernelBenchX); short or common
# ones only as a whole word part (npu in "npu_run", not in "input").
VENDOR_WORDS_ANYWHERE = ("kernelbench", "tritonbench", "flashinfer", "nvidia", "triton", "cuda", "nvcc", "rocm",
                         "mindspore", "pytorch", "torch", "numpy", "cublas", "cudnn", "ptxas")
VENDOR_WORDS_WHOLE = ("npu", "hip", "amd", "ascend", "cann", "xpu", "mlu", "intel", "tpu")

# Output keys that equal a well-known value: report.json's "speedup", "trials" and its
# environments' "placement", the records' "max_rel_error", "runtime_error" and "timeout"
# statuses, the run record's and results.jsonl's "host" and "device".
OUTPUT_KEYS = {"speedup", "trials", "max_rel_error", "runtime_error", "timeout", "host", "device", "placement"}

# (file relative to the source dir, word): the ABI defines the word. None today.
ABI_WORDS = set()

SCANNED = ("core/src", "core/cli", "core/include")
SUFFIXES = (".cpp", ".hpp", ".h", ".in")


def code_of(text):
    """The text with comments blanked (newlines kept), and the string literals' contents
    listed with their line numbers."""
    out, literals = [], []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            out.append("\n" * text.count("\n", i, j))
            i = j
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\(', text[i:i + 24])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = ")" + raw.group(1) + '"'
            start = i + raw.end()
            j = text.find(end, start)
            j = n if j < 0 else j
            literals.append((line, text[start:j]))
            line += text.count("\n", i, j)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + len(end)
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                literals.append((line, text[i + 1:j]))
            out.append(c + c)
            i = j + 1
            continue
        if c == "\n":
            line += 1
        out.append(c)
        i += 1
    return "".join(out), literals


def word_parts(token):
    """A token's words: split at non-alphanumerics and at camelCase boundaries."""
    parts = []
    for piece in re.split(r"[^A-Za-z0-9]+", token):
        parts += [p.lower() for p in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+|[0-9]+", piece)]
    return parts


def vendor_words(token):
    lowered = token.lower()
    found = {w for w in VENDOR_WORDS_ANYWHERE if w in lowered}
    found |= {w for w in VENDOR_WORDS_WHOLE if w in word_parts(token)}
    return found


def check_the_checks():
    """The detectors find what they are for and nothing else, before they are trusted."""
    sample = ('int npu_count = 0;  // cuda in a comment\n/* triton\n */ auto s = "CUDA_VISIBLE_DEVICES";\n'
              'auto r = R"x(a "kernelbench" page)x"; char c = \'"\'; int input = 1; // "rocm"\n')
    code, literals = code_of(sample)
    assert "cuda" not in code and "triton" not in code and "rocm" not in code, code
    assert code.count("\n") == sample.count("\n"), "comments keep their lines"
    assert [text for _, text in literals] == ["CUDA_VISIBLE_DEVICES", 'a "kernelbench" page'], literals
    assert [number for number, _ in literals] == [3, 4], literals
    assert vendor_words("kFormatKernelBenchX") == {"kernelbench"}
    assert vendor_words("npu_count") == {"npu"} and vendor_words("NpuRun") == {"npu"}
    for innocent in ("input", "cannot", "ownership", "ascending", "sample", "eval_seconds"):
        assert vendor_words(innocent) == set(), innocent


def main(root):
    check_the_checks()
    abi = open(os.path.join(root, "core/include/kforge/abi.h")).read()
    well_known = set(re.findall(r'^#define KF_(?:KEY|METRIC|TIMING|ERROR|ENV)_[A-Z0-9_]+ "([^"]+)"', abi, re.M))
    if not well_known:
        print("no well-known names found in abi.h")
        return 1
    prefixes = sorted({d for d in os.listdir(os.path.join(root, "plugins"))
                       if os.path.isdir(os.path.join(root, "plugins", d))} | {"tasks", "candidates"})
    kind_name = re.compile(r"^(?:%s)\.[a-z]" % "|".join(map(re.escape, prefixes)))

    problems = []
    files = 0
    for top in SCANNED:
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root)
                files += 1
                code, literals = code_of(open(path, encoding="utf-8").read())
                for line, literal in literals:
                    if rel.startswith("core/include/kforge/abi.h"):
                        pass  # where the well-known names are defined
                    elif kind_name.match(literal):
                        problems.append(f"{rel}:{line}: \"{literal}\" names a bundled plugin's kind")
                    elif literal in well_known and literal not in OUTPUT_KEYS:
                        problems.append(f"{rel}:{line}: \"{literal}\" is spelled out where its kforge/abi.h macro belongs")
                    for token in re.findall(r"[A-Za-z0-9_]+", literal):
                        for word in sorted(vendor_words(token) - {w for f, w in ABI_WORDS if f == rel}):
                            problems.append(f"{rel}:{line}: \"{literal[:60]}\" names '{word}'")
                for number, text in enumerate(code.split("\n"), 1):
                    for token in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text):
                        for word in sorted(vendor_words(token) - {w for f, w in ABI_WORDS if f == rel}):
                            problems.append(f"{rel}:{number}: identifier {token} names '{word}'")
    if problems:
        print("the engine names what belongs to plugins:")
        print("\n".join(problems))
        return 1
    print(f"{files} files of {', '.join(SCANNED)}: no bundled kind, no well-known name spelled out "
          f"({len(well_known)} checked), no benchmark, format or vendor word "
          f"({len(VENDOR_WORDS_ANYWHERE) + len(VENDOR_WORDS_WHOLE)} checked)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
