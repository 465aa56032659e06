"""Judgement code stays pure: diagnose, kb, render, whatif never touch the machine."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "gpuenv"
PURE = [
    "diagnose",
    "kb",
    "plan",
    "render",
    "whatif.py",
    "facts.py",
    "versions.py",
    "redact.py",
    "snapshot_io.py",
]
FORBIDDEN_MODULES = {"subprocess", "ctypes", "gpuenv.probe"}
# kb/refresh.py and kb/index_client.py are the maintainer's network tools, not judgement code.
EXEMPT = {"kb/refresh.py", "kb/index_client.py"}


def _python_files() -> list[Path]:
    files: list[Path] = []
    for name in PURE:
        path = SRC / name
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return [f for f in files if f.relative_to(SRC).as_posix() not in EXEMPT]


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
