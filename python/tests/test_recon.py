"""List-mode OSEM (resproj.recon) against OSEM written out with
resproj.forward / back, on the CPU and (when present) the GPU; and the
host-LOR streamer against the resident projections."""

import numpy as np
import pytest

import resproj
from conftest import cuda_ready, have_module
from resproj import listmode, recon, scanner


def tof_params():
    """The TOF of these tests (made per use: no binding object outlives the
    tests at interpreter exit)."""
    return resproj.TofParams(bin_width=10.0, num_bins=11, sigma=8.0)


NT = resproj.NonTof()


def phantom(g):
    """A cylinder of activity 1 with a hot sphere (4)."""
    axes = [o + s * np.arange(n) for n, s, o in zip(g.shape, g.voxel_size, g.origin)]
    x, y, z = np.meshgrid(*axes, indexing="ij")
    img = ((x**2 + y**2) < 22.0**2).astype(np.float32)
    img[(x - 8) ** 2 + y**2 + z**2 < 7.0**2] = 4.0
    return img


def sinogram_pairs(layout):
    """Detector pairs of every bin, int32 (planes, views, radial, 2)."""
    p, v, r = layout.shape
    out = np.empty((p, v, r, 2), np.int32)
    for i in range(p):
        for j in range(v):
            for k in range(r):
                out[i, j, k] = layout.detector_pair(i, j, k)
    return out


class Problem:
    """A small scanner, its subsets, corrections and simulated TOF events
    written to a list-mode file."""

    def __init__(self, tmp_path, num_subsets=4, num_events=20000, tof="tof"):
        rng = np.random.default_rng(7)
        self.scanner = scanner.small_test_scanner()
        self.g = resproj.ImageGeometry.centred((20, 20, 8), (3.0, 3.0, 4.0))
        self.sub = recon.SinogramSubsets(self.scanner, 5, num_subsets, self.g)
        tof = tof_params() if tof == "tof" else tof
        self.tof = tof
        self.det = self.scanner.detector_centres()
        self.x_true = phantom(self.g)
        mu = (0.01 * (self.x_true > 0)).astype(np.float32)
        eff = rng.uniform(0.8, 1.2, self.sub.num_detectors).astype(np.float32)
        self.corr = recon.Corrections(eff, mu, scale=1.5, background=0.2)
        self.pairs_table = sinogram_pairs(self.sub.layout)

        # Events: drawn from the expected counts of every (LOR, TOF bin).
        pairs = self.pairs_table.reshape(-1, 2)
        lors = resproj.DetectorPairs(self.det, pairs)
        m = self.lor_corrections(pairs, resproj.forward(NT, self.g, mu, lors))
        if tof is None:
            mean = m * resproj.forward(NT, self.g, self.x_true, lors) + 0.2
        else:
            y = resproj.forward(resproj.TofSinogram(tof), self.g, self.x_true, lors)
            mean = m[:, None] * y + 0.2 / tof.num_bins
        p = mean.reshape(-1).astype(np.float64)
        k = rng.choice(p.size, size=num_events, p=p / p.sum())
        per_lor = 1 if tof is None else tof.num_bins
        self.pairs = np.ascontiguousarray(pairs[k // per_lor])
        self.bins = (k % per_lor).astype(np.int16)
        self.path = str(tmp_path / "events.lm")
        listmode.write(self.path, self.pairs, self.bins)

    def lor_corrections(self, pairs, mu_integrals):
        eff = self.corr.efficiency
        return (
            np.float32(self.corr.scale)
            * eff[pairs[:, 0]]
            * eff[pairs[:, 1]]
            * np.exp(-mu_integrals)
        ).astype(np.float32)

    def model(self):
        """The total sensitivity image and, per subset, the events' operation,
        LORs and multiplicative corrections (events grouped as the library
        does: event i in subset i mod S), with the additive term per event."""
        g, S = self.g, self.sub.num_subsets
        mu = self.corr.mu.reshape(g.shape)
        # Sensitivity over every LOR of the sinogram, subset by subset.
        lor_subsets = self.sub.lor_subsets()
        sens = np.zeros(g.shape, np.float32)
        for s in range(S):
            src = lor_subsets[s]
            q = resproj.forward(NT, g, mu, src)
            pairs = self.pairs_table[:, lor_subsets.views[s]].reshape(-1, 2)
            m = self.lor_corrections(pairs, q.reshape(-1)).reshape(q.shape)
            resproj.back(NT, g, m, src, out=sens)
        n = len(self.bins)
        subsets = []
        for s in range(S):
            idx = np.arange(s, n, S)
            lors = resproj.DetectorPairs(self.det, np.ascontiguousarray(self.pairs[idx]))
            m = self.lor_corrections(lors.pairs, resproj.forward(NT, g, mu, lors))
            op = (
                NT
                if self.tof is None
                else resproj.TofListmode(self.tof, np.ascontiguousarray(self.bins[idx]))
            )
            subsets.append((op, lors, m))
        a = np.float32(self.corr.background / (self.tof.num_bins if self.tof else 1))
        return sens, subsets, a

    def reference_osem(self, iterations):
        """OSEM written out with resproj.forward / back (float32)."""
        g = self.g
        sens, subsets, a = self.model()
        sens_s = sens * np.float32(1.0 / len(subsets))
        x = np.ones(g.shape, np.float32)
        for _ in range(iterations):
            for op, lors, m in subsets:
                q = resproj.forward(op, g, x, lors)
                expected = m * q + a
                r = np.where(expected > 0, m / np.where(expected > 0, expected, 1), 0)
                back = resproj.back(op, g, r.astype(np.float32), lors)
                x = np.where(sens_s > 0, x * back / np.where(sens_s > 0, sens_s, 1), 0)
                x = x.astype(np.float32)
        return x

    def log_likelihood(self, x):
        """List-mode Poisson log-likelihood: sum over events of log(m A x + a)
        minus the expected total, sens . x (+ the background's, a constant)."""
        sens, subsets, a = self.model()
        L = -float(np.dot(sens.reshape(-1).astype(float), x.reshape(-1)))
        for op, lors, m in subsets:
            q = resproj.forward(op, self.g, x.astype(np.float32), lors)
            L += float(np.log(m.astype(float) * q + a).sum())
        return L

    def error(self, x):
        """Relative L2 error of the normalised image against the phantom."""
        a = x / x.sum()
        b = self.x_true / self.x_true.sum()
        return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    return Problem(tmp_path_factory.mktemp("recon"))


def relative_error(a, b, max_flips=16):
    """Relative L2 error of `a` against `b`, leaving out up to `max_flips`
    values that differ by more than 1e-3 relative (a voxel at a kernel's
    decision boundary may go either way on the GPU); inf for more."""
    a, b = np.asarray(a, float).reshape(-1), np.asarray(b, float).reshape(-1)
    d = np.abs(a - b)
    flip = (d > 1e-3 * np.abs(b) + 1e-30) & (d > 1e-6)
    if flip.sum() > max_flips:
        return np.inf
    keep = ~flip
    den = np.sqrt(np.sum(b[keep] ** 2))
    num = np.sqrt(np.sum(d[keep] ** 2))
    return num / den if den > 0 else num


def assert_close(a, b, rtol):
    scale = float(np.abs(b).max())
    assert float(np.abs(a - b).max()) <= rtol * scale, float(np.abs(a - b).max()) / scale


# ----------------------------------------------------------------------- CPU --


def test_cpu_equals_reference_loop(problem):
    r = recon.ListmodeOsem(
        problem.sub, problem.corr, problem.tof, problem.path, device="cpu"
    )
    assert r.num_events == len(problem.bins)
    assert r.device == "cpu"
    r.run(2)
    x = r.image()
    assert x.shape == problem.g.shape and x.dtype == np.float32
    assert np.all(np.isfinite(x)) and x.min() >= 0 and x.max() > 0
    assert_close(x, problem.reference_osem(2), 1e-4)


def test_cpu_non_tof_equals_reference_loop(tmp_path):
    p = Problem(tmp_path, num_subsets=3, num_events=5000, tof=None)
    r = recon.ListmodeOsem(p.sub, p.corr, None, p.path, device="cpu")
    r.run(2)
    assert_close(r.image(), p.reference_osem(2), 1e-4)


def test_cpu_likelihood_increases_and_phases(problem):
    r = recon.ListmodeOsem(
        problem.sub, problem.corr, problem.tof, problem.path, device="cpu"
    )
    start = r.image()
    seen = []
    likelihood = [problem.log_likelihood(start)]
    for _ in range(3):
        r.run(1, progress=seen.append)
        likelihood.append(problem.log_likelihood(r.image()))
    assert np.all(np.diff(likelihood) > 0), likelihood
    assert problem.error(r.image()) < problem.error(start)
    assert len(seen) == 3 * problem.sub.num_subsets
    assert [(p.iteration, p.subset) for p in seen[:2]] == [(0, 0), (0, 1)]
    keys = [p["key"] for p in r.phases]
    for k in ("read", "group", "corr", "sens", "osem"):
        assert k in keys
    assert keys.count("osem") == 1  # runs accumulate
    osem = next(p for p in r.phases if p["key"] == "osem")
    assert osem["items"] == 3 * r.num_events and osem["item_name"] == "events"
    for p in r.phases:
        assert set(p) == {"key", "name", "seconds", "items", "item_name", "overlapped"}
        assert p["seconds"] >= 0
    text = recon.format_phases(r.phases)
    assert "total" in text and "OSEM iterations" in text


def test_cpu_image_array_is_resident(problem):
    r = recon.ListmodeOsem(
        problem.sub, problem.corr, problem.tof, problem.path, device="cpu"
    )
    view = r.image_array()
    assert view.shape == problem.g.shape
    view[...] = 2.0  # a new start image
    r.run(1)
    assert np.shares_memory(view, r.image_array())
    np.testing.assert_array_equal(view, r.image())
    assert np.from_dlpack(r).shape == problem.g.shape
    del r
    assert np.all(np.isfinite(view))  # the view keeps the reconstruction alive


def test_cpu_progress_may_read_but_not_run(problem):
    r = recon.ListmodeOsem(
        problem.sub, problem.corr, problem.tof, problem.path, device="cpu"
    )
    images = []
    r.run(1, progress=lambda p: images.append(r.image()))
    assert len(images) == problem.sub.num_subsets
    np.testing.assert_array_equal(images[-1], r.image())

    def nested(p):
        r.run(1)

    with pytest.raises(RuntimeError, match="busy"):
        r.run(1, progress=nested)

    class Stop(Exception):
        pass

    def stop(p):
        raise Stop

    with pytest.raises(Stop):
        r.run(1, progress=stop)


def test_cpu_write_nifti(problem, tmp_path):
    r = recon.ListmodeOsem(
        problem.sub, problem.corr, problem.tof, problem.path, device="cpu"
    )
    r.run(1)
    path = tmp_path / "x.nii"
    r.write_nifti(path)
    img, g = resproj.nifti.read(str(path))
    assert g == problem.g
    np.testing.assert_array_equal(img, r.image())
    assert r.phases[-1]["key"] == "nifti"


def test_no_corrections(problem):
    r = recon.ListmodeOsem(problem.sub, None, problem.tof, problem.path, device="cpu")
    r.run(1)
    assert np.all(np.isfinite(r.image()))


def test_bad_arguments(problem, tmp_path):
    sub, corr, tof, path = problem.sub, problem.corr, problem.tof, problem.path
    sc, g = problem.scanner, problem.g
    with pytest.raises(TypeError, match="^scanner"):
        recon.SinogramSubsets("dmi", 5, 4, g)
    with pytest.raises(TypeError, match="^geometry"):
        recon.SinogramSubsets(sc, 5, 4, (20, 20, 8))
    with pytest.raises(TypeError, match="^num_subsets"):
        recon.SinogramSubsets(sc, 5, 2.5, g)
    with pytest.raises(ValueError, match="num_subsets"):
        recon.SinogramSubsets(sc, 5, 0, g)
    with pytest.raises(ValueError, match="num_subsets"):
        recon.SinogramSubsets(sc, 5, 10_000, g)
    with pytest.raises(TypeError, match="^corrections.efficiency"):
        recon.Corrections(efficiency="ones")
    with pytest.raises(ValueError, match="^corrections.scale"):
        recon.Corrections(scale=0.0)
    with pytest.raises(ValueError, match="^corrections.background"):
        recon.Corrections(background=-1.0)
    with pytest.raises(ValueError, match="^corrections.mu"):
        recon.Corrections(mu=np.full(3, np.nan))
    with pytest.raises(TypeError, match="^subsets"):
        recon.ListmodeOsem(sub._impl, corr, tof, path, device="cpu")
    with pytest.raises(TypeError, match="^corrections"):
        recon.ListmodeOsem(sub, {"mu": 0}, tof, path, device="cpu")
    with pytest.raises(TypeError, match="^tof"):
        recon.ListmodeOsem(sub, corr, 11, path, device="cpu")
    with pytest.raises(TypeError, match="^path"):
        recon.ListmodeOsem(sub, corr, tof, 3, device="cpu")
    with pytest.raises(ValueError, match="^device"):
        recon.ListmodeOsem(sub, corr, tof, path, device="tpu")
    with pytest.raises(TypeError, match="^device"):
        recon.ListmodeOsem(sub, corr, tof, path, device=0)
    with pytest.raises(ValueError, match="^corrections.efficiency"):
        recon.ListmodeOsem(
            sub, recon.Corrections(efficiency=np.ones(5)), tof, path, device="cpu"
        )
    with pytest.raises(ValueError, match="^corrections.mu"):
        recon.ListmodeOsem(
            sub, recon.Corrections(mu=np.zeros(7)), tof, path, device="cpu"
        )
    with pytest.raises(OSError, match="missing.lm"):
        recon.ListmodeOsem(sub, corr, tof, str(tmp_path / "missing.lm"), device="cpu")
    # Events outside the TOF bins of `tof`.
    few = resproj.TofParams(bin_width=10.0, num_bins=3, sigma=8.0)
    with pytest.raises(OSError, match="outside the scanner or the TOF bins"):
        recon.ListmodeOsem(sub, corr, few, path, device="cpu")
    # Events outside the scanner.
    bad = str(tmp_path / "bad.lm")
    listmode.write(bad, np.array([[0, 1], [0, 10_000]], np.int32), np.zeros(2, np.int16))
    with pytest.raises(OSError, match="outside the scanner"):
        recon.ListmodeOsem(sub, corr, tof, bad, device="cpu")
    r = recon.ListmodeOsem(sub, corr, tof, path, device="cpu")
    with pytest.raises(ValueError, match="^iterations"):
        r.run(-1)
    with pytest.raises(TypeError, match="^iterations"):
        r.run(1.5)
    with pytest.raises(TypeError, match="^progress"):
        r.run(1, progress=3)
    with pytest.raises(ValueError, match="^like"):
        r.image_array(like="cupy")
    assert not hasattr(r, "__cuda_array_interface__")


def test_without_gpu_backend_cuda_is_refused(problem):
    if resproj.has_gpu_backend:
        pytest.skip("built with the GPU backend")
    with pytest.raises(ValueError, match="^device"):
        recon.ListmodeOsem(
            problem.sub, problem.corr, problem.tof, problem.path, device="cuda"
        )
    r = recon.ListmodeOsem(problem.sub, problem.corr, problem.tof, problem.path)
    assert r.device == "cpu"
    with pytest.raises(RuntimeError, match="GPU backend"):
        resproj.LorStreamer(1000)


# ----------------------------------------------------------------------- GPU --

gpu = pytest.mark.skipif(
    not cuda_ready(), reason="resproj built without the GPU backend, or no CUDA device"
)


def cuda_lib():
    """(module, to_device, to_host) of CuPy or PyTorch, or skip."""
    if have_module("cupy"):
        import cupy

        return cupy, cupy.asarray, cupy.asnumpy
    if have_module("torch"):
        import torch

        if torch.cuda.is_available():
            return (
                torch,
                lambda a: torch.from_numpy(np.ascontiguousarray(a)).to("cuda"),
                lambda x: x.cpu().numpy(),
            )
    pytest.skip("neither CuPy nor PyTorch with CUDA")


@gpu
@pytest.mark.parametrize("kind", ["tof", "non_tof"])
def test_gpu_equals_cpu(tmp_path, kind):
    p = Problem(tmp_path, num_events=20000, tof="tof" if kind == "tof" else None)
    tof = p.tof
    c = recon.ListmodeOsem(p.sub, p.corr, tof, p.path, device="cpu")
    d = recon.ListmodeOsem(p.sub, p.corr, tof, p.path, device="cuda")
    assert d.device == "cuda:0" and d.num_events == c.num_events
    c.run(2)
    d.run(2)
    assert relative_error(d.image(), c.image()) < 1e-4
    keys = [q["key"] for q in d.phases]
    for k in ("read", "group", "reorder", "corr", "sens", "osem"):
        assert k in keys
    assert next(q for q in d.phases if q["key"] == "sens")["overlapped"]
    assert resproj.recon.total_seconds(d.phases) > 0


@gpu
def test_gpu_default_device_and_progress(problem):
    r = recon.ListmodeOsem(problem.sub, problem.corr, problem.tof, problem.path)
    assert r.device == "cuda:0" and isinstance(r.stream, int) and r.stream != 0
    seen = []
    r.run(1, progress=lambda q: seen.append((q.subset, r.image().sum())))
    assert [s for s, _ in seen] == list(range(problem.sub.num_subsets))
    assert seen[-1][1] == pytest.approx(float(r.image().sum()))


@gpu
def test_gpu_image_zero_copy(problem, tmp_path):
    lib, to_device, to_host = cuda_lib()
    r = recon.ListmodeOsem(problem.sub, problem.corr, problem.tof, problem.path)
    r.run(1)
    cai = r.__cuda_array_interface__
    assert cai["shape"] == problem.g.shape and cai["typestr"] == "<f4"
    x = r.image_array()
    assert tuple(x.shape) == problem.g.shape
    ptr = x.data.ptr if lib.__name__ == "cupy" else x.data_ptr()
    assert ptr == cai["data"][0]
    np.testing.assert_array_equal(to_host(x), r.image())
    # A new start image written through the view is used by run.
    x[...] = 1
    lib.cuda.synchronize() if lib.__name__ == "torch" else lib.cuda.Device().synchronize()
    y = recon.ListmodeOsem(problem.sub, problem.corr, problem.tof, problem.path)
    r.run(1)
    y.run(1)
    assert relative_error(r.image(), y.image()) < 1e-4
    r.write_nifti(tmp_path / "x.nii")
    img, _ = resproj.nifti.read(str(tmp_path / "x.nii"))
    np.testing.assert_array_equal(img, r.image())
    del r
    assert np.all(np.isfinite(to_host(x)))  # the view keeps it alive


@gpu
def test_gpu_stream_argument(problem):
    lib, _, _ = cuda_lib()
    s = (
        lib.cuda.Stream(non_blocking=True)
        if lib.__name__ == "cupy"
        else lib.cuda.Stream()
    )
    r = recon.ListmodeOsem(problem.sub, problem.corr, problem.tof, problem.path, s)
    handle = s.ptr if lib.__name__ == "cupy" else s.cuda_stream
    assert r.stream == handle
    r.run(1)
    assert np.all(np.isfinite(r.image()))
    with pytest.raises(ValueError, match="stream"):
        recon.ListmodeOsem(problem.sub, problem.corr, problem.tof, problem.path, 0)


@gpu
def test_gpu_bad_events(problem, tmp_path):
    bad = str(tmp_path / "bad.lm")
    listmode.write(bad, np.array([[0, 1], [0, 10_000]], np.int32), np.zeros(2, np.int16))
    with pytest.raises(OSError, match="outside the scanner"):
        recon.ListmodeOsem(problem.sub, problem.corr, problem.tof, bad, device="cuda")


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["non_tof", "tof_sinogram", "tof_listmode"])
@pytest.mark.parametrize("source", ["lors", "pairs"])
def test_streamer_equals_resident(problem, dtype, kind, source):
    lib, to_device, to_host = cuda_lib()
    rng = np.random.default_rng(3)
    g = problem.g
    image = rng.uniform(0.5, 2.0, g.shape).astype(dtype)
    d_image = to_device(image)
    det = problem.det.astype(dtype)
    pairs = np.ascontiguousarray(problem.pairs[:5000])
    n = len(pairs)
    if source == "lors":
        starts = np.ascontiguousarray(det[pairs[:, 0]])
        ends = np.ascontiguousarray(det[pairs[:, 1]])
        host = resproj.Lors(starts, ends)
        dev = resproj.Lors(to_device(starts), to_device(ends))
    else:
        host = resproj.DetectorPairs(to_device(det), pairs)
        dev = resproj.DetectorPairs(to_device(det), to_device(pairs))
    tof = tof_params()
    bins = rng.integers(0, tof.num_bins, n).astype(np.int16)
    if kind == "non_tof":
        op_h = op_d = NT
    elif kind == "tof_sinogram":
        op_h = op_d = resproj.TofSinogram(tof)
    else:
        op_h = resproj.TofListmode(tof, bins)
        op_d = resproj.TofListmode(tof, to_device(bins))
    st = resproj.LorStreamer(1000, dtype)  # several chunks
    y = st.forward(op_h, g, d_image, host)
    assert isinstance(y, np.ndarray) and y.dtype == dtype
    ref = to_host(resproj.forward(op_d, g, d_image, dev, sync=True))
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    assert relative_error(y, ref, 0) < rtol
    values = rng.uniform(size=y.shape).astype(dtype)
    out = to_device(np.zeros(g.shape, dtype))
    st.back(op_h, g, values, host, out)
    st.back(op_h, g, values, host, out, overwrite=True)  # overwritten, not doubled
    ref_b = to_host(resproj.back(op_d, g, to_device(values), dev, sync=True))
    assert relative_error(to_host(out), ref_b, 0) < rtol


@gpu
def test_streamer_bad_arguments(problem):
    lib, to_device, _ = cuda_lib()
    g = problem.g
    d_image = to_device(np.ones(g.shape, np.float32))
    pairs = np.ascontiguousarray(problem.pairs[:10])
    det = problem.det
    st = resproj.LorStreamer(100)
    with pytest.raises(TypeError, match="^dtype"):
        resproj.LorStreamer(100, np.int32)
    with pytest.raises(ValueError, match="^max_chunk"):
        resproj.LorStreamer(0)
    with pytest.raises(ValueError, match="^image"):
        st.forward(
            NT,
            g,
            np.ones(g.shape, np.float32),
            resproj.DetectorPairs(to_device(det), pairs),
        )
    with pytest.raises(TypeError, match="^image"):
        st.forward(
            NT,
            g,
            to_device(np.ones(g.shape)),
            resproj.DetectorPairs(to_device(det), pairs),
        )
    with pytest.raises(ValueError, match="^lors.detectors"):
        st.forward(NT, g, d_image, resproj.DetectorPairs(det, pairs))
    with pytest.raises(ValueError, match="^lors.pairs"):
        st.forward(
            NT, g, d_image, resproj.DetectorPairs(to_device(det), to_device(pairs))
        )
    bad = pairs.copy()
    bad[3, 1] = len(det)
    with pytest.raises(ValueError, match="^lors.pairs: pair 3"):
        st.forward(NT, g, d_image, resproj.DetectorPairs(to_device(det), bad))
    with pytest.raises(TypeError, match="^lors"):
        st.forward(
            NT,
            g,
            d_image,
            scanner.SinogramSubsets(problem.scanner, problem.sub.layout, 2)[0],
        )
    with pytest.raises(ValueError, match="^out"):
        st.forward(
            NT,
            g,
            d_image,
            resproj.DetectorPairs(to_device(det), pairs),
            out=np.empty(3, np.float32),
        )


@gpu
def test_gpu_stream_object_outlives_its_last_user(problem):
    # The caller's stream object may go before the reconstruction: it is
    # kept until the reconstruction has freed its memory on it.
    lib, _, _ = cuda_lib()
    s = lib.cuda.Stream(non_blocking=True) if lib.__name__ == "cupy" else lib.cuda.Stream()
    r = recon.ListmodeOsem(problem.sub, problem.corr, problem.tof, problem.path, s)
    r.run(1)
    del s
    image = r.image()
    del r
    assert np.all(np.isfinite(image))
    fresh = recon.ListmodeOsem(problem.sub, problem.corr, problem.tof, problem.path)
    fresh.run(1)
    assert relative_error(fresh.image(), image) < 1e-4


def test_cpu_sensitivity_is_the_model(problem):
    sens = problem.model()[0]
    s = recon.sensitivity(problem.sub, problem.corr, device="cpu")
    assert s.shape == problem.g.shape and s.dtype == np.float32
    assert relative_error(s, sens) < 1e-5
    out = np.full(problem.g.shape, -1, np.float32)
    assert recon.sensitivity(problem.sub, problem.corr, out) is out
    assert relative_error(out, s) < 1e-6  # threads add in another order
    with pytest.raises(ValueError, match="out: shape"):
        recon.sensitivity(problem.sub, problem.corr, np.zeros((3, 3, 3), np.float32))
    with pytest.raises(TypeError, match="subsets"):
        recon.sensitivity(problem.sub._impl, problem.corr)
    with pytest.raises(TypeError, match="corrections"):
        recon.sensitivity(problem.sub, {"mu": 0})


@gpu
def test_gpu_sensitivity_equals_cpu(problem):
    lib, to_device, to_host = cuda_lib()
    c = recon.sensitivity(problem.sub, problem.corr, device="cpu")
    d = recon.sensitivity(problem.sub, problem.corr, device="cuda", like=lib.__name__)
    assert tuple(d.shape) == problem.g.shape
    assert relative_error(to_host(d), c) < 1e-4
    out = to_device(np.full(problem.g.shape, -1, np.float32))
    assert recon.sensitivity(problem.sub, problem.corr, out) is out
    assert relative_error(to_host(out), c) < 1e-4
    with pytest.raises(ValueError, match="out: shape"):
        recon.sensitivity(problem.sub, problem.corr, to_device(np.zeros((3, 3, 3), np.float32)))
    wrong = to_device(np.zeros(problem.g.shape, np.float64))
    with pytest.raises(TypeError, match="out: dtype float64"):
        recon.sensitivity(problem.sub, problem.corr, wrong)
    assert np.all(to_host(wrong) == 0)


@gpu
def test_read_to_device_equals_the_host_reader(problem, tmp_path):
    lib, _, to_host = cuda_lib()
    pairs, bins = listmode.read_to_device(
        problem.path, problem.sub.num_detectors, problem.tof.num_bins, like=lib.__name__
    )
    host_pairs, host_bins = listmode.read(problem.path)
    assert tuple(pairs.shape) == host_pairs.shape and tuple(bins.shape) == host_bins.shape
    np.testing.assert_array_equal(to_host(pairs), host_pairs)
    np.testing.assert_array_equal(to_host(bins), host_bins)
    # The arrays own the memory: usable as a projector's LOR source.
    del problem.pairs
    assert int(to_host(pairs).max()) < problem.sub.num_detectors
    bad = str(tmp_path / "bad.lm")
    listmode.write(bad, np.array([[0, 1], [0, 10_000]], np.int32), np.zeros(2, np.int16))
    with pytest.raises(OSError, match="outside the scanner"):
        listmode.read_to_device(bad, problem.sub.num_detectors, problem.tof.num_bins)


def small_tb_scanner(units=4, rings=5):
    """12 sides of 4 crystals, `units` units of `rings` rings 2.85 mm apart
    with 4 mm gaps, centred."""
    r = np.arange(units * rings)
    z = 2.85 * r + 4.0 * (r // rings)
    z -= 0.5 * (z[0] + z[-1])
    return scanner.PolygonScanner(12, 4, 4 * 2.85 / (2 * np.tan(np.pi / 12)), 2.85, list(z))


def test_all_lor_sensitivity_equals_lor_by_lor_projections():
    """Every LOR (distinct transaxial crystals, every ring pair) forward
    projected through mu and back-projected with exp(-attenuation) by
    resproj.forward / back gives the same image."""
    s = small_tb_scanner()
    g = resproj.ImageGeometry.centred((12, 12, 24), (2.85, 2.85, 2.85))
    axes = [o + v * np.arange(n) for n, v, o in zip(g.shape, g.voxel_size, g.origin)]
    x, y, z = np.meshgrid(*axes, indexing="ij")
    mu = (0.05 * (((x / 12) ** 2 + (y / 8) ** 2 <= 1) & (np.abs(z) <= 20))).astype(np.float32)

    image, stats = recon.all_lor_sensitivity(s, g, mu, device="cpu", threads=2, stats=True)
    assert image.shape == tuple(g.shape) and image.dtype == np.float32

    det = s.detector_centres().reshape(s.num_rings, s.crystals_per_ring, 3)
    c1, c2 = np.triu_indices(s.crystals_per_ring, 1)
    r1, r2 = np.meshgrid(np.arange(s.num_rings), np.arange(s.num_rings), indexing="ij")
    starts = det[r1.ravel()[:, None], c1[None, :]].reshape(-1, 3)
    ends = det[r2.ravel()[:, None], c2[None, :]].reshape(-1, 3)
    lors = resproj.Lors(np.ascontiguousarray(starts), np.ascontiguousarray(ends))
    att = resproj.forward(NT, g, mu, lors)
    want = resproj.back(NT, g, np.exp(-att.astype(np.float64)).astype(np.float32), lors)
    assert stats["lors"] == lors.count
    assert stats["mirror_flips"] == 3
    assert stats["attenuation_walks"] + stats["scatter_walks"] < lors.count / 4
    np.testing.assert_allclose(image, want, rtol=0, atol=2e-5 * want.max())

    plain = recon.all_lor_sensitivity(s, g, device="cpu")
    assert plain.max() > image.max()
    out = np.full(g.shape, -1, np.float32)
    assert recon.all_lor_sensitivity(s, g, mu, out) is out
    np.testing.assert_array_equal(out, image)


@gpu
def test_gpu_all_lor_sensitivity_equals_cpu():
    lib, to_device, to_host = cuda_lib()
    s = small_tb_scanner()
    g = resproj.ImageGeometry.centred((12, 12, 24), (2.85, 2.85, 2.85))
    mu = np.full(g.shape, 0.01, np.float32)
    want, want_stats = recon.all_lor_sensitivity(s, g, mu, device="cpu", stats=True)
    got, stats = recon.all_lor_sensitivity(
        s, g, mu, device="cuda", like=lib.__name__, stats=True
    )
    assert tuple(got.shape) == g.shape
    assert stats["lors"] == want_stats["lors"]
    assert relative_error(to_host(got), want) < 1e-5
    out = to_device(np.full(g.shape, -1, np.float32))
    assert recon.all_lor_sensitivity(s, g, None, out) is out
    assert relative_error(to_host(out), recon.all_lor_sensitivity(s, g, device="cpu")) < 1e-5
    wrong = to_device(np.zeros(g.shape, np.float64))
    with pytest.raises(TypeError, match="out: dtype float64"):
        recon.all_lor_sensitivity(s, g, mu, wrong)
    with pytest.raises(ValueError, match="out: shape"):
        recon.all_lor_sensitivity(s, g, mu, to_device(np.zeros((3, 3, 3), np.float32)))
    assert np.all(to_host(wrong) == 0)


def test_all_lor_sensitivity_rejects_bad_input():
    s = small_tb_scanner()
    g = resproj.ImageGeometry.centred((12, 12, 24), (2.85, 2.85, 2.85))
    with pytest.raises(TypeError, match="scanner"):
        recon.all_lor_sensitivity("tb", g)
    with pytest.raises(TypeError, match="geometry"):
        recon.all_lor_sensitivity(s, (12, 12, 24))
    with pytest.raises(ValueError, match="mu"):
        recon.all_lor_sensitivity(s, g, np.zeros((12, 12, 23), np.float32))
    with pytest.raises(ValueError, match="mu"):
        recon.all_lor_sensitivity(s, g, np.full(g.shape, np.nan, np.float32))
    with pytest.raises(ValueError, match="mu"):
        recon.all_lor_sensitivity(s, g, np.full(g.shape, -1.0, np.float32))
    with pytest.raises(ValueError, match="threads"):
        recon.all_lor_sensitivity(s, g, threads=-1)
    with pytest.raises(ValueError, match="out: shape"):
        recon.all_lor_sensitivity(s, g, None, np.zeros((3, 3, 3), np.float32))
    with pytest.raises(TypeError, match="device"):
        recon.all_lor_sensitivity(s, g, device=0)
    short = resproj.ImageGeometry.centred((12, 12, 10), (2.85, 2.85, 2.85))
    with pytest.raises(ValueError, match="ring 0"):
        recon.all_lor_sensitivity(s, short, device="cpu")
