"""Tables of extensions.toml: compiled torch extensions (flash-attn, xformers, torch-scatter,
torch-sparse, apex) - where their prebuilt wheels are, for which torch and CUDA, and how to build
them from source when none fits. mmcv's wheels live in mmcv.toml."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

WHEELS = ("find-links", "variant-index", "release-asset", "none")

TABLES: dict[str, TableSpec] = {
    "package": TableSpec(
        fields={
            "name": f("str"),  # distribution name, canonical: "flash-attn"
            "wheels": f("str", choices=WHEELS),
            # find-links page / release asset URL; {torch} "2.8.0", {torch_line} "2.8",
            # {variant} "cu128", {cuda_major} "12", {abi} "TRUE", {py} "312", {version}
            "url_template": f("str", required=False),
            # the build-from-source command; {requirement} is the pinned distribution
            "build_command": f("str"),
            "build_env": f("list[str]", required=False),  # "FORCE_CUDA=1"
            # variables that choose the GPU code built: TORCH_CUDA_ARCH_LIST takes "8.6;9.0",
            # FLASH_ATTN_CUDA_ARCHS takes "86;90"
            "arch_env": f("list[str]"),
            # "minor": nvcc must be torch's CUDA major.minor (the build refuses another);
            # "major": the same major is required, the same minor recommended
            "nvcc_match": f("str", choices=("minor", "major")),
            "min_cc": f("cc", required=False),  # oldest GPU its kernels support
            "min_torch": f("version", required=False),  # oldest torch a source build supports
            "source_version": f("str", required=False),  # version a source build installs
            "clone": f("str", required=False),  # a git repository to build in (no sdist)
        },
        key=("name",),
        description="How each extension is installed: its wheel source and its source build.",
    ),
    "wheel": TableSpec(
        fields={
            "package": f("str"),
            "version": f("str"),  # PEP 440, may carry .postN: "0.0.32.post2"
            "torch": f("str"),  # PEP 440 specifier on torch's public version: "==2.8.*"
            # torch builds served: "cu128" (that variant), "cu12" (any CUDA 12 torch), "cpu"
            "variants": f("list[str]"),
            "windows_variants": f("list[str]", required=False),  # absent: the same as variants
            "default_variant": f("str", required=False),  # the build the package index has
            "platforms": f("list[str]"),
            "python_min": f("version", required=False),
            "python_max": f("version", required=False),
            "local": f("str", required=False),  # the version's local label: "pt{tv}{variant}"
            "built_with": f("version", required=False),  # the CUDA toolkit of the wheels
            "sass": f("list[cc]", required=False),  # GPU code in the wheels (SASS only)
        },
        key=("package", "version", "torch"),
        description="Prebuilt wheels of an extension release per torch line and variant.",
    ),
    "torch_abi": TableSpec(
        fields={
            "torch_min": f("version"),
            "torch_max": f("version", required=False),
            "variants": f("list[str]", required=False),  # absent: every Linux variant
            "cxx11_abi": f("bool"),
        },
        key=("torch_min", "cxx11_abi"),
        description="_GLIBCXX_USE_CXX11_ABI of PyTorch's Linux wheels (extension wheels match it).",
    ),
}
