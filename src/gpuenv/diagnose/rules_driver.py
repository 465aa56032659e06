"""Rules about the GPU and driver floors: no driver, a driver that does not answer, a kernel module
that disagrees with the user-space library, hidden devices, containers, driver lifecycle."""

from __future__ import annotations

from gpuenv.diagnose.context import Context
from gpuenv.diagnose.findings import Evidence, Finding, Fix
from gpuenv.diagnose.fixes import driver_install
from gpuenv.diagnose.limits import driver_ceilings
from gpuenv.kb.query.containers import parse_require_cuda
from gpuenv.kb.query.cuda import datacenter_branch
from gpuenv.versions import DriverVersion

# NVML brand names as NVIDIA_REQUIRE_CUDA's brand= terms spell them, by the KB's GPU segment
BRANDS = {"geforce": "geforce", "datacenter": "tesla", "workstation": "quadro"}
RELOAD_MODULES = (
    "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia "
    "(or simply: sudo reboot)"
)


def _gpu_evidence(ctx: Context) -> tuple[Evidence, ...]:
    gpus = ctx.gpus or ctx.pci_only_gpus
    return tuple(Evidence("GPU", f"{g.name} (cc {g.cc or '?'})", g.source) for g in gpus)


def rule_driver_not_loaded(ctx: Context) -> list[Finding]:
    """The driver's user-space part is installed but its kernel module does not answer."""
    communication = ctx.failure("no_driver_communication")
    if communication is None or ctx.driver is None or ctx.failure("nvml_mismatch"):
        return []
    return [
        Finding(
            rule="driver-not-loaded",
            cause="no_driver",
            severity="error",
            layer="driver",
            title=f"NVIDIA driver {ctx.driver} is installed but its kernel module is not running",
            why="The user-space libraries answer, but the kernel module is not loaded: it was "
            "not built for the running kernel (a kernel update without DKMS), Secure Boot "
            "blocks the unsigned module, or nouveau holds the GPU.",
            evidence=(
                Evidence("user-space driver", str(ctx.driver), ctx.driver_source),
                *_driver_absence_evidence(ctx),
            ),
            fix=Fix(
                summary="Load the module; if that fails, rebuild it for this kernel (DKMS) or "
                "sign it for Secure Boot, then reboot.",
                commands=(
                    "sudo modprobe nvidia",
                    "sudo dmesg | grep -i -E 'nvidia|nouveau' | tail -20",
                    "mokutil --sb-state",
                    "sudo dkms autoinstall && sudo reboot",
                ),
                installer="system",
            ),
        )
    ]


def rule_no_driver(ctx: Context) -> list[Finding]:
    """An NVIDIA GPU is on the bus but no driver answers, or nothing NVIDIA is here at all."""
    if ctx.driver is not None or ctx.gpus:
        return []
    if ctx.failure("timed_out") or ctx.failure("nvml_mismatch"):
        return []  # reported by their own rules
    if ctx.snapshot.host.apple_mps.value:
        return [_mps_info()]
    if not ctx.pci_only_gpus:
        # No GPU and no driver: a CPU machine. Saying so is information, not an error.
        return [
            Finding(
                rule="no-nvidia-gpu",
                cause="no_driver",
                severity="info",
                layer="gpu",
                title="No NVIDIA GPU or driver found on this machine",
                why="No NVIDIA display controller is on the PCI bus and no NVIDIA driver answers; "
                "frameworks here run on the CPU. To plan for a GPU machine, use the what-if "
                "flags (--gpu, --driver) or --from with that machine's snapshot.",
                evidence=_driver_absence_evidence(ctx),
            )
        ]
    communication = ctx.failure("no_driver_communication")
    return [
        Finding(
            rule="gpu-without-driver",
            cause="no_driver",
            severity="error",
            layer="driver",
            title="An NVIDIA GPU is installed but no NVIDIA driver is working",
            why="The GPU is on the PCI bus, but "
            + (
                "nvidia-smi cannot communicate with the driver (the kernel module is not "
                "loaded: not installed, built for another kernel, or blocked by Secure Boot)."
                if communication
                else "no NVIDIA driver answers (no kernel module, no nvidia-smi, no NVML)."
            ),
            evidence=_gpu_evidence(ctx) + _driver_absence_evidence(ctx),
            fix=Fix(
                summary="Install the NVIDIA driver (or rebuild its kernel module for this "
                "kernel) and reboot.",
                commands=(*driver_install(ctx, 580), "nvidia-smi"),
                installer="system",
                notes=(
                    "With Secure Boot on, enrol the module's signing key (mokutil) or the "
                    "module stays blocked.",
                ),
            ),
        )
    ]


def rule_driver_lists_no_gpu(ctx: Context) -> list[Finding]:
    """The driver answers but reports no GPU ("No devices were found"): the GPU fell off the bus
    (Xid 79), is held by another driver (vfio-pci passthrough), or the container was started
    without the device nodes of its GPUs."""
    none_found = ctx.failure("no_devices")
    if none_found is None or ctx.driver is None or ctx.gpus or ctx.driver_dead:
        return []
    if ctx.failure("visible_devices_hide_all") or driver_ceilings(ctx):
        return []  # reported by its own rule
    return [
        Finding(
            rule="driver-lists-no-gpu",
            cause="no_driver",
            severity="error",
            layer="gpu",
            title=f"NVIDIA driver {ctx.driver} is running but reports no GPU",
            why='CUDA programs find no device ("no CUDA-capable device is detected"). The GPU '
            "dropped off the bus (Xid 79, power or PCIe trouble), is bound to another driver "
            "(vfio-pci for passthrough), or this container was started without its GPUs.",
            evidence=(
                Evidence("driver version", str(ctx.driver), ctx.driver_source),
                Evidence(
                    "driver failure",
                    none_found.value or "no_devices",
                    none_found.source
                    + (f": {none_found.raw.strip()[:160]}" if none_found.raw else ""),
                ),
                *_gpu_evidence(ctx),
            ),
            fix=Fix(
                summary="Look for Xid errors and the GPU on the PCI bus; in a container, start it "
                "with the GPUs (docker run --gpus all); otherwise reboot.",
                commands=(
                    "sudo dmesg | grep -i -E 'NVRM|Xid'",
                    "lspci -nnk -d 10de:",
                ),
                installer="system",
            ),
        )
    ]


def _driver_absence_evidence(ctx: Context) -> tuple[Evidence, ...]:
    out = [
        Evidence(
            "driver failure",
            f.value or "",
            f.source + (f": {f.raw.strip()[:160]}" if f.raw else ""),
        )
        for f in ctx.driver_failures
    ]
    if not out:
        out.append(Evidence("driver", "none answered", "kernel module, NVML, nvidia-smi"))
    return tuple(out)


def _mps_info() -> Finding:
    return Finding(
        rule="apple-mps",
        cause="mps_or_rocm_specific",
        severity="info",
        layer="gpu",
        title="Apple Silicon: the GPU is used through Metal (MPS), not CUDA",
        why="macOS has no NVIDIA driver or CUDA; PyTorch uses the 'mps' device, JAX uses "
        "jax-metal. CUDA builds do not exist for this platform.",
    )


def rule_driver_unresponsive(ctx: Context) -> list[Finding]:
    timed_out = ctx.failure("timed_out")
    if timed_out is None:
        return []
    return [
        Finding(
            rule="driver-timed-out",
            cause="no_driver",
            severity="error",
            layer="driver",
            title="The NVIDIA driver does not answer",
            why="A driver query did not return in time. A wedged GPU or driver (after an Xid "
            "error, a hung process holding the device, or a failing card) makes nvidia-smi "
            "and every CUDA program hang.",
            evidence=(
                Evidence("driver query", timed_out.problem or "timed out", timed_out.source),
            ),
            fix=Fix(
                summary="Look for Xid errors in the kernel log, stop processes holding the GPU, "
                "then reset the GPU or reboot.",
                commands=(
                    "sudo dmesg | grep -i -E 'NVRM|Xid'",
                    "sudo fuser -v /dev/nvidia*",
                    "sudo nvidia-smi --gpu-reset -i 0",
                    "sudo reboot",
                ),
                installer="system",
            ),
        )
    ]


def rule_module_mismatch(ctx: Context) -> list[Finding]:
    mismatch = ctx.failure("nvml_mismatch")
    versions = {o.value for o in ctx.snapshot.driver.versions if o.value}
    kernel = next(
        (o for o in ctx.snapshot.driver.versions if o.value and "kernel" in o.source), None
    )
    user = next(
        (o for o in ctx.snapshot.driver.versions if o.value and "kernel" not in o.source), None
    )
    differ = (
        kernel is not None
        and user is not None
        and len(versions) > 1
        and not ctx.wsl
        and DriverVersion.parse(kernel.value) != DriverVersion.parse(user.value)
    )
    if mismatch is None and not differ:
        return []
    evidence = [
        Evidence("driver version", o.value or "", o.source)
        for o in ctx.snapshot.driver.versions
        if o.value
    ]
    if mismatch is not None:
        evidence.append(
            Evidence("NVML", mismatch.raw or "Driver/library version mismatch", mismatch.source)
        )
    return [
        Finding(
            rule="driver-module-mismatch",
            cause="driver_module_mismatch",
            severity="error",
            layer="driver",
            title="The loaded kernel module and the user-space driver libraries differ",
            why="The driver package was upgraded but the old kernel module is still loaded "
            "(or the reverse); NVML and CUDA refuse to run until both are the same version.",
            evidence=tuple(evidence),
            fix=Fix(
                summary="Reload the NVIDIA kernel modules, or reboot, so the module matches the "
                "installed libraries.",
                commands=(RELOAD_MODULES, "nvidia-smi"),
                installer="system",
            ),
        )
    ]


def rule_container_without_gpus(ctx: Context) -> list[Finding]:
    """Inside a container the host's kernel module shows in /proc, but nothing of the NVIDIA
    runtime was mounted: the container was started without its GPUs."""
    container = ctx.snapshot.host.container.value
    if not container or ctx.gpus or ctx.driver is None:
        return []
    if not (ctx.failure("nvml_unavailable") or ctx.failure("device_nodes_missing")):
        return []
    if any(o.value and "kernel" not in o.source for o in ctx.snapshot.driver.versions):
        return []  # user-space driver libraries are here: another rule speaks
    return [
        Finding(
            rule="container-without-gpus",
            cause="container_driver_mismatch",
            severity="error",
            layer="driver",
            title=f"This {container} container was started without GPU access",
            why=f"The host's driver {ctx.driver} shows through /proc, but the container has no "
            "NVIDIA device nodes and no driver libraries: the NVIDIA container runtime was not "
            "asked to mount them.",
            evidence=(
                Evidence("kernel module", str(ctx.driver), ctx.driver_source),
                *_driver_absence_evidence(ctx),
            ),
            fix=Fix(
                summary="Start the container with the GPUs (the NVIDIA Container Toolkit must be "
                "installed on the host).",
                commands=(
                    "docker run --gpus all ... IMAGE",
                    "nvidia-ctk runtime configure --runtime=docker",
                ),
                installer="docker",
                notes=(
                    "Kubernetes: request the GPU as a resource (nvidia.com/gpu: 1) with the NVIDIA "
                    "device plugin; Podman: --device nvidia.com/gpu=all (CDI).",
                ),
            ),
        )
    ]


def rule_hidden_devices(ctx: Context) -> list[Finding]:
    hidden = ctx.failure("visible_devices_hide_all")
    if hidden is None:
        return []
    env = ctx.snapshot.host.env
    names = [n for n in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES") if n in env]
    return [
        Finding(
            rule="visible-devices-hide-all",
            cause="other",
            severity="error",
            layer="gpu",
            title="Every GPU is hidden by an environment variable",
            why="CUDA programs see no device: "
            + ", ".join(f"{n}={env[n]!r}" for n in names)
            + " hides them all.",
            evidence=tuple(Evidence(n, env[n], "environment") for n in names),
            fix=Fix(
                summary="Unset the variable or list the GPUs to use.",
                commands=tuple(f"unset {n}" for n in names) or ("unset CUDA_VISIBLE_DEVICES",),
                installer="shell",
            ),
        )
    ]


def rule_container_require(ctx: Context) -> list[Finding]:
    text = ctx.snapshot.host.env.get("NVIDIA_REQUIRE_CUDA")
    if not text or ctx.driver_max_cuda is None:
        return []
    if ctx.snapshot.host.env.get("NVIDIA_DISABLE_REQUIRE", "").lower() in ("1", "true"):
        return []
    required = parse_require_cuda(text)
    needed = required.cuda_min
    segments = {g.segment for g in ctx.gpus}
    brand = next((BRANDS[s] for s in sorted(segments, key=str) if s in BRANDS), None)
    # The branch terms (brand=tesla,driver>=535,driver<536) let an older data-center driver run
    # the image through the forward-compatibility libraries it ships.
    allowed = required.allows(ctx.driver_max_cuda, ctx.driver, brand)
    if needed is None or allowed is True or (allowed is None and needed <= ctx.driver_max_cuda):
        return []
    severity = "error" if allowed is False else "warning"
    return [
        Finding(
            rule="container-needs-newer-driver",
            cause="container_driver_mismatch",
            severity=severity,
            layer="driver",
            title=f"This container needs CUDA {needed.short}; the host driver supports "
            f"{ctx.driver_max_cuda.short}",
            why="The image sets NVIDIA_REQUIRE_CUDA; the NVIDIA container runtime refuses to "
            'start it ("unsatisfied condition: cuda>=...") unless the host driver supports '
            "that CUDA, or it runs with the forward-compatibility libraries (data-center GPUs).",
            evidence=(
                Evidence("NVIDIA_REQUIRE_CUDA", text[:200], "environment"),
                Evidence("driver max CUDA", ctx.driver_max_cuda.short, ctx.driver_max_cuda_source),
            ),
            fix=Fix(
                summary=f"Use an image for CUDA ≤ {ctx.driver_max_cuda.short}, or upgrade the "
                "host driver.",
                commands=(),
                installer="docker",
                notes=("NVIDIA_DISABLE_REQUIRE=1 skips the check but not the incompatibility.",),
            ),
        )
    ]


def rule_branch_lifecycle(ctx: Context) -> list[Finding]:
    if ctx.driver is None:
        return []
    if not any(g.segment == "datacenter" for g in ctx.gpus):
        return []
    row = datacenter_branch(ctx.kb, ctx.driver.branch)
    if row is None:
        return []
    eol = str(row.get("end_of_life", ""))
    if not eol or eol > ctx.today.isoformat()[: len(eol)]:
        return []
    return [
        Finding(
            rule="driver-branch-eol",
            cause="other",
            severity="info",
            layer="driver",
            title=f"Data-center driver branch R{ctx.driver.branch} reached end of life ({eol})",
            why="NVIDIA no longer ships fixes for this branch.",
            evidence=(Evidence("driver version", str(ctx.driver), ctx.driver_source),),
            citations=(ctx.kb.cite("cuda_driver", row),),
        )
    ]
