"""Reading transcript files: each format's speakers come out written as the others write them."""

from __future__ import annotations

import codecs
import json
import random
from pathlib import Path

import pytest

from memory.transcripts import Line, Skipped, TranscriptError, read_transcript


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


# ------------------------------------------------------------------------------------------------ subtitles

WHISPER_SRT = (
    "1\r\n"
    "00:00:01,000 --> 00:00:04,500\r\n"
    "MATT: Welcome back to\r\n"
    "<i>the Sunken Crown.</i>\r\n"
    "\r\n"
    "2\r\n"
    "00:00:05,000 --> 00:00:06,250\r\n"
    "{\\an8}The gates of <b>Ironhold</b> open.\r\n"
    "\r\n"
    "3\r\n"
    "00:00:07,000 --> 00:00:08,000\r\n"
    "\r\n"
    "4\r\n"
    "00:00:09,000 --> 00:00:10,000\r\n"
    "- LAURA: Yes!\r\n"
    "- SAM: No.\r\n"
    "\r\n"
    "5\r\n"
    "01:02:03,500 --> 01:02:05,000\r\n"
    "SAM: Note: I roll.\r\n"
)

VOICED_VTT = """WEBVTT
Kind: captions
Language: en

NOTE written by Craig,
checked by hand

STYLE
::cue { color: white }

intro
00:01.000 --> 00:04.000 align:start position:10%
<v Matt>Welcome to <c.yellow>Ironhold</c> &amp; beyond.</v>

00:00:05.000 --> 00:00:07.000
<v.loud Laura Bailey>Yes!
<v Sam>No<00:00:06.000><c> way</c><00:00:06.500><c> out.</c>

NOTE a comment between cues

cue-3
00:00:08.000 --> 00:00:09.000
<v Matt>The door creaks.
"""


def turns(path: Path) -> list[tuple[str, str, float, float | None, str | None, int | None]]:
    return [
        (u.speaker, u.text, u.start_s, u.end_s, u.ref, u.seq)
        for line in read_transcript(path)
        if isinstance(line, Line)
        for u in [line.utterance]
    ]


def test_an_srt_cue_is_a_turn_at_its_time_with_its_named_speaker_and_no_formatting(tmp_path: Path) -> None:
    """Whisper and caption tools number cues, break them over lines, italicise, and name speakers in capitals."""
    (srt := tmp_path / "night.srt").write_text(WHISPER_SRT, newline="")
    assert turns(srt) == [
        ("Matt", "Welcome back to the Sunken Crown.", 1.0, 4.5, "night.srt:2", 2),
        ("Matt", "The gates of Ironhold open.", 5.0, 6.25, "night.srt:7", 7),  # no name: Matt still speaks
        ("Laura", "Yes!", 9.0, 10.0, "night.srt:14", 14),
        ("Sam", "No.", 9.0, 10.0, "night.srt:14", 15),
        ("Sam", "Note: I roll.", 3723.5, 3725.0, "night.srt:19", 19),  # the empty cue 3 is dropped
    ]


def test_a_vtt_voice_names_the_speaker_and_its_header_notes_and_ids_are_no_lines(tmp_path: Path) -> None:
    (vtt := tmp_path / "night.vtt").write_text(VOICED_VTT)
    assert turns(vtt) == [
        ("Matt", "Welcome to Ironhold & beyond.", 1.0, 4.0, "night.vtt:12", 12),
        ("Laura Bailey", "Yes!", 5.0, 7.0, "night.vtt:15", 15),
        ("Sam", "No way out.", 5.0, 7.0, "night.vtt:15", 16),  # YouTube's word times are no cue
        ("Matt", "The door creaks.", 8.0, 9.0, "night.vtt:22", 22),
    ]


def test_subtitles_without_names_are_said_by_an_unknown_speaker_and_a_colon_is_no_name(tmp_path: Path) -> None:
    """A file that does not name speakers: "Look: the door" in one cue of many is what was said, not Look saying it."""
    cues = ["Look: the door is open.", "We go in.", "Quietly.", "Then what?", "Roll for it.", "Eleven."]
    srt = "".join(f"{i}\n00:00:0{i},000 --> 00:00:0{i},900\n{text}\n\n" for i, text in enumerate(cues, start=1))
    (path := tmp_path / "whisper.srt").write_text(srt)
    assert [(s, t) for s, t, *_ in turns(path)] == [("Unknown speaker", text) for text in cues]


def test_subtitles_in_utf8_with_a_bom_or_utf16_are_read_and_cp1252_or_garbage_refused(tmp_path: Path) -> None:
    srt = "".join(f"{i}\n00:00:0{i},000 --> 00:00:0{i},500\nCafé número {i}\n\n" for i in range(1, 9))
    (bom := tmp_path / "bom.srt").write_bytes(codecs.BOM_UTF8 + srt.encode())
    (utf16 := tmp_path / "utf16.vtt").write_bytes(("WEBVTT\n\n" + srt.replace(",", ".")).encode("utf-16"))
    assert turns(bom)[0][:3] == ("Unknown speaker", "Café número 1", 1.0) and len(turns(bom)) == 8
    assert turns(utf16)[7][:3] == ("Unknown speaker", "Café número 8", 8.0)
    (windows := tmp_path / "windows.srt").write_bytes(srt.encode("cp1252"))
    with pytest.raises(TranscriptError, match=r"^windows\.srt is not UTF-8 text \(it looks like Latin-1: "):
        read_transcript(windows)
    (binary := tmp_path / "binary.srt").write_bytes(random.Random(0).randbytes(50_000))
    with pytest.raises(TranscriptError, match=r"^binary\.srt is not a text file "):
        read_transcript(binary)
    for name, text in [("notes.srt", "1\nnot a time\nhello\n"), ("empty.vtt", ""), ("header.vtt", "WEBVTT\n\n")]:
        (garbage := tmp_path / name).write_text(text)
        with pytest.raises(TranscriptError) as info:
            read_transcript(garbage)  # refused when called, before ingest writes anything
        assert str(info.value) == (
            f"{name}: no subtitle cues in it (a cue starts with its times, `00:01:02,500 --> 00:01:05,000`): "
            "not an SRT or WebVTT file"
        )


def test_a_subtitle_cue_with_a_broken_line_is_skipped_whole_and_named(tmp_path: Path) -> None:
    good = "".join(f"{i}\n00:00:0{i},000 --> 00:00:0{i},500\nLine {i}\n\n" for i in range(1, 9))
    broken = "9\n00:00:10,000 --> 00:00:11,000\nFirst half\nsecond Café\n\n".encode("cp1252")
    (path := tmp_path / "mostly.srt").write_bytes(good.encode() + broken)
    items = list(read_transcript(path))
    assert [i.utterance.text for i in items if isinstance(i, Line)] == [f"Line {i}" for i in range(1, 9)]
    assert [i.message(path) for i in items if isinstance(i, Skipped)] == [
        "mostly.srt:36: skipped: not valid UTF-8 (byte 11): cue 9 skipped"
    ]


def test_a_tv_caption_speaker_after_chevrons_names_even_a_one_cue_file(tmp_path: Path) -> None:
    """Closed captions mark a new speaker with ">>"; a file of one named cue still names it."""
    (path := tmp_path / "clip.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\n>> MATT MERCER: Hi there.\n")
    assert turns(path) == [("Matt Mercer", "Hi there.", 1.0, 2.0, "clip.srt:2", 2)]


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


def test_an_srt_cue_past_99_hours_is_at_its_time_not_wrapped_into_the_first_hours(tmp_path: Path) -> None:
    """pysubs2 reads two digits of an SRT hour: a cue at 100:00:01 (a long campaign's captions joined) was at 1 s."""
    (srt := tmp_path / "long.srt").write_text(
        "1\n99:59:59,500 --> 100:00:01,000\nBefore.\n\n2\n123:00:04,000 --> 123:00:06,250\nAfter.\n"
    )
    assert [(text, start, end) for _, text, start, end, *_ in turns(srt)] == [
        ("Before.", 359999.5, 360001.0),
        ("After.", 442804.0, 442806.25),
    ]


#: Its lines of one space (written "\\x20") keep a cue from ending before its next line.
YOUTUBE_AUTO_VTT = """WEBVTT
Kind: captions
Language: en

00:00:00.000 --> 00:00:02.350 align:start position:0%
\x20
welcome<00:00:00.320><c> back</c><00:00:00.640><c> to</c>

00:00:02.350 --> 00:00:02.360 align:start position:0%
welcome back to
\x20

00:00:02.360 --> 00:00:05.000 align:start position:0%
welcome back to
the<00:00:02.500><c> sunken</c><00:00:03.000><c> crown</c>

00:00:05.000 --> 00:00:05.010 align:start position:0%
the sunken crown
\x20

00:00:05.010 --> 00:00:07.000 align:start position:0%
the sunken crown
roll<00:00:05.500><c> initiative</c>
"""


def test_youtube_automatic_captions_store_each_phrase_once_not_as_they_roll(tmp_path: Path) -> None:
    """YouTube's automatic captions (yt-dlp --write-auto-subs) roll: a cue starts with the last one's line, and a
    10 ms cue shows it again alone; every phrase was stored three times. A line said again in a file that does not
    roll is kept."""
    (vtt := tmp_path / "auto.en.vtt").write_text(YOUTUBE_AUTO_VTT)
    assert [(text, start, end) for _, text, start, end, *_ in turns(vtt)] == [
        ("welcome back to", 0.0, 2.35),
        ("the sunken crown", 2.36, 5.0),
        ("roll initiative", 5.01, 7.0),
    ]
    cues = ["No.", "No.", "Roll.", "Fine."]
    srt = "".join(f"{i}\n00:00:0{i},000 --> 00:00:0{i},900\n{text}\n\n" for i, text in enumerate(cues, start=1))
    (said := tmp_path / "said.srt").write_text(srt)
    assert [t for _, t, *_ in turns(said)] == cues
