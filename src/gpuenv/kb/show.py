"""`gpuenv kb show`: print one knowledge-base table, filtered, with where its rows come from.

Topics: torch (curated torch lines joined with the index's wheels), driver (what a driver version
runs), gpu, cuda, jetson, tensorflow, jax, cupy, wheels, and any subject or subject.table
("archs", "cuda_libs.cudnn"). Everything here is lookup and formatting; no fact is derived that
the tables do not hold.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable

from packaging.utils import canonicalize_name

from gpuenv.errors import GpuenvError
from gpuenv.kb.model import KnowledgeBase, Row
from gpuenv.kb.schema import PROVENANCE_FIELDS
from gpuenv.versions import CudaVersion, DriverVersion

FAMILIES: Mapping[str, tuple[str, ...]] = {
    "tensorflow": ("tensorflow",),
    "jax": ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin"),
    "cupy": ("cupy-cuda12x", "cupy-cuda13x"),
}
WHEEL_COLUMNS: tuple[str, ...] = ("package", "version", "python", "platforms", "cuda")
WHEEL_COLUMNS += ("cuda_aarch64", "cudnn", "nccl", "requires_torch", "yanked")
GPU_COLUMNS = ("name", "cc", "architecture", "segment", "memory_gib", "aliases")
_HIDDEN = (*PROVENANCE_FIELDS, "note")
_MAX_CELL = 60


@dataclass(frozen=True)
class ShowTable:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    citations: tuple[str, ...] = ()


Handler = Callable[[KnowledgeBase, Mapping[str, str], "str | None"], ShowTable]


def show(kb: KnowledgeBase, topic: str, filters: Mapping[str, str], text: str | None) -> ShowTable:
    """One table for `topic`; filters (cuda, python, package, os) narrow it; text looks up."""
    name = topic.strip().lower()
    handler = HANDLERS.get(name)
    if handler is not None:
        return handler(kb, filters, text)
    subject, _, table = name.replace("/", ".").partition(".")
    if subject in kb.files and (not table or table in kb.files[subject].tables):
        return generic_table(kb, subject, table or None, filters, text)
    raise GpuenvError(
        "kb-unknown-topic",
        f"no knowledge-base topic {topic!r}",
        hints=(f"topics: {', '.join(topics(kb))}",),
    )


def topics(kb: KnowledgeBase) -> list[str]:
    tables = [
        f"{s}.{t}" for s, f in sorted(kb.files.items()) for t in f.tables if len(f.tables) > 1
    ]
    return list(dict.fromkeys([*HANDLERS, *sorted(kb.files), *tables]))


# -- rendering -------------------------------------------------------------------------------------


def table_to_json(table: ShowTable) -> dict[str, Any]:
    return {
        "title": table.title,
        "columns": list(table.columns),
        "rows": [dict(zip(table.columns, row)) for row in table.rows],
        "citations": list(table.citations),
    }


def cell_text(value: Any) -> str:
    """A value as one short line of a table."""
    if value is None:
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, (list, tuple)):
        text = ", ".join(str(v) for v in value) or "-"
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 3] + "..."


# -- generic tables --------------------------------------------------------------------------------


def generic_table(
    kb: KnowledgeBase,
    subject: str,
    table: str | None,
    filters: Mapping[str, str],
    text: str | None,
    columns: Sequence[str] = (),
) -> ShowTable:
    tables = list(kb.files[subject].tables) if subject in kb.files else []
    chosen = table or (tables[0] if tables else "")
    rows = [r for r in kb.rows(subject, chosen) if _row_matches(r, filters, text)]
    shown = tuple(columns) or _columns(kb.rows(subject, chosen))
    title = f"{subject}.toml [[{chosen}]]: {len(rows)} row(s)"
    others = [t for t in tables if t != chosen]
    if others and not table:
        title += f" (also: {', '.join(f'{subject}.{t}' for t in others)})"
    title += _ignored(filters, kb.rows(subject, chosen))
    values = tuple(tuple(r.get(c) for c in shown) for r in rows)
    return ShowTable(title, shown, values, citations(kb, subject, rows))


def _columns(rows: Iterable[Row]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for row in rows:
        seen.update((k, None) for k in row if k not in _HIDDEN)
    return tuple(seen)


def _row_matches(row: Row, filters: Mapping[str, str], text: str | None) -> bool:
    for key, wanted in filters.items():
        if key == "cuda" and _cuda_columns(row):
            if not any(_same_cuda(row[c], wanted) for c in _cuda_columns(row)):
                return False
        elif key in row and not _value_is(row[key], wanted):
            return False
    if text:
        needle = text.strip().casefold()
        return any(needle in cell_text(v).casefold() for k, v in row.items() if k not in _HIDDEN)
    return True


def _ignored(filters: Mapping[str, str], rows: Sequence[Row]) -> str:
    known = {k for r in rows for k in r}
    usable = {
        k for k in filters if k in known or (k == "cuda" and any(_cuda_columns(r) for r in rows))
    }
    left = sorted(set(filters) - usable)
    return f" [ignored: {', '.join(f'--{k}' for k in left)}]" if left else ""


def _cuda_columns(row: Row) -> list[str]:
    return [k for k in row if "cuda" in k and row[k] is not None]


def _value_is(value: Any, wanted: str) -> bool:
    items = value if isinstance(value, list) else [value]
    return any(str(item).casefold() == wanted.strip().casefold() for item in items)


def _same_cuda(value: Any, wanted: str) -> bool:
    """Does a cell (a version, a cuXYZ label, a CUDA major, or a list) name the CUDA `wanted`?
    A bare major on either side ("12", cuda_major = 12) matches any minor of it."""
    whole = wanted.strip().isdigit()
    goal = CudaVersion(int(wanted), 0) if whole else CudaVersion.parse(wanted)
    goal = CudaVersion(goal.major, goal.minor) if goal else None
    for item in value if isinstance(value, list) else [value]:
        major_only = isinstance(item, int) and not isinstance(item, bool) and item < 100
        have = CudaVersion(item, 0) if major_only else CudaVersion.parse(str(item))
        have = CudaVersion(have.major, have.minor) if have else None
        if goal and have and have.major == goal.major and (whole or major_only or have == goal):
            return True
    return False


def citations(kb: KnowledgeBase, subject: str, rows: Sequence[Row]) -> tuple[str, ...]:
    """One line per row, or one per source when a source gives more than three rows."""
    by_source: dict[str, list[Row]] = {}
    for row in rows:
        by_source.setdefault(str(row.get("source", "?")), []).append(row)
    lines: list[str] = []
    for source_id, group in by_source.items():
        if len(group) <= 3:
            lines += [kb.cite(subject, row) for row in group]
            continue
        title = kb.source(subject, source_id).get("title", source_id)
        dates = sorted(str(r.get("verified", "?")) for r in group)
        when = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
        lines.append(
            f"{title}, {len(group)} rows, e.g. {group[0].get('locator')} (verified {when})"
        )
    return tuple(dict.fromkeys(lines))


# -- wheels and framework families -----------------------------------------------------------------


def python_span(tags: Iterable[str]) -> str:
    """["cp39", "cp310", "cp311", "cp313t"] -> "3.9-3.11, 3.13t"; other tags are listed."""
    plain, other = [], []
    for tag in tags:
        match = re.fullmatch(r"cp(\d)(\d+)", tag)
        if match:
            plain.append((int(match.group(1)), int(match.group(2))))
        else:
            found = re.fullmatch(r"cp(\d)(\d+)t", tag)
            other.append(f"{found.group(1)}.{found.group(2)}t" if found else tag)
    span = f"{min(plain)[0]}.{min(plain)[1]}-{max(plain)[0]}.{max(plain)[1]}" if plain else ""
    return ", ".join(part for part in [span, *other] if part) or "-"


def python_fits(tags: Sequence[str], python: str) -> bool:
    """Whether wheels with these Python tags install on CPython `python` ("3.11"): its cpXY
    tag, a pure py3 wheel, or an abi3 wheel for an older minor; True when `python` is unread."""
    parts = python.strip().split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        return True
    wanted = f"cp{parts[0]}{parts[1]}"
    abi3 = [t for t in tags if t.endswith("-abi3")]
    floor = [int(t[3:-5]) for t in abi3 if t[3:-5].isdigit() and t.startswith(f"cp{parts[0]}")]
    return wanted in tags or "py3" in tags or any(int(parts[1]) >= f for f in floor)


def wheel_rows(kb: KnowledgeBase, packages: Iterable[str], filters: Mapping[str, str]) -> list[Row]:
    names = {canonicalize_name(p) for p in packages}
    rows = [r for r in kb.rows("wheels", "release") if not names or r.get("package") in names]
    if filters.get("cuda"):
        wanted = filters["cuda"]
        rows = [
            r for r in rows if any(_same_cuda(r.get(c), wanted) for c in ("cuda", "cuda_aarch64"))
        ]
    if filters.get("python"):
        rows = [r for r in rows if python_fits(r.get("python_tags", []), filters["python"])]
    return rows


def wheels_table(
    kb: KnowledgeBase, packages: Sequence[str], filters: Mapping[str, str]
) -> ShowTable:
    rows = wheel_rows(kb, packages, filters)
    keep = ("package", "version", "python", "platforms")
    columns = tuple(c for c in WHEEL_COLUMNS if c in keep or any(r.get(c) for r in rows))
    values = tuple(tuple(_wheelcell_text(r, c) for c in columns) for r in rows)
    what = ", ".join(packages) if packages else "all watched packages"
    title = f"wheels on the package index: {what}, {len(rows)} release(s)"
    title += "".join(f" [{k} {v}]" for k, v in sorted(filters.items()) if k in ("cuda", "python"))
    if "wheels" not in kb.files:
        title += " (wheels.toml is absent: run `gpuenv kb refresh`)"
    return ShowTable(title, columns, values, citations(kb, "wheels", rows))


def _wheelcell_text(row: Row, column: str) -> Any:
    return python_span(row.get("python_tags", [])) if column == "python" else row.get(column)


def _wheels(kb: KnowledgeBase, filters: Mapping[str, str], text: str | None) -> ShowTable:
    package = filters.get("package") or text
    return wheels_table(kb, [package] if package else [], filters)


def _family(name: str) -> Handler:
    def handler(kb: KnowledgeBase, filters: Mapping[str, str], text: str | None) -> ShowTable:
        if name in kb.files:  # a curated table of its own wins over the generated one
            table = generic_table(kb, name, None, filters, text)
            hint = f" (index wheels: `kb show wheels --package {FAMILIES[name][0]}`)"
            return ShowTable(table.title + hint, table.columns, table.rows, table.citations)
        return wheels_table(kb, list(FAMILIES[name]), filters)

    return handler


# -- torch -----------------------------------------------------------------------------------------


def _torch(kb: KnowledgeBase, filters: Mapping[str, str], text: str | None) -> ShowTable:
    """Curated torch lines (torch.toml) joined with the index's torch wheels of each line."""
    wheels = wheel_rows(kb, ["torch"], {})
    by_line: dict[str, list[Row]] = {}
    for row in wheels:
        by_line.setdefault(_line(row["version"]), []).append(row)
    curated = list(kb.rows("torch", "release"))
    lines = [_line(r.get("torch")) for r in curated] or list(by_line)
    base = curated or [{"torch": line} for line in lines]
    columns = _columns(curated) or ("torch",)
    joined = ("index releases", "index cuda", "index cuda aarch64", "index cudnn", "index python")
    rows, cited = [], []
    for row, line in zip(base, lines):
        found = by_line.get(line, [])
        if not _torch_line_fits(row, found, filters, text):
            continue
        rows.append(tuple(row.get(c) for c in columns) + _torch_joined(found))
        cited.append(row)
    title = f"torch lines: {len(rows)}" + "".join(
        f" [{k} {v}]" for k, v in sorted(filters.items()) if k in ("cuda", "python")
    )
    if not curated:
        title += " (torch.toml is absent: lines from the package index only)"
    sources = citations(kb, "torch", cited if curated else [])
    sources += citations(kb, "wheels", wheels if rows else [])
    return ShowTable(title, tuple(columns) + joined, tuple(rows), sources)


def _line(version: Any) -> str:
    return ".".join(str(version).split(".")[:2])


def _torch_line_fits(
    row: Row, wheels: Sequence[Row], filters: Mapping[str, str], text: str | None
) -> bool:
    if text and not _line(row.get("torch")).startswith(_line(text)):
        return False
    wanted = filters.get("cuda")
    if wanted:
        curated = [k for k in row if any(w in k for w in ("cuda", "variant", "pypi"))]
        in_curated = any(_same_cuda(row[k], wanted) for k in curated)
        in_index = any(_same_cuda(w.get("cuda"), wanted) for w in wheels)
        if not (in_curated or (not curated and in_index)):
            return False
    python = filters.get("python")
    return not python or any(python_fits(w.get("python_tags", []), python) for w in wheels)


def _torch_joined(wheels: Sequence[Row]) -> tuple[Any, ...]:
    def distinct(field: str) -> list[str]:
        return list(dict.fromkeys(str(w[field]) for w in wheels if w.get(field)))

    tags = sorted({t for w in wheels for t in w.get("python_tags", [])})
    releases = [str(w["version"]) for w in wheels]
    return (
        releases,
        distinct("cuda"),
        distinct("cuda_aarch64"),
        distinct("cudnn"),
        python_span(tags),
    )


# -- drivers, CUDA, GPUs, Jetson -------------------------------------------------------------------


def _driver(kb: KnowledgeBase, filters: Mapping[str, str], text: str | None) -> ShowTable:
    from gpuenv.kb.query import cuda as q

    driver = DriverVersion.parse(text or filters.get("driver"))
    if driver is None:
        raise GpuenvError(
            "kb-bad-query",
            f"`kb show driver` needs a driver version, not {text!r}",
            hints=("e.g. `gpuenv kb show driver 535.183.01`",),
        )
    os_name = q.normalise_os(filters.get("os", "")) or _guess_os(kb, driver)
    branch = q.driver_branch_row(kb, driver, os_name)
    windows = q.windows_branch_row(kb, driver) if os_name == "windows" else None
    reported = q.driver_max_cuda(kb, driver, os_name)
    mvc = [r for r in kb.rows("cuda_driver", "mvc_minimum") if r.get("os") == os_name]
    under_mvc = [f"{r['cuda_major']}.x" for r in mvc if driver >= _driver_of(r["min_driver"])]
    rows, cited = [], [r for r in (windows, branch) if r]
    for cuda in _cuda_minors(kb, filters.get("cuda")):
        support = q.driver_supports_cuda(kb, driver, cuda, os_name)
        native = q.toolkit_min_driver(kb, cuda, os_name)
        rows.append((cuda.short, _str(native), support.how, _str(support.min_driver)))
        cited += [r for r in support.rows if r not in cited]
    title = (
        f"driver {driver} on {os_name}: branch {branch['branch'] if branch else driver.branch}, "
        f"reports CUDA {reported or 'unknown'}; minor-version compatibility for "
        f"{', '.join(under_mvc) or 'no CUDA major'}"
    )
    columns = ("cuda", "bundled driver", "this driver", "needs at least")
    return ShowTable(title, columns, tuple(rows), citations(kb, "cuda_driver", cited))


def _guess_os(kb: KnowledgeBase, driver: DriverVersion) -> str:
    """A leading number only the Windows table knows (551, 576, 581 ...) is a Windows driver."""
    linux = {r.get("branch") for r in kb.rows("cuda_driver", "driver_branch")}
    windows = {r.get("windows") for r in kb.rows("cuda_driver", "windows_branch")}
    return "windows" if driver.branch in windows and driver.branch not in linux else "linux"


def _driver_of(text: Any) -> DriverVersion:
    return DriverVersion.parse(str(text)) or DriverVersion((10**6,))


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _cuda_minors(kb: KnowledgeBase, wanted: str | None) -> list[CudaVersion]:
    found = {CudaVersion.parse(r.get("cuda")) for r in kb.rows("cuda_driver", "toolkit_driver")}
    minors = sorted({CudaVersion(v.major, v.minor) for v in found if v is not None})
    return [v for v in minors if not wanted or _same_cuda(v.short, wanted)]


def _cuda(kb: KnowledgeBase, filters: Mapping[str, str], text: str | None) -> ShowTable:
    merged = {**filters, **({"cuda": text} if text else {})}
    columns = ("cuda", "label", "linux_min_driver", "windows_min_driver", "ga")
    return generic_table(kb, "cuda_driver", "toolkit_driver", merged, None, columns)


def _gpu(kb: KnowledgeBase, filters: Mapping[str, str], text: str | None) -> ShowTable:
    rows: Sequence[Row] = kb.rows("gpus", "gpu")
    if text:
        rows = _gpu_matches(kb, text)
    rows = [r for r in rows if _row_matches(r, filters, None)]
    title = f"GPUs matching {text!r}: {len(rows)}" if text else f"GPUs: {len(rows)}"
    values = tuple(tuple(r.get(c) for c in GPU_COLUMNS) for r in rows)
    return ShowTable(title, GPU_COLUMNS, values, citations(kb, "gpus", rows))


def _gpu_matches(kb: KnowledgeBase, text: str) -> Sequence[Row]:
    try:
        from gpuenv.kb.query.gpus import gpu_candidates
    except ImportError:  # pragma: no cover - the query module is part of the package
        words = _words(text)
        return [r for r in kb.rows("gpus", "gpu") if words <= _words(str(r.get("name", "")))]
    return gpu_candidates(kb, text)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+|\d+", text.casefold())) - {"nvidia", "geforce"}


def _jetson(kb: KnowledgeBase, filters: Mapping[str, str], text: str | None) -> ShowTable:
    return generic_table(kb, "jetson", "jetpack", filters, text)


HANDLERS: Mapping[str, Handler] = {
    "torch": _torch,
    "driver": _driver,
    "gpu": _gpu,
    "cuda": _cuda,
    "jetson": _jetson,
    "tensorflow": _family("tensorflow"),
    "jax": _family("jax"),
    "cupy": _family("cupy"),
    "wheels": _wheels,
}
