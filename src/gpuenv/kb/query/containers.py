"""NVIDIA CUDA container images: NVIDIA_REQUIRE_CUDA parsing and lookups over containers.toml.

NVIDIA_REQUIRE_CUDA is a small language evaluated by nvidia-container-cli (libnvidia-container
src/cli/dsl.c): space-separated terms are alternatives (OR), comma-separated conditions inside a
term must all hold (AND); a condition is key<op>value with key cuda, driver, arch or brand (any
case) and op one of = != < <= > >=. `parse_require_cuda` never raises: text it cannot read ends
up in `RequireCuda.invalid`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuenv.kb.model import KnowledgeBase, Row
from gpuenv.versions import CudaVersion, DriverVersion, dotted

SUBJECT = "containers"
KEYS = ("cuda", "driver", "arch", "brand")
MAX_TEXT = 20_000  # the longest real value is ~2,200 characters
_CONDITION = re.compile(r"^([A-Za-z_]+)(<=|>=|!=|=|<|>)(.+)$")
_NUMERIC = re.compile(r"^\d+(\.\d+)*$")
_ARCH_ALIASES = {
    "amd64": "x86_64",
    "x86_64": "x86_64",
    "arm64": "sbsa",
    "aarch64": "sbsa",
    "sbsa": "sbsa",
}


@dataclass(frozen=True)
class Condition:
    key: str  # cuda | driver | arch | brand (lower case)
    op: str
    value: str


@dataclass(frozen=True)
class RequireCuda:
    """A parsed NVIDIA_REQUIRE_CUDA value."""

    text: str
    terms: tuple[tuple[Condition, ...], ...]  # alternatives; each an AND of conditions
    invalid: tuple[str, ...] = ()  # terms that are not valid conditions

    @property
    def cuda_min(self) -> CudaVersion | None:
        """X.Y of the first term when it is a lone 'cuda>=X.Y' (the image's own CUDA)."""
        first = self.terms[0] if self.terms else ()
        if len(first) == 1 and first[0].key == "cuda" and first[0].op == ">=":
            return CudaVersion.parse(first[0].value)
        return None

    def driver_branches(self) -> tuple[int, ...]:
        """Branches B admitted by a 'driver>=B,driver<B+1' range in some term, sorted."""
        branches = set()
        for term in self.terms:
            low = [c for c in term if c.key == "driver" and c.op == ">="]
            high = [c for c in term if c.key == "driver" and c.op == "<"]
            for lo in low:
                for hi in high:
                    if lo.value.isdigit() and hi.value == str(int(lo.value) + 1):
                        branches.add(int(lo.value))
        return tuple(sorted(branches))

    def brands(self) -> frozenset[str]:
        return frozenset(c.value.lower() for t in self.terms for c in t if c.key == "brand")

    def allows(
        self,
        driver_cuda: CudaVersion | None = None,
        driver: DriverVersion | None = None,
        brand: str | None = None,
    ) -> bool | None:
        """Would nvidia-container-cli start the container?

        None when an input a term needs is missing, or when the value holds terms that are not
        valid conditions (nvidia-container-cli may then stop with "invalid expression").
        """
        if self.invalid:
            return None
        results = [_term(term, driver_cuda, driver, brand) for term in self.terms]
        if True in results or not results:
            return True
        return None if None in results else False


def parse_require_cuda(text: str) -> RequireCuda:
    """Parse an NVIDIA_REQUIRE_CUDA value; garbage goes to `invalid`, nothing raises."""
    raw = (text or "")[:MAX_TEXT].strip().strip('"')
    terms: list[tuple[Condition, ...]] = []
    invalid: list[str] = []
    for term in raw.split():
        conditions = [_condition(part) for part in term.split(",") if part]
        if conditions and all(c is not None for c in conditions):
            terms.append(tuple(c for c in conditions if c is not None))
        else:
            invalid.append(term)
    return RequireCuda(text=raw, terms=tuple(terms), invalid=tuple(invalid))


def image_row(kb: KnowledgeBase, cuda: CudaVersion | str, arch: str = "x86_64") -> Row | None:
    """The cuda_image row of exactly this release (12.8 means 12.8.0) for an architecture."""
    wanted = cuda if isinstance(cuda, CudaVersion) else CudaVersion.parse(cuda)
    arch_name = _ARCH_ALIASES.get(arch.strip().lower())
    if wanted is None or arch_name is None:
        return None
    rows = [r for r in kb.rows(SUBJECT, "cuda_image") if CudaVersion.parse(r["cuda"]) == wanted]
    for want in (arch_name, "any"):
        for row in rows:
            if row["arch"] == want:
                return row
    return None


def image_require_cuda(
    kb: KnowledgeBase, cuda: CudaVersion | str, arch: str = "x86_64"
) -> str | None:
    """NVIDIA_REQUIRE_CUDA of NVIDIA's image for this CUDA release, verbatim, when known."""
    row = image_row(kb, cuda, arch)
    return str(row["require_cuda"]) if row else None


def image_tag(kb: KnowledgeBase, cuda: CudaVersion | str, flavor: str, os: str) -> str | None:
    """'12.8.1-cudnn-runtime-ubuntu24.04' from the tag template; None for an unknown flavor.

    A cuDNN flavor takes the word the release's own tags use ('12.2.2-cudnn8-runtime-...') and
    gives None when NVIDIA published no cuDNN image of that release for that distro.
    """
    for row in kb.rows(SUBJECT, "tag_pattern"):
        if row["flavor"] != flavor:
            continue
        cudnn_tag = ""
        if flavor.startswith("cudnn-"):
            image = image_cudnn(kb, cuda, distro=os)
            if image is None:
                return None
            cudnn_tag = image[1]
        template = str(row["template"])
        return template.format(
            cuda=str(cuda).strip(), flavor=flavor, os=os.strip(), cudnn_tag=cudnn_tag
        )
    return None


def image_cudnn(
    kb: KnowledgeBase, cuda: CudaVersion | str, arch: str = "x86_64", distro: str | None = None
) -> tuple[str, str] | None:
    """(cuDNN version, tag word) of NVIDIA's cuDNN image of this CUDA release: ('8.9.6.50',
    'cudnn8') for 12.2.2. None when the release (or, given a distro such as 'ubuntu22.04' or
    'ubuntu2204', that distro) has no cuDNN image or the table does not list the release."""
    row = image_row(kb, cuda, arch)
    if row is None or "cudnn" not in row or "cudnn_tag" not in row:
        return None
    folder = distro.strip().replace(".", "") if distro else None
    if folder is not None and folder not in row.get("cudnn_distros", ()):
        return None
    return str(row["cudnn"]), str(row["cudnn_tag"])


def _condition(text: str) -> Condition | None:
    match = _CONDITION.match(text.strip())
    if not match or match.group(1).lower() not in KEYS:
        return None
    key, op, value = match.group(1).lower(), match.group(2), match.group(3)
    if key in ("cuda", "driver") and not _NUMERIC.match(value):
        return None  # nvidia-container-cli rejects a non-numeric version as invalid
    return Condition(key, op, value)


def _term(
    term: tuple[Condition, ...],
    driver_cuda: CudaVersion | None,
    driver: DriverVersion | None,
    brand: str | None,
) -> bool | None:
    results = [_check(c, driver_cuda, driver, brand) for c in term]
    if False in results:
        return False
    return None if None in results else True


def _check(
    condition: Condition,
    driver_cuda: CudaVersion | None,
    driver: DriverVersion | None,
    brand: str | None,
) -> bool | None:
    if condition.key == "brand":
        if brand is None or condition.op not in ("=", "!="):
            return None
        same = brand.strip().lower() == condition.value.lower()
        return same if condition.op == "=" else not same
    if condition.key == "cuda":
        have = (driver_cuda.major, driver_cuda.minor) if driver_cuda else None
        return _compare(have, condition)
    if condition.key == "driver":
        return _compare(driver.parts if driver else None, condition)
    return None  # arch: the GPU architecture is not an input here


def _compare(have: tuple[int, ...] | None, condition: Condition) -> bool | None:
    want = dotted(condition.value)
    if have is None or want is None:
        return None
    width = max(len(have), len(want))
    left = have + (0,) * (width - len(have))
    right = want + (0,) * (width - len(want))
    return {
        "=": left == right,
        "!=": left != right,
        "<": left < right,
        "<=": left <= right,
        ">": left > right,
        ">=": left >= right,
    }[condition.op]
