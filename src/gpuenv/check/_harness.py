# gpuenv-check-harness: run inside the target interpreter; prints one JSON document on stdout.
"""The entry point of `gpuenv check` inside the target interpreter, and what the checks share.

gpuenv runs `<interpreter> _harness.py <framework> <options JSON>`. This file loads the
framework's script beside it (`_torch.py`, `_tensorflow.py`, `_jax.py`, `_cupy.py`,
`_onnxruntime.py`) by its path and calls its `run(h)`. Standard library only; the framework
scripts import only their framework and the standard library. Python 3.6+: no annotations, no
walrus, no f-string `=`.

- stdout carries the one JSON document and nothing else: file descriptor 1 is pointed at stderr
  before any framework is imported, so whatever a framework or its C libraries print lands on
  stderr;
- each step is timed and recorded (pass, fail, skip); an exception is the step's failure with the
  end of its traceback, never the end of the script;
- progress goes to stderr as marker lines (`\\x1egpuenv-check {json}`) as each step starts and
  ends, so a crash or a hang still tells gpuenv what passed and where it stopped;
- bench sizes scale with the device's free memory, and timings are seconds per operation; the
  arithmetic (median, rate, share of the spec peak) is gpuenv's.

Options: {"device": N or null, "bench": bool, "torchvision": bool, "budget": seconds,
"workdir": a folder for temporary files, "rehearse": bool}. `rehearse` is for gpuenv's own tests
on machines without a GPU: torch and JAX run their per-device checks and bench on the CPU as if it
were GPU 0 with compute capability 9.0 (so that every data-type path runs), skipping only what
needs CUDA itself (pinned memory, Triton, peers, NCCL).

Document (check_version 1):
  check_version, framework, python,
  build        {version, framework_cuda, cudnn, gpu_build, details {str: str}}
  devices      [{index, name, cc, memory_total, memory_free}]   (bytes; null when unknown)
  device_error why the framework sees no device (its own words), or null
  steps        [{step, device, status: pass|fail|skip, seconds, detail, error}]
  bench        [{name, device, unit: bytes|flop, work, seconds: [per operation], size}]
  problems     [str]: the harness's own troubles
An exception that escapes the framework's script is the failed step "the check script".
"""

import json
import os
import platform
import sys
import time
import traceback

CHECK_VERSION = 1
MARKER = "\x1egpuenv-check "
SCRIPTS = ("torch", "tensorflow", "jax", "cupy", "onnxruntime")
ERROR_CHARS = 6000  # of a traceback's end kept in a step's error
SCRIPT_STEP = "the check script"  # the failed step of an exception outside every step
DETAIL_CHARS = 500

# Known-answer tolerances: the largest error allowed, relative to the largest reference value.
TOLERANCE = {
    "fp32": 1e-4,  # FP32 with FP32 accumulation (TF32 off)
    "elementwise": 1e-4,  # sin, exp: some builds use faster, less exact kernels (seen: 5e-5)
    "conv": 1e-4,
    "tf32": 5e-3,  # 10-bit mantissa inputs
    "fp16": 5e-3,  # inputs rounded to FP16 before the reference is computed
    "bf16": 2e-2,  # 7-bit mantissa output
}

# Bench: warm-up runs, timed repetitions, and how long one repetition should last at least
WARMUP = 3
REPETITIONS = 10
REPETITION_S = 0.02
MAX_INNER = 200
MIB = 1024 * 1024
REHEARSAL_CC = (9, 0)
REHEARSAL_FREE = 8 * MIB


class Skip(Exception):
    """A step that does not apply here (a data type this GPU lacks, a single GPU)."""


class Failed(Exception):
    """A step that ran and gave a wrong answer (the message says how wrong)."""


# -- pure helpers (unit-tested by gpuenv's tests) -------------------------------------------------


def has_feature(cc, feature):
    """Whether compute capability `cc` (major, minor) has `feature`: tf32, bf16, fp16 or
    tensor_fp16 (FP16 on tensor cores)."""
    floors = {"fp16": (5, 3), "tensor_fp16": (7, 0), "tf32": (8, 0), "bf16": (8, 0)}
    return tuple(cc) >= floors[feature]


def matmul_size(free_bytes, element_bytes, share=0.25, cap=8192, floor=256, step=256):
    """The side n of the square matrices a matmul bench multiplies: three n x n matrices fit in
    `share` of the free memory, n a multiple of `step`, at most `cap`; 0 when not even `floor`
    fits (the bench is skipped rather than exhausting a small GPU)."""
    if not free_bytes or free_bytes <= 0:
        return 0
    side = int((free_bytes * share / (3.0 * element_bytes)) ** 0.5)
    side = min(cap, side - side % step)
    return side if side >= floor else 0


def copy_size(free_bytes, buffers=2, share=0.25, cap=1024 * MIB, floor=MIB):
    """Bytes of each of `buffers` copy buffers: together `share` of the free memory at most, whole
    MiB, at most `cap`; 0 when less than `floor` fits."""
    if not free_bytes or free_bytes <= 0:
        return 0
    size = int(free_bytes * share / buffers)
    size = min(cap, size - size % MIB)
    return size if size >= floor else 0


def inner_iterations(seconds_per_op, target=REPETITION_S, cap=MAX_INNER):
    """How many operations one timed repetition runs so that it lasts about `target` seconds."""
    if seconds_per_op <= 0:
        return cap
    return max(1, min(cap, int(target / seconds_per_op + 0.999)))


def relative_error(max_abs_error, max_abs_reference):
    return float(max_abs_error) / max(float(max_abs_reference), 1e-30)


def within(error, kind):
    """A step's detail when `error` is within the tolerance of `kind`; Failed otherwise."""
    tolerance = TOLERANCE[kind]
    text = "max error %.2g (tolerance %.0g)" % (error, tolerance)
    if not error <= tolerance:  # also catches nan
        raise Failed("wrong result: " + text)
    return text


def max_error_lists(got, want):
    """The relative error between two flat lists of numbers (pure Python, small inputs)."""
    if len(got) != len(want):
        raise Failed("wrong result: %d values instead of %d" % (len(got), len(want)))
    worst = max(abs(g - w) for g, w in zip(got, want))
    return relative_error(worst, max(abs(w) for w in want))


def seeded_values(count, seed=12345):
    """`count` reproducible floats in [-1, 1) (a linear congruential sequence, no random module
    state shared with the framework)."""
    state = seed
    values = []
    for _ in range(count):
        state = (1103515245 * state + 12345) % 2147483648
        values.append(state / 1073741824.0 - 1.0)
    return values


def matmul_lists(a, b, n):
    """n x n matrices as flat row-major lists: a @ b in pure Python (double precision)."""
    out = []
    for i in range(n):
        row = a[i * n : (i + 1) * n]
        for j in range(n):
            out.append(sum(row[k] * b[k * n + j] for k in range(n)))
    return out


def cc_text(cc):
    return "%d.%d" % (cc[0], cc[1]) if cc else None


# -- the run --------------------------------------------------------------------------------------


def guard_stdout():
    """Point file descriptor 1 (and sys.stdout) at stderr; return a descriptor for the document."""
    try:
        sys.stdout.flush()
    except Exception:
        pass
    saved = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return saved


def write_all(fd, data):
    while data:
        written = os.write(fd, data)
        data = data[written:]


def short_error(exc):
    """The end of the exception's traceback: where it happened and the message."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return text[-ERROR_CHARS:].strip()


def load_script(framework):
    """The framework's check script beside this file, loaded by its path (never sys.path)."""
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "_%s.py" % framework)
    spec = importlib.util.spec_from_file_location("gpuenv_check_%s" % framework, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def call_in_child(framework, function, args):
    """The target of a child process (multiprocessing, spawn): `function` of the framework's
    script called with `args`. A top-level function of this file, so that it can be pickled."""
    return getattr(load_script(framework), function)(*args)


class Harness:
    """What a framework's `run(h)` is given: options, recording, and the helpers above."""

    Skip = Skip
    Failed = Failed
    MIB = MIB
    has_feature = staticmethod(has_feature)
    within = staticmethod(within)
    max_error_lists = staticmethod(max_error_lists)
    seeded_values = staticmethod(seeded_values)
    matmul_lists = staticmethod(matmul_lists)
    matmul_size = staticmethod(matmul_size)
    copy_size = staticmethod(copy_size)
    call_in_child = staticmethod(call_in_child)  # pickled by its name: a child can find it
    REHEARSAL_CC = REHEARSAL_CC
    REHEARSAL_FREE = REHEARSAL_FREE

    def __init__(self, framework, options, started=None):
        self.framework = framework
        self.options = options
        self.rehearsal = options.get("rehearse") is True
        self.started = time.time() if started is None else started
        self.doc = {
            "check_version": CHECK_VERSION,
            "framework": framework,
            "python": platform.python_version(),
            "build": {},
            "devices": [],
            "device_error": None,
            "steps": [],
            "bench": [],
            "problems": [],
        }

    # progress and results
    def mark(self, event, body):
        line = json.dumps({"event": event, "body": body}, default=str)
        try:
            sys.stderr.flush()
            write_all(2, ("\n" + MARKER + line + "\n").encode("utf-8", "replace"))
        except OSError:
            pass

    def budget_left(self):
        budget = self.options.get("budget")
        if not isinstance(budget, (int, float)):
            return None
        return budget - (time.time() - self.started)

    def step(self, name, action, device=None):
        """Run `action()`; its string result is the detail. Returns True when it passed."""
        self.mark("start", {"step": name, "device": device})
        entry = {"step": name, "device": device, "status": "pass", "detail": None, "error": None}
        begin = time.perf_counter()
        try:
            result = action()
            if isinstance(result, str):
                entry["detail"] = result[:DETAIL_CHARS]
        except Skip as exc:
            entry["status"], entry["detail"] = "skip", str(exc)[:DETAIL_CHARS]
        except Failed as exc:
            entry["status"], entry["detail"] = "fail", str(exc)[:DETAIL_CHARS]
        except (Exception, SystemExit) as exc:
            entry["status"], entry["error"] = "fail", short_error(exc)
            entry["detail"] = ("%s: %s" % (type(exc).__name__, exc))[:DETAIL_CHARS]
        entry["seconds"] = round(time.perf_counter() - begin, 6)
        self.doc["steps"].append(entry)
        self.mark("step", entry)
        return entry["status"] == "pass"

    def import_framework(self, name):
        """Import the framework as the step "import"; the module, or None when it failed."""
        import importlib

        found = []
        self.step("import", lambda: found.append(importlib.import_module(name)))
        return found[0] if found else None

    def build(self, version, framework_cuda=None, cudnn=None, gpu_build=None, details=None):
        self.doc["build"] = {
            "version": None if version is None else str(version),
            "framework_cuda": None if framework_cuda is None else str(framework_cuda),
            "cudnn": None if cudnn is None else str(cudnn),
            "gpu_build": gpu_build,
            "details": {str(k): str(v) for k, v in (details or {}).items() if v is not None},
        }
        self.mark("build", self.doc["build"])

    def add_device(self, index, name, cc, memory_total=None, memory_free=None):
        device = {
            "index": index,
            "name": None if name is None else str(name),
            "cc": cc_text(cc),
            "memory_total": memory_total,
            "memory_free": memory_free,
        }
        self.doc["devices"].append(device)
        self.mark("device", device)

    def device_cc(self, index):
        """The compute capability recorded for device `index`, as (major, minor); (0, 0) when
        unknown (every data-type check is then skipped)."""
        for device in self.doc["devices"]:
            if device["index"] == index and device["cc"]:
                return tuple(int(part) for part in device["cc"].split("."))
        return (0, 0)

    def no_device(self, why):
        self.doc["device_error"] = str(why)[-ERROR_CHARS:]
        self.mark("device_error", self.doc["device_error"])

    def selected(self, count):
        """The device indexes to check: the one --device names, or all."""
        wanted = self.options.get("device")
        if wanted is None:
            return list(range(count))
        return [wanted] if 0 <= wanted < count else []

    # bench
    def measure(self, timed, op):
        """Seconds per operation of `op`, REPETITIONS times after WARMUP runs; `timed(op, n)` runs
        it n times and returns the seconds per operation (CUDA events where there are)."""
        warm = [timed(op, 1) for _ in range(WARMUP)]
        inner = inner_iterations(min(warm))
        left = self.budget_left()
        repetitions = REPETITIONS
        if left is not None and min(warm) * inner * REPETITIONS > left / 4:
            repetitions = 3
        return [timed(op, inner) for _ in range(repetitions)]

    @staticmethod
    def wall_timer(finish):
        """A `timed(op, n)` for `measure` by the wall clock; `finish(result)` waits for the last
        operation (block_until_ready, synchronize)."""

        def timed(op, count):
            start = time.perf_counter()
            result = None
            for _ in range(count):
                result = op()
            finish(result)
            return (time.perf_counter() - start) / count

        return timed

    def bench(self, name, device, unit, work, seconds, size):
        entry = {
            "name": name,
            "device": device,
            "unit": unit,
            "work": work,
            "seconds": [float(s) for s in seconds],
            "size": size,
        }
        self.doc["bench"].append(entry)
        self.mark("bench", entry)

    @staticmethod
    def stderr_of(action):
        """`action()` and what it wrote to file descriptor 2 meanwhile (C libraries' logs), which
        is written on to stderr as well. An exception carries that text in its message."""
        import tempfile

        sys.stderr.flush()
        with tempfile.TemporaryFile() as capture:
            saved = os.dup(2)
            os.dup2(capture.fileno(), 2)
            failure = None
            try:
                result = action()
            except Exception as exc:
                failure, result = exc, None
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                os.close(saved)
            capture.seek(0)
            text = capture.read(1 << 20).decode("utf-8", "replace")
        write_all(2, text.encode("utf-8", "replace"))
        if failure is not None:
            log = ("\n" + text.strip()[-ERROR_CHARS // 2 :]) if text.strip() else ""
            raise Failed("%s: %s%s" % (type(failure).__name__, failure, log))
        return result, text

    def scratch(self, prefix, action):
        """`action(folder)` with a new folder for temporary files (in the work folder gpuenv gave,
        else the system's), removed afterwards with whatever the action left in it."""
        import shutil
        import tempfile

        folder = tempfile.mkdtemp(prefix=prefix, dir=self.options.get("workdir"))
        try:
            return action(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def problem(self, text):
        self.doc["problems"].append(str(text)[-ERROR_CHARS:])


def parse_options(argv):
    if len(argv) < 2 or argv[1] not in SCRIPTS:
        raise SystemExit("usage: _harness.py {%s} [OPTIONS_JSON]" % ",".join(SCRIPTS))
    options = json.loads(argv[2]) if len(argv) > 2 else {}
    return argv[1], options if isinstance(options, dict) else {}


def run_script(harness, framework):
    """The framework's checks. An exception outside every step (a device that cannot be entered,
    a bug) ends them: it is a failed step, never a run whose remaining checks silently did not
    happen."""
    try:
        load_script(framework).run(harness)
    except (Exception, SystemExit) as exc:
        entry = {"step": SCRIPT_STEP, "device": None, "status": "fail", "seconds": None}
        entry["detail"] = ("%s: %s; the checks after it did not run" % (type(exc).__name__, exc))[
            :DETAIL_CHARS
        ]
        entry["error"] = short_error(exc)
        harness.doc["steps"].append(entry)
        harness.mark("step", entry)


def main(argv):
    framework, options = parse_options(argv)
    out = guard_stdout()
    harness = Harness(framework, options)
    run_script(harness, framework)
    write_all(out, (json.dumps(harness.doc, default=str) + "\n").encode("utf-8", "replace"))


if __name__ == "__main__":
    if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(
        os.path.abspath(__file__)
    ):
        del sys.path[0]  # this folder holds gpuenv's modules; none of them may shadow another's
    main(sys.argv)
