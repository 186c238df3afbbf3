"""The projectors on host (NumPy) arrays: the CPU backend."""

import numpy as np
import pytest

import resproj
from conftest import random_lors

NT = resproj.NonTof()


# ------------------------------------------------------------------ values --


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 1e-6)])
def test_chord_lengths_on_a_uniform_image(dtype, rtol):
    # Box [-10, 10] x [-9, 9] x [-10, 10]; every LOR crosses the two faces of
    # its principal axis with its samples inside the other two: the value is
    # n_d * s_d / |cos theta_d| (docs/projection.md, "Consequences").
    g = resproj.ImageGeometry.centred((10, 12, 8), (2.0, 1.5, 2.5))
    image = np.ones(g.shape, dtype)
    starts = np.array(
        [[-30, 0.3, 0.2], [0.1, -30, -0.4], [0.5, -0.7, -30], [-30, -2, 1]], dtype
    )
    ends = np.array(
        [[30, 0.3, 0.2], [0.1, 30, -0.4], [0.5, -0.7, 30], [30, 4, -1]], dtype
    )
    d = np.array([60.0, 6.0, -2.0])
    expected = [20.0, 18.0, 20.0, 20.0 * np.linalg.norm(d) / 60.0]
    y = resproj.forward(NT, g, image, resproj.Lors(starts, ends))
    assert y.dtype == dtype and y.shape == (4,)
    np.testing.assert_allclose(y, expected, rtol=rtol)


def test_lors_that_miss_or_are_degenerate_give_zero():
    g = resproj.ImageGeometry.centred((4, 4, 4), (1.0, 1.0, 1.0))
    image = np.ones(g.shape)
    starts = np.array([[-10, 5, 0], [1, 1, 1], [np.nan, 0, 0]], float)
    ends = np.array([[10, 5, 0], [1, 1, 1], [3, 0, 0]], float)
    y = resproj.forward(NT, g, image, resproj.Lors(starts, ends))
    np.testing.assert_array_equal(y, [0.0, 0.0, 0.0])


def _adjointness(op, g, lors, rng, dtype=np.float64):
    x = rng.uniform(0, 1, size=g.shape).astype(dtype)
    y = rng.uniform(0, 1, size=op.values_shape(lors.shape)).astype(dtype)
    ax = resproj.forward(op, g, x, lors)
    aty = resproj.back(op, g, y, lors)
    lhs, rhs = float(np.vdot(ax, y)), float(np.vdot(x, aty))
    assert lhs > 0
    assert abs(lhs - rhs) <= 1e-10 * abs(lhs)


def _pairs_problem(rng, n=300, nd=60):
    detectors = np.concatenate(random_lors(rng, nd // 2, radius=30.0))
    pairs = rng.integers(0, nd, size=(n, 2)).astype(np.int32)
    pairs[:, 1] = (pairs[:, 0] + 1 + pairs[:, 1] % (nd - 1)) % nd
    return resproj.DetectorPairs(detectors, pairs)


@pytest.mark.parametrize("operation", ["non_tof", "tof_sinogram", "tof_listmode"])
@pytest.mark.parametrize("source", ["end_points", "detector_pairs"])
def test_back_is_the_adjoint(problem, rng, operation, source):
    g, _, lors, tof = problem
    if source == "detector_pairs":
        lors = _pairs_problem(rng)
    n = lors.shape[0]
    op = {
        "non_tof": NT,
        "tof_sinogram": resproj.TofSinogram(tof),
        "tof_listmode": resproj.TofListmode(
            tof, rng.integers(0, tof.num_bins, size=n).astype(np.int16)
        ),
    }[operation]
    _adjointness(op, g, lors, rng)


def test_tof_listmode_equals_the_sinogram_at_the_bin(problem, rng):
    g, image, lors, tof = problem
    n = lors.shape[0]
    bins = rng.integers(-2, tof.num_bins + 2, size=n).astype(np.int16)
    sino = resproj.forward(resproj.TofSinogram(tof), g, image, lors)
    lm = resproj.forward(resproj.TofListmode(tof, bins), g, image, lors)
    inside = (bins >= 0) & (bins < tof.num_bins)
    expected = np.where(inside, sino[np.arange(n), np.clip(bins, 0, tof.num_bins - 1)], 0)
    np.testing.assert_allclose(lm, expected, rtol=1e-12, atol=0)
    assert inside.any() and (~inside).any()


def test_tof_bins_sum_to_about_the_non_tof_value(problem):
    g, image, lors, _ = problem
    wide = resproj.TofParams(bin_width=5.0, num_bins=31, sigma=3.0)
    sino = resproj.forward(resproj.TofSinogram(wide), g, image, lors)
    nt = resproj.forward(NT, g, image, lors)
    np.testing.assert_allclose(sino.sum(axis=1), nt, rtol=2e-2, atol=1e-9)


def test_per_lor_sigmas_equal_the_scalar_sigma(problem):
    g, image, lors, tof = problem
    n = lors.shape[0]
    ref = resproj.forward(resproj.TofSinogram(tof), g, image, lors)
    per = resproj.TofSinogram(
        tof, sigmas=np.full(n, tof.sigma), center_offsets=np.zeros(n)
    )
    np.testing.assert_array_equal(resproj.forward(per, g, image, lors), ref)


def test_float32_and_float64_agree(problem):
    g, image, lors, tof = problem
    for op in (NT, resproj.TofSinogram(tof)):
        y64 = resproj.forward(op, g, image, lors)
        lors32 = resproj.Lors(
            lors.starts.astype(np.float32), lors.ends.astype(np.float32)
        )
        y32 = resproj.forward(op, g, image.astype(np.float32), lors32)
        np.testing.assert_allclose(y32, y64, rtol=1e-4, atol=1e-4 * y64.max())


# ------------------------------------------------------ outputs, in place --


def test_out_is_written_in_place(problem):
    g, image, lors, _ = problem
    n = lors.shape[0]
    big = np.full((n + 10,), -7.0)
    out = big[5 : 5 + n]  # a C-contiguous view into `big`
    r = resproj.forward(NT, g, image, lors, out=out)
    assert r is out
    np.testing.assert_array_equal(big[5 : 5 + n], resproj.forward(NT, g, image, lors))
    np.testing.assert_array_equal(big[:5], -7.0)
    np.testing.assert_array_equal(big[5 + n :], -7.0)


def test_back_accumulates_into_out(problem, rng):
    g, _, lors, _ = problem
    y = rng.uniform(size=lors.shape)
    x0 = rng.uniform(size=g.shape)
    out = x0.copy()
    r = resproj.back(NT, g, y, lors, out=out)
    assert r is out
    np.testing.assert_allclose(out, x0 + resproj.back(NT, g, y, lors), rtol=1e-13)
    r = resproj.back(NT, g, y, lors, out=out, overwrite=True)
    np.testing.assert_allclose(out, resproj.back(NT, g, y, lors), rtol=1e-13)


def test_flat_arrays_of_the_right_size_are_accepted(problem):
    g, image, lors, tof = problem
    op = resproj.TofSinogram(tof)
    ref = resproj.forward(op, g, image, lors)
    flat = np.empty(ref.size)
    resproj.forward(op, g, image.reshape(-1), lors, out=flat)
    np.testing.assert_array_equal(flat, ref.reshape(-1))


# ------------------------------------------------------------- bad input --


def _raises(exc, match, f):
    with pytest.raises(exc, match=match):
        f()


@pytest.fixture
def sentinel_out(problem):
    _, _, lors, _ = problem
    return np.full(lors.shape, -3.0)


@pytest.mark.parametrize(
    "case,exc,match",
    [
        ("image_dtype", TypeError, "image: dtype int32"),
        ("image_list", TypeError, "image: expected an array"),
        ("image_shape", ValueError, r"image: shape \(11, 9, 7\)"),
        ("image_fortran", ValueError, "image: not C-contiguous"),
        ("starts_dtype", TypeError, "lors.starts: dtype float32, expected float64"),
        ("out_dtype", TypeError, "out: dtype float32"),
        ("out_shape", ValueError, "out: shape"),
        ("out_readonly", ValueError, "out: read-only"),
        ("geometry", TypeError, "geometry: expected resproj.ImageGeometry"),
        ("op", TypeError, "op: expected"),
        ("lors", TypeError, "lors: expected"),
        ("bins_dtype", TypeError, "op.bins: dtype int32, expected int16"),
        ("bins_shape", ValueError, "op.bins: shape"),
        ("sigmas_value", ValueError, "tof.sigmas: element 3"),
        ("pairs_index", ValueError, "lors.pairs: event 2: detector 99"),
        ("geometry_in_float", ValueError, r"image.geometry.voxel_size\[0\]"),
    ],
)
def test_bad_input_names_the_argument_and_writes_nothing(
    problem, sentinel_out, case, exc, match
):
    g, image, lors, tof = problem
    n = lors.shape[0]
    out = sentinel_out
    op, geometry = NT, g
    if case == "image_dtype":
        image = image.astype(np.int32)
    elif case == "image_list":
        image = image.tolist()
    elif case == "image_shape":
        image = np.ascontiguousarray(image.transpose(1, 0, 2))
    elif case == "image_fortran":
        image = np.asfortranarray(image)
    elif case == "starts_dtype":
        lors = resproj.Lors(lors.starts.astype(np.float32), lors.ends)
    elif case == "out_dtype":
        out = np.full(lors.shape, -3.0, np.float32)
    elif case == "out_shape":
        out = np.full((n, 2), -3.0)
    elif case == "out_readonly":
        out.flags.writeable = False
    elif case == "geometry":
        geometry = (9, 11, 7)
    elif case == "op":
        op = "non_tof"
    elif case == "lors":
        lors = (lors.starts, lors.ends)
    elif case == "bins_dtype":
        op = resproj.TofListmode(tof, np.zeros(n, np.int32))
    elif case == "bins_shape":
        op = resproj.TofListmode(tof, np.zeros(n + 1, np.int16))
    elif case == "sigmas_value":
        sigmas = np.full(n, 2.0)
        sigmas[3] = -1.0
        op = resproj.TofListmode(tof, np.zeros(n, np.int16), sigmas=sigmas)
    elif case == "pairs_index":
        pairs = np.zeros((n, 2), np.int32)
        pairs[:, 1] = 1
        pairs[2, 1] = 99
        lors = resproj.DetectorPairs(np.zeros((10, 3)), pairs)
    elif case == "geometry_in_float":
        geometry = resproj.ImageGeometry((9, 11, 7), (1e-50, 1.0, 1.0))
        image = image.astype(np.float32)
        lors = resproj.Lors(lors.starts.astype(np.float32), lors.ends.astype(np.float32))
        out = np.full(lors.shape, -3.0, np.float32)
    before = np.array(out, copy=True)
    _raises(exc, match, lambda: resproj.forward(op, geometry, image, lors, out=out))
    np.testing.assert_array_equal(out, before)


def test_bad_back_input_leaves_the_image_untouched(problem):
    g, _, lors, _ = problem
    image = np.full(g.shape, 5.0)
    _raises(
        ValueError,
        "values: shape",
        lambda: resproj.back(NT, g, np.ones(lors.shape[0] + 1), lors, out=image),
    )
    _raises(
        TypeError,
        "out: dtype float32",
        lambda: resproj.back(
            NT, g, np.ones(lors.shape), lors, out=image.astype(np.float32)
        ),
    )
    np.testing.assert_array_equal(image, 5.0)


def test_bad_constructor_arguments():
    _raises(
        ValueError, r"shape\[0\]", lambda: resproj.ImageGeometry((0, 1, 1), (1, 1, 1))
    )
    _raises(
        ValueError,
        "voxel_size: expected 3 values",
        lambda: resproj.ImageGeometry((1, 1, 1), (1, 1)),
    )
    _raises(
        TypeError,
        "shape: expected a sequence",
        lambda: resproj.ImageGeometry(3, (1, 1, 1)),
    )
    _raises(ValueError, "tof.num_bins", lambda: resproj.TofParams(1.0, 0, 1.0))
    _raises(ValueError, "tof.sigma", lambda: resproj.TofParams(1.0, 3, float("nan")))
    _raises(TypeError, "tof: expected resproj.TofParams", lambda: resproj.TofSinogram(3))
    _raises(
        ValueError,
        "lors.ends: shape",
        lambda: resproj.Lors(np.zeros((3, 3)), np.zeros((4, 3))),
    )
    _raises(
        ValueError,
        r"lors.pairs: shape \(3,\)",
        lambda: resproj.DetectorPairs(np.zeros((3, 3)), np.zeros(3, np.int32)),
    )


def test_geometry_and_tof_are_values():
    import pickle

    g = resproj.ImageGeometry((3, 4, 5), (1.0, 2.0, 3.0), origin=(0.5, 0.0, -1.0))
    assert g.shape == (3, 4, 5) and g.voxel_size == (1.0, 2.0, 3.0)
    assert g.origin == (0.5, 0.0, -1.0) and g.num_voxels == 60
    assert g.box_min == (0.0, -1.0, -2.5)
    assert pickle.loads(pickle.dumps(g)) == g and hash(
        pickle.loads(pickle.dumps(g))
    ) == hash(g)
    assert resproj.ImageGeometry.centred((2, 2, 2), (1, 1, 1)).origin == (
        -0.5,
        -0.5,
        -0.5,
    )
    t = resproj.TofParams(2.0, 5, 1.5, num_sigmas=4.0, center_offset=0.5)
    assert pickle.loads(pickle.dumps(t)) == t and t.num_bins == 5


# --------------------------------------------------------- linear operator --


def test_projector_operator(problem, rng):
    g, image, lors, tof = problem
    A = resproj.Projector(resproj.TofSinogram(tof), g, lors)
    assert A.in_shape == g.shape and A.out_shape == (lors.shape[0], tof.num_bins)
    y = A(image)
    np.testing.assert_array_equal(y, resproj.forward(A.op, g, image, lors))
    out = np.full(g.shape, 9.0)
    r = A.adjoint(y, out=out)
    assert r is out
    np.testing.assert_allclose(out, resproj.back(A.op, g, y, lors), rtol=1e-13)
    assert A.H.H is A and A.H.in_shape == A.out_shape


def test_operator_norm_matches_the_matrix():
    rng = np.random.default_rng(7)
    g = resproj.ImageGeometry.centred((3, 4, 2), (1.0, 1.0, 1.0))
    starts, ends = random_lors(rng, 12, radius=10.0)
    A = resproj.Projector(NT, g, resproj.Lors(starts, ends))
    matrix = np.stack(
        [A(np.eye(g.num_voxels)[k].reshape(g.shape)) for k in range(g.num_voxels)], axis=1
    )
    expected = np.linalg.svd(matrix, compute_uv=False)[0]
    assert abs(A.norm(np.ones(g.shape), num_iter=200) - expected) <= 1e-6 * expected
