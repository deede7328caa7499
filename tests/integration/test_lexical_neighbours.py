"""A line ranks as the hit it shows: its BM25 plus what the lines shown beside it add (the question's words it
lacks, each once), on the real embedded PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from memory import lexical
from memory.models import EntryIn
from memory.recall import recall
from memory.recall_rank import ALONE_FROM
from memory.store import CampaignMemory

FILLER = [("DM", f"The road winds on past farm {n} and its fences.") for n in range(30)]


async def said(campaign: CampaignMemory, title: str, lines: Sequence[tuple[str, str]]) -> list[int]:
    session = await campaign.log.start_session(title)
    written = await campaign.log.write_many(
        session.id, [EntryIn(speaker=who, text=text, start_s=float(n)) for n, (who, text) in enumerate(lines)]
    )
    return [e.id for e in written]


async def ranked(campaign: CampaignMemory, question: str, *, alone_from: int | None = ALONE_FROM) -> list[int]:
    query = await lexical.prepare(campaign.db, campaign.campaign_id, [(question, 1.0)])
    found = await lexical.candidates(campaign.db, campaign.campaign_id, query, limit=10, alone_from=alone_from)
    return [line.entry_id for line in found.lexical]


async def test_a_line_whose_neighbour_says_the_other_word_outranks_one_saying_its_word_alone(
    campaign: CampaignMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The question's words spread over a question and its reply: the reply is read with the question beside it,
    and the two outrank a line saying the question's rarest word alone."""
    asked = [("LIAM", "Where did you hide the dagger?"), ("MATT", "Under the cellar stairs.")]
    answer = await said(campaign, "One", [*FILLER[:4], *asked, *FILLER[4:6]])
    # each word in one more line, far from the others
    dagger, cellar = ("DM", "The smith sells a dagger, a sword and a shield."), ("DM", "The inn has a cellar of ale.")
    alone = await said(
        campaign, "Two", [*FILLER[6:10], ("DM", "The altar is cold."), *FILLER[10:13], dagger, *FILLER[13:16], cellar]
    )
    question = "the dagger in the cellar by the altar"
    assert lexical.NEIGHBOUR_WEIGHT > 0
    first, second, third, *_ = await ranked(campaign, question)
    assert {first, second} == {answer[4], answer[5]} and third == alone[4]
    hits = await recall(campaign, None, question, limit=1, mode="fulltext")
    assert {answer[4], answer[5]} <= {line.entry_id for line in hits[0].lines}  # the first hit reads both

    monkeypatch.setattr(lexical, "NEIGHBOUR_WEIGHT", 0.0)  # each line alone: the rarest word first
    assert (await ranked(campaign, question))[0] == alone[4]


async def test_a_neighbour_saying_the_same_word_adds_nothing(
    campaign: CampaignMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each of the question's words counts once in a hit: two lines saying "Delilah" do not beat the one that says
    it shortest."""
    ids = await said(
        campaign,
        "One",
        [*FILLER[:4], ("DM", "Delilah falls."), ("LIAM", "Who killed Delilah?"), *FILLER[4:20], ("DM", "Delilah?")],
    )
    with_neighbours = await ranked(campaign, "Delilah")
    monkeypatch.setattr(lexical, "NEIGHBOUR_WEIGHT", 0.0)
    assert with_neighbours == await ranked(campaign, "Delilah") and with_neighbours[0] == ids[-1]


async def test_a_line_shown_alone_counts_no_neighbour(campaign: CampaignMemory) -> None:
    """A line of ALONE_FROM words or more is shown without context: what its neighbours say is not read."""
    long = "The altar stands in the middle of the old chapel, " + "and the candles burn low around it " * 4
    assert ALONE_FROM is not None and len(long.split()) >= ALONE_FROM
    ids = await said(campaign, "One", [*FILLER[:4], ("LIAM", "Where is the dagger?"), ("MATT", long), *FILLER[4:8]])
    query = await lexical.prepare(campaign.db, campaign.campaign_id, [("the dagger and the altar", 1.0)])

    async def score(alone_from: int | None) -> float:
        found = await lexical.candidates(campaign.db, campaign.campaign_id, query, limit=10, alone_from=alone_from)
        return next(line.score for line in found.lexical if line.entry_id == ids[5])

    assert await score(ALONE_FROM) < await score(None)  # None: every line is read with its neighbours


async def test_a_line_saying_the_questions_rarest_word_outranks_a_short_one_saying_its_commonest(
    campaign: CampaignMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BM25 adds up its terms, so "Come on." (two words, the common "come") beat a narration saying "festival";
    scaled by the share of the question each covers, the narration comes first."""
    narration = (
        "The innkeeper wipes the bar and tells you the whole town is busy hanging lanterns, because the "
        "Winter's Crest festival begins in two weeks and the mayor wants the square ready."
    )
    ids = await said(
        campaign,
        "One",
        [*FILLER[:6], ("LAURA", "Come on."), *FILLER[6:12], ("DM", narration), *FILLER[12:18], ("SAM", "Come on!")],
    )
    later = await said(campaign, "Two", [*FILLER[18:22], ("TRAVIS", "Come on, come on."), ("LIAM", "They come back.")])
    question = "what festival is coming up?"
    assert lexical.COVERAGE_POWER > 0
    assert (await ranked(campaign, question))[0] == ids[13]

    monkeypatch.setattr(lexical, "COVERAGE_POWER", 0.0)  # BM25 alone: a short line of the common word first
    monkeypatch.setattr(lexical, "LENGTH_FLOOR", 0)
    assert (await ranked(campaign, question))[0] in {ids[6], ids[-1], later[4], later[5]}


async def test_a_long_alias_counts_as_the_name_it_stands_for(campaign: CampaignMemory) -> None:
    """A question naming Percy is expanded with his full name. Said whole, its seven rare words count as one name,
    not seven of the question's words: the line about the smoke in his gun comes first, not his introduction."""
    full = "Percival Fredrickstein von Musel Klossowski de Rolo"
    smoke = ("DM", "The smoke pours from Percy's gun and takes the shape of a figure.")
    ids = await said(
        campaign, "One", [*FILLER[:6], ("TALIESIN", f"{full}, at your service."), *FILLER[6:12], smoke, *FILLER[12:18]]
    )
    await said(campaign, "Two", [*FILLER[18:22], ("DM", "Smoke rises from the chimney.")])
    question = "what was the smoke creature in Percy's gun called?"
    query = await lexical.prepare(campaign.db, campaign.campaign_id, [(question, 1.0), ("Percy", 0.7), (full, 0.7)])
    found = await lexical.candidates(campaign.db, campaign.campaign_id, query, limit=10, alone_from=ALONE_FROM)
    ranked = [line.entry_id for line in found.lexical]
    assert ranked[0] == ids[13] and ranked[-1] == ids[6]
