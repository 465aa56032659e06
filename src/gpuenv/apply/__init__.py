"""Applying a plan: create the environment it describes and check the result (runs commands)."""

from gpuenv.apply.create import CreateResult, create_env, preflight
from gpuenv.apply.verify import Check, verify

__all__ = ["Check", "CreateResult", "create_env", "preflight", "verify"]
