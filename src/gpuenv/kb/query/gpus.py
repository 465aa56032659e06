"""GPU lookups over `gpus.toml`: a driver name or PCI device id -> its row; `--gpu` text -> a CC.

Name matching, in order, stopping at the first step that finds anything:

1. the canonical name or an alias, ignoring case and repeated spaces;
2. the same after `normalise_gpu_name` (brand words, punctuation and letter/digit joins ignored,
   so "GeForce GTX 1080 Ti", "gtx1080ti" and "NVIDIA GeForce GTX 1080 Ti" are one key);
3. a name nvidia-smi cut short with "..." ("Tesla V100-PCIE..."): the names it begins;
4. a family: the text is the start of names that differ only by form factor or memory
   ("A100", "H100", "GTX 1060"), never by model words ("RTX 6000" is not "RTX 6000 Ada").

`gpu_by_name` answers only when exactly one row is found; `resolve_gpu` also answers a family
whose rows share one compute capability, with the CC alone. Nothing here guesses a closest name:
text that matches nothing, or rows with different CCs, gives None.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from gpuenv.kb.model import KnowledgeBase, Row
from gpuenv.versions import ComputeCapability

SUBJECT = "gpus"
TABLE = "gpu"
MAX_TEXT = 200  # no GPU name is longer; longer text is not looked up
NVIDIA_VENDOR_ID = "10de"
# Words that brand rather than name a model; dropped from both sides of a comparison.
NOISE_WORDS = frozenset({"nvidia", "geforce", "tesla", "gpu", "corporation"})
# Words that only say form factor or memory size: what a family query may leave unsaid.
QUALIFIER_WORDS = frozenset({"pcie", "sxm", "nvl", "gb", "hbm", "e", "dgxs", "fhhl"})
TRUNCATION_MARKS = ("...", "\u2026")

_MARKS = str.maketrans({"\u2122": " ", "\u00ae": " ", "\u00a9": " "})  # TM, (R), (C)
_WORD = re.compile(r"[a-z]+|[0-9]+")
_PCI_SMI = re.compile(r"^(?:0x)?([0-9a-f]{4})([0-9a-f]{4})$")  # nvidia-smi: device, vendor
_PCI_LSPCI = re.compile(r"^\[?([0-9a-f]{4}):([0-9a-f]{4})\]?$")  # lspci -nn: vendor:device
_PCI_DEVICE = re.compile(r"^(?:0x)?([0-9a-f]{4})$")
_CC_TEXT = re.compile(r"^(sm_?|compute_?|cc)?(\d{1,2}\.\d|\d{2,3})([af]?)$", re.IGNORECASE)


@dataclass(frozen=True)
class ResolvedGpu:
    """What `--gpu TEXT` stands for: a model (name and row) or only a compute capability."""

    name: str | None  # canonical driver name; None for a bare CC or a family
    cc: ComputeCapability
    row: Row | None = field(default=None, compare=False)
    candidates: tuple[str, ...] = ()  # canonical names the text matched (a family: several)


def normalise_gpu_name(text: str) -> str:
    """A comparison key: lower case, words and numbers split apart, brand words dropped.

    "NVIDIA GeForce RTX 3090 Ti" -> "rtx 3090 ti"; "Tesla V100-SXM2-16GB" -> "v 100 sxm 2 16 gb".
    """
    folded = unicodedata.normalize("NFKC", text.translate(_MARKS)).casefold()
    return " ".join(w for w in _WORD.findall(folded) if w not in NOISE_WORDS)


@lru_cache(maxsize=4096)
def _key(text: str) -> tuple[str, ...]:
    """Key words of a knowledge-base name or alias (short, trusted strings only)."""
    return tuple(normalise_gpu_name(text).split())


def all_gpus(kb: KnowledgeBase) -> tuple[Row, ...]:
    return kb.rows(SUBJECT, TABLE)


def gpu_cc(row: Row) -> ComputeCapability | None:
    return ComputeCapability.parse(str(row.get("cc", "")))


def gpu_by_name(kb: KnowledgeBase, text: str) -> Row | None:
    """The one row `text` names (driver name, alias, a spelling of either); else None."""
    rows = gpu_candidates(kb, text)
    return rows[0] if len(rows) == 1 else None


def gpu_candidates(kb: KnowledgeBase, text: str) -> tuple[Row, ...]:
    """Every row `text` may name, from the first matching step (see the module docstring)."""
    clean = _clean(text)
    if clean is None:
        return ()
    rows = all_gpus(kb)
    exact = _unique(r for r in rows if clean.casefold() in _spellings(r))
    if exact:
        return exact
    truncated = clean.endswith(TRUNCATION_MARKS)
    words = tuple(normalise_gpu_name(clean.rstrip(".\u2026 ")).split())
    if not words:
        return ()
    if truncated:
        return _truncated_matches(rows, words)
    same = _unique(r for r in rows if any(_key(k) == words for k in _names(r)))
    return same or _family_matches(rows, words)


def gpu_by_pci_id(kb: KnowledgeBase, device_id: str) -> Row | None:
    """The row of a PCI device id: "0x2204", "2204", "0x220410DE" (nvidia-smi), "10de:2204"."""
    wanted = _pci_device(device_id)
    if wanted is None:
        return None
    rows = _unique(r for r in all_gpus(kb) if wanted in r.get("pci_device_ids", ()))
    return rows[0] if len(rows) == 1 else None


def resolve_gpu(kb: KnowledgeBase, name_or_cc: str) -> ResolvedGpu | None:
    """`--gpu` text -> a model and its CC, or a CC alone ("8.6", "sm_90", "86", "A100")."""
    text = _clean(name_or_cc)
    if text is None:
        return None
    cc = _parse_cc(text, allow_bare=False)
    if cc is not None:
        return ResolvedGpu(name=None, cc=cc)
    rows = gpu_candidates(kb, text)
    if rows:
        return _resolved(rows)
    cc = _parse_cc(text, allow_bare=True)  # "86" only when no GPU name matched
    return ResolvedGpu(name=None, cc=cc) if cc is not None else None


def _resolved(rows: Sequence[Row]) -> ResolvedGpu | None:
    ccs = {gpu_cc(r) for r in rows}
    if len(ccs) != 1:
        return None
    (cc,) = ccs
    if cc is None:
        return None
    names = tuple(str(r["name"]) for r in rows)
    if len(rows) == 1:
        return ResolvedGpu(name=names[0], cc=cc, row=rows[0], candidates=names)
    return ResolvedGpu(name=None, cc=cc, candidates=names)


def _clean(text: object) -> str | None:
    """Text worth looking up: a short string with no control or format characters."""
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        return None
    stripped = text.strip()
    if not stripped:
        return None
    if any(unicodedata.category(c).startswith("C") for c in stripped):
        return None
    return " ".join(stripped.split())


def _names(row: Row) -> tuple[str, ...]:
    return (str(row["name"]), *(str(a) for a in row.get("aliases", ())))


def _spellings(row: Row) -> set[str]:
    return {" ".join(n.split()).casefold() for n in _names(row)}


def _unique(rows: Iterable[Row]) -> tuple[Row, ...]:
    seen: dict[str, Row] = {}
    for row in rows:
        seen.setdefault(str(row["name"]), row)
    return tuple(seen.values())


def _truncated_matches(rows: Iterable[Row], words: tuple[str, ...]) -> tuple[Row, ...]:
    """Rows whose canonical name starts with `words`; the last word may itself be cut short."""
    if not _has_number(words):
        return ()
    head, last = words[:-1], words[-1]

    def begins(key: tuple[str, ...]) -> bool:
        n = len(words)
        return len(key) >= n and key[: n - 1] == head and key[n - 1].startswith(last)

    return _unique(r for r in rows if begins(_key(str(r["name"]))))


def _family_matches(rows: Iterable[Row], words: tuple[str, ...]) -> tuple[Row, ...]:
    """Rows with a name that starts with `words` and goes on only with qualifier words."""
    if not _has_number(words):
        return ()

    def extends(key: tuple[str, ...]) -> bool:
        rest = key[len(words) :]
        return key[: len(words)] == words and all(_is_qualifier(w) for w in rest)

    return _unique(r for r in rows if any(extends(_key(k)) for k in _names(r)))


def _is_qualifier(word: str) -> bool:
    return word.isdigit() or word in QUALIFIER_WORDS


def _has_number(words: Iterable[str]) -> bool:
    return any(w.isdigit() for w in words)


def _pci_device(text: object) -> str | None:
    """The "0x2204" form of any accepted spelling of an NVIDIA PCI device id; else None."""
    if not isinstance(text, str) or len(text) > 32:
        return None
    value = text.strip().lower()
    smi = _PCI_SMI.match(value)
    if smi:
        device, vendor = smi.groups()
        return f"0x{device}" if vendor == NVIDIA_VENDOR_ID else None
    lspci = _PCI_LSPCI.match(value)
    if lspci:
        vendor, device = lspci.groups()
        return f"0x{device}" if vendor == NVIDIA_VENDOR_ID else None
    plain = _PCI_DEVICE.match(value)
    return f"0x{plain.group(1)}" if plain else None


def _parse_cc(text: str, allow_bare: bool) -> ComputeCapability | None:
    """CC text ("8.6", "sm_86", "compute_90a", "cc8.6"; "86" if allow_bare) -> CC, no suffix."""
    match = _CC_TEXT.match(text)
    if not match:
        return None
    prefix, number, _suffix = match.groups()
    if not prefix and "." not in number and not allow_bare:
        return None
    cc = ComputeCapability.parse(number)
    if cc is None or not 1 <= cc.major <= 20:
        return None
    return ComputeCapability(cc.major, cc.minor)


PEAK_FIELDS = ("fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "bandwidth_gbs")


def gpu_peak(row: Row, field_name: str) -> float | None:
    """A dense spec peak of the row (`PEAK_FIELDS`: TFLOP/s or GB/s, decimal); None when NVIDIA
    publishes none for the model (or the KB has not recorded it)."""
    if field_name not in PEAK_FIELDS:
        raise ValueError(f"{field_name!r} is not a peak field ({', '.join(PEAK_FIELDS)})")
    value = row.get(field_name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    return float(value)
