"""Tables of conda.toml: conda virtual packages and the conda-forge CUDA packages."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

TABLES: dict[str, TableSpec] = {
    "virtual_package": TableSpec(
        fields={
            "name": f("str"),
            "meaning": f("str"),
            "override_env": f("str", required=False),
        },
        key=("name",),
        description="Virtual packages the conda solver injects from the system.",
    ),
    "package": TableSpec(
        fields={
            "name": f("str"),
            "channel": f("str"),
            "meaning": f("str"),
        },
        key=("name", "channel"),
        description="Packages that select or pin the CUDA side of a conda environment.",
    ),
    "pytorch_build": TableSpec(
        fields={
            "pytorch": f("version"),
            "build": f("int"),  # recipe build number before the CUDA/MKL offsets
            "platform": f("str", choices=("linux-64", "linux-aarch64", "win-64")),
            "cuda": f("version"),
            "arm_variant": f("str", required=False, choices=("sbsa", "tegra")),
            "sass": f("list[cc]"),
            "ptx": f("list[cc]"),
        },
        key=("pytorch", "platform", "cuda", "arm_variant"),
        description="CUDA variants and TORCH_CUDA_ARCH_LIST of the conda-forge pytorch build.",
    ),
    "forge_build": TableSpec(
        fields={
            "package": f("str", choices=("tensorflow", "jaxlib", "cupy")),
            "version": f("version"),
            "build": f("int"),  # recipe build number before the CUDA offset (+200)
            "platform": f(
                "str", choices=("linux-64", "linux-aarch64", "win-64", "osx-64", "osx-arm64")
            ),
            "cuda": f("version", required=False),  # absent: the CPU build
            "python_min": f("version"),
            "python_max": f("version"),
            # the build-string glob that selects this build ("cuda128*", "cpu*"); absent: the
            # package has one build string per Python and cuda-version selects the CUDA build
            "build_string": f("str", required=False),
            "sass": f("list[cc]", required=False),
            "ptx": f("list[cc]", required=False),
            "companion": f("str", required=False),  # "jax": installed at the same version
        },
        key=("package", "version", "platform", "cuda"),
        description="CUDA (and CPU) builds of TensorFlow, jaxlib and CuPy on conda-forge.",
    ),
}
