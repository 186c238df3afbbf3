#!/usr/bin/env bash
# The ctest io.petsird.cross: resproj's PETSIRD reader and writer against the
# official `petsird` Python package.
#
#   run_cross_tests.sh TEST_EXECUTABLE WORK_DIR [PYTHON]
#
# The Python is $RESPROJ_PETSIRD_PYTHON when set, else PYTHON (the one CMake
# configured, possibly empty). Without a Python that imports petsird 0.12,
# exits 77 (ctest: skipped) and says why; 1 instead when
# RESPROJ_PETSIRD_REQUIRED=1 (CI). Otherwise: make_petsird_files.py writes
# the files into WORK_DIR, TEST_EXECUTABLE runs PetsirdCross.* on them, and
# check_resproj_file.py reads the file our writer left there.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exe="$1"
work="$2"
python="${RESPROJ_PETSIRD_PYTHON:-${3:-}}"
skip=77
if [[ "${RESPROJ_PETSIRD_REQUIRED:-0}" == 1 ]]; then
  skip=1
fi

if [[ -z "${python}" ]]; then
  echo "skipped: no Python with the petsird package (set RESPROJ_PETSIRD_PYTHON or" \
    "configure with -DRESPROJ_PETSIRD_PYTHON=...; pip install petsird==0.12.0)"
  exit ${skip}
fi
if ! "${python}" -c "import petsird, numpy" 2>/dev/null; then
  echo "skipped: ${python} cannot import petsird and numpy (pip install petsird==0.12.0)"
  exit ${skip}
fi
version="$("${python}" -c "import importlib.metadata as m; print(m.version('petsird'))")"
if [[ "${version}" != 0.12.* ]]; then
  echo "skipped: petsird ${version} found; these files and resproj's reader are PETSIRD 0.12"
  exit ${skip}
fi

rm -rf "${work}"
mkdir -p "${work}"
echo "== petsird ${version} (${python}) writes the test files"
"${python}" "${here}/make_petsird_files.py" "${work}"
echo "== resproj reads them (PetsirdCross.*)"
RESPROJ_PETSIRD_DATA="${work}" "${exe}" --gtest_filter='PetsirdCross.*'
echo "== petsird reads resproj's file"
"${python}" "${here}/check_resproj_file.py" "${work}"
