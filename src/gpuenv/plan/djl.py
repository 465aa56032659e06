"""DJL (and QuPath, which runs PyTorch through DJL): which PyTorch native version and CUDA flavor
the engine should load on this machine. The newest DJL release first; within it the newest PyTorch
whose CUDA flavor the driver runs and whose architecture list covers every GPU."""

from __future__ import annotations

from gpuenv.diagnose.choose import variant_cuda
from gpuenv.kb import Row
from gpuenv.kb.query.frameworks import djl_setting, torch_arch_list, torch_release
from gpuenv.plan.candidate import Candidate, judge
from gpuenv.plan.model import DjlPlan, Rejection, Unplaced
from gpuenv.plan.request import Want
from gpuenv.plan.target import Target
from gpuenv.versions import ComputeCapability, sortable

SUBJECT = "djl"
_PLATFORMS = ("linux-x86_64", "windows-x86_64", "linux-aarch64")


def plan_djl(target: Target, want: Want) -> tuple[DjlPlan | None, Unplaced]:
    """The DJL settings for the target, or None with every rejection."""
    rejected: list[Rejection] = []
    for candidate in djl_candidates(target):
        reasons = judge(candidate, target, want)
        if reasons:
            rejected.extend(reasons)
            continue
        return _plan(target, candidate, tuple(rejected)), Unplaced("djl", ())
    return None, Unplaced("djl", tuple(rejected))


def djl_candidates(target: Target) -> list[Candidate]:
    rows = sorted(
        target.kb.rows(SUBJECT, "release"),
        key=lambda r: (sortable(str(r["djl"])), sortable(str(r["pytorch"]))),
        reverse=True,
    )
    out: list[Candidate] = []
    for row in rows:
        flavors = [str(f) for f in row["cuda_flavors"]] if target.wants_gpu else ["cpu"]
        out.extend(_candidate(target, row, flavor) for flavor in flavors)
    return out


def _candidate(target: Target, row: Row, flavor: str) -> Candidate:
    pytorch = str(row["pytorch"])
    cuda = variant_cuda(flavor)
    found = torch_arch_list(target.kb, pytorch, flavor, _arch_platform(target)) if cuda else None
    sass: tuple[ComputeCapability, ...] | None = tuple(found[0]) if found else None
    return Candidate(
        framework="djl",
        name="djl",
        version=str(row["djl"]),
        build=f"pytorch {pytorch} {flavor}",
        cuda=cuda,
        sass=sass if cuda else (),
        ptx=tuple(found[1]) if found else (),
        strict_arch=True,
        platforms=_PLATFORMS,
        why=f"DJL {row['djl']} loads PyTorch {pytorch} ({flavor})"
        + (" — the engine's default" if row.get("default") else ""),
    )


def _arch_platform(target: Target) -> str:
    return target.platform if target.platform in _PLATFORMS else "linux-x86_64"


def _plan(target: Target, candidate: Candidate, rejected: tuple[Rejection, ...]) -> DjlPlan:
    pytorch, flavor = candidate.build.split()[1:3]
    release = torch_release(target.kb, pytorch)
    cudnn = str(release["cudnn"]) if release and release.get("cudnn") else None
    env = tuple(
        (name, value)
        for name, value in (("PYTORCH_VERSION", pytorch), ("PYTORCH_FLAVOR", flavor))
        if djl_setting(target.kb, name) is not None
    )
    return DjlPlan(
        djl=candidate.version,
        pytorch=pytorch,
        flavor=flavor,
        cuda=candidate.cuda.short if candidate.cuda else None,
        cudnn_major=int(cudnn.split(".")[0]) if cudnn and candidate.cuda else None,
        env=env,
        why=candidate.why,
        rejected=rejected,
    )
