"""The hot context's lines as an NPC agent's prompt reads them: where each was said."""

from __future__ import annotations

from memory.context import ContextLine


def test_an_untimed_transcripts_lines_say_their_turn_not_zero() -> None:
    """A DM months in asked the hot context of an imported CRD3 episode: every line read "[0:00] Matt: …"."""
    crd3 = ContextLine(speaker="Matt", text="Vex, you're up.", start_s=0.0, ref="turn 2411")
    assert crd3.render() == "[turn 2411] Matt: Vex, you're up."
    untimed = ContextLine(speaker="Ana", text="Hi.", start_s=0.0, ref="night.txt:2")
    assert untimed.render() == "[night.txt:2] Ana: Hi."
    # speech heard has its time, 0:00 included; so has a line with a time or without a ref
    assert ContextLine(speaker="Ana", text="Hi.", start_s=0.0, ref="voice:42:0").render() == "[0:00] Ana: Hi."
    assert ContextLine(speaker="Ana", text="Hi.", start_s=75.0, ref="turn 3").render() == "[1:15] Ana: Hi."
    assert ContextLine(speaker="Ana", text="Hi.", start_s=0.0).render() == "[0:00] Ana: Hi."
