"""resproj: PET forward and back projection (Joseph's method, TOF sinogram and
TOF list-mode) for NumPy, CuPy and PyTorch arrays, without copies.

    import numpy as np, resproj
    g = resproj.ImageGeometry((64, 64, 16), (2.0, 2.0, 2.0))
    lors = resproj.Lors(starts, ends)                  # (n, 3) each
    y = resproj.forward(resproj.NonTof(), g, image, lors)
    x = resproj.back(resproj.NonTof(), g, y, lors)     # new zero image + A^T y

Host arrays run on the CPU backend; CUDA arrays (CuPy, PyTorch) on the GPU,
queued on the current stream of their library. `resproj.recon` reconstructs
list-mode files (OSEM); `resproj.LorStreamer` projects host LORs against a
GPU image. See docs/python.md.
"""

from __future__ import annotations

from . import _resproj
from ._core import (
    DetectorPairs,
    Lors,
    NonTof,
    TofListmode,
    TofSinogram,
    back,
    forward,
)
from ._linear import AdjointOperator, LinearOperator, Projector
from ._resproj import ImageGeometry, TofParams
from ._streamer import LorStreamer

__version__ = _resproj.__version__

#: True when this build includes the GPU backend (CUDA was found at build time).
has_gpu_backend: bool = _resproj.has_gpu_backend


def cuda_device_count() -> int:
    """Number of usable CUDA devices (0 without the GPU backend or a device)."""
    return _resproj.cuda_device_count()


def synchronize(device: int = 0, stream=0) -> None:
    """Waits for the work queued on `stream` of `device` (0, the legacy default
    stream: also the work resproj bridged from it)."""
    from ._arrays import stream_handle

    _resproj.synchronize(device, stream_handle(stream))


def __getattr__(name):
    # Submodules on first use: `resproj.torch` needs PyTorch.
    if name in ("torch", "scanner", "listmode", "nifti", "recon"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ImageGeometry",
    "TofParams",
    "NonTof",
    "TofSinogram",
    "TofListmode",
    "Lors",
    "DetectorPairs",
    "forward",
    "back",
    "LinearOperator",
    "AdjointOperator",
    "Projector",
    "LorStreamer",
    "has_gpu_backend",
    "cuda_device_count",
    "synchronize",
]
