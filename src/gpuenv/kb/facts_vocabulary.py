"""The facts explain reads from a text, by name. Pattern groups in patterns.toml are named for
these; the pasted-report readers give the same names; facts.to_snapshot turns them into a
Snapshot."""

from __future__ import annotations

FACTS: dict[str, str] = {
    # the machine
    "os": "operating system: linux, windows or darwin",
    "arch": "CPU architecture: x86_64, aarch64, arm64, armv7l, x86 (a 32-bit Python)",
    "distro": "OS release as printed (Ubuntu 22.04.3 LTS)",
    "wsl": "the machine is WSL2 (true)",
    "container": "the failure happened in a container (docker, podman, kubernetes)",
    "container_gpu_access": "none when the text says the container was started without GPU access",
    "gpu_absent": "the text says the machines have no NVIDIA GPU (true)",
    "amd_gpu_named": "the text names an AMD Radeon GPU (true)",
    "cpu_without_avx": (
        "the text names a CPU made without AVX (Celeron N, Pentium Silver, Atom, Core 2) (true)"
    ),
    "only_amd_gpu": (
        "the text names an AMD GPU and no NVIDIA GPU, driver or compute capability (true), judged"
    ),
    "gpus_hidden": "CUDA_VISIBLE_DEVICES hides every GPU (-1 or empty) (true)",
    "nvidia_require_cuda": "the CUDA a container image requires (cuda>=12.8)",
    "default_runtime": "Docker's default runtime",
    "jetson_model": "Jetson board as printed",
    "l4t": "Jetson Linux (L4T) release, 36.4.3",
    "jetpack": "JetPack release",
    "jetson": "the machine is a Jetson (true), derived from its model, JetPack or L4T",
    # GPU and driver
    "gpu": "a GPU's name as printed",
    "cc": "compute capability of the GPU named with it (8.6)",
    "sm": "compute capability as sm_86",
    "driver_version": "NVIDIA driver version (535.183.01)",
    "driver_max_cuda": "highest CUDA the driver supports (12.2)",
    "driver_cuda_code": "the driver's CUDA as cudaDriverGetVersion prints it (11060)",
    "driver_failure": "a driver failure state (facts.DRIVER_FAILURES)",
    "driver_updated": "the text says the driver or system was updated before it failed (true)",
    "after_suspend": "the text says it failed after the machine was suspended and resumed (true)",
    "kernel_module_version": "version of the loaded kernel module (NVRM)",
    "client_driver_version": "version of the user-space driver a kernel message names",
    "client_driver_branch_newer": (
        "the user-space driver named is of a newer branch than the kernel module named (true), "
        "judged: a CUDA forward-compat libcuda rather than another build's"
    ),
    "driver_versions_differ": (
        "the user-space driver and the kernel module named are of different versions (true), judged"
    ),
    # CUDA libraries and toolkits
    "toolkit_cuda": "CUDA toolkit version from nvcc (12.8.93)",
    "cuda_runtime": "CUDA runtime version a framework found (12.4.131)",
    "distro_nvcc": (
        "the nvcc that ran is the distribution's (/usr/bin/nvcc, nvidia-cuda-toolkit) (true)"
    ),
    "cuda_named": (
        "a CUDA toolkit version the text names (CUDA 11.1 installed, /usr/local/cuda-11.1), "
        "major.minor; not what a driver or a framework build supports"
    ),
    "arch_rejected": "the GPU architecture nvcc says it does not support, as in compute_86 (86)",
    "nvcc_older_than_named": (
        "nvcc rejected a GPU architecture that a CUDA toolkit the text names supports (true): "
        "an older nvcc is found first, judged from archs.toml"
    ),
    "third_cuda_named": (
        "a build found one CUDA toolkit, torch was built for another, and the text names a third "
        "(true): the toolkit found is another one, found first"
    ),
    "cudnn_version": "cuDNN version found",
    "cudnn_code": "cuDNN version as torch.backends.cudnn.version() prints it (8907, 90100)",
    "cudnn_loaded": "cuDNN version loaded at run time",
    "cudnn_compiled": "cuDNN version the framework was built with",
    "missing_library": "a shared library or DLL that could not be loaded",
    "ld_library_path_cudnn": "LD_LIBRARY_PATH names a cuDNN directory (true)",
    "cudnn_wanted": "the cuDNN major a program says it requires (ONNX Runtime: Require cuDNN 9.*)",
    "cudnn_other_major": (
        "a cuDNN library (or a cuDNN a program requires) of another major than the installed "
        "cuDNN could not be loaded (true), judged"
    ),
    "ort_cudnn_other_major": (
        "the ONNX Runtime release named is built for another cuDNN major than the one the text "
        "names (true), judged from onnxruntime.toml"
    ),
    "conda_cuda": "conda's __cuda virtual package (or CONDA_OVERRIDE_CUDA)",
    "nccl_version": "NCCL version",
    "rocm_arch": "AMD GPU architecture (gfx1031)",
    "zluda": "the text names ZLUDA, which runs CUDA programs on AMD GPUs (true)",
    # Python and packages
    "python_version": "Python version (3.11.7)",
    "python_tag": "a wheel's Python tag (cp312)",
    "python_tags": "the Python tags an installer says a release has wheels for (`cp310`, `cp311`)",
    "wheel": "a wheel file name",
    "wheel_platform": "a wheel's platform tag (linux_x86_64)",
    "package": "a package a command asked for",
    "package_version": "the version asked for",
    "rocm_index": "the install command uses PyTorch's ROCm wheel index (true)",
    "torch_links": (
        "the page of PyTorch's local builds pip read (torch_stable.html, cu113/torch_stable.html)"
    ),
    "linux_named": (
        "the text names a Linux distribution (true): the OS of the machine, or of an image or a "
        "page it mentions, so it does not set the OS"
    ),
    "cudnn_shadowed": (
        "an older cuDNN was loaded than the build needs while the text says one at least as "
        "new is installed (true), judged from the versions"
    ),
    "local_build_listed": (
        "the +cpu/+cuXXX build asked for is one the page of PyTorch's builds pip read lists "
        "(true), judged from the page's name"
    ),
    "package_gpu_build": "the package asked for is a CUDA/GPU build by its name (true), derived",
    "cuda_compat": "the text names CUDA's forward-compatibility libcuda (cuda-compat) (true)",
    "torch_in_process": "the text says torch is imported in the same process (true)",
    "versions_offered": "the versions an installer says it found (pip's from versions: list)",
    "pin_older_than_offered": (
        "every release the installer found is newer than the version pinned (true), judged: "
        "the first of them is the first with a wheel for the reporter's (newer) Python"
    ),
    "python_unserved": (
        "the release asked for has no wheel for the reporter's Python (true), judged from "
        "wheels.toml or its release line"
    ),
    "platform_unserved": (
        "the package asked for has no wheel for the reporter's OS and architecture (true), "
        "judged from wheels.toml"
    ),
    "platform_from_versions": (
        "the releases the installer listed are those the index has for platforms the release "
        "asked for has no file for (true), judged from wheels.toml: the reporter's platform"
    ),
    "platforms_few": (
        "the text does not say the reporter's platform and the package asked for has wheels "
        "for some OSes only (true), judged from wheels.toml"
    ),
    "gpu_architecture": "a GPU architecture the text names in words (Kepler, Fermi)",
    "gpu_at_driver_ceiling": (
        "every GPU named is of an architecture whose last driver branch (archs.toml) the driver "
        "is already on (true), judged: no newer driver exists for it"
    ),
    "gpu_before_maxwell": (
        "every GPU named is of an architecture whose last driver branch is Kepler's (R470) or "
        "earlier (true), judged: no current framework build has kernels for it"
    ),
    "apple_silicon": "the text names an Apple-silicon Mac (M1 chip, Apple silicon) (true)",
    "arm_served": (
        "the text names macOS or Windows on arm64 and the package asked for has wheels for "
        "that platform (true), judged from wheels.toml"
    ),
    "linux_served": (
        "the text names a Linux distribution, no other OS nor architecture, and the package "
        "asked for has Linux x86-64 wheels (true), judged from wheels.toml"
    ),
    "extension": "a compiled extension module that failed (flash_attn_2_cuda)",
    # frameworks
    "torch_version": "PyTorch version (2.4.0+cu121)",
    "torch_cuda": "CUDA PyTorch was built with",
    "torch_rocm": "ROCm PyTorch was built with",
    "torch_archs": "GPU architectures in the PyTorch build (sm_50 sm_60 … compute_37)",
    "cuda_available": "torch.cuda.is_available() (true/false)",
    "tensorflow_version": "TensorFlow version",
    "tensorflow_release": "TensorFlow release line, major.minor (2.17), derived from its version",
    "tensorflow_cuda": "CUDA TensorFlow was built with",
    "tensorflow_cudnn": "cuDNN TensorFlow was built with",
    "tensorflow_cuda_build": "tf.test.is_built_with_cuda() (true/false)",
    "jax_version": "jax version",
    "jaxlib_version": "jaxlib version",
    "jax_backend": "the backend JAX uses (gpu, cpu)",
    "onnxruntime_version": "ONNX Runtime version",
    "onnxruntime_cuda": "CUDA major of an ONNX Runtime release package (…-cuda12-1.17.1)",
    "framework": "the framework a message comes from (torch, tensorflow, jax …)",
}
