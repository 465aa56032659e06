# gpuenv-check-script: torch. Run through _harness.py inside the target interpreter.
"""PyTorch checks: build, devices, known answers on each GPU, cuDNN, TF32/BF16/FP16, torchvision's
compiled ops, torch.compile (Triton), peer copies and an NCCL all-reduce, and the bench.

Imports only torch (torchvision when gpuenv says it is installed) and the standard library; the
harness `h` comes from _harness.py. Python 3.6+.
"""

import os
import sys
import time

SEED = 20240601
MATMUL_N = 256


def run(h):
    torch = h.import_framework("torch")
    if torch is None:
        return
    report_build(h, torch)
    vision = None
    if h.options.get("torchvision"):
        vision = import_torchvision(h)
        if vision is not None:
            h.step("torchvision nms (CPU)", lambda: nms_check(torch, vision, "cpu"))
    indexes = rehearsal_device(h, torch) if h.rehearsal else list_devices(h, torch)
    for index in indexes:
        check_device(h, torch, vision, index, first=index == indexes[0])
    if len(indexes) >= 2:
        h.step("peer copies", lambda: peer_copies(torch, indexes))
        h.step("NCCL all-reduce", lambda: nccl_all_reduce(h, torch, indexes))
    elif h.rehearsal:  # the spawning, rendezvous and clean-up of the all-reduce, on the CPU
        h.step("all-reduce (gloo rehearsal)", lambda: nccl_all_reduce(h, torch, [0, 0], "gloo"))
    if h.options.get("bench"):
        for index in indexes:
            bench_device(h, torch, index)


def report_build(h, torch):
    version = getattr(torch, "version", None)
    cuda = getattr(version, "cuda", None)
    hip = getattr(version, "hip", None)
    cudnn = None
    try:
        cudnn = torch.backends.cudnn.version()
    except Exception as exc:
        h.problem("torch.backends.cudnn.version() failed: %s" % exc)
    details = {"hip": hip, "git_version": getattr(version, "git_version", None)}
    try:
        details["nccl"] = ".".join(str(p) for p in torch.cuda.nccl.version())
    except Exception:
        pass
    try:
        details["arch_list"] = " ".join(torch.cuda.get_arch_list())
    except Exception:
        pass
    h.build(torch.__version__, cuda, cudnn, cuda is not None or hip is not None, details)


def import_torchvision(h):
    found = []

    def load():
        import torchvision

        found.append(torchvision)
        return "torchvision %s" % torchvision.__version__

    h.step("import torchvision", load)
    return found[0] if found else None


def list_devices(h, torch):
    """Add every device torch sees; the indexes to check. Why none, in torch's words."""
    count = 0
    try:
        count = torch.cuda.device_count()
    except Exception as exc:
        h.no_device("torch.cuda.device_count() failed: %s" % exc)
        return []
    if count == 0:
        try:
            torch.cuda.init()
            h.no_device("torch.cuda.device_count() is 0")
        except Exception as exc:
            h.no_device("%s: %s" % (type(exc).__name__, exc))
        return []
    for index in range(count):
        try:
            props = torch.cuda.get_device_properties(index)
            free = total = None
            try:
                free, total = torch.cuda.mem_get_info(index)
            except Exception:
                total = getattr(props, "total_memory", None)
            h.add_device(index, props.name, (props.major, props.minor), total, free)
        except Exception as exc:
            h.add_device(index, None, None)
            h.problem("reading device %d failed: %s" % (index, exc))
    return h.selected(count)


def rehearsal_device(h, torch):
    h.add_device(0, "cpu (rehearsal)", h.REHEARSAL_CC, None, h.REHEARSAL_FREE)
    return [0]


def device_of(h, torch, index):
    return torch.device("cpu") if h.rehearsal else torch.device("cuda", index)


def sync(torch, dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def free_memory(h, torch, dev):
    if dev.type != "cuda":
        return h.REHEARSAL_FREE
    torch.cuda.empty_cache()
    try:
        return torch.cuda.mem_get_info(dev)[0]
    except AttributeError:  # torch before 1.10: what is not yet reserved by torch
        props = torch.cuda.get_device_properties(dev)
        return props.total_memory - torch.cuda.memory_reserved(dev)


def inputs(torch, shape, dtype=None, seed=SEED):
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(*shape, generator=generator)
    return values if dtype is None else values.to(dtype)


def error_vs(torch, got, want):
    got, want = got.detach().cpu().double(), want.detach().cpu().double()
    if not bool(torch.isfinite(got).all()):
        raise RuntimeError("the result holds nan or inf")
    return (got - want).abs().max().item() / max(want.abs().max().item(), 1e-30)


def check_device(h, torch, vision, index, first):
    dev = device_of(h, torch, index)
    cc = h.device_cc(index)
    ok = h.step("allocate", lambda: allocate(h, torch, dev), index)
    if not ok:
        return
    h.step("matmul FP32", lambda: matmul(h, torch, dev, torch.float32, "fp32"), index)
    h.step("elementwise FP32", lambda: elementwise(h, torch, dev), index)
    h.step("conv2d (cuDNN)", lambda: conv_cudnn(h, torch, dev), index)
    h.step("matmul TF32", lambda: typed(h, torch, dev, cc, "tf32"), index)
    h.step("matmul BF16", lambda: typed(h, torch, dev, cc, "bf16"), index)
    h.step("matmul FP16", lambda: typed(h, torch, dev, cc, "fp16"), index)
    if vision is not None:
        h.step("torchvision nms", lambda: nms_check(torch, vision, dev), index)
    if first:  # Triton compiles once; one GPU shows whether the path works
        h.step("torch.compile (Triton)", lambda: compile_check(h, torch, dev), index)


def allocate(h, torch, dev):
    free = free_memory(h, torch, dev)
    count = min(16 * 1024 * 1024, max(free // 16, 1024))  # floats: 64 MiB at most
    count -= count % 1024
    x = torch.full((count,), 2.0, device=dev)
    total = x.sum().item()  # partial sums are 2k for k <= 2**24: exact in FP32
    head = x[:4].tolist()
    del x
    if total != 2.0 * count or head != [2.0] * 4:
        raise RuntimeError("read back %r and a sum of %r from %d twos" % (head, total, count))
    return "%d MiB written, read back and summed" % (count * 4 // (1024 * 1024))


def matmul(h, torch, dev, dtype, kind, tf32=False):
    a = inputs(torch, (MATMUL_N, MATMUL_N), seed=SEED)
    b = inputs(torch, (MATMUL_N, MATMUL_N), seed=SEED + 1)
    if dtype != torch.float32:
        a, b = a.to(dtype), b.to(dtype)
    want = a.double() @ b.double()  # the reference from the same (rounded) inputs
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        got = a.to(dev) @ b.to(dev)
        sync(torch, dev)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    return h.within(error_vs(torch, got, want), kind)


def typed(h, torch, dev, cc, kind):
    if not h.has_feature(cc, kind):
        raise h.Skip("compute capability %d.%d has no %s" % (cc[0], cc[1], kind.upper()))
    if kind == "tf32":
        return matmul(h, torch, dev, torch.float32, "tf32", tf32=True)
    dtype = torch.bfloat16 if kind == "bf16" else torch.float16
    return matmul(h, torch, dev, dtype, kind)


def elementwise(h, torch, dev):
    x = torch.linspace(-4.0, 4.0, 1 << 16)

    def f(t):
        return torch.sin(t) * torch.exp(-t * t / 4.0) + 0.5 * t

    got = f(x.to(dev))
    return h.within(error_vs(torch, got, f(x.double())), "elementwise")


def conv_cudnn(h, torch, dev):
    cudnn = torch.backends.cudnn
    if dev.type != "cuda":
        raise h.Skip("cuDNN needs a GPU (rehearsal on the CPU)")
    if not cudnn.is_available():
        raise h.Failed("cuDNN is not available to this torch (torch.backends.cudnn)")
    x = inputs(torch, (2, 3, 16, 16), seed=SEED + 2)
    w = inputs(torch, (4, 3, 3, 3), seed=SEED + 3)
    want = torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
    enabled, tf32 = cudnn.enabled, cudnn.allow_tf32
    cudnn.enabled, cudnn.allow_tf32 = True, False
    try:
        got = torch.nn.functional.conv2d(x.to(dev), w.to(dev), padding=1)
        sync(torch, dev)
    finally:
        cudnn.enabled, cudnn.allow_tf32 = enabled, tf32
    return "cuDNN %s, %s" % (cudnn.version(), h.within(error_vs(torch, got, want), "conv"))


def nms_check(torch, vision, dev):
    """Three boxes, the second overlapping the first (IoU 0.81): nms at 0.5 keeps 0 and 2."""
    boxes = torch.tensor(
        [[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0], [50.0, 50.0, 60.0, 60.0]], device=dev
    )
    scores = torch.tensor([0.9, 0.8, 0.7], device=dev)
    kept = vision.ops.nms(boxes, scores, 0.5).cpu().tolist()
    if kept != [0, 2]:
        raise RuntimeError("torchvision.ops.nms kept %r instead of [0, 2]" % (kept,))
    return "kept [0, 2] of 3 boxes"


def compile_check(h, torch, dev):
    major = int(torch.__version__.split(".")[0])
    if dev.type != "cuda":
        raise h.Skip("Triton needs a GPU (rehearsal on the CPU)")
    if major < 2 or not hasattr(torch, "compile"):
        raise h.Skip("torch %s has no torch.compile" % torch.__version__)

    def f(t):
        return torch.sin(t) + torch.cos(t) * 2.0

    x = torch.linspace(-3.0, 3.0, 4096, device=dev)
    got = torch.compile(f)(x)
    sync(torch, dev)
    return h.within(error_vs(torch, got, f(x)), "elementwise")


def peer_copies(torch, indexes):
    """A tensor copied from each GPU to each other one arrives intact; P2P access is reported."""
    direct, staged = [], []
    for i in indexes:
        source = torch.arange(1 << 20, dtype=torch.float32, device=torch.device("cuda", i))
        for j in indexes:
            if i == j:
                continue
            copied = source.to(torch.device("cuda", j))
            if not bool(torch.equal(copied.cpu(), source.cpu())):
                raise RuntimeError("a copy from GPU %d to GPU %d arrived changed" % (i, j))
            (direct if torch.cuda.can_device_access_peer(i, j) else staged).append("%d>%d" % (i, j))
    return "P2P: %s; through the host: %s" % (
        " ".join(direct) or "none",
        " ".join(staged) or "none",
    )


def nccl_all_reduce(h, torch, indexes, backend="nccl"):
    """One process per GPU (spawned), each adding rank + 1 over NCCL: all must see the sum.
    (`backend` "gloo": the same on the CPU, for the rehearsal.)"""
    if not sys.platform.startswith("linux"):
        raise h.Skip("NCCL runs on Linux only")
    import torch.distributed as dist

    if not dist.is_available():
        raise h.Failed("this torch was built without torch.distributed")
    if backend == "nccl" and not dist.is_nccl_available():
        raise h.Failed("this torch was built without NCCL (torch.distributed.is_nccl_available())")
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    world = len(indexes)

    def run_ranks(folder):  # the rendezvous file lives in the folder until the ranks are stopped
        init = "file://" + os.path.join(folder, "rendezvous")
        workers = [
            context.Process(
                target=h.call_in_child,
                args=("torch", "nccl_worker", (rank, world, indexes[rank], init, results, backend)),
                daemon=True,
            )
            for rank in range(world)
        ]
        for worker in workers:
            worker.start()
        left = h.budget_left()
        wait = 120.0 if left is None else max(5.0, min(120.0, left / 2))
        deadline = time.time() + wait
        try:
            return collect(results, workers, deadline), workers, wait
        finally:
            stop(workers, deadline)

    answers, workers, wait = h.scratch("gpuenv-nccl-", run_ranks)
    missing = [r for r in range(world) if r not in answers]
    if missing:
        codes = [w.exitcode for w in workers]
        raise h.Failed("ranks %s gave no answer in %.0f s (exit codes %s)" % (missing, wait, codes))
    wrong = [answers[r] for r in range(world) if answers[r] != "ok"]
    if wrong:
        raise RuntimeError("; ".join(wrong))
    return "%d processes: every rank saw the sum" % world


def collect(results, workers, deadline):
    """{rank: outcome} as the workers send them, until all have, the deadline, or every worker
    is gone (one that died without an answer is not waited for)."""
    answers = {}
    while len(answers) < len(workers) and time.time() < deadline:
        try:
            rank, outcome = results.get(timeout=min(1.0, max(0.1, deadline - time.time())))
            answers[rank] = outcome
        except Exception:  # queue.Empty: nothing yet
            if not any(w.is_alive() for w in workers) and results.empty():
                break
    return answers


def stop(workers, deadline):
    """Every worker ended and reaped: joined until the deadline, then terminated, then killed."""
    for worker in workers:
        worker.join(timeout=max(0.1, deadline - time.time()))
        for end in ("terminate", "kill"):  # kill: Python 3.7+
            if worker.is_alive() and hasattr(worker, end):
                getattr(worker, end)()
                worker.join(timeout=5.0)


def nccl_worker(rank, world, index, init, results, backend="nccl"):
    """One rank of the all-reduce (in a spawned process): "ok", or what went wrong."""
    try:
        import torch
        import torch.distributed as dist

        cuda = backend == "nccl"
        if cuda:
            torch.cuda.set_device(index)
        else:  # the rehearsal's ranks talk over the loopback interface, never the network
            os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        dist.init_process_group(backend, init_method=init, rank=rank, world_size=world)
        try:
            where = torch.device("cuda", index) if cuda else torch.device("cpu")
            t = torch.full((1 << 20,), float(rank + 1), device=where)
            dist.all_reduce(t)
            if cuda:
                torch.cuda.synchronize(index)
            want = world * (world + 1) / 2.0
            low, high = t.min().item(), t.max().item()
            outcome = (
                "ok"
                if low == high == want
                else "rank %d saw %r..%r, not %r"
                % (
                    rank,
                    low,
                    high,
                    want,
                )
            )
        finally:
            dist.destroy_process_group()
    except Exception as exc:
        outcome = "rank %d: %s: %s" % (rank, type(exc).__name__, exc)
    results.put((rank, outcome))


# -- bench ----------------------------------------------------------------------------------------


def event_timer(h, torch, dev):
    if dev.type != "cuda":
        return h.wall_timer(lambda _result: None)

    stream = torch.cuda.current_stream(dev)  # where the device's operations are queued

    def timed(op, count):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record(stream)
        for _ in range(count):
            op()
        end.record(stream)
        end.synchronize()
        return start.elapsed_time(end) / 1000.0 / count

    return timed


def bench_device(h, torch, index):
    dev = device_of(h, torch, index)
    h.step("bench copies", lambda: bench_copies(h, torch, dev, index), index)
    cc = h.device_cc(index)
    kinds = [("fp32", torch.float32, False)]
    kinds += [("tf32", torch.float32, True)] if h.has_feature(cc, "tf32") else []
    kinds += [("bf16", torch.bfloat16, False)] if h.has_feature(cc, "bf16") else []
    kinds += [("fp16", torch.float16, False)] if h.has_feature(cc, "fp16") else []
    for kind, dtype, tf32 in kinds:
        h.step(
            "bench matmul " + kind.upper(),
            lambda: bench_matmul(h, torch, dev, index, kind, dtype, tf32),
            index,
        )


def bench_copies(h, torch, dev, index):
    timed = event_timer(h, torch, dev)
    size = h.copy_size(free_memory(h, torch, dev), buffers=2)
    if not size:
        raise h.Skip("too little free memory for a copy bench")
    device_copy(h, torch, dev, index, timed, size)
    if dev.type != "cuda":
        return "%d MiB buffers (no pinned memory without a GPU)" % (size >> 20)
    host_size = min(size, 256 * h.MIB)
    pinned_copies(h, torch, dev, index, timed, host_size)
    return "%d MiB device buffers, %d MiB pinned host buffer" % (size >> 20, host_size >> 20)


def device_copy(h, torch, dev, index, timed, size):
    a = torch.empty(size, dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    seconds = h.measure(timed, lambda: b.copy_(a))
    h.bench("copy device-device", index, "bytes", 2 * size, seconds, "%d MiB" % (size >> 20))


def pinned_copies(h, torch, dev, index, timed, size):
    pinned = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    device = torch.empty(size, dtype=torch.uint8, device=dev)
    label = "%d MiB" % (size >> 20)
    seconds = h.measure(timed, lambda: device.copy_(pinned, non_blocking=True))
    h.bench("copy host-device (pinned)", index, "bytes", size, seconds, label)
    seconds = h.measure(timed, lambda: pinned.copy_(device, non_blocking=True))
    h.bench("copy device-host (pinned)", index, "bytes", size, seconds, label)


def bench_matmul(h, torch, dev, index, kind, dtype, tf32):
    n = h.matmul_size(free_memory(h, torch, dev), torch.empty((), dtype=dtype).element_size())
    if not n:
        raise h.Skip("too little free memory for a matmul bench")
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    c = torch.empty(n, n, device=dev, dtype=dtype)
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        seconds = h.measure(event_timer(h, torch, dev), lambda: torch.mm(a, b, out=c))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    h.bench("matmul " + kind.upper(), index, "flop", 2 * n**3, seconds, "%dx%d" % (n, n))
    return "%dx%d" % (n, n)
