"""A guess from the words, for a text in which no known message was found.

The knowledge base's lexicon (lexicon.toml, made by tools/train_lexicon.py from the tune halves
of the corpora) holds, for each cause, how many of its training texts hold each word (a case's
error text with its context, and its error text alone). Its "words" are the text's words and the
pairs of words next to each other ("not compiled", "no kernel", "too old": a pair says what
neither of its words says alone; a pair of two stop words is not counted). A text's words are
weighed as independent signs (a naive Bayes over word presence, smoothed by `alpha`): each word
the text holds moves the odds towards the causes whose texts hold it more often than the others
do. It speaks only when the text holds at least `min_words` single words of the lexicon and one
of its `anchors` (words of the GPU stack: an unrelated Python error is not guessed at), when at
least `min_known` of its distinct single words of three letters or more are words of the lexicon
(a text, not noise: random bytes hold many short letter runs but few real words), and its
confidence is the posterior scaled by `scale` (the share of guesses that were right on the check
halves is about a half): a guess is never as sure as a recognised message.

Only the head and tail of a long text are read (the error is at the end of a log, the setup at
its start), so a guess costs the same on any size of text."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpuenv.kb import KnowledgeBase

HEAD, TAIL = 16_384, 49_152  # characters read at each end of a long text
_WORD = re.compile(r"[a-z][a-z0-9_]{1,30}")
SHOWN = 5  # words named as the reasons of a guess
_LONGER = 3  # letters of the words whose share the lexicon must know


@dataclass(frozen=True)
class Lexicon:
    causes: tuple[str, ...]
    texts: Mapping[str, int]  # training texts of each cause
    holding: Mapping[str, Mapping[str, int]]  # word -> cause -> texts of it holding the word
    totals: Mapping[str, int]  # word -> training texts holding it
    stop: frozenset[str]
    anchors: frozenset[str]
    anchor_prefixes: tuple[str, ...]
    alpha: float
    min_words: int
    min_known: float  # least share of the text's longer words that the lexicon knows
    min_share: float
    scale: float
    pair_weight: float  # a pair's log-likelihood ratio is weighed by this (it repeats its words)

    @property
    def total(self) -> int:
        return sum(self.texts.values())


@dataclass(frozen=True)
class Guess:
    cause: str
    confidence: float  # the posterior, scaled
    share: float  # the posterior
    words: tuple[str, ...]  # the text's words that pointed there most
    # the other causes whose scaled posterior reaches `least`, most likely first
    runners_up: tuple[tuple[str, float], ...] = ()


def words_of(text: str, stop: Iterable[str]) -> set[str]:
    """The distinct words of a (lower-case) text, as the lexicon counts them: its words but the
    stop words, and each pair of words next to each other ("word word") but pairs of stop
    words."""
    dropped = frozenset(stop)
    found = _WORD.findall(text)
    singles = {w for w in found if w not in dropped}
    pairs = {f"{a} {b}" for a, b in zip(found, found[1:]) if a not in dropped or b not in dropped}
    return singles | pairs


def single(word: str) -> bool:
    """Whether a word of the lexicon is one word, not a pair."""
    return " " not in word


def load(kb: KnowledgeBase) -> Lexicon | None:
    return kb.memo("explain.lexicon", lambda: _load(kb))


def _load(kb: KnowledgeBase) -> Lexicon | None:
    kb_file = kb.files.get("lexicon")
    if kb_file is None or not kb_file.tables.get("cause"):
        return None
    meta = kb_file.meta
    texts: dict[str, int] = {}
    holding: dict[str, dict[str, int]] = {}
    for row in kb.rows("lexicon", "cause"):
        cause = str(row["cause"])
        texts[cause] = int(row["texts"])
        for word, count in dict(row["words"]).items():
            holding.setdefault(str(word), {})[cause] = int(count)
    return Lexicon(
        causes=tuple(sorted(texts)),
        texts=texts,
        holding=holding,
        totals={w: sum(by.values()) for w, by in holding.items()},
        stop=frozenset(str(w) for w in meta.get("stop_words", ())),
        anchors=frozenset(str(w) for w in meta.get("anchors", ())),
        anchor_prefixes=tuple(str(p) for p in meta.get("anchor_prefixes", ())),
        alpha=float(meta.get("alpha", 0.1)),
        min_words=int(meta.get("min_words", 3)),
        min_known=float(meta.get("min_known", 0.0)),
        min_share=float(meta.get("min_share", 0.0)),
        scale=float(meta.get("scale", 0.5)),
        pair_weight=float(meta.get("pair_weight", 1.0)),
    )


def guess(lower: str, kb: KnowledgeBase, least: float = 1.0) -> Guess | None:
    """The cause a lower-case text's words point to, or None (no lexicon, too few of its words,
    no word of the GPU stack, or no cause clearly ahead); with the other causes whose scaled
    posterior is at least `least`."""
    lexicon = load(kb)
    if lexicon is None:
        return None
    if len(lower) > HEAD + TAIL:
        lower = lower[:HEAD] + "\n" + lower[-TAIL:]
    every = words_of(lower, lexicon.stop)
    words = every & lexicon.holding.keys()
    singles = {w for w in words if single(w)}
    if len(singles) < lexicon.min_words or not any(_anchor(w, lexicon) for w in singles):
        return None
    if _known_share({w for w in every if single(w)}, singles) < lexicon.min_known:
        return None
    scores = {cause: _score(cause, words, lexicon) for cause in lexicon.causes}
    top = max(sorted(scores), key=lambda c: scores[c][0])
    best = scores[top][0]
    norm = sum(math.exp(s - best) for s, _ in scores.values())
    share = 1.0 / norm
    if share < lexicon.min_share:
        return None
    reasons = sorted(scores[top][1].items(), key=lambda kv: (-kv[1], kv[0]))
    # a pair holding a stop word ("cuda no") counts, but reads poorly among the reasons shown
    readable = [w for w, weight in reasons if weight > 0 and not set(w.split()) & lexicon.stop]
    shown = tuple(readable[:SHOWN])
    scaled = {
        c: round(math.exp(s - best) / norm * lexicon.scale, 3) for c, (s, _) in scores.items()
    }
    runners_up = tuple(
        (c, scaled[c])
        for c in sorted(scaled, key=lambda c: (-scaled[c], c))
        if c != top and scaled[c] >= least
    )
    return Guess(top, scaled[top], share, shown, runners_up)


def _known_share(every: set[str], known: set[str]) -> float:
    longer = [w for w in every if len(w) >= _LONGER]
    return sum(w in known for w in longer) / len(longer) if longer else 0.0


def _anchor(word: str, lexicon: Lexicon) -> bool:
    return word in lexicon.anchors or word.startswith(lexicon.anchor_prefixes)


def _score(cause: str, words: set[str], lexicon: Lexicon) -> tuple[float, dict[str, float]]:
    """Log prior odds of the cause and each word's log-likelihood ratio for it."""
    alpha, total, mine = lexicon.alpha, lexicon.total, lexicon.texts[cause]
    others = total - mine
    score = math.log(mine / total)
    weights: dict[str, float] = {}
    for word in words:
        here = lexicon.holding[word].get(cause, 0)
        elsewhere = lexicon.totals[word] - here
        weight = math.log((here + alpha) / (mine + 2 * alpha)) - math.log(
            (elsewhere + alpha) / (others + 2 * alpha)
        )
        if not single(word):
            weight *= lexicon.pair_weight
        weights[word] = weight
        score += weight
    return score, weights
