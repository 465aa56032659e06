"""Lookups over extensions.toml: how a compiled torch extension is installed, its prebuilt wheels,
and the C++ ABI of PyTorch's Linux wheels. Pure; None or () for what the KB does not know."""

from __future__ import annotations

from gpuenv.kb.loader import KnowledgeBase, Row
from gpuenv.kb.query._frameworks_util import minor_line, release_tuple
from gpuenv.versions import sortable

SUBJECT = "extensions"


def extension_package(kb: KnowledgeBase, name: str) -> Row | None:
    """The install row of an extension ("flash-attn"): its wheel source and source build."""
    return next((r for r in kb.rows(SUBJECT, "package") if r["name"] == name), None)


def extension_names(kb: KnowledgeBase) -> tuple[str, ...]:
    return tuple(str(r["name"]) for r in kb.rows(SUBJECT, "package"))


def extension_wheels(kb: KnowledgeBase, name: str) -> tuple[Row, ...]:
    """Prebuilt-wheel rows of an extension, newest release first."""
    rows = [r for r in kb.rows(SUBJECT, "wheel") if r["package"] == name]
    return tuple(sorted(rows, key=lambda r: sortable(str(r["version"])), reverse=True))


def torch_cxx11_abi(kb: KnowledgeBase, torch_version: str, variant: str) -> bool | None:
    """_GLIBCXX_USE_CXX11_ABI of PyTorch's Linux wheel of this release and variant ("cu126");
    None when the knowledge base does not say."""
    line = minor_line(torch_version)
    if line is None:
        return None
    for row in kb.rows(SUBJECT, "torch_abi"):
        low, high = release_tuple(row["torch_min"]), release_tuple(row.get("torch_max"))
        if low is None or line < low or (high is not None and line > high):
            continue
        if "variants" in row and variant not in row["variants"]:
            continue
        return bool(row["cxx11_abi"])
    return None
