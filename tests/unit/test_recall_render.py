"""/recall and /recap render users' names as written: Discord markdown in a display name, a session title or an
entity's name is shown, never applied."""

from __future__ import annotations

from datetime import UTC, date, datetime

import discord

from cogs.recall import add_entity_field, cite, recap_embed
from memory.models import EntityType, Session, played_on, where_said, who_took_part_line
from memory.recall import HitLine, KnownFact, NamedEntity, RecallHit


def _hit(speaker: str, session: str) -> RecallHit:
    line = HitLine(
        entry_id=1, session_id=1, seq=1, speaker=speaker, text="I hit it.", start_s=62.0, ref=None, matched=True
    )
    return RecallHit(
        session_id=1,
        session=session,
        speakers=[speaker],
        start_s=62.0,
        end_s=None,
        text="I hit it.",
        score=1.0,
        refs=[],
        entry_ids=[1],
        matched=["fulltext"],
        lines=[line],
    )


def test_a_speakers_markdown_in_the_attribution_is_shown_not_applied() -> None:
    shown = cite(_hit("*Grog*", "__night__ one"))
    # the attribution line: the name and the title as typed, only our own bold around the name
    assert shown.endswith("\n— **\\*Grog\\***, \\_\\_night\\_\\_ one at 1:02")
    assert shown.startswith("> **\\*Grog\\*: I hit it.**")


def test_a_line_without_lines_falls_back_to_its_text_escaped() -> None:
    hit = _hit("Ana", "S1").model_copy(update={"lines": [], "text": "~~gone~~"})
    assert cite(hit).startswith("> \\~\\~gone\\~\\~\n")


def test_an_entity_field_shows_its_names_as_written() -> None:
    embed = discord.Embed()
    known = NamedEntity(
        name="__Vex__",
        type=EntityType.npc,
        secret=False,
        description="Sister of *Vax*.",
        facts=[KnownFact(text="__Vex__ —owns→ Trinket", words="__Vex__ owns Trinket", secret=False)],
    )
    add_entity_field(embed, known)
    assert embed.fields[0].name == "\\_\\_Vex\\_\\_"
    assert embed.fields[0].value == "Sister of \\*Vax\\*.\n\\_\\_Vex\\_\\_ owns Trinket"


def test_a_recap_quotes_speakers_and_its_title_as_written() -> None:
    session = Session(
        id=1,
        campaign_id=1,
        title="**Finale**",
        started_at=datetime(2026, 3, 2, 19, 30, tzinfo=UTC),
        ended_at=datetime(2026, 3, 2, 23, 0, tzinfo=UTC),
        summary="*Grog*: I rage.\nInvolved: __Pike__",
    )
    embed = recap_embed(session, None)
    assert embed.title == "Recap: \\*\\*Finale\\*\\*"
    assert embed.description == "\\*Grog\\*: I rage.\nInvolved: \\_\\_Pike\\_\\_"
    running = recap_embed(session.model_copy(update={"ended_at": None, "summary": None}), None)
    assert running.description == "*This session is still running; its recap is written when it ends.*"


def test_a_recap_of_a_session_given_only_its_day_says_that_day_alone() -> None:
    """`--started 2026-03-14` is stored at noon UTC: "12:00 UTC" is no time anyone played at."""
    day = Session(id=1, campaign_id=1, title="Night 1", started_at=played_on(date(2026, 3, 14)), date_only=True)
    assert recap_embed(day, None).footer.text == "started 2026-03-14"
    timed = day.model_copy(update={"started_at": datetime(2026, 3, 14, 19, 30, tzinfo=UTC), "date_only": False})
    assert recap_embed(timed, None).footer.text == "started 2026-03-14 19:30 UTC"
    # a session played from noon UTC: its time, which the DM gave
    noon = day.model_copy(update={"date_only": False})
    assert recap_embed(noon, None).footer.text == "started 2026-03-14 12:00 UTC"


def test_an_underscore_inside_a_word_is_left_as_typed() -> None:
    """Discord never styles "Pip_Quick": a name stays as typed, so a DM can copy it into /entity commands."""
    embed = discord.Embed()
    known = NamedEntity(
        name="Ember Key",
        type=EntityType.item,
        secret=False,
        description="_Opens_ a vault",
        facts=[KnownFact(text="Ember Key —owned_by→ Pip_Quick", words="Ember Key is owned by Pip_Quick", secret=False)],
    )
    add_entity_field(embed, known)
    assert embed.fields[0].value == "\\_Opens\\_ a vault\nEmber Key is owned by Pip_Quick"


def test_a_line_said_as_a_recording_starts_is_at_0_00_not_its_ref() -> None:
    """`recall`, `entity show` and `search` showed the first words of an imported recording as
    "Night 35 (audio:track_SAM.wav:0)", where every later line reads "Night 35 at 0:16": 0 s into speech is a time,
    unlike the 0 s of a transcript without times, which its ref finds ("C1E010 (turn 3)")."""
    said = _hit("Sam", "Night 35").lines[0].model_copy(update={"start_s": 0.0, "ref": "audio:track_SAM.wav:0"})
    hit = _hit("Sam", "Night 35").model_copy(update={"start_s": 0.0, "lines": [said]})
    assert hit.where() == "Night 35 at 0:00"
    assert cite(hit).endswith("— **Sam**, Night 35 at 0:00")
    assert where_said("Night 2", 0.0, "voice:42:0") == "Night 2 at 0:00"
    assert where_said("C1E010", 0.0, "turn 3") == "C1E010 (turn 3)"
    assert where_said("night", 0.0, "night.txt:2") == "night (night.txt:2)"


def test_who_took_part_in_an_event_fits_the_room_given_then_is_counted() -> None:
    """A card field holds 1,024 characters: a battle of a hundred names would push the rest of the card out."""
    names = [f"Fighter number {n}" for n in range(100)]
    line = who_took_part_line(names, 600)
    assert len(line) <= 600 and line.startswith("who took part (100): Fighter number 0, Fighter number 1, ")
    assert line.endswith(" more") and int(line.split(" and ")[-1].split()[0]) == 100 - 1 - line.count(", ")
    assert who_took_part_line(names[:2]) == "who took part (2): Fighter number 0, Fighter number 1"
    assert who_took_part_line([]) == ""
