"""docker: a Dockerfile FROM the CUDA image the plan chose (its NVIDIA_REQUIRE_CUDA satisfied by
the host driver), a venv with the image's Python, and the planned requirements installed."""

from __future__ import annotations

from gpuenv.plan.model import Plan
from gpuenv.render.installers.common import Rendered, Where, carried, env_file, header, q
from gpuenv.render.installers.pip import requirements_txt


def dockerfile(plan: Plan, requirements: list[str]) -> str:
    container = plan.container
    if container is None:
        raise ValueError("a docker plan has a container")
    lines = [header(plan).rstrip("\n"), f"# base image: {container.why}"]
    if container.require_cuda:
        lines.append(f"# its NVIDIA_REQUIRE_CUDA: {_short(container.require_cuda)}")
    lines += [
        f"FROM {container.image}",
        "ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1",
        "RUN apt-get update \\",
        " && apt-get install -y --no-install-recommends python3 python3-venv python3-pip \\",
        " && rm -rf /var/lib/apt/lists/*",
        "RUN python3 -m venv /opt/venv",
        "ENV PATH=/opt/venv/bin:$PATH",
    ]
    for name in requirements:
        lines += [f"COPY {name} /tmp/{name}", f"RUN pip install -r /tmp/{name}"]
    return "\n".join(lines) + "\n"


def _short(text: str) -> str:
    first = text.split()[0] if text.split() else text
    rest = len(text.split()) - 1
    return f"{first} (+{rest} driver-branch alternatives)" if rest else first


def render_docker(plan: Plan, where: Where | None = None) -> Rendered:
    where = where or Where()
    files: dict[str, str] = {}
    names = []
    for env in plan.envs[:1]:
        name = env_file(plan, env, "requirements", ".txt")
        files[name] = requirements_txt(plan, env)
        names.append(name)
    files["Dockerfile"] = dockerfile(plan, names)
    folder = where.folder if where.folder is not None else "DIR"
    commands = (
        f"docker build -t gpu-env {q(folder)}",
        f'docker run --rm{_gpus(plan)} gpu-env python -c "import sys; print(sys.version)"',
    )
    notes: list[str] = []
    if len(plan.envs) > 1:
        notes.append(
            "The plan needs several envs; this Dockerfile builds the first. Plan the others "
            "in images of their own."
        )
    built = [p.name for env in plan.envs[:1] for p in env.packages if p.source_build]
    if built:
        notes.append(
            f"Built from source, so not in this image: {', '.join(built)}. A build needs nvcc: "
            "use NVIDIA's -devel image of the same CUDA and run the plan's build command in it."
        )
    exclusive = [p for env in plan.envs[:1] for p in env.packages if p.exclusive_index]
    if exclusive:
        notes.append(
            "Install "
            + ", ".join(f"{p.requirement} from {p.index_url}" for p in exclusive)
            + " with --no-deps --index-url in a RUN line of its own: the package index has the "
            "same version built for another CUDA."
        )
    local = [c.text for env in plan.envs[:1] for c in carried(env) if c.requirement is None]
    if local:
        notes.append(
            "Local paths in the requirements are not in the image: COPY them in before the "
            f"pip install line ({', '.join(local)})."
        )
    return Rendered(
        files=files, commands=commands, notes=tuple(notes), needs_files=where.folder is None
    )


def _gpus(plan: Plan) -> str:
    """`--gpus all` only for a target with a GPU: without the NVIDIA container toolkit Docker
    refuses to start the container with it (could not select device driver)."""
    return " --gpus all" if plan.target.gpus else ""
