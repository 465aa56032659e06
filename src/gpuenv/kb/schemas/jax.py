"""Tables of jax.toml: JAX CUDA extras and the CUDA/cuDNN/driver/GPU floors per release range."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

TABLES: dict[str, TableSpec] = {
    "release": TableSpec(
        fields={
            "jax_min": f("version"),
            "jax_max": f("version", required=False),  # absent: still current
            "cuda_major": f("int"),
            "extras": f("list[str]"),  # the jax[...] extras for this CUDA major
            "python_min": f("version"),
            "cuda_min": f("version"),
            "cudnn_min": f("version", required=False),
            "min_cc": f("cc", required=False),
            "min_driver": f("version", required=False),  # Linux
        },
        key=("jax_min", "cuda_major"),
        description="One row per jax release range and CUDA major.",
    ),
}
