#!/usr/bin/env python3
"""Writes small PETSIRD files with the official `petsird` package, and next to
each one .npy arrays (and a JSON summary) of what resproj's reader must
return for it. Used by the ctest `io.petsird.cross` (tests/io/petsird/run_cross_tests.sh).

    make_petsird_files.py OUTDIR
    make_petsird_files.py --fuzz-seeds DIR   (the seeds of tests/fuzz/corpus/petsird)

Files (OUTDIR/<name>.petsird):
  multi       two module types (the first with two depth-of-interaction
              layers and two energy bins), TOF with per-pair bins, prompts
              and delayeds in every module-type pair, singles, triples and
              quadruples (skipped by the reader), every other time-block
              kind, detection-bin and module-pair efficiencies, exam
              information, two stream blocks
  nonuniform  one module type whose TOF bin edges are not uniform

Expected arrays (OUTDIR/<name>.<what>.npy): detectors (N x 3 float32, box
centres in detector-index order), prompt_pairs / delayed_pairs (int32, two
per event), prompt_tof / delayed_tof (int16), prompt_energy /
delayed_energy (int32, two per event), prompt_eff / delayed_eff (float32,
the official helper's efficiency without calibration factor), blocks
(int32, kind, start, stop per time block), pair_eff (N x N float32, the
helper's efficiency of detector pairs at energy bin 0, both orders), tof
(float64: num_bins, bin width, centre offset, sigma of pair [0][0]),
skipped (int32: singles + triples + quadruples).
"""
import importlib.metadata
import json
import math
import sys
from pathlib import Path

import numpy as np
import petsird
from petsird.helpers import get_detection_efficiency

rng = np.random.default_rng(20261201)


def transform(angle_deg=0.0, t=(0.0, 0.0, 0.0)):
    a = math.radians(angle_deg)
    c, s = math.cos(a), math.sin(a)
    m = np.array([[c, -s, 0, t[0]], [s, c, 0, t[1]], [0, 0, 1, t[2]]], dtype=np.float32)
    return petsird.RigidTransformation(matrix=m)


def box(lo, hi):
    corners = []
    for k in range(8):
        p = [hi[i] if (k >> i) & 1 else lo[i] for i in range(3)]
        corners.append(petsird.Coordinate(c=np.array(p, dtype=np.float32)))
    return petsird.BoxShape(corners=corners)


def module_type(box_shape, element_transforms, module_transforms):
    elements = petsird.ReplicatedBoxSolidVolume(
        object=petsird.BoxSolidVolume(shape=box_shape, material_id=1),
        transforms=element_transforms)
    annulus = petsird.GeometricShape.AnnulusShape(
        petsird.AnnulusShape(inner_radius=1, outer_radius=2, thickness=3,
                             angular_range=[0.0, 1.0]))
    non_detecting = [
        petsird.ReplicatedGenericSolidVolume(
            object=petsird.GenericSolidVolume(shape=annulus, material_id=2),
            transforms=[transform()])
    ]
    module = petsird.DetectorModule(detecting_elements=elements,
                                    non_detecting_elements=non_detecting)
    return petsird.ReplicatedDetectorModule(object=module, transforms=module_transforms)


def edges(values):
    return petsird.BinEdges(edges=np.asarray(values, dtype=np.float32))


def centres(scanner):
    """Box centres, detector-index order (type, module, element)."""
    out = []
    for rep in scanner.scanner_geometry.replicated_modules:
        corners = np.array([c.c for c in rep.object.detecting_elements.object.shape.corners],
                           dtype=np.float64)
        c = np.append(corners.mean(axis=0), 1.0)
        for mt in rep.transforms:
            for et in rep.object.detecting_elements.transforms:
                p = et.matrix.astype(np.float64) @ c
                q = mt.matrix.astype(np.float64) @ np.append(p, 1.0)
                out.append(q)
    return np.array(out, dtype=np.float32)


def counts(scanner):
    """first detector, elements per module, energy bins, detection bins per type"""
    first, out = 0, []
    for t, rep in enumerate(scanner.scanner_geometry.replicated_modules):
        nel = len(rep.object.detecting_elements.transforms)
        nen = scanner.event_energy_bin_edges[t].number_of_bins()
        nmod = len(rep.transforms)
        out.append((first, nel, nen, nmod * nel * nen))
        first += nmod * nel
    return out, first


def random_events(scanner, t1, t2, n, ntof):
    info, _ = counts(scanner)
    evs = []
    while len(evs) < n:
        b1 = int(rng.integers(info[t1][3]))
        b2 = int(rng.integers(info[t2][3]))
        if t1 == t2 and b1 < b2:
            b1, b2 = b2, b1
        evs.append(petsird.CoincidenceEvent(detection_bins=[b1, b2],
                                            tof_idx=int(rng.integers(ntof))))
    return evs


def multi_scanner():
    # Type 0: 3 modules of 2 x 2 elements (2 tangential, 2 DOI layers), a box
    # not centred on its origin, 2 energy bins.
    el0 = [transform(5.0 * doi, (10.0 * doi, 4.0 * tang - 2.0, 0.0)) for tang in range(2)
           for doi in range(2)]
    mod0 = [transform(120.0 * m, (300 * math.cos(math.radians(120 * m)),
                                  300 * math.sin(math.radians(120 * m)), 7.0 * m))
            for m in range(3)]
    # Type 1: 2 modules of 3 elements, 1 energy bin.
    el1 = [transform(0.0, (0.0, 6.0 * k - 6.0, 1.5)) for k in range(3)]
    mod1 = [transform(60.0 + 180.0 * m, (250 * math.cos(math.radians(60 + 180 * m)),
                                         250 * math.sin(math.radians(60 + 180 * m)), 40.0))
            for m in range(2)]
    geometry = petsird.ScannerGeometry(replicated_modules=[
        module_type(box((0, -2, -2), (10, 2, 2)), el0, mod0),
        module_type(box((-4, -3, -3), (4, 3, 3)), el1, mod1)
    ])
    tof5 = np.linspace(-300.0, 300.0, 6)
    tof7 = np.linspace(-280.0, 280.0, 8) + 10.0
    eff = petsird.DetectionEfficiencies(
        method_description="test", calibration_factor=2.5,
        detection_bin_efficiencies=[
            rng.uniform(0.5, 1.5, 24).astype(np.float32).tolist(),
            rng.uniform(0.5, 1.5, 6).astype(np.float32).tolist()
        ],
        module_pair_sgidlut=[[[[-1], [0, -1], [1, 0, -1]]],
                             [[[0, 1, 0], [1, -1, 0]], [[-1], [0, -1]]]],
        module_pair_efficiencies_vectors=[
            [[petsird.ModulePairEfficiencies(
                values=rng.uniform(0.8, 1.2, (8, 8)).astype(np.float32).tolist(), sgid=g)
              for g in range(2)]],
            [[petsird.ModulePairEfficiencies(
                values=rng.uniform(0.8, 1.2, (3, 8)).astype(np.float32).tolist(), sgid=g)
              for g in range(2)],
             [petsird.ModulePairEfficiencies(
                 values=rng.uniform(0.8, 1.2, (3, 3)).astype(np.float32).tolist(), sgid=0)]]
        ])
    return petsird.ScannerInformation(
        model_name="two module types",
        scanner_geometry=geometry,
        bulk_materials=[petsird.BulkMaterial(id=1, name="LYSO", density=7.1,
                                             atoms=[petsird.Atom(mass_number=175,
                                                                 atomic_number=71)],
                                             mass_fractions=[1.0])],
        gantry_alignment=transform(1.0, (0.5, 0.0, 0.0)),
        collimator_type="NONE",
        tof_bin_edges=[[edges(tof5)], [edges(tof5), edges(tof7)]],
        tof_resolution=[[60.0], [60.0, 75.0]],
        event_energy_bin_edges=[edges([350, 450, 650]), edges([400, 650])],
        energy_resolution_at_511=[0.11, 0.12],
        singles_histogram_level=petsird.SinglesHistogramLevelType.MODULE,
        module_singles_unit_idx_lu_ts=[[0, 1, 2], [3, 4]],
        singles_histogram_energy_bin_edges=[edges([350, 650]), edges([350, 650])],
        single_event_policy=petsird.SingleEventPolicy.ALL,
        prompt_event_policy=petsird.CoincidencePolicy.REJECT_HIGHER_MULTIPLES,
        delayed_event_policy=petsird.CoincidencePolicy.REJECT_HIGHER_MULTIPLES,
        triple_event_policy=petsird.TripleEventPolicy.REJECT_HIGHER_MULTIPLES,
        detection_efficiencies=eff)


def exam():
    code = petsird.DICOMBasicCodeSequence(code_value="F-10450", code_meaning="recumbent")
    return petsird.ExamInformation(
        modality="PT", study_instance_uid="1.2.3", start_of_acquisition=petsird.DateTime(),
        patient=petsird.DICOMPatientInformation(patient_id="p1", patients_sex="O",
                                                patients_size=1.7),
        patient_orientation=petsird.DICOMPatientOrientationInformation(
            patient_orientation_code_sequence=code),
        radiopharmaceuticals=[petsird.DICOMRadiopharmaceuticalInformation(
            radiopharmaceutical_volume=1.0, radionuclide_code_sequence=code)],
        external_signals=[petsird.ExternalSignal(
            type=petsird.ExternalSignalTypeEnum.ECG_TRACE, description="ecg", id=3)])


def event_block(scanner, start, n, with_extras):
    ntof = lambda t1, t2: scanner.tof_bin_edges[t1][t2].number_of_bins()
    prompts = [[random_events(scanner, 0, 0, n, ntof(0, 0))],
               [random_events(scanner, 1, 0, n // 2, ntof(1, 0)),
                random_events(scanner, 1, 1, n // 3, ntof(1, 1))]]
    delayeds = [[random_events(scanner, 0, 0, n // 4, ntof(0, 0))],
                [[], random_events(scanner, 1, 1, 2, ntof(1, 1))]]
    block = petsird.EventTimeBlock(time_interval=petsird.TimeInterval(start=start,
                                                                      stop=start + 10),
                                   prompt_events=prompts, delayed_events=delayeds)
    skipped = 0
    if with_extras:
        block.single_events = [[petsird.SingleEvent(detection_bin=3,
                                                    time_offset_in_time_block=77)] * 2,
                               [petsird.SingleEvent(detection_bin=1)]]
        triple = petsird.TripleEvent(detection_bins=[5, 3, 1], tof_indices=[1, 2])
        block.triple_events = [[[[triple, triple]]]]
        block.quadruple_events = [[[[[triple]]]]]
        skipped = 3 + 2 + 1
    return petsird.TimeBlock.EventTimeBlock(block), skipped


def other_blocks(start):
    interval = lambda k: petsird.TimeInterval(start=start + k, stop=start + k + 1)
    return [
        petsird.TimeBlock.ExternalSignalTimeBlock(petsird.ExternalSignalTimeBlock(
            time_interval=interval(0), signal_id=3, signal_values=[1.0, 2.0, 3.0])),
        petsird.TimeBlock.BedMovementTimeBlock(petsird.BedMovementTimeBlock(
            time_interval=interval(1), transform=transform(0.0, (0, 0, 12.5)))),
        petsird.TimeBlock.GantryMovementTimeBlock(petsird.GantryMovementTimeBlock(
            time_interval=interval(2), transforms=[transform(3.0), transform(4.0)])),
        petsird.TimeBlock.DeadTimeTimeBlock(petsird.DeadTimeTimeBlock(
            time_interval=interval(3),
            alive_time_fractions=petsird.AliveTimeFractions(
                singles_alive_time_fractions=[np.ones(24, dtype=np.float32),
                                              np.ones(6, dtype=np.float32)]))),
        petsird.TimeBlock.SinglesHistogramTimeBlock(petsird.SinglesHistogramTimeBlock(
            time_interval=interval(4),
            singles_per_singles_unit_histogram=[[1, 2, 3], [4, 5]],
            singles_per_detection_bin_histogram=[[7] * 24, [8] * 6])),
    ]


def expected(scanner, blocks, prefix, skipped):
    info, ndet = counts(scanner)
    out = {"prompt": ([], [], [], []), "delayed": ([], [], [], [])}
    block_rows = []
    for b in blocks:
        v = b.value
        block_rows.append([b.index, v.time_interval.start, v.time_interval.stop])
        if b.index != 0:
            continue
        for kind, lists in (("prompt", v.prompt_events), ("delayed", v.delayed_events)):
            pairs, tof, energy, eff = out[kind]
            for t1, row in enumerate(lists):
                for t2, evs in enumerate(row):
                    for e in evs:
                        b1, b2 = e.detection_bins
                        pairs += [info[t1][0] + b1 // info[t1][2],
                                  info[t2][0] + b2 // info[t2][2]]
                        energy += [b1 % info[t1][2], b2 % info[t2][2]]
                        tof.append(e.tof_idx)
                        eff.append(get_detection_efficiency(scanner, (t1, t2), e,
                                                            with_calibration_factor=False))
    for kind, (pairs, tof, energy, eff) in out.items():
        np.save(f"{prefix}.{kind}_pairs.npy", np.array(pairs, dtype=np.int32))
        np.save(f"{prefix}.{kind}_tof.npy", np.array(tof, dtype=np.int16))
        np.save(f"{prefix}.{kind}_energy.npy", np.array(energy, dtype=np.int32))
        np.save(f"{prefix}.{kind}_eff.npy", np.array(eff, dtype=np.float32))
    np.save(f"{prefix}.blocks.npy", np.array(block_rows, dtype=np.int32).reshape(-1, 3))
    np.save(f"{prefix}.detectors.npy", centres(scanner))
    # Pair efficiencies at energy bin 0, the detection ordered as PETSIRD wants.
    det_type = [t for t, (_, nel, _, nb) in enumerate(info)
                for _ in range(nb // info[t][2])]
    pe = np.zeros((ndet, ndet), dtype=np.float32)
    for a in range(ndet):
        for b in range(ndet):
            ta, tb = det_type[a], det_type[b]
            ba = (a - info[ta][0]) * info[ta][2]
            bb = (b - info[tb][0]) * info[tb][2]
            if ta < tb or (ta == tb and ba < bb):
                ta, tb, ba, bb = tb, ta, bb, ba
            pe[a, b] = get_detection_efficiency(scanner, (ta, tb), ba, bb,
                                                with_calibration_factor=False)
    np.save(f"{prefix}.pair_eff.npy", pe)
    e = scanner.tof_bin_edges[0][0].edges.astype(np.float64)
    n = e.size - 1
    tof = [n, (e[-1] - e[0]) / n, 0.5 * (e[0] + e[-1]),
           scanner.tof_resolution[0][0] / (2 * math.sqrt(2 * math.log(2)))]
    np.save(f"{prefix}.tof.npy", np.array(tof, dtype=np.float64))
    np.save(f"{prefix}.skipped.npy", np.array([skipped], dtype=np.int32))
    return {"detectors": ndet, "prompts": len(out["prompt"][1]),
            "delayeds": len(out["delayed"][1]), "time_blocks": len(block_rows),
            "skipped_events": skipped}


def write(path, header, block_groups):
    with petsird.BinaryPETSIRDWriter(str(path)) as w:
        w.write_header(header)
        for group in block_groups:
            w.write_time_blocks(group)


def fuzz_seeds(out):
    """Small files without the yardl preamble (fuzz_petsird puts it back)."""
    out.mkdir(parents=True, exist_ok=True)
    schema = petsird.protocols.PETSIRDWriterBase.schema.encode()
    n, varint = len(schema), bytearray()
    while n >= 0x80:
        varint.append((n & 0x7F) | 0x80)
        n >>= 7
    varint.append(n)
    preamble = len(b"yardl") + 4 + len(varint) + len(schema)
    scanner = multi_scanner()
    b0, _ = event_block(scanner, 0, 4, True)
    b1, _ = event_block(scanner, 100, 3, False)
    single = multi_scanner()
    single.scanner_geometry.replicated_modules.pop()
    single.tof_bin_edges = [[edges([-100, 0, 100])]]
    single.tof_resolution = [[50.0]]
    single.event_energy_bin_edges = [edges([430, 650])]
    single.detection_efficiencies = petsird.DetectionEfficiencies()
    ntof = 2
    blk = petsird.EventTimeBlock(time_interval=petsird.TimeInterval(start=0, stop=1),
                                 prompt_events=[[random_events(single, 0, 0, 5, ntof)]],
                                 delayed_events=[[random_events(single, 0, 0, 2, ntof)]])
    cases = {
        "multi_all_block_kinds": (petsird.Header(scanner=scanner, exam=exam()),
                                  [[b0] + other_blocks(50), [b1]]),
        "one_module_type": (petsird.Header(scanner=single),
                            [[petsird.TimeBlock.EventTimeBlock(blk)]]),
        "no_time_blocks": (petsird.Header(scanner=single), [[]]),
    }
    for name, (header, groups) in cases.items():
        tmp = out / f"{name}.tmp"
        write(tmp, header, groups)
        (out / name).write_bytes(tmp.read_bytes()[preamble:])
        tmp.unlink()
    # Whole files (they start with the magic): a wrong format version.
    (out / "whole_file_bad_version").write_bytes(b"yardl\x02\x00\x00\x00\x10{}")


def main():
    if sys.argv[1] == "--fuzz-seeds":
        fuzz_seeds(Path(sys.argv[2]))
        return
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    summary = {"petsird_version": importlib.metadata.version("petsird")}

    scanner = multi_scanner()
    b0, s0 = event_block(scanner, 0, 30, True)
    b1, _ = event_block(scanner, 100, 400, False)
    b2, _ = event_block(scanner, 200, 0, False)
    groups = [[b0] + other_blocks(50), [b1, b2]]
    write(out / "multi.petsird", petsird.Header(scanner=scanner, exam=exam()), groups)
    summary["multi"] = expected(scanner, [b for g in groups for b in g],
                                str(out / "multi"), s0)

    nonuniform = multi_scanner()
    nonuniform.tof_bin_edges[0][0] = edges([-300, -100, 0, 100, 300])
    write(out / "nonuniform.petsird", petsird.Header(scanner=nonuniform), [[]])
    summary["nonuniform"] = {"tof_bin_edges[0][0]": [-300, -100, 0, 100, 300]}

    (out / "summary.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
