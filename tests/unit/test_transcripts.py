"""Reading transcript files: each format's speakers come out written as the others write them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory.transcripts import Line, TranscriptError, read_transcript


def test_crd3_capitals_become_names_as_other_files_write_them_but_a_role_stays_in_capitals(tmp_path: Path) -> None:
    """A two-letter name ("JO") was kept in capitals with "DM", so Jo was two speakers: "JO" here, "Jo" in a .txt."""
    names = [["JO"], ["SAM"], ["DM"], ["GM", "MATT MERCER"], ["McKenna"], ["TALIESIN", "LIAM O'BRIEN"]]
    turns = [{"NAMES": n, "UTTERANCES": ["Hello."], "NUMBER": i} for i, n in enumerate(names)]
    episode = tmp_path / "C1E001.json"
    episode.write_text(json.dumps({"TURNS": turns}))
    (night := tmp_path / "night.txt").write_text("Jo: Hello.\n")

    speakers = [line.utterance.speaker for line in read_transcript(episode) if isinstance(line, Line)]
    assert speakers == ["Jo", "Sam", "DM", "GM & Matt Mercer", "McKenna", "Taliesin & Liam O'Brien"]
    assert [line.utterance.speaker for line in read_transcript(night) if isinstance(line, Line)] == ["Jo"]


def test_a_campaign_file_saved_as_txt_is_refused_as_one_not_read_as_a_transcript(tmp_path: Path) -> None:
    """`ingest world.txt`, a campaign file: its entities became 13 lines said by "- {name" and "campaign"."""
    world = tmp_path / "world.txt"
    world.write_text(
        "campaign: {name: The Sunken Crown}\n"
        "entities:   # who is who\n"
        "  - {name: Eldrinax, type: npc}\n"
        "relationships:\n"
        "  - {source: Eldrinax, type: lairs_in, target: Ironhold}\n"
    )
    with pytest.raises(
        TranscriptError,
        match=r"world\.txt: line 2 says 'entities:   # who is who': this is a campaign file, not a transcript; "
        r"load it with `lorekeeper campaign load world\.txt`",
    ):
        read_transcript(world)
    # a transcript whose speaker is called Entities, saying something, is one
    said = tmp_path / "night.txt"
    said.write_text("DM: You arrive.\nEntities: We are legion.\n")
    assert [line.utterance.speaker for line in read_transcript(said) if isinstance(line, Line)] == ["DM", "Entities"]


def test_a_stray_bidi_control_is_dropped_from_a_line_not_a_reason_to_skip_it(tmp_path: Path) -> None:
    """Spoken text is kept: a right-to-left override (which would show the line reversed in Discord) is taken out,
    in .txt and JSON lines alike, the session a line names too; Arabic and an emoji's joiner stay."""
    (night := tmp_path / "night.txt").write_text("Jo: Gor\u202erim is here\nغوريم: مرحبا 🧙\u200d\u2642\ufe0f\n")
    (lines := tmp_path / "night.jsonl").write_text(
        json.dumps({"speaker": "D\u2066M", "text": "The \u202egate\u202c fell", "session": "Night\u202e 1"}) + "\n"
    )
    said = [line.utterance for line in read_transcript(night)]
    assert [(u.speaker, u.text) for u in said] == [("Jo", "Gorrim is here"), ("غوريم", "مرحبا 🧙\u200d\u2642\ufe0f")]
    [line] = list(read_transcript(lines))
    assert isinstance(line, Line) and (line.session, line.utterance.speaker, line.utterance.text) == (
        "Night 1",
        "DM",
        "The gate fell",
    )
