"""List-mode OSEM reconstruction: events file on disk to image, on the GPU
(the compiled C++ set-up and backend, everything resident) or on the CPU
(the same steps from the plain C++ blocks).

    from resproj import recon, scanner
    sub = recon.SinogramSubsets(scanner.dmi(), 65, 34, geometry)
    r = recon.ListmodeOsem(sub, recon.Corrections(mu=mu), scanner.dmi_tof(), "scan.lm")
    r.run(2)
    x = r.image()                  # NumPy copy; r.image_array() is the resident image
    print(recon.format_phases(r.phases))

Model: expected counts `m (A x) + a` per event, `m = scale * eff[a] * eff[b] *
exp(-integral of mu)`, `a = background / num_tof_bins`; the sensitivity image
covers every LOR of the sinogram (docs/reconstruction.md).
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

from . import _arrays as _a
from . import _resproj
from ._resproj import ImageGeometry, OsemProgress, PolygonScanner, TofParams

__all__ = [
    "SinogramSubsets",
    "Corrections",
    "ListmodeOsem",
    "sensitivity",
    "all_lor_sensitivity",
    "OsemProgress",
    "format_phases",
    "total_seconds",
]


class SinogramSubsets:
    """A scanner's span-1 sinogram (all ring differences, `radial_trim` radial
    bins dropped at each edge) split into `num_subsets` OSEM subsets by view
    (subset s: views s, s + num_subsets, ...), and the image `geometry`
    reconstructed. List-mode events go to subset `i mod num_subsets`; the
    sensitivity image covers every LOR of the sinogram."""

    __slots__ = ("_impl", "scanner", "radial_trim")

    def __init__(self, scanner, radial_trim, num_subsets, geometry):
        if not isinstance(scanner, PolygonScanner):
            raise TypeError(
                "scanner: expected resproj.scanner.PolygonScanner, got "
                f"{type(scanner).__qualname__}"
            )
        if not isinstance(geometry, ImageGeometry):
            raise TypeError(
                "geometry: expected resproj.ImageGeometry, got "
                f"{type(geometry).__qualname__}"
            )
        radial_trim = _int(radial_trim, "radial_trim")
        num_subsets = _int(num_subsets, "num_subsets")
        self._impl = _resproj.ReconSubsets(scanner, radial_trim, num_subsets, geometry)
        self.scanner = scanner
        self.radial_trim = radial_trim

    @property
    def num_subsets(self) -> int:
        return self._impl.num_subsets

    @property
    def num_detectors(self) -> int:
        return self._impl.num_detectors

    @property
    def geometry(self) -> ImageGeometry:
        return self._impl.geometry

    @property
    def layout(self):
        """The sinogram's `scanner.SinogramLayout`."""
        return self._impl.layout

    @property
    def total_count(self) -> int:
        """LORs of the whole sinogram."""
        return self._impl.total_count

    def lor_subsets(self, like=None):
        """The same subsets as LOR sources (`scanner.SinogramSubsets`), with
        the tables in the library, on the device and in the dtype of `like`."""
        from .scanner import SinogramSubsets as LorSubsets

        return LorSubsets(self.scanner, self.layout, self.num_subsets, like=like)

    def __repr__(self):
        return (
            f"SinogramSubsets(num_subsets={self.num_subsets}, "
            f"radial_trim={self.radial_trim}, geometry={self.geometry!r})"
        )


class Corrections:
    """Corrections of the data model besides the activity: `efficiency` per
    detector (normalisation; None: 1), the attenuation image `mu` in 1/length
    unit with the image's shape (None: no attenuation), `scale` (counts per
    unit of forward projection) and `background` (additive counts per sinogram
    bin, spread over the TOF bins). Host arrays, copied as float32."""

    __slots__ = ("efficiency", "mu", "scale", "background")

    def __init__(self, efficiency=None, mu=None, scale=1.0, background=0.0):
        self.efficiency = _host_floats(efficiency, "corrections.efficiency")
        self.mu = _host_floats(mu, "corrections.mu")
        self.scale = _number(scale, "corrections.scale")
        self.background = _number(background, "corrections.background")
        if not self.scale > 0:
            raise ValueError(f"corrections.scale: must be > 0 (got {self.scale})")
        if not self.background >= 0:
            raise ValueError(
                f"corrections.background: must be >= 0 (got {self.background})"
            )

    def _arrays(self, subsets):
        """(efficiency, mu) as flat float32 arrays for `subsets`."""
        nd, nv = subsets.num_detectors, subsets.geometry.num_voxels
        eff = np.ones(nd, np.float32) if self.efficiency is None else self.efficiency
        mu = np.zeros(nv, np.float32) if self.mu is None else self.mu
        if eff.size != nd:
            raise ValueError(
                f"corrections.efficiency: {eff.size} values, expected one per detector "
                f"({nd})"
            )
        if mu.size != nv:
            raise ValueError(
                f"corrections.mu: shape {mu.shape}, expected the image's "
                f"{subsets.geometry.shape} ({nv} values)"
            )
        return eff.reshape(-1), mu.reshape(-1)

    def __repr__(self):
        return (
            f"Corrections(efficiency={'None' if self.efficiency is None else '<array>'}, "
            f"mu={'None' if self.mu is None else '<array>'}, scale={self.scale}, "
            f"background={self.background})"
        )


class ListmodeOsem:
    """TOF (or non-TOF, `tof=None`) list-mode OSEM of the events of a list-mode
    file (10-byte records, `resproj.listmode`).

    Set-up reads and validates the events, groups them into the subsets of
    `subsets`, computes their corrections and the sensitivity image, and
    starts from an image of ones; each phase is timed into `phases`.
    `device='cuda'` (or `'cuda:N'`) runs on the GPU with everything resident
    (events read straight into device memory), on `stream` (an int handle, a
    CuPy or PyTorch stream, which this object keeps alive; a stream given by
    its int handle must outlive it; default: a stream of its own); `device='cpu'`
    runs the same steps on the CPU (`stream` ignored). Default: `'cuda'` when
    the GPU backend and a device are present, else `'cpu'`.

    Every call returns with its work finished. The GIL is released while it
    computes (except to call `progress`); one call at a time per object.

    Raises TypeError / ValueError naming a bad argument, OSError for a file
    that cannot be read or holds events outside the scanner or the TOF bins.
    """

    def __init__(self, subsets, corrections, tof, path, stream=None, *, device=None):
        corrections = _check_subsets_corrections(subsets, corrections)
        if tof is not None and not isinstance(tof, TofParams):
            raise TypeError(
                f"tof: expected resproj.TofParams or None, got {type(tof).__qualname__}"
            )
        try:
            path = os.fsdecode(os.fspath(path))
        except TypeError:
            raise TypeError(
                f"path: expected a str or path-like, got {type(path).__qualname__}"
            ) from None
        kind, index = _device(device)
        eff, mu = corrections._arrays(subsets)
        args = (
            subsets._impl,
            eff,
            mu,
            corrections.scale,
            corrections.background,
            tof,
            path,
        )
        self.subsets = subsets
        self.tof = tof
        if kind == "cpu":
            self._impl = _resproj.CpuListmodeOsem(*args)
            self.device = "cpu"
        else:
            handle = None if stream is None else _a.stream_handle(stream)
            # The stream object is kept by the reconstruction, which frees
            # its device memory in stream order on it when it goes.
            self._impl = _resproj.GpuListmodeOsem(*args, index, handle, stream)
            self.device = f"cuda:{index}"

    def run(self, iterations, progress=None):
        """Runs `iterations` more OSEM iterations from the current image.
        `progress(p)` (optional) is called after every subset with an
        `OsemProgress` (iteration, subset, elapsed_s, eta_s, ...), the work
        finished; it may read the image; an exception it raises stops the run
        and propagates."""
        iterations = _int(iterations, "iterations")
        if iterations < 0:
            raise ValueError(f"iterations: must be >= 0 (got {iterations})")
        if progress is not None and not callable(progress):
            raise TypeError(
                "progress: expected a callable or None, got "
                f"{type(progress).__qualname__}"
            )
        self._impl.run(iterations, progress)

    def image(self):
        """A NumPy copy of the image (float32, `geometry.shape`)."""
        return self._impl.image()

    def image_array(self, like=None):
        """The resident image without a copy, valid while this object lives:
        on the CPU a NumPy array; on the GPU a CuPy array (`like='cupy'`) or
        a PyTorch tensor (`like='torch'`; default: CuPy when installed). Write
        to it only between calls (e.g. a start image before `run`), and let
        that work finish (synchronise) first: the reconstruction runs on its
        own stream."""
        if self.device == "cpu":
            if like not in (None, "numpy"):
                raise ValueError(f"like: {like!r} for an image on the CPU (use 'numpy')")
            return self._impl.image_view()
        if like is None:
            like = "cupy" if _importable("cupy") else "torch"
        if like == "cupy":
            import cupy

            return cupy.from_dlpack(self)
        if like == "torch":
            import torch

            return torch.from_dlpack(self)
        raise ValueError(f"like: expected 'cupy' or 'torch', got {like!r}")

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export of the resident image (no copy; no work is pending on
        it between calls, so `stream` needs no synchronisation)."""
        if copy:
            raise BufferError("copy=True is not supported")
        if self.device == "cpu":
            return self._impl.image_view().__dlpack__()
        x = self._impl.image_dlpack()
        return x.__dlpack__() if hasattr(x, "__dlpack__") else x

    def __dlpack_device__(self):
        if self.device == "cpu":
            return (1, 0)
        return (2, self._impl.device)  # kDLCUDA

    @property
    def __cuda_array_interface__(self):
        if self.device == "cpu":
            raise AttributeError("__cuda_array_interface__: the image is on the CPU")
        return {
            "shape": tuple(self.geometry.shape),
            "typestr": "<f4",
            "data": (self._impl.image_pointer, False),
            "version": 3,
            "strides": None,
            "stream": None,  # nothing pending between calls
        }

    def write_nifti(self, path):
        """Writes the image as a NIfTI-1 file (on the GPU straight from device
        memory) and adds the phase 'nifti'."""
        self._impl.write_nifti(os.fsdecode(os.fspath(path)))

    @property
    def geometry(self) -> ImageGeometry:
        return self.subsets.geometry

    @property
    def num_events(self) -> int:
        """Events read from the file."""
        return self._impl.num_events

    @property
    def phases(self) -> list:
        """The timed phases so far, in order: dicts with key, name, seconds,
        items (work done, 0: none), item_name and overlapped (ran concurrently
        with other phases, not in the total)."""
        return self._impl.phases

    @property
    def stream(self):
        """The CUDA stream handle (int) of a GPU reconstruction, else None."""
        return None if self.device == "cpu" else self._impl.stream

    def __repr__(self):
        return (
            f"ListmodeOsem(<{self.num_events} events>, {self.subsets.num_subsets} "
            f"subsets, device={self.device!r})"
        )


def _check_subsets_corrections(subsets, corrections):
    if not isinstance(subsets, SinogramSubsets):
        raise TypeError(
            "subsets: expected resproj.recon.SinogramSubsets, got "
            f"{type(subsets).__qualname__}"
        )
    if corrections is None:
        corrections = Corrections()
    if not isinstance(corrections, Corrections):
        raise TypeError(
            "corrections: expected resproj.recon.Corrections, got "
            f"{type(corrections).__qualname__}"
        )
    return corrections


def sensitivity(subsets, corrections=None, out=None, *, device=None, like=None, stream=None):
    """The sensitivity image `A^T m` over every LOR of the sinogram of
    `subsets`, `m = scale * eff[a] * eff[b] * exp(-integral of mu)` from
    `corrections` (its background is not used): what `ListmodeOsem`
    divides by.

    On the CPU (`device='cpu'`, or `out` a NumPy array) a NumPy float32 image
    of `subsets.geometry.shape`. On a GPU (`device='cuda[:N]'`, or `out` a
    CUDA array) into `out`, or into a new CuPy or PyTorch array (`like`:
    'cupy' or 'torch'; default CuPy when installed), on `stream` (default:
    the current stream of that array's library); returns the image, complete.
    Default device: 'cuda' when the GPU backend and a device are present.

    Raises TypeError / ValueError naming a bad argument (`out` of another
    shape, dtype or place) before anything is written.
    """
    corrections = _check_subsets_corrections(subsets, corrections)
    eff, mu = corrections._arrays(subsets)
    shape = tuple(subsets.geometry.shape)
    kind, index = _place(out, device)
    if kind == "cpu":
        if out is not None:
            _check_host_out(out, shape)
        image = _resproj.cpu_sensitivity(subsets._impl, eff, mu, corrections.scale)
        return _into_host_out(image, out)
    out, exported, handle = _cuda_out(out, shape, index, like, stream)
    _resproj.gpu_sensitivity(subsets._impl, eff, mu, corrections.scale, exported, handle)
    return out


def all_lor_sensitivity(
    scanner, geometry, mu=None, out=None, *, device=None, like=None, stream=None, threads=0,
    stats=False
):
    """The sensitivity image with attenuation over every LOR of `scanner`:
    every unordered pair of detectors in distinct transaxial crystals, at
    every ring difference, back-projected with `exp(-integral of mu)` (1
    without `mu`), Joseph non-TOF in float, summed in double.

    LORs that are translates of each other along the scanner axis (rings one
    voxel apart) share one footprint walk, and the scanner's mirror flips
    share more; the result equals the LOR-by-LOR sum to rounding. `mu`: a
    host array of `geometry.shape` (1/mm), or None. Every ring must lie
    inside the image along the scanner axis.

    On the CPU (`device='cpu'`, or `out` a NumPy array) a NumPy float32 image
    of `geometry.shape`, on `threads` worker threads (0: all). On a GPU
    (`device='cuda[:N]'`, or `out` a CUDA array) into `out`, or into a new
    CuPy or PyTorch array (`like`: 'cupy' or 'torch'; default CuPy when
    installed), on `stream` (default: the current stream of that array's
    library); returns the image, complete. Default device: 'cuda' when the
    GPU backend and a device are present. With `stats=True` returns
    `(image, stats)` (a dict: lors, families, mirror_flips,
    attenuation_walks, scatter_walks).

    Raises TypeError / ValueError naming a bad argument before any work.
    """
    if not isinstance(scanner, PolygonScanner):
        raise TypeError(
            f"scanner: expected resproj.scanner.PolygonScanner, got {type(scanner).__qualname__}"
        )
    if not isinstance(geometry, ImageGeometry):
        raise TypeError(
            f"geometry: expected resproj.ImageGeometry, got {type(geometry).__qualname__}"
        )
    threads = _int(threads, "threads")
    if threads < 0:
        raise ValueError(f"threads: must be >= 0 (got {threads})")
    m = _host_floats(mu, "mu")
    shape = tuple(geometry.shape)
    if m is not None and m.shape != shape:
        raise ValueError(f"mu: shape {m.shape}, expected {shape}")
    kind, index = _place(out, device)
    if kind == "cpu":
        if out is not None:
            _check_host_out(out, shape)
        image, st = _resproj.all_lor_sensitivity(scanner, geometry, m, threads)
        image = _into_host_out(image, out)
    else:
        image, exported, handle = _cuda_out(out, shape, index, like, stream)
        st = _resproj.gpu_all_lor_sensitivity(scanner, geometry, m, exported, handle)
    return (image, dict(st)) if stats else image


def total_seconds(phases) -> float:
    """Sum of the phases that did not overlap others."""
    return sum(p["seconds"] for p in phases if not p["overlapped"])


def format_phases(phases) -> str:
    """The phase table as text: seconds, share of the total, rate."""
    total = total_seconds(phases)
    lines = []
    for p in phases:
        line = f"  {p['name']:<44} {p['seconds']:8.3f} s"
        if p["overlapped"]:
            line += "  (overlapped)"
        else:
            line += f"  {100 * p['seconds'] / total if total > 0 else 0.0:5.1f} %"
        if p["items"] > 0 and p["seconds"] > 0:
            line += f"  {p['items'] / p['seconds']:.3g} {p['item_name']}/s"
        lines.append(line)
    lines.append(f"  {'total':<44} {total:8.3f} s")
    return "\n".join(lines)


# ----------------------------------------------------------------- helpers --


def _int(v, name):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name}: expected an integer, got {type(v).__qualname__}")
    return int(v)


def _number(v, name):
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: expected a number, got {type(v).__qualname__}")
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"{name}: must be finite (got {v})")
    return v


def _host_floats(x, name):
    """A C-contiguous float32 NumPy copy of the host array `x` (None stays)."""
    if x is None:
        return None
    if not isinstance(x, np.ndarray):
        k = _a.kind_of(x, name)
        if k != _a.NUMPY and _a.is_cuda(x, k):
            raise ValueError(f"{name}: on the GPU, expected a host array")
        try:
            x = np.asarray(x)
        except Exception:
            raise TypeError(f"{name}: expected a NumPy array") from None
    if x.dtype.kind not in "fiu":
        raise TypeError(f"{name}: dtype {x.dtype}, expected real numbers")
    out = np.array(x, dtype=np.float32, order="C", copy=True)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name}: values must be finite")
    return out


def _place(out, device):
    """('cpu', 0) or ('cuda', index): where the output array `out` is (checked
    writable), else where `device` says."""
    if out is None:
        return _device(device)
    k = _a.kind_of(out, "out")
    _a.check_writable(out, k, "out")
    return ("cuda", _a.device_of(out, k)) if _a.is_cuda(out, k) else ("cpu", 0)


def _check_host_out(out, shape):
    """ValueError unless the host array `out` is float32 of `shape`."""
    if tuple(out.shape) != shape or str(out.dtype) != "float32":
        raise ValueError(
            f"out: shape {tuple(out.shape)} dtype {out.dtype}, expected {shape} float32"
        )


def _into_host_out(image, out):
    """`image`, or `out` (a host array checked by `_check_host_out`) holding it."""
    if out is None:
        return image
    out[...] = image
    return out


def _cuda_out(out, shape, index, like, stream):
    """(out, exported, stream handle): the CUDA output `out`, or a new float32
    array of `shape` on device `index` (`like`: its library), exported for
    the extension, and the stream to run on (`stream`, or the current one of
    the array's library)."""
    if out is None:
        out = _a.empty_cuda(_a.cuda_library(like), shape, "float32", index)
    k = _a.kind_of(out, "out")
    handle = (
        _a.current_stream(out, k, index) if stream is None else _a.stream_handle(stream)
    )
    return out, _a.export(out, k), handle


def _device(device):
    """('cpu', 0) or ('cuda', index) for `device` (None: cuda when present)."""
    gpu = _resproj.has_gpu_backend and _resproj.cuda_device_count() > 0
    if device is None:
        return ("cuda", 0) if gpu else ("cpu", 0)
    if not isinstance(device, str):
        raise TypeError(
            f"device: expected 'cpu', 'cuda' or 'cuda:N', got {type(device).__qualname__}"
        )
    if device == "cpu":
        return ("cpu", 0)
    if device == "cuda" or device.startswith("cuda:"):
        index = 0
        if device != "cuda":
            try:
                index = int(device[5:])
            except ValueError:
                raise ValueError(f"device: {device!r}, expected 'cuda:N'") from None
        if not _resproj.has_gpu_backend:
            raise ValueError(
                "device: 'cuda', but this resproj was built without the GPU backend"
            )
        n = _resproj.cuda_device_count()
        if not 0 <= index < n:
            raise ValueError(f"device: {device!r}, but {n} CUDA device(s) are usable")
        return ("cuda", index)
    raise ValueError(f"device: expected 'cpu', 'cuda' or 'cuda:N', got {device!r}")


def _importable(name):
    if name in sys.modules:
        return True
    import importlib.util

    return importlib.util.find_spec(name) is not None
