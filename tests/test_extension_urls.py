"""Every URL a plan writes for an extension exists: OpenMMLab's and PyG's pages of links and
flash-attn's release assets are asked with HEAD requests (no wheel is downloaded); PyTorch's own
indexes are unreachable from here, so their URLs are checked by form against the knowledge base.
Skipped where the host cannot be reached."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from gpuenv.kb import default_kb
from gpuenv.kb.query.torch import torch_index_url
from gpuenv.plan.model import Plan
from tests.test_plan_scenarios import Scenario, plan_for

PLANS = (
    Scenario("mmcv", ("torch", "mmcv"), "535.183.01", ("RTX 3090",), "3.10"),
    Scenario("fa", ("torch", "flash-attn"), "570.124.06", ("NVIDIA H100 80GB HBM3",), "3.12"),
    Scenario(
        "pyg", ("torch", "torch-scatter", "torch-sparse"), "570.124.06", ("RTX 4090",), "3.11"
    ),
    Scenario("xf", ("torch", "xformers"), "570.124.06", ("RTX 4090",), "3.12"),
    Scenario("old", ("torch==1.10.0",), "470.256.02", ("GTX 1080 Ti",), "3.8"),
)
PYTORCH = "https://download.pytorch.org/whl/"


def _urls(plan: Plan) -> set[str]:
    out = set()
    for package in plan.packages():
        out.update(u for u in (package.url, package.find_links, package.index_url) if u)
    return out


def _exists(url: str) -> bool:
    request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": "gpuenv tests"})
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return bool(answer.status < 400)
    except urllib.error.HTTPError as exc:
        return exc.code < 400
    except (urllib.error.URLError, OSError) as exc:
        pytest.skip(f"{url.split('/')[2]} cannot be reached: {exc}")


@pytest.mark.network
@pytest.mark.parametrize("scenario", PLANS, ids=[s.name for s in PLANS])
def test_every_url_the_plan_writes_exists(scenario: Scenario) -> None:
    urls = _urls(plan_for(scenario))
    assert urls, "the plan names no index, page or wheel URL"
    for url in sorted(urls):
        if url.startswith(PYTORCH):
            # parse, don't fetch: an index the KB names for a variant, or the 1.x page of links
            tail = url[len(PYTORCH) :]
            assert url == torch_index_url(default_kb(), tail) or tail == "torch_stable.html"
            continue
        assert _exists(url), url


@pytest.mark.network
def test_xformers_for_the_package_indexs_torch_is_on_the_package_index() -> None:
    from tests.index_check import unavailable

    plan = plan_for(
        Scenario("xf0", ("torch==2.8.0", "xformers"), "570.124.06", ("RTX 4090",), "3.12")
    )
    requirements = [p.requirement for p in plan.packages()]
    assert "xformers==0.0.32.post2" in requirements and "torch==2.8.0" in requirements
    assert unavailable(requirements, "3.12", "linux-x86_64") == []
