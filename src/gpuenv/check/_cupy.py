# gpuenv-check-script: cupy. Run through _harness.py inside the target interpreter.
"""CuPy checks: build (the CUDA runtime it loads), devices, known answers on each GPU against
pure-Python references (cuBLAS matmul, NVRTC-compiled elementwise kernels, FP16), and the bench
(copies and matmuls timed with CUDA events).

Imports only cupy and the standard library; the harness `h` comes from _harness.py.
"""

import math

MATMUL_N = 48  # small: the reference is computed in pure Python


def run(h):
    cupy = h.import_framework("cupy")
    if cupy is None:
        return
    report_build(h, cupy)
    indexes = list_devices(h, cupy)
    for index in indexes:
        with cupy.cuda.Device(index):
            check_device(h, cupy, index)
    if h.options.get("bench"):
        for index in indexes:
            with cupy.cuda.Device(index):
                bench_device(h, cupy, index)


def version_text(number):
    """CUDA's integer version (12040) as text ("12.4")."""
    return "%d.%d" % (number // 1000, number % 1000 // 10)


def report_build(h, cupy):
    runtime = cupy.cuda.runtime
    hip = bool(getattr(runtime, "is_hip", False))
    cuda = driver = None
    try:
        cuda = version_text(runtime.runtimeGetVersion())
    except Exception as exc:
        h.problem("cupy.cuda.runtime.runtimeGetVersion() failed: %s" % exc)
    try:
        driver = version_text(runtime.driverGetVersion())
    except Exception:
        pass
    details = {"driver_max_cuda": driver, "hip": hip or None}
    try:
        details["cuda_path"] = cupy.cuda.get_cuda_path()
    except Exception:
        pass
    h.build(cupy.__version__, None if hip else cuda, None, True, details)


def list_devices(h, cupy):
    runtime = cupy.cuda.runtime
    try:
        count = runtime.getDeviceCount()
    except Exception as exc:
        h.no_device("%s: %s" % (type(exc).__name__, exc))
        return []
    if count == 0:
        h.no_device("cupy.cuda.runtime.getDeviceCount() is 0")
        return []
    for index in range(count):
        try:
            props = runtime.getDeviceProperties(index)
            name = props.get("name")
            if isinstance(name, bytes):
                name = name.decode("utf-8", "replace")
            with cupy.cuda.Device(index):
                free, total = runtime.memGetInfo()
            h.add_device(index, name, (props["major"], props["minor"]), total, free)
        except Exception as exc:
            h.add_device(index, None, None)
            h.problem("reading device %d failed: %s" % (index, exc))
    return h.selected(count)


def check_device(h, cupy, index):
    if not h.step("allocate", lambda: allocate(cupy), index):
        return
    cc = h.device_cc(index)
    h.step("matmul FP32 (cuBLAS)", lambda: matmul(h, cupy, "float32", "fp32"), index)
    h.step("elementwise FP32 (NVRTC)", lambda: elementwise(h, cupy), index)
    h.step("matmul FP16", lambda: fp16(h, cupy, cc), index)


def allocate(cupy):
    count = 1 << 22
    x = cupy.full((count,), 2.0, dtype=cupy.float32)
    total = float(x.sum())
    if total != 2.0 * count:
        raise RuntimeError("a sum of %r from %d twos" % (total, count))
    return "16 MiB written and summed"


def matmul(h, cupy, dtype, kind):
    n = MATMUL_N
    a = cupy.asarray(h.seeded_values(n * n, 1), dtype=dtype).reshape(n, n)
    b = cupy.asarray(h.seeded_values(n * n, 2), dtype=dtype).reshape(n, n)
    want = h.matmul_lists(a.ravel().tolist(), b.ravel().tolist(), n)  # the rounded inputs
    got = cupy.matmul(a, b).astype(cupy.float64).ravel().tolist()
    if not all(math.isfinite(v) for v in got):
        raise RuntimeError("the result holds nan or inf")
    return h.within(h.max_error_lists(got, want), kind)


def fp16(h, cupy, cc):
    if not h.has_feature(cc, "fp16"):
        raise h.Skip("compute capability %d.%d has no FP16" % cc)
    return matmul(h, cupy, "float16", "fp16")


def elementwise(h, cupy):
    """sin, exp and an affine term: CuPy compiles these kernels with NVRTC at first use."""
    values = [-4.0 + 8.0 * i / 4095 for i in range(4096)]
    x = cupy.asarray(values, dtype=cupy.float32)
    got = (cupy.sin(x) * cupy.exp(-x * x / 4.0) + 0.5 * x).astype(cupy.float64).ravel().tolist()
    rounded = x.astype(cupy.float64).tolist()
    want = [math.sin(t) * math.exp(-t * t / 4.0) + 0.5 * t for t in rounded]
    return h.within(h.max_error_lists(got, want), "elementwise")


# -- bench ----------------------------------------------------------------------------------------


def event_timer(cupy):
    def timed(op, count):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(count):
            op()
        end.record()
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) / 1000.0 / count

    return timed


def free_memory(cupy):
    cupy.get_default_memory_pool().free_all_blocks()
    return cupy.cuda.runtime.memGetInfo()[0]


def bench_device(h, cupy, index):
    h.step("bench copies", lambda: bench_copies(h, cupy, index), index)
    kinds = [("fp32", "float32")]
    kinds += [("fp16", "float16")] if h.has_feature(h.device_cc(index), "fp16") else []
    for kind, dtype in kinds:
        h.step(
            "bench matmul " + kind.upper(),
            lambda: bench_matmul(h, cupy, index, kind, dtype),
            index,
        )


def bench_copies(h, cupy, index):
    timed = event_timer(cupy)
    size = h.copy_size(free_memory(cupy), buffers=2)
    if not size:
        raise h.Skip("too little free memory for a copy bench")
    device_copy(h, cupy, index, timed, size)
    host_size = min(size, 256 * h.MIB)
    pinned_copies(h, cupy, index, timed, host_size)
    return "%d MiB device buffers, %d MiB pinned host buffer" % (size >> 20, host_size >> 20)


def device_copy(h, cupy, index, timed, size):
    a = cupy.empty(size, dtype=cupy.uint8)
    b = cupy.empty(size, dtype=cupy.uint8)
    seconds = h.measure(timed, lambda: cupy.copyto(b, a))
    h.bench("copy device-device", index, "bytes", 2 * size, seconds, "%d MiB" % (size >> 20))


def pinned_copies(h, cupy, index, timed, size):
    runtime = cupy.cuda.runtime
    pinned = cupy.cuda.alloc_pinned_memory(size)
    device = cupy.empty(size, dtype=cupy.uint8)
    stream = cupy.cuda.get_current_stream().ptr
    label = "%d MiB" % (size >> 20)

    def to_device():
        runtime.memcpyAsync(device.data.ptr, pinned.ptr, size, 1, stream)  # host to device

    def to_host():
        runtime.memcpyAsync(pinned.ptr, device.data.ptr, size, 2, stream)  # device to host

    h.bench("copy host-device (pinned)", index, "bytes", size, h.measure(timed, to_device), label)
    h.bench("copy device-host (pinned)", index, "bytes", size, h.measure(timed, to_host), label)


def bench_matmul(h, cupy, index, kind, dtype):
    n = h.matmul_size(free_memory(cupy), cupy.dtype(dtype).itemsize)
    if not n:
        raise h.Skip("too little free memory for a matmul bench")
    a = cupy.ones((n, n), dtype=dtype)
    b = cupy.ones((n, n), dtype=dtype)
    c = cupy.empty((n, n), dtype=dtype)
    seconds = h.measure(event_timer(cupy), lambda: cupy.matmul(a, b, out=c))
    h.bench("matmul " + kind.upper(), index, "flop", 2 * n**3, seconds, "%dx%d" % (n, n))
    return "%dx%d" % (n, n)
