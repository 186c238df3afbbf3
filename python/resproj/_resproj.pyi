"""Compiled core of resproj (use the `resproj` package)."""

from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy
from numpy.typing import NDArray

# Any DLPack array (NumPy, CuPy, PyTorch, ...); the binding checks dtype,
# shape, C order and device, and never copies.
Array = Any

__version__: str
has_gpu_backend: bool

class ImageGeometry:
    """
    Voxel grid of an image: shape (n0, n1, n2) in C order, voxel size and origin (centre of voxel [0, 0, 0]) in any length unit. Validated on construction.
    """

    def __init__(
        self,
        shape: Sequence[int],
        voxel_size: Sequence[float],
        origin: Sequence[float] | None = None,
    ) -> None:
        """origin=None centres the image box on (0, 0, 0)."""

    @staticmethod
    def centred(shape: Sequence[int], voxel_size: Sequence[float]) -> ImageGeometry:
        """The geometry whose image box is centred on (0, 0, 0)."""

    @property
    def shape(self) -> tuple[int, int, int]: ...
    @property
    def voxel_size(self) -> tuple[float, float, float]: ...
    @property
    def origin(self) -> tuple[float, float, float]: ...
    @property
    def num_voxels(self) -> int: ...
    @property
    def box_min(self) -> tuple[float, float, float]: ...
    @property
    def box_max(self) -> tuple[float, float, float]: ...
    @overload
    def __eq__(self, arg: ImageGeometry, /) -> bool: ...
    @overload
    def __eq__(self, arg: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __repr__(self) -> str: ...
    def __getstate__(self) -> tuple[Any, ...]: ...
    def __setstate__(self, arg: tuple[Any, ...], /) -> None: ...

class TofParams:
    """
    Time-of-flight parameters in the LORs' length unit: bin j is centred at (j - (num_bins - 1) / 2) * bin_width + center_offset from the LOR's midpoint, towards its end point; Gaussian of `sigma` truncated at `num_sigmas`. Validated on construction.
    """

    def __init__(
        self,
        bin_width: float,
        num_bins: int,
        sigma: float,
        num_sigmas: float = 3.0,
        center_offset: float = 0.0,
    ) -> None: ...
    @property
    def bin_width(self) -> float: ...
    @property
    def num_bins(self) -> int: ...
    @property
    def sigma(self) -> float: ...
    @property
    def num_sigmas(self) -> float: ...
    @property
    def center_offset(self) -> float: ...
    @overload
    def __eq__(self, arg: TofParams, /) -> bool: ...
    @overload
    def __eq__(self, arg: object, /) -> bool: ...
    def __repr__(self) -> str: ...
    def __getstate__(self) -> tuple[Any, ...]: ...
    def __setstate__(self, arg: tuple[Any, ...], /) -> None: ...

def forward(
    geometry: ImageGeometry,
    image: Array,
    op: int,
    tof: TofParams | None,
    bins: Array | None,
    sigmas: Array | None,
    center_offsets: Array | None,
    lors: int,
    lor_a: Array,
    lor_b: Array,
    planes: Array | None,
    sino: Sequence[int] | None,
    out: Array,
    stream: int,
    sync: bool,
) -> None:
    """Forward projection into `out` (checked arrays; see resproj.forward)."""

def back(
    geometry: ImageGeometry,
    values: Array,
    op: int,
    tof: TofParams | None,
    bins: Array | None,
    sigmas: Array | None,
    center_offsets: Array | None,
    lors: int,
    lor_a: Array,
    lor_b: Array,
    planes: Array | None,
    sino: Sequence[int] | None,
    out: Array,
    stream: int,
    sync: bool,
    zero_out: bool,
) -> None:
    """Back projection added into `out` (see resproj.back)."""

def cuda_device_count() -> int:
    """
    Number of usable CUDA devices (0 without the GPU backend, a device or a driver).
    """

def synchronize(device: int, stream: int) -> None:
    """
    Waits for the work queued on `stream` of `device` (0: the legacy default stream, with the work resproj bridged from it).
    """

class PolygonScanner:
    """
    A cylindrical scanner of `num_sides` flat modules of `crystals_per_side` crystals per ring, rings at `ring_z` along image axis `axis`. Detector index of crystal c of ring r: r * crystals_per_ring + c.
    """

    def __init__(
        self,
        num_sides: int,
        crystals_per_side: int,
        inner_radius: float,
        crystal_pitch: float,
        ring_z: Sequence[float],
        axis: int = 2,
    ) -> None: ...
    @property
    def num_sides(self) -> int: ...
    @property
    def crystals_per_side(self) -> int: ...
    @property
    def inner_radius(self) -> float: ...
    @property
    def crystal_pitch(self) -> float: ...
    @property
    def axis(self) -> int: ...
    @property
    def crystals_per_ring(self) -> int: ...
    @property
    def num_rings(self) -> int: ...
    @property
    def num_crystals(self) -> int: ...
    def detector_centres(self) -> NDArray[numpy.float32]:
        """Crystal centres, float32 of shape (num_crystals, 3), ring-major."""

    def __repr__(self) -> str: ...

def dmi() -> PolygonScanner:
    """The reference scanner 'dmi' (36 rings of 544 crystals, mm)."""

def small_test_scanner(axis: int = 2) -> PolygonScanner:
    """
    A small scanner for tests: 12 modules of 4 crystals, radius 60, 4 rings.
    """

def dmi_tof() -> TofParams:
    """TOF parameters of the 'dmi' scanner (29 bins, mm)."""

class SinogramLayout:
    """
    A span-1 sinogram: planes (ring pairs) x views x radial bins, stored [plane][view][radial].
    """

    @property
    def crystals_per_ring(self) -> int: ...
    @property
    def num_rings(self) -> int: ...
    @property
    def num_views(self) -> int: ...
    @property
    def radial_trim(self) -> int: ...
    @property
    def num_radial(self) -> int: ...
    @property
    def max_ring_difference(self) -> int: ...
    @property
    def num_planes(self) -> int: ...
    @property
    def num_bins(self) -> int: ...
    @property
    def shape(self) -> tuple[int, int, int]: ...
    def plane_table(self) -> NDArray[numpy.int32]:
        """(start ring, end ring) of each plane, int32 of shape (num_planes, 2)."""

    def subset_views(self, subset: int, num_subsets: int) -> NDArray[numpy.int32]:
        """
        Views of OSEM subset `subset` of `num_subsets` (every num_subsets-th view), int32.
        """

    def detector_pair(self, plane: int, view: int, radial: int) -> tuple[int, int]:
        """Detector indices (start, end) of a bin."""

    def __repr__(self) -> str: ...

def span1_sinogram(
    scanner: PolygonScanner, radial_trim: int, max_ring_difference: int = -1
) -> SinogramLayout:
    """
    The span-1 sinogram of a scanner: `radial_trim` bins dropped at each radial edge, ring differences up to `max_ring_difference` (-1: all).
    """

def dmi_sinogram() -> SinogramLayout:
    """
    The reference sinogram of 'dmi': 1296 planes x 272 views x 415 radial bins.
    """

def count_listmode_events(path: str) -> int:
    """Number of 10-byte events in a list-mode file."""

def read_listmode(
    path: str, first: int = 0, count: int | None = None
) -> tuple[NDArray[numpy.int32], NDArray[numpy.int16]]:
    """
    Events [first, first + count) of a list-mode file as (pairs int32 (n, 2), bins int16 (n,)).
    """

def write_listmode(
    path: str, pairs: Array, bins: Array | None = None, append: bool = False
) -> None:
    """Writes (or appends) events as 10-byte list-mode records."""

def write_nifti(path: str, image: Array, geometry: ImageGeometry) -> None:
    """
    Writes a host float32/float64 image (C order, `geometry.shape`) as a NIfTI-1 file (replaced as a whole): axis 2 is the superior axis, voxel sizes and origin in mm.
    """

def read_nifti(path: str) -> tuple[NDArray[numpy.float32], ImageGeometry]:
    """Reads a NIfTI-1 image as (float32 array in C order, ImageGeometry)."""

def validate_events(
    pairs: Array, num_detectors: int, bins: Array | None = None, num_tof_bins: int = 0
) -> tuple[int, int]:
    """Host events: (number invalid, index of the first invalid or n)."""

class ReconSubsets:
    """
    A scanner's span-1 sinogram (all ring differences, `radial_trim` bins dropped at each radial edge) split into OSEM subsets by view, with the image reconstructed (recon::sinogram_subsets).
    """

    def __init__(
        self,
        scanner: PolygonScanner,
        radial_trim: int,
        num_subsets: int,
        geometry: ImageGeometry,
    ) -> None: ...
    @property
    def num_subsets(self) -> int: ...
    @property
    def num_detectors(self) -> int: ...
    @property
    def geometry(self) -> ImageGeometry: ...
    @property
    def scanner(self) -> PolygonScanner: ...
    @property
    def layout(self) -> SinogramLayout: ...
    @property
    def total_count(self) -> int: ...
    def subset_count(self, subset: int) -> int:
        """LORs of subset `subset`."""

class OsemProgress:
    """Progress of a reconstruction, after a subset."""

    @property
    def iteration(self) -> int:
        """0-based"""

    @property
    def subset(self) -> int:
        """0-based, within the iteration"""

    @property
    def num_iterations(self) -> int: ...
    @property
    def num_subsets(self) -> int: ...
    @property
    def elapsed_s(self) -> float: ...
    @property
    def last_subset_s(self) -> float: ...
    @property
    def eta_s(self) -> float: ...
    def __repr__(self) -> str: ...

def cpu_sensitivity(
    subsets: ReconSubsets, efficiency: Array, mu: Array, scale: float
) -> NDArray[numpy.float32]:
    """The sensitivity image on the CPU (see resproj.recon.sensitivity)."""

def all_lor_sensitivity(
    scanner: PolygonScanner,
    geometry: ImageGeometry,
    mu: Array | None,
    threads: int,
) -> tuple[NDArray[numpy.float32], dict[str, int]]:
    """The all-LOR sensitivity image on the CPU and what it walked (see resproj.recon.all_lor_sensitivity)."""

class CpuListmodeOsem:
    """List-mode OSEM on the CPU (see resproj.recon)."""

    def __init__(
        self,
        subsets: ReconSubsets,
        efficiency: Array,
        mu: Array,
        scale: float,
        background: float,
        tof: TofParams | None,
        path: str,
    ) -> None: ...
    def run(
        self, iterations: int, progress: Callable[[OsemProgress], Any] | None
    ) -> None: ...
    def image(self) -> NDArray[numpy.float32]: ...
    def image_view(self) -> NDArray[numpy.float32]: ...
    def write_nifti(self, path: str) -> None: ...
    @property
    def num_events(self) -> int: ...
    @property
    def phases(self) -> list[dict[str, Any]]: ...

# Only when has_gpu_backend:
def gpu_sensitivity(
    subsets: ReconSubsets, efficiency: Array, mu: Array, scale: float, out: Array, stream: int
) -> None:
    """The sensitivity image into the CUDA array `out` (see resproj.recon.sensitivity)."""

def gpu_all_lor_sensitivity(
    scanner: PolygonScanner,
    geometry: ImageGeometry,
    mu: Array | None,
    out: Array,
    stream: int,
) -> dict[str, int]:
    """The all-LOR sensitivity image into the CUDA array `out` and what it walked (see resproj.recon.all_lor_sensitivity)."""

class GpuListmodeEvents:
    """List-mode events in device memory (see resproj.listmode.read_to_device)."""

    def __init__(
        self, path: str, num_detectors: int, num_tof_bins: int, device: int, stream: int
    ) -> None: ...
    @property
    def count(self) -> int: ...
    @property
    def device(self) -> int: ...
    def pairs_dlpack(self) -> Any:
        """The detector pairs (n, 2) int32, no copy; keeps this object alive."""
    def bins_dlpack(self) -> Any:
        """The TOF bins (n,) int16, no copy; keeps this object alive."""

class GpuListmodeOsem:
    """List-mode OSEM on the GPU (see resproj.recon)."""

    def __init__(
        self,
        subsets: ReconSubsets,
        efficiency: Array,
        mu: Array,
        scale: float,
        background: float,
        tof: TofParams | None,
        path: str,
        device: int,
        stream: int | None,
        stream_object: Any | None,
    ) -> None: ...
    def run(
        self, iterations: int, progress: Callable[[OsemProgress], Any] | None
    ) -> None: ...
    def image(self) -> NDArray[numpy.float32]: ...
    def image_dlpack(self) -> Any:
        """The resident image as a DLPack capsule (no copy; keeps this object alive)."""

    @property
    def image_pointer(self) -> int: ...
    def write_nifti(self, path: str) -> None: ...
    @property
    def device(self) -> int: ...
    @property
    def stream(self) -> int: ...
    @property
    def num_events(self) -> int: ...
    @property
    def phases(self) -> list[dict[str, Any]]: ...

# Only when has_gpu_backend:
class LorStreamer:
    """Host-LOR streamer (see resproj.LorStreamer)."""

    def __init__(
        self, max_chunk: int, is_double: bool, slots: int, copy_threads: int, device: int
    ) -> None: ...
    @property
    def device(self) -> int: ...
    @property
    def max_chunk(self) -> int: ...
    def forward(
        self,
        geometry: ImageGeometry,
        image: Array,
        op: int,
        tof: TofParams | None,
        bins: Array | None,
        sigmas: Array | None,
        center_offsets: Array | None,
        lors: int,
        lor_a: Array,
        lor_b: Array,
        out: Array,
        stream: int,
    ) -> None:
        """Streamed forward projection into host `out`."""

    def back(
        self,
        geometry: ImageGeometry,
        values: Array,
        op: int,
        tof: TofParams | None,
        bins: Array | None,
        sigmas: Array | None,
        center_offsets: Array | None,
        lors: int,
        lor_a: Array,
        lor_b: Array,
        out: Array,
        stream: int,
        zero_out: bool,
    ) -> None:
        """Streamed back projection of host `values`, added into the CUDA image `out`."""
