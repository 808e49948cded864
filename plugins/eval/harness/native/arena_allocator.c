/* The allocator torch's caching allocator calls for a candidate child's segments on CUDA
 * (kforge_harness/handover/arena.py): first fit over the free ranges of an arena of device
 * memory the task host lent, in whole grains, and the driver's own allocator for what does
 * not fit.
 *
 * Why C: torch calls its custom allocator while it holds its own mutex. An allocator in
 * Python (a ctypes callback) then needs the GIL, and a candidate thread that holds the GIL
 * and frees a tensor waits for that mutex: a deadlock of an honest multi-threaded
 * candidate (red team 21). This code never enters Python, never aborts and never calls
 * malloc after kforge_arena_init: a failure is a NULL that torch reports as out of memory.
 *
 * It only keeps books: it never touches the arena's memory, so its tests run on the CPU
 * over made-up addresses (tests/test_arena.py). One arena per process (a child has one);
 * kforge_arena_init starts the books afresh. */

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KFORGE_EXPORT __attribute__((visibility("default")))

/* libcuda's cuMemAlloc_v2 and cuMemFree_v2 (CUdeviceptr is an unsigned long long; 0 is
 * CUDA_SUCCESS), passed in so that this library needs no CUDA to build or to test. */
typedef int (*kforge_device_alloc_fn)(unsigned long long* address, size_t nbytes);
typedef int (*kforge_device_free_fn)(unsigned long long address);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t arena_start;
static uintptr_t arena_end;
static size_t grain = 1;
static kforge_device_alloc_fn device_alloc;
static kforge_device_free_fn device_free;
/* The free ranges, sorted by start, never touching (neighbours are merged). Free ranges
 * are separated by taken ones, so there are at most half the grains plus one: the arrays
 * are that long, made at init, and never grow while torch holds its lock. */
static uintptr_t* free_starts;
static size_t* free_sizes;
static size_t free_count;
static size_t free_capacity;
static unsigned long long outside_count;

/* `nbytes` rounded up to whole grains (at least one); 0 where that overflows. */
static size_t rounded(size_t nbytes) {
  if (nbytes == 0) return grain;
  if (nbytes > SIZE_MAX - (grain - 1)) return 0;
  return (nbytes + grain - 1) / grain * grain;
}

static void remove_range(size_t index) {
  memmove(free_starts + index, free_starts + index + 1, (free_count - index - 1) * sizeof *free_starts);
  memmove(free_sizes + index, free_sizes + index + 1, (free_count - index - 1) * sizeof *free_sizes);
  free_count--;
}

/* The start of the first free range of `nbytes` (whole grains), taken; 0 where none fits. */
static uintptr_t take(size_t nbytes) {
  for (size_t index = 0; index < free_count; index++) {
    if (free_sizes[index] < nbytes) continue;
    const uintptr_t start = free_starts[index];
    if (free_sizes[index] == nbytes) {
      remove_range(index);
    } else {
      free_starts[index] += nbytes;
      free_sizes[index] -= nbytes;
    }
    return start;
  }
  return 0;
}

/* [start, start + nbytes) free again, merged with its free neighbours. A piece that is
 * not wholly in the arena or overlaps a free range (freed twice) is ignored: the books
 * stay right, and the memory is not handed out twice. */
static void give(uintptr_t start, size_t nbytes) {
  if (nbytes > arena_end - start) return;
  size_t index = 0;
  while (index < free_count && free_starts[index] < start) index++;
  const int overlaps_before = index > 0 && free_starts[index - 1] + free_sizes[index - 1] > start;
  const int overlaps_after = index < free_count && start + nbytes > free_starts[index];
  if (overlaps_before || overlaps_after) return;
  const int joins_before = index > 0 && free_starts[index - 1] + free_sizes[index - 1] == start;
  const int joins_after = index < free_count && start + nbytes == free_starts[index];
  if (joins_before && joins_after) {
    free_sizes[index - 1] += nbytes + free_sizes[index];
    remove_range(index);
  } else if (joins_before) {
    free_sizes[index - 1] += nbytes;
  } else if (joins_after) {
    free_starts[index] = start;
    free_sizes[index] += nbytes;
  } else {
    if (free_count == free_capacity) return; /* cannot happen: see free_capacity */
    memmove(free_starts + index + 1, free_starts + index, (free_count - index) * sizeof *free_starts);
    memmove(free_sizes + index + 1, free_sizes + index, (free_count - index) * sizeof *free_sizes);
    free_starts[index] = start;
    free_sizes[index] = nbytes;
    free_count++;
  }
}

/* Starts the books of the arena [start, start + size) (size rounded down to whole grains
 * of `grain_bytes`), all of it free, with the device allocator for what does not fit.
 * Returns 0, or -1 where the arguments make no arena (start 0, a grain of 0, no device
 * allocator) or the books' memory could not be had; then every allocation fails. */
KFORGE_EXPORT int kforge_arena_init(uintptr_t start, size_t size, size_t grain_bytes,
                                    kforge_device_alloc_fn alloc_fn, kforge_device_free_fn free_fn) {
  pthread_mutex_lock(&lock);
  free(free_starts);
  free(free_sizes);
  free_starts = NULL;
  free_sizes = NULL;
  free_count = free_capacity = 0;
  outside_count = 0;
  arena_start = arena_end = 0;
  device_alloc = NULL;
  device_free = NULL;
  int result = -1;
  if (start != 0 && grain_bytes != 0 && alloc_fn != NULL && free_fn != NULL && size <= UINTPTR_MAX - start) {
    grain = grain_bytes;
    const size_t grains = size / grain;
    free_capacity = grains / 2 + 1;
    free_starts = malloc(free_capacity * sizeof *free_starts);
    free_sizes = malloc(free_capacity * sizeof *free_sizes);
    if (free_starts != NULL && free_sizes != NULL) {
      arena_start = start;
      arena_end = start + grains * grain;
      device_alloc = alloc_fn;
      device_free = free_fn;
      if (grains > 0) {
        free_starts[0] = start;
        free_sizes[0] = grains * grain;
        free_count = 1;
      }
      result = 0;
    } else {
      free(free_starts);
      free(free_sizes);
      free_starts = NULL;
      free_sizes = NULL;
      free_capacity = 0;
    }
  }
  pthread_mutex_unlock(&lock);
  return result;
}

/* torch's custom allocator's malloc: a piece of the arena, or else the device's own memory
 * (counted in kforge_arena_outside), or NULL where neither has `size` bytes. */
KFORGE_EXPORT void* kforge_arena_alloc(size_t size, int device, void* stream) {
  (void)device;
  (void)stream;
  pthread_mutex_lock(&lock);
  const size_t nbytes = rounded(size);
  const uintptr_t taken = nbytes != 0 ? take(nbytes) : 0;
  const kforge_device_alloc_fn fallback = device_alloc;
  pthread_mutex_unlock(&lock);
  if (taken != 0) return (void*)taken;
  if (nbytes == 0 || fallback == NULL) return NULL;
  /* Outside the lock: the driver's allocation may take long, and needs none of the books. */
  unsigned long long address = 0;
  if (fallback(&address, nbytes) != 0 || address == 0) return NULL;
  pthread_mutex_lock(&lock);
  outside_count++;
  pthread_mutex_unlock(&lock);
  return (void*)(uintptr_t)address;
}

/* torch's custom allocator's free: a piece of the arena goes back to the books, anything
 * else back to the device. */
KFORGE_EXPORT void kforge_arena_free(void* ptr, size_t size, int device, void* stream) {
  (void)device;
  (void)stream;
  if (ptr == NULL) return;
  const uintptr_t address = (uintptr_t)ptr;
  pthread_mutex_lock(&lock);
  const int inside = address >= arena_start && address < arena_end;
  if (inside) give(address, rounded(size));
  const kforge_device_free_fn fallback = device_free;
  pthread_mutex_unlock(&lock);
  if (!inside && fallback != NULL) fallback((unsigned long long)address);
}

/* The bytes of the arena not handed out. */
KFORGE_EXPORT size_t kforge_arena_free_bytes(void) {
  pthread_mutex_lock(&lock);
  size_t total = 0;
  for (size_t index = 0; index < free_count; index++) total += free_sizes[index];
  pthread_mutex_unlock(&lock);
  return total;
}

/* The free ranges, at most `capacity` of them, into `starts` and `sizes` (for tests: the
 * merging is seen whole); returns how many there are. */
KFORGE_EXPORT size_t kforge_arena_free_ranges(uintptr_t* starts, size_t* sizes, size_t capacity) {
  pthread_mutex_lock(&lock);
  const size_t count = free_count;
  for (size_t index = 0; index < count && index < capacity; index++) {
    starts[index] = free_starts[index];
    sizes[index] = free_sizes[index];
  }
  pthread_mutex_unlock(&lock);
  return count;
}

/* How many allocations did not fit the arena and came from the device's own allocator. */
KFORGE_EXPORT unsigned long long kforge_arena_outside(void) {
  pthread_mutex_lock(&lock);
  const unsigned long long count = outside_count;
  pthread_mutex_unlock(&lock);
  return count;
}
