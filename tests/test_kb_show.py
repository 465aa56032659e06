"""kb show: each topic on the packaged KB (where its data exists), filters, rendering, JSON, and a
synthetic curated torch table joined with the generated wheels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuenv.errors import GpuenvError
from gpuenv.kb.loader import KnowledgeBase, default_kb, load_kb
from gpuenv.kb.show import ShowTable, python_span, show, table_to_json
from gpuenv.render.kb_table import render_table


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return default_kb()


def needs(kb: KnowledgeBase, subject: str, table: str) -> None:
    if not kb.rows(subject, table):
        pytest.skip(f"{subject}.toml [[{table}]] is not in the packaged KB yet")


def column(table: ShowTable, name: str) -> list[object]:
    index = table.columns.index(name)
    return [row[index] for row in table.rows]


def test_torch_lines_with_the_index_wheels(kb: KnowledgeBase) -> None:
    needs(kb, "wheels", "release")
    table = show(kb, "torch", {}, None)
    assert table.rows and "index cuda" in table.columns
    text = render_table(table)
    assert "2.1.0, 2.1.1, 2.1.2" in text and "Sources:" in text
    picked = show(kb, "torch", {"cuda": "12.1"}, None)
    assert picked.rows and len(picked.rows) < len(table.rows)
    assert all("12.1" in str(row) or "cu121" in str(row) for row in picked.rows)
    assert show(kb, "torch", {"cuda": "9.0"}, None).rows == ()
    newer = show(kb, "torch", {"python": "3.13"}, None)
    lines = [str(row[0]) for row in newer.rows]
    assert "2.5" in lines and not {"2.0", "2.1", "2.4"} & set(lines)


def test_driver_topic_says_what_a_driver_runs(kb: KnowledgeBase) -> None:
    needs(kb, "cuda_driver", "toolkit_driver")
    table = show(kb, "driver", {}, "535.183.01")
    assert "branch 535" in table.title and "reports CUDA 12.2" in table.title
    how = dict(zip(column(table, "cuda"), column(table, "this driver")))
    assert how["12.2"] == "native" and how["11.8"] == "native"
    assert how["12.4"] == "minor-version-compat"
    assert how["13.0"] == "too-old"
    assert table.citations
    windows = show(kb, "driver", {"cuda": "12.4"}, "551.78")
    assert "on windows" in windows.title and column(windows, "cuda") == ["12.4"]


def test_driver_615_names_r615_and_cuda_13_4(kb: KnowledgeBase) -> None:
    table = show(kb, "driver", {}, "615.71.09")
    assert "on linux: branch 615, reports CUDA 13.4" in table.title
    how = dict(zip(column(table, "cuda"), column(table, "this driver")))
    assert how["13.4"] == "native" and how["13.3"] == "native"
    assert column(table, "bundled driver")[column(table, "cuda").index("13.4")] is None
    assert any("nvidia-smi" in line for line in render_table(table).splitlines())


def test_windows_numbers_are_read_as_windows_drivers(kb: KnowledgeBase) -> None:
    table = show(kb, "driver", {}, "566.36")
    assert "on windows: branch 565, reports CUDA 12.7" in table.title
    how = dict(zip(column(table, "cuda"), column(table, "this driver")))
    assert how["12.6"] == "native" and how["12.8"] == "minor-version-compat"
    assert how["13.0"] == "too-old"
    assert "reports CUDA 13.1" in show(kb, "driver", {}, "591.74").title


def test_driver_topic_needs_a_version(kb: KnowledgeBase) -> None:
    with pytest.raises(GpuenvError) as caught:
        show(kb, "driver", {}, "latest")
    assert caught.value.code == "kb-bad-query"


def test_gpu_topic_finds_a_model_and_a_family(kb: KnowledgeBase) -> None:
    needs(kb, "gpus", "gpu")
    one = show(kb, "gpu", {}, "RTX 3090")
    assert column(one, "cc") == ["8.6"]
    family = show(kb, "gpu", {}, "A100")
    assert len(family.rows) > 1 and set(column(family, "cc")) == {"8.0"}
    assert show(kb, "gpu", {}, "no such card 9999").rows == ()
    assert len(show(kb, "gpu", {}, None).rows) == len(kb.rows("gpus", "gpu"))


def test_cuda_topic_filters_by_major_or_minor(kb: KnowledgeBase) -> None:
    needs(kb, "cuda_driver", "toolkit_driver")
    twelve = show(kb, "cuda", {"cuda": "12"}, None)
    assert twelve.rows and all(str(c).startswith("12.") for c in column(twelve, "cuda"))
    minor = show(kb, "cuda", {}, "12.4")
    assert minor.rows and all(str(c).startswith("12.4") for c in column(minor, "cuda"))


@pytest.mark.parametrize(
    ("topic", "subject", "table"),
    [
        ("jetson", "jetson", "jetpack"),
        ("archs", "archs", "architecture"),
        ("cuda_libs.cudnn", "cuda_libs", "cudnn"),
        ("cuda_driver/driver_branch", "cuda_driver", "driver_branch"),
    ],
)
def test_generic_topics(kb: KnowledgeBase, topic: str, subject: str, table: str) -> None:
    needs(kb, subject, table)
    shown = show(kb, topic, {}, None)
    assert len(shown.rows) == len(kb.rows(subject, table))
    assert "source" not in shown.columns and "verified" not in shown.columns
    assert shown.citations


def test_generic_filters_and_text(kb: KnowledgeBase) -> None:
    needs(kb, "cuda_libs", "cudnn")
    shown = show(kb, "cuda_libs.cudnn", {"cuda": "13"}, None)
    assert shown.rows and set(column(shown, "cuda_major")) == {13}
    ignored = show(kb, "archs", {"python": "3.11"}, None)
    assert "ignored: --python" in ignored.title
    jetpack = show(kb, "jetson", {}, "36.4")
    assert jetpack.rows and all("36.4" in str(row) for row in jetpack.rows)


@pytest.mark.parametrize(
    ("topic", "packages"),
    [
        ("tensorflow", {"tensorflow"}),
        ("jax", {"jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin"}),
        ("cupy", {"cupy-cuda12x", "cupy-cuda13x"}),
    ],
)
def test_framework_topics_show_their_table_else_their_wheels(
    kb: KnowledgeBase, topic: str, packages: set[str]
) -> None:
    shown = show(kb, topic, {}, None)
    if topic in kb.files:  # a curated table of the framework wins
        first = next(iter(kb.files[topic].tables))
        assert len(shown.rows) == len(kb.rows(topic, first)) and shown.citations
        assert f"kb show wheels --package {sorted(packages)[0]}" in shown.title
    else:
        needs(kb, "wheels", "release")
        assert shown.rows and set(column(shown, "package")) <= packages


def test_wheels_topic_filters(kb: KnowledgeBase) -> None:
    needs(kb, "wheels", "release")
    vision = show(kb, "wheels", {"package": "torchvision"}, None)
    assert set(column(vision, "package")) == {"torchvision"}
    assert "==2.1.2" in column(vision, "requires_torch")
    cuda13 = show(kb, "wheels", {"package": "torch", "cuda": "13.0"}, None)
    assert cuda13.rows and set(column(cuda13, "cuda")) == {"13.0"}
    py313 = show(kb, "wheels", {"package": "torch", "python": "3.13"}, None)
    assert "2.4.1" not in column(py313, "version") and "2.5.1" in column(py313, "version")


def test_unknown_topic_lists_the_topics(kb: KnowledgeBase) -> None:
    with pytest.raises(GpuenvError) as caught:
        show(kb, "pytorch-lightning", {}, None)
    assert caught.value.code == "kb-unknown-topic"
    (hint,) = caught.value.hints
    assert "torch" in hint and "driver" in hint and "wheels" in hint


def test_render_and_json() -> None:
    table = ShowTable(
        "a title",
        ("name", "ccs", "ok", "missing"),
        (("Ampere", ["8.0", "8.6"], True, None), ("X" * 80, [], False, 1.5)),
        ("a source",),
    )
    lines = render_table(table).splitlines()
    assert lines[0] == "a title"
    assert lines[2].split() == ["name", "ccs", "ok", "missing"]
    assert "8.0, 8.6" in lines[4] and "yes" in lines[4] and lines[4].endswith("-")
    assert "..." in lines[5] and len(lines[5].split()[0]) == 60
    assert lines[2].index("ccs") == lines[4].index("8.0")
    assert lines[-1] == "  a source"
    data = json.loads(json.dumps(table_to_json(table)))
    assert data["rows"][0] == {"name": "Ampere", "ccs": ["8.0", "8.6"], "ok": True, "missing": None}
    assert "(no rows)" in render_table(ShowTable("t", ("a",), ()))


@pytest.mark.parametrize(
    ("tags", "text"),
    [
        (["cp39", "cp310", "cp311", "cp313t"], "3.9-3.11, 3.13t"),
        (["py3"], "py3"),
        (["cp39-abi3"], "cp39-abi3"),
        ([], "-"),
    ],
)
def test_python_span(tags: list[str], text: str) -> None:
    assert python_span(tags) == text


def test_curated_torch_lines_are_joined_and_filtered(tmp_path: Path) -> None:
    source = '\n[sources.s]\ntitle = "T"\nurl = "u"\nretrieved = "2026-11-21"\n'
    prov = 'source = "s"\nlocator = "l"\nverified = "2026-11-21"\nstatus = "official"\n'
    torch = 'schema_version = 1\nsubject = "torch"\n' + source
    for line, variants in (("2.1", '["cu118", "cu121"]'), ("2.5", '["cu118", "cu121", "cu124"]')):
        torch += f'\n[[release]]\ntorch = "{line}"\ncuda_variants = {variants}\n{prov}'
    (tmp_path / "torch.toml").write_text(torch, encoding="utf-8")
    wheels = 'schema_version = 1\nsubject = "wheels"\n' + source
    for version, cuda in (("2.1.2", "12.1"), ("2.5.0", "12.4"), ("2.5.1", "12.4")):
        wheels += (
            f'\n[[release]]\npackage = "torch"\nversion = "{version}"\ncuda = "{cuda}"\n'
            f'python_tags = ["cp311"]\nplatforms = ["linux-x86_64"]\n{prov}'
        )
    (tmp_path / "wheels.toml").write_text(wheels, encoding="utf-8")
    kb = load_kb(tmp_path, strict=False)
    table = show(kb, "torch", {}, None)
    assert table.columns[:2] == ("torch", "cuda_variants")
    assert column(table, "index releases") == [["2.1.2"], ["2.5.0", "2.5.1"]]
    assert column(table, "index cuda") == [["12.1"], ["12.4"]]
    assert column(show(kb, "torch", {"cuda": "12.4"}, None), "torch") == ["2.5"]
    assert column(show(kb, "torch", {"cuda": "11.8"}, None), "torch") == ["2.1", "2.5"]
    assert column(show(kb, "torch", {}, "2.5.1"), "torch") == ["2.5"]


def test_the_rule_under_the_header_never_runs_past_a_narrow_terminal(kb: KnowledgeBase) -> None:
    from gpuenv.render.terminal import Terminal

    text = render_table(show(kb, "gpu", {}, None), Terminal(width=40))
    rule = next(row for row in text.splitlines() if row.startswith("---"))
    assert len(rule) <= 40
