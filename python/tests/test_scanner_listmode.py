"""Sinogram subsets as LOR sources, and list-mode files."""

import numpy as np
import pytest

import resproj
from resproj import listmode, scanner

NT = resproj.NonTof()


@pytest.fixture
def small():
    sc = scanner.small_test_scanner()
    layout = scanner.span1_sinogram(sc, radial_trim=5)
    g = resproj.ImageGeometry.centred((20, 20, 8), (3.0, 3.0, 4.0))
    return sc, layout, g


def test_scanner_tables():
    sc = scanner.dmi()
    assert sc.num_rings == 36 and sc.crystals_per_ring == 544
    det = sc.detector_centres()
    assert det.shape == (36 * 544, 3) and det.dtype == np.float32
    layout = scanner.dmi_sinogram()
    assert layout.shape == (1296, 272, 415)
    assert layout.plane_table().shape == (1296, 2)
    np.testing.assert_array_equal(layout.subset_views(0, 34), np.arange(0, 272, 34))
    tof = scanner.dmi_tof()
    assert tof.num_bins == 29


def test_sinogram_subset_equals_its_detector_pairs(small, rng):
    sc, layout, g = small
    subsets = scanner.SinogramSubsets(sc, layout, 4)
    assert len(subsets) == 4
    s = 1
    source = subsets[s]
    views = subsets.views[s]
    assert source.shape == (layout.num_planes, len(views), layout.num_radial)
    pairs = np.array(
        [
            layout.detector_pair(p, int(v), r)
            for p in range(layout.num_planes)
            for v in views
            for r in range(layout.num_radial)
        ],
        np.int32,
    )
    image = rng.uniform(size=g.shape).astype(np.float32)
    y = resproj.forward(NT, g, image, source)
    assert y.shape == source.shape
    ref = resproj.forward(NT, g, image, resproj.DetectorPairs(subsets.detectors, pairs))
    np.testing.assert_array_equal(y.reshape(-1), ref)
    assert y.max() > 0
    # Back projection is the transpose here too.
    v = rng.uniform(size=y.shape).astype(np.float32)
    x = resproj.back(NT, g, v, source)
    np.testing.assert_allclose(
        float(np.vdot(y.astype(float), v)),
        float(np.vdot(image.astype(float), x)),
        rtol=1e-5,
    )


def test_split_and_join_a_whole_sinogram(small, rng):
    sc, layout, g = small
    subsets = scanner.SinogramSubsets(sc, layout, 3)
    image = rng.uniform(size=g.shape).astype(np.float32)
    whole = resproj.forward(
        NT,
        g,
        image,
        scanner.SinogramSubset(
            layout,
            subsets.detectors,
            subsets.planes,
            np.arange(layout.num_views, dtype=np.int32),
        ),
    )
    parts = subsets.split(whole)
    for s, part in enumerate(parts):
        np.testing.assert_array_equal(part, resproj.forward(NT, g, image, subsets[s]))
    np.testing.assert_array_equal(subsets.join(parts, np.zeros_like(whole)), whole)


def test_sinogram_subset_with_tof_and_plane_range(small, rng):
    sc, layout, g = small
    subsets = scanner.SinogramSubsets(sc, layout, 4, like=np.zeros(1))
    assert subsets.detectors.dtype == np.float64
    tof = resproj.TofParams(bin_width=8.0, num_bins=9, sigma=6.0)
    part = scanner.SinogramSubset(
        layout,
        subsets.detectors,
        subsets.planes,
        subsets.views[0],
        first_plane=4,
        num_planes=3,
    )
    image = rng.uniform(size=g.shape)
    y = resproj.forward(resproj.TofSinogram(tof), g, image, part)
    assert y.shape == (3, len(subsets.views[0]), layout.num_radial, 9)
    full = resproj.forward(resproj.TofSinogram(tof), g, image, subsets[0])
    np.testing.assert_array_equal(y, full[4:7])


def test_sinogram_subset_rejects_bad_ranges(small):
    sc, layout, _ = small
    subsets = scanner.SinogramSubsets(sc, layout, 4)
    with pytest.raises(ValueError, match="num_planes"):
        scanner.SinogramSubset(
            layout,
            subsets.detectors,
            subsets.planes,
            subsets.views[0],
            first_plane=10,
            num_planes=10,
        )
    with pytest.raises(ValueError, match=r"lors.views: values must lie in \[0, 24\)"):
        scanner.SinogramSubset(
            layout, subsets.detectors, subsets.planes, np.array([0, 24], np.int32)
        )
    with pytest.raises(ValueError, match="layout: made for another scanner"):
        scanner.SinogramSubsets(scanner.dmi(), layout, 4)


def test_listmode_file_round_trip(tmp_path, rng):
    path = str(tmp_path / "events.lm")
    pairs = rng.integers(0, 1000, size=(50, 2)).astype(np.int32)
    bins = rng.integers(-3, 30, size=50).astype(np.int16)
    listmode.write(path, pairs, bins)
    listmode.write(path, pairs[:5], bins[:5], append=True)
    assert listmode.count(path) == 55
    p, b = listmode.read(path)
    np.testing.assert_array_equal(p[:50], pairs)
    np.testing.assert_array_equal(b[5:50], bins[5:])
    p, b = listmode.read(path, first=50, count=5)
    np.testing.assert_array_equal(p, pairs[:5])
    assert listmode.validate(pairs, 1000, bins, 29) == (
        int(((bins < 0) | (bins >= 29)).sum()),
        int(np.argmax((bins < 0) | (bins >= 29))),
    )
    with open(path, "ab") as f:
        f.write(b"123")
    with pytest.raises(OSError, match="not a multiple of the 10-byte"):
        listmode.read(path)
    with pytest.raises(OSError):
        listmode.count(str(tmp_path / "missing.lm"))
    with pytest.raises(TypeError, match="pairs: dtype int64"):
        listmode.write(path, pairs.astype(np.int64))


def test_listmode_events_project_like_their_pairs(small, rng, tmp_path):
    sc, layout, g = small
    det = sc.detector_centres()
    n = 400
    pairs = np.stack([rng.integers(0, 96, n), rng.integers(96, 192, n)], axis=1).astype(
        np.int32
    )
    tof = resproj.TofParams(bin_width=8.0, num_bins=9, sigma=6.0)
    bins = rng.integers(0, 9, n).astype(np.int16)
    path = str(tmp_path / "e.lm")
    listmode.write(path, pairs, bins)
    p, b = listmode.read(path)
    image = rng.uniform(size=g.shape).astype(np.float32)
    lors = resproj.DetectorPairs(det, p)
    lm = resproj.forward(resproj.TofListmode(tof, b), g, image, lors)
    sino = resproj.forward(resproj.TofSinogram(tof), g, image, lors)
    np.testing.assert_allclose(lm, sino[np.arange(n), bins], rtol=1e-6, atol=1e-6)
