"""The hot context's lines as an NPC agent's prompt reads them: where each was said."""

from __future__ import annotations

from memory.context import ContextLine, HotContext, IdentitySnapshot
from memory.models import EntityType


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


def test_an_untimed_sessions_lines_are_not_called_its_last_minutes() -> None:
    """All of an untimed import's lines are at 0:00, so inside any window: its last 200 lines were titled "Last 5
    minutes of Episode 110"."""
    who = IdentitySnapshot(
        id=1, name="Kevdak", type=EntityType.npc, description="", aliases=[], secret=False, facts=[], connected=[]
    )

    def block(*lines: ContextLine) -> str:
        ctx = HotContext(
            entity=who, session_id=1, session="Episode 110", live=False, minutes=5, lines=list(lines), scene=[]
        )
        return ctx.text(800)

    turn = ContextLine(speaker="Matt", text="Vex, you're up.", start_s=0.0, ref="turn 2411")
    assert "## Last lines of Episode 110\n[turn 2411] Matt: Vex, you're up." in block(turn)
    timed = ContextLine(speaker="Ana", text="Hi.", start_s=0.0, ref="voice:42:0")
    assert "## Last 5 minutes of Episode 110\n[0:00] Ana: Hi." in block(timed)
