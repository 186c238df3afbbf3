"""Operations, LOR sources and the projection functions."""

from __future__ import annotations

from . import _arrays as _a
from . import _resproj
from ._resproj import ImageGeometry, TofParams

__all__ = [
    "NonTof",
    "TofSinogram",
    "TofListmode",
    "Lors",
    "DetectorPairs",
    "forward",
    "back",
]


# ---------------------------------------------------------------- operations --


class NonTof:
    """Non-TOF projection: one value per LOR, the line integral."""

    __slots__ = ()
    _kind = 0
    tof = None
    bins = None
    sigmas = None
    center_offsets = None

    def values_shape(self, lors_shape):
        """Shape of the projection of LORs of shape `lors_shape`."""
        return tuple(lors_shape)

    def __repr__(self):
        return "NonTof()"


def _check_tof(tof):
    if not isinstance(tof, TofParams):
        raise TypeError(f"tof: expected resproj.TofParams, got {type(tof).__qualname__}")
    return tof


class TofSinogram:
    """TOF sinogram projection: `tof.num_bins` values per LOR (last axis, bin 0
    nearest the LOR's start point). Optional per-LOR `sigmas` and
    `center_offsets` (arrays shaped like the LORs) replace `tof.sigma` and
    `tof.center_offset`."""

    __slots__ = ("tof", "sigmas", "center_offsets")
    _kind = 1
    bins = None

    def __init__(self, tof, sigmas=None, center_offsets=None):
        self.tof = _check_tof(tof)
        self.sigmas = sigmas
        self.center_offsets = center_offsets

    def values_shape(self, lors_shape):
        return tuple(lors_shape) + (self.tof.num_bins,)

    def __repr__(self):
        return f"TofSinogram({self.tof!r})"


class TofListmode:
    """TOF list-mode projection: one value per event, the TOF sinogram value of
    its LOR at its bin `bins[i]` (int16, shaped like the LORs; 0 outside
    [0, num_bins)). Optional per-event `sigmas` and `center_offsets`."""

    __slots__ = ("tof", "bins", "sigmas", "center_offsets")
    _kind = 2

    def __init__(self, tof, bins, sigmas=None, center_offsets=None):
        self.tof = _check_tof(tof)
        _a.kind_of(bins, "bins")
        self.bins = bins
        self.sigmas = sigmas
        self.center_offsets = center_offsets

    def values_shape(self, lors_shape):
        return tuple(lors_shape)

    def __repr__(self):
        return f"TofListmode({self.tof!r}, bins=<{len(self.bins)} events>)"


_OPERATIONS = (NonTof, TofSinogram, TofListmode)


# --------------------------------------------------------------- LOR sources --


def _rows(x, name, width):
    _a.kind_of(x, name)
    shape = tuple(x.shape)
    if len(shape) != 2 or shape[1] != width:
        raise ValueError(f"{name}: shape {shape}, expected (n, {width})")
    return shape[0]


class Lors:
    """LORs given by their end points: `starts` and `ends` of shape (n, 3),
    coordinate k along image axis k, in the image's length unit and dtype."""

    __slots__ = ("_a", "_b", "shape")
    _kind = 0
    planes = None
    _sino = None

    def __init__(self, starts, ends):
        n = _rows(starts, "lors.starts", 3)
        if _rows(ends, "lors.ends", 3) != n:
            raise ValueError(
                f"lors.ends: shape {tuple(ends.shape)}, expected ({n}, 3) like lors.starts"
            )
        self._a = starts
        self._b = ends
        self.shape = (n,)

    @property
    def starts(self):
        return self._a

    @property
    def ends(self):
        return self._b

    @property
    def count(self):
        """Number of LORs."""
        return self.shape[0]

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return f"Lors(<{self.shape[0]} LORs>)"


class DetectorPairs:
    """LORs between detectors: `detectors` (nd, 3) crystal centres in the image's
    dtype, `pairs` (n, 2) int32 indices into them. The CPU backend checks every
    index on every call; GPU kernels never do, so CUDA pairs are checked here
    once (`check=True`, one host synchronisation); they must not change after."""

    __slots__ = ("_a", "_b", "shape")
    _kind = 1
    planes = None
    _sino = None

    def __init__(self, detectors, pairs, *, check=True):
        nd = _rows(detectors, "lors.detectors", 3)
        n = _rows(pairs, "lors.pairs", 2)
        self._a = detectors
        self._b = pairs
        self.shape = (n,)
        k = _a.kind_of(pairs, "lors.pairs")
        if check and n > 0 and _a.is_cuda(pairs, k) and k in (_a.CUPY, _a.TORCH):
            lo, hi = int(pairs.min()), int(pairs.max())
            if lo < 0 or hi >= nd:
                bad = lo if lo < 0 else hi
                raise ValueError(
                    f"lors.pairs: detector {bad} is outside the table of {nd} detectors"
                )

    @property
    def detectors(self):
        return self._a

    @property
    def pairs(self):
        return self._b

    @property
    def count(self):
        return self.shape[0]

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return f"DetectorPairs(<{self.shape[0]} LORs, {self._a.shape[0]} detectors>)"


# LOR source types the projections take (scanner.SinogramSubset adds itself).
_LOR_SOURCES = {Lors, DetectorPairs}


def _check_call(op, geometry, lors):
    if not isinstance(op, _OPERATIONS):
        raise TypeError(
            "op: expected resproj.NonTof, TofSinogram or TofListmode, got "
            f"{type(op).__qualname__}"
        )
    if not isinstance(geometry, ImageGeometry):
        raise TypeError(
            f"geometry: expected resproj.ImageGeometry, got {type(geometry).__qualname__}"
        )
    if not isinstance(lors, tuple(_LOR_SOURCES)):
        raise TypeError(
            "lors: expected resproj.Lors, DetectorPairs or scanner.SinogramSubset, got "
            f"{type(lors).__qualname__}"
        )


# --------------------------------------------------------------- projections --

_x = _a.export_any


def _op_args(op):
    """The operation's arguments of the native projection calls: kind, TOF
    parameters and its per-LOR arrays (exported, named for errors)."""
    return (
        op._kind,
        op.tof,
        _x(op.bins, "op.bins"),
        _x(op.sigmas, "op.sigmas"),
        _x(op.center_offsets, "op.center_offsets"),
    )


def _lor_args(lors):
    """The LOR source's arguments of the native projection calls: its kind and
    its two arrays (end points, or detector table and pairs)."""
    return (lors._kind, _x(lors._a, "lors"), _x(lors._b, "lors"))


def forward(op, geometry, image, lors, out=None, *, stream=None, sync=False):
    """Forward projection of `image` (array of `geometry.shape`) along `lors`.

    Returns `out`, overwritten with the projection: shape `lors.shape`, plus
    `(tof.num_bins,)` for TofSinogram (or any C-contiguous 1-D array of that
    size); allocated like `image` when None. Host arrays run on the CPU backend
    and return when done; CUDA arrays are queued on `stream` (default: the
    current stream of the image's library) on the image's device, without
    synchronising unless `sync`. Raises TypeError / ValueError naming the
    argument before anything is written.
    """
    if (
        type(op) not in _OPERATIONS
        or type(geometry) is not ImageGeometry
        or type(lors) not in _LOR_SOURCES
    ):
        _check_call(op, geometry, lors)
    k = _a.kind_of(image, "image")
    if out is None:
        out = _a.empty(image, k, op.values_shape(lors.shape), "out")
    else:
        _a.check_writable(out, _a.kind_of(out, "out"), "out")
    handle = 0
    if k != _a.NUMPY and _a.is_cuda(image, k):
        handle = (
            _a.current_stream(image, k, _a.device_of(image, k))
            if stream is None
            else _a.stream_handle(stream)
        )
    _resproj.forward(
        geometry,
        _a.export(image, k),
        *_op_args(op),
        *_lor_args(lors),
        _x(lors.planes, "lors.planes"),
        lors._sino,
        _a.export(out, _a.kind_of(out, "out")),
        handle,
        sync,
    )
    return out


def back(
    op, geometry, values, lors, out=None, *, stream=None, sync=False, overwrite=False
):
    """Back projection (the exact transpose of `forward`) of `values` along `lors`.

    Adds into `out` (an image array of `geometry.shape`, or C-contiguous 1-D of
    `geometry.num_voxels`) and returns it; with `overwrite=True` `out` is zeroed
    first. When `out` is None a zero image like `values` is allocated. Streams,
    devices and errors as `forward`.
    """
    if (
        type(op) not in _OPERATIONS
        or type(geometry) is not ImageGeometry
        or type(lors) not in _LOR_SOURCES
    ):
        _check_call(op, geometry, lors)
    k = _a.kind_of(values, "values")
    cuda = k != _a.NUMPY and _a.is_cuda(values, k)
    zero = overwrite
    if out is None:
        # CUDA images are zeroed on the call's stream, host ones here.
        out = _a.empty(values, k, geometry.shape, "out", zero=not cuda)
        zero = cuda
    else:
        _a.check_writable(out, _a.kind_of(out, "out"), "out")
    handle = 0
    if cuda:
        handle = (
            _a.current_stream(values, k, _a.device_of(values, k))
            if stream is None
            else _a.stream_handle(stream)
        )
    _resproj.back(
        geometry,
        _a.export(values, k),
        *_op_args(op),
        *_lor_args(lors),
        _x(lors.planes, "lors.planes"),
        lors._sino,
        _a.export(out, _a.kind_of(out, "out")),
        handle,
        sync,
        zero,
    )
    return out
