"""Jetson text: /etc/nv_tegra_release and what `jetson_release` (jetson-stats or jetsonUtilities)
prints."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuenv.parse.smi import clean_text

_TEGRA_RE = re.compile(r"#\s*R(\d+)\s*\(release\),\s*REVISION:\s*(\d+(?:\.\d+)*)")


def parse_nv_tegra_release(text: str) -> str | None:
    """'# R36 (release), REVISION: 4.3, GCID: ...' -> '36.4.3'."""
    match = _TEGRA_RE.search(clean_text(text)[0])
    return f"{match.group(1)}.{match.group(2)}" if match else None


@dataclass(frozen=True)
class JetsonRelease:
    """What `jetson_release` (jetson-stats or jetsonUtilities) printed."""

    model: str | None = None
    l4t_release: str | None = None
    jetpack: str | None = None  # None for "JetPack UNKNOWN"
    ubuntu: str | None = None
    kernel: str | None = None
    cuda: str | None = None


_JR_PATTERNS = {
    # "L4T 35.4.1" (jetson_release), "L4T BSP Version:  L4T R32.7.2" (jetson-inference scripts)
    "l4t_release": re.compile(r"L4T\s+R?(\d+\.\d+(?:\.\d+)?)"),
    "jetpack": re.compile(r"Jetpack\s+(\d+(?:\.\d+)*)", re.IGNORECASE),
    "ubuntu": re.compile(r"Ubuntu\s+(\d+\.\d+(?:\.\d+)?(?:\s+LTS)?)"),
    "kernel": re.compile(r"(?:Kernel Version|Release)\s*:\s*(\S+)"),
    "cuda": re.compile(r"CUDA\s*:?\s+(\d+\.\d+(?:\.\d+)*)"),
}
_JR_MODEL_RE = re.compile(r"^(?:Model:\s*)?((?:NVIDIA )?Jetson\b.*?)(?:\s+-\s+Jetpack.*|\s*\[.*)?$")


def parse_jetson_release(text: str) -> JetsonRelease:
    cleaned, _ = clean_text(text)
    found = {name: _first_group(pattern, cleaned) for name, pattern in _JR_PATTERNS.items()}
    models = (_JR_MODEL_RE.match(line.strip(" -*\t")) for line in cleaned.splitlines())
    model = next((m.group(1).strip() for m in models if m), None)
    return JetsonRelease(model=model, **found)


def _first_group(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.search(text)
    return match.group(1) if match else None
