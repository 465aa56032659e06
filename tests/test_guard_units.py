"""gpuenv guard's pure parts: the lock file, comparison, pin edits, previews, commands, restore."""

from __future__ import annotations

import configparser
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuenv.errors import GpuenvError
from gpuenv.facts import (
    BinaryArchFacts,
    CondaPackageFacts,
    DistributionFacts,
    FrameworkBuild,
    HostFacts,
    Observation,
    PythonEnvFacts,
    Snapshot,
)
from gpuenv.guard import pin
from gpuenv.guard.build import lock_from_snapshot
from gpuenv.guard.commands import (
    allow_command,
    install_argv,
    other_target,
    parse_command,
    preview_argv,
    safe_commands,
)
from gpuenv.guard.compare import compare, compare_machines, refused_changes
from gpuenv.guard.lockfile import lock_text, parse_lock
from gpuenv.guard.model import Lock, LockedConda, LockedGpu, LockedPackage, LockEnv, LockMachine
from gpuenv.guard.preview import (
    Preview,
    parse_conda_dry_run,
    parse_pip_report,
    parse_uv_dry_run,
    projected,
)
from gpuenv.guard.restore import restore_plan
from gpuenv.kb import default_kb

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def snapshot() -> Snapshot:
    dists = (
        DistributionFacts("torch", "2.1.0+cu121", "pip", ("nvidia-cudnn-cu12==8.9.2.26",)),
        DistributionFacts("nvidia-cudnn-cu12", "8.9.2.26", "pip"),
        DistributionFacts("torch-scatter", "2.1.2", "pip", ("torch==2.1.0",)),
        DistributionFacts("ftfy", "6.1.1", "pip", ("wcwidth",)),
        DistributionFacts("mylib", "0.1", "pip", editable=True, direct_url="file:///src/mylib"),
        DistributionFacts("wheelpkg", "1.0", "pip", direct_url="file:///w/wheelpkg-1.0.whl"),
    )
    torch = FrameworkBuild(
        "torch",
        "2.1.0+cu121",
        "12.1",
        "8.9.2",
        variant="cu121",
        distribution="torch",
        is_gpu_build=True,
    )
    return Snapshot(
        host=HostFacts(os=Observation("linux", "t"), arch=Observation("x86_64", "t")),
        python_env=PythonEnvFacts(
            interpreter="/env/bin/python",
            python_version="3.11.7",
            prefix="/env",
            env_kind="venv",
            manager="pip",
            sys_platform="linux",
            platform_machine="x86_64",
            distributions=dists,
            frameworks=(torch,),
            conda_packages=(
                CondaPackageFacts("cudnn", "8.9.7.29", "h092f7fd_3", "conda-forge", "linux-64"),
                CondaPackageFacts("zlib", "1.3", "h0_0", "conda-forge", "linux-64"),
            ),
        ),
        binaries=(BinaryArchFacts("/env/x/libtorch_cuda.so", "torch", ("sm_80", "sm_90"), ()),),
    )


def lock() -> Lock:
    return lock_from_snapshot(snapshot(), default_kb(), created_at="2025-01-01T00:00:00+00:00")


# -- building and writing the lock ------------------------------------------------------------


def test_the_lock_marks_gpu_critical_packages_and_their_origins() -> None:
    built = lock()
    by = {p.name: p for p in built.packages}
    assert by["torch"].critical and by["torch"].why == "GPU framework"
    assert (by["torch"].variant, by["torch"].cuda, by["torch"].cudnn) == ("cu121", "12.1", "8.9.2")
    assert by["torch"].source == "pytorch-index"
    assert by["torch"].url is not None and by["torch"].url.endswith("/cu121")
    assert by["torch"].sass == ("sm_80", "sm_90")
    assert by["nvidia-cudnn-cu12"].why == "CUDA library wheel"
    assert by["torch-scatter"].critical  # a framework name, and pinned to torch
    assert not by["ftfy"].critical and by["ftfy"].source == "index"
    assert (by["mylib"].source, by["mylib"].url) == ("editable", "file:///src/mylib")
    assert by["wheelpkg"].source == "url"
    conda = {p.name: p for p in built.conda}
    assert conda["cudnn"].critical and not conda["zlib"].critical


def test_lock_file_round_trips_and_is_readable_toml() -> None:
    built = replace(
        lock(),
        machine=LockMachine("linux", "x86_64", "550.54.14", "12.4", (LockedGpu("A100", "8.0"),)),
    )
    text = lock_text(built)
    assert text.startswith("# gpuenv lock")
    doc = tomllib.loads(text)
    assert doc["schema_version"] == 1 and doc["machine"]["gpus"][0]["name"] == "A100"
    assert parse_lock(text) == built


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("not = [toml", "not valid TOML"),
        ("[env]\npython = 'x'\n", "schema_version is missing"),
        ("schema_version = 99\n[env]\npython = 'x'\n", "newer than this gpuenv reads"),
        ("schema_version = 1\n", "[env] is missing"),
        ("schema_version = 1\n[env]\npython = 'x'\n[[packages]]\nversion = '1'\n", "has no name"),
        (
            "schema_version = 1\n[env]\npython = 'x'\n[[packages]]\nname = 'a'\nversion = 1\n",
            "version in package 'a' is int",
        ),
        (
            "schema_version = 1\n[env]\npython = 'x'\n[[packages]]\nname = 'a'\nversion = '1'\n"
            "source = 'ftp'\n",
            "source 'ftp'",
        ),
        ("schema_version = 1\npackages = 3\n[env]\npython = 'x'\n", "not an array of tables"),
    ],
)
def test_a_corrupt_lock_is_a_clear_error(text: str, expected: str) -> None:
    with pytest.raises(GpuenvError) as caught:
        parse_lock(text, "my.lock")
    assert caught.value.code == "bad-lock"
    assert expected in caught.value.message and "my.lock" in caught.value.message


# -- comparison -------------------------------------------------------------------------------


def _with(built: Lock, **versions: str | None) -> Lock:
    packages = []
    for p in built.packages:
        if p.name in versions:
            if versions[p.name] is None:
                continue
            p = LockedPackage(
                p.name,
                versions[p.name] or "",
                critical=p.critical,
                why=p.why,
                variant=(versions[p.name] or "").partition("+")[2] or None,
            )
        packages.append(p)
    return replace(built, packages=tuple(packages))


def test_guard_refuses_changes_to_what_is_there_not_new_gpu_packages() -> None:
    """Rule: a GPU-critical package that is there now and would move or go is refused; a new one
    (the first torch of an env, a CUDA wheel a new package needs) is shown, not refused."""
    before = replace(lock(), packages=tuple(p for p in lock().packages if p.name != "torch"))
    added = compare(before, lock())
    assert [(c.name, c.kind, c.critical) for c in added] == [("torch", "added", True)]
    assert refused_changes(added) == ()
    moved = compare(lock(), _with(lock(), torch="2.3.0+cpu"))
    assert refused_changes(moved) == moved


def test_changes_come_most_consequential_first() -> None:
    before = lock()
    after = _with(before, torch="2.3.0+cpu", ftfy="6.2.0", **{"nvidia-cudnn-cu12": "9.1.0.70"})
    after = _with(after, **{"torch-scatter": None})
    titles = [c.title for c in compare(before, after)]
    assert titles[0] == "torch-scatter 2.1.2 (removed): GPU framework removed"
    assert titles[1] == "torch 2.1.0+cu121 → 2.3.0+cpu: CUDA build lost (cpu build)"
    assert titles[2] == "nvidia-cudnn-cu12 8.9.2.26 → 9.1.0.70: cuDNN 8 → 9"
    assert titles[-1] == "ftfy 6.1.1 → 6.2.0: version changed"
    assert [c.critical for c in compare(before, after)] == [True, True, True, False]


def test_cuda_major_and_variant_changes() -> None:
    before = lock()
    cu13 = _with(before, torch="2.1.0+cu130")
    assert compare(before, cu13)[0].what == "built for CUDA 13 instead of CUDA 12"
    same = _with(before, torch="2.1.1+cu121")
    assert compare(before, same)[0].kind == "version"


def test_conda_build_changes_and_machine_changes() -> None:
    before = lock()
    conda = tuple(replace(p, build="cpu_h1_0") if p.name == "cudnn" else p for p in before.conda)
    change = compare(before, replace(before, conda=conda))[0]
    assert (change.kind, change.conda, change.critical) == ("variant", True, True)
    other = replace(
        before, machine=LockMachine("linux", "x86_64", "535.1", None, (LockedGpu("T4", "7.5"),))
    )
    here = replace(
        before, machine=LockMachine("linux", "x86_64", "550.2", None, (LockedGpu("A100", "8.0"),))
    )
    assert [m.what for m in compare_machines(other, here)] == [
        "driver 535.1 → 550.2",
        "GPUs T4 → A100",
    ]


@given(
    st.lists(st.sampled_from(["torch", "ftfy", "nvidia-cudnn-cu12", "torch-scatter"]), unique=True)
)
def test_a_lock_compared_with_itself_has_no_change_and_removal_is_symmetric(
    names: list[str],
) -> None:
    """Rule: comparing a lock with itself finds nothing; removing packages and adding them back
    are the same set of names."""
    built = lock()
    assert compare(built, built) == ()
    smaller = _with(built, **dict.fromkeys(names))
    gone = {c.name for c in compare(built, smaller)}
    back = {c.name for c in compare(smaller, built)}
    assert gone == back == set(names)


# -- pin edits --------------------------------------------------------------------------------


def _pip_values(text: str) -> dict[str, dict[str, str]]:
    """pip reads its config with RawConfigParser; read it the same way."""
    parser = configparser.RawConfigParser()
    parser.read_string(text)
    return {s: dict(parser.items(s)) for s in parser.sections()}


@pytest.mark.parametrize(
    ("before", "section", "values"),
    [
        (None, "install", ["/env/c.txt"]),
        ("[global]\nindex-url = http://x/simple\n", "install", ["/env/c.txt"]),
        ("[install]\nuser = false\n", "install", ["/env/c.txt"]),
        (
            "[install]\nconstraint = /a.txt\n    /b.txt\nuser = no\n",
            "install",
            ["/a.txt", "/b.txt", "/env/c.txt"],
        ),
        ("[global]\nconstraint = /a.txt", "global", ["/a.txt", "/env/c.txt"]),
    ],
)
def test_pip_conf_gets_the_constraint_pip_install_reads(
    before: str | None, section: str, values: list[str]
) -> None:
    after = pin.pip_conf_with_constraint(before, "/env/c.txt")
    assert _pip_values(after)[section]["constraint"].split() == values
    for name, items in _pip_values(before or "").items():  # nothing else changed
        for key, value in items.items():
            if key != "constraint":
                assert _pip_values(after)[name][key] == value


def test_a_path_with_spaces_becomes_a_file_url() -> None:
    assert pin.constraint_reference("/my env/c.txt") == "file:///my%20env/c.txt"
    assert pin.constraint_reference("/env/c.txt") == "/env/c.txt"


def test_unpin_gives_back_the_exact_bytes_and_only_its_lines_after_later_edits() -> None:
    before = "[global]\r\ntimeout = 5\r\n"
    after = pin.pip_conf_with_constraint(before, "/env/c.txt")
    edit = pin.FileEdit("/env/pip.conf", before, after, "pip configuration")
    assert pin.undo(edit, after).content == before
    edited = after + "[list]\nformat = columns\n"
    step = pin.undo(edit, edited)
    assert step.content == before + "[list]\nformat = columns\n" and step.note
    created = pin.FileEdit("/env/c.txt", None, "x\n", "pip constraints")
    assert pin.undo(created, "x\n").content is None


def test_pin_record_round_trips_and_a_bad_one_is_an_error() -> None:
    edits = [pin.FileEdit("/a", None, "x", "w"), pin.FileEdit("/b", "1", "2", "w")]
    assert list(pin.parse_record(pin.record_text(edits), "r")) == edits
    with pytest.raises(GpuenvError, match="not a gpuenv pin record"):
        pin.parse_record("{}", "r")


def test_pyproject_gets_constraint_dependencies_in_tool_uv() -> None:
    before = '[project]\nname = "x"\n\n[tool.uv]\npackage = false\n\n[tool.uv.sources]\n'
    after = pin.pyproject_with_constraints(before, ["torch==2.13.0+cpu"], "pyproject.toml")
    data = tomllib.loads(after)
    assert data["tool"]["uv"]["constraint-dependencies"] == ["torch==2.13.0+cpu"]
    assert data["tool"]["uv"]["package"] is False
    plain = pin.pyproject_with_constraints('[project]\nname = "x"', ["a==1"], "p")
    assert tomllib.loads(plain)["tool"]["uv"]["constraint-dependencies"] == ["a==1"]
    with pytest.raises(GpuenvError, match="already sets constraint-dependencies"):
        pin.pyproject_with_constraints(after, ["a==1"], "p")
    uv = pin.uv_toml_with_constraints("[pip]\nindex-url = 'x'\n", ["a==1"], "uv.toml")
    assert tomllib.loads(uv)["constraint-dependencies"] == ["a==1"]


def test_conda_pinned_lines_are_exact_match_specs() -> None:
    rattler = pytest.importorskip("rattler")
    built = replace(
        lock(),
        conda=(
            LockedConda(
                "pytorch", "2.1.0", "py3.11_cuda12.1_cudnn8.9.2_0", "pytorch", critical=True
            ),
            LockedConda("cudnn", "8.9.7.29", "h092f7fd_3", "conda-forge", critical=True),
            LockedConda("zlib", "1.3", "h0_0"),
        ),
    )
    text = pin.conda_pinned_with_specs("numpy 1.26.*", built)
    lines = [x for x in text.splitlines() if x and not x.startswith("#")]
    assert lines[0] == "numpy 1.26.*"
    # rattler's strict mode refuses the dots of pytorch's real build strings; lenient parses them
    specs = [rattler.MatchSpec(x) for x in lines[1:]]
    assert str(rattler.MatchSpec(lines[2], strict=True).version) == "==8.9.7.29"
    assert [str(s.name.normalized) for s in specs] == ["pytorch", "cudnn"]

    def record(version: str, build: str) -> object:
        return rattler.PackageRecord(
            name="pytorch",
            version=version,
            build=rattler.BuildString(build),
            build_number=0,
            subdir="linux-64",
        )

    exact = record("2.1.0", "py3.11_cuda12.1_cudnn8.9.2_0")
    cpu = record("2.1.0", "py3.11_cpu_0")
    newer = record("2.1.1", "py3.11_cuda12.1_cudnn8.9.2_0")
    assert specs[0].matches(exact) and not specs[0].matches(cpu) and not specs[0].matches(newer)


# -- previews ---------------------------------------------------------------------------------


def test_pip_report_becomes_the_env_pip_would_leave() -> None:
    report = {
        "version": "1",
        "install": [
            {
                "metadata": {"name": "torch", "version": "2.3.0"},
                "download_info": {"url": "https://x/whl/cpu/torch-2.3.0%2Bcpu-cp311-linux.whl"},
            },
            {"metadata": {"name": "ftfy", "version": "6.2.0"}, "download_info": {"url": "h"}},
        ],
    }
    preview = parse_pip_report("noise\n" + json.dumps(report))
    after = projected(lock(), preview)
    torch = after.package("torch")
    assert torch is not None and torch.variant == "cpu" and torch.critical
    change = compare(lock(), after)[0]
    assert change.kind == "cuda-lost"
    with pytest.raises(GpuenvError, match="not JSON"):
        parse_pip_report("ERROR: no")


def test_uv_and_conda_dry_runs() -> None:
    uv = parse_uv_dry_run(
        "Resolved 3 packages in 5ms\nWould uninstall 1 package\nWould install 2 packages\n"
        " - torch==2.13.0+cpu\n + torch==2.12.0\n + needs-old-torch==1.0\n"
    )
    assert [p.name for p in uv.remove] == ["torch"] and len(uv.install) == 2
    assert parse_uv_dry_run("Checked 1 package in 3ms\nWould make no changes\n").install == ()
    conda = parse_conda_dry_run(
        json.dumps(
            {
                "actions": {
                    "LINK": [
                        {
                            "name": "pytorch",
                            "version": "2.3.0",
                            "build_string": "cpu_py311_0",
                            "channel": "conda-forge",
                        }
                    ],
                    "UNLINK": [
                        {
                            "name": "pytorch",
                            "version": "2.1.0",
                            "build_string": "py3.11_cuda12.1_cudnn8.9.2_0",
                            "channel": "pytorch",
                        }
                    ],
                },
                "success": True,
            }
        )
    )
    assert conda.install[0].build == "cpu_py311_0" and conda.remove[0].name == "pytorch"
    with pytest.raises(GpuenvError, match="cannot solve"):
        parse_conda_dry_run('{"exception_name": "UnsatisfiableError", "message": "no"}')


# -- commands ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "installer", "args"),
    [
        (["pip", "install", "ftfy"], "pip", ("ftfy",)),
        (["/env/bin/pip3.11", "install", "-U", "x"], "pip", ("-U", "x")),
        (["python", "-m", "pip", "install", "x"], "pip", ("x",)),
        (["uv", "pip", "install", "x"], "uv", ("x",)),
        (["mamba", "install", "-c", "conda-forge", "x"], "conda", ("-c", "conda-forge", "x")),
    ],
)
def test_install_commands_are_recognised(
    argv: list[str], installer: str, args: tuple[str, ...]
) -> None:
    command = parse_command(argv)
    assert (command.installer, command.args) == (installer, args)


@pytest.mark.parametrize("argv", [[], ["pip", "uninstall", "x"], ["npm", "install", "x"]])
def test_other_commands_are_refused(argv: list[str]) -> None:
    with pytest.raises(GpuenvError, match="cannot preview"):
        parse_command(argv)


def test_previews_and_installs_run_in_the_guarded_env() -> None:
    pip = parse_command(["pip", "install", "x"])
    assert preview_argv(pip, "/e/bin/python", "/e")[:7] == [
        "/e/bin/python",
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--quiet",
        "--report",
    ]
    assert install_argv(pip, "/e/bin/python", "/e") == [
        "/e/bin/python",
        "-m",
        "pip",
        "install",
        "x",
    ]
    conda = parse_command(["conda", "install", "-n", "other", "x"])
    assert "--prefix" not in install_argv(conda, "p", "/e")
    assert install_argv(parse_command(["conda", "install", "x"]), "p", "/e")[2:5] == [
        "--yes",
        "--prefix",
        "/e",
    ]


def test_safe_commands_hold_the_critical_packages_in_the_guarded_env() -> None:
    """The commands printed instead run in the env guard read (its python, uv's --python, conda's
    --prefix), not in whatever pip, uv or conda comes first on PATH."""
    before = lock()
    changes = compare(before, _with(before, torch="2.3.0+cpu", ftfy="6.2.0"))
    command = parse_command(["pip", "install", "needs-new-torch"])
    assert safe_commands(command, changes, before.env, before, None) == [
        "/env/bin/python -m pip install needs-new-torch torch==2.1.0+cu121",
        "/env/bin/python -m pip install --no-deps needs-new-torch",
    ]
    assert safe_commands(command, changes, before.env, before, "/e/c.txt")[0] == (
        "/env/bin/python -m pip install needs-new-torch --constraint /e/c.txt"
    )
    uv = parse_command(["uv", "pip", "install", "x"])
    assert safe_commands(uv, changes, before.env, before, None)[1] == (
        "uv pip install --python /env/bin/python --no-deps x"
    )
    conda = parse_command(["mamba", "install", "x"])
    assert safe_commands(conda, changes, before.env, before, None)[0] == (
        "mamba install --prefix /env x torch==2.1.0+cu121"
    )
    assert allow_command(command, "/my env/bin/python", "a.lock") == (
        "gpuenv guard --allow --python '/my env/bin/python' --lock a.lock -- "
        "pip install needs-new-torch"
    )


def test_a_version_without_a_local_label_is_held_exactly() -> None:
    """Rule: the requirement pin, guard and restore write for a version admits that version and
    no other build of it: `==2.1.0` would admit `2.1.0+cpu` (PEP 440 ignores a candidate's
    local label when the specifier has none), and pip prefers it."""
    from packaging.requirements import Requirement

    for version, other in (("2.1.0", "2.1.0+cpu"), ("2.1.0+cu121", "2.1.0+cpu")):
        spec = Requirement(pin.pip_requirement("torch", version)).specifier
        assert spec.contains(version) and not spec.contains(other)
    assert pin.pip_requirement("torch", "2.1.0") == "torch===2.1.0"
    assert pin.pip_requirement("x", "1.0-1") == "x===1.0.post1"  # as pip compares it
    assert pin.pip_requirement("torch", "2.1.0+cu121") == "torch==2.1.0+cu121"


# -- restore ----------------------------------------------------------------------------------


def test_restore_plan_installs_locked_variants_from_their_origin_and_removes_extras() -> None:
    locked = lock()
    now = _with(locked, torch="2.3.0+cpu", ftfy=None)
    now = replace(
        now, packages=(*now.packages, LockedPackage("extra", "1.0"), LockedPackage("pip", "24.0"))
    )
    plan = restore_plan(locked, now, "/env/bin/python")
    assert plan.commands[0] == ("/env/bin/python", "-m", "pip", "uninstall", "--yes", "extra")
    install = plan.commands[1]
    assert install[:5] == ("/env/bin/python", "-m", "pip", "install", "--no-deps")
    assert "torch==2.1.0+cu121" in install and "ftfy===6.1.1" in install
    assert install[install.index("--extra-index-url") + 1].endswith("/whl/cu121")
    assert restore_plan(locked, locked, "/env/bin/python").nothing_to_do


def test_restore_keeps_pip_and_finds_nothing_to_do_for_it() -> None:
    """A lock of an env without pip (made by uv) restored into one with pip: pip stays (restore
    runs with it), and it is not a difference that could never be put right."""
    locked = replace(lock(), packages=tuple(p for p in lock().packages if p.name != "pip"))
    now = replace(locked, packages=(*locked.packages, LockedPackage("pip", "24.0")))
    plan = restore_plan(locked, now, "/env/bin/python")
    assert plan.nothing_to_do and plan.commands == ()
    assert plan.notes == ("pip 24.0 is kept: restore runs with it (the lock has none)",)


def test_a_conda_restore_changes_the_env_restored_not_the_one_the_lock_was_made_of() -> None:
    locked = lock()
    other = replace(locked, env=replace(locked.env, python="/new/bin/python", prefix="/new"))
    other = replace(other, conda=())
    [install] = restore_plan(locked, other, "/new/bin/python").commands[:1]
    assert install[install.index("--prefix") + 1] == "/new"


def test_restore_plan_for_conda_uses_exact_specs() -> None:
    locked = lock()
    now = replace(
        locked, conda=(LockedConda("cudnn", "9.1.0", "h1_0", "conda-forge", critical=True),)
    )
    plan = restore_plan(locked, now, "/env/bin/python")
    assert plan.commands == (
        (
            "conda",
            "install",
            "--yes",
            "--no-deps",
            "--prefix",
            "/env",
            "conda-forge::cudnn==8.9.7.29=h092f7fd_3",
            "conda-forge::zlib==1.3=h0_0",
        ),
    )


def test_unused_preview_type_is_constructible() -> None:
    assert Preview("pip").install == ()
    assert LockEnv("p").prefix is None


def test_the_lock_records_the_driver_and_gpus_it_was_verified_on() -> None:
    from gpuenv.facts import DriverFacts, GpuFacts

    probed = replace(
        snapshot(),
        driver=DriverFacts(
            versions=(Observation("550.54.14", "nvml"),), max_cuda=(Observation("12.4", "nvml"),)
        ),
        gpus=(GpuFacts(0, "NVIDIA A100-SXM4-80GB", "nvml", compute_capability="8.0"),),
    )
    machine = lock_from_snapshot(probed, default_kb()).machine
    assert (machine.driver, machine.driver_max_cuda) == ("550.54.14", "12.4")
    assert machine.gpus == (LockedGpu("NVIDIA A100-SXM4-80GB", "8.0"),)
    text = lock_text(lock_from_snapshot(probed, default_kb()))
    assert 'driver = "550.54.14"' in text and 'compute_capability = "8.0"' in text


# -- terminal text ----------------------------------------------------------------------------


@pytest.mark.parametrize("width", [60, 80, 120])
def test_guard_refusal_and_restore_plan_fit_the_terminal(width: int) -> None:
    from gpuenv.guard.outcomes import GuardOutcome
    from gpuenv.render.guard import guard_doc, restore_doc
    from gpuenv.render.terminal import Terminal, to_text
    from tests.test_terminal_layout import _check

    before = lock()
    planned = compare(before, _with(before, torch="2.3.0+cpu", ftfy="6.2.0"))
    command = parse_command(["pip", "install", "--upgrade", "some-long-package-name", "ftfy"])
    safe = tuple(safe_commands(command, planned, before.env, before, None))
    outcome = GuardOutcome(command, before, before, refused=True, planned=planned, safe=safe)
    text = to_text(guard_doc(outcome, verbose=False), Terminal(width=width, colour=False))
    assert "torch 2.1.0+cu121 → 2.3.0+cpu: CUDA build lost" in text
    _check(text, width, [*safe, allow_command(command, "/env/bin/python", None)])
    plan = restore_plan(before, _with(before, torch="2.3.0+cpu"), "/env/bin/python")
    text = to_text(restore_doc(plan, "gpuenv.lock", dry_run=True), Terminal(width=width))
    _check(text, width, [" ".join(argv) for argv in plan.commands])


@pytest.mark.parametrize("where", ["file", "-"])
def test_lock_succeeds_where_the_history_cannot_be_kept(
    where: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A read-only home (a container, CI): the lock is written, the history is only a note."""
    from gpuenv.cli import main
    from gpuenv.guard import envs

    monkeypatch.setattr(
        envs, "current", lambda _python, _timeout=10.0: envs.EnvNow(snapshot(), lock())
    )
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("GPUENV_CACHE_DIR", str(blocker / "cache"))
    target = tmp_path / "gpuenv.lock" if where == "file" else "-"
    assert main(["lock", "-o", str(target)]) == 0
    out, err = capsys.readouterr()
    written = target.read_text() if isinstance(target, Path) else out
    assert parse_lock(written, "lock").packages
    assert "not kept in the env's history" in err


def test_an_installer_failure_is_told_by_its_error_line() -> None:
    from gpuenv.edges.process import CommandResult
    from gpuenv.guard.actions import installer_problem

    pip = CommandResult(
        ("/env/bin/python", "-m", "pip", "install", "x==9"),
        1,
        "Looking in links: /opt/wheels\nERROR: Could not find a version that satisfies the "
        "requirement x==9 (from versions: none)\nERROR: No matching distribution found\n",
    )
    assert installer_problem(pip) == (
        "pip exited with 1: ERROR: Could not find a version that satisfies the requirement "
        "x==9 (from versions: none)"
    )
    uv = CommandResult(
        ("/bin/uv", "pip", "install"), 2, "Using Python 3.11 environment at: e\nerror: No solution"
    )
    assert installer_problem(uv) == "uv exited with 2: error: No solution"
    quiet = CommandResult(("conda", "install"), 1, "Solving environment\nfailed\n")
    assert installer_problem(quiet) == "conda exited with 1: failed"
    assert installer_problem(CommandResult(("pip",), 0)) is None


def test_guard_warns_when_its_lock_was_verified_on_another_machine() -> None:
    from gpuenv.guard.outcomes import GuardOutcome
    from gpuenv.render.guard import guard_dict, guard_doc
    from gpuenv.render.terminal import Terminal, to_text

    here = lock()
    foreign = replace(here, machine=LockMachine("linux", "x86_64", "535.183.01"))
    command = parse_command(["pip", "install", "ftfy"])
    outcome = GuardOutcome(command, here, foreign, Preview("pip"), lock_path="old.lock")
    text = to_text(guard_doc(outcome, verbose=False), Terminal(width=100, colour=False))
    assert "old.lock was verified on another machine:" in text
    assert "driver 535.183.01 → none found" in text
    assert guard_dict(outcome, 0)["machine_changes"] == ["driver 535.183.01 → none found"]
    same = GuardOutcome(command, here, here, Preview("pip"))
    assert guard_dict(same, 0)["machine_changes"] == []


@pytest.mark.parametrize(
    ("argv", "found"),
    [
        (["pip", "install", "--target", "/t", "x"], ("--target", "/t")),
        (["pip", "install", "--user", "x"], ("--user", None)),
        (["uv", "pip", "install", "--python=/other/python", "x"], ("--python", "/other/python")),
        (["uv", "pip", "install", "--system", "x"], ("--system", None)),
        (["conda", "install", "-n", "other", "x"], ("-n", "other")),
        (["mamba", "install", "--prefix", "/e", "x"], ("--prefix", "/e")),
        (["pip", "install", "-U", "--no-deps", "x"], None),
    ],
)
def test_installs_that_name_another_target_are_found(
    argv: list[str], found: tuple[str, str | None] | None
) -> None:
    """guard previews and compares the env of --python: an install aimed elsewhere (another
    conda env, a --target folder, uv's --system) would be judged against the wrong env."""
    assert other_target(parse_command(argv)) == found


def test_pin_says_when_nothing_in_the_env_reads_it() -> None:
    """A uv-made env (no pip) outside a uv project: the pip.conf pin writes is read by nothing,
    and uv reads no settings from an env; pin must say so, not just succeed."""
    without_pip = replace(lock(), packages=tuple(p for p in lock().packages if p.name != "pip"))
    pip_files = [pin.FileEdit("/e/pip.conf", None, "x", "pip configuration")]
    [note] = pin.unheld(without_pip, pip_files)
    assert "nothing holds it to this pin" in note and "gpuenv guard -- uv pip install" in note
    with_pip = replace(without_pip, packages=(*without_pip.packages, LockedPackage("pip", "24")))
    assert pin.unheld(with_pip, pip_files) == ()
    uv_project = [*pip_files, pin.FileEdit("/p/pyproject.toml", "", "x", "uv constraints")]
    assert pin.unheld(without_pip, uv_project) == ()
