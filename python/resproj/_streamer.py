"""The host-LOR streamer: LORs and projection values in host memory, the
image resident on a GPU."""

from __future__ import annotations

import numpy as np

from . import _arrays as _a
from . import _resproj
from ._core import DetectorPairs, Lors, _check_call, _lor_args, _op_args

__all__ = ["LorStreamer"]

_x = _a.export_any


class LorStreamer:
    """Projects LORs held in host memory against an image resident on a GPU,
    streaming them in chunks of `max_chunk` LORs through pinned and device
    staging (`slots` chunks in flight, the copies of one overlapping the
    kernels of another). For LORs too many to keep on the device, or produced
    on the host.

    LORs: `resproj.Lors` with host (NumPy) end points, or
    `resproj.DetectorPairs` with the detector table on the streamer's device
    (CuPy, PyTorch) and host int32 pairs (checked on every call). Per-LOR
    arrays of the operation (TOF bins, sigmas, centre offsets) and the
    projection values are host arrays; everything in `dtype`.

    Staging is allocated on CUDA device `device`. Calls are host-blocking:
    they return when the results are in the host arrays (forward) or the
    image (back), ordered after the work queued before on `stream` (default:
    the current stream of the image's library). One call at a time.
    """

    def __init__(
        self, max_chunk, dtype=np.float32, slots=3, *, device=0, copy_threads=-1
    ):
        if not _resproj.has_gpu_backend:
            raise RuntimeError(
                "LorStreamer: this resproj was built without the GPU backend"
            )
        for name, v in (
            ("max_chunk", max_chunk),
            ("slots", slots),
            ("device", device),
            ("copy_threads", copy_threads),
        ):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(
                    f"{name}: expected an integer, got {type(v).__qualname__}"
                )
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise TypeError(
                f"dtype: expected float32 or float64, got {dtype!r}"
            ) from None
        if dt not in (np.float32, np.float64):
            raise TypeError(f"dtype: {dt}, expected float32 or float64")
        if max_chunk <= 0:
            raise ValueError(f"max_chunk: must be > 0 (got {max_chunk})")
        if slots < 2:
            raise ValueError(f"slots: must be >= 2 (got {slots})")
        n = _resproj.cuda_device_count()
        if not 0 <= device < n:
            raise ValueError(f"device: {device}, but {n} CUDA device(s) are usable")
        self.dtype = dt
        self._impl = _resproj.LorStreamer(
            int(max_chunk), dt == np.float64, int(slots), int(copy_threads), int(device)
        )

    @property
    def device(self) -> int:
        return self._impl.device

    @property
    def max_chunk(self) -> int:
        return self._impl.max_chunk

    def forward(self, op, geometry, image, lors, out=None, *, stream=None):
        """Forward projection of the CUDA `image` along host `lors` into the
        host array `out` (overwritten; allocated as NumPy when None; shape as
        `resproj.forward`). Returns `out`."""
        _check(op, geometry, lors)
        k = _a.kind_of(image, "image")
        if out is None:
            out = np.empty(op.values_shape(lors.shape), self.dtype)
        else:
            _a.check_writable(out, _a.kind_of(out, "out"), "out")
        self._impl.forward(
            geometry,
            _a.export(image, k),
            *_op_args(op),
            *_lor_args(lors),
            _a.export(out, _a.kind_of(out, "out")),
            _stream(image, k, stream),
        )
        return out

    def back(self, op, geometry, values, lors, out, *, stream=None, overwrite=False):
        """Back projection of host `values` along host `lors`, added into the
        CUDA image `out` (zeroed first with `overwrite=True`). Returns `out`."""
        _check(op, geometry, lors)
        k = _a.kind_of(out, "out")
        self._impl.back(
            geometry,
            _x(values, "values"),
            *_op_args(op),
            *_lor_args(lors),
            _a.export(out, k),
            _stream(out, k, stream),
            bool(overwrite),
        )
        return out

    def __repr__(self):
        return (
            f"LorStreamer(max_chunk={self.max_chunk}, dtype={self.dtype.name}, "
            f"device={self.device})"
        )


def _check(op, geometry, lors):
    _check_call(op, geometry, lors)
    if type(lors) not in (Lors, DetectorPairs):
        raise TypeError(
            "lors: LorStreamer takes resproj.Lors or resproj.DetectorPairs, got "
            f"{type(lors).__qualname__}"
        )


def _stream(image, k, stream):
    if stream is not None:
        return _a.stream_handle(stream)
    if k != _a.NUMPY and _a.is_cuda(image, k):
        return _a.current_stream(image, k, _a.device_of(image, k))
    return 0
