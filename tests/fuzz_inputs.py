"""Fuzz targets for the inputs users and hostile machines hand gpuenv: a `--from` file, the
target interpreter's output, a requirements file. Shared by the CI-sized property tests
(tests/test_fuzz_inputs.py) and the longer run (tools/fuzz_inputs.py).

Each target takes bytes and either returns or raises a GpuenvError: any other exception is a
defect. Documents are built from structured pieces too, so the fuzzing reaches past the JSON
parser into the field checks."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from hypothesis import strategies as st

from gpuenv.errors import GpuenvError
from gpuenv.facts import to_dict
from gpuenv.plan.request import parse_requirements
from gpuenv.probe.target import parse_target_output
from gpuenv.render.jsontext import json_text
from gpuenv.snapshot_io import read_snapshot
from tests.builders import machine, torch_build

_SNAPSHOT = to_dict(
    machine(gpus=["RTX 3090"], driver="535.183.01", frameworks=[torch_build("2.4.1", "12.1")])
)
# every code point, lone surrogates included: they reach gpuenv through undecodable bytes
_TEXT = st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None), max_size=60
)
_JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _TEXT)
JSON_VALUES = st.recursive(
    _JSON_LEAF,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_TEXT, children, max_size=4),
    max_leaves=20,
)


@st.composite
def mutated_snapshots(draw: st.DrawFn) -> bytes:
    """A real snapshot document with one field replaced by an arbitrary JSON value."""
    document = json.loads(json.dumps(_SNAPSHOT))
    node = document
    path = draw(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=4))
    for step in path[:-1]:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            break
        child = node[keys[step % len(keys)]]
        if not isinstance(child, (dict, list)):
            break
        node = child
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    if keys:
        node[keys[path[-1] % len(keys)]] = draw(JSON_VALUES)
    return json_text(document).encode("utf-8", "surrogatepass")


def snapshot_target(data: bytes, folder: Path) -> None:
    path = folder / "snap.json"
    path.write_bytes(data)
    with contextlib.suppress(GpuenvError):
        read_snapshot(path)


def target_output_target(data: bytes) -> None:
    """The target script's stdout as gpuenv decodes it (UTF-8, errors replaced)."""
    env = parse_target_output(data.decode("utf-8", "replace"), "/env/bin/python").env
    assert env.interpreter == "/env/bin/python"


def requirements_target(data: bytes) -> None:
    text = data.decode("utf-8", "replace")

    def include(name: str) -> tuple[str, str]:
        return name, text[:200]

    with contextlib.suppress(GpuenvError):
        parse_requirements(text, "requirements.txt", include)


REQUIREMENT_LINES = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "torch",
                "torch>=2.4,<2.7",
                "jax[cuda12]",
                "-r other.txt",
                "-e .",
                "--index-url http://x",
                "numpy; python_version<'3.12'",
                "\\",
                "# c",
                "tensorflow[and-cuda]==2.17.*",
                "./local.whl",
                "cupy-cuda12x",
            ]
        ),
        _TEXT,
    ),
    max_size=12,
).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass"))

TARGET_DOCUMENTS = st.one_of(
    st.binary(max_size=400),
    JSON_VALUES.map(lambda v: json.dumps({"probe_version": 1, "interpreter": v}).encode()),
    st.builds(
        lambda d, f: json.dumps({"probe_version": 1, "distributions": d, "frameworks": f}).encode(),
        JSON_VALUES,
        JSON_VALUES,
    ),
)
