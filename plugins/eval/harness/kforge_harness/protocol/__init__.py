"""The request/response vocabulary of PROTOCOL.md: error classes, defaults, verdicts."""

import json
import math

# Error classes: stable ids used in reports (PROTOCOL.md has the table).
CHECKER_REJECTED = "checker_rejected"
SYNTAX_ERROR = "syntax_error"
COMPILE_ERROR = "compile_error"
INIT_ERROR = "init_error"
RUNTIME_ERROR = "runtime_error"
DEVICE_ERROR = "device_error"
CRASH = "crash"
TIMEOUT = "timeout"
OUT_OF_MEMORY = "out_of_memory"
SHAPE_MISMATCH = "shape_mismatch"
DTYPE_MISMATCH = "dtype_mismatch"
NUMERICAL_MISMATCH = "numerical_mismatch"
CHEAT_DETECTED = "cheat_detected"
HARNESS_ERROR = "harness_error"
# The task cannot run as its own reference at these sizes on this machine (status error).
TASK_ERROR = "task_error"
# The machine or its toolchain lacks something (a package, a module): status error, the
# message names what to install.
HOST_ERROR = "host_error"

ACTIONS = ("check", "compile", "run")
LANGUAGES = ("triton", "cpp", "cuda", "python")
TASK_FORMATS = ("kernelbench-torch", "kernelbench-numpy", "kernelbench-mindspore", "kernelbenchx")
# Tasks whose get_inputs() returns NumPy arrays (framework-neutral master inputs).
ARRAY_INPUT_FORMATS = ("kernelbench-numpy", "kernelbench-mindspore")

# device_memory_mb: the share of the device's memory the client admitted this request
# with (None: no admission); see PROTOCOL.md.
DEFAULT_LIMITS = {"timeout_s": 60.0, "memory_mb": 16384, "cpu_s": 300, "network": False,
                  "device_memory_mb": None}

# The coarse bound share_over_coarse counts elements beyond, |c - r| > coarse_atol +
# coarse_rtol * |r|, when a rule names none: 1% of the element (5% fp16, 10% bf16, whose
# own rounding is 0.05% and 0.4% per operation), with an absolute part ten times below
# the default atol, so that elements within atol but wrong by a large fraction of
# themselves (small softmax outputs) count.
COARSE_BOUND = {
    "coarse_atol": {"float64": 1e-5, "float32": 1e-5, "float16": 1e-3, "bfloat16": 1e-3},
    "coarse_rtol": {"float64": 1e-2, "float32": 1e-2, "float16": 5e-2, "bfloat16": 1e-1},
}

# The rule fields every kind takes, besides its own: the whole-output checks (compare.py,
# WholeOutput). Absent: not checked (the statistics are measured anyway), except
# max_centered_rel_error, which request normalisation fills in for every rule.
WHOLE_OUTPUT_FIELDS = ("max_rel_l2", "max_centered_rel_error", "coarse_atol", "coarse_rtol",
                       "max_coarse_share")

# The variation check (compare.py) that every rule makes: the candidate's error is at
# most this fraction of how much the reference's output varies, ||r - centre||. A
# constant has an error of at least that variation, so it fails wherever the variation
# is information (VARIATION_FLOOR); an honest float32 kernel measured at most 0.18 of it
# (a dot product of positive values over K=1M against a sequential reference, whose
# output varies by only 8e-4 of its magnitude). README.md, "Comparison rules", has the
# numbers.
MAX_CENTERED_REL_ERROR = 0.25

# Variation below VARIATION_FLOOR * ||r|| is not information: the dtype cannot carry it
# through a computation (2**-16 is 128 float32 ulps: long float32 reductions drift
# hundreds of ulps; float16/bfloat16 outputs are accumulated in float32 and rounded
# once, so 4 of their ulps). The check then only asks the error to stay below that
# floor, and a reference all of whose outputs vary less than it carries no information
# (compare.OutputInformation).
VARIATION_FLOOR = {"float64": 2.0 ** -16, "float32": 2.0 ** -16, "float16": 2.0 ** -8,
                   "bfloat16": 2.0 ** -5}

# Where the reference side measured its own rounding noise (the distance between its
# output and its output at inputs moved by an ulp, compare.perturbed), the whole-output
# bounds allow NOISE_FACTOR times that noise: an honest kernel that sums in another
# order lands within 10x of it on outputs made of cancellations (50x for a sequential
# sum over 1M elements, an output whose noise is far below max_rel_l2 anyway).
NOISE_FACTOR = 16.0

# An integer or bool output made from floating-point values (a rounding, an argmax) may
# differ from the reference's in at most NOISE_MOVED_FACTOR times the elements that moved
# in the reference's own output at inputs moved by an ulp, plus NOISE_MOVED_SLACK (a
# count of a few is a small sample): an honest float64 sum of a quantized float32 matmul
# differed in 10 to 17 elements of 524288 where the ulp moved 6 to 12. The count, not
# only the distance as a whole: an argmax over ties moves by many places when a tie
# breaks the other way, and the distance alone forgave an output of zeros.
NOISE_MOVED_FACTOR = 4
NOISE_MOVED_SLACK = 4

# The default preset: allclose per element (rtol 3e-4 for float32: an honest float32 dot
# product over 1M positive values lands 1.5e-4 from a sequential reference, while
# float16's rounding, up to 4.9e-4 per element, still fails at magnitudes above ~0.5);
# over the whole output ||c - r|| at most
# max_rel_l2 of ||r|| (5e-4 for float32: rounding the output to bfloat16 alone is at
# least 1.1e-3 of it at any magnitude, an honest float32 kernel at most 1.5e-4 in the
# measured suites; 1e-3 float16, 1e-2 bfloat16 by the same reasoning one precision
# down; 1e-11 for float64, float32's bound scaled by the ratio of the two epsilons (1.9e-9)
# and widened tenfold: rounding the output to float32 alone is ~3e-8 of it, so a float64
# task computed in float32 fails at any magnitude), its variation reproduced
# (MAX_CENTERED_REL_ERROR), and at most 1% of the
# elements beyond the coarse bound. PROTOCOL.md and README.md ("Comparison rules") say
# more.
DEFAULT_RULE = {
    "kind": "allclose",
    "atol": {"float64": 1e-4, "float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2},
    "rtol": {"float64": 3e-4, "float32": 3e-4, "float16": 1e-2, "bfloat16": 1e-2},
    "max_rel_l2": {"float64": 1e-11, "float32": 5e-4, "float16": 1e-3, "bfloat16": 1e-2},
    "max_centered_rel_error": MAX_CENTERED_REL_ERROR,
    "max_coarse_share": 0.01,
}

# The timing's guards (README.md "Timing", timing_plan.py): each timed call is checked
# against the reference with probability spot_check_rate; a loop is rejected when the
# tail after its calls exceeds the reference's by more than max_sync_gap_ms, or the
# server's clock shows more than the reference's loop does around its calls by more than
# max_wall_gap_ms (each plus max_gap_share of the call's time); a speedup over
# confirm_speedup is measured by a second loop, and the slower counts; one above 1 and not
# above it counts as 1.0 (within the loops' noise: identical code lands there half the
# time). The harness's own
# work per call in the reference's child is refunded to candidates up to
# max_harness_refund_ms (timing_plan.refunded_gap).
DEFAULT_TIMING = {"enabled": True, "warmup": 3, "trials": 20, "flush_l2": True,
                  "baseline": "eager", "reference_max_age_s": 600.0, "spot_check_rate": 0.25,
                  "max_sync_gap_ms": 0.1, "max_wall_gap_ms": 0.05, "max_gap_share": 0.1,
                  "max_harness_refund_ms": 0.1, "confirm_speedup": 1.02}
_TIMING_INTEGERS = ("warmup", "trials")
_TIMING_NUMBERS = ("reference_max_age_s", "spot_check_rate", "max_sync_gap_ms",
                   "max_wall_gap_ms", "max_gap_share", "max_harness_refund_ms", "confirm_speedup")

DEFAULT_OPTIONS = {"trials": 5, "seed": 42, "inputs_on_device": True, "rules_file": None}

# Longest message / log tail a response carries; the fix loop cuts further on its side.
MAX_MESSAGE_CHARS = 8000
MAX_LOG_TAIL_CHARS = 8000


class Verdict(Exception):
    """Ends a request early with a verdict: raised by the child's actions, turned into a
    response by the child's main loop."""

    def __init__(self, error_class, message, status="fail", metrics=None, flags=None,
                 findings=None):
        super().__init__(message)
        self.status = status
        self.error_class = error_class
        self.message = message
        self.metrics = metrics or {}
        self.flags = flags or []
        self.findings = findings or []


def harness_error(message):
    """A verdict saying the harness could not judge (status error)."""
    return Verdict(HARNESS_ERROR, message, status="error")


def task_error(message, flags=None):
    """A verdict saying the task is broken at these sizes on this machine (status error)."""
    return Verdict(TASK_ERROR, message, status="error", flags=flags)


def host_error(message, flags=None):
    """A verdict saying the machine lacks something the evaluation needs (status error)."""
    return Verdict(HOST_ERROR, message, status="error", flags=flags)


def verdict_result(verdict):
    """A Verdict as the result dict the server answers with."""
    return {"status": verdict.status, "error_class": verdict.error_class,
            "message": verdict.message, "metrics": verdict.metrics, "flags": verdict.flags,
            "findings": verdict.findings}


def response(request_id, status, error_class="", message="", log_tail="", findings=None,
             extracted=None, metrics=None, flags=None, task_sizes=None):
    return {
        "id": request_id,
        "status": status,
        "error_class": error_class,
        "message": truncate_middle(message, MAX_MESSAGE_CHARS),
        "log_tail": log_tail[-MAX_LOG_TAIL_CHARS:],
        "findings": findings or [],
        "extracted": extracted or {},
        "metrics": metrics or {},
        "flags": flags or [],
        "task_sizes": task_sizes or {},
    }


def truncate_middle(text, limit):
    """Keeps the head and the tail of a long text: compiler errors matter at both ends."""
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head - 40
    return text[:head] + f"\n... [{len(text) - head - tail} chars cut] ...\n" + text[-tail:]


def _for_the_wire(value):
    # Standard JSON has no NaN/Infinity, and the C++ reader rejects them: a non-finite
    # metric travels as null. Text is whatever a candidate's process or source holds (an
    # exception's message, a log tail, a string literal the checker extracted): a lone
    # surrogate in it would be written as an escape ("\\ud800") that strict JSON readers,
    # the C++ client's among them, refuse, and the whole answer would be lost.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return _valid_text(value)
    if isinstance(value, dict):
        return {_valid_text(str(k)): _for_the_wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_for_the_wire(v) for v in value]
    return value


def _valid_text(text):
    """`text` with every lone surrogate replaced by U+FFFD (a surrogate pair becomes the
    character it encodes)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def encode(obj):
    """One JSON line for the wire that every JSON reader accepts: ASCII, no NaN, no lone
    surrogate."""
    return json.dumps(_for_the_wire(obj), allow_nan=False, separators=(",", ":")) + "\n"


def merged(defaults, given):
    """defaults updated with the keys the request gave (one level deep)."""
    out = dict(defaults)
    if given:
        out.update({k: v for k, v in given.items() if v is not None})
    return out


def normalise_request(request):
    """Validates a request and fills in defaults; raises ValueError naming the problem."""
    if not isinstance(request, dict):
        raise ValueError("a request must be a JSON object")
    if "id" not in request:
        raise ValueError("the request has no 'id'")
    action = request.get("action")
    if action not in ACTIONS:
        raise ValueError(f"'action' must be one of {', '.join(ACTIONS)}, got {action!r}")

    task = request.get("task")
    if task is not None:
        if not isinstance(task, dict) or not isinstance(task.get("path"), str):
            raise ValueError("'task' must be an object with a string 'path'")
        task = merged({"id": "", "format": "kernelbench-torch", "sizes": {}, "size_scale": 1.0,
                       "fit_memory_mb": 0}, task)
        if not isinstance(task["id"], str):
            raise ValueError("task.id must be a string (the task's id: seeds are derived from it)")
        if task["format"] not in TASK_FORMATS:
            raise ValueError(f"task.format must be one of {', '.join(TASK_FORMATS)}, "
                             f"got {task['format']!r}")
        if not isinstance(task["sizes"], dict) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in task["sizes"].values()):
            raise ValueError("task.sizes must map names to integers")
        if not isinstance(task["size_scale"], (int, float)) or task["size_scale"] <= 0:
            raise ValueError("task.size_scale must be a positive number")
        if not isinstance(task["fit_memory_mb"], (int, float)) or task["fit_memory_mb"] < 0:
            raise ValueError("task.fit_memory_mb must be a number >= 0 (0: no fitting)")
        if task["format"] == "kernelbenchx" and (task["sizes"] or task["size_scale"] != 1
                                                 or task["fit_memory_mb"]):
            raise ValueError("a kernelbenchx task runs its test code as written: it takes no "
                             "task.sizes, size_scale or fit_memory_mb")
    elif action != "check":
        raise ValueError(f"action {action!r} needs a 'task'")

    candidate = merged({"code": None, "language": "python", "artifact": None},
                       request.get("candidate"))
    if candidate["language"] not in LANGUAGES:
        raise ValueError(f"candidate.language must be one of {', '.join(LANGUAGES)}, "
                         f"got {candidate['language']!r}")
    if candidate["code"] is None and action != "run":
        raise ValueError(f"action {action!r} needs candidate.code "
                         "(only 'run' takes the reference as its own candidate)")

    options = merged(DEFAULT_OPTIONS, request.get("options"))
    options["rule"] = _normalise_rule(options.get("rule"))
    options["timing"] = merged(DEFAULT_TIMING, options.get("timing"))
    if options["timing"]["baseline"] not in ("eager", "compile"):
        raise ValueError("options.timing.baseline must be 'eager' or 'compile'")
    for name in _TIMING_INTEGERS + _TIMING_NUMBERS:
        value = options["timing"][name]
        kinds = int if name in _TIMING_INTEGERS else (int, float)
        if not isinstance(value, kinds) or isinstance(value, bool) or value < 0:
            raise ValueError(f"options.timing.{name} must be a number >= 0, got {value!r}")
    if options["timing"]["trials"] < 1:
        raise ValueError("options.timing.trials must be at least 1")
    if options["timing"]["spot_check_rate"] > 1:
        raise ValueError("options.timing.spot_check_rate is a probability: at most 1")
    if not isinstance(options["trials"], int) or options["trials"] < 1:
        raise ValueError("options.trials must be a positive integer")
    if isinstance(options["seed"], bool) or not isinstance(options["seed"], int) or not (
            0 <= options["seed"] < 2**64):
        raise ValueError("options.seed must be an integer in [0, 2**64) (the run's secret seed)")

    limits = merged(DEFAULT_LIMITS, request.get("limits"))
    device_mb = limits["device_memory_mb"]
    if device_mb is not None and (not isinstance(device_mb, (int, float)) or device_mb <= 0):
        raise ValueError("limits.device_memory_mb must be a positive number")
    return {"id": request["id"], "action": action, "task": task, "candidate": candidate,
            "options": options, "limits": limits}


def _normalise_rule(rule):
    if rule is None:
        return json.loads(json.dumps(DEFAULT_RULE))
    if not isinstance(rule, dict):
        raise ValueError("options.rule must be an object with a 'kind'")
    kind = rule.get("kind")
    if kind == "allclose":
        normalised = {"kind": kind,
                      "atol": merged(DEFAULT_RULE["atol"], _dtype_map(rule, "atol")),
                      "rtol": merged(DEFAULT_RULE["rtol"], _dtype_map(rule, "rtol"))}
    elif kind == "max_abs_diff":
        normalised = {"kind": kind, "limit": float(rule.get("limit", 1e-3))}
    elif kind == "share_over_limit":
        normalised = {"kind": kind, "rtol": float(rule.get("rtol", 1e-2)),
                      "atol": float(rule.get("atol", 1e-5)),
                      "max_share": float(rule.get("max_share", 0.01))}
    else:
        raise ValueError("options.rule.kind must be allclose, max_abs_diff or share_over_limit, "
                         f"got {kind!r}")
    for field in WHOLE_OUTPUT_FIELDS:
        if rule.get(field) is not None:
            normalised[field] = _number_or_dtype_map(rule[field], f"options.rule.{field}")
    # Every rule judges the part of the output that varies: a constant must not pass a
    # benchmark's own rule either (KernelBench issue #165).
    centred = normalised.setdefault("max_centered_rel_error", MAX_CENTERED_REL_ERROR)
    for bound in (centred.values() if isinstance(centred, dict) else [centred]):
        if not 0 < bound < 1:
            raise ValueError("options.rule.max_centered_rel_error must be above 0 and below 1 "
                             f"(at 1 a constant passes), got {bound!r}")
    return normalised


def _dtype_map(rule, field):
    """An allclose atol/rtol as a dtype map (a plain number applies to every dtype)."""
    value = rule.get(field)
    if value is None or isinstance(value, dict):
        return value
    return {name: value for name in DEFAULT_RULE[field]}


def _number_or_dtype_map(value, where):
    def number(item):
        if isinstance(item, bool) or not isinstance(item, (int, float)) or item < 0:
            raise ValueError(f"{where} must be a number >= 0 or a map dtype -> number, got {item!r}")
        return float(item)
    if isinstance(value, dict):
        return {str(name): number(item) for name, item in value.items()}
    return number(value)
