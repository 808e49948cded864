"""What the reference worker and the candidate child both do with a task: set up the
device, load the task module at its sizes, build a model right after seeding, make a
trial's inputs from its seed, run a forward. Who is blamed when one of these fails is not
decided here: the reference worker (reference.py) and the candidate child (candidate.py)
each wrap them in their own terms."""

import contextlib
import functools
import random
import sys

import numpy as np
import torch

from kforge_harness import handover
from kforge_harness.handover import tree
from kforge_harness.anticheat import observe
from kforge_harness.tasks import task_modules, tasks
from kforge_harness.judge.outputs import as_tensor, flat_leaves, pieces, surely_finite


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed % 2**32)
    # What torch.manual_seed seeds, less the backends this torch is built without: for
    # each of those (xpu in a CUDA build, say) torch 2.x queues a lazy call holding its
    # formatted stack, 2 ms a call (a third of a task host's work between timed calls on an
    # H200) and a queue that grows with every seed.
    torch.default_generator.manual_seed(int(seed))
    for backend in _seeded_backends():
        if not getattr(backend, "_is_in_bad_fork", lambda: False)():  # as torch.manual_seed
            backend.manual_seed_all(int(seed))


@functools.cache
def _seeded_backends():
    """torch's accelerator modules built into this torch (cuda, xpu, npu). Asked whether
    they are built, not whether a device is there: that would initialise the driver in a
    process that may fork, and a backend not initialised yet is seeded lazily, as
    torch.manual_seed does."""
    found = []
    for name in ("cuda", "xpu", "npu"):
        backend = getattr(torch, name, None)
        if not hasattr(backend, "manual_seed_all"):
            continue
        built = getattr(backend, "_is_compiled", None)  # torch_npu's module has none
        if built() if built is not None else backend.is_available():
            found.append(backend)
    return tuple(found)


# The seed values laid out whole are made from ahead of a call (TaskSession.lend_inputs):
# the job's own seeds are its secret, and this one tells nothing of them.
PUBLIC_SEED = 0


def to_torch(obj, device=None):
    """`obj` with NumPy arrays turned into tensors (copies: the arrays stay untouched)
    and every tensor moved to `device`, inside plain lists and tuples; a value met twice
    becomes one tensor, at both places (an alias kept)."""
    def change(leaf):
        tensor = torch.from_numpy(leaf.copy()) if isinstance(leaf, np.ndarray) else leaf
        return tensor.to(device) if device is not None else tensor
    return _mapped(obj, change, lambda leaf: isinstance(leaf, (np.ndarray, torch.Tensor)), dicts=False)


def _mapped(obj, change, changes, dicts=True, done=None):
    """`obj` with change(leaf) for every leaf where changes(leaf), inside plain lists and
    tuples (and dicts, with `dicts`), anew; a leaf or a container met twice is changed
    once and kept at both places (an alias, a list that holds itself). Only lists, dicts
    and changed leaves are remembered: a leaf kept as it is (a number among thousands)
    costs no id(), an audited event that the candidate's child's guard hears
    (anticheat/guards.py), which made a list of 20000 numbers 8x slower to feed there
    than in the reference's child."""
    done = {} if done is None else done
    kind = type(obj)
    if kind is tuple:
        return tuple(_mapped(item, change, changes, dicts, done) for item in obj)
    if kind is not list and not (kind is dict and dicts) and not changes(obj):
        return obj
    if id(obj) in done:
        return done[id(obj)][1]
    if kind is list:
        made = []
        done[id(obj)] = (obj, made)
        made.extend(_mapped(item, change, changes, dicts, done) for item in obj)
        return made
    if kind is dict:
        made = {}
        done[id(obj)] = (obj, made)
        made.update((key, _mapped(item, change, changes, dicts, done)) for key, item in obj.items())
        return made
    done[id(obj)] = (obj, change(obj))
    return done[id(obj)][1]


def as_torch_view(obj):
    """Tensors over the same memory as the NumPy arrays in `obj` (no copy): lets the
    anti-cheat observations treat NumPy and torch values alike."""
    return _mapped(obj, torch.from_numpy, lambda leaf: isinstance(leaf, np.ndarray), dicts=False)


def warm_up(device):
    """What every candidate child pays before its own work, paid ahead in a standby
    child: the device context (CUDA: ~0.2-0.3 s) and the first use of the kernels the
    harness's own code runs there (copies into a buffer), which load lazily. Triton's
    driver is initialised too where triton is present."""
    torch_device = device.activate(torch)
    sample = torch.linspace(-1.0, 1.0, 64, device=torch_device)
    torch.empty_like(sample).copy_(sample)
    device.synchronize(torch)
    if device.is_accelerator:
        try:
            import triton
        except ImportError:
            return
        triton.runtime.driver.active.get_current_device()


def mindspore_module():
    """MindSpore when this interpreter has it, else None."""
    try:
        import mindspore  # noqa: PLC0415 - optional, and heavy: only for its tasks
    except ImportError:
        return None
    return mindspore


def from_mindspore(obj):
    if isinstance(obj, (list, tuple)):
        return type(obj)(from_mindspore(item) for item in obj)
    return obj.asnumpy() if hasattr(obj, "asnumpy") else obj


def limit_device_memory(device, megabytes):
    """Holds this process's caching allocator on an accelerator to the share of the
    device the client admitted the job with (limits.device_memory_mb), so that a job that
    outgrows its share fails itself rather than a neighbour. On the CPU the memory limit
    does it (child.py)."""
    if not megabytes or not device.is_accelerator:
        return
    module = device.module(torch)
    if not hasattr(module, "set_per_process_memory_fraction"):
        return
    total = module.get_device_properties(device.index).total_memory
    module.set_per_process_memory_fraction(min(1.0, megabytes * (1 << 20) / total), device.index)


class Side:
    """One model (reference or candidate) and how it is fed, by `kind`: "torch" models
    get tensors on the device; "numpy" models (the reference of a kernelbench-numpy task,
    or that reference as its own candidate) get arrays; "mindspore" models (a
    kernelbench-mindspore reference) get MindSpore tensors made from the arrays and give
    back arrays."""

    def __init__(self, model, kind, device):
        self.model = model
        self.kind = kind
        self.device = device

    def feed(self, master):
        """The inputs as this side takes them (tensors on the device for torch models)."""
        if self.kind == "torch":
            return to_torch(master, self.device)
        return master

    def __call__(self, inputs):
        if self.kind == "numpy":
            forward = getattr(self.model, "forward", None) or self.model
            return forward(*inputs)
        if self.kind == "mindspore":
            tensor = mindspore_module().Tensor
            return from_mindspore(self.model(*[tensor(a) if isinstance(a, np.ndarray) else a for a in inputs]))
        with torch.no_grad():
            return self.model(*inputs)


class MissingFramework(Exception):
    """The task needs a framework this interpreter lacks and has no fallback."""


class NoEntry(Exception):
    """The candidate lacks what the task's format calls (ModelNew, or a function)."""


def session_class(task_format):
    """The TaskSession class of a task format: kernelbenchx tasks have their own (kbx.py).
    Its class attributes are what the format declares to those who never load a task
    (the server)."""
    from kforge_harness.tasks import kbx  # noqa: PLC0415 - kbx builds on this module

    return kbx.KbxSession if task_format == kbx.FORMAT else TaskSession


def task_session(task, options, device):
    """The session for the task's format. A candidate's job carries the task's helper
    modules that its sandbox does not show (task_modules.py): they are importable from
    here on."""
    task_modules.install(task.get("modules"))
    return session_class(task["format"])(task, options, device)


class TaskSession:
    """One task at its sizes in this process, on this device."""

    # make_inputs(seed, transform) can scale and shift the inputs (a near-constant
    # reference's varied trials, reference.VARIATIONS).
    inputs_can_vary = True
    # A timed call here is one forward on one input set (get_inputs' on the call's seed);
    # a kernelbenchx session's replays the function's calls of a run of the test code,
    # which the task host records and hands over (kbx.py, kbx_calls.py).
    replays_calls = False

    def __init__(self, task, options, device):
        self.task_spec = task
        self.options = options
        self.device = device
        # The master inputs are NumPy arrays (numpy and mindspore tasks), not tensors.
        self.numpy_task = task["format"] in ("kernelbench-numpy", "kernelbench-mindspore")
        self.torch_device = None
        self.module = None
        self.init_inputs = None
        self.sizes = {}
        self.flags = []

    def setup_device(self):
        self.torch_device = self.device.activate(torch)
        # fp32 references must be fp32: cuDNN convolutions default to TF32, which is off
        # by ~1e-3 at real sizes and would fail exact kernels at atol=rtol=1e-4.
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False

    def load(self):
        """Executes the task module (a task_error Verdict, or whatever its code raises)."""
        self.module, changes = tasks.load_task(self.task_spec, self.task_spec["source"])
        self.sizes = tasks.run_sizes(self.task_spec, self.task_spec["source"])
        for name, (old, new) in changes.items():
            print(f"kforge: task size {name} = {old} -> {new}", file=sys.stderr)

    def make_init_inputs(self):
        self.init_inputs = list(self.with_default_device(self.module.get_init_inputs))

    def reference_class(self):
        """The reference model class and its kind. A kernelbench-mindspore task runs its
        MindSpore Model where MindSpore is installed, else its PyTorch fallback (class
        TorchModel in the same file), as seed 000's MindSpore suite did."""
        task_format = self.task_spec["format"]
        if task_format == "kernelbench-numpy":
            return self.module.Model, "numpy"
        if task_format != "kernelbench-mindspore":
            return self.module.Model, "torch"
        if mindspore_module() is not None and hasattr(self.module, "Model"):
            return self.module.Model, "mindspore"
        if hasattr(self.module, "TorchModel"):
            self.flags.append("reference_fallback_torch")
            return self.module.TorchModel, "torch"
        raise MissingFramework(
            "this kernelbench-mindspore task needs MindSpore, which "
            f"{sys.executable} cannot import, and defines no PyTorch fallback: install "
            "MindSpore, or add class TorchModel to the task file")

    def candidate_code(self, code):
        """The part of the candidate's file that is its implementation."""
        return code

    def candidate_entry(self, module):
        """(what the candidate supplies, its kind); NoEntry when it lacks it."""
        cls = getattr(module, "ModelNew", None)
        if cls is None:
            raise NoEntry("the candidate defines no ModelNew class")
        return cls, "torch"

    def output_facts(self):
        """What the last forward's outputs carry beyond their leaves (kbx: leaf names)."""
        return {}

    def lend_inputs(self, mapping, described, host=None):
        """(child) What takes a trial's or timed call's inputs out of the slot the task host
        fills (`described` is the layout it sent; `host`, the slot's host-memory twin, only
        a kernelbenchx unit's calls use): made before the inputs are there (a
        timed call's, while no clock runs), called as take(seed, copy, values) once they
        are, inside the call's bracket; `values`, where given, are the description's
        inline values, which a timed call's description sent ahead leaves out. Here:
        views of the slot, made now; values no layout describes made from the seed with
        the rest of the inputs (handover/tree.py), where the layout has some
        (`take.makes_inputs`)."""
        layout = handover.Layout.from_json(described)
        views = handover.views(mapping, layout)
        places = [i for i, leaf in enumerate(layout.leaves) if leaf.kind == "value"]
        makes, makes_any = tree.makes(layout.tree), tree.makes_any(layout.tree)

        def premake():
            """The values laid out whole, made ahead of the call from a seed everyone
            knows (their parts are all written over), or None."""
            return self.make_inputs(PUBLIC_SEED) if makes_any and not makes else None

        def take(seed, copy, values=None, made=None):
            taken = views
            if values is not None:
                if len(values) != len(places):
                    raise ValueError(f"{len(values)} input values for the {len(places)} the layout leaves out")
                taken = list(views)
                for place, value in zip(places, values):
                    # Tagged only where JSON has no word for it (handover/values.py).
                    taken[place] = handover.value_from_json(value) if type(value) is dict else value
            if layout.tree is None:
                return taken
            # Any made value not laid out whole needs the call's own seed.
            if makes:
                made = self.make_inputs(seed)
            elif made is None:
                made = premake()
            return tree.rebuild(layout.tree, taken, made)
        take.makes_inputs, take.premake = makes, premake
        # Whether the arguments can be put together while the call is prepared: nothing
        # in them needs the call's seed, its numbers or its data.
        take.at_prepare = not makes and not places
        return take

    def output_leaves(self, out):
        """(child) A forward's outputs as the flat list that is handed over."""
        return as_torch_view(flat_leaves(out))

    def release_inputs(self, inputs, copy):
        """(child) After a call's outputs were handed over: what the call did to inputs it
        was given as copies goes back into the slot (kbx), with `copy`."""

    def tensor_names(self):
        """Names of the last forward's tensor outputs where the format names them (kbx),
        else None."""
        return None

    def build(self, cls, kind):
        """Seeds before the constructor, so equal parameter shapes get equal weights.
        Built where the inputs are made (with_default_device): a model of GBs of weights
        is initialised by the device, not by the host's memory and threads."""
        seed = self.options["seed"]
        seed_everything(seed)
        if kind == "mindspore":
            mindspore_module().set_seed(seed)
        with drawn_defaults():
            model = self.with_default_device(lambda: cls(*self.init_inputs)) if kind == "torch" \
                else cls(*self.init_inputs)
        if isinstance(model, torch.nn.Module):
            model = model.to(self.torch_device)
        return Side(model, kind, self.torch_device)

    def compiled(self, side):
        """The reference side built by torch.compile (the `baseline: compile` timing)."""
        return Side(torch.compile(side.model), side.kind, side.device)

    def with_default_device(self, make):
        """Calls get_inputs/get_init_inputs with the target device as torch's default
        device, so big inputs are made where they are used. torch < 2.0 lacks that: there,
        and with inputs_on_device=false, they are made on the host and moved."""
        on_device = (self.device.is_accelerator and self.options["inputs_on_device"]
                     and not self.numpy_task and hasattr(torch, "set_default_device"))
        if on_device:
            with torch.device(self.torch_device):
                return make()
        return make()

    def make_inputs(self, seed, transform=None):
        """Trial inputs from `seed`; `transform` (scale, shift), when given, maps every
        floating-point input x to x * scale + shift (the varied trials of a task whose
        reference is near-constant; integer inputs such as indices stay as they are)."""
        seed_everything(seed)
        inputs = list(self.with_default_device(self.module.get_inputs))
        if transform is not None:
            inputs = _mapped(inputs, lambda leaf: _scaled(leaf, *transform), _floating)
        return inputs if self.numpy_task else to_torch(inputs, self.torch_device)

    def forward(self, side, inputs, seed):
        """The forward's outputs as a flat list, NumPy arrays viewed as tensors; the device
        is synchronised, so asynchronous faults surface here."""
        seed_everything(seed)  # same RNG stream for both sides (dropout-like ops)
        out = side(inputs)
        self.device.synchronize(torch)
        return as_torch_view(flat_leaves(out))

    def observe(self, side, inputs, seed):
        """One forward with what the anti-cheat checks need: (outputs, changed input
        positions, [output, input] of an aliasing output or None)."""
        viewed = as_torch_view(inputs)
        before = observe.input_digests(viewed)
        out = self.forward(side, inputs, seed)
        changed = observe.changed_inputs(before, observe.input_digests(viewed))
        aliased = observe.aliasing(out, observe.tensors_in(viewed))
        return out, changed, aliased

    def synchronize(self):
        self.device.synchronize(torch)


def _floating(value):
    return ((isinstance(value, torch.Tensor) and value.is_floating_point()) or
            (isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating)))


def _scaled(value, scale, shift):
    scaled = value * scale + shift
    return scaled.astype(value.dtype) if isinstance(value, np.ndarray) else scaled


def weight_tensors(model):
    """The model's state the reference lends to ModelNew (load_weights), as (name,
    tensor) in registration order: every floating-point parameter, and the running
    statistics of batch/instance norms (which a model in eval mode reads). Other buffers
    (masks, tables the task built) are the model's own."""
    found = [(name, p) for name, p in model.named_parameters() if p.is_floating_point()]
    for module_name, module in model.named_modules():
        if isinstance(module, torch.nn.modules.batchnorm._NormBase):
            for buffer in ("running_mean", "running_var"):
                tensor = getattr(module, buffer, None)
                if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
                    found.append((f"{module_name}.{buffer}" if module_name else buffer, tensor))
    return found


@contextlib.contextmanager
def drawn_defaults():
    """While a model is built: the constants that initialisers fill tensors with (ones,
    zeros, constant_, and a norm's running statistics) are drawn instead from torch's
    generator, which build() has just seeded with the model seed. Both Model and
    ModelNew are built this way, so equal parameters created in the same order get equal
    values (KernelBench's convention), and what a ModelNew precomputes from them in its
    constructor holds; but no weight is left at a constant a kernel could assume (a
    LayerNorm's ones and zeros): a candidate that ignores one fails. A ones-filled tensor
    becomes U(0.5, 1.5), a constant c becomes c * U(0.5, 1.5), zeros become U(-0.5, 0.5):
    the scale, sign and support stay (a variance stays positive)."""
    init = torch.nn.init
    norm = torch.nn.modules.batchnorm._NormBase
    saved = {name: getattr(init, name) for name in ("ones_", "zeros_", "constant_")}
    saved_reset = norm.reset_running_stats

    def drawn(original, tensor, value):
        if not tensor.is_floating_point():
            return original(tensor)
        with torch.no_grad():
            if value == 0:
                return tensor.uniform_(-0.5, 0.5)
            return tensor.uniform_(0.5, 1.5).mul_(value)

    def reset_running_stats(module):
        saved_reset(module)
        if module.track_running_stats:
            with torch.no_grad():
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 1.5)

    init.ones_ = lambda tensor: drawn(saved["ones_"], tensor, 1.0)
    init.zeros_ = lambda tensor: drawn(saved["zeros_"], tensor, 0.0)
    init.constant_ = lambda tensor, val: drawn(lambda t: saved["constant_"](t, val), tensor, float(val))
    norm.reset_running_stats = reset_running_stats
    try:
        yield
    finally:
        for name, function in saved.items():
            setattr(init, name, function)
        norm.reset_running_stats = saved_reset


def load_weights(model, weights):
    """Makes ModelNew's weights the reference's where they differ. `weights`: (name,
    tensor) pairs of the reference's weight_tensors (views of the buffer the task host
    lends). A ModelNew tensor is matched with the reference's tensor of the same name and
    shape; those left over in order, each with the first unused reference tensor of its
    shape (ModelNew naming its layers differently). Built like the reference, a ModelNew
    has equal values already and nothing is copied, so what its constructor derived from
    them stays valid. Returns (matched, copied, ModelNew names that got nothing,
    reference names nobody took)."""
    targets = weight_tensors(model) if isinstance(model, torch.nn.Module) else []
    sources = dict(weights)
    pairs, free_targets = [], []
    for name, tensor in targets:
        source = sources.get(name)
        if source is not None and tuple(source.shape) == tuple(tensor.shape):
            pairs.append((tensor, source))
            del sources[name]
        else:
            free_targets.append((name, tensor))
    not_copied = []
    for name, tensor in free_targets:
        match = next((key for key, source in sources.items()
                      if tuple(source.shape) == tuple(tensor.shape)), None)
        if match is None:
            not_copied.append(name)
            continue
        pairs.append((tensor, sources.pop(match)))
    copied = 0
    with torch.no_grad():
        for tensor, source in pairs:
            source = source.to(tensor.device)
            if tensor.dtype != source.dtype or not torch.equal(tensor, source):
                tensor.copy_(source)
                copied += 1
    return len(pairs), copied, not_copied, list(sources)


def nan_count(values):
    """NaN elements in a forward's tensor outputs (0 for integer outputs). Counted in
    pieces: a whole-tensor sum of a mask widens it to int64, 8 bytes per element (12 GiB
    for KernelBench's 6 GiB activations)."""
    floating = _floating(values)
    if surely_finite(floating):
        return 0
    count = 0
    for tensor in floating:
        for piece in pieces(tensor, 1 << 24):
            count += int(torch.isnan(piece).sum())
    return count


def all_finite(values):
    """Whether every floating-point element of a forward's tensor outputs is finite."""
    floating = _floating(values)
    return surely_finite(floating) or all(bool(torch.isfinite(t).all()) for t in floating)


def _floating(values):
    tensors = [as_tensor(value) for value in values]
    return [t.detach() for t in tensors if t is not None and (t.is_floating_point() or t.is_complex())]
