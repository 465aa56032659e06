"""Tables of cupy.toml: which CuPy wheel package serves which CUDA toolkit."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

TABLES: dict[str, TableSpec] = {
    "package": TableSpec(
        fields={
            "package": f("str"),
            "cuda_major": f("int"),
            "cuda_min": f("version"),
            "cuda_max": f("version", required=False),  # absent: the whole CUDA major
            "cupy_min": f("version"),  # earliest CuPy release checked that lists it
            "cupy_max": f("version", required=False),  # absent: still current
        },
        key=("package", "cupy_min"),
        description="CuPy wheel package names from the CuPy installation guide.",
    ),
}
