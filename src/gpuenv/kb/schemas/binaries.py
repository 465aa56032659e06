"""Tables of binaries.toml: the GPU code compiled into released framework wheels, read from the
wheels' own `.nv_fatbin` sections (`gpuenv kb refresh --archs`), the ground truth for which GPUs
a build runs on natively (SASS) and through JIT-compiled PTX."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows-x86_64")

TABLES: dict[str, TableSpec] = {
    "build": TableSpec(
        fields={
            "package": f("str"),  # distribution: torch, tensorflow, jax-cuda12-plugin, ...
            "version": f("version"),  # the exact release whose wheel was read
            "variant": f("str"),  # "cu126", "cu130" ... or "index" for the package index's build
            "platform": f("str", choices=PLATFORMS),
            # the CUDA toolkit the build used: PTX in it JIT-compiles only on a driver whose own
            # CUDA is at least this (minor-version compatibility does not cover PTX)
            "cuda": f("version"),
            "sass": f("list[cc]"),  # native code, ascending: "8.0", "9.0a", "10.0f"
            "ptx": f("list[cc]"),  # PTX targets: run on newer GPUs through the driver's JIT
            # the newest PTX ISA version among the .nv_fatbin PTX entries ("8.1"): older than
            # `cuda`'s own ISA where the build's compiler is clang (TensorFlow); PTX JIT is still
            # judged against `cuda`, since such a build also carries PTX outside .nv_fatbin (its
            # MLIR-generated kernels) written for its CUDA
            "ptx_isa": f("version", required=False),
            "wheel": f("str"),  # the wheel file the lists were read from
            "libraries": f("list[str]", required=False),  # members of the wheel that were read
        },
        key=("package", "version", "variant", "platform"),
        description="SASS and PTX architectures compiled into a framework wheel, read from it.",
    ),
}
