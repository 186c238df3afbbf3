"""List-mode files of 10-byte records (two uint32 detector indices and an
int16 TOF bin, little-endian), as NumPy arrays: `pairs` int32 (n, 2) for
`resproj.DetectorPairs` and `bins` int16 (n,) for `resproj.TofListmode`."""

from __future__ import annotations

from ._resproj import count_listmode_events as count
from ._resproj import read_listmode as read
from ._resproj import validate_events as validate
from ._resproj import write_listmode as write

__all__ = ["count", "read", "write", "validate"]
