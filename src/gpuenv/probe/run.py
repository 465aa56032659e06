"""Run every probe and assemble one Snapshot.

`probe_machine` runs the probes (the slow, independent ones side by side). Each probe takes a
MachineAccess, so the same code reads a live machine or a recorded one.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from gpuenv._version import __version__
from gpuenv.edges import process
from gpuenv.facts import (
    BinaryArchFacts,
    DriverFacts,
    GpuFacts,
    HostFacts,
    PythonEnvFacts,
    Snapshot,
    ToolkitFacts,
    missing,
)
from gpuenv.probe.access import LiveMachine, MachineAccess, stop_running_commands
from gpuenv.probe.driver import probe_driver
from gpuenv.probe.fatbin import scan_fatbin
from gpuenv.probe.host import probe_host
from gpuenv.probe.libraries import probe_libraries
from gpuenv.probe.pci import probe_pci_gpus
from gpuenv.probe.target import TargetProbe, default_interpreter, probe_python_env
from gpuenv.probe.toolkit import probe_toolkits

__all__ = ["ProbeOptions", "here_names", "probe_machine"]

T = TypeVar("T")


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
    failed = _Failures()
    host, (driver, gpus), toolkits, pci_gpus, target = _independent(
        access, opts, interpreter, failed
    )
    env = target.env if target else None
    sites, conda = (env.site_packages if env else ()), _conda_prefix(env, access)
    found = failed.settle(
        "library",
        lambda: probe_libraries(access, sites, conda, opts.command_timeout),
        lambda _: (),
    )
    # Problems that name no library (an unlistable folder, ldconfig failing) are the probe's own.
    libraries = tuple(lib for lib in found if lib.soname)
    problems = tuple(f"{lib.path}: {lib.problem}" for lib in found if not lib.soname)
    live = isinstance(access, LiveMachine)
    binaries = (
        failed.settle("binary", lambda: _scan(target, live), lambda _: ())
        if opts.scan_binaries
        else ()
    )
    problems = tuple(failed.problems) + problems
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


_Independent = tuple[
    HostFacts,
    tuple[DriverFacts, tuple[GpuFacts, ...]],
    tuple[ToolkitFacts, ...],
    tuple[GpuFacts, ...],
    "TargetProbe | None",
]


def _independent(
    access: MachineAccess, opts: ProbeOptions, interpreter: str, failed: _Failures
) -> _Independent:
    """The probes that need nothing from each other, side by side. On Ctrl-C the commands they
    wait for are killed at once (and none is started), so the threads end within moments."""
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            host = pool.submit(probe_host, access)
            driver = pool.submit(probe_driver, access, opts.command_timeout)
            toolkits = pool.submit(probe_toolkits, access, opts.command_timeout)
            pci = pool.submit(probe_pci_gpus, access)
            target = (
                pool.submit(probe_python_env, access, interpreter, opts.python_timeout)
                if opts.probe_python
                else None
            )
            try:
                return (
                    failed.settle("host", host.result, _no_host),
                    failed.settle("driver", driver.result, _no_driver),
                    failed.settle("toolkit", toolkits.result, lambda _: ()),
                    failed.settle("PCI", pci.result, lambda _: ()),
                    failed.settle("Python environment", target.result, _no_target(interpreter))
                    if target
                    else None,
                )
            except BaseException:
                stop_running_commands()
                raise
    except BaseException:
        process.allow_runs()  # the threads have ended: a caller that goes on may run commands
        raise


class _Failures:
    """A probe that raises (a bug, or a machine stranger than the probe expected) must not take
    the snapshot down: its facts become a stand-in that says so, and Snapshot.problems names it."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def settle(self, what: str, result: Callable[[], T], stand_in: Callable[[str], T]) -> T:
        try:
            return result()
        except Exception as exc:
            problem = f"the {what} probe failed: {type(exc).__name__}: {exc}"
            self.problems.append(problem)
            return stand_in(problem)


def _no_host(problem: str) -> HostFacts:
    return HostFacts(os=missing("host probe", problem), arch=missing("host probe", problem))


def _no_driver(problem: str) -> tuple[DriverFacts, tuple[GpuFacts, ...]]:
    return DriverFacts(versions=(missing("driver probe", problem),)), ()


def _no_target(interpreter: str) -> Callable[[str], TargetProbe]:
    def stand_in(problem: str) -> TargetProbe:
        env = PythonEnvFacts(interpreter=interpreter, python_version=None, problems=(problem,))
        return TargetProbe(env)

    return stand_in


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
    """This machine's host and user names, for redaction: the login name even when USER is not
    set (containers, cron), the user behind sudo, and a host name with and without its domain."""
    names = [os.environ.get(key, "") for key in ("USER", "USERNAME", "LOGNAME", "SUDO_USER")]
    names.append(_account_name())
    try:
        host = os.uname().nodename
    except AttributeError:  # Windows
        host = os.environ.get("COMPUTERNAME", "")
    names += [host, host.split(".")[0]]
    return tuple(dict.fromkeys(n.strip() for n in names if n.strip() and n.strip() != "root"))


def _account_name() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, AttributeError):  # Windows; a uid with no passwd entry
        return ""
