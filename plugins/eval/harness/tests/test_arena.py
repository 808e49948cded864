"""A timed call's outputs read by the task host out of the arena the child allocates from
(handover/arena.py): the C allocator's bookkeeping (its library, built with the eval
plugin, over made-up addresses: it never touches the memory) and the ring that names the
outputs on any machine; the allocator and the whole hand-over where this interpreter sees
a CUDA device (skipped elsewhere, saying so)."""

import ctypes
import os
import subprocess
import sys
import threading
import types
import unittest
import unittest.mock

from kforge_harness import handover
from kforge_harness.handover import arena, doorbell
from kforge_harness.handover.arena import GRAIN, REGION
from kforge_harness.reference.host import Host
from tests import client
from tests.test_attacks_forged import show

try:
    import torch
    HAS_CUDA = torch.cuda.is_available()
except ImportError:
    HAS_CUDA = False


def _built_allocator():
    """The allocator's library: $KFORGE_ARENA_ALLOCATOR (ctest sets it), else the one
    scripts/build.sh builds into $KFORGE_BUILD_DIR or the repository's build/; None where
    there is none."""
    named = os.environ.get(arena.ALLOCATOR_VARIABLE)
    if named:
        return named
    here = os.path.abspath(__file__)  # <repository>/plugins/eval/harness/tests/test_arena.py
    repository = here
    for _ in range(5):
        repository = os.path.dirname(repository)
    build = os.environ.get("KFORGE_BUILD_DIR") or os.path.join(repository, "build")
    built = os.path.join(build, "plugins", "eval", "arena", "libkforge_arena_allocator.so")
    return built if os.path.isfile(built) else None


ALLOCATOR_LIBRARY = _built_allocator()
NO_ALLOCATOR = (f"SKIP: no arena allocator library: {arena.ALLOCATOR_VARIABLE} is unset and "
                "scripts/build.sh has built none ($KFORGE_BUILD_DIR or build/ "
                "plugins/eval/arena/libkforge_arena_allocator.so); build kforge or set the variable")

# libcuda's cuMemAlloc_v2 and cuMemFree_v2, played by Python here (never in the harness).
DEVICE_ALLOC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_size_t)
DEVICE_FREE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_ulonglong)
# Where the made-up device memory outside the arena lies.
OUTSIDE = 1 << 44


@unittest.skipUnless(ALLOCATOR_LIBRARY, NO_ALLOCATOR)
class ArenaAllocatorTest(unittest.TestCase):
    """arena_allocator.c through ctypes, as torch calls it (its one arena per process)."""

    @classmethod
    def setUpClass(cls):
        cls.lib = arena._declared(ctypes.CDLL(ALLOCATOR_LIBRARY))

    def start_arena(self, start, size, device_full=False):
        """The library's books over [start, start + size), with a device allocator that
        has room (at OUTSIDE onwards) unless `device_full`."""
        self.device_allocated, self.device_freed = [], []

        def device_alloc(address, nbytes):
            if device_full:
                return 2  # CUDA_ERROR_OUT_OF_MEMORY
            address[0] = OUTSIDE + sum(self.device_allocated)
            self.device_allocated.append(nbytes)
            return 0

        def device_free(address):
            self.device_freed.append(address)
            return 0

        self.callbacks = (DEVICE_ALLOC(device_alloc), DEVICE_FREE(device_free))  # kept alive
        result = self.lib.kforge_arena_init(start, size, GRAIN, *(arena.address_of(c) for c in self.callbacks))
        self.assertEqual(result, 0)

    def alloc(self, nbytes):
        return self.lib.kforge_arena_alloc(nbytes, 0, None)

    def free(self, address, nbytes):
        self.lib.kforge_arena_free(address, nbytes, 0, None)

    def free_ranges(self):
        starts, sizes = (ctypes.c_size_t * 64)(), (ctypes.c_size_t * 64)()
        count = self.lib.kforge_arena_free_ranges(starts, sizes, 64)
        return list(starts[:count]), list(sizes[:count])

    def test_pieces_are_taken_first_fit_and_rounded_to_the_grain(self):
        self.start_arena(1 << 30, 8 * GRAIN)
        self.assertEqual(self.alloc(1), 1 << 30)
        self.assertEqual(self.alloc(GRAIN + 1), (1 << 30) + GRAIN)
        self.assertEqual(self.alloc(0), (1 << 30) + 3 * GRAIN)  # even nothing takes a grain
        self.assertEqual(self.lib.kforge_arena_free_bytes(), 4 * GRAIN)

    def test_the_arena_is_whole_grains(self):
        self.start_arena(1 << 30, 3 * GRAIN - 1)
        self.assertEqual(self.lib.kforge_arena_free_bytes(), 2 * GRAIN)

    def test_what_does_not_fit_comes_from_the_device_and_is_counted(self):
        self.start_arena(1 << 30, 4 * GRAIN)
        self.assertEqual(self.alloc(5 * GRAIN), OUTSIDE)
        self.assertEqual(self.device_allocated, [5 * GRAIN])
        self.assertEqual(self.alloc(4 * GRAIN), 1 << 30)
        self.assertEqual(self.alloc(1), OUTSIDE + 5 * GRAIN)
        self.assertEqual(self.device_allocated, [5 * GRAIN, GRAIN])  # rounded too
        self.assertEqual(self.lib.kforge_arena_outside(), 2)
        self.free(OUTSIDE, 5 * GRAIN)
        self.assertEqual(self.device_freed, [OUTSIDE])
        self.assertEqual(self.lib.kforge_arena_free_bytes(), 0)

    def test_a_full_device_is_null_and_no_outside_segment(self):
        self.start_arena(1 << 30, 2 * GRAIN, device_full=True)
        self.assertIsNone(self.alloc(3 * GRAIN))
        self.assertEqual(self.lib.kforge_arena_outside(), 0)

    def test_pieces_given_back_merge_with_their_free_neighbours(self):
        base = 1 << 30
        self.start_arena(base, 6 * GRAIN)
        a, b, c = (self.alloc(2 * GRAIN) for _ in range(3))
        self.free(a, 2 * GRAIN)
        self.free(c, 2 * GRAIN)
        self.assertEqual(self.free_ranges(), ([base, base + 4 * GRAIN], [2 * GRAIN, 2 * GRAIN]))
        self.assertEqual(self.alloc(3 * GRAIN), OUTSIDE)  # two free pieces of 2, apart
        self.free(b, 2 * GRAIN)
        self.assertEqual(self.free_ranges(), ([base], [6 * GRAIN]))
        self.assertEqual(self.alloc(6 * GRAIN), base)

    def test_a_piece_freed_twice_is_not_handed_out_twice(self):
        base = 1 << 30
        self.start_arena(base, 4 * GRAIN)
        a = self.alloc(GRAIN)
        self.free(a, GRAIN)
        self.free(a, GRAIN)
        self.assertEqual(self.free_ranges(), ([base], [4 * GRAIN]))

    def test_threads_allocating_at_once_get_apart_pieces_and_give_all_back(self):
        self.start_arena(1 << 30, 4096 * GRAIN)
        threads, rounds, pieces = 8, 200, 8
        held = [[] for _ in range(threads)]
        barrier = threading.Barrier(threads, timeout=60)
        shared = []  # pieces two threads held at once; a worker's exception (seen here)

        def work(number):
            try:
                for round_ in range(rounds):
                    sizes = [(1 + (number + k + round_) % 3) * GRAIN for k in range(pieces)]
                    taken = [(self.alloc(size), size) for size in sizes]
                    held[number] = taken
                    barrier.wait()  # every thread holds its pieces now: checked by one
                    if number == 0:
                        everything = sorted(piece for one in held for piece in one)
                        shared.extend((piece, after) for piece, after in zip(everything, everything[1:])
                                      if piece[0] + piece[1] > after[0])
                    barrier.wait()
                    for address, size in taken:
                        self.free(address, size)
            except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
                shared.append(exc)
                barrier.abort()

        workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        self.assertEqual(shared, [])
        self.assertEqual(self.lib.kforge_arena_outside(), 0)
        self.assertEqual(self.free_ranges(), ([1 << 30], [4096 * GRAIN]))


class LoadTest(unittest.TestCase):
    def test_an_unloadable_library_is_unavailable_naming_it(self):
        saved = arena._allocator
        self.addCleanup(setattr, arena, "_allocator", saved)
        arena._allocator = None
        missing = "/nonexistent/libkforge_arena_allocator.so"
        with unittest.mock.patch.dict(os.environ, {arena.ALLOCATOR_VARIABLE: missing}):
            with self.assertRaises(arena.Unavailable) as raised:
                arena.load_allocator()
        self.assertIn(missing, str(raised.exception))
        arena._allocator = None
        with unittest.mock.patch.dict(os.environ, {arena.ALLOCATOR_VARIABLE: ""}):
            with self.assertRaises(arena.Unavailable) as raised:
                arena.load_allocator()
        self.assertIn(f"{arena.ALLOCATOR_VARIABLE} is not set", str(raised.exception))


class RingTest(unittest.TestCase):
    def setUp(self):
        self.bell = doorbell.Doorbell()
        self.addCleanup(self.bell.close)
        self.rope = doorbell.BellRope(os.dup(self.bell.fd))
        self.addCleanup(os.close, self.rope.fd)

    def test_a_ring_names_the_slot_or_the_offsets_and_the_last_counts(self):
        self.rope.ring()
        self.assertIsNone(self.bell.heard())
        self.rope.ring([0, 1 << 40, 12345])
        self.assertEqual(self.bell.heard(), [0, 1 << 40, 12345])
        self.rope.ring([7])
        self.rope.ring()
        self.assertIsNone(self.bell.heard())

    def test_silence_drops_the_rings_before_it(self):
        self.rope.ring([4096])
        self.bell.silence()
        self.assertIsNone(self.bell.heard())

    def test_bytes_that_are_no_ring_are_unheard(self):
        for written in (b"\x07", b"\x02\x01", b"\x02\x02\x00\x00\x00" + bytes(8),
                        b"\x02\xff\xff\x00\x00" + bytes(64)):
            os.write(self.rope.fd, written)
            with self.assertRaises(doorbell.Unheard, msg=written):
                self.bell.heard()

    def test_the_most_offsets_a_ring_carries_arrive_whole(self):
        offsets = list(range(doorbell.MAX_OFFSETS))
        self.rope.ring(offsets)
        self.assertEqual(self.bell.heard(), offsets)

    def test_more_offsets_are_a_table_in_the_arena(self):
        self.rope.ring(table=(600, 4096))
        heard = self.bell.heard()
        self.assertIsInstance(heard, doorbell.Table)
        self.assertEqual((heard.count, heard.offset), (600, 4096))

    def test_a_flood_of_rings_is_unheard(self):
        for _ in range(doorbell.MAX_RINGS_BYTES // 4096 + 1):
            os.write(self.rope.fd, bytes([doorbell.SLOT]) * 4096)
        with self.assertRaises(doorbell.Unheard):
            self.bell.heard()


class _FakeTorch:
    """What _route_graphs touches of torch, recording the routings under way in the order
    they began (the caching allocator's captures_underway)."""

    def __init__(self):
        self.underway, self.pools = [], []
        fake = self

        class MemPool:
            def __init__(self, allocator=None):
                fake.pools.append(self)
                self.id, self.allocator = (0, len(fake.pools)), allocator

        class CUDAGraph:
            def capture_begin(self, pool=None, capture_error_mode="global"):
                fake.underway.append(("capture", pool))

            def capture_end(self):
                fake.underway.remove(next(e for e in fake.underway if e[0] == "capture"))

        def begin(device, pool):
            self.underway.append(("thread", tuple(pool)))

        def end(device, pool):
            self.underway.remove(("thread", tuple(pool)))

        self._C = types.SimpleNamespace(_cuda_beginAllocateCurrentThreadToPool=begin,
                                        _cuda_endAllocateToPool=end)
        memory = types.SimpleNamespace(_cuda_beginAllocateCurrentThreadToPool=begin,
                                       _cuda_endAllocateToPool=end)
        self.cuda = types.SimpleNamespace(MemPool=MemPool, CUDAGraph=CUDAGraph, memory=memory,
                                          graphs=types.SimpleNamespace())
        self.empty = lambda *args, **kwargs: None


class RoutingTest(unittest.TestCase):
    """While a routing begun from Python lasts, it has the thread alone: which of several
    routings under way claims an allocation is torch's choice (torch.compile's graph trees
    found their tensors in the arena's pool)."""

    def setUp(self):
        from kforge_harness.handover.arena import Arena
        self.torch = fake = _FakeTorch()
        self.arena = arena = Arena.__new__(Arena)
        arena._aside_for = {}
        arena.pool = fake.cuda.MemPool("arena allocator")
        arena._routing = (fake._C._cuda_beginAllocateCurrentThreadToPool,
                          fake._C._cuda_endAllocateToPool, fake.empty, 0)
        fake._C._cuda_beginAllocateCurrentThreadToPool(0, arena.pool.id)
        arena._route_graphs(fake, "arena allocator")
        self.ours = ("thread", arena.pool.id)

    def test_a_routing_begun_from_python_has_the_thread_alone_until_it_ends(self):
        C, memory = self.torch._C, self.torch.cuda.memory
        C._cuda_beginAllocateCurrentThreadToPool(0, (9, 9))
        self.assertEqual(self.torch.underway, [("thread", (9, 9))])
        memory._cuda_beginAllocateCurrentThreadToPool(0, (8, 8))  # bound by name: routed too
        memory._cuda_endAllocateToPool(0, (8, 8))
        self.assertEqual(self.torch.underway, [("thread", (9, 9))])
        C._cuda_endAllocateToPool(0, (9, 9))
        self.assertEqual(self.torch.underway, [self.ours])

    def test_a_capture_has_the_thread_alone_in_a_pool_carved_from_the_arena(self):
        graph = self.torch.cuda.CUDAGraph()
        graph.capture_begin()
        (kind, pool), = self.torch.underway
        self.assertEqual(kind, "capture")
        self.assertNotEqual(pool, self.arena.pool.id)
        graph.capture_end()
        self.assertEqual(self.torch.underway, [self.ours])

    def test_graph_pool_handles_are_pools_over_the_arena(self):
        for module in (self.torch.cuda, self.torch.cuda.graphs):
            handle = module.graph_pool_handle()
            pool = next(p for p in self.torch.pools if p.id == handle)
            self.assertIsNot(pool, self.arena.pool)
            self.assertEqual(pool.allocator, "arena allocator")

    def test_another_threads_routing_leaves_the_arenas_alone(self):
        # Red team 22's helper thread in use_mem_pool: ending the arena's routing there
        # and beginning it again from the helper would have routed the helper, not the
        # main thread, into the arena.
        import threading
        memory = self.torch.cuda.memory

        def helper():
            memory._cuda_beginAllocateCurrentThreadToPool(0, (9, 9))
            memory._cuda_endAllocateToPool(0, (9, 9))

        thread = threading.Thread(target=helper)
        thread.start()
        thread.join()
        self.assertEqual(self.torch.underway, [self.ours])
        self.assertFalse(any(self.arena._aside_for.values()))

    def test_reclaim_waits_while_another_routing_lasts(self):
        self.torch._C._cuda_beginAllocateCurrentThreadToPool(0, (9, 9))
        self.arena.reclaim()
        self.assertEqual(self.torch.underway, [("thread", (9, 9))])


class MisreadTest(unittest.TestCase):
    """What the task host refuses to copy out of the arena (its process's word only)."""

    def session(self, arena_bytes):
        layout = handover.Layout.pack([("tensor", "float32", (4, 4), 64, None, False),
                                       ("value", "", (), 0, 3, False),
                                       ("tensor", "float32", (8,), 32, None, False)])
        slot = types.SimpleNamespace(nbytes=1024, kind=handover.DEVICE)
        return types.SimpleNamespace(output_layout=layout, inputs=[slot], arena=types.SimpleNamespace(
            nbytes=arena_bytes) if arena_bytes else None)

    def test_offsets_for_each_output_within_the_arena_or_a_slot_are_read(self):
        self.assertIsNone(Host._arena_misread(self.session(4096), [0, 4064]))
        self.assertIsNone(Host._arena_misread(self.session(4096), [REGION + 960, 8]))

    def test_offsets_beyond_the_arena_or_not_one_per_output_are_refused(self):
        session = self.session(4096)
        self.assertIn("beyond its arena", Host._arena_misread(session, [0, 4065]))
        self.assertIn("beyond its arena or slot", Host._arena_misread(session, [REGION + 961, 0]))
        self.assertIn("buffer 2, which it was never lent", Host._arena_misread(session, [2 * REGION, 0]))
        self.assertIn("1 offset(s) for 2 output(s)", Host._arena_misread(session, [0]))
        self.assertIn("never lent", Host._arena_misread(self.session(0), [0, 0]))


ALLOCATOR = """
import torch
from kforge_harness.handover.arena import Arena
from kforge_harness.handover.cuda import DeviceMapping
device = torch.device("cuda:0")
torch.zeros(1, device=device)
lent = DeviceMapping.allocate(256 << 20, device)
slot = DeviceMapping.allocate(4 << 20, device)
arena = Arena(DeviceMapping.open(__import__("os").dup(lent.fd), lent.nbytes, lent.size, device), [slot])
arena.install()
inside = [torch.full((1 << 20,), float(k), device=device) for k in range(4)]
assert arena.offsets(inside) is not None, "allocations of this thread lie in the arena"
beyond = torch.empty(300 << 20, dtype=torch.uint8, device=device)
assert arena.offsets([beyond]) is None and arena.outside == 1, "what does not fit lies outside"
REGION = 1 << 56
assert arena.offsets([slot.raw[1024:2048]]) == [REGION + 1024], "an output that is an input lies in its slot"
offset = arena.offsets([inside[3]])[0]
seen = lent.raw[offset:offset + 16].view(torch.float32)
assert seen.tolist() == [3.0] * 4, seen
# A graph's capture: what it frees stays the graph's, what it makes lies in the arena.
static_x = torch.ones(1 << 20, device=device)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    doubled = static_x * 2
    static_y = doubled + 1
del doubled
others = [torch.full((1 << 20,), 7.0, device=device) for _ in range(8)]
static_x.fill_(2.0)
graph.replay()
torch.cuda.synchronize()
assert arena.offsets([static_y]) is not None, "a graph's pool is carved from the arena"
assert static_y[0].item() == 5.0, static_y[0].item()
assert all(other.min().item() == 7.0 for other in others), "a replay wrote into others' memory"
after = torch.ones(4, device=device)
assert arena.offsets([after]) is not None, "this thread allocates from the arena after a capture"
# A routing begun from Python has this thread alone while it lasts.
own = torch.cuda.MemPool()
with torch.cuda.use_mem_pool(own):
    mine = torch.empty(4 << 20, dtype=torch.uint8, device=device)
assert arena.offsets([mine]) is None, "a pool the candidate made itself holds its allocations"
handle = torch.cuda.graph_pool_handle()  # torch.compile's graph trees make their pool so
torch._C._cuda_beginAllocateCurrentThreadToPool(device.index or 0, handle)
warmed = torch.empty(4 << 20, dtype=torch.uint8, device=device)
torch._C._cuda_endAllocateToPool(device.index or 0, handle)
pools = {s["address"]: s["segment_pool_id"] for s in torch.cuda.memory_snapshot()}
segment = max(a for a in pools if a <= warmed.data_ptr())
assert tuple(pools[segment]) == tuple(handle), (pools[segment], handle)
assert arena.offsets([warmed]) is not None, "a graph_pool_handle() pool is carved from the arena"
again = torch.ones(4, device=device)
assert arena.offsets([again]) is not None, "the arena's routing is back once the other ended"
del mine, own  # a pool freed before its tensors aborts the process at exit
print("arena ok")
"""


@unittest.skipUnless(HAS_CUDA, "SKIP: needs a CUDA device (the arena is device memory)")
@unittest.skipUnless(ALLOCATOR_LIBRARY, NO_ALLOCATOR)
class AllocatorTest(unittest.TestCase):
    def test_this_threads_allocations_lie_in_the_arena_and_the_rest_outside(self):
        # In a process of its own: the arena takes over its allocator for good.
        done = subprocess.run([sys.executable, "-c", ALLOCATOR], capture_output=True, text=True,
                              timeout=300, cwd=os.path.dirname(os.path.dirname(__file__)),
                              env={**os.environ, arena.ALLOCATOR_VARIABLE: ALLOCATOR_LIBRARY})
        self.assertEqual(done.returncode, 0, done.stderr[-3000:])
        self.assertIn("arena ok", done.stdout)


def _run(server, name, candidate, line=None, replacement=None, task="relu"):
    sizes = {"sizes": {"batch_size": 4096, "dim": 4096}} if task == "relu" else {}
    request = client.request(name, "run", task, candidate, language="python",
                             options={"trials": 2, "timing": {"enabled": True}},
                             limits={"timeout_s": 300}, **sizes)
    if line is not None:
        request["candidate"]["code"] = request["candidate"]["code"].replace(line, replacement)
    response = server.ask(request, timeout=900)[name]
    show(name, task, response)
    return response


@unittest.skipUnless(HAS_CUDA, "SKIP: needs a CUDA device (the arena is device memory)")
@unittest.skipUnless(ALLOCATOR_LIBRARY, NO_ALLOCATOR)
class HandOverTest(client.SharedServerTest):
    """relu of 64 MB on cuda:0, through the server."""
    MAX_CHILDREN = 1

    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(mode="fork", max_children=cls.MAX_CHILDREN, device="cuda:0",
                                   extra_env={arena.ALLOCATOR_VARIABLE: ALLOCATOR_LIBRARY})

    def test_the_reference_as_its_own_candidate_is_read_out_of_its_arena(self):
        response = _run(self.server, "reference", None)
        self.assertEqual(response["status"], "pass", response.get("message"))
        self.assertNotIn("outputs_copied_in_child", response.get("flags", []))
        self.assertAlmostEqual(response["metrics"]["speedup"], 1.0, delta=0.1)

    def test_an_output_that_is_an_input_is_read_out_of_its_slot(self):
        response = _run(self.server, "identity", None, task="arena/identity")
        self.assertEqual(response["status"], "pass", response.get("message"))
        self.assertNotIn("outputs_copied_in_child", response.get("flags", []))

    def test_an_output_outside_the_arena_is_copied_and_flagged(self):
        response = _run(self.server, "other-thread", "arena/other_thread")
        self.assertEqual(response["status"], "pass", response.get("message"))
        self.assertIn("outputs_copied_in_child", response.get("flags", []))

    def test_a_cuda_graph_allocating_in_its_capture_is_read_out_of_the_arena(self):
        response = _run(self.server, "graph-captured", "arena/graph_captured")
        self.assertEqual(response["status"], "pass", response.get("message"))
        self.assertNotIn("outputs_copied_in_child", response.get("flags", []))

    def test_offsets_beyond_the_arena_are_refused(self):
        response = _run(self.server, "forged-far", "arena/ring_forged")
        self.assertEqual((response["status"], response["error_class"]), ("fail", "cheat_detected"),
                         response.get("message"))
        self.assertIn("beyond its arena", response["message"])

    def test_offsets_where_its_outputs_do_not_lie_are_judged_as_its_outputs(self):
        response = _run(self.server, "forged-shifted", "arena/ring_forged",
                        "SHIFT = None", "SHIFT = 4096")
        self.assertEqual((response["status"], response["error_class"]), ("fail", "cheat_detected"),
                         response.get("message"))


if __name__ == "__main__":
    unittest.main()
