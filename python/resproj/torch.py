"""PyTorch autograd for the projectors: `Projector.apply(x, A)` computes
`A x` and back-propagates with the exact adjoint (and `BackProjector` the
reverse), on CPU tensors and CUDA tensors alike, on the current stream.

Leading batch axes are mapped over: `x` of shape `(..., *A.in_shape)` gives
`(..., *A.out_shape)`. Imported on first use of `resproj.torch`, so
installations without PyTorch work."""

from __future__ import annotations

import torch

from ._linear import LinearOperator

__all__ = ["Projector", "BackProjector", "ProjectorModule"]


def _map(f, x, in_shape, out_shape):
    x = x.contiguous()
    n = len(in_shape)
    if tuple(x.shape) == tuple(in_shape):
        return f(x)
    if tuple(x.shape[x.dim() - n :]) != tuple(in_shape):
        raise ValueError(
            f"x: shape {tuple(x.shape)}, expected (..., {', '.join(map(str, in_shape))})"
        )
    lead = tuple(x.shape[: x.dim() - n])
    out = x.new_empty(lead + tuple(out_shape))
    flat_x = x.reshape((-1,) + tuple(in_shape))
    flat_out = out.view((-1,) + tuple(out_shape))
    for i in range(flat_x.shape[0]):
        f(flat_x[i], flat_out[i])
    return out


class Projector(torch.autograd.Function):
    """`Projector.apply(x, A)`: `A x` for a `resproj.LinearOperator` `A`;
    gradient `A^T g`."""

    @staticmethod
    def forward(ctx, x, operator):
        ctx.operator = operator
        return _map(operator.apply, x, operator.in_shape, operator.out_shape)

    @staticmethod
    def backward(ctx, grad):
        return BackProjector.apply(grad, ctx.operator), None


class BackProjector(torch.autograd.Function):
    """`BackProjector.apply(y, A)`: `A^T y`; gradient `A g`."""

    @staticmethod
    def forward(ctx, y, operator):
        ctx.operator = operator
        return _map(operator.adjoint, y, operator.out_shape, operator.in_shape)

    @staticmethod
    def backward(ctx, grad):
        return Projector.apply(grad, ctx.operator), None


class ProjectorModule(torch.nn.Module):
    """`torch.nn.Module` applying `A` (or its adjoint with `adjoint=True`)."""

    def __init__(self, operator: LinearOperator, adjoint: bool = False):
        super().__init__()
        self.operator = operator
        self.adjoint = adjoint

    def forward(self, x):
        f = BackProjector if self.adjoint else Projector
        return f.apply(x, self.operator)

    def extra_repr(self):
        return f"{self.operator!r}, adjoint={self.adjoint}"
