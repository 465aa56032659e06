"""`gpuenv kb audit`: is the knowledge base consistent with itself?

Runs the loader's checks (schema, provenance on every row, duplicate keys) and cross-table
checks: driver minimums never fall as CUDA rises, the CUDA a driver branch reports never falls as
branches rise, every GPU's compute capability belongs to an architecture, and the curated torch
table agrees with what the package index says (wheels.toml). A table that is absent means "not
checked", reported as such. Disagreements name both values; the audit never picks one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from gpuenv.kb.model import KnowledgeBase, Row
from gpuenv.versions import ComputeCapability, CudaVersion, DriverVersion, dotted

ERROR = "error"
WARNING = "warning"
_LOADER = re.compile(r"^(?P<file>[^:]+\.toml): (?:(?P<table>\w+)\[(?P<row>\d+)\]: )?(?P<msg>.*)$")


@dataclass(frozen=True)
class AuditProblem:
    file: str  # "cuda_driver.toml"
    table: str  # "toolkit_driver" ("" for the file as a whole)
    row: str  # which row: "cuda=12.0.1", "#3" (position), "" for none
    message: str
    check: str  # the check that found it
    severity: str = ERROR  # ERROR makes the audit fail; WARNING is shown only

    def to_dict(self) -> dict[str, str]:
        return {
            "file": self.file,
            "table": self.table,
            "row": self.row,
            "message": self.message,
            "check": self.check,
            "severity": self.severity,
        }

    def __str__(self) -> str:
        where = f"{self.file} [{self.table}]" if self.table else self.file
        where += f" {self.row}" if self.row else ""
        return f"{self.severity}: {where}: {self.message} ({self.check})"


@dataclass(frozen=True)
class AuditReport:
    problems: tuple[AuditProblem, ...]
    checks_run: tuple[str, ...]
    checks_skipped: tuple[str, ...]  # "check: why"

    @property
    def ok(self) -> bool:
        return not any(p.severity == ERROR for p in self.problems)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checks_run": list(self.checks_run),
            "checks_skipped": list(self.checks_skipped),
            "problems": [p.to_dict() for p in self.problems],
        }


Check = Callable[[KnowledgeBase], "list[AuditProblem] | str"]  # problems, or why it did not run


def audit(kb: KnowledgeBase) -> AuditReport:
    """Every check, on a KB loaded with strict=False (so its loader problems are all there)."""
    problems = loader_problems(kb.problems)
    run, skipped = ["schema and provenance (loader)"], []
    for name, check in CHECKS:
        result = check(kb)
        if isinstance(result, str):
            skipped.append(f"{name}: {result}")
        else:
            run.append(name)
            problems.extend(result)
    return AuditReport(tuple(problems), tuple(run), tuple(skipped))


def render_audit(report: AuditReport) -> str:
    errors = sum(p.severity == ERROR for p in report.problems)
    warnings = len(report.problems) - errors
    lines = [
        f"kb audit: {'ok' if report.ok else 'FAILED'}, {errors} error(s), {warnings} warning(s)"
    ]
    lines += [f"  checked: {name}" for name in report.checks_run]
    lines += [f"  not checked: {why}" for why in report.checks_skipped]
    lines += [str(problem) for problem in report.problems]
    return "\n".join(lines) + "\n"


def loader_problems(problems: Iterable[str]) -> list[AuditProblem]:
    found = []
    for text in problems:
        match = _LOADER.match(text)
        if match is None:
            found.append(AuditProblem("", "", "", text, "loader"))
            continue
        row = f"#{match['row']}" if match["row"] else ""
        found.append(AuditProblem(match["file"], match["table"] or "", row, match["msg"], "loader"))
    return found


# -- CUDA and drivers ----------------------------------------------------------------------------


def check_driver_minimums(kb: KnowledgeBase) -> list[AuditProblem] | str:
    """Per OS, the minimum driver of a toolkit release never falls as the release rises."""
    rows = kb.rows("cuda_driver", "toolkit_driver")
    if not rows:
        return "cuda_driver.toml [[toolkit_driver]] is absent"
    problems = []
    for os_name in ("linux", "windows"):
        column = f"{os_name}_min_driver"
        keyed = _keyed(rows, "cuda", CudaVersion.parse, column, DriverVersion.parse)
        problems += [
            _problem(
                "cuda_driver.toml",
                "toolkit_driver",
                f"cuda={row['cuda']}",
                f"{os_name} minimum driver {row[column]} for CUDA {row['cuda']} is lower than "
                f"{prev[column]} for the older CUDA {prev['cuda']}",
                "driver minimum never falls as CUDA rises",
            )
            for prev, row in _falls(keyed)
        ]
    return problems


def check_branch_max_cuda(kb: KnowledgeBase) -> list[AuditProblem] | str:
    rows = kb.rows("cuda_driver", "driver_branch")
    if not rows:
        return "cuda_driver.toml [[driver_branch]] is absent"
    keyed = _keyed(rows, "branch", _int, "max_cuda", CudaVersion.parse)
    return [
        _problem(
            "cuda_driver.toml",
            "driver_branch",
            f"branch={row['branch']}",
            f"branch {row['branch']} reports CUDA {row['max_cuda']}, lower than "
            f"{prev['max_cuda']} of the older branch {prev['branch']}",
            "max CUDA never falls as the branch rises",
        )
        for prev, row in _falls(keyed)
    ]


def _keyed(
    rows: Sequence[Row],
    key: str,
    parse_key: Callable[[Any], Any],
    value: str,
    parse: Callable[[Any], Any],
) -> list[tuple[Any, Any, Row]]:
    out = []
    for row in rows:
        k, v = parse_key(row.get(key)), parse(row.get(value))
        if k is not None and v is not None:
            out.append((k, v, row))
    return sorted(out, key=lambda item: item[0])


def _falls(keyed: Sequence[tuple[Any, Any, Row]]) -> list[tuple[Row, Row]]:
    """(previous, row) pairs where the value drops below the highest value of a lower key."""
    falls: list[tuple[Row, Row]] = []
    best: tuple[Any, Any, Row] | None = None
    for item in keyed:
        if best is not None and item[0] > best[0] and item[1] < best[1]:
            falls.append((best[2], item[2]))
        if best is None or item[1] >= best[1]:
            best = item
    return falls


def _int(value: Any) -> int | None:
    parts = dotted(str(value).lstrip("Rr")) if value is not None else None
    return parts[0] if parts else None


# -- GPUs and architectures ------------------------------------------------------------------------


def check_gpu_architectures(kb: KnowledgeBase) -> list[AuditProblem] | str:
    """Every GPU's cc is in some architecture's ccs; a differing architecture name is a warning
    (one per name pair, not per GPU)."""
    gpus, archs = kb.rows("gpus", "gpu"), kb.rows("archs", "architecture")
    if not gpus or not archs:
        return "gpus.toml [[gpu]] or archs.toml [[architecture]] is absent"
    owner: dict[str, str] = {}
    for arch in archs:
        for cc in arch.get("ccs", ()):
            owner.setdefault(_cc(cc), str(arch.get("name")))
    problems: list[AuditProblem] = []
    renamed: dict[tuple[str, str, str], list[str]] = {}
    for gpu in gpus:
        cc, named = _cc(gpu.get("cc")), str(gpu.get("architecture", ""))
        if cc not in owner:
            message = f"compute capability {gpu.get('cc')} belongs to no architecture in archs.toml"
            where = f"name={gpu.get('name')}"
            problems.append(
                _problem("gpus.toml", "gpu", where, message, "gpu cc in an architecture")
            )
        elif named and named.casefold() != owner[cc].casefold():
            renamed.setdefault((named, owner[cc], cc), []).append(str(gpu.get("name")))
    for (named, owned, cc), names in renamed.items():
        message = (
            f"architecture {named!r} on {len(names)} GPU(s), e.g. {names[0]!r}, but archs.toml "
            f"names cc {cc} {owned!r}"
        )
        problems.append(
            _problem("gpus.toml", "gpu", f"architecture={named}", message, "names agree", WARNING)
        )
    return problems


def _cc(value: Any) -> str:
    parsed = ComputeCapability.parse(str(value)) if value is not None else None
    return parsed.short if parsed else str(value)


# -- torch: curated vs generated ----------------------------------------------------------------


def _torch_tables(kb: KnowledgeBase) -> tuple[Sequence[Row], Sequence[Row]] | str:
    curated, wheels = kb.rows("torch", "release"), kb.rows("wheels", "release")
    if not curated or not wheels:
        return "torch.toml [[release]] or wheels.toml [[release]] is absent"
    return curated, wheels


def check_torchvision_pairing(kb: KnowledgeBase) -> list[AuditProblem] | str:
    tables = _torch_tables(kb)
    if isinstance(tables, str):
        return tables
    curated, wheels = tables
    problems = []
    for wheel in (w for w in wheels if w.get("package") == "torchvision"):
        pinned = _pinned_torch(wheel.get("requires_torch"))
        line = _curated_line(curated, pinned) if pinned else None
        if line is None or "torchvision" not in line:
            continue
        depth = 2 if len(_parts(line["torch"])) <= 2 else None
        if not _agrees(line["torchvision"], str(wheel["version"]), depth):
            problems.append(
                _problem(
                    "torch.toml",
                    "release",
                    f"torch={line['torch']}",
                    f"torchvision {line['torchvision']} here, but torchvision {wheel['version']} "
                    f"on the package index pins torch{wheel['requires_torch']} (wheels.toml)",
                    "torchvision pairing agrees with the index",
                )
            )
    return problems


def check_torch_cuda(kb: KnowledgeBase) -> list[AuditProblem] | str:
    """The CUDA and cuDNN the index's torch wheels pin (or, with no pins, were built with: their
    torch/version.py) agree with pypi_linux_x86_64, pypi_linux_aarch64 and cudnn. Only platforms
    whose core metadata was read are compared."""
    tables = _torch_tables(kb)
    if isinstance(tables, str):
        return tables
    curated, wheels = tables
    problems = []
    for wheel in (w for w in wheels if w.get("package") == "torch"):
        line = _curated_line(curated, _parts(wheel["version"]))
        read = wheel.get("metadata_read", [])
        if line is None:
            continue
        where, version = f"torch={line['torch']}", wheel["version"]
        for column, field, platform in (
            ("pypi_linux_x86_64", "cuda", "linux-x86_64"),
            ("pypi_linux_aarch64", "cuda_aarch64", "linux-aarch64"),
        ):
            variant = line.get(column)
            # torch before 2.0 bundles CUDA and pins nothing: its build file says which CUDA
            built = wheel.get("build_cuda") if platform == "linux-x86_64" else None
            have = wheel.get(field) or built
            if platform in read and not _same_cuda(variant, have):
                said = "pins" if wheel.get(field) else "was built with"
                message = (
                    f"{column} {variant!r} here, but the {platform} torch {version} wheel on "
                    f"the package index {said} CUDA {have or 'none'} (wheels.toml)"
                )
                problems.append(_problem("torch.toml", "release", where, message, "torch CUDA"))
        cudnn = line.get("cudnn")
        if cudnn and wheel.get("cudnn") and not _agrees(cudnn, str(wheel["cudnn"]), None):
            message = (
                f"cudnn {cudnn} here, but the torch {version} wheel on the package index pins "
                f"cuDNN {wheel['cudnn']} (wheels.toml)"
            )
            problems.append(_problem("torch.toml", "release", where, message, "torch cuDNN"))
    return problems


def _pinned_torch(requirement: Any) -> tuple[int, ...] | None:
    try:
        specs = list(SpecifierSet(str(requirement))) if requirement else []
    except InvalidSpecifier:
        return None
    exact = [s.version.removesuffix(".*") for s in specs if s.operator in ("==", "===")]
    return _parts(exact[0]) if exact else None


def _curated_line(curated: Sequence[Row], version: tuple[int, ...]) -> Row | None:
    """The most specific curated row whose torch version is a prefix of `version`."""
    fits = [r for r in curated if _parts(r.get("torch")) == version[: len(_parts(r.get("torch")))]]
    fits = [r for r in fits if _parts(r.get("torch"))]
    return max(fits, key=lambda r: len(_parts(r.get("torch"))), default=None)


def _agrees(curated: Any, actual: str, depth: int | None) -> bool:
    """A curated value (or list of values) names `actual` at its own precision (or `depth`)."""
    values = curated if isinstance(curated, list) else [curated]
    have = _parts(actual)
    for value in values:
        want = _parts(value)[:depth] if depth else _parts(value)
        if want and have[: len(want)] == want:
            return True
    return False


def _same_cuda(variant: Any, cuda: Any) -> bool:
    """A variant label ("cu121", "cpu", absent) and a pinned CUDA ("12.1", absent) agree."""
    wanted = CudaVersion.parse(str(variant)) if variant is not None else None
    have = CudaVersion.parse(str(cuda)) if cuda is not None else None
    if wanted is None or have is None:
        return wanted is None and have is None
    return (wanted.major, wanted.minor) == (have.major, have.minor)


def _parts(value: Any) -> tuple[int, ...]:
    text = re.sub(r"(\.[x*])+$", "", str(value)) if value is not None else ""
    return dotted(text) or ()


def _problem(
    file: str, table: str, row: str, message: str, check: str, severity: str = ERROR
) -> AuditProblem:
    return AuditProblem(file, table, row, message, check, severity)


# -- explain's patterns -------------------------------------------------------------------------


def check_patterns(kb: KnowledgeBase) -> list[AuditProblem] | str:
    """Every pattern compiles, names known facts, has a literal to be found by, cannot backtrack
    catastrophically (by its shape, and by timing it on adversarial lines), and matches each of
    its real examples; every example belongs to a pattern."""
    from gpuenv.kb.patterns import (
        SLOW_SECONDS,
        compile_row,
        match_example,
        slow_on_adversarial_lines,
    )

    compiled: dict[str, Any] = {}

    rows = kb.rows("patterns", "pattern")
    if not rows:
        return "patterns.toml [[pattern]] is absent"
    examples: dict[str, list[str]] = {}
    for example in kb.rows("patterns", "example"):
        examples.setdefault(str(example.get("pattern")), []).append(str(example.get("text", "")))
    problems: list[AuditProblem] = []

    def problem(row: str, message: str, check: str) -> None:
        problems.append(_problem("patterns.toml", "pattern", row, message, check))

    ids = set()
    for row in rows:
        where = f"id={row.get('id')}"
        ids.add(str(row.get("id")))
        pattern, found = compile_row(row)
        if pattern is not None:
            compiled[pattern.id] = pattern
        for message in found:
            problem(where, message, "pattern compiles and is safe")
        if pattern is None or any("backtrack" in message for message in found):
            continue  # running a regex known to backtrack would only hang the audit
        texts = examples.get(pattern.id, [])
        if not texts:
            problem(where, "has no example", "pattern matches its examples")
        for text in texts:
            if match_example(pattern, text) is None:
                problem(
                    where,
                    f"does not match its example {text[:120]!r}",
                    "pattern matches its examples",
                )
        took = slow_on_adversarial_lines(pattern, texts)
        if took > SLOW_SECONDS:
            problem(
                where, f"took {took:.2f} s on adversarial lines", "pattern compiles and is safe"
            )
    problems += _check_rules(kb, compiled)
    for name in sorted(set(examples) - ids):
        problems.append(
            _problem(
                "patterns.toml",
                "example",
                f"pattern={name}",
                "names no pattern",
                "examples belong to a pattern",
            )
        )
    return problems


def _check_rules(kb: KnowledgeBase, patterns: dict[str, Any]) -> list[AuditProblem]:
    """Every rule names patterns that exist and facts that exist, has a cause of the
    vocabulary, and its example holds a message of one of its patterns."""
    from gpuenv.kb.patterns import compile_rule, match_example

    problems = []
    for row in kb.rows("patterns", "rule"):
        where = f"id={row.get('id')}"
        rule, found = compile_rule(row, patterns)
        found += [] if 0.0 < rule.weight <= 1.0 else [f"weight {rule.weight} is not in (0, 1]"]
        named = [patterns[p] for p in rule.patterns if p in patterns]
        if named and not any(match_example(p, rule.example) for p in named):
            found.append("its example holds no message of its patterns")
        problems += [
            _problem("patterns.toml", "rule", where, message, "rules name real patterns and facts")
            for message in found
        ]
    return problems


CHECKS: Sequence[tuple[str, Check]] = (
    ("driver minimum never falls as CUDA rises", check_driver_minimums),
    ("max CUDA never falls as the branch rises", check_branch_max_cuda),
    ("every GPU cc belongs to an architecture", check_gpu_architectures),
    ("torchvision pairing agrees with the index", check_torchvision_pairing),
    ("torch CUDA and cuDNN agree with the index", check_torch_cuda),
    ("explain's patterns and rules compile, are safe and match their examples", check_patterns),
)
