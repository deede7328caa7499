"""``lorekeeper correct``: fix misheard entity names in utterances read from stdin, one JSON line out each.

Input lines are plain text or JSON ``{"text": ..., "words": [{"word": ..., "confidence": ...}],
"entities": [names]}``; ``entities`` on a line replaces the global list for that line (per-utterance
biasing). Output lines are ``{"text", "raw_text", "corrections"}``, or ``{"line", "error"}`` for a line that
cannot be read; the command goes on with the next line. The command's help says it all for its users.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import io
import json
import multiprocessing
import os
import queue
import re
import signal
import sys
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, TextIO

import click
import yaml

from bot.cli import cli
from bot.cli.common import campaign_memory, open_memory, settings_from
from memory.correction import EntityName, Pipeline
from memory.correction.evidence import MatchSettings
from memory.correction.matcher import load_tables
from memory.models import PERSON_TYPES
from memory.providers.llm import OpenAILLM
from memory.text import INVISIBLES

#: Distinct per-line entity lists whose prepared pipelines are kept (biasing lists repeat across lines), and
#: the names they may hold between them: a prepared name takes about 1.6 KB.
_CACHE_SIZE = 256
_CACHE_NAMES = 100_000
#: Lines a worker process is handed at once, at most (see ``_run_in_processes``).
_BATCH = 32
DEFAULT_JOBS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
#: A line is JSON when it opens as an object does: "{sighs} ..." is speech, as is "[laughs] ...".
_JSON_OBJECT = re.compile(r'\{\s*["}]')


#: Invisible characters a name copied from a web page or a document may carry: a correction would write them into the
#: transcript.
_INVISIBLE = dict.fromkeys(map(ord, INVISIBLES))


def _visible(name: str) -> str:
    return name if name.isascii() else name.translate(_INVISIBLE)


class LineError(ValueError):
    """A line that is not a readable utterance."""


@cli.command("correct")
@click.option(
    "--entities",
    "entities_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A campaign file (.yaml/.yml/.json: entities: [{name, type, aliases, heard_as, not_heard_as}], or a list "
    "of names; an npc's or player's last name is corrected alone too) or a plain list: one name per line, blank "
    "lines and lines starting with # skipped. UTF-8, a byte-order mark allowed.",
)
@click.option(
    "--campaign", "-c", "campaign_name", metavar="NAME", help="Take the entities of this campaign from the database."
)
@click.option(
    "--llm",
    "use_llm",
    is_flag=True,
    help="Also ask the configured LLM (stage 2) about the doubtful spans stage 1 leaves: a call per such line.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=DEFAULT_JOBS,
    show_default="one per CPU core",
    help="Processes correcting lines at once; answers still come in input order. --llm works one line at a time.",
)
@click.option(
    "--phonetic-threshold",
    type=click.FloatRange(0, 1),
    default=MatchSettings().phonetic_threshold,
    show_default=True,
    help="Least score a name that sounds like the heard words needs. Raise it to correct less; ordinary English "
    "words need more whatever it is.",
)
@click.option(
    "--fuzzy-threshold",
    type=click.FloatRange(0, 1),
    default=MatchSettings().fuzzy_threshold,
    show_default=True,
    help="Least score a name spelled like the heard words needs when none sounds like them.",
)
@click.pass_context
def correct(
    ctx: click.Context,
    entities_file: Path | None,
    campaign_name: str | None,
    use_llm: bool,
    jobs: int,
    phonetic_threshold: float,
    fuzzy_threshold: float,
) -> None:
    """Correct misheard entity names in lines said, read from stdin, one JSON line
    out for each line in.

    \b
    Each input line (UTF-8; LF or CRLF) is one line said:
      plain text     the whole line, spaces around it dropped
      a JSON object  {"text": "...", "entities": ["Name", ...],
                      "words": [{"word": "...", "confidence": 0.4}, ...]}
    A line is JSON when it starts with {" (or is {}); anything else is text,
    "[laughs] ..." and "{sighs} ..." too.

    \b
    "words" (optional) are looked for in order in "text" (one that is not there
    counts for nothing); a confidence is a number from 0 to 1, or null or left
    out when unknown; with no "text", the words joined by spaces are the text.
    "entities" replaces the --entities or --campaign list for that line only
    ([]: nothing to correct); each distinct list is prepared once and kept, so
    lines that share a few lists stay fast.

    \b
    Each output line, written as soon as its input line is corrected:
      {"text": corrected, "raw_text": as read (NFC), "corrections": [{"span",
       "replacement", "start", "end", "entity_id", "score", "stage"}]}
    (start and end: character offsets into raw_text). An empty line gives an
    empty text. A line that cannot be read (not UTF-8, broken JSON, a field of
    the wrong type, a confidence out of range, no entities for it) gives
    {"line": N, "error": "what is wrong"}, and the next lines go on as usual.

    Exit status: 0 when the input ends; 2 for a bad option or entities file
    (nothing is read); 1 when --campaign names no campaign, the database
    cannot be reached, or a worker process died (killed, out of memory).
    """
    if entities_file is not None and campaign_name is not None:
        raise click.UsageError("give --entities or --campaign, not both")
    if jobs > 1 and "fork" not in multiprocessing.get_all_start_methods():
        raise click.UsageError("--jobs above 1 needs a system that can fork processes (Linux, macOS)")
    settings = settings_from(ctx) if use_llm else None
    if settings is not None and not settings.llm_enabled:
        raise click.UsageError("--llm needs LOREKEEPER_LLM_MODEL and OPENAI_API_KEY or OPENAI_BASE_URL")
    names: list[EntityName] | None = None
    if entities_file is not None:
        names = read_entities_file(entities_file)
    elif campaign_name is not None:
        names = load_campaign_names(ctx, campaign_name)
    llm = None
    if settings is not None:
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        llm = OpenAILLM(settings.openai_base_url, key, settings.llm_model or "", timeout=settings.llm_timeout)
    # JSON lines are UTF-8 whatever the locale; a line that is not comes out as an error line, not a crash. Lines
    # end at "\n" only (a stray "\r" inside one must not split it), and each answer is flushed at once: a harness
    # may write a line and wait for its answer with stdin still open.
    stdin = io.TextIOWrapper(_stdin_bytes(), encoding="utf-8-sig", errors="surrogateescape", newline="\n")
    stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", line_buffering=True)
    try:
        with _tables_out_of_the_collectors_way():
            thresholds = MatchSettings(phonetic_threshold=phonetic_threshold, fuzzy_threshold=fuzzy_threshold)
            run(stdin, stdout, names, llm, jobs, settings=thresholds)
    except BrokenProcessPool:
        raise click.ClickException(
            "a worker process died (killed, or out of memory?): the lines after the last answer were not "
            "corrected; --jobs 1 corrects in this process"
        ) from None
    finally:
        stdout.detach()  # the stream stays open for click


def _stdin_bytes() -> BinaryIO:
    """Standard input through a file object of its own where it has a descriptor: with --jobs a thread reads
    it, and one left waiting on sys.stdin (a worker died, Ctrl-C) holds the lock the interpreter takes to close
    sys.stdin at exit, which then aborts."""
    try:
        return open(os.dup(sys.stdin.fileno()), "rb")
    except (AttributeError, OSError, ValueError):  # no descriptor: click's test runner, an embedding program
        return sys.stdin.buffer


def load_campaign_names(ctx: click.Context, name: str) -> list[EntityName]:
    """The campaign's accepted entities (secret ones too: correcting a name reveals nothing new)."""

    async def load() -> list[EntityName]:
        settings = settings_from(ctx)
        async with open_memory(settings) as memory:
            mem, _ = await campaign_memory(memory, settings, name)
            return [
                EntityName(
                    id=e.id,
                    name=e.name,
                    aliases=e.aliases,
                    heard_as=e.heard_as,
                    not_heard_as=e.not_heard_as,
                    person=e.type in PERSON_TYPES,
                )
                for e in await mem.graph.list_entities()
            ]

    return asyncio.run(load())


def read_entities_file(path: Path) -> list[EntityName]:
    """Entities from a campaign YAML (``.yaml``/``.yml``, or ``.json``: an ``entities:`` list, or a list of
    names) or a plain list of names, one per line. A file that yields no name is an error, not an empty list."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # Windows editors start a file with a byte-order mark
    except UnicodeDecodeError as exc:
        raise click.BadParameter(f"{path}: not UTF-8 text (byte {exc.start})", param_hint="--entities") from None
    if path.suffix.lower() in (".yaml", ".yml", ".json"):  # JSON is YAML
        try:
            data = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError) as exc:
            problem = str(exc).splitlines()[0] if isinstance(exc, yaml.YAMLError) else "nested too deeply"
            raise click.BadParameter(f"{path}: not valid YAML: {problem}", param_hint="--entities") from None
        if isinstance(data, dict) and "entities" in data:
            entities = _yaml_entities(path, data["entities"])
        elif isinstance(data, list) and all(isinstance(n, str) for n in data):
            entities = [EntityName(name=name) for n in data if (name := _visible(n).strip())]
        else:
            raise click.BadParameter(
                f"{path}: expected a campaign file (entities: a list of {{name, aliases}}) or a list of names",
                param_hint="--entities",
            )
    else:
        names = [_visible(line).strip() for line in text.splitlines()]
        entities = [EntityName(name=n) for n in names if n and not n.startswith("#")]
    if not entities:
        raise click.BadParameter(f"{path}: no entity names in it", param_hint="--entities")
    return entities


def _yaml_entities(path: Path, items: Any) -> list[EntityName]:
    if not isinstance(items, list):
        raise click.BadParameter(f"{path}: entities must be a list", param_hint="--entities")
    entities = []
    for i, item in enumerate(items, 1):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"].strip():
            raise click.BadParameter(f"{path}: entity {i} has no name", param_hint="--entities")
        names: dict[str, list[str]] = {}
        # what speech-to-text writes for the name ("from skin" / Frumpkin), and what is never it ("manta ray")
        for field in ("aliases", "heard_as", "not_heard_as"):
            given = item.get(field)
            given = [] if given is None else given  # {} or false is a mistake, not "none"
            if not isinstance(given, list) or not all(isinstance(a, str) for a in given):
                raise click.BadParameter(
                    f"{path}: entity {item['name']!r}: {field} must be a list of names", param_hint="--entities"
                )
            names[field] = [a for a in map(_visible, given) if a]
        entities.append(
            EntityName(
                name=_visible(item["name"]),
                aliases=names["aliases"],
                heard_as=names["heard_as"],
                not_heard_as=names["not_heard_as"],
                person=str(item.get("type") or "").strip().casefold() in PERSON_TYPES,
            )
        )
    return entities


@contextmanager
def _tables_out_of_the_collectors_way() -> Iterator[None]:
    """The process reads until its input ends, and each line allocates thousands of short-lived objects. Each
    full collection walked every table loaded (CMUdict, word frequencies): 40 % of the run time with per-line
    entity lists, 20 % with one list. Load the tables, freeze them (frozen objects are never walked again),
    and collect the youngest generation every 50,000 new objects instead of every 700."""
    load_tables()
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def run(
    stdin: TextIO,
    stdout: TextIO,
    entities: list[EntityName] | None,
    llm: OpenAILLM | None = None,
    jobs: int = 1,
    *,
    settings: MatchSettings | None = None,
) -> None:
    """The command's loop, apart from click so the speed of the loop itself can be measured. With ``llm``,
    stage 2 runs too, one line at a time, and the client is closed when the input ends (or the run is stopped).
    Without, ``jobs`` > 1 worker processes correct the lines (see :func:`_run_in_processes`)."""
    answers = _Answers(entities, llm, settings or MatchSettings())
    try:
        if llm is None and jobs > 1:
            _run_in_processes(answers, stdin, stdout, jobs)
        else:
            for number, line in enumerate(stdin, 1):
                stdout.write(answers.answer(number, line))
        stdout.flush()
    finally:
        answers.close()


class _Answers:
    """One process's pipelines: the --entities or --campaign list's, and the lines' own lists, each prepared
    once and kept within bounds (biasing lists repeat across lines)."""

    def __init__(self, entities: list[EntityName] | None, llm: OpenAILLM | None, settings: MatchSettings) -> None:
        self.llm = llm
        self.settings = settings
        self.runner = asyncio.Runner() if llm is not None else None
        self.default = Pipeline(entities, settings=settings, llm=llm) if entities is not None else None
        self.cache: OrderedDict[tuple[str, ...], Pipeline] = OrderedDict()
        self.cached_names = 0

    def answer(self, number: int, line: str) -> str:
        """The output line (with its newline) for input line ``number``."""
        try:
            text, words, names = parse_line(line)
            pipeline = self.default if names is None else self._pipeline(names)
            if pipeline is None:
                raise LineError('no entities: give --entities or --campaign, or an "entities" list on the line')
            if self.runner is None:
                result = pipeline.correct_fast(text, words)
            else:
                result = self.runner.run(pipeline.correct(text, words))
            out: dict[str, Any] = result.model_dump(mode="json")
        except LineError as exc:
            out = {"line": number, "error": str(exc)}
        return json.dumps(out, ensure_ascii=False) + "\n"

    def _pipeline(self, names: tuple[str, ...]) -> Pipeline:
        # one list however spaced or repeated
        key = tuple(dict.fromkeys(name for n in names if (name := _visible(n).strip())))
        pipeline = self.cache.get(key)
        if pipeline is not None:
            self.cache.move_to_end(key)
            return pipeline
        pipeline = self.cache[key] = Pipeline(
            [EntityName(name=n) for n in key], settings=self.settings, llm=self.llm, lazy=True
        )
        self.cached_names += len(key)
        while len(self.cache) > 1 and (len(self.cache) > _CACHE_SIZE or self.cached_names > _CACHE_NAMES):
            self.cached_names -= len(self.cache.popitem(last=False)[0])
        return pipeline

    def close(self) -> None:
        if self.runner is not None and self.llm is not None:
            with self.runner:
                self.runner.run(self.llm.aclose())


#: The parent's pipelines, which worker processes inherit when they are forked (see ``_run_in_processes``).
_inherited: _Answers | None = None


def _run_in_processes(answers: _Answers, stdin: TextIO, stdout: TextIO, jobs: int) -> None:
    """Correct lines in ``jobs`` forked processes, answering in input order. Forked, the workers share the
    parent's loaded tables and prepared --entities index instead of building their own. Lines go out in
    batches of what has been read: a file's lines many at a time (handing each over alone cost more than
    correcting it), a harness's single line, written before its answer is awaited, alone and at once. A worker
    that dies (killed, out of memory) stops the run with an error instead of leaving it waiting."""
    global _inherited
    _inherited = answers
    context = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_worker_started, initargs=(os.getpid(),))
    # Bounded, as the loop of one process is: a long input is read as fast as it is answered, not into memory.
    answered: queue.Queue[Future[str] | None] = queue.Queue(maxsize=4 * jobs)
    try:
        # Fork the workers now, from this thread and before any other exists: a thread reading stdin holds its
        # lock, which a forked child waits on forever as it closes stdin; and the workers go when the thread
        # that forked them does.
        pool.submit(int).result()
        batches = _Batches(stdin, most=8 * jobs * _BATCH)
        failed: list[BaseException] = []

        def hand_over() -> None:
            try:
                for batch in batches:
                    answered.put(pool.submit(_answer_batch, batch))
            except BaseException as exc:  # a broken pool: raised below, after the answers before it
                failed.append(exc)
            finally:
                answered.put(None)

        threading.Thread(target=hand_over, daemon=True).start()
        while (future := answered.get()) is not None:
            stdout.write(future.result())
        for error in [*failed, batches.error]:
            if error is not None:
                raise error
    finally:
        pool.shutdown(cancel_futures=True)
        _inherited = None


def _worker_started(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent stops the workers
    if sys.platform == "linux":  # and a parent killed outright takes them with it (PR_SET_PDEATHSIG)
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)
    if os.getppid() != parent:  # it died before that was set
        os._exit(1)


def _answer_batch(batch: list[tuple[int, str]]) -> str:
    assert _inherited is not None, "workers are forked from run()"
    return "".join(_inherited.answer(number, line) for number, line in batch)


class _Batches:
    """Numbered lines of ``stdin``, read by a thread as they come (up to ``most`` ahead), handed out as batches
    of what has arrived (up to ``_BATCH`` lines)."""

    def __init__(self, stdin: TextIO, most: int) -> None:
        self.error: BaseException | None = None
        self._arrived: queue.Queue[tuple[int, str] | None] = queue.Queue(maxsize=most)
        threading.Thread(target=self._read, args=(stdin,), daemon=True).start()

    def _read(self, stdin: TextIO) -> None:
        try:
            for item in enumerate(stdin, 1):
                self._arrived.put(item)
        except BaseException as exc:  # raised again in the main thread, once the lines read are answered
            self.error = exc
        finally:
            self._arrived.put(None)

    def __iter__(self) -> Iterator[list[tuple[int, str]]]:
        while (item := self._arrived.get()) is not None:
            batch = [item]
            while len(batch) < _BATCH:
                try:
                    item = self._arrived.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    yield batch
                    return
                batch.append(item)
            yield batch


def parse_line(line: str) -> tuple[str, list[tuple[str, float | None]] | None, tuple[str, ...] | None]:
    """(text, recogniser words with confidences (None: unknown), the line's own entity names)."""
    try:
        line.encode("utf-8")
    except UnicodeEncodeError as exc:  # bytes read with surrogateescape
        raise LineError(f"not UTF-8 text (character {exc.start + 1})") from None
    # NFC, as the store keeps lines: a decomposed "ó" (o and ◌́) splits the word a name is matched in ("Mó" "rwen")
    stripped = unicodedata.normalize("NFC", line.strip())
    if not _JSON_OBJECT.match(stripped):
        return stripped, None, None
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise LineError(f"invalid JSON: {exc.msg} at column {exc.colno}") from exc
    except RecursionError:
        raise LineError("invalid JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise LineError("a JSON line must be an object")
    if "\\u" in stripped:  # an escape may be half a surrogate pair, which no UTF-8 output can hold
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise LineError(f"a \\u escape is half a surrogate pair (\\u{ord(exc.object[exc.start]):04x})") from None
    words = _words(data.get("words"))
    text = data.get("text")
    if text is None and words is not None:
        text = " ".join(w for w, _ in words)
    if not isinstance(text, str):
        raise LineError('"text" must be a string (or give "words")')
    names = data.get("entities")
    if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
        raise LineError('"entities" must be a list of names')
    if words is not None:
        words = [(unicodedata.normalize("NFC", w), c) for w, c in words]
    return unicodedata.normalize("NFC", text), words, tuple(names) if names is not None else None


def _words(value: Any) -> list[tuple[str, float | None]] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise LineError('"words" must be a list of {"word", "confidence"}')
    words: list[tuple[str, float | None]] = []
    for w in value:
        if not isinstance(w, dict) or not isinstance(w.get("word"), str):
            raise LineError('each of "words" needs a "word" string')
        confidence = w.get("confidence")  # null or left out: the recogniser did not say
        if confidence is not None and (
            isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 <= confidence <= 1
        ):
            raise LineError(f"confidence of {w['word']!r} must be a number from 0 to 1, or null")
        words.append((w["word"], None if confidence is None else float(confidence)))
    return words
