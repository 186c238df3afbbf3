"""The projectors on CUDA arrays (CuPy, PyTorch): the GPU backend, without
copies, on the caller's stream. Skipped without the GPU backend or a device."""

import numpy as np
import pytest

import resproj
from conftest import cuda_ready, random_lors

pytestmark = pytest.mark.skipif(
    not cuda_ready(), reason="resproj built without the GPU backend, or no CUDA device"
)

NT = resproj.NonTof()


class CupyLib:
    name = "cupy"

    def __init__(self):
        import cupy

        self.cp = cupy

    def dev(self, a, device=0):
        with self.cp.cuda.Device(device):
            return self.cp.asarray(a)

    def host(self, x):
        return self.cp.asnumpy(x)

    def ptr(self, x):
        return x.data.ptr

    def empty(self, shape, dtype):
        return self.cp.empty(shape, dtype)

    def new_stream(self):
        return self.cp.cuda.Stream(non_blocking=True)

    def using(self, stream):
        return stream

    def device_of(self, x):
        return x.device.id


class TorchLib:
    name = "torch"

    def __init__(self):
        import torch

        if not torch.cuda.is_available():
            pytest.skip("PyTorch without CUDA")
        self.torch = torch

    def dev(self, a, device=0):
        return self.torch.from_numpy(np.ascontiguousarray(a)).to(f"cuda:{device}")

    def host(self, x):
        return x.detach().cpu().numpy()

    def ptr(self, x):
        return x.data_ptr()

    def empty(self, shape, dtype):
        return self.torch.empty(
            shape, dtype=getattr(self.torch, np.dtype(dtype).name), device="cuda"
        )

    def new_stream(self):
        return self.torch.cuda.Stream()

    def using(self, stream):
        return self.torch.cuda.stream(stream)

    def device_of(self, x):
        return x.device.index


@pytest.fixture(params=["cupy", "torch"])
def lib(request):
    pytest.importorskip(request.param)
    return CupyLib() if request.param == "cupy" else TorchLib()


def _problem(dtype, n=500, seed=5):
    rng = np.random.default_rng(seed)
    g = resproj.ImageGeometry((24, 20, 12), (2.0, 2.5, 3.0), origin=(-23.0, -24.0, -16.5))
    image = rng.uniform(0.5, 2.0, size=g.shape).astype(dtype)
    starts, ends = random_lors(rng, n, radius=60.0, dtype=dtype)
    tof = resproj.TofParams(bin_width=6.0, num_bins=13, sigma=5.0)
    bins = rng.integers(-1, 14, size=n).astype(np.int16)
    det = np.concatenate(random_lors(rng, 40, radius=60.0, dtype=dtype))
    pairs = rng.integers(0, 80, size=(n, 2)).astype(np.int32)
    return g, image, starts, ends, tof, bins, det, pairs, rng


def assert_close(a, ref, tol):
    """The library's accuracy contract: norm-relative error below `tol`
    (docs/projection.md, "Accuracy")."""
    a = np.asarray(a, np.float64)
    ref = np.asarray(ref, np.float64)
    assert a.shape == ref.shape
    assert np.linalg.norm(a - ref) <= tol * np.linalg.norm(ref)


F32 = 2e-5  # float32, TOF included
F64 = 1e-12


def _ops(tof, bins_like):
    return {
        "non_tof": NT,
        "tof_sinogram": resproj.TofSinogram(tof),
        "tof_listmode": resproj.TofListmode(tof, bins_like),
    }


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("operation", ["non_tof", "tof_sinogram", "tof_listmode"])
@pytest.mark.parametrize("source", ["end_points", "detector_pairs"])
def test_same_values_as_the_cpu_backend(lib, dtype, operation, source):
    g, image, starts, ends, tof, bins, det, pairs, rng = _problem(dtype)
    if source == "end_points":
        cpu_lors = resproj.Lors(starts, ends)
        gpu_lors = resproj.Lors(lib.dev(starts), lib.dev(ends))
    else:
        cpu_lors = resproj.DetectorPairs(det, pairs)
        gpu_lors = resproj.DetectorPairs(lib.dev(det), lib.dev(pairs))
    cpu_op = _ops(tof, bins)[operation]
    gpu_op = _ops(tof, lib.dev(bins))[operation]
    y_cpu = resproj.forward(cpu_op, g, image, cpu_lors)
    y_gpu = resproj.forward(gpu_op, g, lib.dev(image), gpu_lors, sync=True)
    assert type(y_gpu).__module__.split(".")[0] == lib.name
    tol = F64 if dtype == np.float64 else F32
    assert_close(lib.host(y_gpu), y_cpu, tol)
    values = rng.uniform(size=y_cpu.shape).astype(dtype)
    x_cpu = resproj.back(cpu_op, g, values, cpu_lors)
    x_gpu = resproj.back(gpu_op, g, lib.dev(values), gpu_lors, sync=True)
    assert_close(lib.host(x_gpu), x_cpu, tol)


def test_outputs_are_the_callers_memory(lib):
    g, image, starts, ends, _, _, _, _, rng = _problem(np.float32)
    lors = resproj.Lors(lib.dev(starts), lib.dev(ends))
    d_image = lib.dev(image)
    out = lib.empty(lors.shape, np.float32)
    p = lib.ptr(out)
    r = resproj.forward(NT, g, d_image, lors, out=out, sync=True)
    assert r is out and lib.ptr(r) == p
    ref = resproj.forward(NT, g, image, resproj.Lors(starts, ends))
    assert_close(lib.host(out), ref, F32)
    # Back projection adds into the caller's image, in place.
    x0 = rng.uniform(size=g.shape).astype(np.float32)
    img_out = lib.dev(x0)
    p = lib.ptr(img_out)
    r = resproj.back(NT, g, out, lors, out=img_out, sync=True)
    assert r is img_out and lib.ptr(r) == p
    expected = x0 + resproj.back(NT, g, ref, resproj.Lors(starts, ends))
    assert_close(lib.host(img_out), expected, F32)


def test_work_is_ordered_on_a_non_default_stream(lib):
    g, image, starts, ends, tof, _, _, _, _ = _problem(np.float32, n=20000)
    ref = resproj.forward(
        resproj.TofSinogram(tof), g, 2 * image, resproj.Lors(starts, ends)
    )
    s = lib.new_stream()
    with lib.using(s):
        # Queued on s: the upload, the doubling, the projection; nothing syncs.
        d_image = lib.dev(image) * 2
        lors = resproj.Lors(lib.dev(starts), lib.dev(ends))
        y = resproj.forward(resproj.TofSinogram(tof), g, d_image, lors)
    s.synchronize()
    assert_close(lib.host(y), ref, F32)
    # An explicit stream argument, outside the library's stream context.
    out = lib.empty(y.shape, np.float32)
    resproj.forward(resproj.TofSinogram(tof), g, d_image, lors, out=out, stream=s)
    s.synchronize()
    assert_close(lib.host(out), ref, F32)


def test_the_legacy_default_stream_is_ordered_without_a_host_sync(lib):
    # PyTorch's and CuPy's default stream is the legacy stream (handle 0), which
    # the library rejects: resproj orders its work after and before it.
    g, image, starts, ends, _, _, _, _, _ = _problem(np.float32, n=50000)
    lors = resproj.Lors(lib.dev(starts), lib.dev(ends))
    ref = resproj.forward(NT, g, 3 * image, resproj.Lors(starts, ends))
    for _ in range(3):
        d_image = lib.dev(image) * 3  # queued on the default stream
        y = resproj.forward(NT, g, d_image, lors)  # must wait for it
        z = y * 1  # queued on the default stream: must wait for the projection
        assert_close(lib.host(z), ref, F32)


def test_mixed_host_and_device_arrays_are_rejected(lib):
    g, image, starts, ends, _, _, _, _, _ = _problem(np.float32)
    d_image = lib.dev(image)
    with pytest.raises(
        ValueError, match="lors.starts: on cpu, but the image is on cuda:0"
    ):
        resproj.forward(NT, g, d_image, resproj.Lors(starts, ends))
    out = np.full(len(starts), -1.0, np.float32)
    with pytest.raises(ValueError, match="out: on cpu"):
        resproj.forward(
            NT, g, d_image, resproj.Lors(lib.dev(starts), lib.dev(ends)), out=out
        )
    np.testing.assert_array_equal(out, -1.0)
    with pytest.raises(
        ValueError, match="lors.starts: on cuda:0, but the image is on cpu"
    ):
        resproj.forward(NT, g, image, resproj.Lors(lib.dev(starts), lib.dev(ends)))


def test_device_pairs_are_checked_once(lib):
    pairs = np.zeros((10, 2), np.int32)
    pairs[4, 0] = 12
    with pytest.raises(
        ValueError, match="lors.pairs: detector 12 is outside the table of 10"
    ):
        resproj.DetectorPairs(lib.dev(np.zeros((10, 3), np.float32)), lib.dev(pairs))


def test_sinogram_subsets_on_the_device(lib):
    from resproj import scanner

    sc = scanner.small_test_scanner()
    layout = scanner.span1_sinogram(sc, radial_trim=5)
    g = resproj.ImageGeometry.centred((20, 20, 8), (3.0, 3.0, 4.0))
    image = np.random.default_rng(2).uniform(size=g.shape).astype(np.float32)
    d_image = lib.dev(image)
    cpu = scanner.SinogramSubsets(sc, layout, 4)
    gpu = scanner.SinogramSubsets(sc, layout, 4, like=d_image)
    assert type(gpu.detectors).__module__.split(".")[0] == lib.name
    for s in range(4):
        ref = resproj.forward(NT, g, image, cpu[s])
        y = resproj.forward(NT, g, d_image, gpu[s], sync=True)
        assert_close(lib.host(y), ref, F32)


def test_a_second_device(lib):
    if resproj.cuda_device_count() < 2:
        pytest.skip("one CUDA device")
    g, image, starts, ends, _, _, _, _, _ = _problem(np.float32)
    lors = resproj.Lors(lib.dev(starts, 1), lib.dev(ends, 1))
    y = resproj.forward(NT, g, lib.dev(image, 1), lors, sync=True)
    assert lib.device_of(y) == 1
    ref = resproj.forward(NT, g, image, resproj.Lors(starts, ends))
    assert_close(lib.host(y), ref, F32)
