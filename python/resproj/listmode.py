"""List-mode files of 10-byte records (two uint32 detector indices and an
int16 TOF bin, little-endian), as NumPy arrays: `pairs` int32 (n, 2) for
`resproj.DetectorPairs` and `bins` int16 (n,) for `resproj.TofListmode`;
`read_to_device` reads them straight into CUDA memory."""

from __future__ import annotations

import os

from . import _arrays as _a
from . import _resproj
from ._resproj import count_listmode_events as count
from ._resproj import read_listmode as read
from ._resproj import validate_events as validate
from ._resproj import write_listmode as write

__all__ = ["count", "read", "write", "validate", "read_to_device"]


def read_to_device(path, num_detectors, num_tof_bins, *, device=0, like=None, stream=None):
    """The events of the list-mode file `path` in memory of CUDA device
    `device`, read without host arrays (pinned staging) and validated on the
    GPU: `(pairs, bins)`, int32 (n, 2) and int16 (n,) arrays of CuPy or
    PyTorch (`like`: 'cupy' or 'torch'; default CuPy when installed), which
    own the memory. Work is ordered after `stream` (default: the library's
    current stream); returns with the arrays complete.

    Raises ValueError without the GPU backend or for a bad device, OSError
    for a file that cannot be read or holds events outside `num_detectors`
    or the `num_tof_bins` TOF bins (0: bins not checked).
    """
    if not _resproj.has_gpu_backend:
        raise ValueError(
            "read_to_device: this resproj was built without the GPU backend"
        )
    n = _resproj.cuda_device_count()
    if not isinstance(device, int) or not 0 <= device < n:
        raise ValueError(f"device: {device!r}, but {n} CUDA device(s) are usable")
    lib = _a.cuda_library(like)
    handle = _a.library_stream(lib, device) if stream is None else _a.stream_handle(stream)
    ev = _resproj.GpuListmodeEvents(
        os.fsdecode(os.fspath(path)), int(num_detectors), int(num_tof_bins), device, handle
    )
    return (
        _a.from_binding(ev.pairs_dlpack(), device, lib),
        _a.from_binding(ev.bins_dlpack(), device, lib),
    )
