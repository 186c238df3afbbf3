"""Whole-subset projections from Python: `dmi-subset` (views 0, 34, ..., 238
of the dmi sinogram, 4,302,720 LORs, as a sinogram source) forward and back
against a resident float32 image (the box phantom), from CuPy and from
PyTorch, timed with CUDA events around each call on the current stream:
median of `--repeats` calls after a warm-up, in LORs per second, to set
beside the C++ benchmark's `dmi-subset .../sinogram-source/plain` rows.

    python python/benchmarks/subset_calls.py [--repeats 9]
"""

import argparse
import statistics

import numpy as np

import resproj
from resproj import recon, scanner


def box_phantom(shape):
    x = np.zeros(shape, np.float32)
    a0, a1 = shape[0] // 4, shape[1] // 4
    x[a0 : 3 * shape[0] // 4 + 1, a1 : 3 * shape[1] // 4 + 1, :] = 1
    return x


def timed(lib, f, repeats):
    f()
    times = []
    for _ in range(repeats):
        if lib.__name__ == "cupy":
            start, stop = lib.cuda.Event(), lib.cuda.Event()
            start.record()
            f()
            stop.record()
            stop.synchronize()
            times.append(lib.cuda.get_elapsed_time(start, stop) * 1e-3)
        else:
            start = lib.cuda.Event(enable_timing=True)
            stop = lib.cuda.Event(enable_timing=True)
            start.record()
            f()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) * 1e-3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=9)
    args = p.parse_args()
    g = resproj.ImageGeometry.centred((215, 215, 71), (2.78, 2.78, 2.78))
    sub = recon.SinogramSubsets(scanner.dmi(), 65, 34, g)
    image = box_phantom(g.shape)
    print(f"{'library':8} {'call':8} {'LORs/s':>10}")
    for name in ("cupy", "torch"):
        try:
            lib = __import__(name)
        except ImportError:
            continue
        if name == "cupy":
            d_image = lib.asarray(image)
        else:
            d_image = lib.from_numpy(image).cuda()
        lors = sub.lor_subsets(like=d_image)[0]
        n = int(np.prod(lors.shape))
        op = resproj.NonTof()
        out = resproj.forward(op, g, d_image, lors)
        ones = out * 0 + 1
        back = resproj.back(op, g, ones, lors)
        t_f = timed(lib, lambda: resproj.forward(op, g, d_image, lors, out), args.repeats)
        t_b = timed(
            lib,
            lambda: resproj.back(op, g, ones, lors, back, overwrite=True),
            args.repeats,
        )
        print(f"{name:8} {'forward':8} {n / t_f:10.3g}")
        print(f"{name:8} {'back':8} {n / t_b:10.3g}  (includes zeroing the image)")


if __name__ == "__main__":
    main()
