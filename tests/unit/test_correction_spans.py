"""Stage 1 changes a misheard name and nothing else: a correction covers whole words, writes no word of the line
twice and eats none (a home campaign's lines, and the bench's CRD3 corrections when its data is at hand)."""

from __future__ import annotations

import functools
import random
from itertools import pairwise

import pytest

from memory.correction import EntityName, Pipeline
from memory.correction.edits import apply_corrections
from memory.correction.text import name_norm, tokenize
from memory.models import Correction

# A home campaign's names (a tester's world file, "The Drowned Choir").
ENTITIES = [
    EntityName(id=1, name="Thessaly Quorn", aliases=["Thess"]),
    EntityName(id=2, name="Brother Ozzick", aliases=["Oz"]),
    EntityName(id=3, name="Wren Halloway"),
    EntityName(id=4, name="Kestrel Vane", aliases=["Kes"]),
    EntityName(id=5, name="Quillon Ashgrove", aliases=["Abbot Quillon", "the Abbot"]),
    EntityName(id=6, name="Mira Sallowmere", aliases=["Mira"]),
    EntityName(id=7, name="Old Hobb", aliases=["Hobb"]),
    EntityName(id=8, name="Captain Idris Varga", aliases=["Captain Varga"]),
    EntityName(id=9, name="Sister Ottilie Brand", aliases=["Ottilie", "Sister Ottilie"]),
    EntityName(id=10, name="Tamsin Brand"),
    EntityName(id=11, name="Fenwick Tull", aliases=["Fenwick"]),
    EntityName(id=12, name="Yselle Dawnmarrow", aliases=["Yselle"]),
    EntityName(id=15, name="Greywater"),
    EntityName(id=16, name="The Gutted Eel", aliases=["the Eel"]),
    EntityName(id=18, name="Blackreed Fen", aliases=["the fen"]),
    EntityName(id=19, name="Mirecross Bridge"),
    EntityName(id=20, name="Lanternhold"),
    EntityName(id=22, name="The Pale Lantern", aliases=["the lantern"]),
    EntityName(id=23, name="Ottilie's Key", aliases=["the bone key"]),
]

# (line, the misheard words in it): a correction may cover those and words of the name it writes, nothing else.
LINES = [
    ("DM: You meet ottily brand at the bridge.", "ottily brand"),
    ("we talked to ottily brand", "ottily brand"),
    ("Dana: Fenwik Tull buys rings, right?", "Fenwik Tull"),
    ("DM: Yes, Fenwik Tull buys anything.", "Fenwik Tull"),
    ("So quill on ash grove gave us the lantern.", "quill on ash grove"),
    ("We met sister auto lee brand on the bridge.", "sister auto lee brand"),
    ("Mira sallow mere rows the boat.", "Mira sallow mere"),
    ("The old hob poured the ale at the gutted eel.", "old hob"),
    ("Thessaly corn plays the lute.", "Thessaly corn"),
    ("Kestrel vein stabs him.", "Kestrel vein"),
    ("We talked to yssel dawn marrow at lantern hold.", "yssel dawn marrow"),
    ("The black reed fen is cold.", "black reed fen"),
]


@pytest.fixture(scope="module")
def pipeline() -> Pipeline:
    return Pipeline(ENTITIES)


def test_a_misheard_alias_before_the_rest_of_the_name_writes_that_part_once(pipeline: Pipeline) -> None:
    """ "ottily" is the alias Ottilie; "brand" after it is the rest of the name, said: "Ottilie Brand", not the
    canonical name before the "brand" that was said ("Sister Ottilie Brand brand")."""
    result = pipeline.correct_fast("DM: You meet ottily brand at the bridge.")
    assert result.text == "DM: You meet Ottilie Brand at the bridge."
    assert [(c.span, c.replacement, c.entity_id) for c in result.corrections] == [("ottily brand", "Ottilie Brand", 9)]
    assert pipeline.correct_fast("ottily brand's key").text == "Ottilie Brand's key"
    # alone, the alias still becomes the name; with the name's first word said before it, the whole name, once
    assert pipeline.correct_fast("we talked to ottily").text == "we talked to Sister Ottilie Brand"
    assert pipeline.correct_fast("sister ottily brand waits").text == "Sister Ottilie Brand waits"
    # a small word of the name after the alias is not taken on its own ("of", "the")
    lady = Pipeline([EntityName(id=1, name="Lady Kima of Vord", aliases=["Kima"])])
    assert lady.correct_fast("keema of the north").text == "Lady Kima of Vord of the north"


def test_a_window_running_past_the_name_into_the_next_word_loses_to_the_name(pipeline: Pipeline) -> None:
    """ "Fenwik Tull buys" read as the name plus a plural "s" ate the verb ("Fenwick Tulls rings"): the window of
    the name alone wins."""
    assert pipeline.correct_fast("Dana: Fenwik Tull buys rings, right?").text == "Dana: Fenwick Tull buys rings, right?"
    assert pipeline.correct_fast("DM: Yes, Fenwik Tull buys anything.").text == "DM: Yes, Fenwick Tull buys anything."


def changes_only_the_name(raw: str, corrections: list[Correction], misheard: tuple[int, int] | None = None) -> str:
    """What is wrong with ``corrections`` of ``raw`` ("" if nothing): a span must start and end at a word's edge (a
    possessive or plural ending may stay outside), the corrected line may repeat no word the raw one did not, and a
    correction over the ``misheard`` words may take in only words of the name it writes besides."""
    tokens = tokenize(raw)
    starts, ends = {t.start for t in tokens}, {t.base_end for t in tokens} | {t.end for t in tokens}
    for c in corrections:
        if c.start not in starts or not (c.end in ends or (c.end + 1 in ends and raw[c.end] in "sS")):
            return f"{c.span!r} is not whole words"
        if misheard is not None and c.start < misheard[1] and misheard[0] < c.end:
            taken = [t for t in tokens if c.start < t.end and t.start < c.end]
            outside = {t.norm for t in taken if not misheard[0] <= t.start < t.base_end <= misheard[1]}
            if outside - set(name_norm(c.replacement).split()):
                return f"{c.span!r} -> {c.replacement!r} takes in {sorted(outside)}"

    def repeats(text: str) -> int:
        words = tokenize(text)
        return sum(a.norm == b.norm and text[a.end : b.start].isspace() for a, b in pairwise(words))

    corrected = apply_corrections(raw, corrections)
    return f"a word doubled: {corrected!r}" if repeats(corrected) > repeats(raw) else ""


def test_a_correction_changes_the_misheard_name_and_nothing_else(pipeline: Pipeline) -> None:
    for line, misheard in LINES:
        start = line.index(misheard)
        result = pipeline.correct_fast(line)
        assert result.corrections, line
        assert changes_only_the_name(line, result.corrections, (start, start + len(misheard))) == "", line


@functools.cache
def _bench() -> tuple[Pipeline, list[str], list[tuple[str, tuple[int, int]]]]:
    from bench import correction as bench

    if not bench.MISHEARINGS.is_file():
        pytest.skip(f"{bench.MISHEARINGS} not found (set LOREKEEPER_DATA)")
    entities = bench.crd3_entities()
    entities += bench.srd_entities(len(entities))
    turns = bench.crd3_turns()
    cases, _ = bench.crd3_cases(turns, 3, random.Random(7))
    return Pipeline(entities), turns, [(c.text, (c.start, c.end)) for c in cases]


def test_the_benchs_crd3_corrections_change_only_the_name() -> None:
    """Every mishearing case of the bench, and a sample of its clean CRD3 turns (whatever stage 1 changes there)."""
    pipeline, turns, cases = _bench()
    sample: list[tuple[str, tuple[int, int] | None]] = [
        *cases,
        *((t, None) for t in random.Random(3).sample(turns, 1000)),
    ]
    wrong = [
        (text[:80], why)
        for text, misheard in sample
        if (why := changes_only_the_name(text, pipeline.correct_fast(text).corrections, misheard))
    ]
    assert wrong == []


def test_one_word_of_a_longer_name_is_corrected_once_it_is_an_alias(pipeline: Pipeline) -> None:
    """(docs/guide/names.md) The index holds names and aliases, not their words: "Kestral" alone is no mishearing of
    Kestrel Vane until the DM gives "Kestrel" as an alias."""
    assert pipeline.correct_fast("then kestral stabs him").corrections == []
    aliased = Pipeline([EntityName(id=4, name="Kestrel Vane", aliases=["Kes", "Kestrel"])])
    assert aliased.correct_fast("then kestral stabs him").text == "then Kestrel Vane stabs him"


def test_a_misheard_surname_after_a_misheard_first_name_is_consumed() -> None:
    """Heard "a sold" is the alias Ysolde, written as the whole name; "Marrow" just after it is the
    surname Varrow a phone off, written as a name: it goes, not "Ysolde Varrow Marrow". What is not the rest of the
    name stays: another name said ("Marrow" of Old Marrow), a word far from it ("Hunz", the verb "hands", is no
    Ashgrove), one after a comma, and a lower-case word two phones off ("marrow bone")."""
    names = [
        EntityName(id=1, name="Ysolde Varrow", aliases=["Ysolde"]),
        EntityName(id=2, name="Quillon Ashgrove", aliases=["Quillon"]),
    ]
    pipeline = Pipeline(names)
    line = "Brannoch Seymour only a sold Marrow takes her ferry"
    result = pipeline.correct_fast(line)
    assert result.text == "Brannoch Seymour only Ysolde Varrow takes her ferry"
    start = line.index("a sold Marrow")
    assert changes_only_the_name(line, result.corrections, (start, start + len("a sold Marrow"))) == ""
    assert pipeline.correct_fast("a sold Marrow's boat").text == "Ysolde Varrow's boat"
    assert pipeline.correct_fast("a sold, Marrow").text == "Ysolde Varrow, Marrow"
    assert pipeline.correct_fast("a sold marrow bone").text == "Ysolde Varrow marrow bone"
    heard = "Quill and Hunz, Thessaly the key."
    doubted = [(w, 0.3 if i < 2 else 0.95) for i, w in enumerate(heard.split())]
    assert pipeline.correct_fast(heard, doubted).text == "Quillon Ashgrove Hunz, Thessaly the key."
    # the same after a phrase the DM taught for the name
    taught = Pipeline([EntityName(id=1, name="Ysolde Varrow", heard_as=["a sold"])])
    assert taught.correct_fast(line).text == "Brannoch Seymour only Ysolde Varrow takes her ferry"
    assert taught.correct_fast("a sold marrow bone").text == "Ysolde Varrow marrow bone"
    marrow = Pipeline([*names, EntityName(id=3, name="Old Marrow", aliases=["Marrow"])])
    assert marrow.correct_fast("a sold Marrow met Quill").text == "Ysolde Varrow Marrow met Quill"
