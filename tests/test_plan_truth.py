"""The hard cases of the correctness review, each on a declared machine with the packaged
knowledge base: what a user asking `gpuenv plan` on that machine gets must run there."""

from __future__ import annotations

import pytest

from gpuenv.kb import default_kb
from gpuenv.kb.query.binaries import build_code
from gpuenv.kb.query.cuda import coverage
from gpuenv.plan import wheels
from gpuenv.plan.model import NO_FIT
from gpuenv.versions import ComputeCapability, CudaVersion, sortable
from tests.test_plan_rules import plan

H100 = ComputeCapability(9, 0)
CUDA_12_2 = CudaVersion(12, 2)
TF_RELEASES = [str(r["version"]) for r in wheels.releases(default_kb(), "tensorflow")]


@pytest.mark.parametrize("version", TF_RELEASES)
def test_every_tensorflow_release_has_known_gpu_code(version: str) -> None:
    """From its wheel (binaries.toml) or its build file (wheels.toml build_archs): a release
    whose code is unknown could not be checked against a GPU reached only through PTX."""
    code = build_code(default_kb(), "tensorflow", version)
    assert code is not None and code.cuda is not None and code.sass


def test_tensorflow_on_h100_with_driver_535_and_python_312_fits_nowhere() -> None:
    """Every release with a cp312 wheel (2.16+) reaches sm_90 only through compute_90 PTX built
    with CUDA 12.3 or 12.5; a CUDA 12.2 driver cannot JIT it (2.15 has no cp312 wheel)."""
    result = plan(("tensorflow",), gpus=("H100",), driver="535.183.01", python="3.12")
    assert result.verdict == NO_FIT
    rejected = {r.candidate: r for u in result.unplaced for r in u.rejected if r.rule == "driver"}
    for version in TF_RELEASES:
        code = build_code(default_kb(), "tensorflow", version)
        assert code is not None and code.cuda is not None
        if coverage(code.sass, code.ptx, H100).kind != "ptx-jit" or code.cuda <= CUDA_12_2:
            continue
        reason = rejected[f"tensorflow {version} and-cuda"].reason
        assert f"built with CUDA {code.cuda.major}.{code.cuda.minor}" in reason, version


@pytest.mark.parametrize("version", TF_RELEASES)
def test_no_tensorflow_release_is_planned_where_its_ptx_cannot_be_jitted(version: str) -> None:
    result = plan((f"tensorflow=={version}",), gpus=("H100",), driver="535.183.01")
    code = build_code(default_kb(), "tensorflow", version)
    assert code is not None and code.cuda is not None
    needs_jit = coverage(code.sass, code.ptx, H100).kind == "ptx-jit"
    if needs_jit and code.cuda > CUDA_12_2:
        assert result.verdict == NO_FIT
    else:
        assert result.verdict != NO_FIT, version


def test_a_tensorflow_release_with_unknown_code_is_not_cleared_under_mvc() -> None:
    """TF 2.11 (CUDA 11.2) is known only from the tested-configuration table: under a CUDA 11.1
    driver it runs only through minor-version compatibility, and its code is not known, so an
    RTX 3090 it may reach only through PTX cannot be cleared."""
    result = plan(("tensorflow==2.11",), gpus=("RTX 3090",), driver="455.45.01", python="3.10")
    assert result.verdict == NO_FIT
    [reason] = [
        r.reason
        for u in result.unplaced
        for r in u.rejected
        if r.candidate == "tensorflow 2.11.0 cuda" and r.rule == "driver"
    ]
    assert "its GPU code is not in the knowledge base" in reason
    assert "minor-version compatibility, which does not cover PTX" in reason
    native = plan(("tensorflow==2.11",), gpus=("RTX 3090",), driver="460.27.03", python="3.10")
    assert native.verdict != NO_FIT


@pytest.mark.parametrize("gpu", ["RTX 5090", "B200"])
def test_no_tensorflow_216_or_newer_is_planned_for_a_gpu_its_cuda_cannot_compile_for(
    gpu: str,
) -> None:
    """Blackwell came with CUDA 12.8; TensorFlow 2.16+ is built with CUDA 12.3 or 12.5 and
    compiles kernels at run time with it (TF issues #111958, #101746): none fits on Python 3.12
    (2.15 has no cp312 wheel), and on 3.11 the plan falls back to 2.15, which the rule's
    evidence does not cover, saying it runs there only through PTX."""
    result = plan(("tensorflow",), gpus=(gpu,), driver="580.65.06", python="3.12")
    assert result.verdict == NO_FIT
    reasons = {r.candidate: r.reason for u in result.unplaced for r in u.rejected}
    for version in TF_RELEASES:
        if sortable(version) >= sortable("2.16"):
            assert "compiles its kernels at run time" in reasons[f"tensorflow {version} and-cuda"]
    older = plan(("tensorflow",), gpus=(gpu,), driver="580.65.06", python="3.11")
    [tf] = [p for p in older.packages() if p.name == "tensorflow"]
    assert tf.public_version.startswith("2.15.")
    assert any("runs by JIT-compiling PTX" in n for n in older.notes)


def test_tensorflow_still_fits_a_gpu_its_cuda_knows() -> None:
    result = plan(("tensorflow",), gpus=("RTX 4090",), driver="580.65.06", python="3.12")
    [tf] = [p for p in result.packages() if p.name == "tensorflow"]
    assert tf.public_version == TF_RELEASES[0]


def test_a_build_of_unknown_code_on_a_gpu_after_its_cuda_says_it_needs_ptx() -> None:
    """TF 2.10 on native Windows (CUDA 11.2) and an RTX 4090 (sm_89, from CUDA 11.8)."""
    result = plan(
        ("tensorflow",),
        gpus=("RTX 4090",),
        driver="566.36",
        python="3.10",
        platform="windows-x86_64",
    )
    [tf] = [p for p in result.packages() if p.name == "tensorflow"]
    assert tf.public_version == "2.10.0"
    assert any("cannot compile for NVIDIA GeForce RTX 4090 (sm_89)" in n for n in result.notes)


# ---- joint: the cuDNN each PyTorch variant pins (RELEASE.md) ----------------------------------


def test_onnxruntime_118_for_cuda_11_pairs_only_with_a_torch_of_cudnn_8() -> None:
    """ORT's CUDA EP table: 1.18 for CUDA 11.8 needs cuDNN 8, 'compatible with PyTorch <= 2.3.1
    for CUDA 11.8'; torch 2.4-2.7 cu118 pin nvidia-cudnn-cu11==9.1.0.70."""
    result = plan(
        ("torch", "onnxruntime-gpu==1.18.0"), gpus=("RTX 3090",), driver="535.183.01", python="3.11"
    )
    [torch] = [p for p in result.packages() if p.name == "torch"]
    assert torch.version == "2.3.1+cu118" and torch.cudnn == "8.7.0.84"
    reasons = {r.candidate: r.reason for r in torch.rejected if r.rule == "joint"}
    assert (
        "needs cuDNN 9 while onnxruntime-gpu 1.18.0 cuda11 needs cuDNN 8"
        in (reasons["torch 2.7.1 cu118"])
    )


def test_torch_and_tensorflow_219_do_not_share_an_env() -> None:
    """TF 2.19 [and-cuda] pins nvidia-cudnn-cu12==9.3.0.75; every torch CUDA 12 build pins
    another cuDNN (9.10.2.21 for the cu126 builds of 2.8-2.14): pip cannot install both."""
    result = plan(
        ("torch", "tensorflow==2.19.0"), gpus=("RTX 4090",), driver="580.65.06", python="3.12"
    )
    assert len(result.envs) == 2
    newest = plan(("torch", "tensorflow"), gpus=("RTX 4090",), driver="580.65.06", python="3.12")
    assert len(newest.envs) == 1  # 2.21 asks nvidia-cudnn-cu12>=9.3.0.75,<10
    [torch] = [p for p in newest.packages() if p.name == "torch"]
    assert torch.version == "2.14.1+cu126" and torch.cudnn == "9.10.2.21"


# ---- Jetson: NVIDIA's redist wheel for each JetPack --------------------------------------------


@pytest.mark.parametrize(
    ("jetpack", "version", "folder"),
    [
        ("5.1.1", "2.1.0a0+41361538.nv23.06", "v512"),
        ("5.1.2", "2.1.0a0+41361538.nv23.06", "v512"),
        ("6.0", "2.4.0a0+3bcc3cddb5.nv24.07.16234504", "v60"),
        ("6.1", "2.5.0a0+872d972e41.nv24.08.17622132", "v61"),
        ("6.2", "2.5.0a0+872d972e41.nv24.08.17622132", "v61"),
    ],
)
def test_a_jetson_gets_nvidias_wheel_for_its_jetpack(
    jetpack: str, version: str, folder: str
) -> None:
    result = plan(("torch",), gpus=("Jetson AGX Orin",), platform="linux-aarch64", jetpack=jetpack)
    [torch] = [p for p in result.packages() if p.name == "torch"]
    assert torch.version == version and torch.build == "jetson"
    assert torch.find_links == (
        f"https://developer.download.nvidia.com/compute/redist/jp/{folder}/pytorch/"
    )


def test_onnxruntime_built_with_cuda_12_8_runs_under_mvc_on_a_cuda_12_2_driver() -> None:
    """Its build file says CUDA 12.8 (not the 12.0 its [cuda] extra accepts): on driver 535 it
    runs only under minor-version compatibility, and the plan says its PTX was not checked."""
    result = plan(("onnxruntime",), gpus=("RTX 3090",), driver="535.183.01", python="3.11")
    [ort] = [p for p in result.packages() if p.name == "onnxruntime-gpu"]
    assert ort.version == "1.26.0" and ort.cuda == "12.8"
    assert ort.driver_how == "minor-version-compat"
    assert any("Its GPU code is not in the knowledge base" in n for n in result.notes)


def test_flash_attn_on_a_t4_is_left_out_and_torch_is_still_planned() -> None:
    """FlashAttention 2 supports Ampere and newer only (README): no torch would change that, so
    torch is planned and flash-attn is named with its own reason, not as torch's failure."""
    result = plan(("torch", "flash-attn"), gpus=("Tesla T4",), driver="580.65.06", python="3.12")
    assert result.verdict == NO_FIT
    assert [p.name for p in result.packages()] == ["torch"]
    [lost] = result.unplaced
    assert lost.package == "flash-attn"
    assert any("supports compute capability ≥ 8.0 only" in r.reason for r in lost.rejected)
