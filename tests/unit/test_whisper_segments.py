"""What WhisperSTT keeps of faster-whisper's segments: no dots alone, nothing invented after the speech."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from memory.providers.stt import WhisperSTT, drop_hallucinated_ending


def word(text: str, start: float, end: float, probability: float = 0.9) -> SimpleNamespace:
    return SimpleNamespace(word=" " + text, start=start, end=end, probability=probability)


def segment(text: str, words: list[SimpleNamespace], *, seek: int = 0, avg_logprob: float = -0.3) -> SimpleNamespace:
    return SimpleNamespace(
        text=" " + text, words=words, start=words[0].start, end=words[-1].end, seek=seek, avg_logprob=avg_logprob
    )


SPEECH = segment(
    "Everyone gains one level.",
    [word("Everyone", 0.0, 0.66), word("gains", 0.66, 1.16), word("one", 1.16, 1.46), word("level.", 1.46, 1.84)],
)


class FakeModel:
    def __init__(self, segments: list[SimpleNamespace]) -> None:
        self.segments = segments

    def transcribe(self, pcm: np.ndarray, **options: Any) -> tuple[list[SimpleNamespace], SimpleNamespace]:
        return self.segments, SimpleNamespace(language="en")


def transcribe(segments: list[SimpleNamespace], seconds: float = 2.4) -> str:
    stt = WhisperSTT("tiny.en")
    stt._model = FakeModel(segments)  # type: ignore[assignment]
    try:
        return stt.transcribe_sync(np.zeros(int(seconds * 16_000), dtype=np.float32)).text
    finally:
        stt.close()


def test_a_segment_of_dots_alone_is_not_joined_to_the_line() -> None:
    dots = SimpleNamespace(text=" . . .", words=[], start=1.9, end=2.3, seek=0, avg_logprob=-0.5)
    assert transcribe([SPEECH, dots]) == "Everyone gains one level."


def test_words_squeezed_into_the_padding_after_the_speech_are_dropped() -> None:
    """base's tail on a tester's line: the leftover 0.5 s read as a window of its own, every word ~0 s long."""
    tail = segment(
        "I urge you to subscribe to the channel.",
        [word("I", 1.84, 1.98, 0.08), word("urge", 1.98, 2.08, 0.15)]
        + [word(w, 2.38, 2.38, 0.4) for w in ("you", "to", "subscribe", "to", "the", "channel.")],
        seek=184,
        avg_logprob=-1.2,
    )
    assert transcribe([SPEECH, tail]) == "Everyone gains one level."


def test_a_failed_decode_after_the_speech_is_dropped_even_with_plausible_timings() -> None:
    tail = segment("I don't...", [word("I", 1.84, 2.04, 0.3), word("don't...", 2.04, 2.38, 0.3)], seek=184)
    tail.avg_logprob = -1.65  # every temperature failed Whisper's own check; faster-whisper kept the best
    assert drop_hallucinated_ending([SPEECH, tail], 2.4, 1.0) == [SPEECH]


def test_real_words_at_the_end_are_kept() -> None:
    # a second segment in the same window, decoded well: speech, however short
    more = segment("Roll.", [word("Roll.", 1.9, 2.3, 0.1)])
    assert drop_hallucinated_ending([SPEECH, more], 2.4, 1.0) == [SPEECH, more]
    # a leftover window that decoded well with real timings
    rest = segment("Roll your dice.", [word("Roll", 1.9, 2.1), word("your", 2.1, 2.2), word("dice.", 2.2, 2.38)])
    rest.seek = 184
    assert drop_hallucinated_ending([SPEECH, rest], 2.4, 1.0) == [SPEECH, rest]
    # a whole line of doubtful names is never dropped: nothing came before it
    names = segment("Vorlag Ashgrave.", [word("Vorlag", 0.0, 0.05, 0.01), word("Ashgrave.", 0.05, 0.1, 0.01)])
    assert drop_hallucinated_ending([names], 0.5, 1.0) == [names]
