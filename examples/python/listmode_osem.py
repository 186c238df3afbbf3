"""TOF list-mode OSEM of a list-mode file, from Python, with the phase table.

With EVENTS (a file of 10-byte records, e.g. demo_out/demo_events.lm written
by the C++ demo) it reconstructs the demo's problem: the dmi scanner, 34
subsets, a 215 x 215 x 71 image of 2.78 mm, the dmi TOF; attenuation from
--mu (a NIfTI mu-map in 1/mm, whose geometry is then the image's), otherwise
none. Without EVENTS it simulates a small problem first (a small scanner and
a cylinder phantom with hot and cold spheres) and reports their contrast.

    python examples/python/listmode_osem.py [EVENTS.lm] [--mu MU.nii]
        [--background B] [--iterations K] [--subsets S] [--device cpu|cuda]
        [--out IMAGE.nii] [--repeat N]
"""

import argparse
import os
import tempfile
import time

import numpy as np

import resproj
from resproj import listmode, nifti, recon, scanner


def small_problem(path, num_subsets, num_events=200_000):
    """A small scanner, a cylinder with a hot and a cold sphere, and TOF events
    drawn from its expected counts, written to `path`. Returns (subsets,
    corrections, tof, phantom, mask of the cold sphere)."""
    sc = scanner.PolygonScanner(16, 8, 150.0, 4.0, [4.2 * (r - 3.5) for r in range(8)])
    g = resproj.ImageGeometry.centred((64, 64, 8), (3.0, 3.0, 4.2))
    sub = recon.SinogramSubsets(sc, 20, num_subsets, g)
    tof = resproj.TofParams(bin_width=20.0, num_bins=15, sigma=25.0)

    axes = [o + s * np.arange(n) for n, s, o in zip(g.shape, g.voxel_size, g.origin)]
    x, y, z = np.meshgrid(*axes, indexing="ij")
    body = (x**2 + y**2) < 70.0**2
    x_true = body.astype(np.float32)
    for cx, cy, r, v in ((30, 0, 12, 4.0), (-20, 30, 8, 4.0), (-25, -25, 15, 0.0)):
        x_true[(x - cx) ** 2 + (y - cy) ** 2 + z**2 < r**2] = v
    cold = body & (x_true == 0)
    mu = (0.0096 * body).astype(np.float32)  # water, 1/mm
    corr = recon.Corrections(mu=mu, background=0.01)

    # Every LOR of the sinogram, its attenuation and TOF profile, then events.
    layout = sub.layout
    pairs = np.array(
        [
            layout.detector_pair(p, v, r)
            for p in range(layout.num_planes)
            for v in range(layout.num_views)
            for r in range(layout.num_radial)
        ],
        np.int32,
    )
    lors = resproj.DetectorPairs(sc.detector_centres(), pairs)
    att = np.exp(-resproj.forward(resproj.NonTof(), g, mu, lors))
    mean = att[:, None] * resproj.forward(resproj.TofSinogram(tof), g, x_true, lors)
    mean += corr.background / tof.num_bins
    p = mean.reshape(-1).astype(np.float64)
    k = np.random.default_rng(0).choice(p.size, size=num_events, p=p / p.sum())
    listmode.write(
        path,
        np.ascontiguousarray(pairs[k // tof.num_bins]),
        (k % tof.num_bins).astype(np.int16),
    )
    return sub, corr, tof, x_true, cold


def demo_problem(num_subsets, mu_path, background):
    """The C++ demo's scanner, image and TOF; attenuation from `mu_path`."""
    if mu_path:
        mu, g = nifti.read(mu_path)
    else:
        mu, g = None, resproj.ImageGeometry.centred((215, 215, 71), (2.78, 2.78, 2.78))
    sub = recon.SinogramSubsets(scanner.dmi(), 65, num_subsets, g)
    return sub, recon.Corrections(mu=mu, background=background), scanner.dmi_tof()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("events", nargs="?", help="list-mode file (default: simulate one)")
    p.add_argument("--mu", help="NIfTI mu-map (1/mm); its geometry is the image's")
    p.add_argument("--background", type=float, default=0.0)
    p.add_argument("--iterations", type=int, default=2)
    p.add_argument("--subsets", type=int, default=None, help="default: 34 (demo), 8")
    p.add_argument(
        "--device", default=None, help="cpu, cuda or cuda:N (default: cuda if present)"
    )
    p.add_argument("--out", help="write the image as NIfTI")
    p.add_argument(
        "--repeat", type=int, default=1, help="reconstruct this many times (report the last)"
    )
    args = p.parse_args()

    t_all = time.perf_counter()
    x_true = None
    with tempfile.TemporaryDirectory() as tmp:
        if args.events:
            path = args.events
            sub, corr, tof = demo_problem(args.subsets or 34, args.mu, args.background)
        else:
            path = os.path.join(tmp, "events.lm")
            t = time.perf_counter()
            sub, corr, tof, x_true, cold = small_problem(path, args.subsets or 8)
            dt = time.perf_counter() - t
            print(f"simulated {listmode.count(path)} events in {dt:.1f} s")

        dev = args.device or ("cuda" if resproj.cuda_device_count() > 0 else "cpu")
        if dev.startswith("cuda"):
            # The CUDA context exists before the clock starts, as in the C++
            # demo (whose simulation made it).
            resproj.synchronize(int(dev.partition(":")[2] or 0))
        # Each repeat reconstructs from the file again in this process; the
        # first one also loads the GPU code it runs for the first time.
        for repeat in range(args.repeat):
            t = time.perf_counter()
            r = recon.ListmodeOsem(sub, corr, tof, path, device=args.device)
            if repeat == 0:
                print(
                    f"{r.num_events} events, {sub.num_subsets} subsets, "
                    f"{args.iterations} iterations, image {sub.geometry.shape}, "
                    f"on {r.device}"
                )

            def progress(q):
                if q.subset + 1 == q.num_subsets:
                    print(
                        f"  iteration {q.iteration + 1}/{q.num_iterations}: "
                        f"{q.elapsed_s:.2f} s, {1e3 * q.last_subset_s:.1f} ms last subset"
                    )

            r.run(args.iterations, progress)
            if args.out:
                r.write_nifti(args.out)
            t_recon = time.perf_counter() - t
            if args.repeat > 1:
                print(f"run {repeat + 1}/{args.repeat}: {t_recon:.3f} s")

    print(recon.format_phases(r.phases))
    print(
        f"reconstruction (file -> image{' -> file' if args.out else ''}): {t_recon:.3f} s"
    )
    if x_true is not None:
        x = r.image()
        bg = x[x_true == 1].mean()
        print(
            f"hot spheres / background {x[x_true == 4].mean() / bg:.2f} (true 4), "
            f"cold sphere / background {x[cold].mean() / bg:.2f} (true 0)"
        )
    print(f"total (with the set-up of this script): {time.perf_counter() - t_all:.1f} s")


if __name__ == "__main__":
    main()
