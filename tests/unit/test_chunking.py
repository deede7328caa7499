"""Chunk windows: count and time limits, overlap, scene breaks, keys stable while a session grows."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.chunking import ChunkSettings, embeds_alone, line_text, windows
from memory.models import Entry


def entry(seq: int, text: str = "we walk on", start: float | None = None, speaker: str = "DM") -> Entry:
    t = float(seq * 5) if start is None else start
    return Entry(
        id=100 + seq, campaign_id=1, session_id=7, seq=seq, speaker=speaker, speaker_id=None, raw_text=text,
        text=text, start_s=t, end_s=t + 4, duration_s=4, ref=f"L{seq}", corrections=[],
        created_at=datetime.now(UTC),
    )  # fmt: skip


def seqs(ws: list) -> list[list[int]]:
    return [[e.seq for e in w.entries] for w in ws]


def test_windows_by_count_overlap_and_tail() -> None:
    ws = windows([entry(i) for i in range(1, 13)], ChunkSettings(max_entries=5, overlap=2, max_seconds=1000))
    assert seqs(ws) == [[1, 2, 3, 4, 5], [4, 5, 6, 7, 8], [7, 8, 9, 10, 11], [10, 11, 12]]
    assert [w.key for w in ws] == ["s7:1", "s7:4", "s7:7", "s7:10"]


def test_windows_by_time() -> None:
    # 5 s apart, at most 12 s from a window's first utterance: three utterances per window.
    ws = windows([entry(i) for i in range(1, 7)], ChunkSettings(max_entries=10, overlap=1, max_seconds=12))
    assert seqs(ws) == [[1, 2, 3], [3, 4, 5], [5, 6]]


def test_scene_breaks_on_silence_and_dm_cue() -> None:
    es = [entry(1), entry(2), entry(3, start=200.0), entry(4, start=205.0), entry(5, "Roll for initiative!", 210.0)]
    es.append(entry(6, start=215.0))
    ws = windows(es, ChunkSettings(max_entries=8, overlap=2, scene_gap_s=45))
    # No window crosses a break, and no overlap is carried across one.
    assert seqs(ws) == [[1, 2], [3, 4], [5, 6]]


def test_keys_are_stable_as_the_session_grows() -> None:
    settings = ChunkSettings(max_entries=4, overlap=1, max_seconds=1000)
    early = windows([entry(i) for i in range(1, 7)], settings)
    later = windows([entry(i) for i in range(1, 15)], settings)
    later_by_key = {w.key: seqs([w])[0] for w in later}
    for w in early[:-1]:  # every closed window is unchanged; only the open tail grows
        assert later_by_key[w.key] == seqs([w])[0]
    assert early[-1].key in later_by_key


def test_a_line_is_embedded_alone_from_four_words_speaker_first() -> None:
    assert [embeds_alone(entry(1, t)) for t in ("Yeah.", "Okay, go ahead.", "I cast fire bolt.", "")] == [
        False,
        False,
        True,
        False,
    ]
    line = entry(2, "The bridge is out.", speaker="MATT")
    assert line_text(line) == "MATT: The bridge is out."
    assert windows([entry(1), line])[0].text.endswith("\n" + line_text(line))  # as a window shows it
