# gpuenv-check-script: jax. Run through _harness.py inside the target interpreter.
"""JAX checks: build (jaxlib and the CUDA plugin), devices, known answers on each GPU against
JAX's own CPU device, TF32/BF16/FP16, a psum across the GPUs, and the matmul bench.

Imports only jax (with jaxlib, its part) and the standard library; the harness `h` comes from
_harness.py. Timings are wall-clock to `block_until_ready` (JAX has no CUDA-event timer).
"""

import os
import re

MATMUL_N = 256


def run(h):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # not 75% of the GPU at start
    jax = h.import_framework("jax")
    if jax is None:
        return
    report_build(h, jax)
    gpus = rehearsal_device(h, jax) if h.rehearsal else list_devices(h, jax)
    indexes = h.selected(len(gpus))
    for index in indexes:
        check_device(h, jax, gpus[index], index)
    if len(indexes) >= 2:
        h.step("psum across GPUs", lambda: psum(h, jax, [gpus[i] for i in indexes]))
    if h.options.get("bench"):
        for index in indexes:
            for kind in ("fp32", "tf32", "bf16", "fp16"):
                h.step(
                    "bench matmul " + kind.upper(),
                    lambda: bench_matmul(h, jax, gpus[index], index, kind),
                    index,
                )


def plugins():
    """(distribution, version) of the CUDA plugins installed beside jax."""
    try:
        from importlib import metadata
    except ImportError:
        return []
    found = []
    for dist in metadata.distributions():
        name = (dist.metadata.get("Name") or "").lower().replace("_", "-")
        if re.match(r"jax-cuda\d+-(plugin|pjrt)$", name):
            found.append((name, dist.version))
    return sorted(found)


def report_build(h, jax):
    try:
        import jaxlib.version

        jaxlib_version = jaxlib.version.__version__
    except Exception:
        jaxlib_version = None
    found = plugins()
    cuda = cudnn = None
    for name, _version in found:
        cuda = re.match(r"jax-cuda(\d+)", name).group(1)
    label = re.search(r"\+cuda(\d+)\.cudnn(\d)(\d+)", jaxlib_version or "")
    if label:  # jaxlib 0.4.x wheels with CUDA inside: 0.4.23+cuda12.cudnn89
        cuda, cudnn = label.group(1), "%s.%s" % (label.group(2), label.group(3))
    details = {"jaxlib": jaxlib_version, "plugins": " ".join("%s==%s" % p for p in found) or None}
    try:
        details["default_backend"] = jax.default_backend()
    except Exception as exc:
        h.problem("jax.default_backend() failed: %s" % exc)
    h.build(jax.__version__, cuda, cudnn, cuda is not None, details)


def list_devices(h, jax):
    try:
        gpus = jax.devices("gpu")
    except Exception as exc:
        h.no_device("%s: %s" % (type(exc).__name__, exc))
        return []
    for index, device in enumerate(gpus):
        cc = getattr(device, "compute_capability", None)
        free = None
        try:
            stats = device.memory_stats() or {}
            free = stats.get("bytes_limit", 0) - stats.get("bytes_in_use", 0)
        except Exception:
            pass
        major_minor = tuple(int(p) for p in str(cc).split(".")[:2]) if cc else None
        h.add_device(index, getattr(device, "device_kind", None), major_minor, None, free)
    return gpus


def rehearsal_device(h, jax):
    h.add_device(0, "cpu (rehearsal)", h.REHEARSAL_CC, None, h.REHEARSAL_FREE)
    return jax.devices("cpu")[:1]


def check_device(h, jax, device, index):
    if not h.step("allocate", lambda: allocate(jax, device), index):
        return
    cc = h.device_cc(index)
    highest = jax.lax.Precision.HIGHEST
    h.step("matmul FP32", lambda: matmul(h, jax, device, "float32", highest, "fp32"), index)
    h.step("elementwise FP32", lambda: elementwise(h, jax, device), index)
    for kind in ("tf32", "bf16", "fp16"):
        h.step("matmul " + kind.upper(), lambda: typed(h, jax, device, cc, kind), index)


def allocate(jax, device):
    import jax.numpy as jnp

    count = 1 << 22
    x = jax.device_put(jnp.full((count,), 2.0, dtype=jnp.float32), device)
    total = float(jnp.sum(x))
    if total != 2.0 * count:
        raise RuntimeError("a sum of %r from %d twos" % (total, count))
    return "16 MiB on %s, summed" % device


def error_vs(jnp, got, want):
    got, want = got.astype(jnp.float32), want.astype(jnp.float32)
    if not bool(jnp.all(jnp.isfinite(got))):
        raise RuntimeError("the result holds nan or inf")
    return float(jnp.max(jnp.abs(got - want))) / max(float(jnp.max(jnp.abs(want))), 1e-30)


def seeded(jax, shape, seed, dtype):
    return jax.random.normal(jax.random.PRNGKey(seed), shape, dtype="float32").astype(dtype)


def matmul(h, jax, device, dtype, precision, kind):
    import jax.numpy as jnp

    cpu = jax.devices("cpu")[0]
    a = jax.device_put(seeded(jax, (MATMUL_N, MATMUL_N), 1, dtype), cpu)
    b = jax.device_put(seeded(jax, (MATMUL_N, MATMUL_N), 2, dtype), cpu)
    highest = jax.lax.Precision.HIGHEST
    want = jnp.matmul(a.astype("float32"), b.astype("float32"), precision=highest)
    got = jnp.matmul(jax.device_put(a, device), jax.device_put(b, device), precision=precision)
    got = jax.device_put(got, cpu)
    return h.within(error_vs(jnp, got, want), kind)


def typed(h, jax, device, cc, kind):
    if not h.has_feature(cc, kind):
        raise h.Skip("compute capability %d.%d has no %s" % (cc[0], cc[1], kind.upper()))
    if kind == "tf32":  # the default precision of an FP32 matmul on the GPU may use TF32
        return matmul(h, jax, device, "float32", jax.lax.Precision.DEFAULT, "tf32")
    dtype = "bfloat16" if kind == "bf16" else "float16"
    return matmul(h, jax, device, dtype, jax.lax.Precision.DEFAULT, kind)


def elementwise(h, jax, device):
    import jax.numpy as jnp

    def f(t):
        return jnp.sin(t) * jnp.exp(-t * t / 4.0) + 0.5 * t

    cpu = jax.devices("cpu")[0]
    x = jax.device_put(jnp.linspace(-4.0, 4.0, 1 << 16, dtype="float32"), cpu)
    want = f(x)
    got = jax.device_put(f(jax.device_put(x, device)), cpu)
    return h.within(error_vs(jnp, got, want), "elementwise")


def psum(h, jax, devices):
    """Each GPU adds its rank + 1 with lax.psum (NCCL underneath): all must see the sum."""
    import jax.numpy as jnp

    if not hasattr(jax, "pmap"):
        raise h.Skip("this jax has no pmap")
    n = len(devices)
    total = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i", devices=devices)(
        jnp.arange(1, n + 1, dtype="float32").reshape(n, 1)
    )
    seen = [float(v) for v in jnp.ravel(total)]
    if seen != [n * (n + 1) / 2.0] * n:
        raise RuntimeError("the GPUs saw %r, not %r each" % (seen, n * (n + 1) / 2.0))
    return "%d GPUs saw the sum" % n


def bench_matmul(h, jax, device, index, kind):
    import jax.numpy as jnp

    cc = h.device_cc(index)
    if kind != "fp32" and not h.has_feature(cc, kind):
        raise h.Skip("compute capability %d.%d has no %s" % (cc[0], cc[1], kind.upper()))
    dtype = {"bf16": "bfloat16", "fp16": "float16"}.get(kind, "float32")
    free = h.doc["devices"][index].get("memory_free") or 0
    n = h.matmul_size(free, jnp.dtype(dtype).itemsize)
    if not n:
        raise h.Skip("too little free memory known for a matmul bench")
    precision = jax.lax.Precision.HIGHEST if kind == "fp32" else jax.lax.Precision.DEFAULT
    a = jax.device_put(jnp.ones((n, n), dtype=dtype), device)
    b = jax.device_put(jnp.ones((n, n), dtype=dtype), device)
    f = jax.jit(lambda x, y: jnp.matmul(x, y, precision=precision))

    seconds = h.measure(h.wall_timer(lambda r: r.block_until_ready()), lambda: f(a, b))
    h.bench("matmul " + kind.upper(), index, "flop", 2 * n**3, seconds, "%dx%d" % (n, n))
    return "%dx%d" % (n, n)
