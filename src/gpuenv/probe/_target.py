# gpuenv-target-probe: run inside the target interpreter; prints one JSON document on stdout.
"""Read a Python environment from its files, without importing any framework.

gpuenv runs this file as `<interpreter> -c <this text>` and reads the JSON it prints (see
gpuenv.probe.target, which turns it into facts). Standard library only, and it must run on Python
3.6 through 3.15: no f-strings, dataclasses, annotations or importlib.metadata. On Python 2 it still
parses and prints a document that says the interpreter is too old.

Document (probe_version 1), all strings UTF-8 clean:
  interpreter        version, implementation, executable, prefix, base_prefix, is_venv, pyvenv_cfg,
                     conda_meta, conda_prefix_env, sys_platform, machine, platform, libc, soabi,
                     abiflags, is_64bit, free_threaded, site_packages, user_site
  distributions      [{name, version, installer, requires, location, metadata_dir, direct_url,
                       editable, problem}] for every *.dist-info / *.egg-info in the site dirs
  frameworks         [{name, distributions: [{name, version}], location, package_dir (path),
                       files: {relative path: {values} | {problem}}, problems}]
  binary_candidates  [{path, distribution}]: libraries that carry GPU code ('' = owner unknown)
  conda_packages     [{name, version, build, channel, subdir, url, problem}] from the prefix's
                     conda-meta/*.json (absent in a venv)
  problems           what went wrong while reading, never fatal
"""

import sys

if __name__ == "__main__" and sys.path and sys.path[0] in ("", "."):
    del sys.path[0]  # `-c` puts the working directory first; a json.py there must not shadow ours

import ast  # noqa: E402
import errno  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import stat  # noqa: E402
from collections import OrderedDict  # noqa: E402

PROBE_VERSION = 1
HEAD_LIMIT = 256 * 1024  # METADATA headers sit at the top; the long description may follow
FILE_LIMIT = 1024 * 1024

# (framework, distribution names as a regex over normalised names, package dir, files to read)
FRAMEWORKS = (
    ("torch", r"torch", "torch", ("version.py",)),
    ("torchvision", r"torchvision", "torchvision", ("version.py",)),
    ("torchaudio", r"torchaudio", "torchaudio", ("version.py",)),
    (
        "tensorflow",
        r"tensorflow(-cpu|-gpu|-intel|-macos|-aarch64)?|tf-nightly(-cpu|-gpu)?",
        "tensorflow",
        ("python/platform/build_info.py",),
    ),
    ("jax", r"jax", "jax", ("version.py",)),
    ("jaxlib", r"jaxlib", "jaxlib", ("version.py",)),
    ("cupy", r"cupy(-cuda\d+x?|-rocm-[\d-]+)?", "cupy", (".data/_wheel.json",)),
    (
        "onnxruntime",
        r"onnxruntime(-gpu|-directml|-openvino|-training|-rocm|-qnn)?|ort-nightly(-gpu)?",
        "onnxruntime",
        ("capi/build_and_package_info.py",),
    ),
    ("paddlepaddle", r"paddlepaddle(-gpu)?", "paddle", ("version/__init__.py",)),
    ("mmcv", r"mmcv(-full|-lite)?", "mmcv", ("version.py",)),
    ("xformers", r"xformers", "xformers", ("version.py", "cpp_lib.json")),
    ("flash-attn", r"flash-attn", "flash_attn", ()),
    ("apex", r"apex", "apex", ()),
    ("torch-scatter", r"torch-scatter", "torch_scatter", ()),
    ("torch-sparse", r"torch-sparse", "torch_sparse", ()),
    ("torch-cluster", r"torch-cluster", "torch_cluster", ()),
    ("torch-spline-conv", r"torch-spline-conv", "torch_spline_conv", ()),
)

# (directory parts under a site dir, file-name regex, owner hint, only-if-this-exists).
# A part "re:..." matches directory names; "{0}" in the owner is its first group.
BINARY_RULES = (
    (("torch", "lib"), r"(lib)?(torch_cuda|c10_cuda)", "torch", None),
    (("torchvision",), r"_C\.", "torchvision", None),
    (("tensorflow",), r"libtensorflow_(framework|cc)\.", "tensorflow", None),
    (("tensorflow", "python"), r"_pywrap_tensorflow_internal\.", "tensorflow", None),
    (("jaxlib",), r"\w*cuda", "jaxlib", None),
    (("jaxlib",), r"xla_extension\.", "jaxlib", "jaxlib/cuda"),
    (("jaxlib", "cuda"), r"", "jaxlib", None),
    (("jax_plugins", r"re:xla_cuda(\d+)"), r"", "jax-cuda{0}-pjrt", None),
    ((r"re:jax_cuda(\d+)_plugin",), r"", "jax-cuda{0}-plugin", None),
    (("cupy", "cuda"), r"", "cupy", None),
    (("cupy_backends", "cuda", "api"), r"", "cupy", None),
    (("cupy_backends", "cuda", "libs"), r"", "cupy", None),
    (("onnxruntime", "capi"), r"(lib)?onnxruntime_providers_cuda\.", "onnxruntime-gpu", None),
    (("paddle", "base"), r"libpaddle\.", "paddlepaddle-gpu", None),
    (("paddle", "fluid"), r"(libpaddle|core_avx|core_noavx)\.", "paddlepaddle-gpu", None),
    (("mmcv",), r"_ext", "mmcv", None),
    (("xformers",), r"_C", "xformers", None),
    (("torch_scatter",), r"_\w*cuda", "torch-scatter", None),
    (("torch_sparse",), r"_\w*cuda", "torch-sparse", None),
    (("torch_cluster",), r"_\w*cuda", "torch-cluster", None),
    (("torch_spline_conv",), r"_\w*cuda", "torch-spline-conv", None),
    ((), r"(flash_attn\w*|amp_C|apex_C|fused_\w+|syncbn|\w*cuda\w*)\.", "", None),
)
BINARY_NAME = re.compile(r".*(\.so(\.\d+)*|\.pyd|\.dll|\.dylib)$")


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def clean(value):
    """Strings safe to print as UTF-8: undecodable file-name bytes become U+FFFD."""
    if isinstance(value, dict):
        return OrderedDict((clean(k), clean(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return value


def open_regular(path):
    """A file object for a regular file only. Opened without blocking and checked with fstat,
    so a FIFO planted where a METADATA or RECORD file should be cannot hang the probe (the
    same rule as gpuenv's own file gateway, which this stdlib-only script cannot import)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags | getattr(os, "O_NOCTTY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path, limit=FILE_LIMIT, until=None):
    """Up to `limit` bytes; with `until`, stop early once that marker has been read."""
    chunks = []
    size = 0
    with open_regular(path) as handle:
        while size < limit:
            chunk = handle.read(min(16384, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if until is not None and until in chunk:
                break
    return b"".join(chunks)


def decode(data, label):
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace"), "%s is not valid UTF-8" % label


def listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


# ---------------------------------------------------------------- interpreter


def libc_version():
    try:
        found = os.confstr("CS_GNU_LIBC_VERSION")
        if found:
            return found
    except (AttributeError, ValueError, OSError):
        pass
    if sys.platform.startswith("linux"):
        for folder in ("/lib", "/usr/lib"):
            if any(n.startswith("ld-musl-") for n in listdir(folder)):
                return "musl"
    try:
        lib, version = platform.libc_ver()
        return ("%s %s" % (lib, version)).strip() or None
    except Exception:
        return None


def read_pyvenv_cfg(prefix):
    values = OrderedDict()
    try:
        text, _ = decode(read_bytes(os.path.join(prefix, "pyvenv.cfg"), 16384), "pyvenv.cfg")
    except OSError:
        return None
    for line in text.split("\n"):
        if "=" in line:
            key, value = line.split("=", 1)
            values[key.strip().lower()] = value.strip()
    return values


def site_dirs(problems):
    import site

    found = []
    try:
        found.extend(site.getsitepackages())
    except AttributeError:  # old virtualenv's own site.py
        problems.append("site.getsitepackages() is missing; used sysconfig paths")
        import sysconfig

        found.extend([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    user = None
    if getattr(site, "ENABLE_USER_SITE", False):
        user = site.getusersitepackages()
        found.insert(0, user)
    order = dict((p, i) for i, p in enumerate(sys.path))
    found.sort(key=lambda p: order.get(p, len(order)))
    result = []
    seen = set()
    for path in found:
        real = os.path.realpath(path)
        if os.path.isdir(path) and real not in seen:
            seen.add(real)
            result.append(path)
    return result, user


def interpreter_facts(sites, user_site):
    import sysconfig

    base_prefix = getattr(sys, "base_prefix", getattr(sys, "real_prefix", sys.prefix))
    info = OrderedDict()
    info["version"] = platform.python_version()
    info["implementation"] = sys.implementation.name
    info["executable"] = sys.executable
    info["prefix"] = sys.prefix
    info["base_prefix"] = base_prefix
    info["is_venv"] = sys.prefix != base_prefix or hasattr(sys, "real_prefix")
    info["pyvenv_cfg"] = read_pyvenv_cfg(sys.prefix)
    info["conda_meta"] = os.path.isdir(os.path.join(sys.prefix, "conda-meta"))
    info["conda_prefix_env"] = os.environ.get("CONDA_PREFIX")
    info["sys_platform"] = sys.platform
    info["machine"] = platform.machine()
    info["platform"] = sysconfig.get_platform()
    info["libc"] = libc_version()
    info["soabi"] = sysconfig.get_config_var("SOABI")
    info["abiflags"] = getattr(sys, "abiflags", None)
    info["is_64bit"] = sys.maxsize > 2**32
    info["free_threaded"] = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    info["site_packages"] = sites
    info["user_site"] = user_site
    return info


# ---------------------------------------------------------------- distributions


def parse_headers(text):
    """RFC 822 style headers up to the first blank line: {lower-case key: [values]}."""
    headers = OrderedDict()
    last = None
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if not line.strip(" \t"):
            break
        if line[0] in " \t" and last is not None:
            headers[last][-1] += "\n" + line.strip(" \t")
        elif ":" in line:
            key, value = line.split(":", 1)
            last = key.strip().lower()
            headers.setdefault(last, []).append(value.strip(" \t"))
    return headers


def egg_requires(path):
    """requires.txt of an .egg-info, as Requires-Dist lines ("[extra:marker]" sections)."""
    try:
        text, _ = decode(read_bytes(path), "requires.txt")
    except OSError:
        return []
    requires = []
    marker = ""
    for line in text.split("\n"):
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            extra, _, condition = line[1:-1].partition(":")
            parts = ([condition] if condition else []) + (
                ['extra == "%s"' % extra] if extra else []
            )
            marker = " and ".join(parts)
        elif line and not line.startswith("#"):
            requires.append(line + ("; " + marker if marker else ""))
    return requires


def read_small(path):
    try:
        return decode(read_bytes(path, 4096), os.path.basename(path))[0].strip() or None
    except OSError:
        return None


def read_direct_url(folder, dist):
    path = os.path.join(folder, "direct_url.json")
    if not os.path.isfile(path):
        return
    try:
        data = json.loads(decode(read_bytes(path, 65536), "direct_url.json")[0])
        dist["direct_url"] = data.get("url")
        dist["editable"] = bool((data.get("dir_info") or {}).get("editable"))
    except (OSError, ValueError, AttributeError) as exc:
        dist["problem"] = "direct_url.json unreadable: %s" % exc.__class__.__name__


def read_distribution(site, entry):
    folder = os.path.join(site, entry)
    is_dist_info = entry.endswith(".dist-info")
    stem = entry.rsplit(".", 1)[0].split("-")
    dist = OrderedDict()
    dist["name"] = stem[0]
    dist["version"] = stem[1] if len(stem) > 1 else None
    dist["installer"] = dist["direct_url"] = dist["problem"] = None
    dist["requires"] = []
    dist["location"] = site
    dist["metadata_dir"] = entry
    dist["editable"] = False
    is_dir = os.path.isdir(folder)
    label = "METADATA" if is_dist_info else "PKG-INFO"
    meta = os.path.join(folder, label) if is_dir else folder
    problems = []
    try:
        data = read_bytes(meta, HEAD_LIMIT, b"\n\n")
    except OSError as exc:
        data = None
        reason = "unreadable: %s" % (exc.strerror or exc) if os.path.exists(meta) else "missing"
        problems.append("%s %s" % (label, reason))
    if data is not None and not data.strip():
        problems.append("%s is empty" % label)
    elif data is not None:
        text, problem = decode(data, label)
        problems.extend([problem] if problem else [])
        headers = parse_headers(text)
        for key in ("name", "version"):
            if headers.get(key):
                dist[key] = headers[key][0]
            else:
                problems.append("%s has no %s" % (label, key.capitalize()))
        dist["requires"] = headers.get("requires-dist", [])
    if is_dir:
        dist["installer"] = read_small(os.path.join(folder, "INSTALLER"))
        if not is_dist_info:
            dist["requires"] = egg_requires(os.path.join(folder, "requires.txt"))
        read_direct_url(folder, dist)
    if problems:
        dist["problem"] = "; ".join(problems)
    return dist


def top_level(site, entry):
    text = read_small(os.path.join(site, entry, "top_level.txt")) or ""
    return [line.strip().replace("\\", "/").split("/")[0] for line in text.split("\n")]


def read_distributions(sites):
    dists = []
    owners = {}  # (site, top-level name) -> distribution name
    for site in sites:
        for entry in listdir(site):
            if not entry.endswith((".dist-info", ".egg-info")):
                continue
            try:
                dist = read_distribution(site, entry)
            except Exception as exc:
                dist = OrderedDict([("name", entry), ("version", None), ("location", site)])
                dist["problem"] = "unreadable: %s: %s" % (exc.__class__.__name__, exc)
            dists.append(dist)
            for name in top_level(site, entry):
                owners.setdefault((site, name), dist["name"])
    return dists, owners


# ---------------------------------------------------------------- frameworks


def literal(node):
    """The value of a literal expression (OrderedDict([...]) included), or raise ValueError."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        func = node.func
        name = getattr(func, "id", None) or getattr(func, "attr", None)
        if name in ("OrderedDict", "dict"):
            return dict(ast.literal_eval(node.args[0]))
    return ast.literal_eval(node)


def assignments(text):
    """Top-level `NAME = literal` / `NAME: T = literal` values, without running the file."""
    values = OrderedDict()
    try:
        tree = ast.parse(text)
    except Exception as exc:  # SyntaxError, ValueError (NUL bytes), RecursionError ...
        return assignments_by_line(text), "not valid Python (%s)" % exc.__class__.__name__
    annotated = getattr(ast, "AnnAssign", ())
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        elif isinstance(node, annotated) and node.value is not None:
            target = node.target
        else:
            continue
        if isinstance(target, ast.Name):
            try:
                values[target.id] = json.loads(json.dumps(literal(node.value)))
            except Exception:
                continue
    return values, None


def assignments_by_line(text):
    values = OrderedDict()
    for line in text.split("\n"):
        found = re.match(r"([A-Za-z_]\w*)\s*(?::[^=]*)?=\s*(.+?)\s*$", line)
        if found:
            try:
                values[found.group(1)] = json.loads(json.dumps(ast.literal_eval(found.group(2))))
            except Exception:
                continue
    return values


def read_values(path):
    """{"values": {...}} or {"problem": "..."} (values read so far are kept with a problem)."""
    try:
        text, problem = decode(read_bytes(path), os.path.basename(path))
    except OSError as exc:
        return OrderedDict([("problem", "unreadable: %s" % exc)])
    if path.endswith(".json"):
        try:
            data = json.loads(text)
        except ValueError:
            return OrderedDict([("problem", "not valid JSON")])
        if not isinstance(data, dict):
            return OrderedDict([("problem", "not a JSON object")])
        return OrderedDict([("values", data)])
    values, parse_problem = assignments(text)
    result = OrderedDict([("values", values)])
    problems = [p for p in (problem, parse_problem) if p]
    if problems:
        result["problem"] = "; ".join(problems)
    return result


def url_path(url):
    """The local path of a file:// URL (direct_url.json), else None."""
    if not url or not url.startswith("file://"):
        return None
    from urllib.parse import unquote

    path = unquote(url[len("file://") :])
    return path[1:] if re.match(r"/[A-Za-z]:", path) else path  # file:///C:/src on Windows


def package_folder(site, package, matched):
    """The package's files: beside its metadata, or in the source tree of an editable install."""
    roots = [site] + [url_path(d.get("direct_url")) for d in matched if d.get("editable")]
    for root in roots:
        if root and os.path.isdir(os.path.join(root, package)):
            return os.path.join(root, package)
    return None


def framework_record(spec, site, dists):
    name, pattern, package, files = spec
    matched = [d for d in dists if re.match("(%s)$" % pattern, normalize(d["name"] or ""))]
    folder = package_folder(site, package, matched)
    if not matched and folder is None:
        return None
    record = OrderedDict()
    record["name"] = name
    record["distributions"] = [
        OrderedDict([("name", d["name"]), ("version", d["version"])]) for d in matched
    ]
    record["location"] = site
    record["package_dir"] = folder
    record["files"] = OrderedDict()
    record["problems"] = []
    if folder is None:
        record["problems"].append("%s/ is missing although its metadata is installed" % package)
        return record
    if not matched:
        record["problems"].append("%s/ has no distribution metadata beside it" % package)
    for relative in files:
        path = os.path.join(folder, *relative.split("/"))
        if os.path.isfile(path):
            record["files"]["%s/%s" % (package, relative)] = read_values(path)
    return record


def read_frameworks(sites, dists):
    records = []
    for spec in FRAMEWORKS:
        for site in sites:
            here = [d for d in dists if d["location"] == site]
            try:
                record = framework_record(spec, site, here)
            except Exception as exc:
                record = OrderedDict([("name", spec[0]), ("location", site)])
                record["problems"] = ["reading it failed: %s: %s" % (exc.__class__.__name__, exc)]
            if record is not None:
                records.append(record)
    return records


# ---------------------------------------------------------------- binaries


def rule_dirs(site, parts):
    """(directory, first regex group) pairs that the parts of one rule name."""
    found = [(site, None)]
    for part in parts:
        step = []
        for folder, group in found:
            if not part.startswith("re:"):
                step.append((os.path.join(folder, part), group))
                continue
            for entry in listdir(folder):
                hit = re.match(part[3:] + "$", entry)
                if hit and os.path.isdir(os.path.join(folder, entry)):
                    step.append((os.path.join(folder, entry), hit.group(1)))
        found = step
    return found


def binary_candidates(sites, owners):
    found = []
    seen = set()
    for site in sites:
        for parts, pattern, hint, needs in BINARY_RULES:
            if needs and not os.path.isdir(os.path.join(site, *needs.split("/"))):
                continue
            for folder, group in rule_dirs(site, parts):
                for entry in listdir(folder):
                    path = os.path.join(folder, entry)
                    if path in seen or not re.match(pattern, entry):
                        continue
                    if not BINARY_NAME.match(entry) or not os.path.isfile(path):
                        continue
                    seen.add(path)
                    top = parts[0] if parts else entry.split(".")[0]
                    if "{0}" in hint:
                        owner = hint.format(group)
                    else:
                        owner = owners.get((site, top), hint)
                    found.append(OrderedDict([("path", path), ("distribution", owner)]))
    return found


# ---------------------------------------------------------------- conda-meta

CONDA_KEYS = ("name", "version", "build", "channel", "subdir", "url")
CONDA_WHOLE_LIMIT = 2 * 1024 * 1024  # larger records (a long `files` list) are read at both ends
CONDA_END = 64 * 1024
CONDA_FIELD = re.compile(r'"(name|version|build|channel|subdir|url)"\s*:\s*"((?:[^"\\]|\\.)*)"')


def conda_fields(data):
    """The top-level string fields of one conda-meta record. Small records are parsed whole;
    from a large one (conda sorts its keys, rattler writes them in struct order, both put the
    `files` and `paths_data` lists in the middle) the fields are read at both ends."""
    if len(data) <= CONDA_WHOLE_LIMIT:
        try:
            record = json.loads(data.decode("utf-8", "replace"))
            if isinstance(record, dict):
                return dict((k, record[k]) for k in CONDA_KEYS if isinstance(record.get(k), str))
        except ValueError:
            pass
    found = {}
    for part in (data[:CONDA_END], data[-CONDA_END:]):
        for match in CONDA_FIELD.finditer(part.decode("utf-8", "replace")):
            found.setdefault(match.group(1), match.group(2))
    return found


def read_conda_meta(prefix):
    folder = os.path.join(prefix, "conda-meta")
    records = []
    for entry in listdir(folder):
        if not entry.endswith(".json"):
            continue
        stem = entry[: -len(".json")].rsplit("-", 2)
        record = OrderedDict((k, None) for k in CONDA_KEYS + ("problem",))
        if len(stem) == 3:
            record["name"], record["version"], record["build"] = stem
        try:
            path = os.path.join(folder, entry)
            size = os.path.getsize(path)
            if size <= CONDA_WHOLE_LIMIT:
                data = read_bytes(path, CONDA_WHOLE_LIMIT)
            else:
                with open_regular(path) as handle:
                    head = handle.read(CONDA_END)
                    handle.seek(max(size - CONDA_END, 0))
                    data = head + handle.read(CONDA_END)
            record.update(conda_fields(data))
        except OSError as exc:
            record["problem"] = "conda-meta/%s unreadable: %s" % (entry, exc.strerror or exc)
        if not record["name"]:
            record["name"] = entry
            record["problem"] = record["problem"] or "conda-meta/%s has no name" % entry
        records.append(record)
    return records


# ---------------------------------------------------------------- document


def attempt(problems, what, step, default):
    """step(), or `default` with a problem: one unreadable part never loses the others."""
    try:
        return step()
    except Exception as exc:
        problems.append("reading %s failed: %s: %s" % (what, exc.__class__.__name__, exc))
        return default


def collect(sites=None, user_site=None, prefix=None):
    """The whole document; `sites` and `prefix` replace this interpreter's (for tests)."""
    problems = []
    if sites is None:
        sites, user_site = attempt(problems, "site dirs", lambda: site_dirs(problems), ([], None))
    doc = OrderedDict([("probe_version", PROBE_VERSION)])
    doc["interpreter"] = attempt(
        problems, "the interpreter", lambda: interpreter_facts(sites, user_site), None
    )
    dists, owners = attempt(problems, "distributions", lambda: read_distributions(sites), ([], {}))
    doc["distributions"] = dists
    doc["frameworks"] = attempt(problems, "frameworks", lambda: read_frameworks(sites, dists), [])
    doc["binary_candidates"] = attempt(
        problems, "binaries", lambda: binary_candidates(sites, owners), []
    )
    if prefix is None:
        prefix = sys.prefix
    doc["conda_packages"] = attempt(problems, "conda-meta", lambda: read_conda_meta(prefix), [])
    doc["problems"] = problems
    return clean(doc)


def too_old():
    info = OrderedDict([("version", platform.python_version()), ("executable", sys.executable)])
    info["implementation"] = platform.python_implementation().lower()
    problem = "Python %s is older than 3.6: gpuenv cannot read this environment" % info["version"]
    return OrderedDict(
        [("probe_version", PROBE_VERSION), ("interpreter", info), ("problems", [problem])]
    )


def main():
    doc = too_old() if sys.version_info < (3, 6) else collect()
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
