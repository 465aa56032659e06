"""Judgement code stays pure: diagnose, kb, render, whatif never touch the machine."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "gpuenv"
PURE = [
    "diagnose",
    "explain",
    "parse",
    "kb",
    "plan",
    "render",
    "whatif.py",
    "facts.py",
    "versions.py",
    "redact.py",
    "snapshot_io.py",
    "check/model.py",
    "check/parse.py",
    "check/judge.py",
    "check/bench.py",
    "check/explain_adapter.py",
    "guard/__init__.py",
    "guard/model.py",
    "guard/build.py",
    "guard/lockfile.py",
    "guard/compare.py",
    "guard/pin.py",
    "guard/preview.py",
    "guard/commands.py",
    "guard/restore.py",
    "guard/outcomes.py",
]
FORBIDDEN_MODULES = {"subprocess", "ctypes", "gpuenv.probe"}
# What gpuenv loads at run time never imports the maintainer's tools (they reach the network).
RUNTIME_FORBIDDEN = {"gpuenv.kbtools"}


def _python_files() -> list[Path]:
    files: list[Path] = []
    for name in PURE:
        path = SRC / name
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return files


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: p.relative_to(SRC).as_posix())
def test_pure_module_does_not_touch_the_machine(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            names = []
        for name in names:
            assert not any(name == m or name.startswith(m + ".") for m in FORBIDDEN_MODULES), (
                f"{path.name} imports {name}"
            )
        if isinstance(node, ast.Attribute) and node.attr == "environ":
            raise AssertionError(f"{path.name} reads os.environ (line {node.lineno})")


# -- the gateways: one way to run children, one way to read files, one way to write -----------

ALL_FILES = sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)
# Modules that may open files themselves, and why (everything else goes through edges/files.py
# for reading and edges/output.py for writing).
OPENS_FILES = {
    "edges/files.py": "the file-reading gateway",
    "edges/output.py": "the writing gateway",
    "probe/_target.py": "runs inside the target interpreter, stdlib only (its own open_regular)",
    "check/_onnxruntime.py": "runs inside the target interpreter: reads ORT's own profile file",
    "probe/nvml_child.py": "a child process reading /proc/self/maps",
    "probe/access.py": "RecordedMachine loads test fixtures",
    "probe/recording.py": "RecordingMachine writes a capture for tools/capture_machine.py",
    "probe/target.py": "reads its own packaged script",
    "kb/loader.py": "packaged knowledge-base files",
    "kb/compiled.py": "packaged knowledge-base files",
    "kbtools/refresh.py": "the maintainer's refresh reads the packaged table it rewrites",
    "kbtools/archs.py": "reads the packaged binaries.toml it merges rows into",
}


def _imports(tree: ast.AST) -> set[str]:
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return names | {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}


@pytest.mark.parametrize(
    "path",
    [p for p in ALL_FILES if p.relative_to(SRC).parts[0] not in ("kbtools", "cli")],
    ids=lambda p: p.relative_to(SRC).as_posix(),
)
def test_runtime_code_does_not_import_the_maintainer_tools(path: Path) -> None:
    imports = _imports(ast.parse(path.read_text(encoding="utf-8")))
    bad = [i for i in imports if any(i == m or i.startswith(m + ".") for m in RUNTIME_FORBIDDEN)]
    assert not bad, f"{path.relative_to(SRC)} imports {bad}: the maintainer's tools"


def test_the_knowledge_base_modules_import_no_cycle() -> None:
    """kb/ modules form no import cycle (the loader uses the compiled copy, never the reverse)."""
    graph: dict[str, set[str]] = {}
    for path in sorted((SRC / "kb").rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        graph[name] = {i for i in _imports(ast.parse(path.read_text(encoding="utf-8")))}
    for name in graph:
        graph[name] = {i for i in graph[name] if i in graph}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        nexts = graph[start] - seen
        return any(n == goal or reaches(n, goal, seen | {n}) for n in nexts)

    cyclic = sorted(name for name in graph if reaches(name, name, set()))
    assert not cyclic, f"import cycle among {cyclic}"


def _calls(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                names.append(func.id)
            elif isinstance(func, ast.Attribute):
                names.append(_dotted(func))
    return names


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.relative_to(SRC).as_posix())
def test_children_run_only_through_the_process_gateway(path: Path) -> None:
    where = path.relative_to(SRC).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imports = _imports(tree)
    if where != "edges/process.py":
        assert "subprocess" not in imports, f"{where} runs children outside edges/process.py"
    calls = set(_calls(tree))
    assert not calls & {"os.system", "os.popen", "os.spawnv", "os.execv"}, where


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.relative_to(SRC).as_posix())
def test_files_are_opened_only_through_the_gateways(path: Path) -> None:
    where = path.relative_to(SRC).as_posix()
    if where in OPENS_FILES:
        return
    calls = set(_calls(ast.parse(path.read_text(encoding="utf-8"))))
    opened = calls & {"open", "os.open", "io.open", ".read_text", ".read_bytes", ".write_text"}
    opened |= {c for c in calls if c.endswith((".read_text", ".read_bytes", ".write_text"))}
    opened -= {"machine.read_text", "self._machine.read_text", "self.inner.read_text"}
    assert not opened, f"{where} opens files itself ({sorted(opened)}); use gpuenv.edges"
