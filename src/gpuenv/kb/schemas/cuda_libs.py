"""Tables of cuda_libs.toml: library file names, NVIDIA pip wheels, cuDNN and NCCL."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

LIBRARIES = (
    "cudart",
    "cublas",
    "cublasLt",
    "cudnn",
    "nccl",
    "nvrtc",
    "nvJitLink",
    "cufft",
    "curand",
    "cusolver",
    "cusparse",
    "cupti",
)

TABLES: dict[str, TableSpec] = {
    "soname": TableSpec(
        fields={
            "library": f("str", choices=LIBRARIES),
            "cuda_major": f("int"),
            "soname": f("str"),
            "windows_dll": f("str", required=False),
            "library_major": f("int", required=False),
        },
        key=("library", "cuda_major", "library_major"),
        description="Linux SONAME (and Windows DLL) of a library built for a CUDA major; "
        "library_major tells cuDNN 8 from cuDNN 9 where both exist",
    ),
    "pip_package": TableSpec(
        fields={
            "library": f("str", choices=LIBRARIES),
            "cuda_major": f("int"),
            "package": f("str"),
            "lib_dir": f("str"),
        },
        key=("library", "cuda_major"),
        description="NVIDIA's pip wheel for a library and CUDA major, and its folder under "
        "site-packages",
    ),
    "cudnn": TableSpec(
        fields={
            "cudnn": f("version"),
            "cuda_major": f("int"),
            "cuda_min": f("version"),
            "cuda_max": f("version", required=False),
            "min_cc": f("cc"),
            "max_cc": f("cc", required=False),
            "linux_min_driver": f("version", required=False),
            "windows_min_driver": f("version", required=False),
        },
        key=("cudnn", "cuda_major", "cuda_min", "cuda_max"),
        description="A cuDNN build for a range of CUDA versions (support matrix)",
    ),
    "cudnn_release": TableSpec(
        fields={"cudnn": f("version"), "cuda_majors": f("list[int]")},
        key=("cudnn",),
        description="A cuDNN release (full version) and the CUDA majors NVIDIA publishes builds "
        "of it for; support-matrix details (CC, driver) stay in the cudnn table",
    ),
    "nccl": TableSpec(
        fields={
            "cuda_major": f("int"),
            "package": f("str"),
            "first": f("version"),
            "last_seen": f("version"),
            "final": f("bool", required=False),
        },
        key=("cuda_major",),
        description="NCCL pip builds per CUDA major: first and newest version seen; final when "
        "no newer build will come",
    ),
}
