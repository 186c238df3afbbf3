#!/usr/bin/env bash
# Builds the libFuzzer harnesses of resproj's file parsers with clang++ in
# build/fuzz and runs each for SECONDS_PER_FUZZER seconds (default 20) on a
# copy of its seed corpus (tests/fuzz/corpus/<parser>; the committed corpus
# is never grown). Prints, per fuzzer, the executions, the time and any
# crash; exits non-zero if any fuzzer found a crash, leak, timeout or
# out-of-memory, or did not run. See docs/fuzzing.md.
#
#   tests/fuzz/run_fuzzers.sh [SECONDS_PER_FUZZER]
#
# Environment:
#   RESPROJ_FUZZ_BUILD_DIR  build directory (default build/fuzz)
#   RESPROJ_FUZZERS         parsers to run (default "npy nifti listmode raw petsird")
#   RESPROJ_FUZZ_JOBS       parallel compile jobs (default: Ninja's)
#   CXX_FUZZ                the Clang C++ compiler (default clang++)
#   RESPROJ_FUZZ_ARGS       extra libFuzzer arguments (e.g. -jobs=4 -workers=4)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

seconds="${1:-20}"
if ! [[ "${seconds}" =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "usage: $0 [SECONDS_PER_FUZZER]   (a positive integer, default 20)" >&2
  exit 2
fi
build="${RESPROJ_FUZZ_BUILD_DIR:-build/fuzz}"
if [[ "${build}" != /* ]]; then
  build="${PWD}/${build}" # the fuzzers run in their work directories
fi
read -r -a fuzzers <<<"${RESPROJ_FUZZERS:-npy nifti listmode raw petsird}"
cxx="${CXX_FUZZ:-clang++}"
read -r -a extra_args <<<"${RESPROJ_FUZZ_ARGS:-}"
start=${SECONDS}

# ---------------------------------------------------------------- build --
echo "== fuzz: configure and build (${cxx})"
if grep -q "RESPROJ_BUILD_FUZZERS" CMakeLists.txt; then
  source_dir="${PWD}"
  configure=(-DRESPROJ_ENABLE_CUDA=OFF -DRESPROJ_BUILD_TESTS=OFF -DRESPROJ_BUILD_BENCHMARKS=OFF
    -DRESPROJ_BUILD_EXAMPLES=OFF -DRESPROJ_BUILD_FUZZERS=ON)
  bindir="${build}/tests/fuzz"
else
  # The top-level option is not there: configure the harnesses on their own.
  source_dir="${PWD}/tests/fuzz"
  configure=()
  bindir="${build}"
fi
# A build directory configured from the other source directory is redone.
if [[ -f "${build}/CMakeCache.txt" ]] &&
  ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=${source_dir}" "${build}/CMakeCache.txt"; then
  rm -rf "${build}"
fi
mkdir -p "${build}"
cmake -S "${source_dir}" -B "${build}" -G Ninja -DCMAKE_CXX_COMPILER="${cxx}" \
  ${configure[@]+"${configure[@]}"} >"${build}/configure.log" 2>&1 ||
  { cat "${build}/configure.log"; exit 1; }
targets=()
for f in "${fuzzers[@]}"; do
  targets+=("fuzz_${f}")
done
jobs=()
if [[ -n "${RESPROJ_FUZZ_JOBS:-}" ]]; then
  jobs=(--parallel "${RESPROJ_FUZZ_JOBS}")
fi
cmake --build "${build}" --target "${targets[@]}" ${jobs[@]+"${jobs[@]}"}
echo "== fuzz: build $((SECONDS - start)) s"

# ------------------------------------------------------------------ run --
failed=0
summary=()
for f in "${fuzzers[@]}"; do
  bin="${bindir}/fuzz_${f}"
  work="${build}/run/${f}"
  rm -rf "${work}"
  mkdir -p "${work}/corpus" "${work}/artifacts"
  if [[ -d "tests/fuzz/corpus/${f}" ]]; then
    cp -R "tests/fuzz/corpus/${f}/." "${work}/corpus/"
  fi
  log="${work}/fuzz.log"
  echo "== fuzz_${f}: ${seconds} s on $(find "${work}/corpus" -type f | wc -l) seed files"
  t0=${SECONDS}
  rc=0
  # Run in the work directory: with -jobs, libFuzzer writes fuzz-<n>.log there.
  (cd "${work}" && timeout -k 10 $((seconds + 120)) "${bin}" -max_total_time="${seconds}" \
    -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="${work}/artifacts/" ${extra_args[@]+"${extra_args[@]}"} \
    "${work}/corpus") >"${log}" 2>&1 || rc=$?
  elapsed=$((SECONDS - t0))
  # (|| true: a crash while loading the corpus leaves no stats and no coverage)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "${log}" | tail -n 1 || true)
  execs="${execs:-?}"
  cov=$(grep -Eo 'cov: [0-9]+' "${log}" | tail -n 1 | sed 's/cov: //' || true)
  artifacts=$(find "${work}/artifacts" -type f \
    \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
  if ((rc != 0)) || [[ -n "${artifacts}" ]]; then
    failed=1
    result="FAILED (exit ${rc})"
    echo "-- fuzz_${f}: last lines of ${log}:"
    tail -n 60 "${log}"
    if [[ -n "${artifacts}" ]]; then
      echo "-- fuzz_${f}: reproduce with:"
      while IFS= read -r a; do
        echo "   ${bin} ${a}"
      done <<<"${artifacts}"
    fi
  else
    result="ok"
  fi
  line=$(printf '%-14s %12s execs %5s s  cov %6s  %s' "fuzz_${f}" "${execs}" "${elapsed}" \
    "${cov:-?}" "${result}")
  echo "${line}"
  summary+=("${line}")
done

echo "== fuzz summary (${seconds} s per fuzzer, total $((SECONDS - start)) s)"
printf '%s\n' "${summary[@]}"
if ((failed)); then
  echo "== fuzz: FAILED (artifacts under ${build}/run/*/artifacts)"
  exit 1
fi
echo "== fuzz: no crash"
