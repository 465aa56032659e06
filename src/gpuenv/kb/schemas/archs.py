"""Tables of archs.toml: GPU architectures, toolkit compile targets, binary-compatibility rules."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

TABLES: dict[str, TableSpec] = {
    "architecture": TableSpec(
        fields={
            "name": f("str"),
            "ccs": f("list[cc]"),
            "first_cuda": f("version"),
            "last_cuda": f("version", required=False),
            "last_driver_branch": f("int", required=False),
        },
        key=("name", "ccs"),
        description="A GPU architecture: its compute capabilities and the toolkits that target it; "
        "last_cuda is the last toolkit major.minor that can compile for it",
    ),
    "toolkit_targets": TableSpec(
        fields={
            "cuda": f("version"),
            "cuda_until": f("version", required=False),
            "sass": f("list[cc]"),
            "ptx_min_cc": f("cc", required=False),
        },
        key=("cuda",),
        description="Real (SASS) targets accepted by the toolkits from cuda through cuda_until "
        "(inclusive, major.minor); 'a'/'f' suffixes are arch-specific/family targets",
    ),
    "rule": TableSpec(
        fields={"id": f("str"), "text": f("str")},
        key=("id",),
        description="SASS/PTX compatibility rules in words; kb.query.cuda implements them",
    ),
}
