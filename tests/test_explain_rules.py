"""explain's ranking rules (what a message means by the facts around it), the one-pass needle
search, and the text clean-up: each rule turns its real example into its cause and only when its
conditions hold; the needle search finds exactly what a plain search finds; quotes and fences go."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpuenv.explain import explain_text
from gpuenv.explain.derived import cudnn_shadowed
from gpuenv.explain.model import Fact
from gpuenv.explain.needles import compile_needle, locate
from gpuenv.explain.text import plain, prepare
from gpuenv.kb import default_kb, load_kb
from gpuenv.kb.audit import check_patterns
from gpuenv.kb.loader import DATA_DIR
from gpuenv.kb.patterns import Condition, compiled, parse_condition

KB = default_kb()
EXT = "extension_build_mismatch"
RULES = compiled(KB).rule_by_id


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_each_rule_turns_its_example_into_its_cause(rule_id: str) -> None:
    rule = RULES[rule_id]
    explanation = explain_text(rule.example, KB)
    assert explanation.cause == rule.cause, explanation.evidence
    assert any(e.rule == rule_id for e in explanation.evidence)


def test_a_rule_needs_its_facts() -> None:
    """The same message without the container is the driver, not the container's CUDA."""
    message = (
        "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version"
    )
    assert explain_text(message, KB).cause == "driver_too_old"
    in_docker = "$ docker run --gpus all my-image python train.py\n" + message
    assert explain_text(in_docker, KB).cause == "container_driver_mismatch"
    on_mac = "AssertionError: Torch not compiled with CUDA enabled"
    assert explain_text(on_mac, KB).cause == "cpu_only_build"
    assert explain_text("MacBook Pro M2\n" + on_mac, KB).cause == "mps_or_rocm_specific"


@pytest.mark.parametrize(
    ("message", "elsewhere", "without", "context", "within"),
    [
        (
            "TensorFlow is not detecting my GPU",
            "Ubuntu 20.04, TensorFlow 2.4.0",
            "missing_cuda_lib",
            "Windows 11, TensorFlow 2.17.0",
            "cpu_only_build",
        ),
        (
            "ERROR: No matching distribution found for jax-cuda12-plugin",
            "Ubuntu 22.04",
            "python_version_unsupported",
            "macOS on an Apple M2 Pro",
            "wrong_platform_wheel",
        ),
        (
            "ImportError: libcurand.so.10: cannot open shared object file: No such file",
            "Jetson Xavier, JetPack 4.6.4",
            "missing_cuda_lib",
            "Jetson Xavier, JetPack 4.6.4; docker run -it nvcr.io/nvidia/l4t-base:r32.4.4",
            "container_driver_mismatch",
        ),
        (
            "ERROR: No matching distribution found for torch==1.9.1+cu111",
            "Ubuntu 22.04",
            "solver_conflict",
            "macOS 13 on an Intel Mac",
            "wrong_platform_wheel",
        ),
        (
            "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against 7401 but "
            "linked against 7301",
            "Ubuntu 18.04, PyTorch 1.0 from conda",
            "cudnn_mismatch",
            "$ echo $LD_LIBRARY_PATH\n/public/apps/cudnn/v8.0.3.33-cuda.11.0/cuda/lib64:/usr/lib",
            "multiple_cuda_conflict",
        ),
        (
            "numba.cuda.cudadrv.error.CudaSupportError: Call to cuInit results in "
            "CUDA_ERROR_NO_DEVICE",
            "Ubuntu 22.04, numba 0.58",
            "no_driver",
            'os.environ["CUDA_VISIBLE_DEVICES"] = "-1"',
            "other",
        ),
        (
            "ERROR: Could not find a version that satisfies the requirement torch (from versions: "
            "none)",
            "pip install torch --index-url https://download.pytorch.org/whl/cu121",
            "python_version_unsupported",
            "pip install torch --index-url https://download.pytorch.org/whl/rocm6.2",
            "mps_or_rocm_specific",
        ),
        (
            "RuntimeError: CUDA error: system has unsupported display driver / cuda driver "
            "combination",
            "Ubuntu 22.04, RTX 3090",
            "driver_module_mismatch",
            "$ ldconfig -p | grep libcuda\n\tlibcuda.so.1 => /usr/local/cuda/compat/libcuda.so.1",
            "container_driver_mismatch",
        ),
        (
            "CUDA driver version is insufficient for CUDA runtime version",
            "Ubuntu 22.04, RTX 3090",
            "driver_too_old",
            "It started right after the NVIDIA driver was updated (no reboot yet).",
            "driver_module_mismatch",
        ),
        (
            "ERROR: Could not find a version that satisfies the requirement torch==1.5.1+cpu "
            "(from versions: 0.1.2, 0.1.2.post1, 0.1.2.post2)",
            "C:\\Python\\Python37\\Scripts>pip install torch==1.5.1+cpu",
            "solver_conflict",
            "C:\\Python\\Python37-32\\Scripts>pip install torch==1.5.1+cpu",
            "wrong_platform_wheel",
        ),
        (
            '[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when trying '
            'to load "C:\\app\\onnxruntime_providers_cuda.dll"',
            "onnxruntime-gpu 1.19.2 with cuDNN 9.1 installed",
            "windows_dll",
            "onnxruntime-gpu 1.19.2 with cuDNN 8.9.7 installed",
            "cudnn_mismatch",
        ),
    ],
    ids=[
        "tf-native-windows",
        "cuda-package-on-macos",
        "jetson-container",
        "local-cuda-build-on-macos",
        "second-cudnn-on-ld-library-path",
        "gpus-hidden",
        "rocm-index",
        "cuda-compat-803",
        "driver-updated",
        "32-bit-python",
        "ort-cudnn-major",
    ],
)
def test_the_facts_around_a_message_change_its_cause(
    message: str, elsewhere: str, without: str, context: str, within: str
) -> None:
    """Rule: TensorFlow >= 2.11 has no GPU build for native Windows; no CUDA build of a package
    exists for macOS; a Jetson container gets CUDA from the host's L4T. Facts read from prose
    (an OS, a TensorFlow release, a GPU package's name, JetPack, an l4t image tag) decide."""
    assert explain_text(elsewhere + "\n" + message, KB).cause == without
    assert explain_text(context + "\n" + message, KB).cause == within


def test_facts_derived_from_prose() -> None:
    text = (
        "TensorFlow 2.12.1 on Jetson, JetPack 5.1\n"
        "ERROR: No matching distribution found for onnxruntime-gpu==1.16.3"
    )
    facts = {(f.name, f.value) for f in explain_text(text, KB).facts}
    assert {
        ("tensorflow_release", "2.12"),
        ("jetson", "true"),
        ("package_gpu_build", "true"),
    } <= facts
    plain = {f.name for f in explain_text("No matching distribution found for numpy", KB).facts}
    assert "package_gpu_build" not in plain
    local = explain_text("No matching distribution found for torch==1.9.1+cu111", KB).facts
    assert ("package_gpu_build", "true") in {(f.name, f.value) for f in local}
    cpu = explain_text("No matching distribution found for torch==1.9.1+cpu", KB).facts
    assert "package_gpu_build" not in {f.name for f in cpu}


def test_a_line_naming_several_toolkits_names_each() -> None:
    """Toolkits named on one line are each a fact (two installed is what a rule looks for);
    other facts keep the first value a line gives."""
    text = "torch built for CUDA 11.3; CUDA 11.4 and CUDA 10.1 installed; cuDNN 9.1 and cuDNN 8.9"
    facts = explain_text(text, KB).facts
    assert sorted(f.value for f in facts if f.name == "cuda_named") == ["10.1", "11.3", "11.4"]
    assert [f.value for f in facts if f.name == "cudnn_version"] == ["9.1"]


@pytest.mark.parametrize(
    ("setting", "package", "decides"),
    [
        ("Arch Linux, pip 20.3", "tensorflow", True),  # Linux x86-64 wheels: the Python
        ("Ubuntu 22.04", "jax-cuda12-plugin", True),
        ("Fedora 35 (x86_64)", "torch", True),
        ("", "tensorflow", False),  # no Linux named
        ("Ubuntu 22.04 on a Jetson Orin", "tensorflow", False),  # an aarch64 machine
        ("Ubuntu 22.04 (aarch64)", "tensorflow", False),
        ("Ubuntu 22.04 in WSL on Windows 11", "tensorflow", True),  # pip runs on Linux
        ("macOS 14; the guide says Ubuntu 22.04", "tensorflow", False),  # another OS
        ("Ubuntu 22.04", "torch==1.9.1+cu111", False),  # a local build: not on the index
        ("Ubuntu 22.04", "no-such-package-known", False),  # its wheels are not known
    ],
)
def test_no_file_on_a_named_linux_the_package_serves_is_the_python(
    setting: str, package: str, decides: bool
) -> None:
    """Rule: pip finding no file of a package that has Linux x86-64 wheels, on a Linux
    distribution the text names (and no other OS or architecture), is the Python."""
    text = f"{setting}\nERROR: No matching distribution found for {package}"
    got = explain_text(text, KB)
    rule = "no-file-on-a-linux-the-package-serves"
    assert (got.decided_by == rule) is decides, (got.cause, got.decided_by)
    if decides:
        assert got.cause == "python_version_unsupported"


@pytest.mark.parametrize(
    ("setting", "arch", "cause"),
    [
        ("CUDA 11.1 is installed", "86", "multiple_cuda_conflict"),  # 11.1 builds sm_86
        ("built with /usr/local/cuda-12.4/bin in PATH", "89", "multiple_cuda_conflict"),
        ("CUDA 11.0 toolkit", "86", "gpu_arch_unsupported"),  # 11.0 stops at sm_80
        ("Ubuntu, RTX 4090, CUDA 11.3", "89", "gpu_arch_unsupported"),
        ("CUDA 12.4, building for a K80", "35", "gpu_arch_unsupported"),  # 12.x dropped sm_35
        ("CUDA 7.5 installed", "61", "gpu_arch_unsupported"),  # not in archs.toml: not judged
        ("nvidia-smi says CUDA Version: 12.2", "86", "gpu_arch_unsupported"),  # the driver's
        ("", "86", "gpu_arch_unsupported"),
    ],
)
def test_nvcc_rejecting_an_arch_the_cuda_named_supports_is_an_older_nvcc_first(
    setting: str, arch: str, cause: str
) -> None:
    """Rule: nvcc saying an architecture is unsupported, while the CUDA toolkit the text names
    can compile for it (archs.toml), means another, older nvcc ran; otherwise the toolkit is too
    old (or too new) for the architecture."""
    text = f"{setting}\nnvcc fatal   : Unsupported gpu architecture 'compute_{arch}'"
    got = explain_text(text, KB)
    assert got.cause == cause, got.evidence
    assert (got.decided_by == "nvcc-older-than-the-cuda-named") is (
        cause == "multiple_cuda_conflict"
    )


@pytest.mark.parametrize(
    ("text", "cause", "named"),
    [
        # an extension module's undefined symbol; one of a CUDA library is that library's
        ("ops.cpython-311-x86_64-linux-gnu.so: undefined symbol: _ZN6myops3runEv", EXT, True),
        ("_C.cpython-310-x86_64-linux-gnu.so: undefined symbol: cudnnSetStream", EXT, False),
        ("Undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSs", EXT, True),
        ("_ext.so: undefined symbol: _Z14nms_forwardN2at6TensorEf", EXT, True),
        ("INFO     Torch 2.0.1+cpu", "cpu_only_build", True),
        ("pip install torch==2.0.1+cpu", "cpu_only_build", False),  # asking for it is no sign
    ],
)
def test_message_patterns_read_their_kind_not_just_their_examples(
    text: str, cause: str, named: bool
) -> None:
    got = explain_text(text, KB)
    assert (got.cause == cause) is named, got.evidence


@pytest.mark.parametrize(
    ("setting", "judged"),
    [
        ("onnxruntime-win-x64-cuda12-1.17.1, cuDNN 9 installed", True),  # CUDA 12 build: cuDNN 8
        ("onnxruntime-win-x64-cuda12-1.17.1, cuDNN 8.9 installed", False),
        ("onnxruntime-gpu==1.20.1 and cudnn version: 90100", False),
        ("ONNX Runtime 1.20.1, cuDNN 8.9.7", True),  # the index's build is for CUDA 12: cuDNN 9
        ("ONNX Runtime 1.18.0, CUDA 12.4, cuDNN 8.9", False),  # 1.18's cuDNN depends on its patch
        ("ONNX Runtime 1.17.1\nonnxruntime-gpu 1.19.2, cuDNN 9", False),  # which one failed?
        ("onnxruntime-gpu 1.19.2", False),  # no cuDNN named
    ],
)
def test_the_cudnn_major_of_an_onnxruntime_release(setting: str, judged: bool) -> None:
    """onnxruntime.toml holds each release's builds and their cuDNN; the judgement is made only
    where the release, its build and the installed cuDNN major are all known."""
    message = "LoadLibrary failed with error 126 when trying to load onnxruntime_providers_cuda.dll"
    explanation = explain_text(setting + "\n" + message, KB)
    assert (explanation.cause == "cudnn_mismatch") is judged
    assert explanation.cause in ("cudnn_mismatch", "windows_dll")


@pytest.mark.parametrize(
    ("pin", "offered", "cause"),
    [
        ("torch==1.13.1", "2.2.0, 2.2.1, 2.3.0", "python_version_unsupported"),
        ("tensorflow==2.4.0", "2.5.0rc0, 2.5.0rc1, 2.5.0", "python_version_unsupported"),
        ("torch==2.7.0+cu128", "2.9.0+cu128, 2.9.1+cu128", "python_version_unsupported"),
        # a pinned nightly the index has pruned: not judged, the local-version line stays
        ("torch==2.7.0.dev20250311+cu128", "2.8.0+cu128, 2.9.0+cu128", "solver_conflict"),
        # an older release among those offered: not every one is newer, nothing judged
        ("torch==2.1.0+cu118", "2.0.1+cu118, 2.2.0+cu118", "solver_conflict"),
        ("torch==2.2.0+cu118", "2.2.0+cu118, 2.3.0+cu118", "solver_conflict"),
    ],
)
def test_a_pin_older_than_every_release_offered_means_a_newer_python(
    pin: str, offered: str, cause: str
) -> None:
    """pip lists only the releases with a wheel for its Python; when every one is newer than the
    pin, the pinned release has none for it."""
    text = f"ERROR: Could not find a version that satisfies the requirement {pin}"
    text += f" (from versions: {offered})"
    explanation = explain_text(text, KB)
    assert explanation.cause == cause
    judged = explanation.decided_by == "pin-older-than-every-release-offered"
    assert judged is (cause == "python_version_unsupported")


@pytest.mark.parametrize(
    ("text", "cause", "decided_by"),
    [
        # the unversioned name is a development symlink: the driver is there as libcuda.so.1
        (
            "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open"
            " shared object file: No such file or directory",
            "missing_cuda_lib",
            "libcuda-unversioned-missing",
        ),
        (
            "RuntimeError: Failed to dlopen libcuda.so",
            "missing_cuda_lib",
            "libcuda-unversioned-missing",
        ),
        (
            "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory",
            "no_driver",
            "libcuda-missing",
        ),
        (
            "WSL2 Ubuntu 22.04\nOSError: libcuda.so: cannot open shared object file",
            "missing_cuda_lib",
            "libcuda-unversioned-on-wsl",
        ),
        # Fabric Manager: of another version than the driver, or not there at all
        (
            "nv-fabricmanager[3228]: fabric manager NVIDIA GPU driver interface version 530.30.02"
            " don't match with driver version 530.41.03.",
            "driver_module_mismatch",
            "fabric-manager-driver-version-mismatch",
        ),
        (
            "NVIDIA Fabric Manager is not installed on this HGX node",
            "other",
            "fabric-manager-named",
        ),
        # torch's "no GPUs": a CUDA_VISIBLE_DEVICES naming none, or ZLUDA without a usable card
        ("RuntimeError: No CUDA GPUs are available", "other", "torch-no-cuda-gpus-available"),
        (
            "ZLUDA with the HIP SDK on an RX 6600\nRuntimeError: No CUDA GPUs are available",
            "mps_or_rocm_specific",
            "zluda-sees-no-gpu",
        ),
        # error 804: an image's compat libcuda on a GeForce host, or a driver update unbooted
        (
            "CUDA Error: forward compatibility was attempted on non supported HW",
            "container_driver_mismatch",
            "cuda-forward-compat-unsupported",
        ),
        (
            "The NVIDIA drivers were updated this morning.\nCUDA Error: forward compatibility"
            " was attempted on non supported HW",
            "driver_module_mismatch",
            "driver-error-after-driver-update",
        ),
        # TensorFlow's cuDNN older than built: alone, or loaded first by torch
        (
            "Loaded runtime CuDNN library: 8.6.0 but source was compiled with: 8.9.4.",
            "cudnn_mismatch",
            "tf-cudnn-loaded-vs-compiled",
        ),
        (
            ">>> import torch\nLoaded runtime CuDNN library: 8.6.0 but source was compiled with:"
            " 8.9.4.",
            "multiple_cuda_conflict",
            "tf-cudnn-loaded-by-torch-first",
        ),
        # CUDA's "insufficient driver" where no NVIDIA GPU is: an integrated GPU only
        (
            "Windows 11 laptop with only an integrated Intel Iris Xe GPU\nCUDA driver version is"
            " insufficient for CUDA runtime version",
            "no_driver",
            "driver-insufficient-on-cpu-machines",
        ),
        (
            "MacBook Air (no NVIDIA GPU)\nCUDA driver version is insufficient for CUDA runtime"
            " version",
            "no_driver",
            "driver-insufficient-on-cpu-machines",
        ),
        # NVENC's minimum driver: OBS's wording; after the library failed to load, FFmpeg prints
        # that line too, and then it is the library
        (
            "error: The minimum required Nvidia driver for nvenc is 471.41 or newer",
            "driver_too_old",
            "nvenc-api-newer-than-driver",
        ),
        (
            "[hevc_nvenc @ 0x5581] Cannot load libnvidia-encode.so.1\n[hevc_nvenc @ 0x5581] The"
            " minimum required Nvidia driver for nvenc is 520.56.06 or newer",
            "no_driver",
            "nvenc-library-missing",
        ),
        # the CUDA a build found is neither torch's nor the toolkit the text says is installed
        (
            "PyTorch built for CUDA 11.8, CUDA 12.1 installed under /usr/local/cuda\nThe detected"
            " CUDA version (10.2) mismatches the version that was used to compile\nPyTorch (11.8)."
            " Please make sure to use the same CUDA versions.",
            "multiple_cuda_conflict",
            "cuda-mismatch-beside-a-third-toolkit",
        ),
        (
            "torch built for CUDA 11.8, system CUDA 12.1\nThe detected CUDA version (12.1)"
            " mismatches the version that was used to compile\nPyTorch (11.8).",
            "extension_build_mismatch",
            "cuda-version-mismatches-torch",
        ),
        # DeepSpeed accepts a toolkit of torch's major with a warning; the build fails after it
        (
            "Installed CUDA version 11.2 does not match the version torch was compiled with 11.7"
            " but since the APIs are compatible, accepting this combination\ncustom_cuda_layers.h"
            ":12:10: fatal error: curand_kernel.h: No such file or directory",
            "missing_cuda_lib",
            "cuda-headers-missing",
        ),
        # the cuDNN TensorFlow asks for is of another major than the one installed
        (
            "cuDNN 6 installed, as the Windows install page asked\nImportError: Could not find"
            " 'cudnn64_7.dll'. TensorFlow requires that this DLL be installed in a directory that"
            " is named in your %PATH% environment variable. You may install the necessary DLL by"
            " downloading cuDNN 7 from this URL: https://developer.nvidia.com/cudnn",
            "cudnn_mismatch",
            "cudnn-of-another-major",
        ),
        # an insufficient driver on a machine whose only GPU named is an AMD one: no NVIDIA driver
        (
            "Laptop with an AMD Radeon RX 6600M\nRuntimeError: CUDA driver version is insufficient"
            " for CUDA runtime version",
            "no_driver",
            "driver-insufficient-with-only-an-amd-gpu",
        ),
        (
            "AMD Radeon graphics beside a GeForce RTX 3060 Laptop GPU, driver 456.71\nRuntimeError:"
            " CUDA driver version is insufficient for CUDA runtime version",
            "driver_too_old",
            "cuda-driver-insufficient",
        ),
        (
            "error: The minimum required Nvidia driver for nvenc is (unknown) or newer",
            "driver_too_old",
            "nvenc-api-newer-than-driver",
        ),
    ],
)
def test_what_a_message_means_in_its_setting(text: str, cause: str, decided_by: str) -> None:
    explanation = explain_text(text, KB)
    assert (explanation.cause, explanation.decided_by) == (cause, decided_by)


def test_the_fabric_manager_mismatch_reads_the_driver_version() -> None:
    text = (
        "fabric manager NVIDIA GPU driver interface version 590.48.01 don't match with driver"
        " version 580.126.09."
    )
    facts = {(f.name, f.value) for f in explain_text(text, KB).facts}
    assert ("driver_version", "580.126.09") in facts
    assert ("driver_version", "590.48.01") not in facts


def test_a_cudnn_major_required_is_not_the_one_installed() -> None:
    """ONNX Runtime's "Require cuDNN 9.*" names the major it needs, not the one installed: with
    cuDNN 8 said to be installed it is the wrong major; with nothing said, a missing one."""
    message = (
        "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*. Please install "
        "all dependencies as mentioned in the GPU requirements page"
    )
    bare = explain_text(message, KB)
    assert ("cudnn_wanted", "9") in {(f.name, f.value) for f in bare.facts}
    assert "cudnn_version" not in {f.name for f in bare.facts}
    assert bare.cause == "missing_cuda_lib"
    assert explain_text("cuDNN 8.9 installed with apt\n" + message, KB).cause == "cudnn_mismatch"
    assert explain_text("cuDNN 9.1 installed with apt\n" + message, KB).cause == "missing_cuda_lib"


def test_cudnn_versions_read_from_prose() -> None:
    def cudnn(text: str) -> set[str]:
        return {f.value for f in explain_text(text, KB).facts if f.name == "cudnn_version"}

    assert cudnn("cuDNN Ver. 8907 and more") == {"8.9.7"}  # torch.backends.cudnn.version()
    assert cudnn("cudnn version: 90100") == {"9.1.0"}
    assert cudnn("with cuDNN 9 installed.") == {"9"}
    assert cudnn("I have cuDNN v8.9.7.") == {"8.9.7"}
    assert cudnn("cudnn64_8.dll is missing") == set()  # a library's name, not a version


def test_a_rule_gives_its_own_fix_before_the_pattern_hints() -> None:
    explanation = explain_text(
        "onnxruntime-win-x64-cuda12-1.17.1, cuDNN 9 installed\n"
        "LoadLibrary failed with error 126 when trying to load onnxruntime_providers_cuda.dll",
        KB,
    )
    rule = RULES["ort-provider-with-cudnn-of-another-major"]
    assert explanation.fix is not None and explanation.fix.summary == rule.hints[0]


def test_uv_names_the_pythons_a_release_has_wheels_for() -> None:
    """uv's hint under "doesn't have a source distribution or wheel for the current platform"
    says the Python is the cause, and the tags it lists (the last one's closing backtick taken
    by the Markdown clean-up) make the fix when the knowledge base has no row for the release."""
    explanation = explain_text(
        "error: Distribution `faiss-cpu==1.7.4 @ registry+https://example.invalid/simple` can't "
        "be installed because it doesn't have a source distribution or wheel for the current "
        "platform\n\nhint: You're using CPython 3.12 (`cp312`), but `faiss-cpu` (v1.7.4) only "
        "has wheels with the following Python ABI tags: `cp37`, `cp38`, `cp39`, `cp310`, "
        "`cp311`\n",
        KB,
    )
    assert explanation.cause == "python_version_unsupported"
    assert [a.cause for a in explanation.alternatives] == ["wrong_platform_wheel"]
    assert explanation.fix is not None
    assert "CPython 3.7-3.11 only" in explanation.fix.summary
    assert "this Python is 3.12" in explanation.fix.summary
    assert explanation.fix.commands[0] == "python3.11 -m venv .venv"
    # a release wheels.toml has a row for: its Pythons, and the first release for this one
    jaxlib = explain_text(
        "error: Distribution `jaxlib==0.4.24 @ registry+https://example.invalid/simple` can't be "
        "installed because it doesn't have a source distribution or wheel for the current "
        "platform\n\nhint: You're using CPython 3.13 (`cp313`), but `jaxlib` (v0.4.24) only has "
        "wheels with the following Python ABI tags: `cp39`, `cp310`, `cp311`, `cp312`\n",
        KB,
    )
    assert jaxlib.fix is not None
    assert "CPython 3.9-3.12 only, this Python is 3.13" in jaxlib.fix.summary
    assert "jaxlib 0.4.34, the first release after it for Python 3.13" in jaxlib.fix.summary


def test_each_hint_is_printed_once() -> None:
    """A message with two hints gives the first as the fix and the second as its note; neither
    is printed again as a loose hint."""
    from gpuenv.render.explain import render_text

    explanation = explain_text(
        "ggml_cuda_init: failed to initialize CUDA: forward compatibility was attempted on non "
        "supported HW",
        KB,
    )
    assert explanation.fix is not None and len(explanation.fix.notes) == 1
    text = render_text(explanation)
    for said in (explanation.fix.summary, explanation.fix.notes[0]):
        assert text.count(said[:60]) == 1, text


def _found_none(asked: str) -> str:
    """pip's two lines when the index has no file of `asked` for this machine."""
    return (
        f"ERROR: Could not find a version that satisfies the requirement {asked} "
        f"(from versions: none)\nERROR: No matching distribution found for {asked}"
    )


@pytest.mark.parametrize(
    ("setting", "asked", "judged"),
    [
        ("Windows 11, Python 3.10", "triton==2.2.0", True),  # triton: Linux files only
        ("Ubuntu 22.04, Python 3.10", "triton==2.2.0", False),
        ("Python 3.10", "triton==2.2.0", False),  # the OS is not said: nothing is judged
        ("Windows 10", "jax-cuda12-plugin", True),  # no release has a Windows file
        ("macOS Sonoma on an Apple M2", "jax-cuda12-plugin", True),
        ("Windows 10", "torch", False),  # torch has win_amd64 files
        ("Windows 11 on Snapdragon, ARM64 Python", "torch", True),  # the index has no win_arm64
        ("Windows 11", "jaxlib==0.4.7+cuda11.cudnn82", True),  # jaxlib's CUDA builds: Linux
        ("Ubuntu 22.04", "jaxlib==0.4.7+cuda11.cudnn82", False),
        ("Jetson Orin, JetPack 5.1", "triton==3.0.0", True),  # 3.0.0: linux x86-64 only
        ("Jetson Orin, JetPack 6.2", "triton==3.5.0", False),  # 3.5.0 has aarch64 files
        # a release wheels.toml does not list is judged by every release it lists
        ("Windows 11", "triton==2.0.0.dev20221001", True),  # none has a Windows file
        ("Windows 11", "torch==0.4.1", False),  # torch's listed releases have Windows files
        ("Windows 11", "some-unknown-package", False),
    ],
)
def test_a_package_without_a_wheel_for_the_platform(setting: str, asked: str, judged: bool) -> None:
    """wheels.toml's platforms of the release named (or of every release listed) against the
    OS and architecture the text gives: judged only where both are known."""
    message = _found_none(asked)
    explanation = explain_text(setting + "\n" + message, KB)
    rule = "release-has-no-wheel-for-this-platform"
    assert any(e.rule == rule for e in explanation.evidence) is judged
    if judged:
        assert explanation.cause == "wrong_platform_wheel"


@pytest.mark.parametrize(
    ("setting", "asked", "judged"),
    [
        ("", "triton==2.0.0", True),  # triton: Linux files only
        ("", "onnxruntime-gpu", True),  # Linux and Windows, no macOS
        ("", "onnxruntime-directml>=1.20.1", True),  # Windows only
        ("", "nvidia-cublas-cu12==12.4.5.8", True),  # no macOS
        ("", "torch", False),  # every OS has torch files
        ("", "some-unknown-package", False),  # wheels.toml does not list it
        ("Python 3.8.17", "onnxruntime-gpu", False),  # the text says the Python: not this rule
        ("Windows 11", "onnxruntime-gpu", False),  # the platform is said: judged exactly
        ("Ubuntu 22.04", "triton==3.0.0", False),  # a Linux named, and triton has Linux files
        ("Ubuntu 22.04", "onnxruntime-directml", True),  # ... but DirectML has none
    ],
)
def test_a_package_published_for_few_platforms(setting: str, asked: str, judged: bool) -> None:
    """With neither the platform nor the Python said, pip finding no file of a package that has
    wheels for some OSes only points to the platform."""
    message = _found_none(asked)
    explanation = explain_text(f"{setting}\n{message}", KB)
    rule = "package-published-for-few-platforms"
    assert any(e.rule == rule for e in explanation.evidence) is judged
    assert (explanation.cause == "wrong_platform_wheel") is judged
    if judged:
        name = re.split(r"[=<>]", asked)[0]
        assert explanation.fix is not None
        assert explanation.fix.summary.startswith(f"{name} has wheels for ")
        assert "macos" not in explanation.fix.summary.split(" only ")[0]


PYTHON, PLATFORM = "python_version_unsupported", "wrong_platform_wheel"


@pytest.mark.parametrize(
    ("setting", "asked", "served", "cause"),
    [
        # the release named, or every release listed, has macOS arm64 wheels: not the Mac
        ("macOS 15.1 on Apple silicon (arm64), Python 3.13.0", "torch==2.5.1", True, PYTHON),
        ("macOS 14 on an M2 (arm64)", "onnxruntime==1.18.0", True, PYTHON),
        ("Windows 11 (26100) on ARM64, Python 3.12.4 (Arm)", "onnxruntime-qnn", True, PYTHON),
        # arm64 wheels came late (TensorFlow's from 2.13, ONNX Runtime's from 1.12, a few early
        # torch releases lack them): with no release named, a thread may predate them
        ("macOS 14 on an M2 (arm64)", "onnxruntime", False, PLATFORM),
        # not judged, the messages' own cause stands (the thread: no arm64 wheels for 3.7)
        ("I am using macOS Monterey on M1 chip, Python 3.7.16", "onnxruntime", False, PYTHON),
        ("macOS on Apple M1 (arm64), Python 3.9", "tensorflow", False, PLATFORM),
        ("macOS 15.1 on Apple silicon (arm64), Python 3.13.0", "torch", False, PLATFORM),
        # no Windows arm64 torch on the index; DirectML builds are Windows x86-64 only
        ("Windows 11 on ARM64, Python 3.12.4 (Arm)", "torch", False, PLATFORM),
        ("macOS 14 on an M2 (arm64)", "onnxruntime-directml", False, PLATFORM),
        # Linux on ARM is not judged so: its wheels came late for most packages
        ("Jetson Orin (aarch64), Python 3.8.10", "jaxlib", False, PLATFORM),
        ("macOS 15 on Apple silicon (arm64)", "some-unknown-package", False, PLATFORM),
    ],
)
def test_an_arm_machine_the_package_publishes_for_is_not_the_platform_missing(
    setting: str, asked: str, served: bool, cause: str
) -> None:
    """arm_served (wheels.toml has files of the package for the Mac or Windows on ARM named)
    makes pip's empty list the Python's, not the platform's; elsewhere on ARM it stays the
    platform."""
    message = _found_none(asked)
    explanation = explain_text(f"{setting}\n{message}", KB)
    rule = "arm-machine-the-package-publishes-for"
    assert any(e.rule == rule for e in explanation.evidence) is served
    assert explanation.cause == cause


@pytest.mark.parametrize(
    ("setting", "cause"),
    [
        ("Commenters report the same on M1 Macs.", "wrong_platform_wheel"),
        ("pip install on a Mac mini M4", "wrong_platform_wheel"),
        ("在我的M1 Mac上安装", "wrong_platform_wheel"),
        ("an iMac M1 with macOS 14", "wrong_platform_wheel"),
        ("my M1 Pro MacBook", "wrong_platform_wheel"),
        ("a MacBook Pro M2, macOS 14", "wrong_platform_wheel"),
        # either Mac: decord has Intel-Mac wheels, so the platform is not judged
        ("macOS Sonoma", "python_version_unsupported"),
    ],
)
def test_an_apple_silicon_mac_is_the_platform_a_package_lacks(setting: str, cause: str) -> None:
    """A Mac named as Apple silicon is macos-arm64 to the platform rule (served.machine_platforms):
    decord's files are for Linux, Windows and Intel Macs, so pip finding none there is the
    platform, and the fix names the machine and Rosetta's x86-64 Python, not both Macs."""
    explanation = explain_text(f"{setting}\n{_found_none('decord')}", KB)
    assert explanation.cause == cause
    if cause == "wrong_platform_wheel":
        assert explanation.fix is not None
        assert "this machine is macos-arm64:" in explanation.fix.summary
        assert "Rosetta" in explanation.fix.summary


def test_pip_listing_versions_means_the_platform_is_served() -> None:
    """Versions found: some release has a file for this machine, so the few platforms do not
    decide; a pin older than every version listed is a Python too new (pip's '(from pkg)'
    between the requirement and the list is read past)."""
    explanation = explain_text(
        "ERROR: Could not find a version that satisfies the requirement onnxruntime-gpu==1.15.1 "
        "(from vision-counter) (from versions: 1.17.0, 1.17.1, 1.18.0)\n"
        "ERROR: No matching distribution found for onnxruntime-gpu==1.15.1",
        KB,
    )
    assert ("versions_offered", "1.17.0, 1.17.1, 1.18.0") in {
        (f.name, f.value) for f in explanation.facts
    }
    assert explanation.cause == "python_version_unsupported"
    assert all(e.rule != "package-published-for-few-platforms" for e in explanation.evidence)


def test_placeholder_versions_do_not_make_a_platform_served() -> None:
    """NVIDIA's 0.0.1 placeholders are all pip finds on a Mac: no release with files."""
    explanation = explain_text(
        "ERROR: Could not find a version that satisfies the requirement "
        "nvidia-cublas-cu11==11.10.3.66 (from versions: 0.0.1.dev5, 0.0.1)\n"
        "ERROR: No matching distribution found for nvidia-cublas-cu11==11.10.3.66",
        KB,
    )
    assert explanation.cause == "wrong_platform_wheel"
    assert any(e.rule == "package-published-for-few-platforms" for e in explanation.evidence)


def test_a_platform_without_the_build_outweighs_the_versions_listed() -> None:
    """jaxlib's CUDA builds never existed for Windows: the newer CPU releases pip lists do not
    make it a Python too new."""
    explanation = explain_text(
        "Windows; pip install jax[cuda11_cudnn82]==0.4.7 -f <jax releases page>\n"
        "ERROR: Could not find a version that satisfies the requirement "
        "jaxlib==0.4.7+cuda11.cudnn82 (from jax[cuda11-cudnn82]) (from versions: 0.4.13, 0.4.14)",
        KB,
    )
    assert explanation.cause == "wrong_platform_wheel"
    assert not any(a.cause == "python_version_unsupported" for a in explanation.alternatives)


@pytest.mark.parametrize(
    ("page", "asked", "judged"),
    [
        ("torch_stable.html", "torch==1.7.0+cpu", True),  # lists every build
        ("cu113/torch_stable.html", "torch==1.10.0+cu113", True),  # the builds of cu113
        ("cu113/torch_stable.html", "torch==1.10.0+cu111", False),  # not on that page
        ("lts/1.8/torch_lts.html", "torch==1.8.2+cu102", True),
        ("torch_stable.html", "torch==1.7.0", False),  # no local build asked
    ],
)
def test_a_local_build_on_the_page_pip_read(page: str, asked: str, judged: bool) -> None:
    """pip read PyTorch's page that lists the build and still found no file of it: this
    Python has none (not an index without the build, which is what the message alone says)."""
    text = (
        f"Looking in links: https://download.pytorch.org/whl/{page}\n"
        f"ERROR: Could not find a version that satisfies the requirement {asked} "
        "(from versions: 0.1.2, 0.1.2.post1, 0.1.2.post2)\n"
        f"ERROR: No matching distribution found for {asked}"
    )
    explanation = explain_text(text, KB)
    rule = "local-build-listed-but-not-for-this-python"
    assert any(e.rule == rule for e in explanation.evidence) is judged
    if judged:
        assert explanation.cause == "python_version_unsupported"
    elif "+" in asked:
        assert explanation.cause == "solver_conflict"  # the page lacks the build


def test_a_32_bit_python_outranks_the_listed_build() -> None:
    explanation = explain_text(
        "C:\\Python\\Python37-32\\Scripts>pip install torch==1.5.1+cpu "
        "-f https://download.pytorch.org/whl/torch_stable.html\n"
        "Looking in links: https://download.pytorch.org/whl/torch_stable.html\n"
        "ERROR: Could not find a version that satisfies the requirement torch==1.5.1+cpu "
        "(from versions: 0.1.2, 0.1.2.post1, 0.1.2.post2)",
        KB,
    )
    assert explanation.cause == "wrong_platform_wheel"


@pytest.mark.parametrize(
    ("setting", "loaded", "compiled", "judged"),
    [
        ("cuDNN 7.6.5, 7.6.0 and 7.5.1 are all installed", "7.5.1", "7.6.0", True),
        ("cuDNN 7.6.5 installed under /opt/cuda", "7.3", "7.6", True),  # Paddle's two parts
        ("cuDNN 8.6 on a system with cuDNN 8.5", "8.5.0", "8.6.0", False),  # the build's own
        ("base image nvidia/cuda:11.1-cudnn8-devel", "8.0.5", "8.1.0", False),  # a major only
        ("cudnn-7.0-linux-x64-v4.0", "4007", "5103", False),  # 7.0 is another major
        ("cuDNN 7.1.3 installed", "7103", "7005", False),  # loaded newer than built
        ("", "7.5.1", "7.6.0", False),
    ],
)
def test_an_older_cudnn_loaded_though_a_newer_one_is_installed(
    setting: str, loaded: str, compiled: str, judged: bool
) -> None:
    """A newer cuDNN of the build's major said to be installed, an older one loaded: two copies
    (multiple_cuda_conflict); otherwise the cuDNN is too old (cudnn_mismatch)."""
    explanation = explain_text(
        f"{setting}\nE tensorflow/stream_executor/cuda/cuda_dnn.cc:319] Loaded runtime CuDNN "
        f"library: {loaded} but source was compiled with: {compiled}.  CuDNN library major and "
        "minor version needs to match or have higher minor version in case of CuDNN 7.0 or later "
        "version.",
        KB,
    )
    rule = "older-cudnn-loaded-though-newer-installed"
    assert any(e.rule == rule for e in explanation.evidence) is judged
    assert explanation.cause == ("multiple_cuda_conflict" if judged else "cudnn_mismatch")
    facts = {(f.name, f.value) for f in explanation.facts}
    assert ("cudnn_compiled", compiled) in facts  # not "7.6.0." with the sentence's stop
    if "7.0" not in setting:
        assert ("cudnn_version", "7.0") not in facts  # "CuDNN 7.0 or later" names no install


@pytest.mark.parametrize(
    ("installed", "judged"),
    [("9.5.1", True), ("8.9.7", False), ("9.3.0", False)],  # newer of 9; another major; its own
)
def test_cudnn_integer_versions_are_read_as_cudnn_counts_them(installed: str, judged: bool) -> None:
    """JAX's "Found cuDNN version 90100, but JAX was built against version 90300": cuDNN 9's
    integer versions count the major by 10000 (9.1.0 loaded, 9.3.0 built)."""
    facts = [
        Fact("cudnn_loaded", "90100", 1, "", "test"),
        Fact("cudnn_compiled", "90300", 1, "", "test"),
        Fact("cudnn_version", installed, 2, "", "test"),
    ]
    assert cudnn_shadowed(facts) is judged


def test_the_platform_fix_names_the_platforms_the_index_has() -> None:
    explanation = explain_text(
        "PS C:\\Github\\LatentSync> miniconda3/python.exe --version\n"
        "Python 3.10.13\n"
        "PS C:\\Github\\LatentSync> miniconda3/python.exe -m pip install triton==2.2.0\n"
        "ERROR: Could not find a version that satisfies the requirement triton==2.2.0 "
        "(from versions: none)\n"
        "ERROR: No matching distribution found for triton==2.2.0",
        KB,
    )
    assert explanation.cause == "wrong_platform_wheel"
    assert ("os", "windows") in {(f.name, f.value) for f in explanation.facts}
    assert explanation.fix is not None
    assert explanation.fix.summary.startswith(
        "triton 2.2.0 has wheels for linux-x86_64 only; this machine is windows-x86_64"
    )
    # pip's line advises on a Python; the rule turned it to the platform, so its hint is not given
    pip_line = next(p for p in compiled(KB).patterns if p.id == "pip-no-matching-version")
    python_hint = pip_line.hints[0]
    assert python_hint not in explanation.hints + explanation.fix.notes


def test_a_release_the_index_lists_not_is_judged_by_those_it_lists() -> None:
    explanation = explain_text(
        "pip install -e . --extra-index-url https://download.pytorch.org/whl/nightly/cu117 --pre\n"
        "Obtaining file:///C:/Users/ab/Desktop/kernl\n"
        "ERROR: Could not find a version that satisfies the requirement "
        "triton==2.0.0.dev20221001 (from kernl) (from versions: none)\n"
        "ERROR: No matching distribution found for triton==2.0.0.dev20221001\n",
        KB,
    )
    assert ("os", "windows") in {(f.name, f.value) for f in explanation.facts}  # C:/Users/
    assert explanation.cause == "wrong_platform_wheel"
    assert explanation.fix is not None
    listed = sum(1 for r in KB.rows("wheels", "release") if r["package"] == "triton")
    assert explanation.fix.summary.startswith(
        f"triton 2.0.0.dev20221001 is not among the {listed} releases the index lists, and those "
        "have wheels for linux-aarch64 and linux-x86_64 only; this machine is windows-x86_64"
    )


def test_a_cpu_build_without_a_file_for_the_platform_is_not_called_a_cuda_build() -> None:
    explanation = explain_text(
        "Windows 11 on Snapdragon, ARM64 Python\n"
        "ERROR: No matching distribution found for torch==2.9.0+cpu",
        KB,
    )
    assert explanation.cause == "wrong_platform_wheel"
    assert explanation.fix is not None
    assert explanation.fix.summary.startswith("torch 2.9.0 has wheels for ")
    assert "windows-arm64" in explanation.fix.summary


def test_architecture_names_are_read_in_any_case() -> None:
    facts = explain_text("native ARM64 CPython on Windows 11", KB).facts
    assert ("arch", "arm64") in {(f.name, f.value) for f in facts}


def test_a_line_votes_once() -> None:
    """Rule: of the patterns that read one line only the heaviest votes: pip's line on an NVIDIA
    library wheel is two frameworks wanting two builds, not a generic conflict; four patterns
    reading the same two pip lines are one sign, so explain is not '100% sure' of it."""
    nvidia = (
        'torch 2.1.1 requires nvidia-cudnn-cu12==8.9.2.26; platform_system == "Linux", but you '
        "have nvidia-cudnn-cu12 9.5.1.17 which is incompatible."
    )
    found = explain_text(nvidia, KB)
    assert found.cause == "multiple_cuda_conflict" and not found.alternatives
    generic = (
        "torchaudio 2.1.0 requires torch==2.1.0, but you have torch 2.0.1 which is incompatible."
    )
    assert explain_text(generic, KB).cause == "solver_conflict"
    pins = (
        "Python 3.10\n"
        "ERROR: Could not find a version that satisfies the requirement torch==1.9.1+cu111 "
        "(from versions: none)\n"
        "ERROR: No matching distribution found for torch==1.9.1+cu111"
    )
    explained = explain_text(pins, KB)
    assert explained.cause == "python_version_unsupported"
    assert len(explained.evidence) == 4 and explained.confidence < 0.95


@pytest.mark.parametrize(
    ("text", "facts", "holds"),
    [
        ("container", {"container": {"docker"}}, True),
        ("container", {}, False),
        ("os=darwin|windows", {"os": {"windows"}}, True),
        ("os=darwin", {"os": {"linux"}}, False),
        ("!wsl", {"wsl": {"true"}}, False),
        ("!os=darwin", {"os": {"linux"}}, True),
    ],
)
def test_conditions(text: str, facts: dict[str, set[str]], holds: bool) -> None:
    problems: list[str] = []
    condition = parse_condition(text, problems)
    assert isinstance(condition, Condition) and not problems
    assert condition.holds(facts) is holds


def _kb_with(tmp_path: Path, extra: str) -> Any:
    folder = tmp_path / "data"
    shutil.copytree(DATA_DIR, folder)
    target = folder / "patterns.toml"
    target.write_text(target.read_text(encoding="utf-8") + extra, encoding="utf-8")
    return load_kb(folder, strict=False)


@pytest.mark.parametrize(
    ("patterns", "when", "example", "message"),
    [
        ("'no-such-pattern'", "'container'", "x", "does not exist"),
        (
            "'libcuda-missing'",
            "'colour=red'",
            "libcuda.so: cannot open shared object file",
            "no fact",
        ),
        ("'libcuda-missing'", "'wsl'", "nothing here", "holds no message"),
    ],
)
def test_audit_finds_bad_rules(
    tmp_path: Path, patterns: str, when: str, example: str, message: str
) -> None:
    extra = f"""
[[rule]]
id = 'bad-rule'
title = 'x'
patterns = [{patterns}]
when = [{when}]
cause = 'missing_cuda_lib'
weight = 0.9
example = '{example}'
source = "github-threads"
locator = 'x/y#1'
verified = "2026-11-23"
status = "inferred"
"""
    problems = check_patterns(_kb_with(tmp_path, extra))
    assert isinstance(problems, list) and any(message in p.message for p in problems), problems


# -- the needle search ---------------------------------------------------------------------------

# characters of one to four bytes in UTF-8: the search runs on bytes, offsets are characters
WORDS = st.sampled_from(
    ["cuda", "out", "of", "memory", "nccl", "x", "_", ".", " ", "\n", "-", "é", "━", "🚀", "ı"]
)
DIGITS_AND_WORDS = st.sampled_from(
    ["cuda", "out", "of", "1", "12", "0", "9", "sm_80", " ", "\n", ".", "é", "🚀", "ı"]
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(WORDS, max_size=300).map("".join),
    st.lists(st.lists(WORDS, min_size=1, max_size=5).map("".join), min_size=1, max_size=6),
)
def test_locate_finds_what_a_plain_search_finds(text: str, needles: list[str]) -> None:
    """Rule: for any text and needles, the chunked, word-gated search on UTF-8 bytes returns the
    character offsets a plain left-to-right search returns (up to the cap)."""
    from gpuenv.explain import needles as module

    lower = text.lower()
    original = module.CHUNK
    module.CHUNK = 16  # many chunks, lines cut between them
    try:
        found = locate(lower, [compile_needle(n) for n in needles])
    finally:
        module.CHUNK = original
    for needle in needles:
        if "\n" not in needle:  # a needle across lines is searched whole; chunks end at lines
            assert found[needle] == _plain_offsets(lower, needle)[: module.MAX_HITS], needle


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(WORDS.filter(lambda w: w != "\n"), max_size=12).map("".join),
        min_size=1,
        max_size=5,
    ),
    st.lists(st.integers(min_value=0, max_value=4), min_size=10, max_size=80),
    st.lists(st.lists(WORDS, min_size=1, max_size=4).map("".join), min_size=1, max_size=6),
)
def test_a_repetitive_log_is_searched_line_by_line_with_the_same_offsets(
    pool: list[str], order: list[int], needles: list[str]
) -> None:
    """Rule: when most lines repeat, each distinct line is searched once and its hits copied to
    every place the line is; the offsets are those of a plain left-to-right search, capped the
    same way (the first MAX_HITS, then the last TAIL_HITS after them)."""
    lines = [pool[i % len(pool)] for i in order]
    if len(set(lines)) * 2 > len(lines):
        lines = lines + lines  # every line repeated at least once
    _same_offsets_as_a_plain_search("\n".join(lines).lower(), needles)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(DIGITS_AND_WORDS.filter(lambda w: w != "\n"), max_size=10).map("".join),
        min_size=1,
        max_size=4,
    ),
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=3), st.integers(10**5, 10**6 - 1)),
        min_size=10,
        max_size=80,
    ),
    st.lists(
        st.lists(DIGITS_AND_WORDS, min_size=1, max_size=4).map("".join), min_size=1, max_size=6
    ),
    st.booleans(),
)
@example(["cuda"], [(0, 100000 + n) for n in range(20)], ["1", "cuda 1"], True)  # exact repeats
# the masked needle ("00") is first at column 0 of the kind; the needle itself at 4 or 3
@example(["cuda"], [(0, 100011), (0, 100110), (1, 200011)] * 5, ["11", "cuda 1"], False)
def test_a_log_repeating_but_for_its_numbers_is_searched_by_kind_with_the_same_offsets(
    pool: list[str], order: list[tuple[int, int]], needles: list[str], few_numbers: bool
) -> None:
    """Rule: lines that differ only in their digits (a timestamp, a step) are one kind; a needle
    without digits is searched in one line of each kind; one with digits, its digits masked, is
    looked for in one line of each kind and searched in the lines of the kinds that hold it (or
    in the whole text, past CHECK_LINES lines); the offsets are those of a plain left-to-right
    search, capped the same way."""
    # six-digit numbers: the lines are of at most four kinds, so the log repeats; with few
    # numbers the lines repeat exactly too (a needle with digits is then searched by line)
    lines = [
        f"{100000 + number % 3 if few_numbers else number} {pool[i % len(pool)]} {number % 3}"
        for i, number in order
    ]
    _same_offsets_as_a_plain_search("\n".join(lines).lower(), needles)


def test_lines_that_differ_in_their_digits_are_one_kind() -> None:
    from gpuenv.explain import needles as module

    saved = module.REPEAT_MIN_LINES
    module.REPEAT_MIN_LINES = 2
    try:
        numbered = "\n".join(
            f"2024-01-0{n % 9 + 1} step {n * 37}: cuda out of memory" for n in range(9)
        )
        kinds = module._repetitive(numbered.lower())
        assert kinds is not None and len(kinds) == 9
        assert len(set(kinds)) == 3  # steps of one digit (0), two (37, 74), three (111 …)
        words = "\n".join(f"step {w}: cuda out of memory" for w in "abcdefghi")
        assert module._repetitive(words) is None  # letters make lines of different kinds
    finally:
        module.REPEAT_MIN_LINES = saved


def _plain_offsets(lower: str, needle: str) -> list[int]:
    """Every occurrence of a needle, left to right, none overlapping the one before."""
    expected, at = [], lower.find(needle)
    while at >= 0:
        expected.append(at)
        at = lower.find(needle, at + len(needle))
    return expected


def _same_offsets_as_a_plain_search(lower: str, needles: list[str]) -> None:
    """The text is searched as repetitive, with small chunks and caps, and every needle's
    offsets are a plain left-to-right search's, capped the same way."""
    from gpuenv.explain import needles as module

    saved = (
        module.CHUNK,
        module.REPEAT_MIN_LINES,
        module.MAX_HITS,
        module.TAIL_HITS,
        module.CHECK_LINES,
    )
    module.CHUNK, module.REPEAT_MIN_LINES, module.MAX_HITS, module.TAIL_HITS = 16, 2, 7, 3
    try:
        assert module._repetitive(lower) is not None
        for check_lines in (saved[-1], 0):  # by kind, and every needle with digits in the whole
            module.CHECK_LINES = check_lines
            found = locate(lower, [compile_needle(n) for n in needles])
            for needle in needles:
                head = _plain_offsets(lower, needle)[: module.MAX_HITS]
                if len(head) >= module.MAX_HITS:
                    head += module._last(lower, needle, head[-1])
                if "\n" not in needle:
                    assert found[needle] == head, (needle, check_lines)
    finally:
        (
            module.CHUNK,
            module.REPEAT_MIN_LINES,
            module.MAX_HITS,
            module.TAIL_HITS,
            module.CHECK_LINES,
        ) = saved


def test_evidence_of_a_long_line_cuts_no_word_in_two() -> None:
    """Rule: the evidence of a long line is the message and up to 80 characters either side,
    cut at spaces: every word shown is a whole word of the line."""
    message = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    words = [f"w{n}{'x' * (n % 7)}" for n in range(60)]
    line = " ".join(words[:30]) + " " + message + " " + " ".join(words[30:])
    [evidence] = explain_text(line, KB).evidence
    assert message in evidence.text and len(evidence.text) <= len(message) + 160
    assert set(evidence.text.split()) <= set(line.split())
    assert evidence.text.split()[0] != message.split()[0]  # some context is kept


def test_needle_words() -> None:
    needle = compile_needle("cuda out of memory")
    assert (needle.words, needle.parts) == ((b"out", b"of"), (b"cuda", b"memory"))
    assert compile_needle("cpuonly").parts == (b"cpuonly",)
    assert compile_needle("--").anywhere


# -- the text clean-up ---------------------------------------------------------------------------


def test_quotes_fences_and_inline_code_go() -> None:
    text = "> > quoted line\n```python\nimport torch\n```\nrun `nvidia-smi`\n`cmd` here\n"
    assert plain(text) == "quoted line\n\nimport torch\n\nrun `nvidia-smi\ncmd` here\n"
    assert plain("```\nfirst") == "\nfirst"
    assert plain("no marks at all") == "no marks at all"


def test_line_starts_and_offsets() -> None:
    prepared = prepare("a\r\nbb\rccc\n\nd")
    assert prepared.lines == ("a", "bb", "ccc", "", "d")
    assert prepared.starts == (0, 2, 5, 9, 10)
    assert [prepared.line_of(i) for i in (0, 2, 6, 9, 10)] == [0, 1, 2, 3, 4]


def test_a_long_text_is_lower_cased_a_piece_at_a_time_with_offsets_kept() -> None:
    """Rule: a text longer than one lower-casing piece, with characters beyond ASCII (one that
    lower-cases to two), has a lower-case copy of its own length, equal to str.lower() wherever
    no character grows, and its needles are found at the same offsets in both."""
    from gpuenv.explain import text as module

    line = "Step ━━ 🚀 CUDA Error: OUT OF MEMORY É\n"
    body = line * (module._LOWER_PIECE // len(line) + 50)
    prepared = prepare(body)
    assert prepared.lower == body.lower()
    grown = prepare(body + "İ").lower  # "İ" lower-cases to two: ASCII letters only, then
    assert len(grown) == len(body) + 1 and grown.startswith("step ━━ 🚀 cuda error: out of")
    found = locate(prepared.lower, [compile_needle("cuda error: out of memory")])
    at = line.lower().index("cuda error")
    assert found["cuda error: out of memory"][:2] == [at, at + len(line)]


_OLD_QUOTE = re.compile(r"\n[ \t]{0,3}(?:>[ \t]?)+")
_OLD_TICKS_START = re.compile(r"\n[ \t]*`{1,3}(?:[A-Za-z0-9_+-]{1,20}[ \t]*(?=\n|$))?")
_OLD_TICKS_END = re.compile(r"`{1,3}[ \t]*(?=\n|$)")


def _whole_text_unmark(text: str) -> str:
    """The clean-up of quote marks and backticks as whole-text substitutions (what plain() did
    before it looked only at the lines that hold them)."""
    text = _OLD_QUOTE.sub("\n", "\n" + text)
    return _OLD_TICKS_END.sub("", _OLD_TICKS_START.sub("\n", text))[1:]


@given(st.lists(st.sampled_from(["> ", ">", " ", "\t", "`", "```", "py", "x", "a>b", "\n"])))
def test_line_wise_unmarking_is_the_whole_text_substitution(parts: list[str]) -> None:
    text = "".join(parts)
    assert plain(text) == _whole_text_unmark(text)


def test_tensorflow_diagnostics_name_a_mismatch_only_when_the_versions_differ() -> None:
    def cause(libcuda: str, kernel: str) -> str | None:
        text = (
            "E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to cuInit: "
            "CUDA_ERROR_NO_DEVICE\n"
            f"I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:189] libcuda reported "
            f"version is: {libcuda}\n"
            f"I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:193] kernel reported "
            f"version is: {kernel}\n"
        )
        return explain_text(text, KB).cause

    assert cause("375.66.0", "384.130.0") == "driver_module_mismatch"
    assert cause("384.130.0", "384.130") != "driver_module_mismatch"  # one version, two spellings


def test_uv_taking_another_package_from_the_pytorch_index_outvotes_its_platform_line() -> None:
    """uv's "no wheel for the current platform" names the index the package came from: another
    package than PyTorch's own from the PyTorch index is the index order, and only that votes."""
    text = (
        "error: Distribution `markupsafe==3.0.2 @ registry+https://download.pytorch.org/whl/"
        "cu126` can't be installed because it doesn't have a source distribution or wheel for "
        "the current platform"
    )
    explanation = explain_text(text, KB)
    assert explanation.cause == "solver_conflict"
    assert "wrong_platform_wheel" not in {a.cause for a in explanation.alternatives}
    own = explain_text(text.replace("markupsafe==3.0.2", "torch==2.6.0+cu126"), KB)
    assert own.cause == "wrong_platform_wheel"


@pytest.mark.parametrize(
    ("line", "windows"),
    [
        ("D:/Users/x/python.exe D:/Users/x/main.py", True),
        ("Obtaining file:///C:/Users/ab/Desktop/kernl", True),
        ("C:\\Users\\ab\\lib\\site-packages\\torch\\cuda\\__init__.py", True),
        ("File /Users/bob/miniforge3/lib/python3.11/site-packages/torch/__init__.py", False),
        ("curl http://a:/Users/b/ and scp host:/Users/a/", False),
    ],
)
def test_windows_paths_are_read_with_either_slash(line: str, windows: bool) -> None:
    read = {f.value for f in explain_text(line, KB).facts if f.name == "os"}
    assert ("windows" in read) is windows


TORCH_UNKNOWN = (
    "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly "
    "set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start."
)
CUDA_OOM = "RuntimeError: CUDA error: out of memory"


@pytest.mark.parametrize(
    ("setting", "message", "cause", "fix_names"),
    [
        # cuInit's unknown error after a suspend and resume: nvidia_uvm did not come back
        ("it fails after the machine suspended to standby", TORCH_UNKNOWN, "other", "nvidia_uvm"),
        (
            "the laptop was suspended and resumed, then every program failed",
            TORCH_UNKNOWN,
            "other",
            "nvidia_uvm",
        ),
        # after a driver update it is the module; a word 'suspend' in another sense says nothing
        (
            "a new driver was installed without a reboot",
            TORCH_UNKNOWN,
            "driver_module_mismatch",
            None,
        ),
        ("", TORCH_UNKNOWN, "driver_module_mismatch", None),  # the message alone: weak, a cause
        (
            "the suspend button on the UI pauses the job",
            TORCH_UNKNOWN,
            "driver_module_mismatch",
            None,
        ),
        # out of memory under WSL2: WSL's pinned-memory and VM limits
        (
            "Training under WSL2 on Windows 11, pin_memory=True",
            CUDA_OOM,
            "other",
            "pin_memory=False",
        ),
        ("Ubuntu 22.04 on bare metal", CUDA_OOM, "out_of_memory", None),
        ("", CUDA_OOM, "out_of_memory", None),
    ],
)
def test_a_setting_that_renames_the_message_names_its_fix(
    setting: str, message: str, cause: str, fix_names: str | None
) -> None:
    """The setting a message is said in decides what it means, and the fix follows the setting
    (the nvidia_uvm reload after a suspend, pin_memory=False under WSL2)."""
    explanation = explain_text(f"{setting}\n{message}", KB)
    assert explanation.cause == cause
    if fix_names is not None:
        assert explanation.fix is not None
        assert fix_names in explanation.fix.summary


@pytest.mark.parametrize(
    ("setting", "cause"),
    [
        ("CUDA 11.3 installed under /usr/local/cuda-11.3\n  Compiler: /usr/bin/nvcc", "mixed"),
        ("CUDA toolkit 12.4\nerror: command '/usr/bin/nvcc' failed with exit status 1", "mixed"),
        ("  Compiler: /usr/bin/nvcc", "arch"),  # no other toolkit named
        ("CUDA 11.3 installed under /usr/local/cuda-11.3", "arch"),  # the nvcc is not said
    ],
)
def test_the_distribution_nvcc_beside_another_toolkit_is_two_toolkits(
    setting: str, cause: str
) -> None:
    text = f"{setting}\nptxas fatal   : Value 'sm_30' is not defined for option 'gpu-name'"
    want = {"mixed": "multiple_cuda_conflict", "arch": "gpu_arch_unsupported"}[cause]
    assert explain_text(text, KB).cause == want


@pytest.mark.parametrize(
    ("setting", "cause"),
    [
        ("import torch\nimport tensorrt as trt", "multiple_cuda_conflict"),
        ("PyTorch 1.2 imported in the same process", "multiple_cuda_conflict"),
        ("TensorRT 8.6, CUDA 12.2, cuDNN 8.8", "cudnn_mismatch"),
    ],
)
def test_tensorrt_loading_an_older_cudnn_beside_torch_is_torchs_copy(
    setting: str, cause: str
) -> None:
    text = f"{setting}\n[TRT] TensorRT was linked against cuDNN 8.9.0 but loaded cuDNN 8.8.0"
    assert explain_text(text, KB).cause == cause


@pytest.mark.parametrize(
    ("prose", "gpus", "driver"),
    [
        ("RTX 3090 GPUs, NVIDIA driver 470.141.03, CUDA 11.7", {"RTX 3090"}, "470.141.03"),
        (
            "Single RTX 3090 (a GTX 1080 also in the box), host driver 580.159.03",
            {"RTX 3090"},
            "580.159.03",
        ),
        ("Tesla K80, CUDA 10.0.130, cuDNN 7.5.0", {"Tesla K80"}, None),
        ("8x A100-SXM4-40GB, driver version: 535.104.05", {"A100-SXM4-40GB"}, "535.104.05"),
        (
            "NVIDIA GeForce RTX 4090 Laptop GPU on Windows 11",
            {"NVIDIA GeForce RTX 4090 Laptop GPU"},
            None,
        ),
        ("Error: CUDA driver 8.0.0 is not compatible", set(), None),  # a CUDA version, not a driver
        ("an A4 sheet and a T4 tag, RTX3090x", set(), None),  # no GPU named
    ],
)
def test_gpus_and_drivers_named_in_prose_are_facts(
    prose: str, gpus: set[str], driver: str | None
) -> None:
    """GPU models and driver versions in the reporter's words feed the snapshot the doctor's
    rules run on (the first GPU a line names)."""
    facts = explain_text(prose, KB).facts
    assert {f.value for f in facts if f.name == "gpu"} == gpus
    assert next((f.value for f in facts if f.name == "driver_version"), None) == driver


def test_a_driver_named_in_prose_makes_the_fix_name_the_driver_needed() -> None:
    """The doctor's rule runs on the prose's driver and the build the log names: the fix says
    which driver that CUDA needs."""
    explanation = explain_text(
        "GeForce GTX 1080 Ti, NVIDIA driver 390.144, torch 1.10.0+cu113 from pip\n"
        "RuntimeError: The NVIDIA driver on your system is too old (found version 9010).",
        KB,
    )
    assert explanation.cause == "driver_too_old"
    assert explanation.fix is not None
    assert "450.80.02" in explanation.fix.summary


def test_a_pinned_cuda_build_beside_an_older_driver_is_the_driver() -> None:
    """A pin with a CUDA label ("torch==2.11.0+cu130.", a sentence's full stop after it) names
    torch's CUDA; beside a driver too old for it, is_available() False is the driver."""
    explanation = explain_text(
        "AWS image with NVIDIA driver 535.216.01; uv resolves torch==2.11.0+cu130.\n"
        "`torch.cuda.is_available()` returns `False`",
        KB,
    )
    facts = {(f.name, f.value) for f in explanation.facts}
    assert {("torch_version", "2.11.0+cu130"), ("torch_cuda", "13.0")} <= facts
    assert explanation.cause == "driver_too_old"
    # a longer version (a fourth part, a nightly's .dev) is not cut to a shorter one
    for longer in ("torch 2.1.0.1 installed", "[pip3] torch==1.7.0.dev20200803"):
        assert not [f for f in explain_text(longer, KB).facts if f.name == "torch_version"]


TORCH_OLD_DRIVER_91 = (
    "RuntimeError: The NVIDIA driver on your system is too old (found version 9010)."
)
INSUFFICIENT = "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime"


@pytest.mark.parametrize(
    ("setting", "message", "cause"),
    [
        # a Fermi GPU (its architecture said in words) whose driver reports R390's CUDA 9.1
        (
            "laptop with GeForce GT 540M (Fermi) on the legacy 390 driver",
            TORCH_OLD_DRIVER_91,
            "gpu_arch_unsupported",
        ),
        # a Kepler GPU on R470, the last branch for Kepler
        ("GeForce GT 640 (Kepler) on driver 470.256", INSUFFICIENT, "gpu_arch_unsupported"),
        # a model the knowledge base knows (GTX 680: 3.0, Kepler), no architecture in words
        ("GeForce GTX 680, NVIDIA driver 470.199.02", INSUFFICIENT, "gpu_arch_unsupported"),
        # a Kepler GPU whose driver is older than R470: a newer driver still exists for it
        ("Tesla K80, NVIDIA driver 418.87.00", INSUFFICIENT, "driver_too_old"),
        # a current GPU on R470 can take any newer driver
        ("RTX 3090, NVIDIA driver 470.141.03", INSUFFICIENT, "driver_too_old"),
        # a Kepler named beside a current GPU: the machine can take a newer driver
        (
            "GTX 680 for the display\nRTX 3090 for compute, NVIDIA driver 470.199.02",
            INSUFFICIENT,
            "driver_too_old",
        ),
        # the architecture in words without a driver: not judged
        ("an old Kepler card", INSUFFICIENT, "driver_too_old"),
    ],
)
def test_driver_too_old_on_a_gpu_at_its_last_driver_is_the_gpu(
    setting: str, message: str, cause: str
) -> None:
    """A driver-too-old message on a GPU that already has its architecture's last driver branch
    (archs.toml: Fermi R390, Kepler R470) asks for a driver it cannot get, so the GPU is too old
    for the build; the fix then offers no driver upgrade."""
    explanation = explain_text(f"{setting}\n{message}", KB)
    assert explanation.cause == cause
    if cause == "gpu_arch_unsupported":
        assert explanation.fix is not None
        assert "No newer driver exists for this GPU" in explanation.fix.summary
        assert "upgrade the driver" not in explanation.fix.summary


TORCH_TO_222 = (
    "1.11.0, 1.12.0, 1.12.1, 1.13.0, 1.13.1, 2.0.0, 2.0.1, 2.1.0, 2.1.1, 2.1.2, 2.2.0, 2.2.1, 2.2.2"
)


def _not_found(requirement: str, versions: str) -> str:
    name = re.split(r"[=<>~!]", requirement)[0]
    return (
        f"ERROR: Could not find a version that satisfies the requirement {requirement} "
        f"(from {name}-app) (from versions: {versions})\n"
        f"ERROR: No matching distribution found for {requirement}"
    )


@pytest.mark.parametrize(
    ("setting", "requirement", "versions", "platform"),
    [
        # torch's list stops at 2.2.2, its last release for Intel Macs, though 2.4.1 exists
        ("", "torch==2.4.1", TORCH_TO_222, "macos-x86_64"),
        # the same for a range of releases asked for
        ("", "torch~=2.3", TORCH_TO_222, "macos-x86_64"),
        # 2.3.0 is missing from the list, which Linux, Windows and Apple-silicon Macs would show
        ("", "torch==2.3.0", TORCH_TO_222, "macos-x86_64"),
        # a list every platform shows for Python 3.10, and a pin that lacks 3.10: not judged
        ("", "torch==1.9.0", TORCH_TO_222, None),
        # the text names a Linux: the list fits no Linux machine, so it says nothing
        ("Ubuntu 22.04", "torch==2.4.1", TORCH_TO_222, None),
        # the text says a Mac, not which: the list says an Intel one
        ("macOS Sonoma", "torch==2.4.1", TORCH_TO_222, "macos-x86_64"),
        # a list of PyTorch's local builds comes from another index: not read
        ("", "torch==2.4.1", "2.2.0+cu118, 2.2.1+cu118, 2.2.2+cu118", None),
        # a list that begins above an older pin is the Python, and fits every platform
        ("", "torch==1.13.1", "2.0.0, 2.0.1, 2.1.0, 2.1.1, 2.1.2, 2.2.0, 2.2.1, 2.2.2", None),
    ],
)
def test_the_releases_pip_lists_name_the_platform_the_text_does_not(
    setting: str, requirement: str, versions: str, platform: str | None
) -> None:
    """pip lists the releases the index has for its machine; where those are what wheels.toml
    has for some platforms only, and the release asked for has no file for any of them, that is
    the platform: the cause, and a fix naming the platform and its last release."""
    explanation = explain_text(f"{setting}\n{_not_found(requirement, versions)}", KB)
    judged = any(e.rule == "release-has-no-wheel-for-this-platform" for e in explanation.evidence)
    assert judged == (platform is not None)
    if platform is None:
        return
    assert explanation.cause == "wrong_platform_wheel"
    assert explanation.fix is not None
    assert f"the index has for {platform}, so this machine is that" in explanation.fix.summary
    assert "torch 2.2.2 is the last release for it" in explanation.fix.summary
    assert explanation.fix.commands == ("python -m pip install torch==2.2.2",)


@pytest.mark.parametrize(
    ("setting", "container"),
    [
        ("Ubuntu 22.04, running in Docker", True),
        ("Ubuntu 22.04 inside a container", True),
        ("CentOS 7, conda env, not in Docker", False),
        ("bare metal, not running in a container", False),
        ("Ubuntu 22.04 without Docker", False),
    ],
)
def test_a_container_said_not_to_be_there_is_not_a_container(setting: str, container: bool) -> None:
    """A driver-too-old message in a container is the image's CUDA; "not in Docker" is no
    container, so it stays the driver."""
    message = "RuntimeError: The NVIDIA driver on your system is too old (found version 11060)."
    explanation = explain_text(f"{setting}\n{message}", KB)
    assert any(f.name == "container" for f in explanation.facts) == container
    assert explanation.cause == ("container_driver_mismatch" if container else "driver_too_old")


@pytest.mark.parametrize(
    ("setting", "container", "torch"),
    [
        ("RunPod pod from the image runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404", True, None),
        ("docker image pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime", True, "2.1.0"),
        ("image vllm/vllm-openai:cu130-nightly on the host", True, None),
        ("pip install torch --index-url https://download.pytorch.org/whl/cu121", False, None),
    ],
)
def test_an_image_whose_tag_names_cuda_is_a_container(
    setting: str, container: bool, torch: str | None
) -> None:
    """An image reference whose tag names a CUDA build says the program ran in a container; its
    tag is the torch version only in PyTorch's own images."""
    message = "RuntimeError: The NVIDIA driver on your system is too old (found version 12040)."
    explanation = explain_text(f"{setting}\n{message}", KB)
    assert any(f.name == "container" for f in explanation.facts) == container
    assert [f.value for f in explanation.facts if f.name == "torch_version"] == (
        [torch] if torch else []
    )
    assert explanation.cause == ("container_driver_mismatch" if container else "driver_too_old")


@pytest.mark.parametrize(
    ("message", "cause"),
    [
        # nvcuda.dll is the driver's own library on Windows, as libcuda.so.1 is on Linux
        ("[h264_nvenc @ 000001f8d00602c0] Cannot load nvcuda.dll", "no_driver"),
        ("OSError: could not load library nvcuda.dll", "no_driver"),
        # a DLL of the toolkit is the toolkit's
        ("System error - cudart64_12.dll not found", "missing_cuda_lib"),
        # a hipError is the ROCm runtime's
        ("      error: 'hipErrorInvalidDevice'(1010) at square.cpp:60", "mps_or_rocm_specific"),
        # a TensorRT engine built by another TensorRT than the one loading it
        (
            "Error Code 1: Serialization (Serialization assertion stdVersionRead == "
            "serializationVersion failed.Version tag does not match. Note: Current Version: 232, "
            "Serialized Engine Version: 237)",
            "multiple_cuda_conflict",
        ),
        # an onnxruntime without the CUDA provider is a CPU build
        ("CUDA execution provider is not enabled in this build.", "cpu_only_build"),
        ("[Bug]: name 'ncclGetVersion' is not defined", "nccl_issue"),
        # a cuDNN identifier the headers lack: code for another cuDNN major
        (
            "cudnn.cpp:42: error: 'CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD' was not declared in "
            "this scope",
            "cudnn_mismatch",
        ),
        # the toolkit's libraries on the link path, not the driver's
        ("/usr/bin/ld: cannot find -lcublas", "missing_cuda_lib"),
        ("CUDA_ERROR_STUB_LIBRARY: the stub libcuda was linked", "multiple_cuda_conflict"),
        ("OPTIX_ERROR_UNSUPPORTED_ABI_VERSION: Optix call 'optixInit()' failed", "driver_too_old"),
        ("Unable to load library: libnvinfer_plugin.so.10", "missing_cuda_lib"),
        ("Nvml init failed: ERROR_LIBRARY_NOT_FOUND", "no_driver"),
        (
            'projection.cu(1): error: namespace "cooperative_groups" has no member '
            '"labeled_partition"',
            "gpu_arch_unsupported",
        ),
        ("error: need at least compute capability 7.5", "gpu_arch_unsupported"),
        (
            "ImportError: DLL load failed while importing flash_attn_2_cuda: 找不到指定的程序。",
            "extension_build_mismatch",
        ),
        (
            "default argument 'x: tv::Tensor' into a Python object (type not registered yet?)",
            "extension_build_mismatch",
        ),
        # a resolver's own verdict: pins that exclude each other, unless the Python range does
        (
            "So, because app depends on both numpy (>=2) and oldlib (1.0), version solving failed.",
            "solver_conflict",
        ),
        (
            "- tts requires Python >=3.9.0, <3.12, so it will not be satisfied for Python "
            ">=3.12,<3.13\nBecause app depends on tts (0.22.0) which requires Python >=3.9.0, "
            "<3.12, version solving failed.",
            "python_version_unsupported",
        ),
        (
            "warning libmamba Problem type not implemented SOLVER_RULE_STRICT_REPO_PRIORITY",
            "solver_conflict",
        ),
        # Python 3.11's dataclasses refuse what an older package (fairseq 0.12.2) declares
        (
            "ValueError: mutable default <class 'fairseq.dataclass.configs.CommonConfig'> for "
            "field common is not allowed: use default_factory",
            "python_version_unsupported",
        ),
        (
            "AttributeError: module 'torch._C' has no attribute '_cuda_getDeviceCount'",
            "cpu_only_build",
        ),
        # CUDA 10.0's launch calls: an extension older than the runtime, not two CUDAs
        ("op.so: undefined symbol: cudaSetupArgument", "extension_build_mismatch"),
        ("op.so: undefined symbol: cudaGraphInstantiate", "multiple_cuda_conflict"),
        ("NCCL WARN socketFinalizeAccept: wrong type 3 != 4", "nccl_issue"),
        (
            "ERROR: Device capability v2.1.0 not supported by available toolchain",
            "gpu_arch_unsupported",
        ),
        (
            "RuntimeError: Attempting to use hipBLASLt on a unsupported architecture!",
            "mps_or_rocm_specific",
        ),
        ("ncclCommInitRank failed: unhandled system error", "nccl_issue"),
        ("NPP_MEMORY_ALLOCATION_ERR: Device allocation error", "out_of_memory"),
        (
            "luajit: symbol lookup error: libTHCUNN.so: undefined symbol: THCudaTensor_data",
            "extension_build_mismatch",
        ),
        (
            "NotImplementedError: Could not run ‘aten::add.out’ with arguments from the "
            "‘SparseMPS’ backend.",
            "mps_or_rocm_specific",
        ),
        # the same families in other spellings: NVML's enum name, MSVC's and clang's wording,
        # TensorRT on Windows, gold's linker, a static library, Japanese Windows
        ("NVML_ERROR_LIBRARY_NOT_FOUND", "no_driver"),
        (
            "yolo.c(12): error C2065: 'CUDNN_ACTIVATION_IDENTITY': undeclared identifier",
            "cudnn_mismatch",
        ),
        (
            "conv.cpp:7:5: error: use of undeclared identifier "
            "'cudnnGetConvolutionForwardAlgorithm'",
            "cudnn_mismatch",
        ),
        ("[TRT] Unable to load library: nvinfer_builder_resource_10.dll", "missing_cuda_lib"),
        ("ld.gold: error: cannot find -lcudart", "missing_cuda_lib"),
        ("/usr/bin/ld: cannot find -lcudart_static", "missing_cuda_lib"),
        (
            "ImportError: DLL load failed while importing _ext: "
            "指定されたプロシージャが見つかりません。",
            "extension_build_mismatch",
        ),
        (
            "terminate called after throwing an instance of 'c10::DynamicLibraryError'",
            "missing_cuda_lib",
        ),
        # old torch's THC check, cudaErrorMemoryAllocation (2)
        (
            "THCudaCheck FAIL file=/pytorch/torch/lib/THC/generic/THCStorage.cu line=58 error=2 :"
            " out of memory",
            "out_of_memory",
        ),
        # building ops without the toolkit: DeepSpeed's CUDA_HOME, any toolkit header, gcc or MSVC
        ("CUDA_HOME does not exist, unable to compile CUDA op(s)", "missing_cuda_lib"),
        (
            "src/ops.cu:3:10: fatal error: cublas_v2.h: No such file or directory",
            "missing_cuda_lib",
        ),
        (
            "ops.cu(2): fatal error C1083: Cannot open include file: 'curand_kernel.h': No such"
            " file or directory",
            "missing_cuda_lib",
        ),
        # Lightning's accelerator check is torch.cuda.is_available()
        (
            "lightning_fabric.utilities.exceptions.MisconfigurationException: CUDAAccelerator can"
            " not run on your system since the accelerator is not available.",
            "cpu_only_build",
        ),
        # macOS's loader, in its older and newer words, either architecture
        (
            "dlopen(/x/site-packages/torch/_C.so, 2): no suitable image found.  Did find:\n"
            "\t/x/site-packages/torch/_C.so: mach-o, but wrong architecture",
            "wrong_platform_wheel",
        ),
        (
            "ImportError: dlopen(/opt/homebrew/lib/python3.12/site-packages/a/_b.so, 0x0002):"
            " tried: '/opt/homebrew/lib/python3.12/site-packages/a/_b.so' (mach-o file, but is an"
            " incompatible architecture (have 'arm64', need 'x86_64'))",
            "wrong_platform_wheel",
        ),
        (
            "The currently activated Python version 3.13.1 is not supported by the project"
            " (^3.9,<3.13).",
            "python_version_unsupported",
        ),
        (
            "ImportError: DLL load failed while importing _C: The specified program could not be"
            " found.",
            "extension_build_mismatch",
        ),
        # TensorFlow 1.13 to 2.0's Windows self-check, any CUDA library's DLL
        (
            "ImportError: Could not find 'cublas64_100.dll'. TensorFlow requires that this DLL be"
            " installed in a directory that is named in your %PATH% environment variable.",
            "missing_cuda_lib",
        ),
        # Lua Torch's wording of cudaErrorMemoryAllocation; the message as a title quotes it
        (
            "/usr/local/share/lua/5.1/nn/THNN.lua:110: cuda runtime error (2) : out of memory at"
            " /tmp/luarocks_cutorch-scm-1-1606/cutorch/lib/THC/generic/THCStorage.cu:66",
            "out_of_memory",
        ),
        ("Building the ops fails: no kernel image is available", "gpu_arch_unsupported"),
        # a message glued to Chinese or Japanese text keeps its word boundaries
        ("前面的流程都很顺畅，结果在检验的时候报错cudnn64_7.dll not found。", "missing_cuda_lib"),
    ],
)
def test_a_message_family_names_its_cause(message: str, cause: str) -> None:
    """A library named in a message says whose it is; a build, load or resolver message says
    what failed."""
    assert explain_text(message, KB).cause == cause


@pytest.mark.parametrize(
    ("message", "cause"),
    [
        # list, dict and set defaults were refused on every Python: the code's bug, not 3.11
        (
            "ValueError: mutable default <class 'list'> for field x is not allowed: "
            "use default_factory",
            "python_version_unsupported",
        ),
        # OptiX's library missing is not a driver too old for the SDK
        (
            "Optix call 'optixInit()' failed with error OPTIX_ERROR_LIBRARY_NOT_FOUND",
            "driver_too_old",
        ),
    ],
)
def test_a_family_does_not_take_its_neighbours_case(message: str, cause: str) -> None:
    assert explain_text(message, KB).cause != cause


@pytest.mark.parametrize(
    ("gpus", "judged"),
    [
        ("Device 0: Tesla K80, compute capability 3.7", True),
        ("GeForce GTX 780 (Kepler)", True),
        ("GeForce GTX 1080", False),  # Pascal: CUDA 12 builds still have its kernels
        ("GPU 0: Tesla K80\nGPU 1: NVIDIA GeForce RTX 3090", False),  # one current GPU
        ("no GPU named at all", False),
    ],
)
def test_the_gpu_not_used_on_a_gpu_before_maxwell(gpus: str, judged: bool) -> None:
    """'The GPU is not used', in words, is most often a CPU-only build; with every GPU named of
    an architecture no current build has kernels for (Kepler, Fermi) it is the architecture."""
    explanation = explain_text(f"{gpus}\nI found that Ollama doesn't use the GPU at all.", KB)
    rule = "gpu-not-used-on-a-gpu-before-maxwell"
    assert any(e.rule == rule for e in explanation.evidence) is judged
    assert explanation.cause == ("gpu_arch_unsupported" if judged else "cpu_only_build")


@pytest.mark.parametrize(
    ("cpu", "judged"),
    [
        ("Intel Celeron N4500 @ 1.10GHz", True),
        ("Intel(R) Pentium(R) Silver N5000 CPU @ 1.10GHz", True),
        ("Intel Atom x5-Z8350", True),
        ("Intel Core 2 Duo E8400", True),
        ("Intel Celeron 6305", False),  # Tiger Lake: AVX2
        ("Intel Pentium Gold 7505", False),
        ("Intel Core i7-4770", False),
    ],
)
def test_a_dll_that_fails_to_initialise_on_a_cpu_without_avx(cpu: str, judged: bool) -> None:
    explanation = explain_text(f"Windows 11 on an {cpu}\nDLL initialization routine failed", KB)
    assert any(f.name == "cpu_without_avx" for f in explanation.facts) is judged
    assert explanation.cause == ("other" if judged else "windows_dll")


@pytest.mark.parametrize(
    ("setting", "kernel", "dso", "cause"),
    [
        # a newer branch's libcuda in a container: the image's CUDA compat over an older host
        (
            "docker run --gpus all tensorflow/tensorflow:2.5.0-gpu",
            "455.32.0",
            "460.73.1",
            "container",
        ),
        # the kernel module's own branch: driver libraries of another build baked into the image
        ("inside a CentOS 8 Docker container", "440.36.0", "440.33.1", "module"),
        ("inside a Docker container", "470.82.0", "450.80.2", "module"),  # an older build too
        ("Ubuntu 22.04 host, no container", "535.104.5", "535.129.3", "module"),
    ],
)
def test_a_libcuda_of_another_version_in_a_container(
    setting: str, kernel: str, dso: str, cause: str
) -> None:
    text = (
        f"{setting}\nE tensorflow/stream_executor/cuda/cuda_diagnostics.cc:313] kernel version "
        f"{kernel} does not match DSO version {dso} -- cannot find working devices in this "
        "configuration"
    )
    expected = {"container": "container_driver_mismatch", "module": "driver_module_mismatch"}
    assert explain_text(text, KB).cause == expected[cause]
