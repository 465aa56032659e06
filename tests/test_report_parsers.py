"""The pure parsers of framework and tool outputs people paste (TensorFlow logs, JAX's environment
report, Jetson release lines, collect_env look-alikes, conda list excerpts), on verbatim lines of
the formats they print."""

from __future__ import annotations

from gpuenv.parse.collect_env import parse_collect_env
from gpuenv.parse.conda import parse_conda_list
from gpuenv.parse.frameworks import parse_jax_env, parse_tf_report
from gpuenv.parse.jetson import parse_jetson_release


def test_tf_1_0_library_lines() -> None:
    report = parse_tf_report(
        "I tensorflow/stream_executor/dso_loader.cc:135] successfully opened CUDA library "
        "libcublas.so.8.0 locally\n"
        "I tensorflow/stream_executor/dso_loader.cc:126] Couldn't open CUDA library libcudnn.so.5."
        " LD_LIBRARY_PATH: /usr/local/cuda-8.0/lib64\n"
    )
    assert report is not None
    assert report.failed_libraries == ("libcudnn.so.5",)
    assert report.loaded_libraries == ("libcublas.so.8.0",)
    assert report.ld_library_path == "/usr/local/cuda-8.0/lib64"


def test_tf_found_device_lines_of_tf1_and_tf2() -> None:
    tf2 = parse_tf_report(
        "2020-04-22 21:10:46.270844: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1555] "
        "Found device 0 with properties:\n"
        "pciBusID: 0000:02:00.0 name: GeForce GTX 960M computeCapability: 5.0\n"
    )
    tf1 = parse_tf_report(
        "2018-10-25 12:10:00.739553: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1411] "
        "Found device 0 with properties: \n"
        "name: GeForce GTX 1070 major: 6 minor: 1 memoryClockRate(GHz): 1.683\n"
    )
    assert tf2 is not None and tf2.gpus == (("GeForce GTX 960M", "5.0"),)
    assert tf1 is not None and tf1.gpus == (("GeForce GTX 1070", "6.1"),)
    # a device found is not a device registered
    assert tf1.gpu_devices_registered is None


def test_jax_device_info_line() -> None:
    report = parse_jax_env(
        [
            "jax:    0.6.0",
            "jaxlib: 0.6.0",
            'device info: Tesla V100-PCIE-16GB-1, 1 local devices"',
            "process_count: 1",
        ]
    )
    assert report is not None
    assert (report.device_kind, report.device_count, report.backend) == (
        "Tesla V100-PCIE-16GB",
        1,
        "gpu",
    )
    cpu = parse_jax_env(["jax:    0.4.30", 'device info: cpu-1, 1 local devices"'])
    assert cpu is not None and cpu.backend == "cpu"


def test_l4t_bsp_version_line_of_the_jetson_inference_scripts() -> None:
    release = parse_jetson_release(
        "ARCH:  aarch64\nreading L4T version from /etc/nv_tegra_release\n"
        "L4T BSP Version:  L4T R32.7.2\n"
    )
    assert release.l4t_release == "32.7.2"


def test_check_env_look_alike() -> None:
    report = parse_collect_env(
        [
            "Python: 3.10.12 (main, Jul 29 2024, 16:56:48) [GCC 11.4.0]",
            "CUDA available: True",
            "GPU 0,1,2: NVIDIA H100 80GB HBM3",
            "GPU 0,1,2 Compute Capability: 9.0",
            "CUDA Driver Version: 550.127.08",
            "PyTorch: 2.6.0+cu124",
        ]
    )
    assert report is not None
    assert report.gpus == ("NVIDIA H100 80GB HBM3",) * 3
    assert (report.python_version, report.cuda_available, report.driver_version) == (
        "3.10.12",
        True,
        "550.127.08",
    )
    assert report.torch_version == "2.6.0+cu124"


def test_conda_list_excerpt_without_its_header() -> None:
    rows = parse_conda_list(
        [
            "pygments                  2.18.0             pyhd8ed1ab_0    conda-forge",
            "python                    3.13.0          h9ebbce0_100_cp313    conda-forge",
            "cuda-cudart               12.9.79         h5888daf_0            conda-forge",
        ]
    )
    assert [(r.name, r.version, r.channel) for r in rows] == [
        ("pygments", "2.18.0", "conda-forge"),
        ("python", "3.13.0", "conda-forge"),
        ("cuda-cudart", "12.9.79", "conda-forge"),
    ]


def test_tf_loaded_cudnn_line_reads_cudnn_8_and_9_codes() -> None:
    """cuDNN counts its major by 1000 up to 8 and by 10000 from 9 (8100 is 8.1.0, 90300 9.3.0)."""
    line = "I external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:531] Loaded cuDNN version {}"
    eight = parse_tf_report(line.format(8100))
    nine = parse_tf_report(line.format(90300))
    assert eight is not None and eight.cudnn_version == "8.1.0"
    assert nine is not None and nine.cudnn_version == "9.3.0"
