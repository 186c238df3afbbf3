#!/usr/bin/env bash
# Build, test and benchmark resproj on a GPU machine, in one call.
#
# Usage: benchmarks/run_gpu.sh [options]
#   --stages LIST          comma-separated subset of build,test,bench,demo,
#                          profile (default: build,test,bench)
#   --profile-binary NAME  benchmark binary the profile stage runs under Nsight
#                          Compute (default bench_gpu_tof)
#   --profile-filter RE    its --benchmark_filter (default '.'); repeatable:
#                          one ncu run per filter, all into profile.log
#   --profile-kernels RE   kernels to profile (ncu -k regex:RE; default '.')
#   --profile-count N      kernel launches to profile (default 4)
#   --tests FILTER         GoogleTest filter for the GPU test binaries (default '*')
#   --test-binaries REGEX  which test executables under BUILD/tests run directly
#                          (extended regex on the file name; default '^gpu_')
#   --no-ctest             skip the ctest run of the CPU tests in the test stage
#   --bench REGEX          Google Benchmark filter (default '.')
#   --bench-binaries REGEX which benchmark executables under BUILD/benchmarks run
#                          (regex on the file name; default: the GPU ones, i.e.
#                          those linked to libcudart)
#   --bench-args "ARGS"    extra arguments for every benchmark binary (e.g.
#                          "--benchmark_repetitions=3")
#   --demo-args "ARGS"     arguments for the demo (stage demo runs
#                          BUILD/examples/demo in a scratch folder; its
#                          console output goes to demo.log, its PNG to $OUT)
#   --build-targets "T..." build only these targets (default: all)
#   --build-dir DIR        build directory (default build/gpu)
#   --cmake-arg ARG        extra CMake configure argument (repeatable), e.g.
#                          -DRESPROJ_CUDA_PER_THREAD_DEFAULT_STREAM=ON
#   --jobs N               build parallelism (default: nproc)
#   --timeout SECONDS      limit per test or benchmark binary (default 300)
#   -h, --help             this text
#
# Output goes to $OUT (default ./out, git-ignored), at most 8 files:
#   build.log    configure + build output (tail only if huge)
#   tests.log    output of every test binary and of ctest
#   bench.log    console output of the benchmark binaries (incl. the
#                "size your LOR chunks" table)
#   bench.json   all benchmark results (Google Benchmark JSON, merged per binary)
#   chunks.csv   the chunk-size table, when a binary supports --chunk_csv
#   demo.log     the demo's console output (stage demo), and its PNG
#   profile.log  Nsight Compute sections of the profiled kernels (stage profile)
#   summary.md   GPU and clocks, test table, benchmark table (medians), chunk table
# summary.md is rewritten after every stage (so a run cut short still leaves one)
# and printed at the end.
#
# Exit status: 0 when everything that ran passed; 1 if the build failed, a test
# failed or crashed, ctest failed, or a benchmark binary failed.
#
# The script never changes GPU clocks or settings; it only reads nvidia-smi.

set -u -o pipefail

usage() { sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1

stages="build,test,bench"
test_filter='*'
test_bin_re='^gpu_'
run_ctest=1
bench_filter='.'
bench_bin_re=''
bench_args=''
demo_args=''
build_targets=''
profile_binary='bench_gpu_tof'
profile_filters=()
profile_kernels='.'
profile_count=4
build_dir='build/gpu'
jobs=$(nproc 2>/dev/null || echo 4)
timeout_s=300

need_value() { [ $# -ge 2 ] || { echo "run_gpu.sh: $1 needs a value" >&2; exit 2; }; }
cmake_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --stages) need_value "$@"; stages=$2; shift 2 ;;
    --cmake-arg) need_value "$@"; cmake_args+=("$2"); shift 2 ;;
    --stages=*) stages=${1#*=}; shift ;;
    --tests) need_value "$@"; test_filter=$2; shift 2 ;;
    --tests=*) test_filter=${1#*=}; shift ;;
    --test-binaries) need_value "$@"; test_bin_re=$2; shift 2 ;;
    --test-binaries=*) test_bin_re=${1#*=}; shift ;;
    --no-ctest) run_ctest=0; shift ;;
    --bench) need_value "$@"; bench_filter=$2; shift 2 ;;
    --bench=*) bench_filter=${1#*=}; shift ;;
    --bench-binaries) need_value "$@"; bench_bin_re=$2; shift 2 ;;
    --bench-binaries=*) bench_bin_re=${1#*=}; shift ;;
    --bench-args) need_value "$@"; bench_args=$2; shift 2 ;;
    --bench-args=*) bench_args=${1#*=}; shift ;;
    --demo-args) need_value "$@"; demo_args=$2; shift 2 ;;
    --demo-args=*) demo_args=${1#*=}; shift ;;
    --profile-binary) need_value "$@"; profile_binary=$2; shift 2 ;;
    --profile-filter) need_value "$@"; profile_filters+=("$2"); shift 2 ;;
    --profile-kernels) need_value "$@"; profile_kernels=$2; shift 2 ;;
    --profile-count) need_value "$@"; profile_count=$2; shift 2 ;;
    --build-targets) need_value "$@"; build_targets=$2; shift 2 ;;
    --build-targets=*) build_targets=${1#*=}; shift ;;
    --build-dir) need_value "$@"; build_dir=$2; shift 2 ;;
    --build-dir=*) build_dir=${1#*=}; shift ;;
    --jobs) need_value "$@"; jobs=$2; shift 2 ;;
    --jobs=*) jobs=${1#*=}; shift ;;
    --timeout) need_value "$@"; timeout_s=$2; shift 2 ;;
    --timeout=*) timeout_s=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run_gpu.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

has_stage() { case ",$stages," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
for s in ${stages//,/ }; do
  case "$s" in build|test|bench|demo|profile) ;; *) echo "run_gpu.sh: unknown stage '$s'" >&2; exit 2 ;; esac
done

OUT=${OUT:-$root/out}
# NVLink multicast (NVLS) stays off on the lent machines (see the device notes).
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
mkdir -p "$OUT"
case "$build_dir" in /*) build=$build_dir ;; *) build=$root/$build_dir ;; esac

# Scratch state for the summary (outside $OUT: only 8 files come back).
state=$(mktemp -d "${TMPDIR:-/tmp}/run_gpu.XXXXXX")
trap 'rm -rf "$state"' EXIT
: >"$state/tests.tsv"      # binary \t passed \t failed \t skipped \t rc \t note
: >"$state/bench.tsv"      # binary \t rc \t seconds
echo "not run" >"$state/build_status"
echo "not run" >"$state/ctest_summary"
echo "$stages" >"$state/stages"
failures=0

log() { printf '[run_gpu %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# Keeps only the last $2 bytes of file $1 (with a note at the top).
cap_file() {
  local f=$1 max=$2 size
  [ -f "$f" ] || return 0
  size=$(stat -c %s "$f")
  if [ "$size" -gt "$max" ]; then
    { echo "[run_gpu: truncated, last $max of $size bytes kept]"; tail -c "$max" "$f"; } >"$f.tmp"
    mv "$f.tmp" "$f"
  fi
}

gpu_query() {
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv 2>&1
  else
    echo "nvidia-smi not found"
  fi
}

# ------------------------------------------------------------- summary --
write_summary() {
  OUT="$OUT" STATE="$state" BUILD="$build" python3 - <<'PY' || echo "run_gpu.sh: summary failed" >&2
import csv, glob, json, math, os, statistics

out, state, build = os.environ["OUT"], os.environ["STATE"], os.environ["BUILD"]

def read(name, default=""):
    try:
        with open(os.path.join(state, name)) as f:
            return f.read().strip()
    except OSError:
        return default

def sci(v):
    """2.31e9 style."""
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return ""
    if v == 0:
        return "0"
    e = math.floor(math.log10(abs(v)))
    m = v / 10 ** e
    if abs(round(m, 2)) >= 10:
        m, e = m / 10, e + 1
    return f"{m:.2f}e{e}"

def chunk_label(c):
    try:
        n = int(float(c))
    except ValueError:
        return c
    k = len(str(n)) - 1
    return f"1e{k}" if n == 10 ** k else str(n)

def fmt_time(value, unit):
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}.get(unit, 1.0)
    s = value * scale
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.2f} us"

lines = ["# resproj GPU run", ""]
lines += ["Stages: " + read("stages"), ""]
lines += ["## GPU (nvidia-smi)", "", "At start:", "```", read("gpu_start", "n/a"), "```"]
if read("gpu_after"):
    lines += ["After the benchmarks:", "```", read("gpu_after"), "```"]
lines += ["", "## Build", "", f"- build dir: `{build}`", f"- status: {read('build_status')}", ""]

lines += ["## Tests", ""]
rows = []
try:
    with open(os.path.join(state, "tests.tsv")) as f:
        rows = [r for r in csv.reader(f, delimiter="\t") if r]
except OSError:
    pass
if rows:
    lines += ["| binary | passed | failed | skipped | exit | note |", "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        r += [""] * (6 - len(r))
        lines.append("| " + " | ".join(r[:6]) + " |")
    tot = [sum(int(r[i]) for r in rows if r[i].isdigit()) for i in (1, 2, 3)]
    lines += [f"| **total** | {tot[0]} | {tot[1]} | {tot[2]} | | |"]
else:
    lines += ["(no GPU test binary ran)"]
lines += ["", "ctest (CPU tests, labels consumer and gpu excluded): " + read("ctest_summary"), ""]

# Benchmarks: merged JSON (bench.json) or per-binary files not merged yet.
def load_json(path):
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError:
        for tail in ("\n  ]\n}\n", "\n}\n  ]\n}\n"):  # cut short mid-run
            try:
                return json.loads(text.rstrip().rstrip(",") + tail)
            except ValueError:
                pass
    return None

per_binary = {}
merged = os.path.join(out, "bench.json")
if os.path.exists(merged):
    data = load_json(merged) or {}
    per_binary.update(data.get("binaries", {}))
for path in sorted(glob.glob(os.path.join(out, "bench_*.json"))):
    data = load_json(path)
    if data is not None:
        per_binary[os.path.basename(path)[len("bench_"):-len(".json")]] = data

if read("profile_status"):
    lines += ["## Profile", "", "ncu: " + read("profile_status") + " (sections in profile.log)", ""]
if read("demo_status"):
    lines += ["## Demo", "", "demo: " + read("demo_status") + " (console output in demo.log)", ""]
lines += ["## Benchmarks (medians)", ""]
bench_status = read("bench_status")
if bench_status:
    lines += [bench_status, ""]
if per_binary:
    lines += ["| name | real time | LORs/s | us/call |", "|---|---:|---:|---:|"]
    for binary, data in per_binary.items():
        benches = data.get("benchmarks", [])
        medians = {b["run_name"]: b for b in benches
                   if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"}
        errors, iters = {}, {}
        for b in benches:
            rn = b.get("run_name", b.get("name"))
            if b.get("error_occurred") or (b.get("skipped") not in (None, False, 0, "")):
                errors.setdefault(rn, b.get("error_message", b.get("skip_message", "error")))
            elif b.get("run_type", "iteration") == "iteration" and rn not in medians:
                iters.setdefault(rn, []).append(b)
        order = []
        for b in benches:
            rn = b.get("run_name", b.get("name"))
            if rn not in order:
                order.append(rn)
        for rn in order:
            shown = rn.replace("/manual_time", "")
            if rn in medians:
                b = medians[rn]
                t, ips, upc = b.get("real_time"), b.get("items_per_second"), b.get("us_per_call")
                unit = b.get("time_unit", "ns")
            elif rn in iters:
                runs = iters[rn]
                med = lambda key: (statistics.median([r[key] for r in runs if key in r])
                                   if any(key in r for r in runs) else None)
                t, ips, upc = med("real_time"), med("items_per_second"), med("us_per_call")
                unit = runs[0].get("time_unit", "ns")
            elif rn in errors:
                msg = str(errors[rn]).replace("|", "/")[:160]
                lines.append(f"| {shown} | ERROR: {msg} | | |")
                continue
            else:
                continue
            upc_s = f"{upc:.2f}" if isinstance(upc, (int, float)) else ""
            lines.append(f"| {shown} | {fmt_time(t, unit)} | {sci(ips)} | {upc_s} |")
    lines += [""]
else:
    lines += ["(no benchmark results)", ""]

chunks = os.path.join(out, "chunks.csv")
if os.path.exists(chunks):
    with open(chunks) as f:
        rows = list(csv.DictReader(f))
    if rows:
        lines += ["## Size your LOR chunks (dmi-subset forward; % of the one-call figure)", "",
                  "| variant | chunk | us/call | LORs/s | % of peak | >= 90% | note |",
                  "|---|---:|---:|---:|---:|---|---|"]
        first = {}
        for r in rows:
            try:
                rate = sci(float(r["lors_per_second"]))
            except ValueError:
                rate = r["lors_per_second"]
            lines.append(f"| {r['variant']} | {chunk_label(r['chunk'])} | {r['us_per_call']} | "
                         f"{rate} | {r['percent_of_peak']} | {r['reaches_90']} | {r['note']} |")
            if r["reaches_90"] == "yes":
                first.setdefault(r["variant"], chunk_label(r["chunk"]))
        variants = list(dict.fromkeys(r["variant"] for r in rows))
        lines += ["", "First chunk size reaching 90%: " +
                  "; ".join(f"{v}: {first.get(v, 'none')}" for v in variants), ""]

files = sorted(os.listdir(out))
lines += ["## Files in $OUT", "", ", ".join(files + ([] if "summary.md" in files else ["summary.md"])), ""]
with open(os.path.join(out, "summary.md"), "w") as f:
    f.write("\n".join(lines))
PY
}

gpu_query >"$state/gpu_start"
log "OUT=$OUT build=$build stages=$stages"

# --------------------------------------------------------------- build --
if has_stage build; then
  log "build: configure + build (-j $jobs), log in $OUT/build.log"
  t0=$(date +%s)
  {
    echo "== cmake configure"
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DRESPROJ_BUILD_TESTS=ON \
      -DRESPROJ_BUILD_BENCHMARKS=ON -DRESPROJ_BUILD_EXAMPLES=ON \
      ${cmake_args[@]+"${cmake_args[@]}"} &&
      echo "== cmake --build" &&
      # shellcheck disable=SC2086
      cmake --build "$build" -j "$jobs" ${build_targets:+--target $build_targets} -- -k 0 # keep going: one broken target
                                                  # must not stop the others
  } >"$OUT/build.log" 2>&1
  rc=$?
  t1=$(date +%s)
  cap_file "$OUT/build.log" $((4 * 1024 * 1024))
  if [ $rc -eq 0 ]; then
    echo "ok ($((t1 - t0)) s)" >"$state/build_status"
    log "build: ok ($((t1 - t0)) s)"
  else
    echo "FAILED (exit $rc, $((t1 - t0)) s); last lines of build.log:
\`\`\`
$(grep -E 'error|Error|FAILED' "$OUT/build.log" | head -n 20)
...
$(tail -n 15 "$OUT/build.log")
\`\`\`" >"$state/build_status"
    log "build: FAILED (exit $rc); see build.log"
    failures=$((failures + 1))
  fi
  write_summary
fi

# ---------------------------------------------------------------- test --
# Executables under $1 (the CMake default output folder), else anywhere in
# the build tree except CMake's own and the consumer-test folders.
find_executables() {
  local found
  if [ -d "$1" ]; then
    found=$(find "$1" -maxdepth 1 -type f -perm -u+x | sort)
  fi
  if [ -z "${found:-}" ]; then
    found=$(find "$build" \( -name CMakeFiles -o -name 'consumer-*' -o -name '_deps' \) -prune \
      -o -type f -perm -u+x -print | sort)
  fi
  [ -n "${found:-}" ] && printf '%s\n' "$found"
  return 0
}

count_of() { # $1 = label regex, $2 = log; prints the count or 0
  local n
  n=$(grep -E "^\[  $1 \] [0-9]+ tests?[,.]" "$2" | tail -n 1 | grep -oE '[0-9]+' | head -n 1)
  echo "${n:-0}"
}

if has_stage test; then
  : >>"$OUT/tests.log"
  if [ ! -d "$build" ]; then
    log "test: $build not found (build first)"
    printf '%s\t\t\t\t\t%s\n' "(none)" "no build directory $build" >>"$state/tests.tsv"
    failures=$((failures + 1))
  else
    mapfile -t test_paths < <(find_executables "$build/tests" | while read -r p; do
      printf '%s\n' "${p##*/}" | grep -qE -- "$test_bin_re" && printf '%s\n' "$p"; done)
    if [ ${#test_paths[@]} -eq 0 ]; then
      log "test: no test binary matches '$test_bin_re' under $build/tests"
      printf '%s\t\t\t\t\t%s\n' "(none)" "no binary matches '$test_bin_re'" >>"$state/tests.tsv"
    fi
    for bin in "${test_paths[@]}"; do
      name=${bin##*/}
      log "test: $name --gtest_filter=$test_filter"
      one="$state/test_$name.log"
      timeout "$timeout_s" "$bin" --gtest_filter="$test_filter" --gtest_color=no >"$one" 2>&1
      rc=$?
      passed=$(count_of "PASSED " "$one")
      failed=$(count_of "FAILED " "$one")
      skipped=$(count_of "SKIPPED" "$one")
      note=""
      if [ $rc -eq 124 ]; then
        note="timed out after ${timeout_s} s"
      elif [ $rc -ne 0 ] && [ "$failed" = 0 ]; then
        note="exited with $rc without a gtest failure (crash?)"
      fi
      if [ $rc -ne 0 ]; then
        failures=$((failures + 1))
        [ "$failed" = 0 ] && failed=1 # count the crash as a failure
        note="${note:+$note; }$(grep -E '^\[  FAILED  \] [A-Za-z_]' "$one" | sed 's/^\[  FAILED  \] //' |
          sed 's/ (.*//' | sort -u | head -n 8 | paste -sd ' ' -)"
      fi
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$passed" "$failed" "$skipped" "$rc" "$note" \
        >>"$state/tests.tsv"
      { echo "=================== $name (exit $rc)"; cat "$one"; } >>"$OUT/tests.log"
      log "test: $name: passed $passed, failed $failed, skipped $skipped, exit $rc"
    done
    if [ $run_ctest -eq 1 ]; then
      # The GPU test binaries ran directly above; ctest runs the rest (the
      # CPU layers), without the consumer (re-build) tests.
      log "test: ctest -LE 'consumer|gpu'"
      {
        echo "=================== ctest --test-dir $build -j16 -LE '^(consumer|gpu)\$'"
        ctest --test-dir "$build" -j16 -LE '^(consumer|gpu)$' --output-on-failure --timeout "$timeout_s"
      } >"$state/ctest.log" 2>&1
      rc=$?
      cat "$state/ctest.log" >>"$OUT/tests.log"
      line=$(grep -E 'tests passed|No tests were found' "$state/ctest.log" | tail -n 1)
      failed_list=$(sed -n '/The following tests FAILED:/,$p' "$state/ctest.log" |
        grep -E '^[[:space:]]+[0-9]+ - ' | sed 's/^[[:space:]]*//' | head -n 20 | paste -sd ';' -)
      echo "${line:-no summary line} (exit $rc)${failed_list:+; failed: $failed_list}" \
        >"$state/ctest_summary"
      [ $rc -ne 0 ] && failures=$((failures + 1))
      log "test: ctest: ${line:-no summary line} (exit $rc)"
    else
      echo "skipped (--no-ctest)" >"$state/ctest_summary"
    fi
  fi
  cap_file "$OUT/tests.log" $((15 * 1024 * 1024))
  write_summary
fi

# --------------------------------------------------------------- bench --
if has_stage bench; then
  : >>"$OUT/bench.log"
  if [ ! -d "$build" ]; then
    log "bench: $build not found (build first)"
    echo "no build directory $build" >"$state/bench_status"
    failures=$((failures + 1))
  else
    bench_paths=()
    while read -r p; do
      name=${p##*/}
      case "$name" in bench_*) ;; *) continue ;; esac
      if [ -n "$bench_bin_re" ]; then
        printf '%s\n' "$name" | grep -qE -- "$bench_bin_re" && bench_paths+=("$p")
      elif ldd "$p" 2>/dev/null | grep -q libcudart; then
        bench_paths+=("$p")
      fi
    done < <(find_executables "$build/benchmarks")
    if [ ${#bench_paths[@]} -eq 0 ]; then
      log "bench: no benchmark binary selected"
      echo "no benchmark binary selected" >"$state/bench_status"
    fi
    status=""
    for bin in "${bench_paths[@]}"; do
      name=${bin##*/}
      extra=()
      # A binary that understands --chunk_csv writes the chunk table as CSV.
      if grep -qa -- '--chunk_csv=' "$bin"; then extra+=("--chunk_csv=$OUT/chunks.csv"); fi
      # shellcheck disable=SC2206
      [ -n "$bench_args" ] && extra+=($bench_args)
      log "bench: $name --benchmark_filter=$bench_filter ${extra[*]}"
      t0=$(date +%s)
      echo "=================== $name --benchmark_filter=$bench_filter ${extra[*]}" \
        >>"$OUT/bench.log"
      lines_before=$(wc -l <"$OUT/bench.log")
      timeout "$timeout_s" "$bin" --benchmark_filter="$bench_filter" \
        --benchmark_out="$OUT/bench_${name#bench_}.json" --benchmark_out_format=json \
        "${extra[@]}" >>"$OUT/bench.log" 2>&1
      rc=$?
      t1=$(date +%s)
      echo "=================== $name: exit $rc ($((t1 - t0)) s)" >>"$OUT/bench.log"
      note=""
      [ $rc -eq 124 ] && note=", timed out after ${timeout_s} s"
      [ $rc -eq 2 ] && note=", some benchmarks reported errors"
      if tail -n +"$((lines_before + 1))" "$OUT/bench.log" | grep -q 'no CUDA device'; then
        note="$note, no CUDA device: skipped"
      fi
      status="$status- $name: exit $rc ($((t1 - t0)) s$note)"$'\n'
      if [ $rc -ne 0 ]; then failures=$((failures + 1)); fi
      log "bench: $name: exit $rc ($((t1 - t0)) s$note)"
      echo "$status" >"$state/bench_status"
      write_summary
    done
    gpu_query >"$state/gpu_after"
  fi
  # Merge the per-binary JSON files into bench.json (at most 8 files come back).
  OUT="$OUT" python3 - <<'PY' || echo "run_gpu.sh: merging bench JSON failed" >&2
import glob, json, os
out = os.environ["OUT"]
merged_path = os.path.join(out, "bench.json")
merged = {"binaries": {}}
if not glob.glob(os.path.join(out, "bench_*.json")):
    raise SystemExit(0)  # nothing new to merge
if os.path.exists(merged_path):
    try:
        with open(merged_path) as f:
            merged = json.load(f)
    except ValueError:
        pass
for path in sorted(glob.glob(os.path.join(out, "bench_*.json"))):
    name = os.path.basename(path)[len("bench_"):-len(".json")]
    with open(path) as f:
        text = f.read()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
        for tail in ("\n  ]\n}\n", "\n}\n  ]\n}\n"):
            try:
                data = json.loads(text.rstrip().rstrip(",") + tail)
                data["note"] = "output cut short; closed by run_gpu.sh"
                break
            except ValueError:
                pass
        if data is None:
            data = {"raw": text[-1000000:]}
    merged["binaries"][name] = data
    os.remove(path)
with open(merged_path, "w") as f:
    json.dump(merged, f, indent=1)
PY
  cap_file "$OUT/bench.log" $((15 * 1024 * 1024))
  write_summary
fi

# ---------------------------------------------------------------- demo --
if has_stage demo; then
  demo_bin="$build/examples/demo"
  if [ ! -x "$demo_bin" ]; then
    log "demo: $demo_bin not found (build first)"
    echo "not built" >"$state/demo_status"
    failures=$((failures + 1))
  else
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/run_gpu_demo.XXXXXX")
    log "demo: $demo_bin $demo_args (in $scratch)"
    t0=$(date +%s)
    # shellcheck disable=SC2086
    (cd "$scratch" && timeout "$timeout_s" "$demo_bin" $demo_args) >"$OUT/demo.log" 2>&1
    rc=$?
    # One process per GPU sharing a caller-made NCCL communicator.
    if [ -x "$build/examples/multi_gpu_processes" ]; then
      echo "=================== multi_gpu_processes" >>"$OUT/demo.log"
      timeout 120 "$build/examples/multi_gpu_processes" >>"$OUT/demo.log" 2>&1
      mrc=$?
      echo "=================== multi_gpu_processes: exit $mrc" >>"$OUT/demo.log"
      [ $mrc -ne 0 ] && rc=$mrc
    fi
    # A user's own list-mode file through the short example (the demo's file).
    if [ -x "$build/examples/tof_listmode_osem" ] && [ -f "$scratch/demo_events.lm" ]; then
      echo "=================== tof_listmode_osem demo_events.lm" >>"$OUT/demo.log"
      (cd "$scratch" && timeout 120 "$build/examples/tof_listmode_osem" demo_events.lm) \
        >>"$OUT/demo.log" 2>&1
      trc=$?
      echo "=================== tof_listmode_osem: exit $trc" >>"$OUT/demo.log"
      [ $trc -ne 0 ] && rc=$trc
    fi
    t1=$(date +%s)
    echo "exit $rc ($((t1 - t0)) s)" >"$state/demo_status"
    [ $rc -ne 0 ] && failures=$((failures + 1))
    find "$scratch" -maxdepth 2 -name '*.png' -size -16M -exec cp {} "$OUT/" \;
    ls -la "$scratch" >>"$OUT/demo.log" 2>&1
    rm -rf "$scratch"
    cap_file "$OUT/demo.log" $((4 * 1024 * 1024))
    log "demo: exit $rc ($((t1 - t0)) s)"
  fi
  write_summary
fi

# ------------------------------------------------------------- profile --
# One benchmark binary under Nsight Compute: throughput, memory, warp-state
# and launch sections of a few launches of the chosen kernels. Clocks are
# left as they are (--clock-control none), as for the benchmarks.
if has_stage profile; then
  prof_bin="$build/benchmarks/$profile_binary"
  ncu_bin=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)
  if [ ! -x "$prof_bin" ] || [ -z "$ncu_bin" ]; then
    log "profile: ${ncu_bin:-ncu not found}; $prof_bin ${prof_bin:+(exists: $([ -x "$prof_bin" ] && echo yes || echo no))}"
    echo "not run (binary or ncu missing)" >"$state/profile_status"
    failures=$((failures + 1))
  else
    [ ${#profile_filters[@]} -eq 0 ] && profile_filters=('.')
    : >"$OUT/profile.log"
    t0=$(date +%s)
    prof_rc=0
    for pf in "${profile_filters[@]}"; do
      log "profile: ncu -k regex:$profile_kernels -c $profile_count $profile_binary --benchmark_filter=$pf"
      echo "#### profile: $profile_binary --benchmark_filter='$pf' (kernels '$profile_kernels', $profile_count launches)" >>"$OUT/profile.log"
      timeout "$timeout_s" "$ncu_bin" --clock-control none -k "regex:$profile_kernels" \
        -c "$profile_count" --section SpeedOfLight --section MemoryWorkloadAnalysis \
        --section ComputeWorkloadAnalysis --section SchedulerStats \
        --section WarpStateStats --section LaunchStats --section Occupancy \
        "$prof_bin" --benchmark_filter="$pf" --benchmark_repetitions=1 \
        >>"$OUT/profile.log" 2>&1
      rc=$?
      [ $rc -ne 0 ] && prof_rc=$rc
      # A filter that matches no benchmark, or no kernel, is a failure too.
      if tail -n 5 "$OUT/profile.log" | grep -q "No kernels were profiled"; then
        log "profile: no kernel profiled for filter '$pf'"
        [ $prof_rc -eq 0 ] && prof_rc=3
      fi
    done
    t1=$(date +%s)
    echo "exit $prof_rc ($((t1 - t0)) s, ${#profile_filters[@]} filter(s))" >"$state/profile_status"
    [ $prof_rc -ne 0 ] && failures=$((failures + 1))
    cap_file "$OUT/profile.log" $((8 * 1024 * 1024))
    log "profile: exit $prof_rc ($((t1 - t0)) s)"
  fi
  write_summary
fi

# ------------------------------------------------------------- finish --
write_summary
nfiles=$(find "$OUT" -type f | wc -l)
if [ "$nfiles" -gt 8 ]; then
  log "WARNING: $nfiles files under $OUT; only 8 come back:"
  find "$OUT" -type f | sed 's/^/  /'
fi
big=$(find "$OUT" -type f -size +16M)
[ -n "$big" ] && log "WARNING: files over 16 MiB (will not come back): $big"

echo
cat "$OUT/summary.md"
echo
if [ $failures -ne 0 ]; then
  log "$failures failure(s)"
  exit 1
fi
log "all stages passed"
exit 0
