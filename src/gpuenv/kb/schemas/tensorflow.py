"""Tables of tensorflow.toml: TensorFlow tested GPU build configurations."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

TABLES: dict[str, TableSpec] = {
    "release": TableSpec(
        fields={
            "tensorflow": f("version"),  # minor line, "2.15"
            "python_min": f("version"),
            "python_max": f("version"),
            "cuda": f("version"),
            "cudnn": f("version"),
            "platform": f("str", choices=("linux", "windows")),
            "and_cuda": f("bool"),  # the package has the [and-cuda] extra
            "gpu_native_windows": f("bool", required=False),
        },
        key=("tensorflow", "platform"),
        description="Tested build configurations (GPU) from the TensorFlow install docs.",
    ),
    "runtime_codegen": TableSpec(
        fields={"tensorflow_min": f("version")},
        key=("tensorflow_min",),
        description="TensorFlow lines that compile kernels at run time for the GPU they find "
        "with their own CUDA: a GPU that CUDA cannot compile for does not run.",
    ),
    "windows_gpu": TableSpec(
        fields={"last_native": f("version")},
        key=("last_native",),
        description="The last TensorFlow line with CUDA support on native Windows.",
    ),
}
