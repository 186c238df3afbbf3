"""Scanners and span-1 sinograms: sinogram subsets as LOR sources that carry
no per-LOR data (the projector derives each LOR from its bin).

    layout = scanner.dmi_sinogram()
    subsets = scanner.SinogramSubsets(scanner.dmi(), layout, 34, like=image)
    y0 = resproj.forward(resproj.NonTof(), geometry, image, subsets[0])
    # y0.shape == (1296, 8, 415): [plane][view of the subset][radial]
"""

from __future__ import annotations

import numpy as np

from . import _arrays as _a
from . import _core
from ._resproj import (
    PolygonScanner,
    SinogramLayout,
    dmi,
    dmi_sinogram,
    dmi_tof,
    small_test_scanner,
    span1_sinogram,
)

__all__ = [
    "PolygonScanner",
    "SinogramLayout",
    "SinogramSubset",
    "SinogramSubsets",
    "dmi",
    "dmi_sinogram",
    "dmi_tof",
    "small_test_scanner",
    "span1_sinogram",
]


class SinogramSubset:
    """The LORs of views `views` over planes [first_plane, first_plane +
    num_planes) of a span-1 sinogram `layout`, in the order
    [plane][view][radial] (`shape`). `detectors` (nd, 3, the image's dtype),
    `planes` (layout.plane_table(), int32) and `views` (int32) live where the
    projection runs. Views and plane rings are range-checked here once
    (`check=True`; one host synchronisation for CUDA arrays)."""

    __slots__ = ("layout", "_a", "_b", "planes", "_sino", "shape")
    _kind = 2

    def __init__(
        self,
        layout,
        detectors,
        planes,
        views,
        first_plane=0,
        num_planes=None,
        *,
        check=True,
    ):
        if not isinstance(layout, SinogramLayout):
            raise TypeError("layout: expected resproj.scanner.SinogramLayout")
        for name, x in (("detectors", detectors), ("planes", planes), ("views", views)):
            _a.kind_of(x, "lors." + name)
        if num_planes is None:
            num_planes = layout.num_planes - first_plane
        if not 0 <= first_plane <= first_plane + num_planes <= layout.num_planes:
            raise ValueError(
                f"num_planes: planes [{first_plane}, {first_plane + num_planes}) outside "
                f"the sinogram's {layout.num_planes}"
            )
        if len(views.shape) != 1:
            raise ValueError(f"lors.views: shape {tuple(views.shape)}, expected (k,)")
        if check:
            # Kernels derive detector indices from views and planes unchecked.
            for name, x, limit in (
                ("lors.views", views, layout.num_views),
                ("lors.planes", planes, layout.num_rings),
            ):
                if x.shape[0] > 0 and not 0 <= int(x.min()) <= int(x.max()) < limit:
                    raise ValueError(f"{name}: values must lie in [0, {limit})")
        self.layout = layout
        self._a = detectors
        self._b = views
        self.planes = planes
        self._sino = (
            layout.crystals_per_ring,
            layout.num_rings,
            layout.num_views,
            layout.radial_trim,
            layout.num_radial,
            layout.num_planes,
            int(first_plane),
            int(num_planes),
        )
        self.shape = (int(num_planes), int(views.shape[0]), layout.num_radial)

    @property
    def detectors(self):
        return self._a

    @property
    def views(self):
        return self._b

    @property
    def count(self):
        return self.shape[0] * self.shape[1] * self.shape[2]

    def __repr__(self):
        return f"SinogramSubset(shape={self.shape})"


_core._LOR_SOURCES.add(SinogramSubset)


class SinogramSubsets:
    """A span-1 sinogram split into `num_subsets` OSEM subsets by view (subset
    s: views s, s + num_subsets, ...), with the detector and plane tables in
    the array library, on the device and in the floating dtype of `like`
    (NumPy float32 when None). `subsets[s]` is subset s as a LOR source over
    all planes, of shape (num_planes, views in s, num_radial)."""

    def __init__(self, scanner, layout, num_subsets, *, like=None):
        if not isinstance(scanner, PolygonScanner):
            raise TypeError("scanner: expected resproj.scanner.PolygonScanner")
        if not isinstance(layout, SinogramLayout):
            raise TypeError("layout: expected resproj.scanner.SinogramLayout")
        if (layout.crystals_per_ring, layout.num_rings) != (
            scanner.crystals_per_ring,
            scanner.num_rings,
        ):
            raise ValueError(
                "layout: made for another scanner (crystals per ring, rings)"
            )
        self.scanner = scanner
        self.layout = layout
        self.num_subsets = int(num_subsets)
        dtype = _a.float_dtype_of(like)
        self.detectors = _a.asarray_like(scanner.detector_centres(), like, dtype)
        self.planes = _a.asarray_like(layout.plane_table(), like, np.int32)
        self.views = [
            _a.asarray_like(layout.subset_views(s, self.num_subsets), like, np.int32)
            for s in range(self.num_subsets)
        ]
        self._index = [
            _a.asarray_like(layout.subset_views(s, self.num_subsets), like, np.int64)
            for s in range(self.num_subsets)
        ]
        self._subsets = [
            SinogramSubset(layout, self.detectors, self.planes, v, check=False)
            for v in self.views
        ]

    def __len__(self):
        return self.num_subsets

    def __getitem__(self, s):
        return self._subsets[s]

    def __iter__(self):
        return iter(self._subsets)

    @property
    def shape(self):
        """Shape of the whole sinogram, (num_planes, num_views, num_radial)."""
        return (self.layout.num_planes, self.layout.num_views, self.layout.num_radial)

    def split(self, sinogram):
        """Subset s of a whole sinogram (`shape`, optionally with trailing TOF
        bins) for every s: C-contiguous copies in its library."""
        return [_contiguous(sinogram[:, i]) for i in self._index]

    def join(self, parts, out):
        """Writes per-subset arrays (as from `split`) into the whole sinogram
        `out`; returns it."""
        for i, p in zip(self._index, parts):
            out[:, i] = p
        return out


def _contiguous(x):
    k = _a.kind_of(x, "sinogram")
    if k == _a.TORCH:
        return x.contiguous()
    if k == _a.CUPY:
        import cupy

        return cupy.ascontiguousarray(x)
    return np.ascontiguousarray(x)
