"""Shared problems for the resproj Python tests."""

import numpy as np
import pytest

import resproj


def random_lors(rng, n, radius=40.0, dtype=np.float64):
    """n LORs between random points on a sphere of `radius` (all cross a box of
    half-size well below `radius` or miss it)."""

    def points():
        p = rng.normal(size=(n, 3))
        return p / np.linalg.norm(p, axis=1, keepdims=True) * radius

    return points().astype(dtype), points().astype(dtype)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def problem(rng):
    """A float64 image, geometry, LORs through it and TOF parameters."""
    g = resproj.ImageGeometry((9, 11, 7), (2.0, 1.5, 2.5), origin=(-8.0, -7.0, -6.5))
    image = rng.uniform(0.5, 2.0, size=g.shape)
    starts, ends = random_lors(rng, 200, radius=30.0)
    tof = resproj.TofParams(bin_width=3.0, num_bins=11, sigma=2.5, num_sigmas=3.0)
    return g, image, resproj.Lors(starts, ends), tof


def have_module(name):
    try:
        __import__(name)
        return True
    except Exception:
        return False


def cuda_ready():
    return resproj.has_gpu_backend and resproj.cuda_device_count() > 0
