"""Tables of patterns.toml: the error messages `gpuenv explain` recognises, and the real texts
each must match.

A `pattern` row is one message: a regular expression (searched line by line, at most
MAX_LINE characters of a line at a time), the cause it points to (one of the shared CAUSES; a row
without a cause only extracts facts), how strongly it points there (`weight`, 0-1), what its
named groups extract (each group is named for a fact of gpuenv.explain.vocabulary.FACTS), the
constant facts it `sets` ("os=windows"), the
facts that must also be known for it to count (`requires`), and hints for the fix. An `example`
row is a real text the pattern must match, with where it was seen.

A `rule` row re-ranks what a message means by the facts around it: when a hit of one of its
`patterns` counts and every condition of `when` holds (`name` the fact is known, `name=a|b` it
has one of these values, `!name` / `!name=a` it does not), the hit votes for the rule's `cause`
with the rule's `weight` instead of its own ("CUDA driver version is insufficient" in a
container is container_driver_mismatch). Of the rules that apply to a hit, the one with the most
conditions wins. Each rule carries a real `example` text (the reporter's context and error) it
must turn into its cause. `gpuenv kb audit` checks
that every pattern compiles, cannot backtrack catastrophically, has a literal to find it by, and
matches each of its examples; and that every example belongs to a pattern.
"""

from __future__ import annotations

from gpuenv.diagnose.findings import CAUSES
from gpuenv.kb.schema import TableSpec, f

TABLES: dict[str, TableSpec] = {
    "pattern": TableSpec(
        fields={
            "id": f("str"),
            "regex": f("str"),
            "title": f("str"),
            "cause": f("str", required=False, choices=CAUSES),
            "weight": f("float", required=False),
            "flags": f("list[str]", required=False),
            "sets": f("list[str]", required=False),
            "requires": f("list[str]", required=False),
            "hints": f("list[str]", required=False),
        },
        key=("id",),
        description="An error message or a fact in prose: regex, cause, weight, the facts its "
        "named groups extract, facts it requires, hints",
    ),
    "rule": TableSpec(
        fields={
            "id": f("str"),
            "title": f("str"),
            "patterns": f("list[str]"),
            "when": f("list[str]"),
            "cause": f("str", choices=CAUSES),
            "weight": f("float"),
            "hints": f("list[str]", required=False),
            "example": f("str"),
        },
        key=("id",),
        description="What a message means when facts around it hold: patterns, conditions, "
        "the cause they point to instead, a real example",
    ),
    "example": TableSpec(
        fields={
            "pattern": f("str"),
            "text": f("str"),
        },
        key=("pattern", "text"),
        description="A real text a pattern must match, and where it was seen (locator: the thread)",
    ),
}
