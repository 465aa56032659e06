"""Whether the GPU a text names already has the newest driver it can ever have: its
architecture's last driver branch (archs.toml: Fermi R390, Kepler R470) is the driver's, by the
driver version named or by the CUDA version the driver reports (torch's "found version 9010",
nvidia-smi's "CUDA Version: 11.4"). A "driver too old" message on such a machine asks for a
driver this GPU cannot get: the build needs a GPU its CUDA still supports, or an older build."""

from __future__ import annotations

from collections.abc import Sequence

from gpuenv.diagnose.context import gpu_compute_capability
from gpuenv.explain.model import Fact
from gpuenv.facts import Snapshot
from gpuenv.kb import KnowledgeBase
from gpuenv.kb.query.cuda import ARCHS, branch_row, last_driver_branch
from gpuenv.versions import CudaVersion, DriverVersion


def gpu_at_driver_ceiling(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> bool:
    """Every GPU the text names (a model, or an architecture in words when no model is known)
    is of an architecture new driver branches no longer drive, and the driver is already on its
    last branch or later (or reports at least the CUDA that branch reports). False when no GPU,
    no such architecture or no driver is known."""
    lasts = _last_branches(facts, snapshot, kb)
    if not lasts:
        return False
    last = max(lasts)
    branches = {
        version.branch
        for observation in snapshot.driver.versions
        if (version := DriverVersion.parse(observation.value)) is not None
    }
    if branches:
        return min(branches) >= last
    ceiling = _branch_cuda(kb, last)
    reported = [
        cuda
        for observation in snapshot.driver.max_cuda
        if (cuda := CudaVersion.parse(observation.value)) is not None
    ]
    return ceiling is not None and bool(reported) and min(reported) >= ceiling


# the last driver branch of Kepler: the GPUs of architectures it or an earlier branch ended
# (Kepler, Fermi) have no kernels in any CUDA 12 or later build
KEPLER_LAST_BRANCH = 470


def gpu_before_maxwell(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> bool:
    """Every GPU the text names is of an architecture whose last driver branch is Kepler's
    (R470) or earlier, so no current framework build has kernels for it. False when no GPU
    or architecture the knowledge base knows is named, or one is newer."""
    lasts = _last_branches(facts, snapshot, kb)
    return bool(lasts) and max(lasts) <= KEPLER_LAST_BRANCH


def _last_branches(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> set[int]:
    """The last driver branch of each GPU's architecture (a GPU whose model the knowledge base
    does not know is left out; the architecture named in words stands in when none is known);
    empty when one GPU's is still open (a machine with a current GPU can take a newer
    driver)."""
    lasts: set[int] = set()
    for gpu in snapshot.gpus:
        cc = gpu_compute_capability(kb, gpu)
        if cc is None:
            continue
        found = last_driver_branch(kb, cc)
        if found is None:
            return set()
        lasts.add(found[0])
    if lasts:
        return lasts
    named = {f.value.casefold() for f in facts if f.name == "gpu_architecture"}
    for row in kb.rows(ARCHS, "architecture"):
        if str(row["name"]).casefold() in named and "last_driver_branch" in row:
            lasts.add(int(row["last_driver_branch"]))
    return lasts


def _branch_cuda(kb: KnowledgeBase, branch: int) -> CudaVersion | None:
    """The CUDA version a driver of the branch reports (R390: 9.1, R470: 11.4)."""
    row = branch_row(kb, branch)
    return CudaVersion.parse(str(row["max_cuda"])) if row and row.get("max_cuda") else None
