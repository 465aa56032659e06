"""Run every probe and assemble one Snapshot.

`probe_machine` runs the probes (the slow, independent ones side by side). Each probe takes a
MachineAccess, so the same code reads a live machine or a recorded one.
"""

from __future__ import annotations

import datetime
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from gpuenv._version import __version__
from gpuenv.facts import BinaryArchFacts, PythonEnvFacts, Snapshot
from gpuenv.probe.access import LiveMachine, MachineAccess
from gpuenv.probe.driver import probe_driver
from gpuenv.probe.fatbin import scan_fatbin
from gpuenv.probe.host import probe_host
from gpuenv.probe.libraries import probe_libraries
from gpuenv.probe.pci import probe_pci_gpus
from gpuenv.probe.target import TargetProbe, default_interpreter, probe_python_env
from gpuenv.probe.toolkit import probe_toolkits

__all__ = ["ProbeOptions", "here_names", "probe_machine"]


@dataclass(frozen=True)
class ProbeOptions:
    interpreter: str | None = None  # target Python; None = the active env's, else python3
    probe_python: bool = True
    scan_binaries: bool = True  # read the GPU archs compiled into framework libraries
    command_timeout: float = 10.0  # nvidia-smi, NVML, nvcc, ldconfig
    python_timeout: float = 30.0  # the target-interpreter script


def probe_machine(
    machine: MachineAccess | None = None, options: ProbeOptions | None = None
) -> Snapshot:
    """Probe a machine (this one by default) and one Python environment on it."""
    access = machine or LiveMachine()
    opts = options or ProbeOptions()
    interpreter = opts.interpreter or default_interpreter(access.environ(), access)
    with ThreadPoolExecutor(max_workers=4) as pool:
        host_job = pool.submit(probe_host, access)
        driver_job = pool.submit(probe_driver, access, opts.command_timeout)
        toolkit_job = pool.submit(probe_toolkits, access, opts.command_timeout)
        pci_job = pool.submit(probe_pci_gpus, access)
        target_job = (
            pool.submit(probe_python_env, access, interpreter, opts.python_timeout)
            if opts.probe_python
            else None
        )
        host = host_job.result()
        driver, gpus = driver_job.result()
        toolkits = toolkit_job.result()
        pci_gpus = pci_job.result()
        target = target_job.result() if target_job else None
    env = target.env if target else None
    found = probe_libraries(
        access, env.site_packages if env else (), _conda_prefix(env, access), opts.command_timeout
    )
    # Problems that name no library (an unlistable folder, ldconfig failing) are the probe's own.
    libraries = tuple(lib for lib in found if lib.soname)
    problems = tuple(f"{lib.path}: {lib.problem}" for lib in found if not lib.soname)
    binaries = _scan(target, isinstance(access, LiveMachine)) if opts.scan_binaries else ()
    return Snapshot(
        host=host,
        driver=driver,
        gpus=gpus,
        pci_gpus=pci_gpus,
        toolkits=toolkits,
        libraries=libraries,
        python_env=env,
        binaries=binaries,
        problems=problems,
        origin="probed",
        redacted=False,
        captured_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        gpuenv_version=__version__,
    )


def _conda_prefix(env: PythonEnvFacts | None, machine: MachineAccess) -> str | None:
    if env is not None and env.env_kind == "conda":
        return env.prefix
    return machine.environ().get("CONDA_PREFIX")


def _scan(target: TargetProbe | None, live: bool) -> tuple[BinaryArchFacts, ...]:
    """Fatbin scans read real files, so they run on a live machine only."""
    if target is None or not live:
        return ()
    results = []
    for path, package in target.binary_candidates:
        scan = scan_fatbin(path)
        if scan.has_device_code or scan.problem:
            results.append(
                BinaryArchFacts(
                    path=path, package=package, sass=scan.sass, ptx=scan.ptx, problem=scan.problem
                )
            )
    return tuple(results)


def here_names() -> tuple[str, ...]:
    """This machine's host and user names, for redaction."""
    names = [os.environ.get("USER", ""), os.environ.get("USERNAME", "")]
    try:
        names.append(os.uname().nodename)
    except AttributeError:  # Windows
        names.append(os.environ.get("COMPUTERNAME", ""))
    return tuple(n for n in names if n and n not in ("root",))
