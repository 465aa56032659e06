# gpuenv-check-script: onnxruntime. Run through _harness.py inside the target interpreter.
"""ONNX Runtime checks: build and execution providers, a tiny model (built here byte by byte, no
onnx package needed) run on the CPU, then on the GPU with the CUDA execution provider, which must
really be selected and really run the nodes (ORT's profile says where each node ran), not a
silent fallback to the CPU.

Imports only onnxruntime and the standard library; the harness `h` comes from _harness.py.
ORT does not list GPUs: the device checked is --device, else 0.
"""

import json
import os
import struct

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"
N = 4  # Y = A @ B + C, 4 x 4 float32
OPS = ("MatMul", "Add")  # the model's nodes, by operator


def run(h):
    ort = h.import_framework("onnxruntime")
    if ort is None:
        return
    providers = report_build(h, ort)
    model = model_bytes()
    h.step("model on the CPU", lambda: run_model(h, ort, model, [CPU], None))
    if CUDA not in providers:
        h.no_device("this onnxruntime has no %s (available: %s)" % (CUDA, ", ".join(providers)))
        return
    index = h.options.get("device") or 0
    h.add_device(index, None, None)
    h.step(
        "model on CUDA (CUDA EP selected)", lambda: run_model(h, ort, model, [CUDA], index), index
    )


def report_build(h, ort):
    providers = []
    try:
        providers = list(ort.get_available_providers())
    except Exception as exc:
        h.problem("get_available_providers() failed: %s" % exc)
    info = {}
    try:
        from onnxruntime.capi import build_and_package_info as package

        info = {k: getattr(package, k, None) for k in ("cuda_version", "cudnn_version")}
    except Exception:
        pass
    details = {"providers": " ".join(providers), "device": None}
    try:
        details["device"] = ort.get_device()
    except Exception:
        pass
    gpu = CUDA in providers or "TensorrtExecutionProvider" in providers
    h.build(ort.__version__, info.get("cuda_version"), info.get("cudnn_version"), gpu, details)
    return providers


# -- the model, as protobuf bytes -----------------------------------------------------------------


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number, payload):
    """A field: an int is a varint (wire type 0), bytes or str are length-delimited (2)."""
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def matrices():
    a = [(i % 7) - 3.0 for i in range(N * N)]
    b = [((3 * i) % 5) * 0.5 - 1.0 for i in range(N * N)]
    c = [0.25 * i for i in range(N * N)]
    return a, b, c


def expected():
    a, b, c = matrices()
    return [
        sum(a[i * N + k] * b[k * N + j] for k in range(N)) + c[i * N + j]
        for i in range(N)
        for j in range(N)
    ]


def tensor(name, values):
    raw = struct.pack("<%df" % len(values), *values)
    return field(1, N) + field(1, N) + field(2, 1) + field(8, name) + field(9, raw)


def value_info(name):
    dims = field(1, field(1, N)) + field(1, field(1, N))
    tensor_type = field(1, 1) + field(2, dims)  # elem_type FLOAT, shape
    return field(1, name) + field(2, field(1, tensor_type))


def model_bytes():
    """ModelProto (IR 7, opset 13): initializers A, B, C; Y = Add(MatMul(A, B), C)."""
    a, b, c = matrices()
    nodes = field(
        1, field(1, "A") + field(1, "B") + field(2, "AB") + field(3, "mm") + field(4, "MatMul")
    )
    nodes += field(
        1, field(1, "AB") + field(1, "C") + field(2, "Y") + field(3, "add") + field(4, "Add")
    )
    graph = nodes + field(2, "gpuenv-check")
    for name, values in (("A", a), ("B", b), ("C", c)):
        graph += field(5, tensor(name, values))
    graph += field(12, value_info("Y"))
    opset = field(1, "") + field(2, 13)
    return field(1, 7) + field(2, "gpuenv") + field(7, graph) + field(8, opset)


# -- running it -----------------------------------------------------------------------------------


def run_model(h, ort, model, providers, index):
    # ORT's profile goes in a folder of its own, removed with it
    return h.scratch(
        "gpuenv-ort-", lambda folder: run_model_in(h, ort, model, providers, index, folder)
    )


def run_model_in(h, ort, model, providers, index, folder):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # no folding
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(folder, "ort-profile")
    chosen = [(CUDA, {"device_id": str(index)}), CPU] if index is not None else list(providers)
    session, log = h.stderr_of(
        lambda: ort.InferenceSession(model, sess_options=options, providers=chosen)
    )
    if index is not None and CUDA not in session.get_providers():
        raise h.Failed(
            "the CUDA execution provider was not selected; ORT fell back to the CPU%s"
            % (": " + log.strip()[-1500:] if log.strip() else "")
        )
    (got,) = session.run(None, {})
    ran_on = providers_in_profile(session.end_profiling())
    got = [float(v) for v in got.reshape(-1).tolist()]
    detail = h.within(h.max_error_lists(got, expected()), "fp32")
    if index is not None:
        wrong = not_on_cuda(ran_on)
        if wrong:
            raise h.Failed(wrong)
    where = sorted(set(ran_on.values())) or session.get_providers()
    return "%s; ran on %s" % (detail, ", ".join(where))


def not_on_cuda(ran_on, ops=OPS):
    """Why ORT's profile does not show every node of the model run by the CUDA execution
    provider, or None. A node the profile does not name is not known to have run there."""
    elsewhere = ["%s on %s" % (op, ran_on[op]) for op in ops if ran_on.get(op, CUDA) != CUDA]
    if elsewhere:
        return "the model's nodes did not run on %s: %s" % (CUDA, ", ".join(elsewhere))
    unknown = [op for op in ops if op not in ran_on]
    if unknown:
        return "ORT's profile does not say where %s ran, so %s running them is not shown" % (
            ", ".join(unknown),
            CUDA,
        )
    return None


def providers_in_profile(path):
    """{operator: execution provider}, as ORT's profile says where the nodes ran (or empty)."""
    try:
        with open(path) as handle:
            events = json.load(handle)
    except (OSError, ValueError):
        return {}
    found = {}
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, dict):
            continue
        args = event.get("args")
        if event.get("cat") == "Node" and isinstance(args, dict) and args.get("provider"):
            found[str(args.get("op_name"))] = str(args["provider"])
    return found
