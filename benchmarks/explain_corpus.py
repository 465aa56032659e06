"""Measure explain on a corpus (shared by benchmarks/bench_explain.py and the corpus tests):
top-1 cause accuracy on error cases, and the share of expected facts read from pasted reports."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuenv.explain import Explanation, explain_text
from gpuenv.kb import KnowledgeBase

# expected key of pasted-reports.jsonl -> the fact explain gives for it
FACT_OF = {
    "driver_version": "driver_version",
    "cuda_version": None,  # nvidia-smi: driver_max_cuda; nvcc: toolkit_cuda; jetson: toolkit_cuda
    "torch_version": "torch_version",
    "torch_cuda_build": "torch_cuda",
    "rocm_build": "torch_rocm",
    "python_version": "python_version",
    "cudnn_version": "cudnn_version",
    "cuda_runtime_version": "cuda_runtime",
    "is_cuda_available": "cuda_available",
    "jax_version": "jax_version",
    "jaxlib_version": "jaxlib_version",
    "backend": "jax_backend",
    "l4t_version": "l4t",
    "jetpack": "jetpack",
    "model": "jetson_model",
    "cuda_virtual_package": "conda_cuda",
    "error": "driver_failure",
    "os": "distro",
    "failed_libraries": "missing_library",
    "gpus": "gpu",
}
CUDA_OF_KIND = {
    "nvidia_smi": "driver_max_cuda",
    "nvidia_smi_q": "driver_max_cuda",
    "nvcc": "toolkit_cuda",
    "jetson_release": "toolkit_cuda",
    "tf_build_info": "tensorflow_cuda",
}


def rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


HALVES = ("tune", "check")


def half_of(items: Iterable[dict[str, Any]], key: str) -> dict[str, str]:
    """The split of a corpus into a tune half (patterns are studied on it) and a check half (it
    only measures whether they generalise): within each group (a case's `cause`, a paste's
    `kind`), rows ordered by the SHA-256 of their `id` go alternately to tune and check. The
    same rows always land in the same half; each cause is split evenly."""
    groups: dict[str, list[str]] = defaultdict(list)
    for item in items:
        groups[str(item[key])].append(str(item["id"]))
    out = {}
    for ids in groups.values():
        ordered = sorted(ids, key=lambda i: hashlib.sha256(i.encode("utf-8")).hexdigest())
        out.update({i: HALVES[n % 2] for n, i in enumerate(ordered)})
    return out


def split(items: list[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    """{"tune": [...], "check": [...], "all": items} by half_of."""
    which = half_of(items, key)
    out: dict[str, list[dict[str, Any]]] = {h: [] for h in HALVES}
    for item in items:
        out[which[str(item["id"])]].append(item)
    out["all"] = items
    return out


@dataclass
class Score:
    right: int = 0
    total: int = 0
    second: int = 0  # cases whose cause explain named as its first alternative instead
    by_cause: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    wrong: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.right / self.total if self.total else 0.0

    @property
    def top_two(self) -> float:
        """The share of cases whose cause explain named first or second."""
        return (self.right + self.second) / self.total if self.total else 0.0


def cause_accuracy(cases: Iterable[dict[str, Any]], kb: KnowledgeBase, with_context: bool) -> Score:
    score = Score()
    for case in cases:
        text = (case.get("context", "") + "\n" if with_context else "") + case["error_text"]
        explanation = explain_text(text, kb)
        got = explanation.cause
        score.total += 1
        score.by_cause[case["cause"]]["total"] += 1
        if got == case["cause"]:
            score.right += 1
            score.by_cause[case["cause"]]["right"] += 1
        else:
            score.wrong.append(f"{case['id']}: {case['cause']} -> {got}")
            alternatives = explanation.alternatives
            score.second += bool(alternatives) and alternatives[0].cause == case["cause"]
    return score


def _values(explanation: Explanation, name: str) -> list[str]:
    """What explain read; its 'none' (a build without CUDA) is the corpus's null."""
    got = [f.value for f in explanation.facts if f.name == name and f.origin == "pasted"]
    return [g for g in got if g != "none"]


def _matches(expected: Any, got: list[str]) -> bool:
    if expected is None or expected == [] or (expected is False and not got):
        return not got or expected is False
    if isinstance(expected, bool):
        return str(expected).lower() in got
    if isinstance(expected, list):
        names = [e["name"] if isinstance(e, dict) else str(e) for e in expected]
        return sorted(names) == sorted(got) or all(n in got for n in names)
    text = str(expected)
    return any(g == text or text.startswith(g) or g.startswith(text) for g in got)


def fact_share(
    reports: Iterable[dict[str, Any]],
    kb: KnowledgeBase,
    on_miss: Callable[[str], None] | None = None,
) -> Score:
    """Of the expected facts explain has a name for, the share it reads right."""
    score = Score()
    for report in reports:
        explanation = explain_text(report["text"], kb)
        for key, expected in report["expected"].items():
            name = CUDA_OF_KIND.get(report["kind"]) if key == "cuda_version" else FACT_OF.get(key)
            if report["kind"] == "tf_build_info" and key == "cudnn_version":
                name = "tensorflow_cudnn"
            if name is None or (report["kind"] == "jetson_release" and key == "model"):
                name = "jetson_model" if key == "model" else None
            if name is None:
                continue
            if key == "os" and report["kind"] != "collect_env":
                continue
            score.total += 1
            score.by_cause[report["kind"]]["total"] += 1
            if _matches(expected, _values(explanation, name)):
                score.right += 1
                score.by_cause[report["kind"]]["right"] += 1
            else:
                score.wrong.append(
                    f"{report['id']}: {key}={expected!r} got {_values(explanation, name)}"
                )
                if on_miss:
                    on_miss(score.wrong[-1])
    return score
