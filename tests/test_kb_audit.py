"""kb audit: seeded inconsistencies in a temporary KB are found and name both values; absent tables
are "not checked"; the packaged KB passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuenv.kb.audit import AuditReport, audit, loader_problems, render_audit
from gpuenv.kb.loader import load_kb

SOURCE = """
[sources.test]
title = "Seeded test data"
url = "https://example.invalid/"
retrieved = "2026-11-21"
"""
READ = '\nmetadata_read = ["linux-x86_64"]'
PROV = 'source = "test"\nlocator = "seeded"\nverified = "2026-11-21"\nstatus = "official"\n'


def kb_file(folder: Path, subject: str, tables: dict[str, list[str]]) -> None:
    text = f'schema_version = 1\nsubject = "{subject}"\n{SOURCE}'
    for table, rows in tables.items():
        text += "".join(f"\n[[{table}]]\n{row.strip()}\n{PROV}" for row in rows)
    (folder / f"{subject}.toml").write_text(text, encoding="utf-8")


def seeded(folder: Path, consistent: bool) -> AuditReport:
    driver_122 = "535.54.03" if consistent else "520.00.00"  # falls below 12.1's 530.30.02
    max_535 = "12.2" if consistent else "11.8"  # falls below branch 530's 12.1
    kb_file(
        folder,
        "cuda_driver",
        {
            "toolkit_driver": [
                'cuda = "12.0.0"\nlabel = "12.0 GA"\nlinux_min_driver = "525.60.13"\n'
                'windows_min_driver = "527.41"',
                'cuda = "12.1.0"\nlabel = "12.1 GA"\nlinux_min_driver = "530.30.02"',
                f'cuda = "12.2.0"\nlabel = "12.2 GA"\nlinux_min_driver = "{driver_122}"\n'
                'windows_min_driver = "536.25"',
            ],
            "driver_branch": [
                'branch = 525\nmax_cuda = "12.0"',
                f'branch = 535\nmax_cuda = "{max_535}"',
                'branch = 530\nmax_cuda = "12.1"',
            ],
        },
    )
    kb_file(
        folder,
        "archs",
        {"architecture": ['name = "Ampere"\nccs = ["8.0", "8.6"]\nfirst_cuda = "11.0"']},
    )
    gpu = 'segment = "datacenter"\narchitecture = "{arch}"\ncc = "{cc}"\nname = "{name}"'
    gpus = [gpu.format(arch="Ampere", cc="8.6", name="Test A")]
    if not consistent:
        gpus += [
            gpu.format(arch="Ampere", cc="8.7", name="Test Orin"),  # 8.7 is in no architecture
            gpu.format(arch="Hopper", cc="8.0", name="Test Mislabelled"),
        ]
    kb_file(folder, "gpus", {"gpu": gpus})
    wheel = (
        'package = "{p}"\nversion = "{v}"\npython_tags = ["cp311"]\nplatforms = ["linux-x86_64"]'
    )
    kb_file(
        folder,
        "wheels",
        {
            "release": [
                wheel.format(p="torch", v="2.1.2") + '\ncuda = "12.1"\ncudnn = "8.9.2.26"' + READ,
                wheel.format(p="torch", v="2.5.1") + '\ncuda = "12.4"\ncudnn = "9.1.0.70"' + READ,
                wheel.format(p="torch", v="2.5.2"),  # no metadata read: its CUDA is unknown
                wheel.format(p="torch", v="2.11.0")
                + '\ncuda = "13.0"\ncuda_aarch64 = "13.0"\n'
                + 'metadata_read = ["linux-x86_64", "linux-aarch64"]',
                wheel.format(p="torchvision", v="0.16.2") + '\nrequires_torch = "==2.1.2"',
                wheel.format(p="torchvision", v="0.20.1") + '\nrequires_torch = "==2.5.1"',
                wheel.format(p="torchvision", v="0.29.2") + '\nrequires_torch = ">=2.14.0"',
            ]
        },
    )
    vision, variant = ("0.20", "cu124") if consistent else ("0.19", "cu121")
    kb_file(
        folder,
        "torch",
        {
            "release": [
                'torch = "2.1"\ntorchvision = "0.16"\npypi_linux_x86_64 = "cu121"\n'
                'cudnn = "8.9.2.26"',
                f'torch = "2.5"\ntorchvision = "{vision}"\npypi_linux_x86_64 = "{variant}"\n'
                'cudnn = "9.1"',
                'torch = "2.11"\ntorchvision = "0.26"\npypi_linux_x86_64 = "cu130"\n'
                + ('pypi_linux_aarch64 = "cu130"' if consistent else 'pypi_linux_aarch64 = "cpu"'),
            ]
        },
    )
    return audit(load_kb(folder, strict=False))


def messages(report: AuditReport, check_word: str) -> list[str]:
    return [p.message for p in report.problems if check_word in p.check]


def test_seeded_inconsistencies_are_found(tmp_path: Path) -> None:
    report = seeded(tmp_path, consistent=False)
    assert not report.ok
    (falls,) = messages(report, "driver minimum")
    assert "520.00.00" in falls and "530.30.02" in falls and "12.2.0" in falls
    assert [p.row for p in report.problems if "driver minimum" in p.check] == ["cuda=12.2.0"]
    (branch,) = messages(report, "branch")
    assert "535" in branch and "11.8" in branch and "12.1" in branch
    (orphan,) = messages(report, "cc in an architecture")
    assert "8.7" in orphan
    named = [p for p in report.problems if p.check == "names agree"]
    assert len(named) == 1 and named[0].severity == "warning" and "'Hopper'" in named[0].message
    (pairing,) = messages(report, "torchvision pairing")
    assert "0.19" in pairing and "0.20.1" in pairing and "==2.5.1" in pairing
    cuda, arm = messages(report, "torch CUDA")
    assert "cu121" in cuda and "12.4" in cuda and "2.5.1" in cuda and "2.5.2" not in cuda
    assert "pypi_linux_aarch64 'cpu'" in arm and "13.0" in arm
    assert messages(report, "cuDNN") == []  # "9.1" names 9.1.0.70 at its own precision


def test_a_consistent_kb_passes(tmp_path: Path) -> None:
    report = seeded(tmp_path, consistent=True)
    cross = [p for p in report.problems if p.check != "loader"]
    assert cross == []
    assert len(report.checks_run) == 6
    assert len(report.checks_skipped) == 1
    assert "patterns.toml [[pattern]] is absent" in report.checks_skipped[0]


def test_a_cudnn_disagreement_names_both_values(tmp_path: Path) -> None:
    seeded(tmp_path, consistent=True)
    path = tmp_path / "torch.toml"
    path.write_text(path.read_text().replace('cudnn = "9.1"', 'cudnn = "9.5.1.17"'))
    report = audit(load_kb(tmp_path, strict=False))
    (cudnn,) = messages(report, "cuDNN")
    assert "9.5.1.17" in cudnn and "9.1.0.70" in cudnn


def test_absent_tables_are_not_checked(tmp_path: Path) -> None:
    kb_file(
        tmp_path, "archs", {"architecture": ['name = "Ampere"\nccs = ["8.0"]\nfirst_cuda = "11.0"']}
    )
    report = audit(load_kb(tmp_path, strict=False))
    assert report.ok and report.problems == ()
    assert report.checks_run == ("schema and provenance (loader)",)
    assert len(report.checks_skipped) == 6
    assert any("gpus.toml" in why for why in report.checks_skipped)


def test_loader_problems_become_audit_problems(tmp_path: Path) -> None:
    kb_file(
        tmp_path, "archs", {"architecture": ['name = "Ampere"\nccs = ["8.0"]\nfirst_cuda = "11.0"']}
    )
    path = tmp_path / "archs.toml"
    path.write_text(path.read_text().replace('status = "official"\n', ""), encoding="utf-8")
    report = audit(load_kb(tmp_path, strict=False))
    assert not report.ok
    (problem,) = report.problems
    assert (problem.file, problem.table, problem.row) == ("archs.toml", "architecture", "#1")
    assert "status" in problem.message
    (whole_file,) = loader_problems(["gpus.toml: no [sources] table"])
    assert (whole_file.file, whole_file.table, whole_file.row) == ("gpus.toml", "", "")


def test_report_renders_and_serialises(tmp_path: Path) -> None:
    report = seeded(tmp_path, consistent=False)
    text = render_audit(report)
    assert text.startswith("kb audit: FAILED")
    assert "error: cuda_driver.toml [toolkit_driver] cuda=12.2.0:" in text
    data = json.loads(json.dumps(report.to_dict()))
    assert data["ok"] is False and len(data["problems"]) == len(report.problems)
    assert set(data["problems"][0]) == {"file", "table", "row", "message", "check", "severity"}


@pytest.mark.parametrize("check", ["driver minimum", "max CUDA", "every GPU cc"])
def test_the_packaged_kb_runs_the_cross_checks(check: str) -> None:
    report = audit(load_kb(strict=False))
    assert any(check in name for name in report.checks_run)


def test_the_packaged_kb_passes_the_audit() -> None:
    report = audit(load_kb(strict=False))
    assert report.ok, render_audit(report)
