"""OSEM (MLEM with --subsets 1) of a simulated sinogram on a small scanner.

The scanner's span-1 sinogram is split into subsets by view; each subset is
a LOR source without per-LOR arrays, and a resproj.Projector over it is the
system matrix A_s. NumPy on the CPU backend; with --gpu the same code runs on
CuPy arrays on the GPU (zero-copy, on CuPy's current stream).

    python examples/python/osem.py [--iterations 4] [--subsets 8] [--gpu] [--out x.npy]
"""

import argparse
import time

import numpy as np

import resproj
from resproj import scanner


def phantom(g):
    """A cylinder of activity 1 with two hot spheres (4) and a cold one (0)."""
    axes = [o + s * np.arange(n) for n, s, o in zip(g.shape, g.voxel_size, g.origin)]
    x, y, z = np.meshgrid(*axes, indexing="ij")
    img = ((x**2 + y**2) < 70.0**2).astype(np.float32)
    for cx, cy, r, v in ((30, 0, 12, 4.0), (-20, 30, 8, 4.0), (-25, -25, 15, 0.0)):
        img[(x - cx) ** 2 + (y - cy) ** 2 + z**2 < r**2] = v
    return img


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=4)
    p.add_argument("--subsets", type=int, default=8)
    p.add_argument("--gpu", action="store_true", help="CuPy arrays on the GPU")
    p.add_argument("--out", help="write the reconstruction as .npy")
    args = p.parse_args()

    xp = np
    if args.gpu:
        try:
            import cupy as xp
        except ImportError:
            print("--gpu: CuPy is not installed, running on the CPU")
    if xp is not np and not (resproj.has_gpu_backend and resproj.cuda_device_count()):
        print("--gpu: no GPU backend or device, running on the CPU")
        xp = np

    # 16 modules of 8 crystals (128 per ring), 8 rings, mm.
    sc = scanner.PolygonScanner(16, 8, 150.0, 4.0, [4.2 * (r - 3.5) for r in range(8)])
    layout = scanner.span1_sinogram(sc, radial_trim=20)
    g = resproj.ImageGeometry.centred((64, 64, 8), (3.0, 3.0, 4.2))
    op = resproj.NonTof()

    x_true = xp.asarray(phantom(g))
    subsets = scanner.SinogramSubsets(sc, layout, args.subsets, like=x_true)
    A = [resproj.Projector(op, g, subsets[s]) for s in range(args.subsets)]

    # Data: Poisson counts of A x + a flat background, per subset.
    rng = np.random.default_rng(0)
    background = 0.05
    y = []
    for As in A:
        mean = As(x_true) + background
        y.append(xp.asarray(rng.poisson(_host(mean)).astype(np.float32)))
    sens = [As.adjoint(xp.ones(As.out_shape, np.float32)) for As in A]

    x = xp.ones(g.shape, np.float32)
    t0 = time.perf_counter()
    for it in range(args.iterations):
        for As, ys, ss in zip(A, y, sens):
            ratio = ys / (As(x) + background)
            x *= As.adjoint(ratio) / xp.maximum(ss, 1e-6)
        err = float(xp.abs(x - x_true).mean() / x_true.mean())
        print(f"iteration {it + 1}: mean |x - x_true| / mean(x_true) = {err:.3f}")
    print(
        f"{args.iterations} x {args.subsets} subsets in {time.perf_counter() - t0:.2f} s "
        f"({'GPU, CuPy' if xp is not np else 'CPU, NumPy'})"
    )
    if args.out:
        np.save(args.out, _host(x))


def _host(a):
    return a.get() if hasattr(a, "get") else a


if __name__ == "__main__":
    main()
