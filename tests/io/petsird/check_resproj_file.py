#!/usr/bin/env python3
"""Reads a PETSIRD file written by resproj (PetsirdCross.WriteForTheOfficialReader)
with the official `petsird` package and compares it with the arrays written
next to it: detector centres, TOF bins and resolution, efficiencies, and the
prompts and delayeds (first detection bin, second, TOF index).

    check_resproj_file.py OUTDIR      (reads OUTDIR/resproj_written.*)
"""
import math
import sys
from pathlib import Path

import numpy as np
import petsird
import petsird.helpers

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_petsird_files import centres  # noqa: E402


def main():
    base = Path(sys.argv[1]) / "resproj_written"
    want = {k: np.load(f"{base}.{k}.npy")
            for k in ("prompts", "delayeds", "detectors", "efficiency", "tof")}
    with petsird.BinaryPETSIRDReader(f"{base}.petsird") as r:
        header = r.read_header()
        blocks = list(r.read_time_blocks())
    s = header.scanner
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    check(len(s.scanner_geometry.replicated_modules) == 1, "one module type")
    check(np.allclose(centres(s), want["detectors"], atol=1e-4), "detector centres")
    e = s.tof_bin_edges[0][0].edges.astype(np.float64)
    n, width, offset, sigma = want["tof"]
    check(e.size - 1 == n, "number of TOF bins")
    check(np.allclose(np.diff(e), width, rtol=1e-6), "TOF bin width")
    check(abs(0.5 * (e[0] + e[-1]) - offset) < 1e-4, "TOF centre offset")
    fwhm = sigma * 2 * math.sqrt(2 * math.log(2))
    check(abs(s.tof_resolution[0][0] - fwhm) < 1e-4 * fwhm, "TOF resolution")
    eff = s.detection_efficiencies
    check(np.allclose(eff.detection_bin_efficiencies[0], want["efficiency"]),
          "detection-bin efficiencies")
    got = {"prompts": [], "delayeds": []}
    for b in blocks:
        check(isinstance(b, petsird.TimeBlock.EventTimeBlock), "event time blocks only")
        for key, lists in (("prompts", b.value.prompt_events),
                           ("delayeds", b.value.delayed_events)):
            for ev in lists[0][0]:
                got[key].append([ev.detection_bins[0], ev.detection_bins[1], ev.tof_idx])
                check(petsird.helpers.are_detections_ordered((0, 0), *ev.detection_bins),
                      "detection bins ordered")
    for key in ("prompts", "delayeds"):
        check(np.array_equal(np.array(got[key]).reshape(-1, 3), want[key]), key)
    if failures:
        print("resproj's PETSIRD file differs from what was written:", ", ".join(failures))
        return 1
    print(f"official petsird read {len(got['prompts'])} prompts, {len(got['delayeds'])} "
          f"delayeds, {len(want['detectors'])} detectors: as written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
