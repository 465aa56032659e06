"""Maintainer script: the kit for collecting a blind set of error cases (corpus/README.md, "How a
blind set is collected"), the checker of what a collector wrote, and the merge into corpus/.

    python tools/corpus_kit.py kit DIR --retrieved DATE [--theme FILE] [--sibling DIR ...]
    python tools/corpus_kit.py check PART.jsonl
    python tools/corpus_kit.py merge DIR OUT.jsonl

`kit` writes DIR/known_sources.txt (every source of the corpus, of the development split beside
the checkout, and every thread the knowledge base cites or names in a note: a collector must not
bring a thread explain has already learnt from), DIR/trackers.txt (how often each tracker is
used) and one brief a part, DIR/BRIEF{A,B,C}.md, from tools/corpus_brief.md: part A collects the
driver and build causes, B the packaging and container ones, C the rest. DIR/kit.json keeps the
date and the sibling kits (sets collected at the same time, whose parts a part may not repeat).

`check` validates a part (DIR/partX.jsonl): the fields and their forms, a cause of the vocabulary,
the retrieval date, no source already known or in another part, at most MAX_PER_TRACKER cases of
one tracker, and no host of the package index pip is configured with (write `<index>`).
`merge` joins the parts of DIR, sorted by id, into OUT (refused when a source repeats).
Exit status: 0 done, 1 problems found, 2 failed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from benchmarks.corpus_fields import (  # noqa: E402
    DATE_RE,
    GITHUB_SOURCE_RE,
    ID_RE,
    THREAD_IN_TEXT_RE,
    URL_SOURCE_RE,
)

from gpuenv.diagnose.findings import CAUSES  # noqa: E402

CORPUS = ROOT / "corpus"
DEV = ROOT.parent / "shared" / "corpus"
KB_DATA = ROOT / "src" / "gpuenv" / "kb" / "data"
BRIEF = Path(__file__).with_name("corpus_brief.md")
FIELDS = ("id", "source", "error_text", "context", "cause", "fix", "confidence", "retrieved")
PARTS = {
    "A": (
        "cpu_only_build",
        "gpu_arch_unsupported",
        "missing_cuda_lib",
        "driver_too_old",
        "no_driver",
        "driver_module_mismatch",
    ),
    "B": (
        "cudnn_mismatch",
        "nccl_issue",
        "python_version_unsupported",
        "solver_conflict",
        "container_driver_mismatch",
        "wrong_platform_wheel",
    ),
    "C": (
        "out_of_memory",
        "windows_dll",
        "extension_build_mismatch",
        "other",
        "multiple_cuda_conflict",
        "mps_or_rocm_specific",
    ),
}
MAX_PER_TRACKER = 3
MAX_ERROR_TEXT = 4200
LOCATOR_RE = re.compile(r"""^locator = (?:'([^'\n]*)'|"([^"\n]*)")$""", re.MULTILINE)


def known_sources() -> set[str]:
    """Every source of the corpus and the development split, every locator of the knowledge
    base's TOML files, and every GitHub thread their texts name (a note citing the threads a rule
    was resolved from)."""
    found: set[str] = set()
    for folder in (CORPUS, DEV):
        for path in sorted(folder.glob("*.jsonl")):
            for row in _rows(path):
                found.update(v for k in ("source", "url") if isinstance(v := row.get(k), str))
    for path in sorted(KB_DATA.glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        found.update(single or double for single, double in LOCATOR_RE.findall(text))
        found.update(THREAD_IN_TEXT_RE.findall(text))
    return found


def tracker(source: str) -> str:
    return source.split("#")[0] if GITHUB_SOURCE_RE.fullmatch(source) else urlsplit(source).netloc


def make_kit(kit: Path, retrieved: str, theme: str, siblings: list[Path]) -> int:
    kit.mkdir(parents=True, exist_ok=True)
    known = known_sources()
    (kit / "known_sources.txt").write_text("\n".join(sorted(known)) + "\n", encoding="utf-8")
    counts = Counter(tracker(s) for s in known if GITHUB_SOURCE_RE.fullmatch(s))
    lines = "".join(f"{name} {n}\n" for name, n in counts.most_common())
    (kit / "trackers.txt").write_text(lines, encoding="utf-8")
    meta = {"retrieved": retrieved, "siblings": [str(s.resolve()) for s in siblings]}
    (kit / "kit.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    template = BRIEF.read_text(encoding="utf-8")
    for part, causes in PARTS.items():
        brief = (
            template.replace("{SET}", kit.name)
            .replace("{PART}", part)
            .replace("{KIT}", str(kit.resolve()))
            .replace("{CAUSES}", ", ".join(causes))
            .replace("{RETRIEVED}", retrieved)
            .replace("{KNOWN}", str(len(known)))
            .replace("{THEME}", theme.strip() or "Everyday threads of real users, any era.")
            .replace("{TOOL}", str(Path(__file__).resolve()))
        )
        (kit / f"BRIEF{part}.md").write_text(brief, encoding="utf-8")
    print(f"{kit}: {len(known)} known sources, {len(counts)} trackers, briefs A B C")
    return 0


def check_part(part: Path, index_hosts: set[str] | None = None) -> list[str]:
    """What is wrong with a part file, as one line each (none: it is fit to merge)."""
    kit = part.resolve().parent
    meta = json.loads((kit / "kit.json").read_text(encoding="utf-8"))
    known = set((kit / "known_sources.txt").read_text(encoding="utf-8").split("\n"))
    others = _sources_of_parts([kit, *map(Path, meta["siblings"])], exclude=part.resolve())
    hosts = _index_hosts() if index_hosts is None else index_hosts
    problems: list[str] = []
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(part.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: not JSON ({exc})")
            continue
        if not isinstance(row, dict):
            problems.append(f"line {number}: not an object")
            continue
        rows.append(row)
        problems += [f"line {number} ({row.get('id')}): {p}" for p in _row_problems(row, meta)]
        source = row.get("source")
        if source in known:
            problems.append(f"line {number} ({row.get('id')}): source already known: {source}")
        if source in others:
            problems.append(f"line {number} ({row.get('id')}): source in another part: {source}")
        text = json.dumps(row, ensure_ascii=False).lower()
        problems += [
            f"line {number}: the index host {h}: write <index>" for h in hosts if h in text
        ]
    for field in ("id", "source"):
        for value, n in Counter(str(r.get(field)) for r in rows).items():
            if n > 1:
                problems.append(f"{field} repeated: {value}")
    for name, n in Counter(tracker(str(r.get("source", ""))) for r in rows).items():
        if n > MAX_PER_TRACKER:
            problems.append(f"tracker {name}: {n} cases (at most {MAX_PER_TRACKER})")
    return problems


def _row_problems(row: dict[str, Any], meta: dict[str, Any]) -> list[str]:
    missing = [f for f in FIELDS if not isinstance(row.get(f), str)]
    if missing:
        return [f"fields missing or not text: {', '.join(missing)}"]
    problems = [f"field not in the format: {f}" for f in sorted(set(row) - set(FIELDS))]
    if not ID_RE.fullmatch(row["id"]):
        problems.append("id is not kebab-case")
    if not (GITHUB_SOURCE_RE.fullmatch(row["source"]) or URL_SOURCE_RE.fullmatch(row["source"])):
        problems.append("source is neither owner/repo#N nor a URL")
    if row["cause"] not in CAUSES:
        problems.append(f"cause {row['cause']!r} is not in the vocabulary")
    if row["confidence"] not in ("high", "medium"):
        problems.append("confidence is neither high nor medium")
    if not row["error_text"].strip() or len(row["error_text"]) > MAX_ERROR_TEXT:
        problems.append(f"error_text empty or longer than {MAX_ERROR_TEXT}")
    if not row["fix"].strip():
        problems.append("fix empty")
    if row["retrieved"] != meta["retrieved"]:
        problems.append(f"retrieved is not {meta['retrieved']}")
    return problems


def merge(kit: Path, out: Path) -> int:
    rows = [row for path in sorted(kit.glob("part*.jsonl")) for row in _rows(path)]
    repeated = [s for s, n in Counter(r.get("source") for r in rows).items() if n > 1]
    if repeated:
        print(f"merge refused: sources in two parts: {', '.join(map(str, repeated))}")
        return 1
    rows.sort(key=lambda r: str(r.get("id")))
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    print(f"{out}: {len(rows)} cases, {dict(Counter(r.get('cause') for r in rows))}")
    return 0


def _sources_of_parts(kits: list[Path], exclude: Path) -> set[str]:
    found: set[str] = set()
    for kit in kits:
        for path in kit.glob("part*.jsonl"):
            if path.resolve() != exclude:
                found.update(str(r.get("source")) for r in _rows(path, strict=False))
    return found


def _rows(path: Path, strict: bool = True) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                if strict:
                    raise
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def _index_hosts() -> set[str]:
    """The host of the index pip is configured with (none when pip cannot say)."""
    from gpuenv.index.http import IndexUnavailable, pip_index_url

    try:
        host = urlsplit(pip_index_url()).hostname
    except (IndexUnavailable, OSError):  # a checker without pip still checks everything else
        return set()
    return {host} if host and "." in host else set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    kit = commands.add_parser("kit", help="write a collection kit")
    kit.add_argument("dir", type=Path)
    kit.add_argument("--retrieved", required=True, help="the date the collectors write")
    kit.add_argument("--theme", type=Path, help="a file holding the set's theme")
    kit.add_argument("--sibling", type=Path, action="append", default=[], metavar="DIR")
    check = commands.add_parser("check", help="check a part file")
    check.add_argument("part", type=Path)
    joined = commands.add_parser("merge", help="merge a kit's parts into a corpus file")
    joined.add_argument("dir", type=Path)
    joined.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "kit":
            if not DATE_RE.fullmatch(args.retrieved):
                parser.error("--retrieved takes a date, YYYY-MM-DD")
            theme = args.theme.read_text(encoding="utf-8") if args.theme else ""
            return make_kit(args.dir, args.retrieved, theme, args.sibling)
        if args.command == "check":
            problems = check_part(args.part)
            print("\n".join(problems) if problems else f"OK: {len(_rows(args.part))} cases")
            return 1 if problems else 0
        return merge(args.dir, args.out)
    except (OSError, ValueError, KeyError) as exc:
        print(f"corpus_kit: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
