"""Joint compatibility of packages in one env: shared CUDA major, satisfiable NVIDIA pins, and the
search that picks the preferred combination."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet

from gpuenv.plan.candidate import Candidate
from gpuenv.plan.joint import pair_conflict, pick, satisfiable, unchecked
from gpuenv.versions import CudaVersion


def _c(
    framework: str, version: str, cuda: str | None, pins: tuple[str, ...] = (), known: bool = True
) -> Candidate:
    return Candidate(
        framework=framework,
        name=framework,
        version=version,
        build=f"cu{cuda}" if cuda else "cpu",
        cuda=CudaVersion.parse(cuda) if cuda else None,
        pins=pins,
        pins_known=known,
    )


@pytest.mark.parametrize(
    ("specs", "expected"),
    [
        (("==9.1.0.70", ">=9.8,<10.0"), False),
        (("==9.10.2.21", ">=9.3.0.75,<10.0"), True),
        (("==2.27.5", ">=2.27.7,<3.0"), False),
        (("==13.0.*", ">=13.0.48"), True),
        ((">=2,<3", ">=3"), False),
        ((">=12.1.105", ">=12.5.82,<13.0"), True),
        (("==12.4.127", "==12.4.127"), True),
        (("<13", "<12"), True),
    ],
)
def test_pins_are_satisfiable_together_or_not(specs: tuple[str, ...], expected: bool) -> None:
    assert satisfiable([SpecifierSet(s) for s in specs]) is expected


@given(st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=4))
def test_exact_pins_agree_only_when_equal(minors: list[int]) -> None:
    """Rule: several == pins of one package are satisfiable exactly when they name one version."""
    specs = [SpecifierSet(f"==9.{m}.0") for m in minors]
    assert satisfiable(specs) is (len(set(minors)) == 1)


def test_one_env_holds_one_cuda_major() -> None:
    reason = pair_conflict(_c("torch", "2.13.0", "13.0"), _c("tensorflow", "2.21.0", "12.5"))
    assert reason is not None and "CUDA 13 while tensorflow" in reason


def test_an_unknown_pin_is_no_conflict_but_is_named_as_unchecked() -> None:
    torch = _c("torch", "2.14.1+cu126", "12.6", known=False)
    tf = _c("tensorflow", "2.21.0", "12.5", ("nvidia-cudnn-cu12>=9.3,<10",))
    assert pair_conflict(torch, tf) is None and pair_conflict(tf, torch) is None
    note = unchecked(torch, tf)
    assert (
        note is not None and "torch 2.14.1 cu12.6" in note and "not in the knowledge base" in note
    )
    cpu = _c("numpy-ish", "1.0", None)
    assert pair_conflict(torch, cpu) is None and unchecked(torch, cpu) is None


def test_curated_pins_stand_in_for_unknown_wheel_pins_in_both_directions() -> None:
    """The torch release row's cuDNN and a JAX range's cuDNN floor are checked when the wheels'
    own pins were not read: 9.24 meets >=9.8,<10; 9.1.0.70 does not."""
    jax = _c("jax", "0.12.0.1", "13.0", known=False)
    jax = replace(jax, kb_pins=("nvidia-cudnn-cu13>=9.8,<10",))
    new = replace(
        _c("torch", "2.14.1", "13.0", known=False), kb_pins=("nvidia-cudnn-cu13==9.24.0.43",)
    )
    old = replace(
        _c("torch", "2.9.0", "13.0", known=False), kb_pins=("nvidia-cudnn-cu13==9.1.0.70",)
    )
    assert pair_conflict(new, jax) is None and pair_conflict(jax, new) is None
    assert "nvidia-cudnn-cu13" in (pair_conflict(old, jax) or "")
    # a wheel's own pins win over the curated ones
    read = replace(old, pins=("nvidia-cudnn-cu13==9.20.0.48",), pins_known=True)
    assert pair_conflict(read, jax) is None


def test_conflicting_pins_are_named() -> None:
    torch = _c("torch", "2.5.1", "12.4", ("nvidia-cudnn-cu12 (==9.1.0.70)",))
    jax = _c("jax", "0.6.2", "12.1", ("nvidia-cudnn-cu12<10.0,>=9.8",))
    reason = pair_conflict(jax, torch)
    assert reason is not None and "nvidia-cudnn-cu12" in reason


def test_pick_takes_the_first_framework_newest_that_holds_with_the_others() -> None:
    torch = [_c("torch", "2.13.0", "13.0"), _c("torch", "2.10.0", "12.8")]
    tf = [_c("tensorflow", "2.21.0", "12.5")]
    chosen = pick(["torch", "tensorflow"], {"torch": torch, "tensorflow": tf})
    assert chosen is not None and chosen["torch"].version == "2.10.0"
    assert pick(["torch", "tensorflow"], {"torch": torch[:1], "tensorflow": tf}) is None
