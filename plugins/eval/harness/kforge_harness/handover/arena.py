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
is the candidate's own time. A torch without MemPool (before 2.6) gets no arena at all."""

import ctypes

# Segments are carved at the granularity the caching allocator asks for (its small
# pool's 2 MiB, its large allocations rounded to 2 MiB): no smaller pieces to track.
GRAIN = 2 << 20


# What of the arena goes to the caching allocator's small pool (allocations of 1 MiB or
# less, in 2 MiB segments) when it is installed; the rest is one large segment.
SMALL_RESERVE = 64 << 20
# A ring's offset names its region above this (no buffer is 2**56 bytes).
REGION = 1 << 56


class Unavailable(Exception):
    """This process's torch cannot route its allocations into the arena (why)."""


class Ranges:
    """First-fit bookkeeping of the free parts of [start, start + size), in GRAIN
    pieces: `take` a piece, `give` it back (merged with its free neighbours). Kept in two
    lists of ints: it runs inside the caching allocator's malloc, where it should not
    make the containers that start Python's garbage collector."""

    def __init__(self, start, size):
        self.starts = [start]
        self.sizes = [size // GRAIN * GRAIN]

    @staticmethod
    def rounded(nbytes):
        return max(GRAIN, (nbytes + GRAIN - 1) // GRAIN * GRAIN)

    def take(self, nbytes):
        """The start of a free piece of `nbytes` (rounded up), or None where none fits."""
        nbytes = self.rounded(nbytes)
        for index in range(len(self.sizes)):
            if self.sizes[index] >= nbytes:
                start = self.starts[index]
                if self.sizes[index] == nbytes:
                    del self.starts[index]
                    del self.sizes[index]
                else:
                    self.starts[index] += nbytes
                    self.sizes[index] -= nbytes
                return start
        return None

    def give(self, start, nbytes):
        nbytes = self.rounded(nbytes)
        index = 0
        while index < len(self.starts) and self.starts[index] < start:
            index += 1
        self.starts.insert(index, start)
        self.sizes.insert(index, nbytes)
        if index + 1 < len(self.starts) and start + nbytes == self.starts[index + 1]:
            self.sizes[index] += self.sizes[index + 1]
            del self.starts[index + 1]
            del self.sizes[index + 1]
        if index > 0 and self.starts[index - 1] + self.sizes[index - 1] == start:
            self.sizes[index - 1] += self.sizes[index]
            del self.starts[index]
            del self.sizes[index]

    def free_bytes(self):
        return sum(self.sizes)


_ALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)
_FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)


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
        self.ranges = Ranges(self.start, mapping.nbytes)
        self.outside = 0  # segments that did not fit (from cuMemAlloc)
        self.pool = None
        self._aside = 0  # routings of this thread begun from Python that the arena's stands aside for
        # Where the task host reads, by region: the arena, then each input slot.
        self.regions = [(self.start, self.end)] + [(slot.address, slot.address + slot.nbytes)
                                                   for slot in slots]

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
        from kforge_harness.handover.cuda import driver_alloc, driver_free
        ranges, start, end = self.ranges, self.start, self.end

        def allocate(nbytes, _device, _stream):
            try:
                address = ranges.take(nbytes)
                if address is not None:
                    return address
                self.outside += 1
                return driver_alloc(Ranges.rounded(nbytes))
            except BaseException:  # noqa: BLE001 - nothing may raise into torch's malloc
                return None

        def free(address, nbytes, _device, _stream):
            try:
                if start <= address < end:
                    ranges.give(address, nbytes)
                else:
                    driver_free(address)
            except BaseException:  # noqa: BLE001
                pass

        # Kept: torch holds the bare function pointers.
        self._callbacks = (_ALLOC(allocate), _FREE(free))
        allocator = custom(ctypes.cast(self._callbacks[0], ctypes.c_void_p).value,
                           ctypes.cast(self._callbacks[1], ctypes.c_void_p).value)
        self.pool = torch.cuda.MemPool(allocator)
        device = self.device.index
        self._routing = (begin, torch._C._cuda_endAllocateToPool, torch.empty, device)
        begin(device, self.pool.id)
        self._route_graphs(torch, allocator)
        self._reserve(torch)

    def reclaim(self):
        """Lets the caching allocator recycle memory a stream other than its own still
        used when it was freed (record_stream): it does that at a malloc while no pool
        routing is under way, and this thread's routing into the arena is under way but
        while another stands aside it (_route_graphs). Called between timed calls, off
        their clock."""
        begin, end, empty, device = self._routing
        if self._aside:
            return
        end(device, self.pool.id)
        try:
            empty(1, device=self.device)
        finally:
            begin(device, self.pool.id)

    def _reserve(self, torch):
        """Half the arena made the caching allocator's own at once, while no other
        thread runs: one segment for the large pool, SMALL_RESERVE of 2 MiB segments for
        the small pool, freed and kept cached. Later allocations split them and seldom
        call the allocator below: a call of it that runs Python needs the GIL while the
        caching allocator holds its lock, and a thread of the candidate's that holds the
        GIL and frees a tensor waits for that lock (red team 21: a deadlock of an honest
        candidate). The other half is for CUDA graphs' pools and growth, which do call
        it (so does empty_cache)."""
        small = min(SMALL_RESERVE, self.ranges.free_bytes() // 4)
        large = self.ranges.free_bytes() // 2 // GRAIN * GRAIN - small
        if large > 0:
            torch.empty(large, dtype=torch.uint8, device=self.device)
        pieces = [torch.empty(1 << 20, dtype=torch.uint8, device=self.device)
                  for _ in range(small >> 20)]
        del pieces

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
        still write there. So the arena's routing ends when another begins and begins
        again when the last other one ends (`_aside` counts them).

        Carved from the arena: a graph captured without a pool of its caller's, and every
        pool made by graph_pool_handle() (torch.compile's graph trees make theirs so and
        check their tensors against it), is a MemPool over the arena, so that a replay's
        outputs lie where the task host reads them."""
        begin, end, _, device = self._routing
        ours = tuple(self.pool.id)
        graph_pools = []

        def arena_pool():
            pool = torch.cuda.MemPool(allocator)
            graph_pools.append(pool)  # a graph's pool lives as long as this process
            return pool.id

        def step_aside():
            if self._aside == 0:
                end(device, ours)
            self._aside += 1

        def step_back():
            self._aside -= 1
            if self._aside == 0:
                begin(device, ours)

        def aside(routing):
            """`routing` (what begins one) with the arena's routing ended while it lasts."""
            def begun_aside(*args, **kwargs):
                step_aside()
                try:
                    return routing(*args, **kwargs)
                except BaseException:
                    step_back()
                    raise
            return begun_aside

        def back(ending):
            """`ending` (what ends a routing) with the arena's begun again after the last."""
            def ended(*args, **kwargs):
                result = ending(*args, **kwargs)
                pool = args[1] if len(args) > 1 else kwargs.get("mempool_id")
                if self._aside and (pool is None or tuple(pool) != ours):
                    step_back()
                return result
            return ended

        graph = torch.cuda.CUDAGraph
        capture_begin, capture_end = aside(graph.capture_begin), graph.capture_end

        def begin_capture(graph, pool=None, *args, **kwargs):
            return capture_begin(graph, arena_pool() if pool is None else pool, *args, **kwargs)

        def end_capture(graph, *args, **kwargs):
            try:
                return capture_end(graph, *args, **kwargs)
            finally:
                step_back()

        graph.capture_begin, graph.capture_end = begin_capture, end_capture
        for module in (torch.cuda, torch.cuda.graphs):
            module.graph_pool_handle = arena_pool
        # torch.cuda.memory binds the functions by name when torch is imported.
        for name, wrap in (("_cuda_beginAllocateCurrentThreadToPool", aside),
                           ("_cuda_beginAllocateToPool", aside), ("_cuda_endAllocateToPool", back)):
            original = getattr(torch._C, name, None)
            if original is None:
                continue
            wrapped = wrap(original)
            for module in (torch._C, torch.cuda.memory):
                if getattr(module, name, None) is original:
                    setattr(module, name, wrapped)
