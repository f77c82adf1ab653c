#!/usr/bin/env bash
# The GPU checks in one run, for a lent device machine (docs/cost-database.md): a CUPTI
# smoke test first (it says clearly when CUPTI cannot trace there), then the `gpu` tests,
# then a calibration sweep of bf16 GEMMs, its database and a short report under OUT.
#
# Usage: tests/gpu/run_device_checks.sh [--part calibration|validation|all] [OUT]
# Build here first (cmake --preset release && cmake --build --preset release): the device
# machine has no package registry. CUDA's shared libraries are found through
# LD_LIBRARY_PATH (set DTSIM_CUDA_LIBS to a folder of them when the machine lacks them).
set -uo pipefail
cd "$(dirname "$0")/../.."
part=all
if [[ ${1:-} == --part ]]; then
  part=$2
  shift 2
fi
out=${1:-${OUT:-gpu-checks}}
mkdir -p "$out"
build=build/release
dtsim=$build/cli/dtsim
export LD_LIBRARY_PATH=${DTSIM_CUDA_LIBS:-/usr/local/cuda/lib64}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
report=$out/report.md
status=0
step() {  # step NAME COMMAND...: run it, log it, note the result
  local name=$1 t0=$SECONDS
  shift
  echo "== $name"
  if "$@" > "$out/$name.log" 2>&1; then
    echo "   ok ($((SECONDS - t0)) s)"
    echo "- $name: ok ($((SECONDS - t0)) s)" >> "$report"
  else
    echo "   FAILED ($((SECONDS - t0)) s), see $out/$name.log"; tail -20 "$out/$name.log"
    echo "- $name: FAILED, see $name.log" >> "$report"
    status=1
  fi
}

echo "# GPU checks, $(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$report"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; } >> "$report" 2>/dev/null ||
  echo "(nvidia-smi not available)" >> "$report"
missing=$(ldd "$build/tests/gpu_tests" "$dtsim" 2>/dev/null | grep "not found" | sort -u)
if [[ -n $missing ]]; then
  echo "missing shared libraries (set DTSIM_CUDA_LIBS):" >&2
  echo "$missing" >&2
  exit 2
fi

if [[ $part == all || $part == calibration ]]; then
  step cupti-smoke "$build/tests/gpu_tests" --gtest_filter='CuptiTimer.*'
  if grep -q "SKIPPED" "$out/cupti-smoke.log"; then
    echo "CUPTI smoke test skipped: no CUDA device is visible here" | tee -a "$report"
    exit 1
  fi
  step gpu-tests ctest --test-dir "$build" -L gpu --output-on-failure
  step calibrate "$dtsim" calibrate --backend cuda --ops scenarios/kernel-grids/gpu-bf16-gemms.json \
    --budget 3min --out "$out/gpu-costs.json"
  step costs-show "$dtsim" costs show "$out/gpu-costs.json"
  {
    echo
    echo '```'
    cat "$out/costs-show.log"
    echo '```'
    echo
    echo "One GPU: multi-GPU NCCL collectives and inter-node link classes cannot be measured here."
  } >> "$report"
fi
if [[ $part == validation ]]; then
  echo "the validation part (dtsim validate) belongs to the real executor, which is not built yet" |
    tee -a "$report"
  status=1
fi
echo "report: $report"
exit $status
