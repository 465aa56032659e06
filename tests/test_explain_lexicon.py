"""explain's guess from the words: trained only on tune halves, current with the corpora, the
arithmetic of its odds, when it speaks and when it stays silent, and how it is shown."""

from __future__ import annotations

import io
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from benchmarks.explain_corpus import half_of, rows
from tools import train_lexicon

from gpuenv.cli import main
from gpuenv.explain import explain_text
from gpuenv.explain.engine import WEAK_MESSAGE, words_guess
from gpuenv.explain.lexicon import HEAD, TAIL, guess, words_of
from gpuenv.explain.model import Candidate
from gpuenv.explain.text import prepare
from gpuenv.kb import default_kb
from gpuenv.kb.loader import tomllib
from gpuenv.kb.model import KbFile, KnowledgeBase
from gpuenv.kb.toml_writer import toml_document
from tests.conftest import SHARED

ROOT = Path(__file__).resolve().parents[1]
KB = default_kb()
SCHEMA = json.loads((ROOT / "docs" / "explain.schema.json").read_text(encoding="utf-8"))
# words of the GPU stack, no message of the knowledge base among them
LOOSE = "I get nothing from cuda in pytorch: loading fails, libcudart is not found on the system"


def _kb(meta: dict[str, Any], causes: list[dict[str, Any]]) -> KnowledgeBase:
    """A knowledge base holding only a lexicon."""
    lexicon = KbFile("lexicon", Path("lexicon.toml"), meta, {}, {"cause": tuple(causes)})
    return KnowledgeBase(files={"lexicon": lexicon})


TINY_META = {"alpha": 0.5, "min_words": 2, "scale": 0.5, "anchors": ["cuda"], "stop_words": []}
TINY = [
    {"cause": "missing_cuda_lib", "texts": 4, "words": {"cuda": 4, "libcudart": 3}},
    {"cause": "out_of_memory", "texts": 6, "words": {"cuda": 5, "memory": 6}},
]


def test_the_odds_are_naive_bayes_over_the_words_held() -> None:
    got = guess("cuda error: libcudart missing", _kb(TINY_META, TINY))
    assert got is not None and got.cause == "missing_cuda_lib"

    # by hand: log prior + each held word's log-likelihood ratio, smoothed by alpha = 0.5
    def score(mine: int, others: int, held: dict[str, tuple[int, int]]) -> float:
        total = mine + others
        value = math.log(mine / total)
        for here, elsewhere in held.values():
            value += math.log((here + 0.5) / (mine + 1)) - math.log(
                (elsewhere + 0.5) / (others + 1)
            )
        return value

    lib = score(4, 6, {"cuda": (4, 5), "libcudart": (3, 0)})
    oom = score(6, 4, {"cuda": (5, 4), "libcudart": (0, 3)})
    share = 1 / (1 + math.exp(oom - lib))
    assert got.share == pytest.approx(share)
    assert got.confidence == pytest.approx(round(share * 0.5, 3))
    assert got.words[0] == "libcudart"  # the word that pointed there most comes first


def test_a_text_holds_its_words_and_the_pairs_of_words_next_to_each_other() -> None:
    assert words_of("torch not compiled with cuda", ["not", "with"]) == {
        "torch",
        "compiled",
        "cuda",
        "torch not",
        "not compiled",
        "compiled with",
        "with cuda",
    }  # the stop words are not words, but a pair holding one is
    assert words_of("this is cuda", ["this", "is"]) == {"cuda", "is cuda"}  # "this is": no pair


def test_a_pair_of_words_can_settle_what_its_words_leave_open() -> None:
    """ "no kernel" says what "no" and "kernel" do not: arch texts hold the pair, driver texts
    the words apart."""
    causes = [
        {
            "cause": "gpu_arch_unsupported",
            "texts": 4,
            "words": {"cuda": 4, "kernel": 2, "no kernel": 2},
        },
        {"cause": "no_driver", "texts": 4, "words": {"cuda": 4, "kernel": 4}},
    ]
    kb = _kb({**TINY_META, "stop_words": ["no"]}, causes)
    paired = guess("cuda: no kernel image", kb)
    apart = guess("cuda: kernel, no image", kb)
    assert paired is not None and paired.cause == "gpu_arch_unsupported"
    assert apart is not None and apart.cause == "no_driver"


def test_pairs_holding_a_stop_word_count_but_are_not_shown_among_the_reasons() -> None:
    causes = [
        {
            "cause": "gpu_arch_unsupported",
            "texts": 4,
            "words": {"cuda": 4, "image": 2, "no kernel": 2, "kernel image": 2},
        },
        {"cause": "no_driver", "texts": 4, "words": {"cuda": 4, "image": 2}},
    ]
    got = guess("cuda: no kernel image", _kb({**TINY_META, "stop_words": ["no"]}, causes))
    assert got is not None and got.cause == "gpu_arch_unsupported"
    assert "kernel image" in got.words and "no kernel" not in got.words


def test_pairs_do_not_count_towards_the_words_a_guess_needs() -> None:
    causes = [{"cause": "out_of_memory", "texts": 2, "words": {"cuda": 2, "cuda memory": 2}}]
    assert guess("cuda memory", _kb(TINY_META, causes)) is None  # one word and one pair


def test_silent_without_enough_words_or_without_a_word_of_the_gpu_stack() -> None:
    kb = _kb(TINY_META, TINY)
    assert guess("libcudart", kb) is None  # one word of the lexicon, two needed
    assert guess("memory libcudart", kb) is None  # two words, but none of the GPU stack
    assert guess("memory libcudart cuda", kb) is not None
    assert guess("cuda memory", _kb({**TINY_META, "min_share": 0.99}, TINY)) is None
    assert guess("cuda memory libcudart", KnowledgeBase(files={})) is None  # no lexicon


def test_a_word_of_the_gpu_stack_may_be_the_start_of_a_longer_one() -> None:
    """Library and framework names begin longer words (miopenStatusUnknownError,
    cublas_status_invalid_value, libtorchaudio): the lexicon's anchor prefixes count them."""
    causes = [
        {"cause": "mps_or_rocm_specific", "texts": 4, "words": {"miopenstatusunknownerror": 3}},
        {"cause": "out_of_memory", "texts": 6, "words": {"memory": 6, "conv": 2}},
    ]
    text = "runtimeerror: miopenstatusunknownerror in conv"
    assert guess(text, _kb(TINY_META, causes)) is None  # no word of the stack as a whole
    got = guess(text, _kb({**TINY_META, "anchor_prefixes": ["miopen"]}, causes))
    assert got is not None and got.cause == "mps_or_rocm_specific"


def test_the_trained_anchors_name_libraries_that_begin_longer_words() -> None:
    for word in ("miopenstatusunknownerror", "cublas_status_invalid_value", "libtorchaudio"):
        assert word.startswith(tuple(train_lexicon.ANCHOR_PREFIXES)), word


def test_silent_when_most_longer_words_are_not_words_of_the_lexicon() -> None:
    kb = _kb({**TINY_META, "min_known": 0.5}, TINY)
    assert guess("cuda libcudart memory", kb) is not None
    # the same words among as many unknown ones of three letters or more: noise, not a text
    assert guess("cuda libcudart memory qzx vbnw kjhq wert", kb) is None  # 3 of 7
    assert guess("cuda libcudart memory qzx vbnw", kb) is not None  # 3 of 5 known
    assert guess("cuda libcudart memory qz vb kj hq", kb) is not None  # short runs do not count


def test_clear_words_outweigh_only_a_weak_message_of_another_cause() -> None:
    kb = _kb(TINY_META, TINY)
    text = prepare("cuda error: libcudart missing")  # the words: missing_cuda_lib, clearly

    def outweighs(cause: str, confidence: float, words: str = "") -> str | None:
        ranked = [Candidate(cause, confidence, ())]
        got = words_guess(prepare(words) if words else text, ranked, kb)
        return got.cause if got else None

    assert outweighs("out_of_memory", 0.45) == "missing_cuda_lib"
    assert outweighs("out_of_memory", WEAK_MESSAGE) is None  # not a weak sign
    assert outweighs("missing_cuda_lib", 0.45) is None  # the same cause: nothing to outweigh
    assert outweighs("nccl_issue", 0.45, "cuda libcudart memory") is None  # words unclear


def test_a_guess_that_outweighs_a_weak_message_names_it() -> None:
    # pip's "No matching distribution" is a weak sign (a Python or a platform); the words of
    # the package asked for are those of platform reports
    explanation = explain_text("ERROR: No matching distribution found for jax-cuda12-pjrt", KB)
    assert (explanation.cause, explanation.basis) == ("wrong_platform_wheel", "words")
    assert "outweigh the weak sign found" in explanation.summary
    assert "python_version_unsupported" in explanation.summary
    weak = [a for a in explanation.alternatives if a.cause == "python_version_unsupported"]
    assert weak and weak[0].confidence < explanation.confidence
    assert explanation.evidence[0].pattern == "pip-no-matching-distribution"


@pytest.mark.parametrize(
    "text",
    [
        "OSError: [Errno 28] No space left on device",
        "OSError: [Errno 16] Device or resource busy",
        "KeyError: 'model.layers.0.weight' when loading the checkpoint",
    ],
)
def test_an_error_of_no_gpu_stack_gets_no_guess(text: str) -> None:
    assert explain_text(text, KB).cause is None


def test_random_bytes_get_no_guess() -> None:
    # random bytes hold many short letter runs (tf, os, uv …) that the lexicon counts; they
    # once got a guess now and then
    generator = random.Random(7)
    guessed = []
    for size in (200, 2_000, 20_000) * 20:
        noise = bytes(generator.getrandbits(8) for _ in range(size)).decode("utf-8", "replace")
        explanation = explain_text(noise, KB)
        if explanation.cause is not None:
            guessed.append((size, explanation.cause, explanation.words))
    assert guessed == []


def test_a_close_second_cause_is_named_beside_a_guess() -> None:
    kb = _kb(TINY_META, TINY)
    torn = guess("cuda libcudart memory", kb, least=0.15)
    assert torn is not None and torn.cause == "out_of_memory"
    # the posteriors share 1 between the two causes: what the first lacks the second has
    ((second, share),) = torn.runners_up
    assert second == "missing_cuda_lib" and share < torn.confidence
    assert share == pytest.approx(0.5 * (1 - torn.share), abs=0.001)
    sure = guess("cuda error: libcudart missing", kb, least=0.15)
    assert sure is not None and sure.runners_up == ()
    assert guess("cuda libcudart memory", kb).runners_up == ()  # type: ignore[union-attr]


def test_a_long_text_is_read_at_its_head_and_tail_only() -> None:
    kb = _kb(TINY_META, TINY)
    middle = "x\n" * (HEAD + TAIL)
    assert guess("ok\n" + middle + "cuda libcudart\n", kb) is not None
    assert guess("ok\n" + middle + "cuda libcudart\n" + middle, kb) is None


def test_a_guess_is_shown_as_one_and_is_less_sure_than_a_message() -> None:
    explanation = explain_text(LOOSE, KB)
    assert explanation.basis == "words" and explanation.cause == "missing_cuda_lib"
    assert 0 < explanation.confidence <= 0.5 and not explanation.evidence
    assert "libcudart" in explanation.words and "libcudart" in explanation.summary
    message = explain_text("ImportError: libcudnn.so.9: cannot open shared object file", KB)
    assert message.basis == "messages" and message.words == ()
    assert message.confidence > explanation.confidence


@pytest.mark.parametrize(
    "text",
    [
        "Traceback (most recent call last):\n  File \"x.py\", line 3\nKeyError: 'foo'\n",
        "hello world\nall good\n",
        "ModuleNotFoundError: No module named 'requests'\n",
    ],
)
def test_no_guess_on_text_that_is_not_about_the_gpu_stack(text: str) -> None:
    explanation = explain_text(text, KB)
    assert explanation.cause is None and explanation.basis == ""


def test_the_command_says_it_guessed(capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LOOSE.encode())))
    assert main(["explain", "--no-probe"]) == 0
    out = capsys.readouterr().out
    assert "a guess from the words" in out and "missing_cuda_lib" in out
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LOOSE.encode())))
    assert main(["explain", "--no-probe", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, SCHEMA)
    assert document["basis"] == "words" and "libcudart" in document["words"]


# -- what it was trained on ------------------------------------------------------------------------


def test_trained_on_tune_halves_only() -> None:
    """No check half of a measured corpus is read, for the words or for the outcomes."""
    trained = {c["id"] for c in train_lexicon.training_cases()}
    for path in train_lexicon.TUNED:
        which = half_of(rows(path), "cause")
        check = {i for i, half in which.items() if half == "check"}
        tune = {i for i, half in which.items() if half == "tune"}
        assert check and not (check & trained), path.name
        assert tune <= trained, path.name


def test_each_case_counts_with_its_context_and_alone() -> None:
    """A case gives two texts (its error text with its context, and its error text alone), so a
    word only its context holds counts once and a word of its error text twice."""
    case = {
        "id": "x",
        "cause": "missing_cuda_lib",
        "error_text": "libcudart.so.12: cannot open shared object file",
        "context": "Ubuntu laptop, conda env",
    }
    bare = {**case, "id": "y", "cause": "out_of_memory", "context": ""}
    text = train_lexicon.document([case, case, bare, bare], [])
    rows_out = {r["cause"]: r for r in tomllib.loads(text)["cause"]}
    assert rows_out["missing_cuda_lib"]["texts"] == 4
    assert rows_out["missing_cuda_lib"]["words"]["libcudart"] == 4
    assert rows_out["missing_cuda_lib"]["words"]["conda"] == 2
    assert rows_out["out_of_memory"]["texts"] == 2  # no context: one text each


def test_the_words_are_counted_on_every_tune_half() -> None:
    lexicon = tomllib.loads((ROOT / "src" / "gpuenv" / "kb" / "data" / "lexicon.toml").read_text())
    assert [n.split(" ")[0] for n in lexicon["trained_on"]][: len(train_lexicon.TUNED)] == [
        p.name for p in train_lexicon.TUNED
    ]
    cases = train_lexicon.training_cases()
    texts = sum(len(train_lexicon.texts_of(c)) for c in cases)
    assert sum(r["texts"] for r in lexicon["cause"]) == texts > len(cases)


def test_never_trained_on_the_study_cases() -> None:
    study = {c["id"] for c in rows(ROOT / "corpus" / "error-cases.study.jsonl")}
    assert study and not (study & {c["id"] for c in train_lexicon.training_cases()})


def test_the_lexicon_is_what_a_fresh_training_gives() -> None:
    if not (SHARED / "corpus" / "error-cases.dev.jsonl").is_file():
        pytest.skip("the development split is not beside the project")
    written = (ROOT / "src" / "gpuenv" / "kb" / "data" / "lexicon.toml").read_text("utf-8")
    cases = train_lexicon.training_cases()
    fresh = train_lexicon.document(cases, train_lexicon.outcomes(cases, KB))
    assert written == fresh, "run `python tools/train_lexicon.py && python tools/compile_kb.py`"


def test_the_training_names_the_evidence_its_cases_mostly_label_otherwise() -> None:
    """A pattern whose training cases mostly carry another cause is a family to study: the
    training names it with its tally; one whose own cause holds half or more is not named."""
    cuda_oom = {"evidence": "torch-cuda-out-of-memory", "cases": 4}
    rows_in = [
        {**cuda_oom, "causes": {"other": 3, "out_of_memory": 1}},
        {**cuda_oom, "causes": {"other": 2, "out_of_memory": 2}},
        {"evidence": "no-such-pattern", "cases": 3, "causes": {"other": 3}},
    ]
    assert train_lexicon.disagreeing(rows_in, KB) == [
        "torch-cuda-out-of-memory (out_of_memory): {'other': 3, 'out_of_memory': 1}"
    ]


def test_a_rows_mapping_is_written_as_its_sub_table() -> None:
    rows_out = [{"cause": "a", "n": 1, "words": {"x": 2, "y z": 3}}, {"cause": "b", "words": {}}]
    text = toml_document("h", [("k", 1)], {}, {"cause": rows_out})
    assert tomllib.loads(text) == {"k": 1, "cause": [*rows_out]}
