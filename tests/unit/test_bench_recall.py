"""The recall benchmark's scoring: what a DM reads, counted at equal budgets (bench/recall.py)."""

import json
from pathlib import Path

import pytest

import bench.recall
from bench.recall import (
    Unit,
    _pools,
    build_parser,
    crd3_queries,
    evidence_places,
    half,
    reading,
    session_recall,
    shown_words,
    variants,
    within_budgets,
)


def test_reading_keeps_rank_order_and_counts_a_shared_line_once() -> None:
    units = [Unit(1, (3, 4, 5)), Unit(1, (4, 5, 6)), Unit(2, (9,))]
    assert reading(units) == [3, 4, 5, 6, 9]


def test_evidence_counts_when_it_starts_inside_the_budget() -> None:
    read = list(range(1, 31))
    words = dict.fromkeys(read, 20)
    # line 11 is past 10 lines, inside 25 lines, starts at word 200 (< 300) and < 1,000
    assert within_budgets(read, {11}, words) == [False, True, True, True]
    # line 16 starts at word 300: outside the 300-word budget
    assert within_budgets(read, {16}, words) == [False, True, False, True]
    assert within_budgets(read, {1}, words) == [True, True, True, True]
    assert within_budgets(read, {99}, words) == [False, False, False, False]


def test_a_long_first_line_uses_up_the_word_budget() -> None:
    words = {1: 400, 2: 5}
    assert within_budgets([1, 2], {2}, words) == [True, True, False, True]


def test_session_recall_reads_the_first_five_distinct_sessions() -> None:
    units = [Unit(s, (s,)) for s in (1, 1, 2, 3, 3, 4, 5, 6)]
    assert session_recall(units, {6}) == (False, False)
    assert session_recall(units, {5, 6}) == (True, False)
    assert session_recall(units, {2, 5}) == (True, True)


def test_a_miss_says_where_each_evidence_session_first_comes() -> None:
    # hits of sessions 7, 7, 3, 9: session 3 is the 3rd hit and the 2nd session; session 5 no hit at all
    assert evidence_places({3, 5, 9}, [7, 7, 3, 9]) == {3: (3, 2), 5: (None, None), 9: (4, 3)}


def test_the_halves_never_change() -> None:
    assert half("C1E010") == "dev" and half("C1E001") == "held-out"
    assert {half(f"q{n}") for n in range(20)} == {"dev", "held-out"}


def test_a_previewed_context_line_counts_the_words_shown() -> None:
    words = {1: 400, 2: 5, 3: 400}
    # hit 1 shows line 1 as a 12-word preview before its answer (line 2); hit 2 shows line 1 again, whole
    units = [Unit(1, (1, 2), (12, 5)), Unit(1, (1, 3))]
    shown = shown_words(units, words)
    assert [shown[i] for i in reading(units)] == [12, 5, 400]  # the first reading of a line is the one counted
    assert within_budgets(reading(units), {2}, shown) == [True, True, True, True]
    assert within_budgets(reading(units), {2}, words) == [True, True, False, True]  # read whole: over 300 words


def test_pooled_questions_share_a_haystack_in_id_order_and_one_keeps_the_sample_order() -> None:
    questions = [{"question_id": q} for q in ("c", "a", "e", "b", "d")]
    assert [[q["question_id"] for q in p] for p in _pools(questions, 2)] == [["a", "b"], ["c", "d"], ["e"]]
    assert [[q["question_id"] for q in p] for p in _pools(questions, 1)] == [["c"], ["a"], ["e"], ["b"], ["d"]]


def test_fusion_settings_are_measured_one_constant_at_a_time_in_the_order_asked() -> None:
    args = build_parser().parse_args(
        ["--vector-weight", "0.8", "0.2", "--alone-from", "none", "20", "--named-boost", "0", "--table-talk", "1"]
    )
    assert variants(args) == [
        ("Lorekeeper, context for every hit", "ALONE_FROM", None),
        ("Lorekeeper, no context from 20 words", "ALONE_FROM", 20),
        ("Lorekeeper, vector weight 0.8", "VECTOR_WEIGHT", 0.8),
        ("Lorekeeper, vector weight 0.2", "VECTOR_WEIGHT", 0.2),
        ("Lorekeeper, entity boost 0", "NAMED_BOOST", 0.0),
        ("Lorekeeper, table talk x 1", "TABLE_TALK_FACTOR", 1.0),
    ]
    assert variants(build_parser().parse_args([])) == []  # by default only the product's own settings


def test_a_lexical_constant_is_measured_by_name() -> None:
    args = build_parser().parse_args(["--lexical", "B=0.5", "K1=2"])
    assert variants(args) == [
        ("Lorekeeper, lexical B 0.5", "lexical.B", 0.5),
        ("Lorekeeper, lexical K1 2", "lexical.K1", 2.0),
    ]


def test_long_lines_shown_whole_is_the_same_ranking_another_display() -> None:
    args = build_parser().parse_args(["--whole-lines", "--lexical", "PASSAGE_WORDS=0"])
    assert variants(args) == [
        ("Lorekeeper, long lines shown whole", "SHOW_PASSAGES", False),
        ("Lorekeeper, lexical PASSAGE_WORDS 0", "lexical.PASSAGE_WORDS", 0.0),
    ]


def test_a_blank_summary_sentence_is_not_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The aligned summaries hold a blank sentence an episode; recall refuses a blank query (the run stopped)."""
    rows = [
        {"episode": "C1E020", "summary": s, "turn_start": n, "turn_end": n + 2, "score": 0.5}
        for n, s in enumerate(["Grog rages.", "", "Vex flies.", " "])
    ]
    (tmp_path / "aligned_index.dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(bench.recall, "CRD3", tmp_path)
    assert sorted(r["summary"] for r in crd3_queries({"C1E020"}, 10, 0, 0)) == ["Grog rages.", "Vex flies."]
