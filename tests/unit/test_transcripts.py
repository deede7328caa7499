"""Reading transcript files: each format's speakers come out written as the others write them."""

from __future__ import annotations

import json
from pathlib import Path

from memory.transcripts import Line, read_transcript


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
