"""The patterns table (patterns.toml) made ready to search: each regex compiled once, the
literal words it cannot match without (searched for first, so a large log is scanned quickly),
and the checks `gpuenv kb audit` runs on it: it compiles, names only known facts, has a literal
to find it by, cannot backtrack catastrophically, and matches every one of its examples."""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from gpuenv.diagnose.findings import CAUSES
from gpuenv.kb.facts_vocabulary import FACTS
from gpuenv.kb.loader import KnowledgeBase, Row

MAX_LINE = 2000  # characters of a line one regex search sees at a time
WINDOW_LINES = 3  # a "window" pattern sees its line and the two after it
MIN_NEEDLE = 4  # the shortest literal a pattern may be found by
FLAGS = {"ignorecase": re.IGNORECASE, "window": 0}
SLOW_SECONDS = 0.5  # a pattern slower than this on the audit's adversarial lines is a problem
_LARGE = 20  # a repeat allowing more than this many items counts as unbounded

try:  # Python 3.11+
    _parser: Any = importlib.import_module("re._parser")
    _const: Any = importlib.import_module("re._constants")
except ImportError:  # pragma: no cover - Python 3.9/3.10
    _parser = importlib.import_module("sre_parse")
    _const = importlib.import_module("sre_constants")


@dataclass(frozen=True)
class Condition:
    """A condition on the facts of a text: `name` (known), `name=a|b` (one of these values),
    `!name`, `!name=a` (not so)."""

    name: str
    values: tuple[str, ...] = ()  # lower-case; empty: any value
    negated: bool = False

    def holds(self, facts: Mapping[str, set[str]]) -> bool:
        known = facts.get(self.name, set())
        found = bool(known & set(self.values)) if self.values else bool(known)
        return found != self.negated


def parse_condition(text: str, problems: list[str]) -> Condition | None:
    negated = text.startswith("!")
    name, _, values = text.lstrip("!").partition("=")
    if name not in FACTS:
        problems.append(f"condition {text!r}: {name!r} is no fact")
        return None
    words = tuple(v.strip().lower() for v in values.split("|") if v.strip())
    if values and not words:
        problems.append(f"condition {text!r}: no value after '='")
        return None
    return Condition(name, words, negated)


def _conditions(texts: Iterable[Any], problems: list[str]) -> tuple[Condition, ...]:
    parsed = (parse_condition(str(t), problems) for t in texts)
    return tuple(c for c in parsed if c is not None)


@dataclass(frozen=True)
class Rule:
    """A row of the rule table: what hits of `patterns` mean when `when` holds."""

    id: str
    title: str
    patterns: tuple[str, ...]
    when: tuple[Condition, ...]
    cause: str
    weight: float
    hints: tuple[str, ...] = ()
    example: str = ""

    def applies(self, facts: Mapping[str, set[str]]) -> bool:
        return all(c.holds(facts) for c in self.when)


def compile_rule(row: Row, pattern_ids: Iterable[str]) -> tuple[Rule, list[str]]:
    """A rule row compiled, and what is wrong with it (unknown patterns or facts, a cause
    outside the vocabulary, no conditions)."""
    problems: list[str] = []
    ids = set(pattern_ids)
    named = tuple(str(p) for p in row.get("patterns", ()))
    problems += [f"pattern {p!r} does not exist" for p in named if p not in ids]
    when = _conditions(row.get("when", ()), problems)
    if not when:
        problems.append("a rule needs at least one condition")
    cause = str(row.get("cause", ""))
    if cause not in CAUSES:
        problems.append(f"cause {cause!r} is not one of the shared causes")
    rule = Rule(
        id=str(row.get("id")),
        title=str(row.get("title", "")),
        patterns=named,
        when=when,
        cause=cause,
        weight=float(row.get("weight", 0.5)),
        hints=tuple(str(h) for h in row.get("hints", ())),
        example=str(row.get("example", "")),
    )
    return rule, problems


@dataclass(frozen=True)
class Pattern:
    """One row of the patterns table, compiled."""

    id: str
    title: str
    regex: re.Pattern[str]
    needles: tuple[str, ...]  # lower-case words one of which every match contains
    cause: str | None = None
    weight: float = 0.5
    window: bool = False
    sets: tuple[tuple[str, str], ...] = ()
    requires: tuple[Condition, ...] = ()
    hints: tuple[str, ...] = ()


def compile_row(row: Row) -> tuple[Pattern | None, list[str]]:
    """A pattern row compiled, or the problems that keep it from compiling."""
    problems: list[str] = []
    flags = [str(f) for f in row.get("flags", ())]
    problems += [f"unknown flag {f!r}" for f in flags if f not in FLAGS]
    value = 0
    for name in flags:
        value |= FLAGS.get(name, 0)
    try:
        # ASCII: \b and \w treat CJK letters as non-word, so a message glued to Chinese or
        # Japanese prose ("报错cudnn64_7.dll") still starts at a word boundary
        regex = re.compile(str(row.get("regex", "")), value | re.MULTILINE | re.ASCII)
    except re.error as exc:
        return None, [*problems, f"regex does not compile: {exc}"]
    problems += [f"group {g!r} names no fact" for g in regex.groupindex if g not in FACTS]
    sets = tuple(_pair(s, problems) for s in row.get("sets", ()))
    requires = _conditions(row.get("requires", ()), problems)
    needles = needles_of(regex)
    if not needles:
        problems.append(f"no literal of {MIN_NEEDLE}+ characters that every match contains")
    risk = backtracking_risk(regex)
    if risk:
        problems.append(risk)
    pattern = Pattern(
        id=str(row.get("id")),
        title=str(row.get("title", "")),
        regex=regex,
        needles=needles,
        cause=row.get("cause"),
        weight=float(row.get("weight", 0.5)),
        window="window" in flags,
        sets=tuple(s for s in sets if s[0]),
        requires=requires,
        hints=tuple(str(h) for h in row.get("hints", ())),
    )
    return pattern, problems


def _pair(text: str, problems: list[str]) -> tuple[str, str]:
    name, _, value = str(text).partition("=")
    if name not in FACTS or not value:
        problems.append(f"sets {text!r}: expected fact=value with a known fact")
        return "", ""
    return name, value


@dataclass(frozen=True)
class Compiled:
    """The patterns and rules of one knowledge base, ready to use."""

    patterns: tuple[Pattern, ...]
    rules: dict[str, tuple[Rule, ...]]  # by pattern id, most conditions first, then the heaviest

    @cached_property
    def rule_by_id(self) -> dict[str, Rule]:
        return {rule.id: rule for group in self.rules.values() for rule in group}


_CACHE: dict[int, tuple[KnowledgeBase, Compiled]] = {}


def compiled(kb: KnowledgeBase) -> Compiled:
    """Every pattern of the knowledge base that compiles without a problem (one that could
    backtrack, or has no literal to be found by, is left out) and every sound rule, compiled
    once per knowledge base."""
    cached = _CACHE.get(id(kb))
    if cached is not None and cached[0] is kb:
        return cached[1]
    rows = map(compile_row, kb.rows("patterns", "pattern"))
    found = tuple(p for p, problems in rows if p and not problems)
    ids = [p.id for p in found]
    by_pattern: dict[str, list[Rule]] = {}
    for row in kb.rows("patterns", "rule"):
        rule, problems = compile_rule(row, ids)
        for name in rule.patterns if not problems else ():
            by_pattern.setdefault(name, []).append(rule)
    ordered = {
        k: tuple(sorted(v, key=lambda r: (-len(r.when), -r.weight))) for k, v in by_pattern.items()
    }
    result = Compiled(found, ordered)
    _CACHE[id(kb)] = (kb, result)
    return result


def patterns(kb: KnowledgeBase) -> tuple[Pattern, ...]:
    return compiled(kb).patterns


# -- literals every match contains --------------------------------------------------------------


def needles_of(regex: re.Pattern[str]) -> tuple[str, ...]:
    """Lower-case words one of which every match contains: the longest literal run the regex
    requires, or one literal per alternative of an alternation it requires; () when there is no
    such set whose words all have MIN_NEEDLE characters."""
    items = list(_parser.parse(regex.pattern, regex.flags & ~re.MULTILINE))
    best = _best(_needle_sets(items))
    return tuple(dict.fromkeys(n.lower() for n in best))


def _best(sets: list[tuple[str, ...]]) -> tuple[str, ...]:
    usable = [s for s in sets if s and min(len(n) for n in s) >= MIN_NEEDLE]
    return max(usable, key=lambda s: (min(len(n) for n in s), -len(s)), default=())


def _needle_sets(items: list[Any]) -> list[tuple[str, ...]]:
    """Candidate needle sets of a sequence: each literal run alone, and the alternatives of
    every alternation (or repeated group) the sequence cannot match without."""
    sets: list[tuple[str, ...]] = []
    current = ""
    for op, arg in items:
        if op is _const.LITERAL:
            current += chr(arg)
            continue
        if op is _const.SUBPATTERN and all(o is _const.LITERAL for o, _ in arg[-1]):
            current += "".join(chr(a) for _, a in arg[-1])
            continue
        sets.append((current,))
        current = ""
        if op is _const.SUBPATTERN:
            sets += _needle_sets(list(arg[-1]))
        elif op is _const.BRANCH:
            per_branch = [_best(_needle_sets(list(b))) for b in arg[1]]
            if all(per_branch):
                sets.append(tuple(n for branch in per_branch for n in branch))
        elif (op is _const.MAX_REPEAT or op is _const.MIN_REPEAT) and arg[0] >= 1:
            sets += _needle_sets(list(arg[2]))
    sets.append((current,))
    return sets


# -- catastrophic backtracking ------------------------------------------------------------------


def backtracking_risk(regex: re.Pattern[str]) -> str | None:
    """A nested unbounded repeat ((a+)+, (\\w+\\s?)*) or an alternation inside one ((a|ab)*):
    the shapes whose failing searches take exponential time."""
    return _walk(list(_parser.parse(regex.pattern, regex.flags & ~re.MULTILINE)), False)


def _walk(items: list[Any], inside_repeat: bool) -> str | None:
    for op, arg in items:
        if op is _const.MAX_REPEAT or op is _const.MIN_REPEAT:
            large = arg[1] is _const.MAXREPEAT or arg[1] > _LARGE
            if large and inside_repeat:
                return "nested unbounded repeats can backtrack catastrophically"
            found = _walk(list(arg[2]), inside_repeat or large)
        elif op is _const.BRANCH:
            if inside_repeat:
                return "an alternation inside an unbounded repeat can backtrack catastrophically"
            found = next((r for b in arg[1] if (r := _walk(list(b), inside_repeat))), None)
        elif op is _const.SUBPATTERN:
            found = _walk(list(arg[-1]), inside_repeat)
        elif op in (_const.ASSERT, _const.ASSERT_NOT):
            found = _walk(list(arg[1]), inside_repeat)
        else:
            found = None
        if found:
            return found
    return None


def slow_on_adversarial_lines(pattern: Pattern, examples: Sequence[str]) -> float:
    """Seconds the regex takes over lines built to make a backtracking regex slow (its examples
    repeated, cut short of a match, long runs of one character), at growing lengths up to
    MAX_LINE; it stops as soon as SLOW_SECONDS are spent, so an exponential regex is caught at
    a short length instead of hanging the audit."""
    started = time.perf_counter()
    for length in (*range(12, 34, 2), 48, 64, 128, 256, 512, 1000, MAX_LINE):
        for subject in _adversarial(pattern, examples, length):
            pattern.regex.search(subject)
        took = time.perf_counter() - started
        if took > SLOW_SECONDS:
            return took
    return time.perf_counter() - started


def _adversarial(pattern: Pattern, examples: Sequence[str], length: int) -> Iterable[str]:
    for text in examples:
        for cut in (text, text[:-1], text[: len(text) // 2]):
            if cut:
                yield (cut * (length // len(cut) + 1))[:length]
        for needle in pattern.needles:
            yield (needle + " " + text * (length // max(len(text), 1)))[:length]
    for char in " a0_.-/\\:(\t":
        yield char * length
        for needle in pattern.needles:
            yield (needle + char * length)[:length]


def match_example(pattern: Pattern, text: str) -> re.Match[str] | None:
    """The pattern on an example as the scanner would see it (one line, or a window)."""
    lines = text.split("\n")
    span = WINDOW_LINES if pattern.window else 1
    for start in range(len(lines)):
        subject = "\n".join(line[:MAX_LINE] for line in lines[start : start + span])
        found = pattern.regex.search(subject)
        if found:
            return found
    return None
