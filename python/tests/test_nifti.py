"""NIfTI files written by resproj: round trip, and what another reader
(nibabel, when installed) sees: image axis 2 (the scanner axis) as the
superior axis, the voxel sizes and the origin."""

import numpy as np
import pytest

import resproj
import resproj.nifti


def make_image():
    g = resproj.ImageGeometry((5, 6, 7), (2.0, 1.5, 3.0), origin=(-4.0, -3.75, 10.0))
    image = np.arange(5 * 6 * 7, dtype=np.float32).reshape(g.shape)
    return g, image


def test_round_trip(tmp_path):
    g, image = make_image()
    path = str(tmp_path / "x.nii")
    resproj.nifti.write(path, image, g)
    back, gb = resproj.nifti.read(path)
    assert back.shape == g.shape
    np.testing.assert_array_equal(back, image)
    assert gb.shape == g.shape
    assert gb.voxel_size == pytest.approx(g.voxel_size)
    assert gb.origin == pytest.approx(g.origin)


def test_bad_image_names_the_argument(tmp_path):
    g, image = make_image()
    with pytest.raises((TypeError, ValueError), match="image"):
        resproj.nifti.write(str(tmp_path / "y.nii"), image[:4], g)
    with pytest.raises((TypeError, ValueError), match="image"):
        resproj.nifti.write(str(tmp_path / "y.nii"), image.astype(np.int32), g)
    assert not (tmp_path / "y.nii").exists()


def test_nibabel_sees_the_scanner_axis_as_superior(tmp_path):
    nib = pytest.importorskip("nibabel")
    g, image = make_image()
    path = str(tmp_path / "z.nii")
    resproj.nifti.write(path, image, g)
    img = nib.load(path)
    # NIfTI data axes are resproj's in reverse order (the bytes are kept).
    assert img.shape == tuple(reversed(g.shape))
    np.testing.assert_array_equal(np.asarray(img.dataobj), image.transpose(2, 1, 0))
    assert nib.aff2axcodes(img.affine) == ("S", "A", "R")
    assert img.header.get_zooms() == pytest.approx(tuple(reversed(g.voxel_size)))
    # World coordinates of voxel [i0, i1, i2]: origin + index * voxel size
    # along world x, y, z = resproj axes 0, 1, 2.
    for i0, i1, i2 in [(0, 0, 0), (4, 5, 6), (1, 2, 3)]:
        world = img.affine @ np.array([i2, i1, i0, 1.0])
        expected = np.array(g.origin) + np.array([i0, i1, i2]) * np.array(g.voxel_size)
        np.testing.assert_allclose(world[:3], expected, rtol=1e-6)
    # The qform says the same.
    np.testing.assert_allclose(img.get_qform(), img.get_sform(), atol=1e-5)
