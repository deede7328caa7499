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
    # an hour in, as citations say it: "[75:10]" was a time no other part of the product writes
    assert ContextLine(speaker="Ana", text="Hi.", start_s=4510.0).render() == "[1:15:10] Ana: Hi."


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
    past = "(a past session, not what is happening now)"
    assert f"## Last lines of Episode 110 {past}\n[turn 2411] Matt: Vex, you're up." in block(turn)
    timed = ContextLine(speaker="Ana", text="Hi.", start_s=0.0, ref="voice:42:0")
    assert f"## Last 5 minutes of Episode 110 {past}\n[0:00] Ana: Hi." in block(timed)


def test_the_block_always_says_whose_context_it_is_and_what_was_just_said() -> None:
    """An NPC with long aliases lost its whole "# name" line at a small budget, and at a medium one an import's
    attributes ("foundry_type: npc") kept their place while the scene's newest lines were all left out."""
    aliases = ["The Grey Archivist of the Northern Reaches", "Keeper of the Sevenfold Library", "Old Q"] * 3
    who = IdentitySnapshot(
        id=1,
        name="Quentillius",
        type=EntityType.npc,
        description="An old archmage who keeps the library of Vellium and remembers every book in it.",
        aliases=aliases,
        attributes={"foundry_type": "npc", "creature_type": "humanoid", "alignment": "neutral", "cr": "9"},
        secret=False,
        facts=["Quentillius —enemy_of→ Szass", "Quentillius —lives_in→ Vellium"],
        connected=[],
    )
    said = [
        ContextLine(speaker="Kael", text=f"Quentillius, what of the lich? ({n})", start_s=60.0 * n) for n in range(5)
    ]
    ctx = HotContext(entity=who, session_id=1, session="Night 5", live=True, minutes=5, lines=said, scene=[])
    for budget in (1, 10, 50, 80, 120, 800):
        text = ctx.text(budget)
        assert len(text) <= budget * 4
        if budget >= 10:
            assert text.startswith("# Quentillius (npc)"), (budget, text)
    assert ctx.text(50).splitlines()[0] == "# Quentillius (npc)"  # no alias fits: the name alone
    assert ctx.text(200).startswith("# Quentillius (npc), also called The Grey Archivist of the Northern Reaches, ")
    tight = ctx.text(80)
    assert "[4:00] Kael: Quentillius, what of the lich? (4)" in tight and "foundry_type" not in tight
    assert "## Attributes\n- foundry_type: npc\n- creature_type: humanoid" in ctx.text(800)
