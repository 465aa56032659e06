"""explain: causes and facts on the real corpora, text as people paste it, the command, --from
with a pasted report, the patterns' audit, and robustness (any bytes, huge lines, every report
cut at every line)."""

from __future__ import annotations

import codecs
import io
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from benchmarks.explain_corpus import cause_accuracy, fact_share, half_of, rows, split
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuenv.cli import main
from gpuenv.explain import explain_text
from gpuenv.kb import default_kb, load_kb
from gpuenv.kb.audit import check_patterns
from gpuenv.kb.loader import DATA_DIR
from gpuenv.kb.query.torch import torch_find_links, torch_index_url
from gpuenv.snapshot_io import read_snapshot
from tests.conftest import SHARED

ROOT = Path(__file__).resolve().parents[1]
DEV = SHARED / "corpus"
PROJECT = ROOT / "corpus"
KB = default_kb()
SCHEMA = json.loads((ROOT / "docs" / "explain.schema.json").read_text(encoding="utf-8"))
DRIVER_OLD = (
    "RuntimeError: The NVIDIA driver on your system is too old (found version 11060). Please "
    "update your GPU driver"
)


def _need(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return path


# -- the corpora: floors a little under what explain reaches (regressions show) --------------------


@pytest.mark.parametrize(
    ("path", "half", "alone", "context"),
    [
        (DEV / "error-cases.dev.jsonl", "all", 0.97, 1.00),
        (PROJECT / "error-cases.jsonl", "all", 0.89, 0.92),
        (PROJECT / "error-cases.jsonl", "tune", 0.91, 0.94),
        (PROJECT / "error-cases.jsonl", "check", 0.86, 0.90),
        (PROJECT / "error-cases.fresh.jsonl", "all", 0.82, 0.89),
        (PROJECT / "error-cases.fresh.jsonl", "tune", 0.89, 0.96),
        (PROJECT / "error-cases.fresh.jsonl", "check", 0.74, 0.81),
        (PROJECT / "error-cases.fresh2.jsonl", "all", 0.88, 0.94),
        (PROJECT / "error-cases.fresh2.jsonl", "check", 0.89, 0.89),
        (PROJECT / "error-cases.fresh3.jsonl", "all", 0.85, 0.90),
        (PROJECT / "error-cases.fresh3.jsonl", "check", 0.85, 0.85),
        (PROJECT / "error-cases.fresh4.jsonl", "all", 0.90, 0.93),
        (PROJECT / "error-cases.fresh4.jsonl", "check", 0.85, 0.85),
        (PROJECT / "error-cases.fresh5.jsonl", "all", 0.84, 0.90),
        (PROJECT / "error-cases.fresh5.jsonl", "check", 0.78, 0.83),
        (PROJECT / "error-cases.fresh6.jsonl", "all", 0.85, 0.93),
        (PROJECT / "error-cases.fresh6.jsonl", "check", 0.92, 0.96),
        (PROJECT / "error-cases.fresh7.jsonl", "all", 0.81, 0.90),
        (PROJECT / "error-cases.fresh7.jsonl", "check", 0.74, 0.81),
        (PROJECT / "error-cases.fresh8.jsonl", "all", 0.85, 0.92),
        (PROJECT / "error-cases.fresh8.jsonl", "check", 0.81, 0.87),
        (PROJECT / "error-cases.fresh9.jsonl", "all", 0.88, 0.90),
        (PROJECT / "error-cases.fresh9.jsonl", "check", 0.83, 0.84),
        (PROJECT / "error-cases.fresh10.jsonl", "all", 0.87, 0.88),
        (PROJECT / "error-cases.fresh10.jsonl", "check", 0.80, 0.81),
        (PROJECT / "error-cases.fresh11.jsonl", "all", 0.85, 0.95),
        (PROJECT / "error-cases.fresh11.jsonl", "check", 0.79, 0.91),
        (PROJECT / "error-cases.fresh12.jsonl", "all", 0.80, 0.88),
        (PROJECT / "error-cases.fresh12.jsonl", "check", 0.71, 0.79),
        (PROJECT / "error-cases.fresh13.jsonl", "all", 0.85, 0.91),
        (PROJECT / "error-cases.fresh13.jsonl", "check", 0.85, 0.85),
        (PROJECT / "error-cases.fresh14.jsonl", "all", 0.76, 0.85),
        (PROJECT / "error-cases.fresh14.jsonl", "check", 0.64, 0.76),
        (PROJECT / "error-cases.fresh15.jsonl", "all", 0.85, 0.92),
        (PROJECT / "error-cases.fresh15.jsonl", "check", 0.77, 0.92),
        (PROJECT / "error-cases.fresh16.jsonl", "all", 0.81, 0.87),
        (PROJECT / "error-cases.fresh16.jsonl", "check", 0.74, 0.84),
        (PROJECT / "error-cases.fresh17.jsonl", "all", 0.70, 0.81),
        (PROJECT / "error-cases.fresh17.jsonl", "check", 0.66, 0.75),
        (PROJECT / "error-cases.fresh18.jsonl", "all", 0.87, 0.93),
        (PROJECT / "error-cases.fresh18.jsonl", "check", 0.83, 0.90),
        (PROJECT / "error-cases.fresh19.jsonl", "all", 0.77, 0.88),
        (PROJECT / "error-cases.fresh19.jsonl", "check", 0.64, 0.78),
        (PROJECT / "error-cases.fresh20.jsonl", "all", 0.87, 0.92),
        (PROJECT / "error-cases.fresh20.jsonl", "check", 0.78, 0.84),
        (PROJECT / "error-cases.fresh21.jsonl", "all", 0.74, 0.82),
        (PROJECT / "error-cases.fresh21.jsonl", "check", 0.60, 0.73),
        (PROJECT / "error-cases.fresh22.jsonl", "all", 0.79, 0.84),
        (PROJECT / "error-cases.fresh22.jsonl", "check", 0.77, 0.80),
        (PROJECT / "error-cases.fresh23.jsonl", "all", 0.78, 0.85),
        (PROJECT / "error-cases.fresh23.jsonl", "check", 0.67, 0.74),
        (PROJECT / "error-cases.fresh24.jsonl", "all", 0.77, 0.84),
        (PROJECT / "error-cases.fresh24.jsonl", "check", 0.73, 0.84),
        (PROJECT / "error-cases.fresh25.jsonl", "all", 0.71, 0.77),
        (PROJECT / "error-cases.fresh25.jsonl", "check", 0.72, 0.83),
        (PROJECT / "error-cases.fresh26.jsonl", "all", 0.82, 0.86),
        (PROJECT / "error-cases.fresh26.jsonl", "check", 0.87, 0.87),
        (PROJECT / "error-cases.fresh27.jsonl", "all", 0.82, 0.84),
        (PROJECT / "error-cases.fresh27.jsonl", "check", 0.86, 0.86),
        (PROJECT / "error-cases.fresh28.jsonl", "all", 0.77, 0.87),
        (PROJECT / "error-cases.fresh28.jsonl", "check", 0.77, 0.85),
        (PROJECT / "error-cases.fresh29.jsonl", "all", 0.72, 0.86),
        (PROJECT / "error-cases.fresh29.jsonl", "check", 0.64, 0.89),
        (PROJECT / "error-cases.fresh30.jsonl", "all", 0.82, 0.84),
        (PROJECT / "error-cases.fresh30.jsonl", "check", 0.72, 0.77),
        (PROJECT / "error-cases.fresh31.jsonl", "all", 0.76, 0.87),
        (PROJECT / "error-cases.fresh31.jsonl", "check", 0.81, 0.96),
        (PROJECT / "error-cases.fresh32.jsonl", "all", 0.86, 0.93),
        (PROJECT / "error-cases.fresh32.jsonl", "check", 0.88, 0.92),
        (PROJECT / "error-cases.fresh33.jsonl", "all", 0.70, 0.77),
        (PROJECT / "error-cases.fresh33.jsonl", "check", 0.58, 0.64),
        (PROJECT / "error-cases.fresh34.jsonl", "all", 0.85, 0.89),
        (PROJECT / "error-cases.fresh34.jsonl", "check", 0.78, 0.82),
        (PROJECT / "error-cases.fresh35.jsonl", "all", 0.83, 0.85),
        (PROJECT / "error-cases.fresh35.jsonl", "check", 0.75, 0.75),
        (PROJECT / "error-cases.fresh36.jsonl", "all", 0.83, 0.86),
        (PROJECT / "error-cases.fresh36.jsonl", "check", 0.89, 0.89),
    ],
    ids=[
        "dev",
        "project",
        "project-tune",
        "project-check",
        "fresh",
        "fresh-tune",
        "fresh-check",
        "fresh2",
        "fresh2-check",
        "fresh3",
        "fresh3-check",
        "fresh4",
        "fresh4-check",
        "fresh5",
        "fresh5-check",
        "fresh6",
        "fresh6-check",
        "fresh7",
        "fresh7-check",
        "fresh8",
        "fresh8-check",
        "fresh9",
        "fresh9-check",
        "fresh10",
        "fresh10-check",
        "fresh11",
        "fresh11-check",
        "fresh12",
        "fresh12-check",
        "fresh13",
        "fresh13-check",
        "fresh14",
        "fresh14-check",
        "fresh15",
        "fresh15-check",
        "fresh16",
        "fresh16-check",
        "fresh17",
        "fresh17-check",
        "fresh18",
        "fresh18-check",
        "fresh19",
        "fresh19-check",
        "fresh20",
        "fresh20-check",
        "fresh21",
        "fresh21-check",
        "fresh22",
        "fresh22-check",
        "fresh23",
        "fresh23-check",
        "fresh24",
        "fresh24-check",
        "fresh25",
        "fresh25-check",
        "fresh26",
        "fresh26-check",
        "fresh27",
        "fresh27-check",
        "fresh28",
        "fresh28-check",
        "fresh29",
        "fresh29-check",
        "fresh30",
        "fresh30-check",
        "fresh31",
        "fresh31-check",
        "fresh32",
        "fresh32-check",
        "fresh33",
        "fresh33-check",
        "fresh34",
        "fresh34-check",
        "fresh35",
        "fresh35-check",
        "fresh36",
        "fresh36-check",
    ],
)
def test_cause_accuracy_on_the_corpus(path: Path, half: str, alone: float, context: float) -> None:
    """Each project corpus also by half (benchmarks/explain_corpus.half_of): patterns are studied
    on the tune halves; the check halves show whether they generalise. The fresh cases were
    collected before any pattern was tuned on them (before tuning: 56.1% / 59.1%, check half
    51.9% / 55.8%); their check half is the closest stand-in for a held-back split."""
    cases = split(rows(_need(path)), "cause")[half]
    by_text = cause_accuracy(cases, KB, with_context=False)
    with_context = cause_accuracy(cases, KB, with_context=True)
    assert by_text.share >= alone, by_text.wrong
    assert with_context.share >= context, with_context.wrong


@pytest.mark.parametrize(
    ("path", "floor"),
    [(DEV / "pasted-reports.dev.jsonl", 0.98), (PROJECT / "pasted-reports.jsonl", 0.97)],
    ids=["dev", "project"],
)
def test_facts_of_the_pasted_reports(path: Path, floor: float) -> None:
    score = fact_share(rows(_need(path)), KB)
    assert score.total > 100 and score.share >= floor, score.wrong


def test_the_split_is_stable_and_even() -> None:
    """Rule: each case is in one half by its id alone, and each cause is split evenly."""
    cases = rows(_need(PROJECT / "error-cases.jsonl"))
    first, again = half_of(cases, "cause"), half_of(list(reversed(cases)), "cause")
    assert first == again and set(first.values()) == {"tune", "check"}
    for cause in {c["cause"] for c in cases}:
        tune = sum(first[c["id"]] == "tune" for c in cases if c["cause"] == cause)
        check = sum(first[c["id"]] == "check" for c in cases if c["cause"] == cause)
        assert abs(tune - check) <= 1


# -- text as people paste it -----------------------------------------------------------------------


def test_colour_crlf_quotes_and_fences_do_not_change_the_answer() -> None:
    plain = explain_text("pip install x\n" + DRIVER_OLD + "\n", KB)
    noisy = "```\r\n> > pip install x\r\n> > \x1b[31m" + DRIVER_OLD + "\x1b[0m\r\n```\r\n"
    messy = explain_text(noisy, KB)
    assert plain.cause == messy.cause == "driver_too_old"
    assert plain.evidence[0].line == 2 and messy.evidence[0].line == 3
    assert any(f.name == "driver_max_cuda" and f.value == "11.6" for f in messy.facts)


def test_utf16_and_invalid_utf8_files_are_read(tmp_path: Path, capsys: Any) -> None:
    wide = tmp_path / "wide.txt"
    wide.write_bytes(codecs.BOM_UTF16_LE + DRIVER_OLD.encode("utf-16-le"))
    broken = tmp_path / "broken.txt"
    broken.write_bytes(b"\xfa\xfb garbage \xc3\n" + DRIVER_OLD.encode())
    for path in (wide, broken):
        assert main(["explain", "--no-probe", "--json", str(path)]) == 0
        assert json.loads(capsys.readouterr().out)["cause"] == "driver_too_old"


def test_a_pasted_collect_env_becomes_the_reporters_machine() -> None:
    report = next(r for r in rows(_need(DEV / "pasted-reports.dev.jsonl")) if "scalemae" in r["id"])
    explanation = explain_text(report["text"], KB)
    assert explanation.cause == "cpu_only_build"
    assert [f.value for f in explanation.facts if f.name == "gpu"] == [
        "NVIDIA GeForce RTX 3090"
    ] * 2
    assert any(f.rule == "framework-cpu-build" for f in explanation.findings)
    assert explanation.fix is not None and "torch==2.1.1+cu1" in " ".join(explanation.fix.commands)


NO_VERSION = "ERROR: Could not find a version that satisfies the requirement {} (from versions: {})"


def _wheel_row(package: str, version: str) -> Any:
    return next(
        r
        for r in KB.rows("wheels", "release")
        if r["package"] == package and r["version"] == version
    )


def test_a_release_without_wheels_for_this_python_gets_the_pythons_it_has() -> None:
    """The fix names the Pythons of the release asked for (wheels.toml), the reporter's Python,
    the first later release for that Python, and commands for an environment that fits."""
    tags = _wheel_row("torch", "1.12.0")["python_tags"]
    assert "cp311" not in tags and "cp310" in tags
    text = NO_VERSION.format("torch==1.12.0", "1.13.0, 2.0.0") + "\nPython 3.11.4\n"
    explanation = explain_text(text, KB)
    assert explanation.cause == "python_version_unsupported" and explanation.fix is not None
    summary = explanation.fix.summary
    assert "CPython 3.7-3.10 only, this Python is 3.11" in summary
    assert "torch 1.13.0, the first release after it for Python 3.11" in summary
    assert explanation.fix.commands == (
        "python3.10 -m venv .venv",
        ".venv/bin/python -m pip install torch==1.12.0",
    )
    silent = explain_text(NO_VERSION.format("torch==1.12.0", "2.0.0"), KB).fix
    assert silent is not None and "CPython 3.7-3.10 only: install it with one" in silent.summary


def test_a_python_newer_than_every_release_is_said_so_on_its_platform() -> None:
    text = (
        "C:\\Users\\me> pip install tensorflow\n" + NO_VERSION.format("tensorflow", "none") + "\n"
        "Windows 10, Python 3.99.0\n"
    )
    fix = explain_text(text, KB).fix
    newest = max(
        (r for r in KB.rows("wheels", "release") if r["package"] == "tensorflow"),
        key=lambda r: tuple(int(p) for p in r["version"].split(".")[:3]),
    )
    assert fix is not None
    assert fix.summary.startswith(
        f"No tensorflow release has wheels for CPython 3.99 on windows-x86_64; the newest, "
        f"{newest['version']}"
    )
    assert fix.commands[1] == ".venv\\Scripts\\python -m pip install tensorflow"


NO_MATCH = "ERROR: No matching distribution found for {}"


def test_a_pin_without_wheels_for_the_reporters_python_is_that_python() -> None:
    """The same 'no matching distribution' is a solver problem until the text names a Python
    the asked-for release has no wheel for (wheels.toml for the exact version, else the
    Python range of its torch release line in torch.toml)."""
    tags = _wheel_row("torch", "2.3.0")["python_tags"]
    assert "cp313" not in tags and "cp312" in tags
    pin = NO_MATCH.format("torch==2.3.0+cu121")
    assert explain_text(pin, KB).cause == "solver_conflict"
    assert explain_text(pin + "\nPython 3.13.0", KB).cause == "python_version_unsupported"
    assert explain_text(pin + "\nPython 3.12.1", KB).cause == "solver_conflict"
    lines = [r for r in KB.rows("tensorflow", "release") if r["tensorflow"] == "2.3"]
    assert lines and not any(
        r["package"] == "tensorflow" and r["version"].startswith("2.3.")
        for r in KB.rows("wheels", "release")
    )
    newest = max(int(str(r["python_max"]).split(".")[1]) for r in lines)
    old = NO_MATCH.format("tensorflow==2.3.0")
    rule = "release-has-no-wheel-for-this-python"
    assert [e.rule for e in explain_text(f"{old}\nPython 3.{newest + 1}", KB).evidence] == [rule]
    assert [e.rule for e in explain_text(f"{old}\nPython 3.{newest}", KB).evidence] == [None]
    uv = (
        "uv pip install torch==2.3.0 --index-url https://download.pytorch.org/whl/cu121\n"
        "DEBUG Using Python 3.13.0 environment at .venv\n"
        "DEBUG No compatible version found for: torch\n"
    )
    explanation = explain_text(uv, KB)
    assert explanation.cause == "python_version_unsupported" and explanation.fix is not None
    assert "torch 2.3.0 has wheels for CPython" in explanation.fix.summary


def test_the_python_fix_keeps_the_build_asked_for_and_its_index() -> None:
    """A pinned local build (+cu121) is installed from PyTorch's index (1.8-1.10: its -f page) in
    the environment with the right Python; the default index has no such build."""
    index = torch_index_url(KB, "cu121")
    assert index is not None and index.endswith("/cu121")
    pin = NO_MATCH.format("torch==2.3.0+cu121") + "\nPython 3.13.0"
    fix = explain_text(pin, KB).fix
    assert fix is not None
    assert (
        fix.commands[-1]
        == f".venv/bin/python -m pip install torch==2.3.0+cu121 --index-url {index}"
    )
    old = NO_MATCH.format("torch==1.9.1+cu111") + "\nPython 3.10.4"
    links = torch_find_links(KB, "1.9.1", "cu111")
    fix = explain_text(old, KB).fix
    assert links is not None and fix is not None
    assert fix.commands[-1].endswith(f"install torch==1.9.1+cu111 -f {links}")
    plain = explain_text(NO_MATCH.format("torch==2.3.0") + "\nPython 3.13.0", KB).fix
    assert plain is not None and plain.commands[-1].endswith("install torch==2.3.0")


def test_a_cudnn_of_another_major_than_the_installed_one_is_a_mismatch() -> None:
    missing = (
        "Could not load dynamic library 'libcudnn.so.7'; dlerror: libcudnn.so.7: cannot open "
        "shared object file: No such file or directory"
    )
    assert explain_text(missing, KB).cause == "missing_cuda_lib"
    assert explain_text("CUDA 10.1 with cuDNN 8.0.2.39\n" + missing, KB).cause == "cudnn_mismatch"
    assert explain_text("CUDA 10.0 with cuDNN 7.6.5\n" + missing, KB).cause == "missing_cuda_lib"
    built = "TF built against cuDNN 8.0\n" + missing
    assert explain_text(built, KB).cause == "missing_cuda_lib"


def test_driver_insufficient_is_read_by_where_it_ran() -> None:
    """Bare metal: driver too old; a container: the image needs a newer host driver; a
    container without GPU access or machines without a GPU: no driver at all."""
    error = (
        "cudaGetDeviceCount returned 35\n"
        "-> CUDA driver version is insufficient for CUDA runtime version"
    )
    assert explain_text(error, KB).cause == "driver_too_old"
    assert explain_text("Running it inside a docker container\n" + error, KB).cause == (
        "container_driver_mismatch"
    )
    prompt = "root@9a9f377fb52b:/# python train.py\n"
    assert explain_text(prompt + error, KB).cause == "container_driver_mismatch"
    plain = "started with plain docker run and --device /dev/nvidia0 flags (no nvidia-docker)\n"
    assert explain_text(plain + error, KB).cause == "no_driver"
    assert explain_text("training on a CPU cluster\n" + error, KB).cause == "no_driver"


def test_kernel_and_libcuda_versions_differ_by_where_it_ran() -> None:
    """TensorFlow's diagnostics print the host name: Docker's is the 12-hex container id."""
    lines = (
        "I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:176] hostname: {}\n"
        "E tensorflow/stream_executor/cuda/cuda_diagnostics.cc:313] kernel version 455.32.0 "
        "does not match DSO version 460.73.1 -- cannot find working devices in this configuration"
    )
    explanation = explain_text(lines.format("gpu-box-01"), KB)
    assert explanation.cause == "driver_module_mismatch"
    facts = {(f.name, f.value) for f in explanation.facts}
    assert {("kernel_module_version", "455.32.0"), ("client_driver_version", "460.73.1")} <= facts
    assert explain_text(lines.format("f7b7a8f85319"), KB).cause == "container_driver_mismatch"


def test_a_message_matched_on_two_lines_gives_its_fix_once() -> None:
    """A traceback shows the raise and the error line; both match one pattern."""
    text = (
        '    raise AssertionError("Torch not compiled with CUDA enabled")\n'
        "AssertionError: Torch not compiled with CUDA enabled\n"
    )
    fix = explain_text(text, KB, None).fix
    assert fix is not None and fix.summary not in fix.notes


def test_no_probe_with_an_interpreter_to_probe_is_an_error_naming_both(
    tmp_path: Path, capsys: Any
) -> None:
    log = tmp_path / "err.log"
    log.write_text("AssertionError: Torch not compiled with CUDA enabled\n")
    assert main(["explain", "--no-probe", "--python", "/opt/env/bin/python", str(log)]) == 2
    err = capsys.readouterr().err
    assert "--no-probe" in err and "--python" in err


def test_nothing_recognised_is_no_cause() -> None:
    explanation = explain_text("hello world\nall good\n", KB)
    assert explanation.cause is None and not explanation.found and explanation.lines == 3


# -- the command -----------------------------------------------------------------------------------


def test_json_document_follows_its_schema(capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(DRIVER_OLD.encode())))
    assert main(["explain", "--no-probe", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, SCHEMA)
    assert document["cause"] == "driver_too_old" and document["exit_code"] == 0
    assert document["evidence"][0]["line"] == 1


def test_exit_1_without_a_cause_and_text_at_80_columns(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet = tmp_path / "quiet.log"
    quiet.write_text("nothing to see\n")
    assert main(["explain", "--no-probe", str(quiet)]) == 1
    assert "No cause found" in capsys.readouterr().out
    monkeypatch.setenv("COLUMNS", "80")
    loud = tmp_path / "loud.log"
    loud.write_text(DRIVER_OLD + "\n")
    assert main(["explain", "--no-probe", str(quiet), str(loud)]) == 0
    out = capsys.readouterr().out
    assert "cause: driver_too_old" in out and "loud.log:1" in out
    assert max(len(ln) for ln in out.splitlines() if "$ " not in ln) <= 80


def test_doctor_and_plan_read_a_pasted_report(tmp_path: Path, capsys: Any) -> None:
    report = next(r for r in rows(_need(DEV / "pasted-reports.dev.jsonl")) if "tesla-p4" in r["id"])
    path = tmp_path / "issue.txt"
    path.write_text("My GPU does not work, here is nvidia-smi:\n" + report["text"])
    snapshot = read_snapshot(path)
    assert snapshot.gpus[0].name == "Tesla P4" and snapshot.origin.startswith("pasted report")
    assert main(["doctor", "--json", "--from", str(path)]) in (0, 1)
    assert "Tesla P4" in capsys.readouterr().out
    assert main(["plan", "torch", "--json", "--from", str(path)]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert (
        plan["target"]["driver"] == "550.135"
        and "+cu12" in plan["envs"][0]["packages"][0]["requirement"]
    )


INTEL_MAC_PIP = (
    "$ pip install torch==2.4.1\n"
    "ERROR: Could not find a version that satisfies the requirement torch==2.4.1 (from versions: "
    "2.0.0, 2.0.1, 2.1.0, 2.1.1, 2.1.2, 2.2.0, 2.2.1, 2.2.2)\n"
    "ERROR: No matching distribution found for torch==2.4.1\n"
)
INTEL_MAC_COLLECT_ENV = """Collecting environment information...
PyTorch version: 2.2.2
Is debug build: False
CUDA used to build PyTorch: None
ROCM used to build PyTorch: N/A

OS: macOS 14.6.1 (x86_64)
GCC version: Could not collect
Clang version: 15.0.0 (clang-1500.3.9.4)
CMake version: Could not collect
Libc version: N/A

Python version: 3.11.9 (main, Apr 19 2024, 11:43:47) [Clang 14.0.6 ] (64-bit runtime)
Python platform: macOS-14.6.1-x86_64-i386-64bit
Is CUDA available: False
"""


@pytest.mark.parametrize(
    ("report", "platform", "torch", "said"),
    [
        # pip's list of torch releases ends at 2.2.2, which is what the index has for Intel Macs:
        # its last release there, not one pip would not find
        (INTEL_MAC_PIP, "macos-x86_64", "torch==2.2.2", "inferred: pip's list of the releases"),
        # the same list on a machine said to run Ubuntu fits no Linux: nothing inferred
        ("Ubuntu 22.04\n" + INTEL_MAC_PIP, "linux-x86_64", None, "assumed"),
        # collect_env gives the Python's architecture
        (INTEL_MAC_COLLECT_ENV, "macos-x86_64", "torch==2.2.2", None),
        # conda info gives its platform (and the plan is conda's)
        (
            "     active environment : base\n       conda version : 24.1.2\n"
            "      python version : 3.11.7.final.0\n            platform : osx-64\n",
            "macos-x86_64",
            None,
            None,
        ),
        # a text that says nothing of its machine: Linux x86-64 assumed, and said
        ("RuntimeError: Torch not compiled with CUDA enabled\n", "linux-x86_64", None, "assumed"),
        # an Apple-silicon Mac named in prose is the machine: arm64, not assumed
        (
            "On my M2 Mac:\nRuntimeError: Torch not compiled with CUDA enabled\n",
            "macos-arm64",
            None,
            None,
        ),
        # the architecture a report prints, or pip's list of releases, is the Python's: it
        # outranks the Mac the prose names (an x86-64 Python under Rosetta)
        ("On my M2 Mac:\n" + INTEL_MAC_COLLECT_ENV, "macos-x86_64", "torch==2.2.2", None),
        (
            "On my M1 Mac:\n" + INTEL_MAC_PIP,
            "macos-x86_64",
            "torch==2.2.2",
            "inferred: pip's list of the releases",
        ),
    ],
)
def test_plan_from_a_report_plans_for_the_platform_it_shows(
    report: str, platform: str, torch: str | None, said: str | None, tmp_path: Path, capsys: Any
) -> None:
    path = tmp_path / "issue.txt"
    path.write_text(report)
    assert main(["plan", "torch", "--json", "--from", str(path)]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["target"]["platform"] == platform
    if torch is not None:
        assert plan["envs"][0]["packages"][0]["requirement"] == torch
    notes = [n for n in plan["notes"] if n.startswith("The target's platform")]
    assert bool(notes) == (said is not None)
    assert not notes or said in notes[0]


def test_from_a_file_with_neither_snapshot_nor_report(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just some words\n")
    assert main(["doctor", "--from", str(path)]) == 2
    assert "no facts of a pasted report" in capsys.readouterr().err


# -- the patterns' audit ---------------------------------------------------------------------------


def _broken_kb(tmp_path: Path, old: str, new: str) -> Any:
    folder = tmp_path / "data"
    shutil.copytree(DATA_DIR, folder)
    target = folder / "patterns.toml"
    text = target.read_text(encoding="utf-8")
    assert old in text
    target.write_text(text.replace(old, new, 1), encoding="utf-8")
    return load_kb(folder, strict=False)


def test_audit_passes_on_the_shipped_patterns() -> None:
    assert check_patterns(KB) == []


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("regex = 'HIP error: invalid", "regex = '(\\w+\\s?)*HIP error: invalid", "backtrack"),
        ("regex = 'NCCL_P2P_DISABLE'", "regex = 'NCCL_P2P_DISABLED'", "does not match"),
        ("regex = 'NCCL_P2P_DISABLE'", "regex = 'NCCL_P2P_DISABLE('", "does not compile"),
        ("regex = 'NCCL_P2P_DISABLE'", "regex = '(?P<colour>NCCL_P2P_DISABLE)'", "names no fact"),
    ],
)
def test_audit_finds_bad_patterns(tmp_path: Path, old: str, new: str, message: str) -> None:
    problems = check_patterns(_broken_kb(tmp_path, old, new))
    assert isinstance(problems, list) and any(message in p.message for p in problems), problems


# -- robustness ------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=3000) | st.text(max_size=3000).map(str.encode))
def test_any_bytes_give_an_explanation(data: bytes) -> None:
    """Rule: whatever the input, explain answers (a cause or none), never an exception."""
    from gpuenv.explain.text import decode

    explanation = explain_text(decode(data), KB)
    assert explanation.lines >= 1
    json.dumps(explanation.to_dict())


def test_huge_lines_and_deep_quoting_stay_bounded() -> None:
    line = "x" * 1_000_000 + " " + DRIVER_OLD + " " + "y" * 1_000_000
    assert explain_text(line, KB).cause == "driver_too_old"
    quoted = ">" * 50_000 + " " + DRIVER_OLD
    assert explain_text(quoted, KB).cause == "driver_too_old"
    assert explain_text("(" * 200_000 + "[" * 200_000, KB).cause is None


def test_a_message_at_the_end_of_a_log_is_found_whatever_came_before() -> None:
    """Rule: a needle's occurrences are kept at the start and at the end of a text, so the error
    at the end of a long log is found even when its words filled the log before."""
    from gpuenv.explain.needles import MAX_HITS

    noise = "".join(f"epoch {n}: pytorch step ok\n" for n in range(MAX_HITS * 3))
    tail = "pytorch                   1.11.0              py3.8_cpu_0    pytorch\n"
    explanation = explain_text(noise + tail, KB)
    assert explanation.cause == "cpu_only_build"
    assert [e.line for e in explanation.evidence] == [MAX_HITS * 3 + 1]


def test_a_pattern_of_many_common_words_tries_as_many_lines_as_one_of_one_word() -> None:
    """Rule: a pattern's regex runs on the first MAX_HITS and the last TAIL_HITS lines holding
    any of its words, so a log full of them costs a bounded number of searches, and the error
    at its end is still found."""
    from gpuenv.explain.needles import MAX_HITS, TAIL_HITS, compile_needles, locate
    from gpuenv.explain.scan import _Placed
    from gpuenv.explain.text import prepare

    noise = "".join(
        f"step {n}: libcuda.so.1 loaded\nstep {n}: nvcuda.dll found\n" for n in range(MAX_HITS)
    )
    tail = "OSError: libcuda.so.1: cannot open shared object file: No such file or directory\n"
    text = prepare(noise + tail)
    words = (" libcuda.so.1", "nvcuda.dll", "libcuda.so.1: cannot open shared object file")
    placed = _Placed(text, locate(text.lower, compile_needles(words)))
    candidates = placed.candidates(words)
    every = sorted(pair for word in words for pair in placed.of(word))
    assert len(every) > MAX_HITS + TAIL_HITS
    assert candidates == every[:MAX_HITS] + every[-TAIL_HITS:]
    explanation = explain_text(noise + tail, KB)
    assert explanation.cause == "no_driver"
    assert [e.line for e in explanation.evidence] == [MAX_HITS * 2 + 1]


def test_every_pasted_report_cut_at_every_line() -> None:
    """Rule: a paste that ends early gives the facts it holds and no exception."""
    for report in rows(_need(DEV / "pasted-reports.dev.jsonl")):
        lines = report["text"].split("\n")
        for end in range(len(lines)):
            explain_text("\n".join(lines[:end]), KB)


# -- message families: the variants a pattern must take, not only the paste it was seen in ------


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        # the quoted driver name varies; JSON pastes escape the quotes
        ('could not select device driver "nvidia" with capabilities: [[gpu]]', "no_driver"),
        (r"could not select device driver \"\" with capabilities: [[gpu]]", "no_driver"),
        # spaces around the slash, the casing of older drivers, the NVML/RM wording of pynvml
        ("Failed to initialize NVML: Driver / library version mismatch", "driver_module_mismatch"),
        ("failed to initialize nvml: DRIVER/LIBRARY VERSION MISMATCH", "driver_module_mismatch"),
        (
            "NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch.",
            "driver_module_mismatch",
        ),
        # a paste wrapped after the device's parenthesis
        (
            "Ignoring visible gpu device (device: 0, name: Quadro K4000, pci bus id: 0000:03:00.0,"
            " compute capability: 3.0)\nwith Cuda compute capability 3.0. The minimum required"
            " Cuda capability is 3.5.",
            "gpu_arch_unsupported",
        ),
        # uv and resolvo wrap their explanations to the terminal
        (
            "  ╰─▶ Because there are no versions of torch==2.0.0+cu118 and you require\n"
            "      torch==2.0.0+cu118, we can conclude that your requirements are\n"
            "      unsatisfiable.",
            "solver_conflict",
        ),
        (
            "  ╰─▶ Cannot solve the request because of: pytorch-cuda 12.4.* cannot be\n"
            "      installed because there are no viable options:",
            "solver_conflict",
        ),
    ],
)
def test_patterns_take_the_variants_of_their_message_family(text: str, cause: str) -> None:
    assert explain_text(text, KB).cause == cause
