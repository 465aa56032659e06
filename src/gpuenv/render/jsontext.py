"""JSON text that is always valid UTF-8 and never carries a raw control character.

A lone surrogate (undecodable bytes in the environment, a hostile file), DEL and C1 controls,
and bidirectional or invisible format characters inside strings are written as \\u escapes:
the same string for a program, harmless in a terminal, encodable as UTF-8.
"""

from __future__ import annotations

import json
import re
from typing import Any

_UNSAFE = re.compile("[\ud800-\udfff\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def json_text(document: Any) -> str:
    """`document` as indented JSON, ending in a newline."""
    text = json.dumps(document, indent=2, ensure_ascii=False)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text) + "\n"
