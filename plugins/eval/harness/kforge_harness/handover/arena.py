"""A child's device memory inside an arena the task host owns (CUDA): where a timed call's
outputs already lie in memory the task host maps, nobody in the child copies them.

Why: a timed call's outputs must reach the task host. Copied by the child into the
output slot, the copy is code in the candidate's process inside the call's bracket; the
reference's loop pays it too, and the server's clock refunds the reference's gap to
every candidate, so a candidate that skipped it (its outputs computed straight into the
slot, its hand-over replaced) had the copy's time as a speedup: 3.05x to 5.45x on an
H200 for 4 GB of outputs (red team 20), 2x for any elementwise kernel. On the CPU the
task host reads the outputs out of the child (read.py). Here the child's caching
allocator takes its memory from an arena the task host created and lent (cuda.py's
exported device memory, mapped by both): torch's allocations of the child's main thread
go to a torch.cuda.MemPool whose allocator carves segments out of the arena. The child
then only says at which offsets its outputs lie (doorbell.py), and the task host copies
them out of its own mapping of the arena: a copy on the trusted side that both loops pay
and that no code in the candidate's process can skip. The reference's gap holds no copy
any more, so a candidate that copies pays for its copy.

A CUDA graph captured in the child gets a pool of its own carved from the arena too, as
does every pool graph_pool_handle() makes (torch.compile's graph trees), and a routing
of the child's allocations begun from Python has them alone while it lasts
(_route_graphs). Where an output does not lie in the arena (memory of another thread, of
a pool the candidate made itself, of native code's cudaMalloc, or beyond the arena when
it is full: then the segment comes from cuMemAlloc as it would without the pool) the child copies the outputs
into the slot as before, and the verdict is flagged `outputs_copied_in_child`: that copy
is the candidate's own time. A torch without MemPool (before 2.6) gets no arena at all.

The allocator under the pool is C (harness/native/arena_allocator.c, built with the eval
plugin as libkforge_arena_allocator.so), not Python: torch calls it while it holds its
caching allocator's mutex, and a Python allocator would then wait for the GIL, which a
thread of the candidate's may hold while it frees a tensor and waits for that mutex: a
deadlock of an honest multi-threaded candidate (red team 21). The launcher passes the
library's path in KFORGE_ARENA_ALLOCATOR. It must be mapped before the candidate's sandbox
is entered, which shows only the directories of libraries mapped when the server worked out
its view and drops the variable: the server loads it at start on CUDA (__main__.serve), a
spawned child again before its sandbox (server/child.py), and install only finds it."""

import ctypes
import os
import threading

# Segments are carved at the granularity the caching allocator asks for (its small
# pool's 2 MiB, its large allocations rounded to 2 MiB): no smaller pieces to track.
GRAIN = 2 << 20


# A ring's offset names its region above this (no buffer is 2**56 bytes).
REGION = 1 << 56
# The environment variable that names the allocator's library (set by the launcher: the
# eval plugin's harness_client.cpp, or whoever starts the server).
ALLOCATOR_VARIABLE = "KFORGE_ARENA_ALLOCATOR"


class Unavailable(Exception):
    """This process's torch cannot route its allocations into the arena (why)."""


_allocator = None  # the loaded library, or why it could not be loaded (a str)


def load_allocator():
    """The arena allocator's library (ctypes.CDLL), loaded once per process (a forked
    child has the server's); Unavailable saying what is missing where it is not. First
    called outside the sandbox (see the module's docstring): inside, the variable is gone
    and the library's directory may not be there to open."""
    global _allocator
    if _allocator is None:
        path = os.environ.get(ALLOCATOR_VARIABLE, "")
        if not path:
            _allocator = (f"{ALLOCATOR_VARIABLE} is not set: it names libkforge_arena_allocator.so, "
                          "which the eval plugin builds and passes to the harness server it starts "
                          "(set it to the built or installed library when starting the server by hand)")
        else:
            try:
                _allocator = _declared(ctypes.CDLL(path))
            except (OSError, AttributeError) as exc:
                _allocator = f"cannot load the arena allocator {path} ({ALLOCATOR_VARIABLE}): {exc}"
    if isinstance(_allocator, str):
        raise Unavailable(_allocator)
    return _allocator


def load_allocator_early():
    """load_allocator() before the sandbox is worked out or entered (the module's
    docstring); where it cannot be loaded, each child's install says why."""
    try:
        load_allocator()
    except Unavailable:
        pass


def _declared(lib):
    """`lib` with its functions' C types (arena_allocator.c's), which ctypes cannot know."""
    # uintptr_t is size_t's width wherever torch runs.
    size, uintptr, pointer = ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p
    lib.kforge_arena_init.argtypes = [uintptr, size, size, pointer, pointer]
    lib.kforge_arena_init.restype = ctypes.c_int
    lib.kforge_arena_alloc.argtypes = [size, ctypes.c_int, pointer]
    lib.kforge_arena_alloc.restype = pointer
    lib.kforge_arena_free.argtypes = [pointer, size, ctypes.c_int, pointer]
    lib.kforge_arena_free.restype = None
    lib.kforge_arena_free_bytes.argtypes = []
    lib.kforge_arena_free_bytes.restype = size
    lib.kforge_arena_free_ranges.argtypes = [ctypes.POINTER(uintptr), ctypes.POINTER(size), size]
    lib.kforge_arena_free_ranges.restype = size
    lib.kforge_arena_outside.argtypes = []
    lib.kforge_arena_outside.restype = ctypes.c_ulonglong
    return lib


def address_of(function):
    """The bare address of a ctypes function (of a library, or a callback)."""
    return ctypes.cast(function, ctypes.c_void_p).value


class Arena:
    """The child's side: `mapping` (a cuda.DeviceMapping of the task host's arena) as the
    memory of a MemPool its main thread allocates from."""

    def __init__(self, mapping, slots=()):
        """`slots`: the device input slots, in order, which the task host reads too (an
        output may be an input itself, or a view of one)."""
        self.mapping = mapping
        self.device = mapping.raw.device
        self.start = mapping.address
        self.end = mapping.address + mapping.nbytes  # what the task host reads of it
        self.pool = None
        # Per routing of this thread's begun from Python that the arena's stands aside for
        # (its pool, or a capture's graph): how many are open (_route_graphs).
        self._aside_for = {}
        self._allocator = None  # the C allocator's library, once installed
        # Where the task host reads, by region: the arena, then each input slot.
        self.regions = [(self.start, self.end)] + [(slot.address, slot.address + slot.nbytes)
                                                   for slot in slots]

    @property
    def outside(self):
        """Segments that did not fit the arena (from cuMemAlloc) since install."""
        return self._allocator.kforge_arena_outside() if self._allocator is not None else 0

    def offsets(self, tensors):
        """Where each of `tensors` (dense device tensors) lies, as its region's number
        times REGION plus its offset in the region (the arena: 0, input slot i: 1 + i), or
        None where one does not lie wholly in a region."""
        found = []
        for tensor in tensors:
            if tensor.device.type != "cuda":
                return None
            pointer = tensor.data_ptr()
            nbytes = tensor.numel() * tensor.element_size()
            if nbytes == 0:
                found.append(0)
                continue
            for region, (start, end) in enumerate(self.regions):
                if start <= pointer and pointer + nbytes <= end:
                    found.append(region * REGION + pointer - start)
                    break
            else:
                return None
        return found

    def install(self):
        """Routes this thread's torch allocations on the arena's device into it from now
        on (Unavailable where this torch cannot)."""
        import torch
        begin = getattr(torch._C, "_cuda_beginAllocateCurrentThreadToPool", None)
        custom = getattr(torch._C, "_cuda_customAllocator", None)
        if begin is None or custom is None or not hasattr(torch.cuda, "MemPool"):
            raise Unavailable(f"torch {torch.__version__} has no memory pool with an allocator of "
                              "its own (torch.cuda.MemPool, 2.6 or later)")
        lib = load_allocator()
        from kforge_harness.handover.cuda import device_allocator
        alloc_fn, free_fn = device_allocator()
        if lib.kforge_arena_init(self.start, self.end - self.start, GRAIN, alloc_fn, free_fn) != 0:
            raise Unavailable(f"the arena allocator refused the arena at {self.start:#x} "
                              f"({self.end - self.start} bytes)")
        self._allocator = lib
        allocator = custom(address_of(lib.kforge_arena_alloc), address_of(lib.kforge_arena_free))
        self.pool = torch.cuda.MemPool(allocator)
        device = self.device.index
        self._routing = (begin, torch._C._cuda_endAllocateToPool, torch.empty, device)
        begin(device, self.pool.id)
        self._route_graphs(torch, allocator)

    def reclaim(self):
        """Lets the caching allocator recycle memory a stream other than its own still
        used when it was freed (record_stream): it does that at a malloc while no pool
        routing is under way, and this thread's routing into the arena is under way but
        while another stands aside it (_route_graphs). Called between timed calls, off
        their clock."""
        begin, end, empty, device = self._routing
        if any(self._aside_for.values()):
            return
        end(device, self.pool.id)
        try:
            empty(1, device=self.device)
        finally:
            begin(device, self.pool.id)

    def _route_graphs(self, torch, allocator):
        """CUDA graphs captured here, and every other routing of this thread's
        allocations to a pool begun from Python, get the thread alone while they last,
        in pools carved from the arena.

        Alone: the caching allocator gives an allocation the pool of one of the routings
        under way that claim it, and which one is torch's choice (the order has changed
        between versions). With this thread's routing into the arena still under way,
        torch.compile's graph trees found their warm-up's outputs in the arena's pool,
        not in theirs ("storage data ptrs are not allocated in pool", red team 21), and a
        capture's allocations could go to a pool others allocate from while replays
        still write there. So the arena's routing ends when another begins on the thread
        it routes and begins again when the last such one ends (`_aside_for` counts
        them); a routing on another thread names that thread alone.

        Carved from the arena: a graph captured without a pool of its caller's, and every
        pool made by graph_pool_handle() (torch.compile's graph trees make theirs so and
        check their tensors against it), is a MemPool over the arena, so that a replay's
        outputs lie where the task host reads them."""
        begin, end, _, device = self._routing
        ours = tuple(self.pool.id)
        installer = threading.get_ident()  # the thread whose allocations the arena takes
        pools_kept = []  # every MemPool made in this process (below)

        def arena_pool():
            return torch.cuda.MemPool(allocator).id  # kept, as every pool (below)

        def standing_aside():
            return any(self._aside_for.values())

        def step_aside(key):
            """The arena's routing ended for the routing `key` begun on the installer's
            thread: another thread's routings name that thread alone, not this one."""
            if threading.get_ident() != installer:
                return
            if not standing_aside():
                end(device, ours)
            self._aside_for[key] = self._aside_for.get(key, 0) + 1

        def step_back(key):
            """The routing `key` ended (on whatever thread): the arena's begins again after
            the last one it stood aside for."""
            if not self._aside_for.get(key):
                return
            self._aside_for[key] -= 1
            if not standing_aside():
                begin(device, ours)

        def pool_of(args, kwargs):
            pool = args[1] if len(args) > 1 else kwargs.get("mempool_id")
            return ("pool", tuple(pool)) if pool is not None else None

        def capture_of(args, kwargs):
            return ("capture", id(args[0]))

        def aside(routing, key_of):
            """`routing` (what begins one) with the arena's routing ended while it lasts."""
            def begun_aside(*args, **kwargs):
                key = key_of(args, kwargs)
                step_aside(key)
                try:
                    return routing(*args, **kwargs)
                except BaseException:
                    step_back(key)
                    raise
            return begun_aside

        def back(ending, key_of):
            """`ending` (what ends a routing) with the arena's begun again after the last,
            whether it ends well or not."""
            def ended(*args, **kwargs):
                try:
                    return ending(*args, **kwargs)
                finally:
                    step_back(key_of(args, kwargs))
            return ended

        graph = torch.cuda.CUDAGraph
        capture_aside = aside(graph.capture_begin, capture_of)

        def begin_capture(graph, pool=None, *args, **kwargs):
            return capture_aside(graph, arena_pool() if pool is None else pool, *args, **kwargs)

        end_capture = back(graph.capture_end, capture_of)
        graph.capture_begin, graph.capture_end = begin_capture, end_capture
        # A MemPool freed while the arena's routing is under way aborts the process
        # (torch asserts that no routing is under way as it frees a pool's blocks): every
        # pool lives as long as the child, which ends by os._exit, with no destructors.
        made = torch.cuda.MemPool.__init__

        def kept_pool(pool, *args, **kwargs):
            made(pool, *args, **kwargs)
            pools_kept.append(pool)

        torch.cuda.MemPool.__init__ = kept_pool
        for module in (torch.cuda, torch.cuda.graphs):
            module.graph_pool_handle = arena_pool
        # torch.cuda.memory binds the functions by name when torch is imported.
        for name, wrap in (("_cuda_beginAllocateCurrentThreadToPool", aside),
                           ("_cuda_beginAllocateToPool", aside), ("_cuda_endAllocateToPool", back)):
            original = getattr(torch._C, name, None)
            if original is None:
                continue
            wrapped = wrap(original, pool_of)
            for module in (torch._C, torch.cuda.memory):
                if getattr(module, name, None) is original:
                    setattr(module, name, wrapped)
