"""Per-call cost of resproj.forward from Python on CUDA arrays.

Many forward projections of small LOR chunks against a resident image, from
CuPy and from PyTorch, queued back to back with one synchronisation at the
end: (total time) / (calls), median and minimum of several such loops. Rows: the library, the stream (the library's
default stream, which resproj bridges, or a non-default one made current),
and whether `out` is passed or allocated per call.

    python python/benchmarks/call_overhead.py [--calls 10000] [--lors 1000] [--repeats 5]
"""

import argparse
import statistics
import time

import numpy as np

import resproj


def lors_through(geometry, n, rng, dtype):
    radius = 1.5 * max(s * v for s, v in zip(geometry.shape, geometry.voxel_size))
    p = rng.normal(size=(2, n, 3))
    p *= radius / np.linalg.norm(p, axis=2, keepdims=True)
    return p[0].astype(dtype), p[1].astype(dtype)


def run(calls, image, lors, out, sync):
    """Median and minimum over `run.repeats` timed loops of `calls` calls."""
    op = resproj.NonTof()
    g = run.geometry
    for _ in range(min(100, calls)):  # warm-up
        resproj.forward(op, g, image, lors, out)
    sync()
    times = []
    for _ in range(run.repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            resproj.forward(op, g, image, lors, out)
        sync()
        times.append((time.perf_counter() - t0) / calls)
    return statistics.median(times), min(times)


def cupy_rows(args, image, starts, ends):
    import cupy as cp

    rows = []
    d_image = cp.asarray(image)
    lors = resproj.Lors(cp.asarray(starts), cp.asarray(ends))
    for stream_name, stream in (
        ("default (bridged)", cp.cuda.Stream.null),
        ("non-default", cp.cuda.Stream(non_blocking=True)),
    ):
        with stream:
            for out_name, out in (
                ("given", cp.empty(args.lors, image.dtype)),
                ("allocated", None),
            ):
                t = run(args.calls, d_image, lors, out, stream.synchronize)
                rows.append(("cupy", stream_name, out_name, t))
    return rows


def torch_rows(args, image, starts, ends):
    import torch

    rows = []
    d_image = torch.from_numpy(image).cuda()
    lors = resproj.Lors(torch.from_numpy(starts).cuda(), torch.from_numpy(ends).cuda())
    for stream_name, stream in (
        ("default (bridged)", torch.cuda.default_stream()),
        ("non-default", torch.cuda.Stream()),
    ):
        with torch.cuda.stream(stream):
            for out_name, out in (
                ("given", torch.empty(args.lors, device="cuda")),
                ("allocated", None),
            ):
                t = run(args.calls, d_image, lors, out, stream.synchronize)
                rows.append(("torch", stream_name, out_name, t))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=10000)
    p.add_argument("--lors", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=5, help="timed loops per row")
    args = p.parse_args()
    run.repeats = args.repeats
    if not (resproj.has_gpu_backend and resproj.cuda_device_count() > 0):
        raise SystemExit("needs resproj's GPU backend and a CUDA device")
    rng = np.random.default_rng(0)
    run.geometry = resproj.ImageGeometry.centred((215, 215, 71), (2.78, 2.78, 2.78))
    image = rng.uniform(size=run.geometry.shape).astype(np.float32)
    starts, ends = lors_through(run.geometry, args.lors, rng, np.float32)
    rows = []
    for name, f in (("cupy", cupy_rows), ("torch", torch_rows)):
        try:
            __import__(name)
        except ImportError:
            print(f"{name}: not installed, skipped")
            continue
        rows += f(args, image, starts, ends)
    print(
        f"\n{args.calls} forward calls of {args.lors} LORs, float32, "
        f"image {run.geometry.shape}, one sync; median and minimum of {args.repeats}"
    )
    print(f"{'library':8} {'stream':18} {'out':10} {'median us':>9} {'min us':>7}")
    for lib, stream, out, (t, t_min) in rows:
        print(f"{lib:8} {stream:18} {out:10} {t * 1e6:9.2f} {t_min * 1e6:7.2f}")


if __name__ == "__main__":
    main()
