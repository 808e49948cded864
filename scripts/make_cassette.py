#!/usr/bin/env python3
"""Builds a replay cassette (JSONL) from hand-written LLM answers, one answer per file.

    python3 scripts/make_cassette.py            # pipelines/cassettes/default/*.md -> default.jsonl
    python3 scripts/make_cassette.py --check    # exit 1 when the cassette is not up to date

An answer file is a header of `field: value` lines, a line `---`, then the answer exactly as
the model would send it (everything after the `---` line, up to the end of the file):

    task: 001_relu              the task id the selector matches (required)
    purpose: generate           generate or fix (required)
    sample: 1                   optional: only this sample (candidate.sample)
    round: 1                    optional: only this fix round (candidate.round)
    model: qwen2.5-coder-7b     optional: only this model (the name the pipeline uses)
    design: ...                 what the answer is for; documentation only
    finish_reason: length       optional; a reason "length" makes an empty answer say max_tokens
    prompt_tokens: 900          optional; estimated when left out
    completion_tokens: 400      optional; estimated when left out
    duration_s: 7.5             optional; estimated when left out
    ---
    <the answer>

Each file becomes one selector line of the cassette (plugins/llm/README.md, "Cassettes").
Fields left out of the selector match anything, and the matching line with the most fields
wins, so `model:` files override the answer that every other model gets. Two selectors that
could match the same request equally well are refused here, before the run would refuse them.

Token counts and durations that a file does not give are estimated (about 3.5 characters
per token, a typical output speed per model), so that the default run shows plausible costs
and latencies; docs/default-run.md says so. The output depends only on the answer files, the
task files and the prompt templates: running the script twice gives the same bytes.
"""

import argparse
import itertools
import json
import math
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_SOURCES = REPO / "pipelines" / "cassettes" / "default"
DEFAULT_OUTPUT = REPO / "pipelines" / "cassettes" / "default.jsonl"
DEFAULT_TASKS = REPO / "examples" / "kernelbench-mini" / "tasks"
DEFAULT_PROMPTS = REPO / "pipelines" / "prompts"

SELECTOR_FIELDS = ("task", "sample", "round", "purpose", "model")
INTEGER_FIELDS = {"sample", "round", "prompt_tokens", "completion_tokens"}
KNOWN_FIELDS = set(SELECTOR_FIELDS) | INTEGER_FIELDS | {"design", "finish_reason", "duration_s"}

CHARS_PER_TOKEN = 3.5
# What a fix prompt holds besides its template and the task: the candidate's code and the
# error log (cut at 5000 bytes by llm.fix), at their typical sizes in this suite.
FIX_CODE_CHARS = 1800
FIX_LOG_CHARS = 1500
SYSTEM_MESSAGE_TOKENS = 12
# Output tokens per second and time to the first token, per model; answers for any model
# use the fallback.
SPEED = {
    "deepseek-chat": (30.0, 1.5),
    "deepseek-reasoner": (28.0, 2.5),
    "glm-5.1": (45.0, 1.2),
    "qwen2.5-coder-7b": (60.0, 0.8),
}
FALLBACK_SPEED = (30.0, 1.5)


class AnswerError(Exception):
    pass


def parse_answer(path):
    """The header fields and the answer text of one answer file."""
    text = path.read_text(encoding="utf-8")
    header, separator, answer = text.partition("\n---\n")
    if not separator:
        if text.endswith("\n---"):
            header, answer = text[: -len("\n---")], ""
        else:
            raise AnswerError(f"{path}: no line '---' between the header and the answer")
    fields = {}
    for number, line in enumerate(header.splitlines(), start=1):
        if not line.strip():
            continue
        name, colon, value = line.partition(":")
        name, value = name.strip(), value.strip()
        where = f"{path}:{number}"
        if not colon or not value:
            raise AnswerError(f"{where}: expected 'field: value', got {line!r}")
        if name not in KNOWN_FIELDS:
            raise AnswerError(f"{where}: unknown field {name!r} (known: {', '.join(sorted(KNOWN_FIELDS))})")
        if name in fields:
            raise AnswerError(f"{where}: field {name!r} given twice")
        if name in INTEGER_FIELDS:
            if not value.isdigit():
                raise AnswerError(f"{where}: {name} must be a whole number >= 0, got {value!r}")
            value = int(value)
        elif name == "duration_s":
            try:
                value = float(value)
            except ValueError:
                raise AnswerError(f"{where}: duration_s must be a number, got {value!r}") from None
        fields[name] = value
    for required in ("task", "purpose"):
        if required not in fields:
            raise AnswerError(f"{path}: the header needs '{required}:'")
    if fields["purpose"] not in ("generate", "fix"):
        raise AnswerError(f"{path}: purpose must be generate or fix, got {fields['purpose']!r}")
    if fields["purpose"] == "generate" and "round" in fields:
        raise AnswerError(f"{path}: a generate answer has no round (generation is round 0)")
    return fields, answer


def estimate_tokens(chars):
    return max(1, math.ceil(chars / CHARS_PER_TOKEN))


class Estimator:
    """Plausible token counts and durations for answers that do not give their own."""

    def __init__(self, tasks_dir, prompts_dir):
        self.tasks_dir = tasks_dir
        self.prompts = {
            "generate": (prompts_dir / "generate_cpp.md").read_text(encoding="utf-8"),
            "fix": (prompts_dir / "fix.md").read_text(encoding="utf-8"),
        }

    def prompt_tokens(self, fields, path):
        task_file = self.tasks_dir / f"{fields['task']}.py"
        if not task_file.is_file():
            raise AnswerError(f"{path}: task {fields['task']!r} has no file {task_file}")
        chars = len(self.prompts[fields["purpose"]]) + len(task_file.read_text(encoding="utf-8"))
        if fields["purpose"] == "fix":
            chars += FIX_CODE_CHARS + FIX_LOG_CHARS
        return SYSTEM_MESSAGE_TOKENS + estimate_tokens(chars)

    @staticmethod
    def duration(fields, completion_tokens):
        tokens_per_second, first_token_s = SPEED.get(fields.get("model"), FALLBACK_SPEED)
        return round(first_token_s + completion_tokens / tokens_per_second, 2)


def cassette_line(fields, answer, estimator, path):
    match = {name: fields[name] for name in SELECTOR_FIELDS if name in fields}
    completion = fields.get("completion_tokens", estimate_tokens(len(answer)))
    response = {
        "content": answer,
        "usage": {
            "prompt_tokens": fields.get("prompt_tokens", estimator.prompt_tokens(fields, path)),
            "completion_tokens": completion,
        },
        "finish_reason": fields.get("finish_reason", "stop"),
    }
    line = {"match": match, "response": response,
            "duration_s": fields.get("duration_s", Estimator.duration(fields, completion))}
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def check_selectors(selectors):
    """Refuses selectors that repeat, or that would match one request equally well.

    The replay backend takes the matching selector with the most fields and refuses a tie at
    run time; here every request that any two selectors could both match is tried."""
    seen = {}
    for path, match in selectors:
        key = tuple(sorted(match.items()))
        if key in seen:
            raise AnswerError(f"{path}: the same selector as {seen[key]}: {json.dumps(match)}")
        seen[key] = path

    def values(field):
        known = sorted({m[field] for _, m in selectors if field in m}, key=str)
        # One value no selector names stands for "anything else".
        return known + [None]

    tasks = sorted({m["task"] for _, m in selectors})
    for task, sample, round_, purpose, model in itertools.product(
            tasks, values("sample"), values("round"), ("generate", "fix"), values("model")):
        if purpose == "generate" and round_ is not None:
            continue  # generation is always round 0, which no selector names
        request = {"task": task, "sample": sample, "round": round_, "purpose": purpose, "model": model}
        matching = [(path, m) for path, m in selectors
                    if all(request[field] == value for field, value in m.items())]
        if not matching:
            continue
        best = max(len(m) for _, m in matching)
        winners = [path for path, m in matching if len(m) == best]
        if len(winners) > 1:
            asked = {k: v for k, v in request.items() if v is not None}
            raise AnswerError(f"{winners[0]} and {winners[1]} match the request {json.dumps(asked)} "
                              "equally well; give one of them another field")


def build(sources, estimator):
    files = sorted(sources.glob("*.md"))
    if not files:
        raise AnswerError(f"no answer files (*.md) in {sources}")
    lines, selectors = [], []
    for path in files:
        fields, answer = parse_answer(path)
        selectors.append((path.name, {f: fields[f] for f in SELECTOR_FIELDS if f in fields}))
        lines.append(cassette_line(fields, answer, estimator, path))
    check_selectors(selectors)
    return "".join(line + "\n" for line in lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=pathlib.Path, default=DEFAULT_SOURCES,
                        help="directory of answer files (*.md)")
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUTPUT, help="the cassette to write")
    parser.add_argument("--tasks", type=pathlib.Path, default=DEFAULT_TASKS,
                        help="task files, for prompt size estimates")
    parser.add_argument("--prompts", type=pathlib.Path, default=DEFAULT_PROMPTS,
                        help="prompt templates, for prompt size estimates")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when --out differs from what the sources give")
    args = parser.parse_args()
    try:
        text = build(args.sources, Estimator(args.tasks, args.prompts))
    except (AnswerError, OSError) as error:
        print(f"make_cassette: {error}", file=sys.stderr)
        return 2
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.is_file() else None
        if current != text:
            print(f"make_cassette: {args.out} is not up to date with {args.sources}; "
                  f"run python3 scripts/make_cassette.py", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"{args.out}: {text.count(chr(10))} answers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
