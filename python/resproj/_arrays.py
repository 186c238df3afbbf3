"""Array libraries (NumPy, CuPy, PyTorch, other DLPack producers): which one an
array belongs to, where it lives, allocation like it, and CUDA streams."""

from __future__ import annotations

import sys

import numpy as np

NUMPY, CUPY, TORCH, OTHER = 0, 1, 2, 3
_kinds: dict = {}


def kind_of(x, name):
    """The library of array `x`; TypeError naming `name` for a non-array."""
    t = type(x)
    k = _kinds.get(t)
    if k is not None:
        return k
    top = (getattr(t, "__module__", "") or "").split(".")[0]
    if isinstance(x, np.ndarray):
        k = NUMPY
    elif top == "cupy" and hasattr(t, "__dlpack__"):
        k = CUPY
    elif top == "torch" and hasattr(t, "__dlpack__"):
        k = TORCH
    elif hasattr(t, "__dlpack__"):
        k = OTHER
    else:
        raise TypeError(
            f"{name}: expected an array (NumPy, CuPy, PyTorch or any DLPack array), "
            f"got {t.__module__}.{t.__qualname__}"
        )
    _kinds[t] = k
    return k


def is_cuda(x, k):
    """True for arrays in CUDA device memory."""
    if k == NUMPY:
        return False
    if k == CUPY:
        return True
    if k == TORCH:
        return x.is_cuda
    return x.__dlpack_device__()[0] in (2, 13)  # kDLCUDA, kDLCUDAManaged


def device_of(x, k):
    """CUDA device index of a CUDA array."""
    if k == CUPY:
        return x.device.id
    if k == TORCH:
        return x.device.index
    return int(x.__dlpack_device__()[1])


_torch_dtypes: dict = {}


def _torch_dtype_table():
    torch = sys.modules["torch"]
    # DLPack type codes: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool.
    for name, code, bits in (
        ("float32", 2, 32), ("float64", 2, 64), ("float16", 2, 16),
        ("bfloat16", 4, 16), ("int8", 0, 8), ("int16", 0, 16), ("int32", 0, 32),
        ("int64", 0, 64), ("uint8", 1, 8), ("bool", 6, 8),
    ):
        dtype = getattr(torch, name, None)
        if dtype is not None:
            _torch_dtypes[dtype] = (code, bits)


def _torch_tensor(x):
    """A PyTorch tensor as the binding's plain description `(data_ptr, shape,
    strides, dtype code, dtype bits, DLPack device type, device index)`: the
    same memory, about a fifth of the cost of a DLPack export (which runs
    Python code in PyTorch for every array). The caller keeps `x` alive for
    the call. Negated or conjugated views go through DLPack as resolved
    copies (their memory does not hold the values they show; outputs of that
    kind are refused by `check_writable`), and so do tensors this cannot
    describe (other devices and dtypes), whose DLPack errors then apply."""
    if not _torch_dtypes:
        _torch_dtype_table()
    if x.is_neg() or x.is_conj():
        # The copy must live through the call: DLPack hands it over.
        return x.detach().resolve_neg().resolve_conj()
    d = _torch_dtypes.get(x.dtype)
    if d is not None:
        if x.is_cuda:
            return (x.data_ptr(), x.shape, x.stride(), d[0], d[1], 2, x.get_device())
        if x.is_cpu:
            return (x.data_ptr(), x.shape, x.stride(), d[0], d[1], 1, 0)
    return x.detach() if x.requires_grad else x


def export(x, k):
    """`x` as the binding takes it, the same memory: PyTorch tensors as a plain
    description (`_torch_tensor`); CuPy arrays as a DLPack capsule exported
    without stream synchronisation (by default CuPy would order its current
    stream before the legacy stream with an event per array; resproj runs on
    the current stream anyway)."""
    if k == CUPY:
        return x.__dlpack__(stream=-1)
    if k == TORCH:
        return _torch_tensor(x)
    return x


def export_any(x, name):
    """`export` for optional arrays of a call (None stays None)."""
    if x is None:
        return None
    k = _kinds.get(type(x))
    return export(x, kind_of(x, name) if k is None else k)


def empty(like, k, shape, name, zero=False):
    """A new C-contiguous array of `shape` in the library, device and dtype of
    `like` (zero-filled if `zero`)."""
    if k == NUMPY:
        return (np.zeros if zero else np.empty)(shape, like.dtype)
    if k == CUPY:
        cp = sys.modules["cupy"]
        with like.device:
            return (cp.zeros if zero else cp.empty)(shape, like.dtype)
    if k == TORCH:
        torch = sys.modules["torch"]
        return (torch.zeros if zero else torch.empty)(
            shape, dtype=like.dtype, device=like.device
        )
    raise TypeError(
        f"{name}: required for arrays of {type(like).__module__} (resproj allocates "
        "NumPy, CuPy and PyTorch arrays only)"
    )


def current_stream(x, k, device):
    """Handle of the current CUDA stream of `x`'s library on `device` (0, the
    legacy default stream, for libraries without one)."""
    if k == CUPY:
        cp = sys.modules["cupy"]
        try:
            return cp.cuda.get_current_stream(device).ptr
        except TypeError:
            with x.device:
                return cp.cuda.get_current_stream().ptr
    if k == TORCH:
        torch = sys.modules["torch"]
        # The raw handle without making a Stream object (what Triton reads).
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return raw(device)
        return torch.cuda.current_stream(x.device).cuda_stream
    return 0


def stream_handle(stream):
    """The `cudaStream_t` value of `stream`: an int, a CuPy stream (`.ptr`), a
    PyTorch stream (`.cuda_stream`) or an object with `__cuda_stream__`."""
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr"):
        h = getattr(stream, attr, None)
        if isinstance(h, int):
            return h
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        return int(protocol()[1])
    raise TypeError(
        "stream: expected an int handle, a CuPy or PyTorch stream, or an object with "
        f"__cuda_stream__ (got {type(stream).__qualname__})"
    )


def check_writable(x, k, name):
    """ValueError naming `name` for a read-only NumPy array or a PyTorch view
    whose memory does not hold the values it shows (negated, conjugated)."""
    if k == NUMPY and not x.flags.writeable:
        raise ValueError(f"{name}: read-only array")
    if k == TORCH and (x.is_neg() or x.is_conj()):
        raise ValueError(
            f"{name}: a negated or conjugated view cannot be written in place "
            "(pass a tensor that owns its values)"
        )


def asarray_like(a, like, dtype=None):
    """NumPy array `a` in the library and on the device of `like` (NumPy when
    `like` is None), C-contiguous, as `dtype` (a NumPy dtype; default: `a`'s)."""
    dtype = np.dtype(dtype if dtype is not None else a.dtype)
    if like is None:
        return np.ascontiguousarray(a, dtype)
    k = kind_of(like, "like")
    if k == NUMPY:
        return np.ascontiguousarray(a, dtype)
    if k == CUPY:
        cp = sys.modules["cupy"]
        with like.device:
            return cp.ascontiguousarray(cp.asarray(a, dtype))
    if k == TORCH:
        torch = sys.modules["torch"]
        t = torch.from_numpy(np.ascontiguousarray(a, dtype))
        return t.to(like.device).contiguous()
    raise TypeError("like: expected a NumPy, CuPy or PyTorch array")


def float_dtype_of(like):
    """The floating NumPy dtype of `like` (float32 when it has none)."""
    if like is None:
        return np.dtype(np.float32)
    name = str(like.dtype).split(".")[-1]
    return np.dtype(name) if name in ("float32", "float64") else np.dtype(np.float32)


def cuda_library(like):
    """The module of a CUDA array library: `like` 'cupy' or 'torch', or None
    (CuPy when installed, else PyTorch)."""
    import importlib
    import importlib.util

    if like is None:
        like = "cupy" if importlib.util.find_spec("cupy") is not None else "torch"
    if like not in ("cupy", "torch"):
        raise ValueError(f"like: expected 'cupy' or 'torch', got {like!r}")
    try:
        return importlib.import_module(like)
    except ImportError:
        raise ValueError(f"like: {like!r} is not installed") from None


class _Export:
    """A DLPack export of the binding's device memory, for `from_dlpack`."""

    __slots__ = ("_x", "_device")

    def __init__(self, x, device):
        self._x = x
        self._device = device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self._x.__dlpack__() if hasattr(self._x, "__dlpack__") else self._x

    def __dlpack_device__(self):
        return (2, self._device)  # kDLCUDA


def from_binding(x, device, lib):
    """The binding's DLPack export `x` (CUDA memory of `device`, nothing
    pending on it) as an array of `lib` (CuPy or PyTorch), no copy."""
    return lib.from_dlpack(_Export(x, device))


def library_stream(lib, device):
    """Handle of the current stream of `lib` (CuPy or PyTorch) on `device`."""
    if lib.__name__ == "cupy":
        with lib.cuda.Device(device):
            return lib.cuda.get_current_stream().ptr
    raw = getattr(lib._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device)
    return lib.cuda.current_stream(device).cuda_stream


def empty_cuda(lib, shape, dtype, device):
    """A new C-contiguous array of `lib` on CUDA `device` (`dtype` a NumPy
    dtype name)."""
    if lib.__name__ == "cupy":
        with lib.cuda.Device(device):
            return lib.empty(shape, dtype)
    return lib.empty(shape, dtype=getattr(lib, dtype), device=f"cuda:{device}")
