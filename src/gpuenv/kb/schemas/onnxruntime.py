"""Tables of onnxruntime.toml: the CUDA and cuDNN lines of the onnxruntime-gpu builds."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

TABLES: dict[str, TableSpec] = {
    "release": TableSpec(
        fields={
            "onnxruntime": f("version"),  # minor line, "1.18"
            "package": f("str"),
            "cuda_major": f("int"),
            # the CUDA the source names: "11.8", or only the major ("12") where it says 12.x
            "cuda": f("version"),
            "cudnn": f("version", required=False),  # "8.2.4", or the major ("9") alone
            "pypi_default": f("bool"),  # this build is what the package index serves
        },
        key=("onnxruntime", "package", "cuda_major"),
        description="One row per ORT minor line and CUDA build.",
    ),
}
