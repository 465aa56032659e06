"""Facts read from a text as a Snapshot of the reporter's machine (partial: what the text shows),
and that snapshot filled in from this machine's where the text is silent."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence

from gpuenv.explain.model import Fact
from gpuenv.facts import (
    BinaryArchFacts,
    DistributionFacts,
    DriverFacts,
    FrameworkBuild,
    GpuFacts,
    HostFacts,
    JetsonFacts,
    LibraryFacts,
    Observation,
    PythonEnvFacts,
    Snapshot,
    ToolkitFacts,
    missing,
)
from gpuenv.kb import KnowledgeBase
from gpuenv.kb.query.cuda import toolkit_min_driver
from gpuenv.versions import CudaVersion, cudnn_from_code

PASTED = "pasted"
# readers whose GPU list is complete, best first (a message naming one GPU is not)
_GPU_READERS = (
    "nvidia-smi -q",
    "nvidia-smi --query-gpu",
    "nvidia-smi -L",
    "nvidia-smi",
    "collect_env",
    "nvidia-container-cli info",
    "tensorflow",
    "jax.print_environment_info",
)


def normalise(facts: Iterable[Fact]) -> list[Fact]:
    """Derived forms: the driver's CUDA from cudaDriverGetVersion's integer, cuDNN's version from
    its integer, a compute capability from sm_86, a Python version from a cp310 tag; duplicates
    dropped."""
    out: list[Fact] = []
    seen: set[tuple[object, ...]] = set()
    for fact in facts:
        for item in _derived(fact):
            # GPUs repeat (four of the same card); the same line read twice does not
            key = (item.name, item.value) + (
                (item.reader, item.line, item.details) if item.name == "gpu" else ()
            )
            if key not in seen:
                seen.add(key)
                out.append(item)
    return out


def _derived(fact: Fact) -> list[Fact]:
    value = fact.value
    if fact.name == "arch" and value != value.lower():
        return [dataclasses.replace(fact, value=value.lower())]
    if fact.name == "driver_cuda_code" and value.isdigit():
        code = int(value)
        return [
            fact,
            dataclasses.replace(
                fact, name="driver_max_cuda", value=f"{code // 1000}.{code % 1000 // 10}"
            ),
        ]
    if fact.name == "torch_version":
        label = re.search(r"\+cu(\d{1,2})(\d)$", value)
        cuda = f"{label.group(1)}.{label.group(2)}" if label else None
        return [fact] + ([dataclasses.replace(fact, name="torch_cuda", value=cuda)] if cuda else [])
    if fact.name == "cudnn_code" and value.isdigit():
        return [
            fact,
            dataclasses.replace(fact, name="cudnn_version", value=cudnn_from_code(int(value))),
        ]
    if fact.name == "sm":
        match = re.fullmatch(r"sm_(\d+)(\d)", value)
        return (
            [dataclasses.replace(fact, name="cc", value=f"{match.group(1)}.{match.group(2)}")]
            if match
            else []
        )
    if fact.name == "tensorflow_version":
        line = re.match(r"(\d+\.\d+)", value)
        return [fact] + (
            [dataclasses.replace(fact, name="tensorflow_release", value=line.group(1))]
            if line
            else []
        )
    if fact.name == "package" and re.search(
        r"(?:^|[-_])(?:cuda\d*|cu\d{2,3}|gpu)(?:$|[-_.=+])|^nvidia-", value, re.IGNORECASE
    ):
        return [fact, dataclasses.replace(fact, name="package_gpu_build", value="true")]
    if fact.name == "package_version" and re.search(r"\+(?:cu\d{2,3}|cuda\d{2})\b", value):
        return [fact, dataclasses.replace(fact, name="package_gpu_build", value="true")]
    if fact.name in ("jetson_model", "jetpack", "l4t"):
        return [fact, dataclasses.replace(fact, name="jetson", value="true")]
    if fact.name == "python_tag":
        match = re.fullmatch(r"(?:cp)?(\d)(\d{1,2})", value)
        return (
            [
                dataclasses.replace(
                    fact, name="python_version", value=f"{match.group(1)}.{match.group(2)}"
                )
            ]
            if match
            else []
        )
    return [fact]


def first(facts: Sequence[Fact], name: str) -> Fact | None:
    return next((f for f in facts if f.name == name), None)


def _obs(fact: Fact | None, what: str) -> Observation[str]:
    if fact is None:
        return missing(PASTED, f"the text does not show the {what}")
    return Observation(fact.value, _source(fact), fact.raw)


def _source(fact: Fact) -> str:
    where = f"line {fact.line}" if fact.line else "this machine"
    return f"{PASTED}: {fact.reader}, {where}" if fact.origin == PASTED else fact.reader


def to_snapshot(facts: Sequence[Fact]) -> Snapshot:
    """The reporter's machine as far as the facts show it."""
    return Snapshot(
        host=_host(facts),
        driver=_driver(facts),
        gpus=_gpus(facts),
        toolkits=tuple(
            ToolkitFacts(f.value, None, _source(f), on_path=True, raw=f.raw)
            for f in facts
            if f.name == "toolkit_cuda"
        )[:1],
        libraries=_libraries(facts),
        python_env=_python_env(facts),
        binaries=_binaries(facts),
        origin="pasted report",
        redacted=False,
    )


def _host(facts: Sequence[Fact]) -> HostFacts:
    os_fact = first(facts, "os")
    os_obs = _obs(os_fact, "operating system")
    arch = first(facts, "arch")
    l4t, model, jetpack = first(facts, "l4t"), first(facts, "jetson_model"), first(facts, "jetpack")
    jetson: Observation[JetsonFacts] = missing(PASTED, "no Jetson in the text")
    if l4t or model:
        holder = l4t or model
        assert holder is not None
        jetson = Observation(
            JetsonFacts(
                l4t.value if l4t else None,
                model.value if model else None,
                jetpack.value if jetpack else None,
            ),
            _source(holder),
            holder.raw,
        )
    wsl = first(facts, "wsl")
    container = first(facts, "container")
    env = {}
    require = first(facts, "nvidia_require_cuda")
    if require:
        env["NVIDIA_REQUIRE_CUDA"] = re.sub(r"\s+", "", require.value)
    return HostFacts(
        os=os_obs,
        arch=_obs(arch, "architecture") if arch else _obs(None, "architecture"),
        distro=_obs(first(facts, "distro"), "OS release"),
        wsl=Observation(True, _source(wsl), wsl.raw) if wsl else missing(PASTED, "not in the text"),
        container=_obs(container, "container") if container else missing(PASTED, "not in the text"),
        jetson=jetson,
        env=env,
    )


def _driver(facts: Sequence[Fact]) -> DriverFacts:
    versions = [_obs(f, "") for f in facts if f.name in ("driver_version", "client_driver_version")]
    versions += [
        Observation(f.value, f"{_source(f)} (kernel module)", f.raw)
        for f in facts
        if f.name == "kernel_module_version"
    ]
    return DriverFacts(
        versions=tuple(_unique(versions)),
        max_cuda=tuple(_unique(_obs(f, "") for f in facts if f.name == "driver_max_cuda")),
        failures=tuple(_unique(_obs(f, "") for f in facts if f.name == "driver_failure")),
    )


def _unique(observations: Iterable[Observation[str]]) -> list[Observation[str]]:
    out: dict[str, Observation[str]] = {}
    for obs in observations:
        out.setdefault(f"{obs.value}|{'kernel' in obs.source}", obs)
    return list(out.values())


def _gpus(facts: Sequence[Fact]) -> tuple[GpuFacts, ...]:
    named = [f for f in facts if f.name == "gpu"]
    reader = next((r for r in _GPU_READERS if any(f.reader == r for f in named)), None)
    chosen = [f for f in named if f.reader == reader] if reader else named[:1]
    if reader is None and named:
        chosen = list({f.value: f for f in named}.values())
    ccs = [f for f in facts if f.name == "cc"]
    gpus = []
    for index, fact in enumerate(chosen):
        cc = fact.detail("cc") or next((c.value for c in ccs if c.line == fact.line), None)
        if cc is None and len(chosen) == 1 and len(ccs) == 1:
            cc = ccs[0].value
        memory = fact.detail("memory_mib")
        gpus.append(
            GpuFacts(
                index=index,
                name=fact.value,
                source=_source(fact),
                pci_device_id=fact.detail("pci_device_id"),
                compute_capability=cc,
                memory_mib=int(memory) if memory and memory.isdigit() else None,
                mig_mode=fact.detail("mig_mode"),
            )
        )
    return tuple(gpus)


def _libraries(facts: Sequence[Fact]) -> tuple[LibraryFacts, ...]:
    cudnn = first(facts, "cudnn_version")
    if cudnn is None:
        return ()
    major = cudnn.value.split(".")[0]
    return (LibraryFacts(f"libcudnn.so.{major}", f"({_source(cudnn)})", "system", cudnn.value),)


def _python_env(facts: Sequence[Fact]) -> PythonEnvFacts | None:
    python = first(facts, "python_version")
    frameworks = tuple(b for b in (_torch(facts), _tensorflow(facts), *_jax(facts)) if b)
    distributions = tuple(
        DistributionFacts(name, version, installer=f.reader.split()[0])
        for f in facts
        if f.name == "package" and "==" in f.value
        for name, version in [f.value.split("==", 1)]
    )
    if python is None and not frameworks and not distributions:
        return None
    return PythonEnvFacts(
        interpreter="(pasted report)",
        python_version=python.value if python else None,
        manager="conda" if any(f.reader.startswith("conda") for f in facts) else None,
        distributions=distributions,
        frameworks=frameworks,
    )


def _torch(facts: Sequence[Fact]) -> FrameworkBuild | None:
    version = first(facts, "torch_version")
    cuda = first(facts, "torch_cuda")
    rocm = first(facts, "torch_rocm")
    mentioned = any(f.name == "framework" and f.value == "torch" for f in facts)
    archs = first(facts, "torch_archs")
    if not (version or cuda or rocm or mentioned or archs):
        return None
    label = version.value.partition("+")[2] if version else ""
    cuda_value = cuda.value if cuda and cuda.value.lower() != "none" else None
    if cuda_value is None and re.fullmatch(r"cu\d{2,3}", label):
        cuda_value = f"{label[2:-1]}.{label[-1]}"
    cpu = (
        label == "cpu"
        or (cuda is not None and cuda.value.lower() == "none")
        or (version is not None and "cpu" in (version.detail("build") or ""))
    )
    gpu_build: bool | None = False if cpu else (True if cuda_value or archs else None)
    if gpu_build is None and rocm is None and _says_cuda_torch(facts):
        gpu_build = True
    holder = version or cuda or rocm or archs
    return FrameworkBuild(
        name="torch",
        version=version.value if version else None,
        framework_cuda=cuda_value,
        hip_version=rocm.value if rocm else None,
        variant=label or None,
        is_gpu_build=gpu_build,
        source=_source(holder) if holder else PASTED,
    )


def _says_cuda_torch(facts: Sequence[Fact]) -> bool:
    """torch printed a CUDA message (a driver too old, a GPU too new): it is a CUDA build."""
    return any(f.name in ("driver_cuda_code", "sm") for f in facts)


def _tensorflow(facts: Sequence[Fact]) -> FrameworkBuild | None:
    version, cuda = first(facts, "tensorflow_version"), first(facts, "tensorflow_cuda")
    built = first(facts, "tensorflow_cuda_build")
    if not (version or cuda or built):
        return None
    holder = version or cuda or built
    assert holder is not None
    return FrameworkBuild(
        name="tensorflow",
        version=version.value if version else None,
        framework_cuda=cuda.value if cuda else None,
        cudnn_version=(first(facts, "tensorflow_cudnn") or Fact("", "", None, "", "")).value
        or None,
        is_gpu_build=(built.value == "true") if built else (True if cuda else None),
        source=_source(holder),
    )


def _jax(facts: Sequence[Fact]) -> list[FrameworkBuild]:
    out = []
    for name in ("jax", "jaxlib"):
        version = first(facts, f"{name}_version")
        if version:
            out.append(FrameworkBuild(name=name, version=version.value, source=_source(version)))
    return out


def _binaries(facts: Sequence[Fact]) -> tuple[BinaryArchFacts, ...]:
    archs = first(facts, "torch_archs")
    if archs is None:
        return ()
    words = re.findall(r"(?:sm|compute)_\d+[a-z]?", archs.value)
    return (
        BinaryArchFacts(
            path=f"({_source(archs)}: the architectures torch lists)",
            package="torch",
            sass=tuple(w for w in words if w.startswith("sm_")),
            ptx=tuple(w for w in words if w.startswith("compute_")),
        ),
    )


# -- this machine fills what the text does not say -----------------------------------------------


def fill_from(pasted: Snapshot, local: Snapshot) -> Snapshot:
    """The pasted snapshot, each part the text left empty taken from this machine's."""
    host = pasted.host
    fields = {}
    for name in (
        "os",
        "arch",
        "distro",
        "kernel",
        "libc",
        "wsl",
        "container",
        "jetson",
        "apple_mps",
        "rocm",
    ):
        mine: Observation[object] = getattr(host, name)
        if mine.value is None:
            fields[name] = getattr(local.host, name)
    env = {**local.host.env, **host.env}
    driver = pasted.driver
    if not driver.versions and not driver.failures:
        driver = local.driver
    return dataclasses.replace(
        pasted,
        host=dataclasses.replace(host, env=env, **fields),
        driver=driver,
        gpus=pasted.gpus or local.gpus,
        pci_gpus=pasted.pci_gpus or (local.pci_gpus if not pasted.gpus else ()),
        toolkits=pasted.toolkits or local.toolkits,
        libraries=pasted.libraries or local.libraries,
        python_env=_fill_env(pasted.python_env, local.python_env),
        binaries=pasted.binaries or local.binaries,
        origin="pasted report + this machine",
    )


def _fill_env(pasted: PythonEnvFacts | None, local: PythonEnvFacts | None) -> PythonEnvFacts | None:
    if pasted is None or local is None:
        return pasted or local
    names = {f.name for f in pasted.frameworks}
    dists = {d.name.lower() for d in pasted.distributions}
    return dataclasses.replace(
        local,
        python_version=pasted.python_version or local.python_version,
        frameworks=pasted.frameworks + tuple(f for f in local.frameworks if f.name not in names),
        distributions=pasted.distributions
        + tuple(d for d in local.distributions if d.name.lower() not in dists),
    )


def assume_platform(snapshot: Snapshot) -> Snapshot:
    """Without a word about the OS, plans assume Linux x86-64 (said in the snapshot)."""
    host = snapshot.host
    if host.os.value is not None and host.arch.value is not None:
        return snapshot
    os_obs = (
        host.os
        if host.os.value
        else Observation("linux", "assumed", None, "the text does not say; Linux assumed")
    )
    arch = "arm64" if os_obs.value == "darwin" else "x86_64"
    if snapshot.host.jetson.value:
        arch = "aarch64"
    arch_obs = (
        host.arch
        if host.arch.value
        else Observation(arch, "assumed", None, f"the text does not say; {arch} assumed")
    )
    return dataclasses.replace(snapshot, host=dataclasses.replace(host, os=os_obs, arch=arch_obs))


def apple_silicon_arch(snapshot: Snapshot, facts: Sequence[Fact]) -> Snapshot:
    """A Mac the text names as Apple silicon ("M2 Mac", "Apple M1") with no architecture of its
    own (none printed, none inferred from pip's list of releases, which is the Python's): arm64,
    for planning. explain's own snapshot leaves it unset (a Python under Rosetta is x86-64,
    which its rules' hints name); a plan is for the machine."""
    named = first(facts, "apple_silicon")
    host = snapshot.host
    if named is None or host.arch.value is not None or host.os.value not in (None, "darwin"):
        return snapshot
    return _fill_platform(snapshot, "darwin", "arm64", _source(named), named.raw)


def infer_platform(snapshot: Snapshot, facts: Sequence[Fact], kb: KnowledgeBase) -> Snapshot:
    """A text that does not say the OS or the architecture, or says only macOS, where pip's list
    of the releases it found fits one platform alone: that platform, its source saying why."""
    from gpuenv.explain.offered import inferred_platform
    from gpuenv.whatif import PLATFORMS

    platform = inferred_platform(facts, snapshot, kb)
    listed = first(facts, "versions_offered")
    if platform not in PLATFORMS or listed is None:
        return snapshot
    os_name, arch = PLATFORMS[platform]
    why = f"inferred: pip's list of the releases it found is what the index has for {platform}"
    return _fill_platform(snapshot, os_name, arch, why, listed.raw)


def _fill_platform(
    snapshot: Snapshot, os_name: str, arch: str, source: str, raw: str | None
) -> Snapshot:
    """The snapshot with the OS and the architecture it does not have yet, from `source`."""
    host = snapshot.host
    return dataclasses.replace(
        snapshot,
        host=dataclasses.replace(
            host,
            os=host.os if host.os.value else Observation(os_name, source, raw),
            arch=host.arch if host.arch.value else Observation(arch, source, raw),
        ),
    )


def infer_driver(snapshot: Snapshot, kb: KnowledgeBase) -> Snapshot:
    """A text that gives the driver's CUDA (found version 11060, __cuda=12.0) but not its
    version: plan for the oldest driver that supports that CUDA, which the real one is not
    older than (said in the observation's source)."""
    if snapshot.driver.versions:
        return snapshot
    best = next((o for o in snapshot.driver.max_cuda if o.value), None)
    cuda = CudaVersion.parse(best.value) if best and best.value else None
    os_name = (
        "windows" if snapshot.host.os.value == "windows" or snapshot.host.wsl.value else "linux"
    )
    driver = toolkit_min_driver(kb, cuda, os_name) if cuda else None
    if driver is None or best is None:
        return snapshot
    inferred = Observation(
        str(driver), f"inferred: the oldest driver that supports CUDA {best.value}", best.raw
    )
    return dataclasses.replace(
        snapshot, driver=dataclasses.replace(snapshot.driver, versions=(inferred,))
    )
