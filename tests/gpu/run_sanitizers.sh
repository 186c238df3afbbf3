#!/usr/bin/env bash
# Runs the GPU test binaries under compute-sanitizer: memcheck (with leak
# checks), racecheck, synccheck and initcheck, on the tests' small problems.
#
# Usage: tests/gpu/run_sanitizers.sh [BUILD_DIR] [LOG_DIR]
#   BUILD_DIR  a build of the gpu (or gpu-ptds) preset (default build/gpu)
#   LOG_DIR    where the logs go (default $OUT or ./out)
#   TOOLS="memcheck racecheck"   tools to run (default: all four)
#   SANITIZER_TIMEOUT=S          per binary and tool (default 150 s)
# Exit status 1 if any run reports an error, times out or fails.
#
# sanitizer_filters.txt lists, with the reason, the tests left out per binary
# (or per binary and tool) and the few tool options set per binary and tool
# (reports from inside a third-party library, errors provoked on purpose).
set -u -o pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build/gpu}
logs=${2:-${OUT:-$root/out}}
tools=${TOOLS:-memcheck racecheck synccheck initcheck}
limit=${SANITIZER_TIMEOUT:-150}
filters="$root/tests/gpu/sanitizer_filters.txt"
mkdir -p "$logs" || exit 1
command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer not found" >&2; exit 1; }

# Value of the first line "<key>: <value>  # why" of the filters file.
lookup() {
  sed -n "s/^$1:[[:space:]]*\([^#[:space:]]*\).*/\1/p" "$filters" 2>/dev/null | head -n 1
}
# The gtest filter of binary $1 under tool $2.
filter_of() {
  local f
  f=$(lookup "$1 $2")
  [[ -n $f ]] || f=$(lookup "$1")
  echo "${f:-*}"
}

binaries=()
for b in "$build"/tests/gpu_test_* "$build"/tests/contract/contract_test_contract_gpu; do
  [[ -f $b && -x $b && $b != *.cmake ]] && binaries+=("$b")
done
((${#binaries[@]})) || { echo "no GPU test binaries in $build/tests" >&2; exit 1; }

failures=0
summary="$logs/sanitizers.md"
echo "| tool | binary | result | seconds |" >"$summary"
echo "|---|---|---|---|" >>"$summary"
for tool in $tools; do
  for b in "${binaries[@]}"; do
    name=$(basename "$b")
    extra=()
    args=$(lookup "$name $tool args")
    [[ $tool == memcheck && $args != *--leak-check* ]] && extra=(--leak-check full)
    [[ -n $args ]] && IFS=, read -r -a more <<<"$args" && extra+=("${more[@]}")
    log="$logs/sanitize_${tool}_${name}.log"
    start=$SECONDS
    timeout "$limit" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 \
      --print-limit 20 "$b" --gtest_filter="$(filter_of "$name" "$tool")" --gtest_brief=1 \
      >"$log" 2>&1
    rc=$?
    errors=$(grep -o 'ERROR SUMMARY: [0-9]* error' "$log" | tail -n 1 | grep -o '[0-9]*')
    case $rc in
      0) result="clean (${errors:-0} errors)" ;;
      99) result="${errors:-?} errors" ;;
      124) result="timed out after $limit s" ;;
      *) result="exit $rc" ;;
    esac
    [[ $rc == 0 ]] || failures=$((failures + 1))
    echo "| $tool | $name | $result | $((SECONDS - start)) |" | tee -a "$summary"
  done
done
echo "sanitizer runs failed: $failures" | tee -a "$summary"
((failures == 0))
