"""Rebuild src/gpuenv/kb/data/_compiled.json after editing a knowledge-base TOML file.

python tools/compile_kb.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from gpuenv.kbtools.compile import write_compiled

if __name__ == "__main__":
    print(f"wrote {write_compiled()}")
