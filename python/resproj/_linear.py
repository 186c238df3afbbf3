"""Linear operators: a projector as `A` with `A(x)`, `A.apply(x)` and
`A.adjoint(y)`, for NumPy, CuPy and PyTorch arrays alike."""

from __future__ import annotations

import math

from . import _core

__all__ = ["LinearOperator", "Projector", "AdjointOperator"]


class LinearOperator:
    """A linear map from arrays of `in_shape` to arrays of `out_shape`.

    Subclasses define `apply(x, out=None)` and `adjoint(y, out=None)`; both
    return their result (into `out`, overwritten, when given)."""

    in_shape: tuple
    out_shape: tuple

    def apply(self, x, out=None):
        raise NotImplementedError

    def adjoint(self, y, out=None):
        raise NotImplementedError

    def __call__(self, x, out=None):
        return self.apply(x, out)

    @property
    def H(self):
        """The adjoint operator."""
        return AdjointOperator(self)

    def norm(self, x0, num_iter=30):
        """Largest singular value, by power iteration on A^H A from `x0` (an
        array of `in_shape`, not orthogonal to the leading singular vector)."""
        x = x0
        s = 0.0
        for _ in range(num_iter):
            x = self.adjoint(self.apply(x))
            s = math.sqrt(float((x * x).sum()))
            if s == 0.0:
                return 0.0
            x = x / s
        return math.sqrt(s)


class AdjointOperator(LinearOperator):
    """The adjoint of a linear operator."""

    def __init__(self, op):
        self.op = op
        self.in_shape = op.out_shape
        self.out_shape = op.in_shape

    def apply(self, x, out=None):
        return self.op.adjoint(x, out)

    def adjoint(self, y, out=None):
        return self.op.apply(y, out)

    @property
    def H(self):
        return self.op


class Projector(LinearOperator):
    """`A x = resproj.forward(op, geometry, x, lors)`, `A^T y = resproj.back(...)`.

    `stream` (optional) is used for CUDA arrays instead of the current stream
    of their library."""

    def __init__(self, op, geometry, lors, *, stream=None):
        _core._check_call(op, geometry, lors)
        self.op = op
        self.geometry = geometry
        self.lors = lors
        self.stream = stream
        self.in_shape = tuple(geometry.shape)
        self.out_shape = op.values_shape(lors.shape)

    def apply(self, x, out=None):
        return _core.forward(
            self.op, self.geometry, x, self.lors, out, stream=self.stream
        )

    def adjoint(self, y, out=None):
        return _core.back(
            self.op,
            self.geometry,
            y,
            self.lors,
            out,
            stream=self.stream,
            overwrite=out is not None,
        )

    def __repr__(self):
        return f"Projector({self.op!r}, {self.geometry!r}, {self.lors!r})"
