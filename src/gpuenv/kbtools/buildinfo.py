"""What a framework's own small build files say about the build: torch/version.py, TensorFlow's
tensorflow/python/platform/build_info.py, ONNX Runtime's capi/build_and_package_info.py and the
JAX CUDA plugins' version.py. The files are parsed, never run: only top-level assignments of
literals are read (and TensorFlow's `collections.OrderedDict([...])` of literals)."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_MAX_SOURCE = 256 * 1024


@dataclass(frozen=True)
class BuildFile:
    """Where a package keeps its build facts: a member path ({module} is the import name)."""

    member: str
    kind: str  # "torch" | "tensorflow" | "onnxruntime" | "jax"


BUILD_FILES: Mapping[str, BuildFile] = {
    "torch": BuildFile("torch/version.py", "torch"),
    "tensorflow": BuildFile("tensorflow/python/platform/build_info.py", "tensorflow"),
    "onnxruntime-gpu": BuildFile("onnxruntime/capi/build_and_package_info.py", "onnxruntime"),
    "jax-cuda12-plugin": BuildFile("jax_cuda12_plugin/version.py", "jax"),
    "jax-cuda13-plugin": BuildFile("jax_cuda13_plugin/version.py", "jax"),
}


def literal_assignments(source: bytes) -> dict[str, Any]:
    """Top-level `name = literal` and `name: T = literal` of a Python file; {} when it does not
    parse. `collections.OrderedDict([...])` and `dict(...)` of literals count as dicts."""
    if len(source) > _MAX_SOURCE:
        return {}
    try:
        tree = ast.parse(source.decode("utf-8", errors="replace"))
    except (SyntaxError, ValueError):
        return {}
    found: dict[str, Any] = {}
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            if isinstance(target, ast.Name):
                literal = _literal(value)
                if literal is not _NOT_LITERAL:
                    found[target.id] = literal
    return found


_NOT_LITERAL = object()


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Call) and _dict_call(node.func) and len(node.args) == 1:
        pairs = _literal(node.args[0])
        if isinstance(pairs, (list, tuple)) and all(
            isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs
        ):
            return {str(k): v for k, v in pairs}
        return _NOT_LITERAL
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


def _dict_call(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "OrderedDict"
    return isinstance(func, ast.Name) and func.id in ("OrderedDict", "dict")


def build_facts(kind: str, source: bytes) -> dict[str, Any]:
    """Row fields from one build file: build_version, build_cuda, build_cudnn, build_archs."""
    values = literal_assignments(source)
    facts: dict[str, Any] = {}
    if kind == "torch":
        facts["build_version"] = values.get("__version__")
        facts["build_cuda"] = values.get("cuda")
    elif kind == "tensorflow":
        info = values.get("build_info")
        info = info if isinstance(info, dict) else {}
        facts["build_cuda"] = info.get("cuda_version") if info.get("is_cuda_build") else None
        facts["build_cudnn"] = info.get("cudnn_version") if info.get("is_cuda_build") else None
        archs = info.get("cuda_compute_capabilities")
        if isinstance(archs, list) and all(isinstance(a, str) for a in archs):
            facts["build_archs"] = list(archs)
    elif kind == "onnxruntime":
        facts["build_version"] = values.get("__version__")
        facts["build_cuda"] = values.get("cuda_version")
        facts["build_cudnn"] = values.get("cudnn_version")
    elif kind == "jax":
        facts["build_version"] = values.get("_release_version")
    return {k: str(v) if k != "build_archs" else v for k, v in facts.items() if v}
