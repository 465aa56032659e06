"""A plan in each installer's own idiom: files to write and commands to run. Pure."""

from __future__ import annotations

from gpuenv.plan.model import Plan
from gpuenv.render.installers.common import Rendered, Where

__all__ = ["Rendered", "Where", "render_installer"]


def render_installer(plan: Plan, where: Where | None = None) -> Rendered:
    """Files and commands for `plan.installer`, plus DJL's launcher when DJL was planned.
    `where` says whether the files were written (and where) and which env to install into."""
    where = where or Where()
    main = _main(plan, where)
    if plan.djl is None:
        return main
    from gpuenv.render.installers.djl import render_djl

    djl = render_djl(plan, where)
    return Rendered(
        files={**main.files, **djl.files},
        commands=main.commands + djl.commands,
        notes=main.notes + djl.notes,
        needs_files=main.needs_files or djl.needs_files,
    )


def _main(plan: Plan, where: Where) -> Rendered:
    if not plan.envs:
        return Rendered()
    if plan.installer == "uv":
        from gpuenv.render.installers.uv import render_uv

        return render_uv(plan, where)
    if plan.installer in ("conda", "mamba"):
        from gpuenv.render.installers.conda import render_conda

        return render_conda(plan, plan.installer, where)
    if plan.installer == "pixi":
        from gpuenv.render.installers.pixi import render_pixi

        return render_pixi(plan, where)
    if plan.installer == "docker":
        from gpuenv.render.installers.docker import render_docker

        return render_docker(plan, where)
    from gpuenv.render.installers.pip import render_pip

    return render_pip(plan, where)
