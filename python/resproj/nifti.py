"""NIfTI-1 images on the host: `write(path, image, geometry)` and
`read(path) -> (image float32, ImageGeometry)`. Files open in other tools
(nibabel, viewers) with image axis 2, the scanner axis, as the superior
axis, and the voxel sizes and origin of the geometry (mm)."""

from __future__ import annotations

from ._resproj import read_nifti as read
from ._resproj import write_nifti as write

__all__ = ["read", "write"]
