"""Tables of cuda_driver.toml: CUDA toolkit <-> NVIDIA driver compatibility."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

OSES = ("linux", "windows")
SEGMENTS = ("datacenter", "ngc-ready-rtx", "jetson", "other")
DESIGNATIONS = ("LTSB", "PB", "NFB", "EOL")

TABLES: dict[str, TableSpec] = {
    "mvc_minimum": TableSpec(
        fields={
            "cuda_major": f("int"),
            "os": f("str", choices=OSES),
            "min_driver": f("version"),
        },
        key=("cuda_major", "os"),
        description="Minimum driver for minor-version compatibility across one CUDA major",
    ),
    "toolkit_driver": TableSpec(
        fields={
            "cuda": f("version"),
            "label": f("str"),
            "linux_min_driver": f("version", required=False),
            "windows_min_driver": f("version", required=False),
            "ga": f("bool", required=False),
        },
        key=("cuda",),
        description="The driver bundled with each toolkit release (release notes Table 3); "
        "ga marks the general-availability release of its major.minor",
    ),
    "driver_branch": TableSpec(
        fields={"branch": f("int"), "max_cuda": f("version")},
        key=("branch",),
        description="The CUDA version a Linux driver branch reports (nvidia-smi 'CUDA Version')",
    ),
    "windows_branch": TableSpec(
        fields={
            "windows": f("int"),
            "branch": f("int"),
            "first_driver": f("version", required=False),
        },
        key=("windows",),
        description="Leading number of a Windows driver version -> its driver branch (576 -> 575); "
        "first_driver: the lowest Windows release of that number the row covers",
    ),
    "datacenter_branch": TableSpec(
        fields={
            "branch": f("int"),
            "designation": f("str", choices=DESIGNATIONS),
            "end_of_life": f("str", required=False),
            "max_cuda_major": f("int", required=False),
        },
        key=("branch",),
        description="Data-center driver branch lifecycle; end_of_life is YYYY-MM",
    ),
    "forward_compat": TableSpec(
        fields={
            "segment": f("str", choices=SEGMENTS),
            "allowed": f("bool"),
            "package": f("str"),
            "since_cuda": f("version"),
        },
        key=("segment",),
        description="Where the CUDA forward-compatibility package may be used",
    ),
    "ptx_isa": TableSpec(
        fields={"ptx_isa": f("version"), "cuda": f("version")},
        key=("ptx_isa",),
        description="PTX ISA version -> the CUDA release that introduced it",
    ),
}
