"""`lorekeeper ingest`: import a transcript (.jsonl, .txt, CRD3 .json, .srt, .vtt) or recorded audio into memory."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable
from datetime import date, datetime
from pathlib import Path

import click

from bot.cli import cli
from bot.cli.common import (
    CliError,
    Progress,
    async_command,
    campaign_memory,
    campaign_option,
    open_memory,
    queued_said,
    settings_from,
    table,
)
from bot.cli.progress import Stage, StageProgress, watch
from bot.settings import Settings
from memory.ingest import ImportCounts, IngestReport, import_counts, ingest_file
from memory.jobs.admin import held_jobs
from memory.jobs.context import warn_if_llm_off
from memory.jobs.queue import pending_jobs
from memory.jobs.worker import run_workers
from memory.recorder import Utterance
from memory.store import CampaignMemory
from memory.text import clock
from memory.transcripts import TranscriptError
from memory.voice.audio_files import AudioFileError, audio_duration
from memory.voice.offline import DEFAULT_SPEAKER, AudioTrack, ingest_audio, is_audio, unsupported


class Interrupted(CliError):
    """Stopped by a signal: exit 128 + its number, as a shell reports a process a signal ended."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        # click types exit_code a class variable; this one is the signal's
        self.exit_code = 128 + signum  # type: ignore[misc]


class _DayOrTime(click.DateTime):
    """``--started``: a day alone (``2024-03-02``) as a :class:`date`, for it is no time of day; else a datetime."""

    def convert(  # type: ignore[override]  # a date as well as the datetime
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> date | datetime:
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                return datetime.strptime(value.strip(), "%Y-%m-%d").date()
        return super().convert(value, param, ctx)


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@campaign_option
@click.option(
    "--session",
    "session_title",
    metavar="TITLE",
    help='Session title (default: the file\'s name without its extension); a .jsonl line naming its "session" '
    "goes to that one instead.",
)
@click.option(
    "--speaker", "speakers", multiple=True, metavar="NAME", help="Audio only: who speaks in each file, in order."
)
@click.option(
    "--model",
    metavar="MODEL",
    help="Audio only: Whisper model (tiny.en, base, auto, a model directory); default: LOREKEEPER_STT_MODEL, "
    "else auto.",
)
@click.option(
    "--started",
    type=_DayOrTime(["%Y-%m-%d", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"]),
    metavar="DATE",
    help="When the session was played: a day (2024-03-02), or a local time ('2024-03-02 19:30'); default: when "
    "the import began. Given again for a session imported before, it corrects its date.",
)
@click.option(
    "--again", is_flag=True, help="Import a transcript already stored as another session as a new session anyway."
)
@click.option("--wait", is_flag=True, help="Run the background jobs here until done, then print what was stored.")
@click.pass_context
@async_command
async def ingest(
    ctx: click.Context,
    paths: tuple[Path, ...],
    campaign: str | None,
    session_title: str | None,
    speakers: tuple[str, ...],
    model: str | None,
    started: date | datetime | None,
    again: bool,
    wait: bool,
) -> None:
    """Import a transcript, or audio through speech-to-text; importing the same file again into its session
    changes nothing, and one stored as another session already is refused (unless --again).

    \b
    .jsonl  {"speaker", "text", "start", "end", "words": [{"word", "confidence"}], "ref", "session"}
    .txt    Speaker: text   or   [hh:mm:ss] Speaker: text   (the start time into the session)
    .json   CRD3 episode {"TURNS": [{"NAMES": [...], "UTTERANCES": [...], "NUMBER": n}]}
    .srt .vtt  subtitles: a turn per cue, at its start time; its speaker a WebVTT voice <v Name>
               or a "Name: text" prefix (else the last one named, else "Unknown speaker")
    .wav .mp3 .ogg .flac .m4a .aac …  one speaker per file: `ingest a.wav --speaker Ana b.wav --speaker Ben`
                                      (several files become one session, merged by time)"""
    settings = settings_from(ctx)
    if why := next(filter(None, map(unsupported, paths)), None):  # before --speaker says it is no audio
        raise CliError(why)
    warn_if_llm_off(settings)  # its stage 2 and, with --wait, its jobs would use it
    audio = [p for p in paths if is_audio(p)]
    if audio and len(audio) != len(paths):
        raise CliError("give either audio files or one transcript, not both")
    if not audio and (len(paths) > 1 or speakers):
        raise CliError("a transcript is imported one file at a time; --speaker is for audio files")
    if speakers and len(speakers) not in (1, len(audio)):
        raise CliError(f"{len(audio)} audio files but {len(speakers)} --speaker names: give one per file")
    # a time is the machine's local time; a day alone is that day wherever it is read, not local midnight
    started_at = started.astimezone() if isinstance(started, datetime) else started
    async with open_memory(settings) as memory:
        mem, name = await campaign_memory(memory, settings, campaign)
        if audio:
            path = audio[0]
            report = await ingest_audio_files(
                mem,
                audio,
                speakers,
                model or settings.stt_model,
                session_title,
                settings.llm_enabled,
                started_at,
                again,
            )
        else:
            path = paths[0]
            report = await ingest_transcript(mem, path, session_title, settings.llm_enabled, started_at, again)
        # several recordings are one session: each file is named, not only the first
        read = ", ".join(p.name for p in audio) if audio else path.name
        click.echo(
            f"{read} → {name}: {report.lines:,} line{'s' * (report.lines != 1)} read, {report.written:,} new, "
            f"{report.corrections} name{'s' * (report.corrections != 1)} corrected, "
            f"{len(report.skipped)} line{'s' * (len(report.skipped) != 1)} skipped "
            f"(session{'s' if len(report.sessions) != 1 else ''}: {', '.join(report.sessions) or '-'})"
        )
        for warning in report.warnings:  # said at the end, under the counts it qualifies
            click.echo(f"warning: {warning}", err=True)
        for title, dm in report.guessed_dm.items():  # the recap, events and "the DM" in questions follow it
            click.echo(
                f"the DM of {title!r} taken to be {dm!r}, who said the most; if that is wrong, label the DM's lines "
                f'"DM" (or "Name (DM)") in the file, `lorekeeper session delete {title!r}` and import it again'
            )
        if not report.lines:
            raise CliError(nothing_imported(path, report, read))
        session_ids = [s.id for t in report.sessions if (s := await mem.log.session_by_title(t)) is not None]
        if wait:
            stopped_by: list[int] = []
            stop = asyncio.Event()

            def interrupt(signum: int) -> None:
                stopped_by.append(signum)
                stop.set()

            for signum in (signal.SIGINT, signal.SIGTERM):
                # as `worker` does: finish the job in hand, then close the pool and the embedded server in order
                asyncio.get_running_loop().add_signal_handler(signum, interrupt, signum)
            await run_workers_showing(mem, session_ids, run_workers(memory.pool, settings, stop, drain=True))
            if stopped_by:
                pending = await pending_jobs(memory.pool, mem.campaign_id)
                raise Interrupted(
                    f"stopped by {signal.Signals(stopped_by[0]).name}: {pending} background jobs still queued: "
                    "run `lorekeeper worker --drain` to finish them",
                    stopped_by[0],
                )
            # the table counts the whole session, not this import's lines: a re-import adds none to it
            held = f"session{'s' * (len(report.sessions) != 1)} {', '.join(map(repr, report.sessions))}"
            click.echo(f"{held} in all (this import: {report.written:,} new line{'s' * (report.written != 1)}):")
            print_import_counts(await import_counts(mem, session_ids))
            click.echo(f"campaign {name}:")
            await print_counts(mem, settings)
        else:
            pending = await pending_jobs(memory.pool, mem.campaign_id)
            click.echo(f"{queued_said(pending)} (or ingest with --wait)")


def nothing_imported(path: Path, report: IngestReport, read: str | None = None) -> str:
    """Why an import stored no line, for its error (exit 1: a script must not carry on as if it had); ``read``
    names the files of a recording in several."""
    if report.skipped:
        first = report.skipped[0].split(": skipped: ", 1)[-1]
        return f"nothing imported: every line of {path.name} was skipped ({len(report.skipped):,}; the first: {first})"
    if is_audio(path):
        return f"nothing imported: no speech was heard in {read or path.name}"
    return f"nothing imported: {path.name} has no lines"


async def run_workers_showing(mem: CampaignMemory, session_ids: list[int], work: Awaitable[object]) -> None:
    """Await ``work`` (the workers, draining the queue) while showing how far they are with this import."""

    async def poll() -> list[Stage]:
        counts = await import_counts(mem, session_ids)
        return [
            Stage("embedded", counts.embedded, counts.lines, "lines"),
            Stage("extracted", counts.extracted, counts.lines, "lines"),
            Stage("recapped", counts.recapped, counts.sessions, "sessions"),
        ]

    shown = StageProgress()
    watcher = asyncio.create_task(watch(poll, shown))
    try:
        await work
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        last = None
        with contextlib.suppress(Exception):  # the database gone: the workers' own error says so
            last = await poll()
        shown.close(last)


def print_import_counts(counts: ImportCounts) -> None:
    table(
        [
            [
                f"{n:,}"  # as the lines above say them: "2,532 lines read"
                for n in (
                    counts.lines,
                    counts.passages,
                    counts.entities,
                    counts.pending_entities,
                    counts.facts,
                    counts.pending_facts,
                    counts.recapped,
                )
            ]
        ],
        ["session lines", "passages", "entities", "pending entities", "facts", "pending facts", "recaps"],
    )


async def ingest_transcript(
    mem: CampaignMemory,
    path: Path,
    session_title: str | None,
    stage2: bool,
    started_at: date | None,
    again: bool,
    progress: Progress | None = None,
) -> IngestReport:
    """Import a transcript, saying how many of its lines are stored every few seconds (a 20 MB transcript takes
    minutes): see :class:`Progress`."""
    shown = progress or Progress()

    def stored(done: int, total: int) -> None:
        shown(lambda: f"stored {done:,} of {total:,} lines")

    try:
        return await ingest_file(
            mem,
            path,
            session_title=session_title,
            stage2=stage2,
            started_at=started_at,
            again=again,
            on_skip=lambda message: click.echo(f"warning: {message}", err=True),
            on_progress=stored if shown.enabled else None,  # no counting pass when there is nowhere to say it
        )
    except TranscriptError as exc:
        raise CliError(str(exc)) from None


async def ingest_audio_files(
    mem: CampaignMemory,
    paths: list[Path],
    speakers: tuple[str, ...],
    model: str,
    session_title: str | None,
    stage2: bool,
    started_at: date | None,
    again: bool,
    progress: Progress | None = None,
) -> IngestReport:
    """Transcribe and import recordings; each utterance of one file is printed as it is heard (before names are
    corrected), those of several once all are stored, as stored, in the order said; after a few seconds without
    a line printed (silence, a slow model, several files), how far into which file of how many speech-to-text is
    (see :class:`Progress`)."""
    from memory.providers.stt import STTError, WhisperSTT  # heavy: only for audio

    names = list(speakers) * len(paths) if len(speakers) == 1 else list(speakers)
    tracks = [AudioTrack(p, names[i] if names else DEFAULT_SPEAKER) for i, p in enumerate(paths)]
    shown = progress or Progress()
    lengths = {t.path: audio_duration(t.path) for t in tracks} if shown.enabled else {}
    # Speakers' files are heard one after another, not side by side: printed as heard, the DM's lines came
    # first, then Ana's from the start again. So they wait for the last file, and a line per file says how far.
    several = len(tracks) > 1
    held: list[Utterance] = []
    begun: list[AudioTrack] = []
    reached: dict[Path, float] = {}  # how far into each file: the audio heard, for the real-time factor

    def said(u: Utterance) -> str:
        return f"  {u.start_s:8.1f}s {u.speaker}: {u.text}"

    def heard(u: Utterance) -> None:
        if several:  # held, so it shows nothing: the progress line still comes (four files said nothing for 16 min)
            held.append(u)
            return
        click.echo(said(u))
        shown.touch()  # its time is how far speech-to-text is

    def at(track: AudioTrack, seconds: float) -> None:
        reached[track.path] = seconds + 0.02  # a frame's start: heard to its end
        if several and track not in begun:
            begun.append(track)
            click.echo(f"hearing {track.path.name} ({track.speaker}), file {len(begun)} of {len(tracks)}", err=True)
        if not shown.enabled:
            return
        length = lengths.get(track.path)
        of = f" of {clock(length)}" if length else ""
        which = f" (file {len(begun)} of {len(tracks)})" if several else ""
        shown(lambda: f"{track.path.name}{which}: transcribed {clock(seconds)}{of}")

    stt = WhisperSTT(model)
    began = time.perf_counter()
    try:
        # loaded before any file is read: a wrong --model on a silent file said only "no speech was heard"
        await asyncio.to_thread(stt.load)
        click.echo(f"speech-to-text: Whisper {stt.loaded}", err=True)
        report = await ingest_audio(
            mem,
            tracks,
            stt,
            session_title=session_title,
            stage2=stage2,
            started_at=started_at,
            again=again,
            on_utterance=heard,
            on_position=at,
        )
        if held and report.sessions and (session := await mem.log.session_by_title(report.sessions[0])):
            # as stored: names mended by the corrector ("Brayfen" heard, "Greyfen" stored), in the order said
            stored = {e.ref: e.text for e in await mem.log.session_entries(session.id)}
            for u in sorted(held, key=lambda u: (u.start_s, u.speaker)):
                click.echo(said(u.model_copy(update={"text": stored.get(u.ref, u.text)})))
        if length := max(reached.values(), default=0.0):  # none when imported before: nothing was heard
            took = time.perf_counter() - began
            # how long an evening takes to import, said so a DM can plan the next: RTF 0.5 is half its length.
            # Per the session's length (the longest file), not the files' sum: each speaker's file is heard in
            # turn, so five full-length tracks of a 4:17 night took 12:05, which a sum's "RTF 0.56" hid.
            span = (
                f"{clock(length)} of session ({len(reached)} files, {clock(sum(reached.values()))} of audio)"
                if len(reached) > 1
                else f"{clock(length)} of audio"
            )
            click.echo(f"{span} in {clock(took)}, RTF {took / length:.2f}, Whisper {stt.loaded}")
        if report.written and not speakers:  # one voice or several: speech-to-text cannot tell them apart
            click.echo(
                f"hint: every line is {DEFAULT_SPEAKER!r}: one file per speaker, each with --speaker NAME, lets the "
                "memory tell who said what",
                err=True,
            )
        return report
    except (AudioFileError, STTError) as exc:
        raise CliError(str(exc)) from None
    finally:
        stt.close()


#: The campaign's totals under the words this import's table above them uses, not the tables' names.
TOTALS_SAID = {"entries": "session lines", "chunks": "passages"}


async def print_counts(mem: CampaignMemory, settings: Settings) -> None:
    row = await mem.totals()
    names = list(row.keys())
    table([[f"{row[k]:,}" for k in names]], [TOTALS_SAID.get(k, k.replace("_", " ")) for k in names])
    await refuse_held(mem, settings)


async def refuse_held(mem: CampaignMemory, settings: Settings) -> None:
    """Fail the command when jobs of the campaign are held at the end: a script or a DM waiting on `--wait` must
    not read success while, say, extraction never ran after an LLM outage (then it names the LLM's setting)."""
    held = await held_jobs(mem.db, mem.campaign_id)
    if not held:
        return
    said = "; ".join(
        f"#{j.id} {j.kind}{f' of {j.session!r}' if j.session else ''} "
        f"({'failed on its data' if j.on_its_data else 'held after an outage'}): {j.error[:160]}"
        for j in held[:5]
    )
    more = f" and {len(held) - 5} more" if len(held) > 5 else ""
    retry = "`lorekeeper jobs list` shows them, `lorekeeper jobs retry` runs them again"
    if any(j.llm_away for j in held):
        url = settings.openai_base_url or "unset: OpenAI's own"
        retry = (
            f"the LLM (OPENAI_BASE_URL={url}) did not answer: start it or fix the setting, then "
            "`lorekeeper jobs retry` runs them again (`lorekeeper jobs list` shows them)"
        )
    raise CliError(f"{len(held)} background job{'s' * (len(held) != 1)} held: {said}{more}; {retry}")
