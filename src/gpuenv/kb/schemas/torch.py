"""Tables of torch.toml: PyTorch release lines, compiled GPU architectures, wheel indexes."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows-x86_64")

TABLES: dict[str, TableSpec] = {
    "release": TableSpec(
        fields={
            "torch": f("version"),  # minor line, "2.4"
            # CPython versions with torch wheels on the package index for Linux x86_64
            "python_min": f("version"),
            "python_max": f("version"),
            # CUDA wheel indexes on download.pytorch.org validated for the release
            "cuda_variants": f("list[str]"),
            "rocm_variants": f("list[str]", required=False),
            # what a plain `pip install torch` from the package index gets, per platform
            "pypi_linux_x86_64": f("str"),
            "pypi_linux_aarch64": f("str", required=False),
            "pypi_windows": f("str"),
            "pypi_macos": f("str"),
            "cudnn": f("version", required=False),  # cuDNN the package-index wheel pins
            # cuDNN each CUDA variant on PyTorch's indexes pins ({cu126 = "9.10.2.21"}), from
            # RELEASE.md's Release Compatibility Matrix ("CUDA 12.6 (CUDNN 9.10.2.21)")
            "variant_cudnn": f("table", required=False),
            "torchvision": f("version"),  # minor line
            "torchaudio": f("version", required=False),  # minor line
        },
        key=("torch",),
        description="One row per torch minor line, newest first.",
    ),
    "arch_list": TableSpec(
        fields={
            "torch_min": f("version"),
            "torch_max": f("version"),
            "variant": f("str"),
            "platform": f("str", choices=PLATFORMS),
            "sass": f("list[cc]"),  # native code, ascending
            # "+PTX" entries; absent = not established for release wheels (see each note)
            "ptx": f("list[cc]", required=False),
        },
        key=("torch_min", "variant", "platform"),
        description="TORCH_CUDA_ARCH_LIST of the release wheels per variant and platform.",
    ),
    "index": TableSpec(
        fields={
            "variant_kind": f("str", choices=("cuda", "rocm", "cpu", "xpu")),
            "url_template": f("str"),
            "since": f("version"),
            "until": f("version", required=False),  # last torch line served this way
            # "index": a PEP 503 index (--index-url); "find-links": a page of links (-f)
            "form": f("str", required=False, choices=("index", "find-links")),
        },
        key=("variant_kind", "since"),
        description="Wheel indexes (--index-url) and link pages (-f) on download.pytorch.org.",
    ),
}
