"""The target-environment probe: the in-interpreter script and the facts built from its output.

Unit tests run the script's collection in-process on fake site-packages trees built in tmp_path;
`real` tests run it in other interpreters of this machine and in a venv with the CPU torch wheel.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from gpuenv.facts import FrameworkBuild
from gpuenv.probe import _target
from gpuenv.probe.access import SCRIPT_MARKER, LiveMachine, RecordedMachine
from gpuenv.probe.target import (
    TargetProbe,
    default_interpreter,
    parse_target_output,
    probe_python_env,
    script_text,
)

PYTHON36 = Path("/root/.pyenv/versions/3.6.15/bin/python3.6")
PYTHON38 = Path("/root/.pyenv/versions/3.8.18/bin/python3.8")
PYTHON27 = Path("/root/.pyenv/versions/2.7.18/bin/python2.7")

LINUX_X86 = '; platform_system == "Linux" and platform_machine == "x86_64"'
CU12_PINS = (
    "nvidia-cuda-runtime-cu12==12.4.127" + LINUX_X86,
    "nvidia-cudnn-cu12==9.1.0.70" + LINUX_X86,
    "nvidia-cublas-cu12==12.4.5.8" + LINUX_X86,
)


# ------------------------------------------------------------------ fake site-packages


def write(site: Path, relative: str, content: str | bytes = b"") -> Path:
    path = site / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def dist(
    site: Path,
    name: str,
    version: str,
    requires: tuple[str, ...] = (),
    top_level: tuple[str, ...] = (),
    installer: str = "pip",
    folder: str | None = None,
) -> Path:
    folder = folder or f"{name.replace('-', '_')}-{version}.dist-info"
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    write(site, f"{folder}/METADATA", "\n".join(lines) + "\n\nLong description\n")
    write(site, f"{folder}/INSTALLER", installer + "\n")
    if top_level:
        write(site, f"{folder}/top_level.txt", "\n".join(top_level) + "\n")
    return site / folder


def torch_version_py(version: str, cuda: str | None = None, hip: str | None = None) -> str:
    return (
        "from typing import Optional\n\n"
        "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
        f"__version__ = {version!r}\n"
        "debug = False\n"
        f"cuda: Optional[str] = {cuda!r}\n"
        "git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'\n"
        f"hip: Optional[str] = {hip!r}\n"
    )


def probe(site: Path) -> TargetProbe:
    doc = _target.collect(sites=[str(site)])
    text = json.dumps(doc)
    assert text.isascii()
    return parse_target_output(text, "python3")


def framework(result: TargetProbe, name: str) -> FrameworkBuild:
    found = [f for f in result.env.frameworks if f.name == name]
    assert len(found) == 1, [f.name for f in result.env.frameworks]
    return found[0]


def owners(result: TargetProbe) -> dict[str, str]:
    return {Path(path).name: owner for path, owner in result.binary_candidates}


# ------------------------------------------------------------------ torch


def test_torch_cu121_from_the_download_index(tmp_path: Path) -> None:
    pins = (
        "nvidia-cuda-runtime-cu12==12.1.105",
        "nvidia-cudnn-cu12==8.9.2.26",
        "triton==2.1.0",
    )
    dist(tmp_path, "torch", "2.1.2+cu121", pins, top_level=("torch", "functorch"))
    write(tmp_path, "torch/version.py", torch_version_py("2.1.2+cu121", cuda="12.1"))
    for lib in ("libtorch_cuda.so", "libc10_cuda.so", "libtorch_cpu.so", "libc10.so"):
        write(tmp_path, f"torch/lib/{lib}", b"\x7fELF")

    result = probe(tmp_path)
    torch = framework(result, "torch")

    assert torch.version == "2.1.2+cu121"
    assert torch.framework_cuda == "12.1"
    assert torch.variant == "cu121"
    assert torch.cudnn_version == "8.9.2.26"
    assert torch.is_gpu_build is True
    assert torch.source == "torch/version.py"
    assert torch.details["git_version"].startswith("cf30153c")
    assert torch.problem is None
    assert owners(result) == {"libtorch_cuda.so": "torch", "libc10_cuda.so": "torch"}


def test_torch_from_the_package_index_has_no_label_but_nvidia_pins(tmp_path: Path) -> None:
    dist(tmp_path, "torch", "2.5.1", (*CU12_PINS, "sympy==1.13.1"))
    write(tmp_path, "torch/__init__.py", "")

    torch = framework(probe(tmp_path), "torch")

    assert torch.version == "2.5.1"
    assert torch.framework_cuda == "12.4"
    assert torch.cudnn_version == "9.1.0.70"
    assert torch.variant == "cu124"
    assert torch.is_gpu_build is True
    assert torch.details["pinned_cuda_runtime"] == "12.4.127"
    assert torch.source == "torch METADATA"


def test_torch_2_11_pins_cuda_through_cuda_toolkit(tmp_path: Path) -> None:
    pins = (
        "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]"
        '==13.0.2; platform_system == "Linux"',
        'nvidia-cudnn-cu13==9.19.0.56; platform_system == "Linux"',
        'nvidia-nccl-cu13==2.28.9; platform_system == "Linux"',
    )
    dist(tmp_path, "torch", "2.11.0", pins)
    write(tmp_path, "torch/version.py", torch_version_py("2.11.0+cu130", cuda="13.0"))

    torch = framework(probe(tmp_path), "torch")

    assert torch.framework_cuda == "13.0"
    assert torch.cudnn_version == "9.19.0.56"
    assert torch.variant == "cu130"  # torch/version.py keeps the label the index strips
    assert torch.details["pinned_cuda_runtime"] == "13.0.2"
    assert torch.problem is None


def test_cpu_torch(tmp_path: Path) -> None:
    dist(tmp_path, "torch", "2.13.0+cpu", ("filelock", "sympy>=1.13.3"))
    write(tmp_path, "torch/version.py", torch_version_py("2.13.0+cpu"))
    write(tmp_path, "torch/lib/libtorch_cpu.so", b"\x7fELF")

    result = probe(tmp_path)
    torch = framework(result, "torch")

    assert (torch.variant, torch.framework_cuda, torch.is_gpu_build) == ("cpu", None, False)
    assert torch.cudnn_version is None
    assert result.binary_candidates == ()


def test_rocm_torch(tmp_path: Path) -> None:
    dist(tmp_path, "torch", "2.5.1+rocm6.2", ("pytorch-triton-rocm==3.1.0",))
    write(
        tmp_path, "torch/version.py", torch_version_py("2.5.1+rocm6.2", hip="6.2.41133-dd7f95766")
    )

    torch = framework(probe(tmp_path), "torch")

    assert torch.variant == "rocm6.2"
    assert torch.hip_version == "6.2.41133-dd7f95766"
    assert torch.framework_cuda is None
    assert torch.is_gpu_build is True


@pytest.mark.parametrize(
    ("file_version", "problem"),
    [
        ("2.5.1+cu121", "torch/version.py says CUDA 12.1 but METADATA is 2.5.1+cu124"),
        ("2.4.0+cu124", "torch/version.py says 2.4.0+cu124 but METADATA says 2.5.1+cu124"),
    ],
)
def test_torch_version_py_that_disagrees_with_metadata_is_a_problem(
    tmp_path: Path, file_version: str, problem: str
) -> None:
    dist(tmp_path, "torch", "2.5.1+cu124", CU12_PINS)
    cuda = "12.1" if "cu121" in file_version else "12.4"
    write(tmp_path, "torch/version.py", torch_version_py(file_version, cuda=cuda))

    torch = framework(probe(tmp_path), "torch")

    assert torch.problem is not None and torch.problem.startswith(problem)


def test_agreeing_torch_files_are_no_problem(tmp_path: Path) -> None:
    dist(tmp_path, "torch", "2.5.1+cu124", CU12_PINS)
    write(tmp_path, "torch/version.py", torch_version_py("2.5.1+cu124", cuda="12.4"))

    assert framework(probe(tmp_path), "torch").problem is None


def test_garbage_version_py_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    dist(tmp_path, "torch", "2.5.1+cu124", CU12_PINS)
    write(tmp_path, "torch/version.py", b"\x00\xff\xfe cuda = ((((( '12.4'\n__version__ = ")

    torch = framework(probe(tmp_path), "torch")

    assert torch.version == "2.5.1+cu124"
    assert torch.framework_cuda == "12.4"  # from the label
    assert torch.problem is not None and "torch/version.py" in torch.problem
    assert "not valid Python" in torch.problem


def test_the_script_never_imports_a_framework(tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    dist(tmp_path, "torch", "2.5.1", CU12_PINS)
    hook = f"open({str(marker)!r}, 'w').write('torch was imported')\nraise SystemExit(3)\n"
    write(tmp_path, "torch/__init__.py", hook)
    write(tmp_path, "torch/version.py", hook + "cuda = '12.4'\n")

    torch = framework(probe(tmp_path), "torch")

    assert not marker.exists()
    assert torch.framework_cuda == "12.4"


def test_torchvision_records_its_cuda_and_the_torch_it_needs(tmp_path: Path) -> None:
    dist(tmp_path, "torchvision", "0.20.1+cu124", ("numpy", "torch==2.5.1"), ("torchvision",))
    write(tmp_path, "torchvision/version.py", "__version__ = '0.20.1+cu124'\ngit_version = 'ab'\n")
    write(tmp_path, "torchvision/_C.so", b"\x7fELF")

    result = probe(tmp_path)
    vision = framework(result, "torchvision")

    assert (vision.framework_cuda, vision.variant, vision.is_gpu_build) == ("12.4", "cu124", True)
    assert vision.details["requires_torch"] == "torch==2.5.1"
    assert owners(result) == {"_C.so": "torchvision"}


# ------------------------------------------------------------------ tensorflow


def test_tensorflow_build_info_and_and_cuda_pins(tmp_path: Path) -> None:
    requires = (
        "absl-py>=1.0.0",
        'nvidia-cuda-runtime-cu12==12.3.101; extra == "and-cuda"',
        'nvidia-cudnn-cu12==8.9.7.29; extra == "and-cuda"',
    )
    dist(tmp_path, "tensorflow", "2.16.2", requires, ("tensorflow",))
    build_info = (
        "build_info = {'cpu_compiler': '/usr/lib/llvm-17/bin/clang', "
        "'cuda_compute_capabilities': ['sm_50', 'sm_60', 'sm_70', 'sm_80', 'compute_90'], "
        "'cuda_version': '12.3', 'cudnn_version': '8', 'is_cuda_build': True, "
        "'is_rocm_build': False, 'is_tensorrt_build': True}\n"
    )
    write(tmp_path, "tensorflow/python/platform/build_info.py", build_info)
    write(tmp_path, "tensorflow/libtensorflow_framework.so.2", b"\x7fELF")
    write(tmp_path, "tensorflow/python/_pywrap_tensorflow_internal.so", b"\x7fELF")

    result = probe(tmp_path)
    tf = framework(result, "tensorflow")

    assert (tf.framework_cuda, tf.cudnn_version, tf.is_gpu_build) == ("12.3", "8", True)
    assert tf.details["and_cuda_cudnn"] == "8.9.7.29"
    assert tf.details["and_cuda_installed"] == "no"
    assert tf.details["cuda_compute_capabilities"].endswith("compute_90")
    assert tf.source == "tensorflow/python/platform/build_info.py"
    assert set(owners(result)) == {
        "libtensorflow_framework.so.2",
        "_pywrap_tensorflow_internal.so",
    }
    assert set(owners(result).values()) == {"tensorflow"}


def test_tensorflow_cpu(tmp_path: Path) -> None:
    dist(tmp_path, "tensorflow-cpu", "2.16.2", top_level=("tensorflow",))
    write(
        tmp_path,
        "tensorflow/python/platform/build_info.py",
        "import collections\n\nbuild_info = collections.OrderedDict([('is_cuda_build', False), "
        "('is_rocm_build', False), ('is_tensorrt_build', False)])\n",
    )

    tf = framework(probe(tmp_path), "tensorflow")

    assert tf.distribution == "tensorflow-cpu"
    assert (tf.is_gpu_build, tf.variant, tf.framework_cuda) == (False, "cpu", None)


def test_windows_tensorflow_build_info_numbers(tmp_path: Path) -> None:
    dist(tmp_path, "tensorflow-gpu", "2.9.1")
    write(
        tmp_path,
        "tensorflow/python/platform/build_info.py",
        "import collections\nbuild_info = collections.OrderedDict([('cuda_version', '64_112'), "
        "('cudnn_version', '64_8'), ('is_cuda_build', True), ('is_rocm_build', False)])\n",
    )

    tf = framework(probe(tmp_path), "tensorflow")

    assert (tf.framework_cuda, tf.cudnn_version, tf.is_gpu_build) == ("11.2", "8", True)


# ------------------------------------------------------------------ jax


def test_jax_with_the_cuda12_plugin(tmp_path: Path) -> None:
    dist(tmp_path, "jax", "0.4.31", ("jaxlib<=0.4.31,>=0.4.30",))
    dist(tmp_path, "jaxlib", "0.4.31")
    dist(tmp_path, "jax-cuda12-plugin", "0.4.31", top_level=("jax_cuda12_plugin",))
    dist(tmp_path, "jax-cuda12-pjrt", "0.4.31", top_level=("jax_plugins",))
    write(tmp_path, "jax/version.py", '_version = "0.4.31"\n')
    write(tmp_path, "jaxlib/version.py", '_version = "0.4.31"\n')
    write(tmp_path, "jaxlib/xla_extension.so", b"\x7fELF")  # a CPU jaxlib: not a candidate
    write(tmp_path, "jax_plugins/xla_cuda12/xla_cuda_plugin.so", b"\x7fELF")
    write(tmp_path, "jax_cuda12_plugin/_cusolver.so", b"\x7fELF")

    result = probe(tmp_path)
    jax, jaxlib = framework(result, "jax"), framework(result, "jaxlib")

    assert (jax.version, jax.framework_cuda, jax.variant) == ("0.4.31", "12", "cuda12")
    assert jax.is_gpu_build is True
    assert jax.details["jax-cuda12-plugin"] == "0.4.31"
    assert jax.problem is None
    # jaxlib is one wheel for CPU and GPU: the plugin beside it is its CUDA build
    assert (jaxlib.is_gpu_build, jaxlib.framework_cuda, jaxlib.variant) == (True, "12", "cuda12")
    assert jaxlib.details["plugin"] == "jax-cuda12-plugin 0.4.31"
    assert owners(result) == {
        "xla_cuda_plugin.so": "jax-cuda12-pjrt",
        "_cusolver.so": "jax-cuda12-plugin",
    }


def test_jax_plugin_that_does_not_match_jaxlib_is_a_problem(tmp_path: Path) -> None:
    dist(tmp_path, "jax", "0.4.31")
    dist(tmp_path, "jaxlib", "0.4.31")
    dist(tmp_path, "jax-cuda12-plugin", "0.4.30")

    jax = framework(probe(tmp_path), "jax")

    assert jax.problem is not None and "does not match jaxlib 0.4.31" in jax.problem


def test_jaxlib_alone_is_a_cpu_build(tmp_path: Path) -> None:
    dist(tmp_path, "jaxlib", "0.4.35", ("numpy", "scipy"))
    write(tmp_path, "jaxlib/version.py", '_version = "0.4.35"\n')

    result = probe(tmp_path)

    assert [f.name for f in result.env.frameworks] == ["jaxlib"]
    jaxlib = framework(result, "jaxlib")
    assert (jaxlib.version, jaxlib.is_gpu_build, jaxlib.variant) == ("0.4.35", False, "cpu")


def test_old_monolithic_cuda_jaxlib_label(tmp_path: Path) -> None:
    dist(tmp_path, "jaxlib", "0.4.7+cuda11.cudnn86")
    write(tmp_path, "jaxlib/cuda/_cublas.so", b"\x7fELF")
    write(tmp_path, "jaxlib/xla_extension.so", b"\x7fELF")

    result = probe(tmp_path)
    jaxlib = framework(result, "jaxlib")

    assert (jaxlib.framework_cuda, jaxlib.cudnn_version, jaxlib.is_gpu_build) == ("11", "8.6", True)
    assert set(owners(result)) == {"_cublas.so", "xla_extension.so"}


# ------------------------------------------------------------------ other libraries


def test_cupy_cuda12x(tmp_path: Path) -> None:
    dist(tmp_path, "cupy-cuda12x", "13.3.0", ("numpy", "fastrlock"), ("cupy", "cupy_backends"))
    write(tmp_path, "cupy/.data/_wheel.json", '{"cuda": "12.x", "packaging": "pip"}')
    write(tmp_path, "cupy/cuda/cub.cpython-311-x86_64-linux-gnu.so", b"\x7fELF")
    write(tmp_path, "cupy_backends/cuda/libs/cublas.cpython-311-x86_64-linux-gnu.so", b"\x7fELF")

    result = probe(tmp_path)
    cupy = framework(result, "cupy")

    assert (cupy.framework_cuda, cupy.variant, cupy.is_gpu_build) == ("12", "cuda12x", True)
    assert cupy.distribution == "cupy-cuda12x"
    assert cupy.details["wheel_cuda"] == "12.x"
    assert set(owners(result).values()) == {"cupy-cuda12x"}
    assert len(result.binary_candidates) == 2


def test_two_cupy_packages_are_a_problem(tmp_path: Path) -> None:
    dist(tmp_path, "cupy-cuda11x", "13.3.0")
    dist(tmp_path, "cupy-cuda12x", "13.3.0")

    cupy = framework(probe(tmp_path), "cupy")

    assert cupy.problem is not None and "more than one CuPy" in cupy.problem


def test_onnxruntime_gpu(tmp_path: Path) -> None:
    dist(tmp_path, "onnxruntime-gpu", "1.18.1", ("numpy",), ("onnxruntime",))
    write(
        tmp_path,
        "onnxruntime/capi/build_and_package_info.py",
        "package_name = 'onnxruntime-gpu'\n__version__ = '1.18.1'\n"
        "cuda_version = '12.2'\ncudnn_version = '9'\n",
    )
    write(tmp_path, "onnxruntime/capi/libonnxruntime_providers_cuda.so", b"\x7fELF")
    write(tmp_path, "onnxruntime/capi/libonnxruntime_providers_shared.so", b"\x7fELF")

    result = probe(tmp_path)
    ort = framework(result, "onnxruntime")

    assert (ort.framework_cuda, ort.cudnn_version, ort.is_gpu_build) == ("12.2", "9", True)
    assert (ort.distribution, ort.variant, ort.problem) == ("onnxruntime-gpu", "gpu", None)
    assert owners(result) == {"libonnxruntime_providers_cuda.so": "onnxruntime-gpu"}


def test_onnxruntime_overwritten_by_the_cpu_package_is_a_problem(tmp_path: Path) -> None:
    dist(tmp_path, "onnxruntime-gpu", "1.18.1")
    dist(tmp_path, "onnxruntime", "1.18.1")
    write(tmp_path, "onnxruntime/capi/build_and_package_info.py", "package_name = 'onnxruntime'\n")

    ort = framework(probe(tmp_path), "onnxruntime")

    assert ort.distribution == "onnxruntime"
    assert ort.is_gpu_build is False
    assert ort.problem is not None and "share onnxruntime/" in ort.problem


def test_paddle_gpu_version_module(tmp_path: Path) -> None:
    dist(tmp_path, "paddlepaddle-gpu", "2.6.1.post120")
    write(
        tmp_path,
        "paddle/version/__init__.py",
        "full_version    = '2.6.1'\ncuda_version    = '12.0'\ncudnn_version   = '8.9.1'\n"
        "def show():\n    pass\n",
    )

    paddle = framework(probe(tmp_path), "paddlepaddle")

    assert (paddle.framework_cuda, paddle.cudnn_version, paddle.is_gpu_build) == (
        "12.0",
        "8.9.1",
        True,
    )


def test_mmcv_with_and_without_compiled_ops(tmp_path: Path) -> None:
    with_ops, without = tmp_path / "a", tmp_path / "b"
    for site in (with_ops, without):
        dist(site, "mmcv", "2.1.0", top_level=("mmcv",))
        write(site, "mmcv/version.py", "__version__ = '2.1.0'\n")
    write(with_ops, "mmcv/_ext.cpython-311-x86_64-linux-gnu.so", b"\x7fELF")

    built, lite = probe(with_ops), probe(without)

    assert framework(built, "mmcv").details["compiled_ops"] == "yes"
    assert framework(built, "mmcv").is_gpu_build is None  # the fatbin scan decides
    assert owners(built) == {"_ext.cpython-311-x86_64-linux-gnu.so": "mmcv"}
    assert framework(lite, "mmcv").details["compiled_ops"] == "no"
    assert framework(lite, "mmcv").is_gpu_build is False


def test_torch_scatter_label_names_torch_and_cuda(tmp_path: Path) -> None:
    dist(tmp_path, "torch-scatter", "2.1.2+pt21cu121", top_level=("torch_scatter",))
    write(tmp_path, "torch_scatter/__init__.py", "")
    write(tmp_path, "torch_scatter/_scatter_cuda.so", b"\x7fELF")
    write(tmp_path, "torch_scatter/_scatter_cpu.so", b"\x7fELF")

    result = probe(tmp_path)
    scatter = framework(result, "torch-scatter")

    assert (scatter.framework_cuda, scatter.variant, scatter.is_gpu_build) == (
        "12.1",
        "cu121",
        True,
    )
    assert scatter.details["built_for_torch"] == "2.1"
    assert owners(result) == {"_scatter_cuda.so": "torch-scatter"}


def test_xformers_cpp_lib_and_flash_attn_top_level_extension(tmp_path: Path) -> None:
    dist(tmp_path, "xformers", "0.0.28.post3", ("torch==2.5.1",), ("xformers",))
    version = {"cuda": 1201, "hip": None, "torch": "2.5.1+cu121", "python": "3.11.7"}
    write(tmp_path, "xformers/cpp_lib.json", json.dumps({"version": version}))
    write(tmp_path, "xformers/_C.so", b"\x7fELF")
    dist(tmp_path, "flash_attn", "2.7.4.post1", top_level=("flash_attn", "flash_attn_2_cuda"))
    write(tmp_path, "flash_attn/__init__.py", "__version__ = '2.7.4.post1'\n")
    write(tmp_path, "flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so", b"\x7fELF")

    result = probe(tmp_path)
    xformers = framework(result, "xformers")

    assert (xformers.framework_cuda, xformers.is_gpu_build) == ("12.1", True)
    assert xformers.details["built_with_torch"] == "2.5.1+cu121"
    assert framework(result, "flash-attn").version == "2.7.4.post1"
    assert owners(result) == {
        "_C.so": "xformers",
        "flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so": "flash_attn",
    }


def test_package_dir_without_metadata_and_metadata_without_package(tmp_path: Path) -> None:
    write(tmp_path, "torch/lib/libtorch_cuda.so", b"\x7fELF")
    dist(tmp_path, "cupy-cuda12x", "13.3.0")

    result = probe(tmp_path)

    torch, cupy = framework(result, "torch"), framework(result, "cupy")
    assert torch.version is None and torch.problem is not None
    assert "no distribution metadata" in torch.problem
    assert cupy.problem is not None and "cupy/ is missing" in cupy.problem
    assert owners(result) == {"libtorch_cuda.so": "torch"}


def test_editable_install_is_read_from_its_source_tree(tmp_path: Path) -> None:
    site, source = tmp_path / "site", tmp_path / "my src"
    folder = dist(site, "torch", "2.6.0a0+git1234")
    url = (source.as_uri()).replace(" ", "%20")
    write(folder, "direct_url.json", json.dumps({"url": url, "dir_info": {"editable": True}}))
    write(source, "torch/version.py", torch_version_py("2.6.0a0+git1234", cuda="12.6"))

    torch = framework(probe(site), "torch")

    assert (torch.framework_cuda, torch.variant, torch.problem) == ("12.6", "cu126", None)


# ------------------------------------------------------------------ distributions


def test_distribution_fields(tmp_path: Path) -> None:
    folder = dist(tmp_path, "requests", "2.32.3", ("idna<4,>=2.5", "urllib3<3,>=1.21.1"))
    write(folder, "direct_url.json", '{"url": "file:///src/requests", "dir_info": {}}')
    (folder / "INSTALLER").write_text("uv\n")

    (only,) = probe(tmp_path).env.distributions

    assert (only.name, only.version, only.installer) == ("requests", "2.32.3", "uv")
    assert only.requires == ("idna<4,>=2.5", "urllib3<3,>=1.21.1")
    assert only.location == str(tmp_path)
    assert only.problem is None


def test_egg_info_directory_and_file(tmp_path: Path) -> None:
    write(
        tmp_path,
        "old-1.0-py3.8.egg-info/PKG-INFO",
        "Metadata-Version: 1.1\nName: old\nVersion: 1.0\n",
    )
    write(tmp_path, "old-1.0-py3.8.egg-info/requires.txt", "six\n\n[test]\npytest\n")
    write(tmp_path, "flat-2.0.egg-info", "Metadata-Version: 1.0\nName: flat\nVersion: 2.0\n")

    found = {d.name: d for d in probe(tmp_path).env.distributions}

    assert found["old"].requires == ("six", 'pytest; extra == "test"')
    assert found["flat"].version == "2.0"
    assert all(d.problem is None for d in found.values())


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "METADATA is empty"),
        (b"this is not a header block\nnor this\n", "METADATA has no Name"),
        (b"Name: caf\xe9\nVersion: 1.0\n", "METADATA is not valid UTF-8"),
    ],
)
def test_broken_metadata_is_recorded_not_fatal(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    write(tmp_path, "broken-1.0.dist-info/METADATA", content)
    dist(tmp_path, "fine", "1.0")

    found = {d.name: d for d in probe(tmp_path).env.distributions}

    assert found["fine"].problem is None
    broken = next(d for n, d in found.items() if n != "fine")
    assert broken.problem is not None and problem in broken.problem
    assert broken.version == "1.0"


def test_missing_metadata_falls_back_to_the_folder_name(tmp_path: Path) -> None:
    (tmp_path / "ghost-3.1.dist-info").mkdir()

    (ghost,) = probe(tmp_path).env.distributions

    assert (ghost.name, ghost.version) == ("ghost", "3.1")
    assert ghost.problem == "METADATA missing"


def test_hostile_distribution_name_is_kept_verbatim(tmp_path: Path) -> None:
    hostile = "evil\x1b[31m$(touch /tmp/pwned); `id` | rm -rf ~ && \x07\x1c" + "A" * 10240
    content = f"Metadata-Version: 2.1\nName: {hostile}\nVersion: 1.0\n".encode()
    write(tmp_path, "evil-1.0.dist-info/METADATA", content)

    (evil,) = probe(tmp_path).env.distributions

    assert evil.name == hostile
    assert evil.problem is None


def test_undecodable_folder_name_becomes_replacement_characters(tmp_path: Path) -> None:
    folder = os.fsencode(tmp_path) + b"/bad\xff-1.0.dist-info"
    os.mkdir(folder)

    (bad,) = probe(tmp_path).env.distributions

    assert bad.name == "bad\ufffd"


def test_two_dist_infos_for_one_name_are_both_kept(tmp_path: Path) -> None:
    dist(tmp_path, "torch", "2.4.0", CU12_PINS)
    dist(tmp_path, "torch", "2.5.1", CU12_PINS)
    write(tmp_path, "torch/version.py", torch_version_py("2.5.1+cu124", cuda="12.4"))

    result = probe(tmp_path)

    versions = sorted(d.version for d in result.env.distributions if d.name == "torch")
    assert versions == ["2.4.0", "2.5.1"]
    torch = framework(result, "torch")
    assert torch.framework_cuda == "12.4"
    assert torch.problem is not None
    assert "torch is recorded more than once (2.4.0, 2.5.1)" in torch.problem


def test_script_interpreter_section_describes_this_interpreter(tmp_path: Path) -> None:
    env = probe(tmp_path).env

    assert env.python_version is not None and env.python_version.startswith("3.")
    assert env.implementation == "cpython"
    assert env.site_packages == (str(tmp_path),)
    assert env.env_kind in ("venv", "conda", "system")


def test_a_failing_section_becomes_a_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object) -> None:
        raise RuntimeError("boom")

    dist(tmp_path, "torch", "2.5.1")
    monkeypatch.setattr(_target, "read_frameworks", boom)

    env = probe(tmp_path).env

    assert env.frameworks == ()
    assert [d.name for d in env.distributions] == ["torch"]
    assert env.problems == ("reading frameworks failed: RuntimeError: boom",)


# ------------------------------------------------------------------ parse_target_output


def document(**interpreter: object) -> dict[str, Any]:
    info = {"version": "3.11.7", "prefix": "/opt/env", "is_venv": False, "conda_meta": False}
    info.update(interpreter)
    return {"probe_version": 1, "interpreter": info, "distributions": [], "frameworks": []}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "printed nothing"),
        ("Segmentation fault", "could not read"),
        ('{"probe_version": 1, "interpreter": {"version": "3.1', "could not read"),
        ("[1, 2, 3]", "no probe document"),
        ('{"something": "else"}', "no probe document"),
        ("[" * 100000, "could not read"),
    ],
)
def test_garbled_output_gives_a_problem(text: str, problem: str) -> None:
    env = parse_target_output(text, "/usr/bin/python3").env

    assert env.python_version is None
    assert env.interpreter == "/usr/bin/python3"
    assert len(env.problems) == 1 and problem in env.problems[0]


def test_wrong_types_inside_a_document_are_ignored() -> None:
    doc = {
        "probe_version": 1,
        "interpreter": {"version": 3.11, "site_packages": "not a list"},
        "distributions": [{"name": 5}, "x", {"name": "ok", "version": "1", "requires": [1, "a"]}],
        "frameworks": [{"name": "torch", "files": {"torch/version.py": "bad"}}, {"nope": 1}],
        "binary_candidates": [{"path": 3}, {"path": "/x/libtorch_cuda.so"}],
    }

    result = parse_target_output(json.dumps(doc), "python3")

    assert result.env.python_version is None
    assert [d.name for d in result.env.distributions] == ["", "ok"]
    assert result.env.distributions[1].requires == ("a",)
    assert [f.name for f in result.env.frameworks] == ["torch"]
    assert result.binary_candidates == (("/x/libtorch_cuda.so", ""),)


def test_a_banner_before_the_document_is_skipped() -> None:
    text = "conda activate: hello\n" + json.dumps(document())

    assert parse_target_output(text, "python3").env.python_version == "3.11.7"


def test_valid_document() -> None:
    site = "/opt/env/lib/python3.11/site-packages"
    doc = document(implementation="cpython", machine="aarch64", sys_platform="linux")
    doc["interpreter"] = {**doc["interpreter"], "libc": "glibc 2.35", "site_packages": [site]}
    doc["problems"] = ["site.getsitepackages() is missing; used sysconfig paths"]

    env = parse_target_output(json.dumps(doc), "/opt/env/bin/python").env

    assert (env.python_version, env.implementation, env.prefix) == ("3.11.7", "cpython", "/opt/env")
    assert (env.platform_machine, env.sys_platform, env.libc) == ("aarch64", "linux", "glibc 2.35")
    assert env.site_packages == ("/opt/env/lib/python3.11/site-packages",)
    assert env.problems == ("site.getsitepackages() is missing; used sysconfig paths",)
    assert (env.env_kind, env.manager) == ("system", "pip")


def test_a_newer_probe_version_is_noted() -> None:
    doc = document()
    doc["probe_version"] = 2

    env = parse_target_output(json.dumps(doc), "python3").env

    assert env.python_version == "3.11.7"
    assert any("probe document version 2" in p for p in env.problems)


@pytest.mark.parametrize(
    ("interpreter", "installer", "kind", "manager"),
    [
        ({"is_venv": True, "pyvenv_cfg": {"home": "/usr/bin", "uv": "0.5.1"}}, "uv", "venv", "uv"),
        ({"is_venv": True, "pyvenv_cfg": {"home": "/usr/bin"}}, "uv", "venv", "uv"),
        ({"is_venv": True, "pyvenv_cfg": {"home": "/usr/bin"}}, "pip", "venv", "pip"),
        ({"conda_meta": True, "prefix": "/opt/conda/envs/x"}, "conda", "conda", "conda"),
        ({"conda_meta": True, "prefix": "/w/p/.pixi/envs/default"}, "conda", "conda", "pixi"),
        (
            {"is_venv": True, "prefix": "/home/u/.cache/pypoetry/virtualenvs/app-py3.11"},
            "pip",
            "venv",
            "poetry",
        ),
        ({}, "pip", "system", "pip"),
    ],
)
def test_env_kind_and_manager(
    interpreter: dict[str, object], installer: str, kind: str, manager: str
) -> None:
    doc = document(**interpreter)
    dists = [{"name": "a", "version": "1", "installer": installer}]
    doc["distributions"] = [*dists, {"name": "b", "version": "1", "installer": installer}]

    env = parse_target_output(json.dumps(doc), "python3").env

    assert (env.env_kind, env.manager) == (kind, manager)


# ------------------------------------------------------------------ running it


@pytest.mark.parametrize(
    ("environ", "system", "expected"),
    [
        ({"VIRTUAL_ENV": "/w/.venv", "CONDA_PREFIX": "/c"}, "Linux", "/w/.venv/bin/python"),
        ({"CONDA_PREFIX": "/opt/conda"}, "Linux", "/opt/conda/bin/python"),
        ({}, "Linux", "python3"),
        ({"VIRTUAL_ENV": "C:\\w\\.venv"}, "Windows", "C:\\w\\.venv\\Scripts\\python.exe"),
        ({"CONDA_PREFIX": "C:\\miniconda3"}, "Windows", "C:\\miniconda3\\python.exe"),
        ({}, "Windows", "python"),
    ],
)
def test_default_interpreter(environ: dict[str, str], system: str, expected: str) -> None:
    assert default_interpreter(environ, RecordedMachine(system_name=system)) == expected


def recorded(answer: dict[str, object], interpreter: str = "/env/bin/python") -> RecordedMachine:
    return RecordedMachine(commands={f"{interpreter} -c {{target-script}}": answer})


def test_probe_through_a_recorded_machine() -> None:
    machine = recorded({"stdout": json.dumps(document()), "returncode": 0})

    result = probe_python_env(machine, "/env/bin/python")

    assert result.env.python_version == "3.11.7"
    assert result.env.problems == ()


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"timed_out": True}, "/env/bin/python timed out after 7 s"),
        ({"returncode": 1, "stderr": "Traceback ...\nImportError: boom\n"}, "ImportError: boom"),
        ({"returncode": 1, "stderr": "  f'{x=}'\nSyntaxError: invalid syntax\n"}, "Python 3.6"),
        ({"returncode": 0, "stdout": "garbage"}, "could not read"),
    ],
)
def test_probe_failures_become_problems(answer: dict[str, object], problem: str) -> None:
    result = probe_python_env(recorded(answer), "/env/bin/python", timeout=7)

    assert result.env.python_version is None
    assert len(result.env.problems) == 1 and problem in result.env.problems[0]


def test_missing_interpreter() -> None:
    result = probe_python_env(RecordedMachine(), "/nowhere/python")

    assert result.env.problems == ("interpreter /nowhere/python not found",)


def test_script_text_is_the_target_script() -> None:
    assert script_text().startswith(SCRIPT_MARKER)
    assert script_text() == Path(_target.__file__).read_text(encoding="utf-8")


# ------------------------------------------------------------------ real interpreters


@pytest.mark.real
@pytest.mark.parametrize(("python", "version"), [(PYTHON36, "3.6.15"), (PYTHON38, "3.8.18")])
def test_old_interpreters_run_the_script(python: Path, version: str) -> None:
    if not python.exists():
        pytest.skip(f"{python} is not installed here")

    env = probe_python_env(LiveMachine(), str(python)).env

    assert env.problems == ()
    assert env.python_version == version
    assert env.env_kind == "system"
    assert any(d.name == "pip" for d in env.distributions)


@pytest.mark.real
def test_python2_says_it_is_too_old() -> None:
    if not PYTHON27.exists():
        pytest.skip(f"{PYTHON27} is not installed here")

    env = probe_python_env(LiveMachine(), str(PYTHON27)).env

    assert env.python_version == "2.7.18"
    assert len(env.problems) == 1 and "older than 3.6" in env.problems[0]


def fake_interpreter(folder: Path, body: str) -> str:
    path = folder / "python"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.mark.real
def test_hanging_interpreter_times_out(tmp_path: Path) -> None:
    python = fake_interpreter(tmp_path, "sleep 60")

    env = probe_python_env(LiveMachine(), python, timeout=2).env

    assert env.python_version is None
    assert env.problems == (f"{python} timed out after 2 s",)


@pytest.mark.real
def test_interpreter_that_prints_garbage_and_fails(tmp_path: Path) -> None:
    python = fake_interpreter(tmp_path, "echo 'garbage ]]]'; echo 'it broke' >&2; exit 1")

    env = probe_python_env(LiveMachine(), python).env

    assert env.python_version is None
    assert env.problems == (f"{python} exited with 1: it broke",)


@pytest.mark.real
def test_cpu_torch_venv(cpu_torch_venv: Path) -> None:
    result = probe_python_env(LiveMachine(), str(cpu_torch_venv))
    env = result.env

    torch = framework(result, "torch")
    assert torch.version == "2.13.0+cpu"
    assert (torch.variant, torch.framework_cuda, torch.is_gpu_build) == ("cpu", None, False)
    assert torch.problem is None
    assert (env.env_kind, env.manager) == ("venv", "pip")
    assert env.prefix == str(cpu_torch_venv.parent.parent)
    assert any(d.name == "torch" and d.installer == "pip" for d in env.distributions)
    assert not any("libtorch_cuda" in path for path, _ in result.binary_candidates)
    assert result.binary_candidates == ()
    assert env.problems == ()


def test_conda_meta_records_give_name_version_build_and_channel(tmp_path: Path) -> None:
    meta = tmp_path / "conda-meta"
    meta.mkdir()
    (meta / "pytorch-2.1.0-py3.11_cuda12.1_cudnn8.9.2_0.json").write_text(
        json.dumps(
            {
                "build": "py3.11_cuda12.1_cudnn8.9.2_0",
                "channel": "https://conda.anaconda.org/pytorch/linux-64",
                "files": ["lib/x.so"],
                "name": "pytorch",
                "subdir": "linux-64",
                "url": "https://conda.anaconda.org/pytorch/linux-64/pytorch-2.1.0-py3.11_cuda12.1_cudnn8.9.2_0.tar.bz2",
                "version": "2.1.0",
            },
            sort_keys=True,
        )
    )
    # a large record (a long `files` list) is read at both ends only
    big = {
        "build": "h1_0",
        "channel": "conda-forge",
        "files": [f"f{i:07d}" for i in range(200_000)],
    }
    text = json.dumps(big, sort_keys=True)[:-1] + ', "name": "cudnn", "version": "8.9.7.29"}'
    (meta / "cudnn-8.9.7.29-h1_0.json").write_text(text)
    (meta / "history").write_text("not a record")
    (meta / "broken-1.0-0.json").write_text("{not json")
    doc = json.loads(json.dumps(_target.collect(sites=[], prefix=str(tmp_path))))
    env = parse_target_output(json.dumps(doc), "python3").env
    by_name = {p.name: p for p in env.conda_packages}
    assert set(by_name) == {"pytorch", "cudnn", "broken"}
    torch = by_name["pytorch"]
    assert (torch.version, torch.build, torch.subdir) == (
        "2.1.0",
        "py3.11_cuda12.1_cudnn8.9.2_0",
        "linux-64",
    )
    assert torch.channel == "https://conda.anaconda.org/pytorch/linux-64"
    assert torch.url is not None and torch.url.endswith(".tar.bz2")
    assert (by_name["cudnn"].version, by_name["cudnn"].channel) == ("8.9.7.29", "conda-forge")
    assert (by_name["broken"].version, by_name["broken"].build) == ("1.0", "0")


def test_a_venv_has_no_conda_packages(tmp_path: Path) -> None:
    doc = _target.collect(sites=[], prefix=str(tmp_path))
    assert doc["conda_packages"] == []
