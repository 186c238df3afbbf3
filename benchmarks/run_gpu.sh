#!/usr/bin/env bash
# Build, test and benchmark resproj on a GPU machine through the CMake presets
# gpu or gpu-ptds (tests, ctest label gpu) and gpu-bench (benchmarks, examples).
#
# Usage: benchmarks/run_gpu.sh [--stages build,test,bench] [options]
#   --stages LIST          of build,test,sanitize,bench,demo,profile; build builds what the others use
#                          (sanitize: the GPU tests under compute-sanitizer, tests/gpu/run_sanitizers.sh)
#   --ptds                 test preset gpu-ptds (tests use the per-thread default stream)
#   --build-targets "T..." only these targets, each built in the preset that has it
#   --no-ctest             run the built test binaries directly (--test-binaries REGEX,
#                          default '^(gpu|contract)_'; --tests GTEST_FILTER) instead of ctest
#   --ctest-args "ARGS"    extra arguments of `ctest --preset gpu`, e.g. "-L multi_gpu"
#   --bench REGEX          benchmark filter; --bench-binaries REGEX (default: those using
#                          CUDA); --bench-args "ARGS" for every benchmark binary
#   --demo-args "ARGS"     stage demo: demo, multi_gpu_processes, tof_listmode_osem
#   --profile-binary NAME  stage profile under Nsight Compute (default bench_gpu_tof);
#                          --profile-filter RE (repeatable), --profile-kernels RE, --profile-count N
#   --cmake-arg ARG (repeatable), --jobs N, --timeout S (per binary, default 300)
# Into $OUT (default ./out), at most 8 files: build.log, tests.log, bench.log, bench.json
# ({"binaries": {name: Google Benchmark JSON}}), chunks.csv, demo.log and PNG, profile.log,
# summary.md (GPU, builds, test counts, benchmark exits and tables). Exit status 1 when
# anything failed. GPU clocks are left alone.

set -u -o pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd) && cd "$root" || exit 1
stages=build,test,bench ptds=0 targets='' ctest=1 gtest_filter='*' test_re='^(gpu|contract)_'
ctest_args='' bench_filter='.' bench_re='' bench_args='' demo_args='' timeout_s=300
prof_bin=bench_gpu_tof prof_kernels='.' prof_count=4 prof_filters=() cmake_args=()
jobs=$(nproc 2>/dev/null || echo 4)
while [ $# -gt 0 ]; do
  case "$1" in --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;; esac
  case "$1" in
    --ptds) ptds=1; shift; continue ;;
    --no-ctest) ctest=0; shift; continue ;;
    -h | --help) sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  esac
  [ $# -ge 2 ] || { echo "run_gpu.sh: $1 needs a value" >&2; exit 2; }
  case "$1" in
    --stages) stages=$2 ;; --build-targets) targets=$2 ;; --tests) gtest_filter=$2 ;;
    --test-binaries) test_re=$2 ;; --ctest-args) ctest_args=$2 ;; --bench) bench_filter=$2 ;;
    --bench-binaries) bench_re=$2 ;; --bench-args) bench_args=$2 ;; --demo-args) demo_args=$2 ;;
    --profile-binary) prof_bin=$2 ;; --profile-filter) prof_filters+=("$2") ;;
    --profile-kernels) prof_kernels=$2 ;; --profile-count) prof_count=$2 ;;
    --cmake-arg) cmake_args+=("$2") ;; --jobs) jobs=$2 ;; --timeout) timeout_s=$2 ;;
    *) echo "run_gpu.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift 2
done
has() { case ",$stages," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
for s in ${stages//,/ }; do [[ ,build,test,sanitize,bench,demo,profile, == *",$s,"* ]] || { echo "bad stage $s" >&2; exit 2; }; done
test_preset=gpu && [ $ptds = 1 ] && test_preset=gpu-ptds
presets=()
if has test || has sanitize || ! { has bench || has demo || has profile; }; then presets+=("$test_preset"); fi
if has bench || has demo || has profile || ! { has test || has sanitize; }; then presets+=(gpu-bench); fi
OUT=${OUT:-$root/out} && mkdir -p "$OUT" || exit 1
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} # NVLink multicast stays off
state=$(mktemp -d "${TMPDIR:-/tmp}/run_gpu.XXXXXX") && trap 'rm -rf "$state"' EXIT || exit 1
failures=0 && declare -A n # test counts
log() { printf '[run_gpu %s] %s\n' "$(date +%H:%M:%S)" "$*"; }; note() { log "$*"; echo "- $*" >>"$state/notes"; }
result() { [ "$1" -eq 0 ] || failures=$((failures + 1)); note "${*:2}"; }; matches() { printf '%s\n' "${1##*/}" | grep -qE -- "$2"; }
cap() { [ -f "$1" ] && [ "$(stat -c %s "$1")" -gt $((15 << 20)) ] && tail -c $((15 << 20)) "$1" >"$1.t" && mv "$1.t" "$1"; }
summary() {
  { echo "# resproj GPU run, $(date -u '+%F %T') UTC"; echo; echo "Stages $stages; presets ${presets[*]}."
    echo; echo '```'; { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv || echo "(no nvidia-smi)"; } 2>/dev/null
    echo '```'; echo; cat "$state/notes" 2>/dev/null; [ -f "$OUT/bench.json" ] && echo && python3 "$root/benchmarks/summarize_bench.py" "$OUT/bench.json" "$OUT/chunks.csv"
    echo; echo "Files in \$OUT: $(find "$OUT" -type f -printf '%P\n' | sort | tr '\n' ' ')"
  } >"$OUT/summary.md"
}

if has build; then
  for p in "${presets[@]}"; do t0=$SECONDS
    (echo "=================== preset $p" && cmake --preset "$p" ${cmake_args[@]+"${cmake_args[@]}"} || exit
      want=() && for t in $targets; do ninja -C "build/$p" -t query "$t" &>/dev/null && want+=("$t"); done
      [ -n "$targets" ] && [ ${#want[@]} -eq 0 ] && exit 99 # none of the targets is in $p
      cmake --build --preset "$p" -j "$jobs" ${want[@]+--target "${want[@]}"} -- -k 0) >>"$OUT/build.log" 2>&1
    rc=$? && case $rc in 0) note "build $p: ok ($((SECONDS - t0)) s)" ;; 99) note "build $p: none of the targets" ;;
      *) result $rc "build $p: FAILED (exit $rc), see build.log" ;; esac
  done
  cap "$OUT/build.log"; summary
fi

if has test && [ $ctest = 1 ]; then
  # shellcheck disable=SC2086
  ctest --preset "$test_preset" --timeout "$timeout_s" --output-junit "$state/junit.xml" \
    $ctest_args >>"$OUT/tests.log" 2>&1
  rc=$? && for k in run fail notrun; do n[$k]=$(grep -c "status=\"$k\"" "$state/junit.xml" 2>/dev/null); done
  result $rc "ctest --preset $test_preset: passed ${n[run]:-0}, failed ${n[fail]:-0}, skipped ${n[notrun]:-0} (exit $rc)"
elif has test; then
  for bin in $(find "build/$test_preset/tests" -maxdepth 2 -type f -perm -u+x 2>/dev/null | sort); do
    matches "$bin" "$test_re" || continue
    timeout "$timeout_s" "$bin" --gtest_filter="$gtest_filter" --gtest_color=no >"$state/one.log" 2>&1
    rc=$? && for k in PASSED FAILED SKIPPED; do # GoogleTest's "[  PASSED  ] 12 tests." lines
      n[$k]=$(grep -oE "^\[  $k +\] [0-9]+ tests?[,.]" "$state/one.log" | grep -oE '[0-9]+' | tail -n 1); done
    [ $rc -ne 0 ] && [ "${n[FAILED]:-0}" = 0 ] && n[FAILED]=1 # a crash or time-out is a failure
    { echo "=================== ${bin##*/} (exit $rc)"; cat "$state/one.log"; } >>"$OUT/tests.log"
    result $rc "test ${bin##*/}: passed ${n[PASSED]:-0}, failed ${n[FAILED]:-0}, skipped ${n[SKIPPED]:-0} (exit $rc)"
  done
fi
has test && { cap "$OUT/tests.log"; summary; }; if has sanitize; then # every GPU test binary under memcheck, racecheck, synccheck, initcheck
  tests/gpu/run_sanitizers.sh "build/$test_preset" "$state/san" >"$OUT/sanitize.log" 2>&1
  rc=$? && cat "$state/san/sanitizers.md" >>"$OUT/sanitize.log" 2>/dev/null
  result $rc "sanitize: exit $rc (sanitize.log)"; cap "$OUT/sanitize.log"; summary
fi

if has bench; then
  for bin in $(find build/gpu-bench/benchmarks -maxdepth 1 -type f -perm -u+x -name 'bench_*' 2>/dev/null | sort); do
    if [ -n "$bench_re" ]; then matches "$bin" "$bench_re" || continue
    else ldd "$bin" 2>/dev/null | grep -q libcudart || continue; fi
    extra=() && grep -qa -- '--chunk_csv=' "$bin" && extra+=("--chunk_csv=$OUT/chunks.csv")
    # shellcheck disable=SC2206
    [ -n "$bench_args" ] && extra+=($bench_args)
    t0=$SECONDS && echo "=================== ${bin##*/} ${extra[*]}" >>"$OUT/bench.log"
    timeout "$timeout_s" "$bin" --benchmark_filter="$bench_filter" --benchmark_out_format=json \
      --benchmark_out="$state/${bin##*/}.json" ${extra[@]+"${extra[@]}"} >>"$OUT/bench.log" 2>&1
    rc=$? && result $rc "bench ${bin##*/}: exit $rc ($((SECONDS - t0)) s)"
  done
  # One JSON file for all binaries; output cut short (a time-out) becomes an error entry.
  sep='' && { echo '{"binaries": {'; for f in "$state"/bench_*.json; do
    [ -f "$f" ] || continue; name=${f##*/bench_}; printf '%s"%s": ' "$sep" "${name%.json}"; sep=','
    if [[ $(tail -c 64 "$f" | tr -d '[:space:]') == *']}' ]]; then cat "$f"; else echo '{"error": "output cut short"}'; fi
  done; echo '}}'; } >"$OUT/bench.json"
  cap "$OUT/bench.log"; summary
fi

if has demo; then
  scratch=$(mktemp -d "$state/demo.XXXXXX") ex=$root/build/gpu-bench/examples rc=0
  for cmd in "demo $demo_args" multi_gpu_processes "tof_listmode_osem demo_events.lm"; do
    read -r -a argv <<<"$cmd" && { [ "${argv[0]}" = demo ] || [ -x "$ex/${argv[0]}" ] || continue; }
    echo "=================== ${argv[*]}" >>"$OUT/demo.log"
    (cd "$scratch" && timeout "$timeout_s" "$ex/${argv[0]}" "${argv[@]:1}") >>"$OUT/demo.log" 2>&1 || rc=$?
  done
  find "$scratch" -maxdepth 1 -name '*.png' -exec cp {} "$OUT/" \; ; result $rc "demo: exit $rc (demo.log)"; cap "$OUT/demo.log"; summary
fi

if has profile; then
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null) bin=build/gpu-bench/benchmarks/$prof_bin rc=0
  sections=(SpeedOfLight MemoryWorkloadAnalysis ComputeWorkloadAnalysis SchedulerStats WarpStateStats LaunchStats Occupancy)
  for f in "${prof_filters[@]:-.}"; do
    if [ -z "$ncu" ] || [ ! -x "$bin" ]; then rc=127 && break; fi # ncu or the binary is missing
    echo "#### $prof_bin --benchmark_filter='$f' (kernels '$prof_kernels')" >>"$OUT/profile.log"
    timeout "$timeout_s" "$ncu" --clock-control none -k "regex:$prof_kernels" -c "$prof_count" "${sections[@]/#/--section=}" \
      "$bin" --benchmark_filter="$f" --benchmark_repetitions=1 >>"$OUT/profile.log" 2>&1 || rc=$?
    tail -n 5 "$OUT/profile.log" | grep -q "No kernels were profiled" && rc=3 # profiling nothing fails
  done
  result $rc "profile $prof_bin: exit $rc (127: no ncu or no binary; profile.log)"; cap "$OUT/profile.log"
fi

summary && echo && cat "$OUT/summary.md" && echo
[ "$(find "$OUT" -type f | wc -l)" -gt 8 ] && log "WARNING: more than 8 files under $OUT"
log "$failures failure(s)" && [ "$failures" -eq 0 ]
