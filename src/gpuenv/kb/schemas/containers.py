"""Tables of containers.toml: NVIDIA CUDA container images."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

ARCHES = ("x86_64", "sbsa", "any")
CUDNN_TAGS = ("cudnn8", "cudnn9", "cudnn")
FLAVORS = (
    "base",
    "runtime",
    "devel",
    "cudnn-runtime",
    "cudnn-devel",
    "tensorrt-runtime",
    "tensorrt-devel",
)

TABLES: dict[str, TableSpec] = {
    "cuda_image": TableSpec(
        fields={
            "cuda": f("version"),
            "arch": f("str", choices=ARCHES),
            "distros": f("list[str]"),
            "require_cuda": f("str"),
            # the cuDNN images of the release: cuDNN version, the word their tags use
            # ("12.2.2-cudnn8-runtime-...", "12.4.1-cudnn-runtime-..."), and their distros
            "cudnn": f("version", required=False),
            "cudnn_tag": f("str", required=False, choices=CUDNN_TAGS),
            "cudnn_distros": f("list[str]", required=False),
        },
        key=("cuda", "arch"),
        description="NVIDIA_REQUIRE_CUDA of NVIDIA's CUDA image for a release, verbatim; "
        "arch 'any' when amd64 and arm64 images carry the same value; cudnn/cudnn_tag/"
        "cudnn_distros describe its cuDNN images (absent: none)",
    ),
    "require_rule": TableSpec(
        fields={"id": f("str"), "text": f("str")},
        key=("id",),
        description="How nvidia-container-cli evaluates NVIDIA_REQUIRE_CUDA",
    ),
    "tag_pattern": TableSpec(
        fields={
            "flavor": f("str", choices=FLAVORS),
            "template": f("str"),
            "dockerfile": f("str"),
            "since_cuda": f("version", required=False),
        },
        key=("flavor",),
        description="Tag template and source Dockerfile of NVIDIA's CUDA images, per flavor",
    ),
}
