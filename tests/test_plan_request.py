"""What `gpuenv plan` is asked for: wants on the command line, requirements files, pyprojects."""

from __future__ import annotations

import pytest

from gpuenv.errors import GpuenvError
from gpuenv.plan.request import (
    merge,
    parse_pyproject,
    parse_requirements,
    parse_want,
    request_from_arguments,
)


def _no_include(name: str) -> tuple[str, str]:
    raise AssertionError(f"unexpected include of {name}")


def test_a_constraint_is_kept_and_the_framework_named() -> None:
    want = parse_want("torch>=2.4,<2.7")
    assert want is not None
    assert (want.framework, want.name) == ("torch", "torch")
    assert set(want.specifier.split(",")) == {">=2.4", "<2.7"}


@pytest.mark.parametrize(
    ("text", "framework"),
    [
        ("pytorch", "torch"),
        ("jax[cuda12]", "jax"),
        ("jaxlib", "jax"),
        ("cupy-cuda12x", "cupy"),
        ("onnxruntime-gpu==1.22.0", "onnxruntime"),
        ("TensorFlow", "tensorflow"),
        ("torch_vision", None),  # not a distribution gpuenv plans
    ],
)
def test_names_map_to_frameworks(text: str, framework: str | None) -> None:
    want = parse_want(text)
    assert (want.framework if want else None) == framework


def test_an_unknown_package_on_the_command_line_is_an_error_with_a_hint() -> None:
    with pytest.raises(GpuenvError) as caught:
        request_from_arguments(["troch"])
    assert caught.value.code == "unknown-package"
    assert any("-r" in hint for hint in caught.value.hints)


@pytest.mark.parametrize(
    "text", ["torch>=>2", "torch==", "; rm -rf /", "torch @", "\x00torch", "a" * 5000]
)
def test_unreadable_wants_are_errors_not_tracebacks(text: str) -> None:
    with pytest.raises(GpuenvError) as caught:
        request_from_arguments([text])
    assert caught.value.code in ("bad-requirement", "unknown-package")


def test_a_url_for_a_planned_package_is_refused() -> None:
    with pytest.raises(GpuenvError, match="URL"):
        parse_want("torch @ https://example.invalid/torch.whl")


def test_requirements_file_splits_planned_and_carried_lines_and_notes_options() -> None:
    text = "\n".join(
        [
            "# a comment",
            "--extra-index-url https://example.invalid/simple",
            "torch>=2.4  # inline comment",
            "numpy>=1.26",
            "requests \\",
            "  >=2",
            "./local_pkg",
            "-e ./editable",
            "jax ; sys_platform == 'linux'",
        ]
    )
    request = parse_requirements(text, "req.txt", _no_include)
    assert [w.framework for w in request.wants] == ["torch", "jax"]
    assert request.wants[1].marker is not None
    assert request.carried == ("numpy>=1.26", "requests>=2", "./local_pkg")
    assert any("--extra-index-url dropped" in note for note in request.notes)
    assert any("editable" in note for note in request.notes)
    assert request.wants[0].origin == "req.txt:3"


def test_nested_requirements_are_read_through_the_include_function() -> None:
    files = {"base.txt": "tensorflow\n"}
    request = parse_requirements(
        "-r base.txt\ntorch\n", "main.txt", lambda name: (name, files[name])
    )
    assert sorted(w.framework for w in request.wants) == ["tensorflow", "torch"]


def test_self_including_requirements_stop_with_an_error() -> None:
    with pytest.raises(GpuenvError, match="nested deeper"):
        parse_requirements("-r loop.txt\n", "loop.txt", lambda name: (name, "-r loop.txt\n"))


def test_a_bad_line_in_a_requirements_file_names_the_line() -> None:
    with pytest.raises(GpuenvError, match=r"req.txt:2"):
        parse_requirements("torch\nnot a requirement!!\n", "req.txt", _no_include)


def test_pyproject_dependencies_are_read() -> None:
    text = '[project]\nname = "x"\ndependencies = ["torch>=2.4", "numpy"]\n'
    request = parse_pyproject(text, "pyproject.toml")
    assert [w.framework for w in request.wants] == ["torch"]
    assert request.carried == ("numpy",)


@pytest.mark.parametrize(
    "text", ["[project\n", "[tool.x]\na = 1\n", "[project]\ndependencies = 3\n"]
)
def test_bad_pyprojects_are_clear_errors(text: str) -> None:
    with pytest.raises(GpuenvError) as caught:
        parse_pyproject(text, "pyproject.toml")
    assert caught.value.code == "bad-pyproject"


def test_a_framework_asked_for_twice_must_meet_both_constraints() -> None:
    first = request_from_arguments(["torch<2.7"])
    second = parse_requirements("torch>=2.4\ntensorflow\n", "r.txt", _no_include)
    merged = merge([first, second])
    assert [(w.framework, w.specifier) for w in merged.wants] == [
        ("torch", "<2.7,>=2.4"),
        ("tensorflow", ""),
    ]
    assert request_from_arguments(["jax", "jaxlib==0.6.2"]).wants[0].specifier == "==0.6.2"
    with pytest.raises(GpuenvError) as caught:
        merge([parse_requirements("numpy\n", "r.txt", _no_include)])
    assert caught.value.code == "nothing-to-plan"
