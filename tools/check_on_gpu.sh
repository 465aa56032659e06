#!/usr/bin/env bash
# Run `gpuenv check` on a machine with an NVIDIA GPU and collect what it saw, for the next session
# to turn into fixtures (docs/check.md, "What waits for a GPU").
#
#   bash tools/check_on_gpu.sh OUTDIR [PYTHON]
#
# PYTHON: the interpreter that holds the frameworks (default python3); gpuenv itself runs with
# GPUENV_PYTHON (default: PYTHON; it needs packaging and rich). Frameworks missing there
# are installed only from a folder of wheels carried along (WHEELS=/path), never from the
# network. Writes into OUTDIR:
#   frameworks.txt        which frameworks the interpreter can import
#   nvidia-smi.txt        the driver's own view
#   snapshot.json         gpuenv snapshot (redacted)
#   machine/              tools/capture_machine.py: the probes' raw answers (a recorded machine)
#   raw/<fw>.{stdout,stderr,rc}   each check script run directly (--bench), unparsed
#   check.json, check.exit        gpuenv check --bench --json and its exit code
#   reference.json        tools/check_gpu_reference.py: a hand-written torch timing loop
#   fixtures/<fw>.json    tests/fixtures/check format ("provenance": "recorded: ...")
#   compare.txt           gpuenv's bench against the reference (target: within 10 %)
# and OUTDIR.tar.gz with all of it. Each step goes on when an earlier one failed.
set -u
OUT=${1:?usage: bash tools/check_on_gpu.sh OUTDIR [PYTHON]}
PY=${2:-python3}
GP=${GPUENV_PYTHON:-$PY}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
LIMIT=${LIMIT:-600}  # seconds for each framework's run
mkdir -p "$OUT/raw"
step() { echo "== $*" >&2; }

if [ -n "${WHEELS:-}" ]; then
    step "installing what is missing from $WHEELS"
    for pkg in torch torchvision jax cupy onnxruntime; do
        "$PY" -c "import ${pkg}" 2>/dev/null ||
            "$PY" -m pip install -q --no-index --find-links "$WHEELS" "$pkg" || true
    done
fi

step "frameworks"
"$PY" - >"$OUT/frameworks.txt" <<'PY'
import importlib.util
for name in ("torch", "torchvision", "tensorflow", "jax", "cupy", "onnxruntime"):
    print(name, "yes" if importlib.util.find_spec(name) else "no")
PY
cat "$OUT/frameworks.txt" >&2

step "nvidia-smi"
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || true

step "snapshot and machine capture"
"$GP" -m gpuenv snapshot --python "$PY" -o "$OUT/snapshot.json" || true
"$GP" "$ROOT/tools/capture_machine.py" "$OUT/machine" --python "$PY" || true

TV=false
grep -q '^torchvision yes' "$OUT/frameworks.txt" && TV=true
for fw in torch tensorflow jax cupy onnxruntime; do
    grep -q "^$fw yes" "$OUT/frameworks.txt" || continue
    step "check script: $fw"
    timeout -s KILL "$LIMIT" "$PY" "$ROOT/src/gpuenv/check/_harness.py" "$fw" \
        "{\"bench\": true, \"torchvision\": $TV, \"budget\": $LIMIT}" \
        >"$OUT/raw/$fw.stdout" 2>"$OUT/raw/$fw.stderr"
    echo $? >"$OUT/raw/$fw.rc"
done

step "gpuenv check --bench --json"
"$GP" -m gpuenv check --python "$PY" --bench --json --timeout "$LIMIT" >"$OUT/check.json"
echo $? >"$OUT/check.exit"

step "reference timing loop (torch)"
"$PY" "$ROOT/tools/check_gpu_reference.py" >"$OUT/reference.json" || true

step "fixtures and comparison"
"$GP" "$ROOT/tools/record_check_fixtures.py" "$OUT" || true

tar -czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")"
step "wrote $OUT and $OUT.tar.gz"
