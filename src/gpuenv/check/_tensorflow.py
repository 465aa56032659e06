# gpuenv-check-script: tensorflow. Run through _harness.py inside the target interpreter.
"""TensorFlow checks: build (CUDA and cuDNN it was built for), devices, known answers on each
GPU computed against TensorFlow's own CPU kernels, a cuDNN convolution, TF32/BF16/FP16.

Imports only tensorflow and the standard library; the harness `h` comes from _harness.py.
No bench: TensorFlow has no CUDA-event timer (the bench runs in torch, JAX and CuPy).
"""

import os

MATMUL_N = 256


def run(h):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # errors and warnings still reach stderr
    tf = h.import_framework("tensorflow")
    if tf is None:
        return
    report_build(h, tf)
    try:  # on by default since TF 2.4: FP32 matmuls on Ampere and later would run as TF32
        tf.config.experimental.enable_tensor_float_32_execution(False)
    except Exception as exc:
        h.problem("could not turn TF32 off: %s" % exc)
    gpus = list_devices(h, tf)
    for index in h.selected(len(gpus)):
        check_device(h, tf, index)


def report_build(h, tf):
    info = {}
    try:
        info = dict(tf.sysconfig.get_build_info())
    except Exception as exc:
        h.problem("tf.sysconfig.get_build_info() failed: %s" % exc)
    gpu_build = info.get("is_cuda_build")
    if gpu_build is None:
        try:
            gpu_build = bool(tf.test.is_built_with_cuda())
        except Exception:
            gpu_build = None
    details = {"is_rocm_build": info.get("is_rocm_build"), "cuda_compute_capabilities": None}
    capabilities = info.get("cuda_compute_capabilities")
    if capabilities:
        details["cuda_compute_capabilities"] = " ".join(str(c) for c in capabilities)
    h.build(tf.__version__, info.get("cuda_version"), info.get("cudnn_version"), gpu_build, details)


def list_devices(h, tf):
    try:
        gpus = tf.config.list_physical_devices("GPU")
    except Exception as exc:
        h.no_device("tf.config.list_physical_devices('GPU') failed: %s" % exc)
        return []
    if not gpus:
        h.no_device(
            "tf.config.list_physical_devices('GPU') is empty (the reason, when "
            "TensorFlow gives one, is in its log on stderr)"
        )
        return []
    for gpu in gpus:
        try:  # TensorFlow takes all GPU memory at start unless told to grow
            tf.config.experimental.set_memory_growth(gpu, True)
        except Exception as exc:
            h.problem("set_memory_growth failed: %s" % exc)
    for index, gpu in enumerate(gpus):
        details = {}
        try:
            details = tf.config.experimental.get_device_details(gpu)
        except Exception as exc:
            h.problem("get_device_details failed: %s" % exc)
        h.add_device(index, details.get("device_name"), details.get("compute_capability"))
    return gpus


def check_device(h, tf, index):
    name = "/GPU:%d" % index
    if not h.step("allocate", lambda: allocate(tf, name), index):
        return
    cc = h.device_cc(index)
    h.step("matmul FP32", lambda: matmul(h, tf, name, tf.float32, "fp32"), index)
    h.step("elementwise FP32", lambda: elementwise(h, tf, name), index)
    h.step("conv2d (cuDNN)", lambda: conv(h, tf, name), index)
    for kind in ("tf32", "bf16", "fp16"):
        h.step("matmul " + kind.upper(), lambda: typed(h, tf, name, cc, kind), index)


def allocate(tf, name):
    with tf.device(name):
        x = tf.fill([1 << 22], 2.0)
        total = float(tf.reduce_sum(x))
        where = x.device
    if total != 2.0 * (1 << 22):
        raise RuntimeError("a sum of %r from %d twos" % (total, 1 << 22))
    if "GPU" not in where.upper():
        raise RuntimeError("the tensor was placed on %s, not on the GPU" % where)
    return "16 MiB on %s, summed" % where


def on(h, tf, name, f):
    """`f()` under `tf.device(name)`; its result must be on that GPU. TensorFlow places an op it
    cannot run there (no GPU kernel for the type, a GPU it cannot use) on the CPU without a word
    (soft placement), and the CPU's answer would pass the known-answer check."""
    with tf.device(name):
        result = f()
    placed = str(getattr(result, "device", "") or "")
    if "GPU" not in placed.upper():
        raise h.Failed(
            "TensorFlow ran it on %s, not on %s (soft placement)"
            % (placed or "an unknown device", name)
        )
    return result


def error_vs(tf, got, want):
    got = tf.cast(got, tf.float64)
    want = tf.cast(want, tf.float64)
    if not bool(tf.reduce_all(tf.math.is_finite(got))):
        raise RuntimeError("the result holds nan or inf")
    worst = float(tf.reduce_max(tf.abs(got - want)))
    return worst / max(float(tf.reduce_max(tf.abs(want))), 1e-30)


def seeded(tf, shape, seed):
    return tf.random.stateless_normal(shape, seed=[seed, 7], dtype=tf.float32)


def matmul(h, tf, name, dtype, kind):
    with tf.device("/CPU:0"):
        a = tf.cast(seeded(tf, [MATMUL_N, MATMUL_N], 1), dtype)
        b = tf.cast(seeded(tf, [MATMUL_N, MATMUL_N], 2), dtype)
        want = tf.linalg.matmul(tf.cast(a, tf.float64), tf.cast(b, tf.float64))
    got = on(h, tf, name, lambda: tf.linalg.matmul(tf.identity(a), tf.identity(b)))
    return h.within(error_vs(tf, got, want), kind)


def typed(h, tf, name, cc, kind):
    if not h.has_feature(cc, kind):
        raise h.Skip("compute capability %d.%d has no %s" % (cc[0], cc[1], kind.upper()))
    if kind != "tf32":
        dtype = tf.bfloat16 if kind == "bf16" else tf.float16
        return matmul(h, tf, name, dtype, kind)
    tf.config.experimental.enable_tensor_float_32_execution(True)
    try:
        return matmul(h, tf, name, tf.float32, "tf32")
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(False)


def elementwise(h, tf, name):
    def f(t):
        return tf.sin(t) * tf.exp(-t * t / 4.0) + 0.5 * t

    with tf.device("/CPU:0"):
        x = tf.linspace(-4.0, 4.0, 1 << 16)
        want = f(tf.cast(x, tf.float64))
    got = on(h, tf, name, lambda: f(tf.identity(x)))
    return h.within(error_vs(tf, got, want), "elementwise")


def conv(h, tf, name):
    with tf.device("/CPU:0"):
        x = seeded(tf, [2, 16, 16, 3], 3)  # NHWC
        w = seeded(tf, [3, 3, 3, 4], 4)
        want = tf.nn.conv2d(tf.cast(x, tf.float64), tf.cast(w, tf.float64), 1, "SAME")
    got = on(h, tf, name, lambda: tf.nn.conv2d(tf.identity(x), tf.identity(w), 1, "SAME"))
    return h.within(error_vs(tf, got, want), "conv")
