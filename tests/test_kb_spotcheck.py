"""Curated framework rows agree with what the package index's real metadata says.

The generated `wheels.toml` holds the Requires-Dist pins read from the index's core metadata
(`gpuenv kb refresh`); the curated TensorFlow and JAX tables come from the projects' documents.
Where both speak about the same release, they must agree on CUDA and cuDNN.
"""

from __future__ import annotations

import pytest
from packaging.version import Version

from gpuenv.kb import Row, default_kb
from gpuenv.kb.query.frameworks import jax_rows, tf_release

KB = default_kb()


def _wheel_rows(package: str) -> list[Row]:
    return [r for r in KB.rows("wheels", "release") if r["package"] == package and r.get("cuda")]


def _major_minor(text: str) -> str:
    return ".".join(str(text).split(".")[:2])


@pytest.mark.parametrize("row", _wheel_rows("tensorflow"), ids=lambda r: str(r["version"]))
def test_tensorflow_and_cuda_pins_agree_with_the_tested_configurations(row: Row) -> None:
    version = str(row["version"]).split(".post")[0]
    curated = tf_release(KB, version, "linux")
    if curated is None:
        pytest.skip(f"tensorflow {version} has no curated row")
    assert _major_minor(row["cuda"]) == _major_minor(curated["cuda"])
    assert str(row["cudnn"]).startswith(str(curated["cudnn"]))


@pytest.mark.parametrize(
    "row",
    _wheel_rows("jax-cuda12-plugin") + _wheel_rows("jax-cuda13-plugin"),
    ids=lambda r: f"{r['package']}-{r['version']}",
)
def test_jax_plugin_pins_agree_with_the_jax_table(row: Row) -> None:
    major = 13 if "cuda13" in str(row["package"]) else 12
    curated = [r for r in jax_rows(KB, str(row["version"])) if r.get("cuda_major") == major]
    if not curated:
        pytest.skip(f"jax {row['version']} has no curated CUDA {major} row")
    assert _major_minor(row["cuda"]) == _major_minor(curated[0]["cuda_min"])
    if curated[0].get("cudnn_min") and row.get("cudnn"):
        # the docs' floor (also what cuda1N-local needs); [with-cuda] may pin a newer cuDNN
        # (jax-cuda13-plugin asks >=9.12, jax-cuda12-plugin 0.11.2+ >=9.10), never an older one
        assert Version(str(row["cudnn"])) >= Version(str(curated[0]["cudnn_min"]))


def test_there_is_something_to_compare() -> None:
    assert _wheel_rows("tensorflow"), (
        "wheels.toml lost its tensorflow pins: run `gpuenv kb refresh`"
    )
