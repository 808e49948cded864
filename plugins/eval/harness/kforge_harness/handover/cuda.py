"""Device buffers on CUDA through the driver's virtual memory API: memory made with
cuMemCreate, exportable as a POSIX file descriptor (the handle type that crosses PID and
IPC namespaces: CUDA's legacy IPC handles do not, and the candidate's sandbox has both),
mapped into each process that holds the descriptor. The owner (the task host) creates
and exports it; the child imports the descriptor it was sent. Both see the same device
memory: nothing crosses through the host.

Only ctypes and the driver library: the harness compiles nothing, and torch's own IPC
(legacy handles, or expandable segments shared through pidfd_getfd, which the sandbox's
seccomp filter denies) cannot cross the sandbox."""

import ctypes
import os

import torch

_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
_POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_LOCATION_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_READ_WRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
_GRANULARITY_MINIMUM = 0


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", _Location), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class DriverError(OSError):
    """A CUDA driver call failed (the message names it and the driver's words)."""


_driver = None


def _lib():
    global _driver
    if _driver is None:
        lib = ctypes.CDLL("libcuda.so.1")
        u64, size, ptr = ctypes.c_ulonglong, ctypes.c_size_t, ctypes.c_void_p
        signatures = {
            "cuMemGetAllocationGranularity": [ctypes.POINTER(size), ctypes.POINTER(_Prop), ctypes.c_int],
            "cuMemCreate": [ctypes.POINTER(u64), size, ctypes.POINTER(_Prop), u64],
            "cuMemExportToShareableHandle": [ptr, u64, ctypes.c_int, u64],
            "cuMemImportFromShareableHandle": [ctypes.POINTER(u64), ptr, ctypes.c_int],
            "cuMemAddressReserve": [ctypes.POINTER(u64), size, size, u64, u64],
            "cuMemMap": [u64, size, size, u64, u64],
            "cuMemSetAccess": [u64, size, ctypes.POINTER(_AccessDesc), size],
            "cuMemUnmap": [u64, size],
            "cuMemAddressFree": [u64, size],
            "cuMemRelease": [u64],
            "cuGetErrorString": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
            "cuMemAlloc_v2": [ctypes.POINTER(u64), size],
            "cuMemFree_v2": [u64],
        }
        for name, argtypes in signatures.items():
            function = getattr(lib, name)
            function.argtypes = argtypes
            function.restype = ctypes.c_int
        _driver = lib
    return _driver


def _check(name, result):
    if result != 0:
        text = ctypes.c_char_p()
        _lib().cuGetErrorString(result, ctypes.byref(text))
        words = text.value.decode(errors="replace") if text.value else "unknown error"
        raise DriverError(f"{name} failed: CUDA error {result} ({words})")


def _prop(ordinal):
    prop = _Prop()
    prop.type = _PINNED
    prop.requestedHandleTypes = _POSIX_FD
    prop.location = _Location(_LOCATION_DEVICE, ordinal)
    return prop


def _rounded(nbytes, ordinal):
    granularity = ctypes.c_size_t()
    prop = _prop(ordinal)
    _check("cuMemGetAllocationGranularity",
           _lib().cuMemGetAllocationGranularity(ctypes.byref(granularity), ctypes.byref(prop),
                                                _GRANULARITY_MINIMUM))
    step = granularity.value
    return max(step, (nbytes + step - 1) // step * step)


def device_allocator():
    """The addresses of cuMemAlloc_v2 and cuMemFree_v2: what arena.py's C allocator calls
    for segments that do not fit the arena (plain device memory of the current context)."""
    lib = _lib()
    return (ctypes.cast(lib.cuMemAlloc_v2, ctypes.c_void_p).value,
            ctypes.cast(lib.cuMemFree_v2, ctypes.c_void_p).value)


class _ArrayInterface:
    """What torch.as_tensor needs to view device memory it did not allocate."""

    def __init__(self, pointer, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                         "data": (pointer, False), "version": 2,
                                         "strides": None}


class DeviceMapping:
    """`nbytes` of device memory mapped into this process: `raw` is a uint8 tensor over
    it on `device` (a torch.device)."""

    kind = "device"

    def __init__(self, handle, size, nbytes, device, fd, owner):
        lib = _lib()
        self.size = size
        self.nbytes = nbytes
        self.fd = fd
        self.owner = owner
        address = ctypes.c_ulonglong()
        _check("cuMemAddressReserve", lib.cuMemAddressReserve(ctypes.byref(address), size, 0, 0, 0))
        self.address = address.value
        try:
            _check("cuMemMap", lib.cuMemMap(self.address, size, 0, handle, 0))
            access = _AccessDesc(_Location(_LOCATION_DEVICE, device.index), _READ_WRITE)
            _check("cuMemSetAccess", lib.cuMemSetAccess(self.address, size, ctypes.byref(access), 1))
        except DriverError:
            lib.cuMemUnmap(self.address, size)
            lib.cuMemAddressFree(self.address, size)
            raise
        # The mapping keeps the memory alive: the handle is not needed any more.
        lib.cuMemRelease(handle)
        self.raw = torch.as_tensor(_ArrayInterface(self.address, nbytes), device=device)

    @staticmethod
    def allocate(nbytes, device):
        """Device memory of at least `nbytes` on `device`, exported: `fd` is what the
        child is sent."""
        lib = _lib()
        size = _rounded(nbytes, device.index)
        handle = ctypes.c_ulonglong()
        prop = _prop(device.index)
        _check("cuMemCreate", lib.cuMemCreate(ctypes.byref(handle), size, ctypes.byref(prop), 0))
        fd = ctypes.c_int(-1)
        try:
            _check("cuMemExportToShareableHandle",
                   lib.cuMemExportToShareableHandle(ctypes.byref(fd), handle.value, _POSIX_FD, 0))
            return DeviceMapping(handle.value, size, nbytes, device, fd.value, owner=True)
        except BaseException:
            lib.cuMemRelease(handle.value)
            if fd.value >= 0:
                os.close(fd.value)
            raise

    @staticmethod
    def open(fd, nbytes, size, device):
        """The child's side: imports and maps a received descriptor (closed here) of an
        allocation of `size` bytes, `nbytes` of which are used."""
        lib = _lib()
        if size < nbytes or size != _rounded(size, device.index):
            os.close(fd)
            raise DriverError(f"a device buffer of {size} bytes for {nbytes}")
        handle = ctypes.c_ulonglong()
        try:
            _check("cuMemImportFromShareableHandle",
                   lib.cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd),
                                                      _POSIX_FD))
        finally:
            os.close(fd)
        return DeviceMapping(handle.value, size, nbytes, device, None, owner=False)

    def close(self):
        """Unmaps (the memory is freed when no process maps it and no descriptor is
        open); the views made from `raw` must be gone."""
        if self.raw is None:
            return
        torch.cuda.synchronize(self.raw.device)
        self.raw = None
        lib = _lib()
        lib.cuMemUnmap(self.address, self.size)
        lib.cuMemAddressFree(self.address, self.size)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
