"""PyTorch autograd: gradients are the exact adjoint (CPU tensors, and CUDA
tensors when the GPU backend and a device are there)."""

import numpy as np
import pytest

import resproj
from conftest import cuda_ready, random_lors

torch = pytest.importorskip("torch")
rtorch = pytest.importorskip("resproj.torch")

DEVICES = ["cpu"]
if cuda_ready() and torch.cuda.is_available():
    DEVICES.append("cuda")


def _operators(device, dtype=torch.float64):
    rng = np.random.default_rng(3)
    g = resproj.ImageGeometry.centred((5, 4, 3), (1.0, 1.25, 1.5))
    starts, ends = random_lors(rng, 24, radius=10.0)
    lors = resproj.Lors(
        torch.from_numpy(starts).to(device=device, dtype=dtype),
        torch.from_numpy(ends).to(device=device, dtype=dtype),
    )
    tof = resproj.TofParams(bin_width=1.5, num_bins=5, sigma=1.2)
    bins = torch.from_numpy(rng.integers(0, 5, size=24).astype(np.int16)).to(device)
    return [
        resproj.Projector(op, g, lors)
        for op in (
            resproj.NonTof(),
            resproj.TofSinogram(tof),
            resproj.TofListmode(tof, bins),
        )
    ]


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    # GPU back projections add with atomics: rounding order varies run to run.
    nondet = 0.0 if device == "cpu" else 1e-12
    for A in _operators(device):
        x = torch.rand(A.in_shape, dtype=torch.float64, device=device, requires_grad=True)
        assert torch.autograd.gradcheck(
            lambda x: rtorch.Projector.apply(x, A), (x,), nondet_tol=nondet
        )
        y = torch.rand(
            A.out_shape, dtype=torch.float64, device=device, requires_grad=True
        )
        assert torch.autograd.gradcheck(
            lambda y: rtorch.BackProjector.apply(y, A), (y,), nondet_tol=nondet
        )


@pytest.mark.parametrize("device", DEVICES)
def test_gradient_is_the_back_projection(device):
    A = _operators(device)[1]
    x = torch.rand(A.in_shape, dtype=torch.float64, device=device, requires_grad=True)
    w = torch.rand(A.out_shape, dtype=torch.float64, device=device)
    (rtorch.Projector.apply(x, A) * w).sum().backward()
    torch.testing.assert_close(x.grad, A.adjoint(w), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_batches_and_the_module(device):
    A = _operators(device, torch.float32)[0]
    x = torch.rand((2, 3) + A.in_shape, device=device, requires_grad=True)
    layer = rtorch.ProjectorModule(A)
    y = layer(x)
    assert y.shape == (2, 3) + A.out_shape
    for i in range(2):
        for j in range(3):
            torch.testing.assert_close(y[i, j].detach(), A(x[i, j].detach()))
    y.sum().backward()
    ones = torch.ones(A.out_shape, device=device)
    torch.testing.assert_close(x.grad[1, 2], A.adjoint(ones), rtol=1e-5, atol=1e-5)
    back = rtorch.ProjectorModule(A, adjoint=True)
    assert back(y.detach()).shape == (2, 3) + A.in_shape
    with pytest.raises(ValueError, match="x: shape"):
        layer(torch.zeros((2, 7), device=device))


def test_tensors_that_require_grad_project_directly():
    A = _operators("cpu")[0]
    x = torch.rand(A.in_shape, dtype=torch.float64, requires_grad=True)
    y = resproj.forward(A.op, A.geometry, x, A.lors)
    assert isinstance(y, torch.Tensor) and not y.requires_grad


@pytest.mark.parametrize("device", DEVICES)
def test_tensors_without_copies_and_their_errors(device):
    # Tensors reach the binding as (pointer, shape, strides, dtype, device):
    # values equal NumPy's, the given output is written in place, and every
    # wrong dtype, layout or size is reported by name.
    rng = np.random.default_rng(5)
    g = resproj.ImageGeometry.centred((6, 5, 4), (1.0, 1.0, 1.5))
    starts, ends = random_lors(rng, 40, radius=9.0, dtype=np.float32)
    image = rng.uniform(0.5, 2.0, g.shape).astype(np.float32)
    expected = resproj.forward(resproj.NonTof(), g, image, resproj.Lors(starts, ends))

    def t(a):
        return torch.from_numpy(np.ascontiguousarray(a)).to(device)

    lors = resproj.Lors(t(starts), t(ends))
    out = torch.full((40,), -1.0, device=device)
    x = t(image).requires_grad_(True)
    got = resproj.forward(resproj.NonTof(), g, x, lors, out, sync=True)
    assert got is out
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)

    with pytest.raises(TypeError, match="image: dtype float16"):
        resproj.forward(resproj.NonTof(), g, x.detach().half(), lors, out)
    with pytest.raises(ValueError, match="image: not C-contiguous"):
        strided = t(image).transpose(0, 2).contiguous().transpose(0, 2)
        resproj.forward(resproj.NonTof(), g, strided, lors, out)
    with pytest.raises(ValueError, match="out: shape"):
        resproj.forward(resproj.NonTof(), g, x, lors, torch.zeros(39, device=device))
    with pytest.raises(ValueError, match="lors.starts: not C-contiguous"):
        resproj.forward(
            resproj.NonTof(), g, x, resproj.Lors(t(starts.T).T, t(ends)), out
        )
    # Nothing was written by the rejected calls.
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)
    # A negated view projects the values it shows; as an output it is refused.
    neg = resproj.forward(resproj.NonTof(), g, torch._neg_view(x.detach()), lors)
    np.testing.assert_allclose(neg.cpu().numpy(), -expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="out: a negated"):
        resproj.forward(resproj.NonTof(), g, x, lors, torch._neg_view(out))
