"""A secret name said in any spelling a line may write it (no accents, decomposed, another apostrophe or none, a
hyphen as a space or nothing) is hidden from players in every reader: recall, recap, an entity's card and the MCP
tools, on the real embedded PostgreSQL."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from memory.models import EntityIn, EntityType, EntryIn, Visibility
from memory.store import CampaignMemory, Memory
from memory.text import folded

SECRETS = [("Devo'ssa", "npc"), ("Mórwen", "npc"), ("Ysolde d'Aubigné", "npc"), ("Vel-Ashkâr", "location")]
SECRETS += [("Mother-of-Thorns", "npc")]
#: Each says a secret name; what a player reads of each line keeps its first word only.
LINES = [
    "DM: Lanterns: Devossa and Devoʼssa meet Devo’ssa's spy.",
    "DM: Whispers of Morwen, MORWEN and " + unicodedata.normalize("NFD", "Mórwen's ring."),
    "DM: Riders leave Ysolde d'Aubigne for Vel Ashkar, then VelAshkar.",
    "DM: Laughter: the Mother of Thorns, and Mother–of–Thorns.",
]
#: What no player may read, in any case or accent.
GONE = ("devo", "ssa", "morwen", "aubigne", "ashkar", "thorns")


def _shows_none(text: str) -> bool:
    plain = folded(text)[0]
    return "[secret]" in text and not [w for w in GONE if w in plain]


def _setup(lk, tmp_path: Path) -> None:
    assert lk("campaign", "create", "Reeds").returncode == 0
    for name, type in SECRETS:
        assert lk("entity", "add", name, type, "--secret").returncode == 0
    assert lk("entity", "add", "Noticeboard", "item", "--description", " ".join(LINES)).returncode == 0
    (tmp_path / "night.txt").write_text("\n".join(LINES) + "\n")
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "Night 1", "--wait").returncode == 0


def test_a_player_recalls_no_spelling_of_a_secret_name(lk, tmp_path: Path) -> None:
    _setup(lk, tmp_path)
    for first in ("Lanterns", "Whispers", "Riders", "Laughter"):
        found = lk("recall", first, "--mode", "fulltext", "--as-player")
        assert found.returncode == 0 and first in found.stdout and _shows_none(found.stdout), found.stdout
    for guess in ("Morwen", "Vel Ashkar", "Ashkar", "Mother of Thorns", "Aubigne", "Devossa"):  # a guess: nothing
        assert "nothing found" in lk("recall", guess, "--mode", "fulltext", "--as-player").stdout, guess


def test_a_players_recap_shows_no_spelling_of_a_secret_name(lk, tmp_path: Path) -> None:
    _setup(lk, tmp_path)
    recap = lk("recap", "Night 1", "--as-player")
    assert recap.returncode == 0 and "Lanterns" in recap.stdout and _shows_none(recap.stdout), recap.stdout


def test_a_players_card_shows_no_spelling_of_a_secret_name(lk, tmp_path: Path) -> None:
    _setup(lk, tmp_path)
    card = lk("entity", "show", "Noticeboard", "--as-player")
    assert card.returncode == 0 and "Lanterns" in card.stdout and _shows_none(card.stdout), card.stdout


async def test_the_mcp_tools_show_a_player_no_spelling_of_a_secret_name(
    campaign: CampaignMemory, memory: Memory
) -> None:
    from memory.mcp_tools import CampaignTools

    for name, type in SECRETS:
        await campaign.graph.add_entity(EntityIn(name=name, type=EntityType(type), visibility=Visibility.secret))
    session = await campaign.log.start_session("Night 1")
    for line in LINES:
        speaker, text = line.split(": ", 1)
        await campaign.log.write(session.id, EntryIn(speaker=speaker, text=text))
    await campaign.log.end_session(session.id)
    await campaign.log.set_summary(session.id, " ".join(LINES))
    tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=False)
    log = [line.text for line in (await tools.recent_log(60, "Night 1")).lines]
    assert len(log) == len(LINES) and all(_shows_none(text) for text in log), log
    recap = (await tools.session_recap()).summary
    assert _shows_none(recap), recap
    assert (await tools.search_sessions("Morwen")).passages == []  # a guess at the name finds nothing


def test_a_player_recalls_no_secret_name_written_with_an_invisible_character(lk, tmp_path: Path) -> None:
    """The search drops a soft hyphen or a zero-width space, so the line is found: the name must be hidden too."""
    assert lk("campaign", "create", "Reeds").returncode == 0
    assert lk("entity", "add", "Mórwen", "npc", "--secret").returncode == 0
    (tmp_path / "s.txt").write_text("DM: Mor\u200bwen smiles. Mor\u00adwen laughs. Mórwen nods.\n")
    assert lk("ingest", str(tmp_path / "s.txt"), "--session", "Night 1", "--wait").returncode == 0
    found = lk("recall", "who smiles and laughs", "--as-player")
    assert found.returncode == 0 and "[secret] smiles. [secret] laughs. [secret] nods." in found.stdout, found.stdout
