"""Recall ranks lines: BM25 over the campaign's lines (counts kept by triggers), the graph's names and aliases,
session and speaker filters, table talk below the story — on the real embedded PostgreSQL."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from cogs.recall import cite, cited
from memory import lexical
from memory.errors import InvalidInputError, NotFoundError
from memory.mentions import index_lines
from memory.models import EntityIn, EntityType, EntryIn, Provenance, Visibility
from memory.recall import MEANING_ALONE, MEANING_BESIDE_WORDS, NEAR_MENTION, named_entities, recall, recap_asked
from memory.recall_rank import ALONE_FROM, PREVIEW_WORDS
from memory.semantic import LineVectorIn
from memory.store import CampaignMemory, Memory


async def said(
    campaign: CampaignMemory, title: str, lines: Sequence[tuple[str, str]], *, ended: bool = True
) -> list[int]:
    session = await campaign.log.start_session(title)
    written = await campaign.log.write_many(
        session.id, [EntryIn(speaker=who, text=text, start_s=float(n)) for n, (who, text) in enumerate(lines)]
    )
    if ended:
        await campaign.log.end_session(session.id)
    return [e.id for e in written]


FILLER = [("DM", f"The road winds on past farm {n} and its fences.") for n in range(30)]
WORDS = "tall grim silent weary young old proud stern quiet brave bold loyal".split()


async def test_rare_words_beat_a_line_that_only_says_a_common_name(campaign: CampaignMemory) -> None:
    """ts_rank_cd has no IDF: "Grog!" tied with the answer and the earliest session won. BM25 weighs the rare
    words of the question."""
    await said(campaign, "One", [("TRAVIS", "Grog!"), *[("DM", f"Grog swings at goblin {n}.") for n in range(40)]])
    ids = await said(
        campaign, "Two", [*FILLER[:5], ("DM", "Grog buries the obsidian dagger under the willow."), *FILLER[5:10]]
    )
    (hit,) = await recall(campaign, None, "Where did Grog bury the obsidian dagger?", limit=1, mode="fulltext")
    assert [line.entry_id for line in hit.lines if line.matched] == [ids[5]]
    assert hit.session == "Two" and hit.matched == ["fulltext"]


async def test_a_hit_is_its_line_with_a_line_of_context_either_side(campaign: CampaignMemory) -> None:
    ids = await said(campaign, "One", [*FILLER[:4], ("MATT", "Winter's Crest is in three days."), *FILLER[4:8]])
    (hit,) = await recall(campaign, None, "Winter's Crest", limit=1, mode="fulltext")
    assert [line.entry_id for line in hit.lines] == ids[3:6]
    assert [line.matched for line in hit.lines] == [False, True, False]
    assert hit.entry_ids == ids[3:6] and hit.speakers == ["DM", "MATT"]


async def test_a_long_line_is_shown_whole_and_alone(campaign: CampaignMemory) -> None:
    """A line of ALONE_FROM words or more says enough by itself: its neighbours would only spend the reading."""
    long = "The festival of Winter's Crest begins in three days, " + "and the whole city prepares " * 30 + "for it."
    assert ALONE_FROM is not None and len(long.split()) >= ALONE_FROM
    ids = await said(campaign, "One", [*FILLER[:4], ("MATT", long), *FILLER[4:8]])
    (hit,) = await recall(campaign, None, "Winter's Crest", limit=1, mode="fulltext")
    assert [line.entry_id for line in hit.lines] == [ids[4]] and hit.lines[0].matched
    assert hit.lines[0].text == long  # whole, never cut
    assert hit.entry_ids == [ids[4]] and hit.speakers == ["MATT"]
    assert long in cite(hit)
    # an embed clips at its limit between words, with "…"
    short = cited([hit], str, 200)
    assert len(short) <= 200 and short.endswith("…") and not short[:-1].endswith(" ")


async def test_a_long_line_said_again_in_another_session_is_one_hit(campaign: CampaignMemory) -> None:
    """A character's intro said each session filled four of five hits ("when did we first meet Kevdak?")."""
    intro = "Beaten bloody and banished by the herd leader, his uncle Kevdak, Grog was abandoned and left to die. "
    intro += "Grog wanders the land with his friends, looking for a fight and a drink. " * 3
    one = await said(campaign, "One", [*FILLER[:4], ("TRAVIS", intro), *FILLER[4:8]])
    two = await said(campaign, "Two", [*FILLER[:4], ("TRAVIS", intro.replace("uncle", "Uncle")), *FILLER[4:8]])
    three = await said(campaign, "Three", [*FILLER[:4], ("DM", "Kevdak waits in the herd's camp."), *FILLER[4:8]])
    hits = await recall(campaign, None, "Kevdak", limit=5, mode="fulltext")
    shown = {i for h in hits for i in h.entry_ids}
    assert len({one[4], two[4]} & shown) == 1 and three[4] in shown


async def test_a_long_narration_scores_and_shows_by_its_best_passage(campaign: CampaignMemory) -> None:
    """Whole, a long narration holding the question's rare word lost to "Come on." saying its common one: BM25
    divided the rare word's weight by the narration's length. Its best passage scores as a line of a passage's
    length, and is what the DM reads: the sentences around it, "…" where the line goes on, ``text`` whole."""
    narration = (
        " ".join(f"The {w} guards of the keep watch the gates while the rain falls on the old stones." for w in WORDS)
        + " In two weeks the Winter's Crest festival begins here in Whitestone. "
        + " ".join(f"Torches burn along the {w} walls as the night comes on and the town sleeps." for w in WORDS)
    )
    assert len(narration.split()) > 300
    talk = [("LAURA", "Come on."), ("TRAVIS", "Come on, come on!"), ("SAM", "Oh, come on.")] * 3
    ids = await said(campaign, "One", [*FILLER[:10], *talk, *FILLER[10:20], ("MATT", narration), *FILLER[20:]])
    hits = await recall(campaign, None, "what festival is coming up?", limit=3, mode="fulltext")
    (line,) = hits[0].answering()
    assert line.entry_id == ids[29] and line.text == narration
    # the window holds "festival" and, a sentence on, "comes": both sentences, whole
    assert line.shown() == (
        "…In two weeks the Winter's Crest festival begins here in Whitestone. "
        "Torches burn along the tall walls as the night comes on and the town sleeps.…"
    )
    assert line.shown() in cite(hits[0]) and narration not in cite(hits[0])


class _FestivalEmbedder:
    """Meaning as one axis: a text about a festival or celebration points one way, any other the other way."""

    model_name, dim = "festival", 384

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [
            [1.0, 0.0, *([0.0] * 382)] if "festival" in t or "celebration" in t else [0.0, 1.0, *([0.0] * 382)]
            for t in texts
        ]


async def test_a_long_line_found_by_meaning_alone_shows_its_sentences_nearest_the_question(
    campaign: CampaignMemory,
) -> None:
    """A narration that no word of the question found was shown whole (hundreds of words): it shows its sentence
    nearest the question's meaning, with the next one to make a passage, "…" where it goes on; ``text`` whole."""
    narration = (
        " ".join(f"The {w} guards of the keep watch the gates while the rain falls on the old stones." for w in WORDS)
        + " In two weeks the Winter's Crest festival begins here in Whitestone. "
        + " ".join(f"Torches burn along the {w} walls as the night comes on and the town sleeps." for w in WORDS)
    )
    ids = await said(campaign, "One", [*FILLER[:5], ("MATT", narration), *FILLER[5:10]])
    session_id = (await campaign.log.sessions())[0].id
    embedder = _FestivalEmbedder()
    vectors = await embedder.embed([text for _, text in [*FILLER[:5], ("MATT", narration), *FILLER[5:10]]])
    await campaign.semantic.upsert_lines(
        [LineVectorIn(i, session_id, "x", v) for i, v in zip(ids, vectors, strict=True)]
    )
    hit = (await recall(campaign, embedder, "when is the celebration?", limit=3))[0]
    (line,) = [line for line in hit.lines if line.entry_id == ids[5]]
    assert line.matched and line.text == narration and hit.matched == ["vector"]
    assert line.shown() == (
        "…In two weeks the Winter's Crest festival begins here in Whitestone. "
        "Torches burn along the tall walls as the night comes on and the town sleeps.…"
    )


async def test_two_long_lines_showing_the_same_sentence_are_one_hit(campaign: CampaignMemory) -> None:
    """Scanlan's intro, cut differently in two sessions (0.79 alike whole), was shown twice: the sentence nearest
    the question was the same in both. A repeat is told by what is shown, once that sentence is chosen."""
    festival = " In two weeks the Winter's Crest festival begins in Whitestone, with music and lanterns on the walls. "
    one = " ".join(f"The {w} guards of the keep watch the gates while the rain falls." for w in WORDS) + festival
    two = festival + " ".join(f"A {w} bard sings of kings and of ships lost at sea long ago." for w in WORDS)
    embedder = _FestivalEmbedder()
    long: list[int] = []
    for title, text in (("One", one), ("Two", two)):
        lines = [*FILLER[:5], ("MATT", text), *FILLER[5:10]]
        ids = await said(campaign, title, lines)
        vectors = await embedder.embed([t for _, t in lines])
        session_id = (await campaign.log.sessions())[-1].id
        await campaign.semantic.upsert_lines(
            [LineVectorIn(i, session_id, "x", v) for i, v in zip(ids, vectors, strict=True)]
        )
        long.append(ids[5])
    hits = await recall(campaign, embedder, "when is the celebration?", limit=3)
    shown = [line for hit in hits for line in hit.answering() if line.entry_id in long]
    assert len(shown) == 1, [line.shown() for line in shown]
    assert "Winter's Crest festival" in shown[0].shown()


class _SayEmbedder:
    """Meaning as two axes: saying something, and a festival; a text about both points between them."""

    model_name, dim = "say", 384

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        def one(t: str) -> list[float]:
            axes = [float("say" in t), float("festival" in t)]
            norm = math.hypot(*axes) or 1.0
            return [axes[0] / norm, axes[1] / norm, float(not any(axes)), *([0.0] * 381)]

        return [one(t) for t in texts]


async def test_a_filtered_question_is_searched_by_meaning_for_its_topic_alone(campaign: CampaignMemory) -> None:
    """ "What did Vax say about the Briarwoods?" was padded with "Vax says, all right." and "Vax is falling.": its
    vector was the whole question's, near any line of his saying something. The filter's words are no meaning."""
    lines = [*FILLER[:5], ("ANA", "The festival starts tomorrow at dawn."), *FILLER[5:10]]
    lines += [("ANA", "I say we go now, before the others wake."), *FILLER[10:15]]
    ids = await said(campaign, "One", lines)
    embedder = _SayEmbedder()
    session_id = (await campaign.log.sessions())[0].id
    vectors = await embedder.embed([text for _, text in lines])
    await campaign.semantic.upsert_lines(
        [LineVectorIn(i, session_id, "x", v) for i, v in zip(ids, vectors, strict=True)]
    )
    hits = await recall(campaign, embedder, "what did Ana say about the festival?", limit=3)
    assert [[line.entry_id for line in hit.answering()] for hit in hits] == [[ids[5]]]


async def test_an_irregular_plural_finds_its_singular(campaign: CampaignMemory) -> None:
    """ "What did Scanlan say about the dwarves" found his intro by meaning and no line saying "dwarf"."""
    ids = await said(campaign, "One", [*FILLER[:5], ("SAM", "The dwarf is a feminist."), *FILLER[5:10]])
    (hit,) = await recall(campaign, None, "what about the dwarves?", limit=1, mode="fulltext")
    assert [line.entry_id for line in hit.answering()] == [ids[5]] and hit.matched == ["fulltext"]


async def test_an_irregular_verb_finds_its_other_forms(campaign: CampaignMemory) -> None:
    """ "Who died?" found nothing: the stemmer keeps "died" apart from "dead" and "death" (and "gave" from
    "given", "slain" from "killed"); searchable() writes each as its base verb. "The second session": Session 2."""
    await said(campaign, "Night 1", [*FILLER[:5], ("DM", "Sister Ottilie is dead."), *FILLER[5:10]])
    ids = await said(
        campaign,
        "Night 2",
        [*FILLER[:5], ("DM", "Brother Oz is dead."), *FILLER[5:9], ("DM", "The wyrm was slain."), *FILLER[9:12]],
    )
    hits = await recall(campaign, None, "who died in the second session?", limit=5, mode="fulltext")
    assert [line.entry_id for line in hits[0].answering()] == [ids[5]] and {h.session for h in hits} == {"Night 2"}
    (hit,) = await recall(campaign, None, "who killed the wyrm?", limit=1, mode="fulltext")
    assert [line.entry_id for line in hit.answering()] == [ids[10]]
    # a quoted phrase of `search` is still matched as written
    assert sorted(h.text for h in await campaign.log.search('"is dead"')) == [
        "Brother Oz is dead.",
        "Sister Ottilie is dead.",
    ]
    assert await campaign.log.search('"is die"') == []


async def test_a_session_is_asked_for_by_its_title(campaign: CampaignMemory) -> None:
    """ "Who fell in Night 2?" searched "night" and "2": a line of Night 1 saying "night" came first."""
    await said(campaign, "Night 1", [*FILLER[:5], ("DM", "Night falls. Sister Ottilie falls into the river.")])
    ids = await said(campaign, "Night 2", [*FILLER[:5], ("DM", "Brother Oz falls from the bridge."), *FILLER[5:9]])
    hits = await recall(campaign, None, "who fell in Night 2?", limit=5, mode="fulltext")
    assert [line.entry_id for line in hits[0].answering()] == [ids[5]] and {h.session for h in hits} == {"Night 2"}
    assert (await recap_asked(campaign, "what happened last time?")) is not None


async def test_where_did_we_leave_off_is_the_last_sessions_last_scene(campaign: CampaignMemory) -> None:
    """ "Where did we leave off?" showed lines saying "leave"; it is the last session's recap and, first among the
    hits, its last scene: the last two things the DM told and the table's lines between, the after-show aside."""
    await said(campaign, "Night 1", [*FILLER[:5], ("DM", "We leave off the boat at the harbour of Oz.")])
    ids = await said(
        campaign,
        "Night 2",
        [
            *FILLER[:8],
            ("DM", 'A scream echoes down the mineshaft: "No! My baby!"'),
            ("PRIYA", "We have to go, now."),
            ("SAM", "I charge ahead."),
            ("DM", "You rush down the tunnel into the dark."),
            ("DM", "And we'll pick up on that next week."),
            ("DM", "Thanks for watching, everyone, see you next week."),
        ],
    )
    for question in ("Where did we leave off?", "where were we", "remind me where we stopped"):
        assert (await recap_asked(campaign, question)) is not None, question
        (hit,) = await recall(campaign, None, question, limit=3, mode="fulltext")
        assert hit.session == "Night 2" and hit.matched == ["last scene"], question
        assert [line.entry_id for line in hit.answering()] == ids[8:12], question


async def test_the_last_scene_keeps_the_dms_last_line_whatever_the_table_says_after(campaign: CampaignMemory) -> None:
    """12 players' lines after the DM's last two cut both from a 10-line scene: "where did we leave off?" showed the
    table's chatter without the cliffhanger it answered."""
    chatter = [
        (("TRAVIS", "LAURA", "SAM")[n % 3], f"I poke at crate {n} and grumble about the weather.") for n in range(12)
    ]
    ids = await said(
        campaign,
        "Night 1",
        [
            *FILLER[:4],
            ("DM", "The Slayer's Take guildhall looms over the market square."),
            ("DM", "A hooded figure slips a note into Grog's hand and vanishes."),
            *chatter,
        ],
    )
    (hit,) = await recall(campaign, None, "where did we leave off?", limit=3, mode="fulltext")
    assert hit.matched == ["last scene"] and [line.entry_id for line in hit.answering()] == ids[5:], hit


async def test_the_dm_is_each_sessions_narrator(campaign: CampaignMemory) -> None:
    """ "What did the DM say about the bell?" took "the DM" for a name no one has and showed the players' lines;
    the DM of Night 2 is Marcus (he says the most), a player of Night 1."""
    dm = [("DM", f"The road winds on past farm {n} and its fences, and the fen beyond.") for n in range(10)]
    one = await said(campaign, "Night 1", [*dm[:5], ("DM", "The bell rings."), ("Marcus", "I hate that bell."), *dm])
    marcus = [("Marcus", text) for _, text in dm]
    two = await said(campaign, "Night 2", [*marcus, ("Marcus", "The bell cracks."), ("Dana", "bell bell bell")])
    for question in ("what did the DM say about the bell?", "what did the GM say about the bell"):
        hits = await recall(campaign, None, question, limit=5, mode="fulltext")
        assert {line.entry_id for h in hits for line in h.answering()} == {one[5], two[10]}, question


async def test_each_sessions_narrator_is_kept_and_follows_its_lines(memory: Memory, campaign: CampaignMemory) -> None:
    """ "What did the DM say" summed every line's words by session and speaker at each question (150,000 lines at
    100 sessions); the words are kept per session and speaker as the lines are written, revised or deleted, and a
    question reads none of the lines. Another campaign's sessions, speakers of the same names, change nothing."""
    other = memory.campaign((await memory.campaigns().create("Other Campaign")).id)
    await said(other, "Night 1", [("Dana", "The fen is dark and cold and very wide tonight.")] * 20)
    one = await said(campaign, "Night 1", [("Marcus", "The road winds on past the farm."), ("Dana", "I wave.")])
    (night,) = await campaign.log.sessions()
    assert await campaign.log.narrators() == {night.id: "Marcus"}
    # more of the session imported: Dana says the most now
    more = await campaign.log.write_many(night.id, [EntryIn(speaker="Dana", text="I sing of the fen all night.")])
    assert await campaign.log.narrators() == {night.id: "Dana"}
    await campaign.log.revise(more[0].id, "Hm.", [])  # a correction's new text
    assert await campaign.log.narrators() == {night.id: "Marcus"}
    await campaign.log.revise(one[0], "Go.", [])
    assert await campaign.log.narrators() == {night.id: "Dana"}
    # a recorded session: the user who ran it narrates, whatever they are called
    rec = await campaign.log.start_session("Night 2")
    await campaign.log.write_many(
        rec.id,
        [
            EntryIn(speaker="Marcus", speaker_id="100", text="Rain."),
            EntryIn(speaker="DM", speaker_id="200", text="I am the DM tonight, I say, and I say a lot."),
        ],
    )
    assert (await campaign.log.narrators())[rec.id] == "DM"
    await campaign.log.set_dm(rec.id, "100")
    assert (await campaign.log.narrators())[rec.id] == "Marcus"
    await campaign.delete_session("Night 1")
    assert await campaign.log.narrators() == {rec.id: "Marcus"}
    assert list((await other.log.narrators()).values()) == ["Dana"]
    read = "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables"
    async with campaign.transaction() as tx:
        before = await tx.db.fetchval(f"{read} WHERE relid = 'session_entries'::regclass")
        await tx.log.narrators()
        assert await tx.db.fetchval(f"{read} WHERE relid = 'session_entries'::regclass") == before


async def test_what_an_npc_said_is_what_the_dm_voiced_her_saying(campaign: CampaignMemory) -> None:
    """A home DM marks a voice at the line's start ("(as Mira) ...", "I'm Quillon now."): "what did Mira say?"
    showed the narration naming her first."""
    await campaign.graph.add_entity(EntityIn(name="Mira Sallowmere", type=EntityType.npc, aliases=["Mira"]))
    await campaign.graph.add_entity(EntityIn(name="Quillon Ashgrove", type=EntityType.npc))
    ids = await said(
        campaign,
        "Night 1",
        [
            ("DM", "Mira nods."),
            *FILLER[:4],
            ("DM", "(as Mira) Because things in the water follow a light, dwarf. That is why we row at noon."),
            *FILLER[4:8],
            ("DM", "I'm Quillon now. Thank you, Brother Ozzick. The lantern was never a ward, it is a beacon."),
            *FILLER[8:12],
            ("DM", "Quillon smiles at the lantern."),
            *FILLER[12:16],
        ],
    )
    for question, line in (("what did Mira say?", ids[5]), ("what did Quillon say about the lantern?", ids[10])):
        (first, *_) = await recall(campaign, None, question, limit=3, mode="fulltext")
        assert [line.entry_id for line in first.lines if line.matched] == [line], question


async def test_what_an_npc_said_is_every_line_the_dm_says_in_her_voice(campaign: CampaignMemory) -> None:
    """A DM marks a voice once and goes on in it, the players answering between: "what did Quillon say about the
    lantern?" missed "I betrayed no one. … The lantern was never a ward." two lines after "I'm Quillon now."."""
    await campaign.graph.add_entity(EntityIn(name="Quillon Ashgrove", type=EntityType.npc))
    table = [("Dana", "Wait, what?"), ("Priya", "Oh no."), ("Rob", "Hmm.")]
    quillon = [
        ("Marcus", "I'm Quillon now. Thank you, Brother Ozzick. You were cheap."),
        ("Rob", "Oz says, you killed her."),
        *table,
        ("Marcus", "I betrayed no one. I serve the Tidemother. The lantern was never a ward, it is a beacon."),
        *table,
        ("Marcus", "The lantern in your hand is getting colder. You hear singing."),  # narration: not his
        *table,
        ("Marcus", "I told you, the lantern is a beacon."),  # the voice ended there: the DM's
        *table,
        ("Rob", "(as Quillon) I love my lantern so much."),  # a player's joke
    ]
    filler = [("Marcus", text) for _, text in FILLER]  # the DM of Night 3 (he says the most)
    ids = await said(campaign, "Night 3", [*filler, *quillon, *filler[:4]])
    hits = await recall(campaign, None, "what did Quillon say about the lantern?", limit=3, mode="fulltext")
    assert [line.entry_id for line in hits[0].answering()] == [ids[35]]
    hits = await recall(campaign, None, "what did Quillon say?", limit=3, mode="fulltext")
    assert [hit.answering()[0].entry_id for hit in hits[:2]] == [ids[30], ids[35]]


async def test_the_lines_after_a_voice_marker_are_read_by_their_place(campaign: CampaignMemory) -> None:
    """The lines after each marked line ("(as Grog) ...") were joined to every line of the campaign: at 60 sessions,
    150,000 read for 500 (70 ms of "what did Grog say about the dragon"). Read by their session and place."""
    speakers = ["DM", "TRAVIS", "LAURA", "SAM"]
    for night in range(10):
        session = await campaign.log.start_session(f"Night {night}")
        lines = [
            "I'm Grog now, and I want a drink." if n % 25 == 0 else f"I'm on the road past farm {n}."
            for n in range(3000)
        ]
        await campaign.db.execute(
            """
            INSERT INTO session_entries (campaign_id, session_id, seq, speaker, raw_text, text)
            SELECT $1, $2, n, ($4::text[])[n % 4 + 1], t, t FROM unnest($3::text[]) WITH ORDINALITY AS l(t, n)
            """,
            campaign.campaign_id,
            session.id,
            lines,
            speakers,
        )
    await campaign.db.execute("ANALYZE session_entries")
    read = "SELECT seq_tup_read + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables WHERE relid = $1::regclass"
    async with campaign.transaction() as tx:
        before = await tx.db.fetchval(read, "session_entries")
        voiced = await tx.log.voicing(["grog"], None, reach=20, limit=100)
        lines_read = await tx.db.fetchval(read, "session_entries") - before
    assert len(voiced) == 100 and all(len(after) == 6 for after in voiced)  # its speaker's lines of the 20 after
    assert lines_read < 5_000  # the lines saying Grog (1,200) and the 20 after each of the 100 marked, of 30,000


async def test_neighbouring_lines_that_score_are_one_hit(campaign: CampaignMemory) -> None:
    ids = await said(
        campaign,
        "One",
        [*FILLER[:4], ("DM", "Delilah falls."), ("LIAM", "Who killed Delilah?"), *FILLER[4:20], ("DM", "Delilah?")],
    )
    hits = await recall(campaign, None, "Delilah", limit=5, mode="fulltext")
    assert len(hits) == 2  # the short "Delilah?" first (BM25 prefers the shorter line), then the two together
    assert [line.entry_id for line in hits[0].lines if line.matched] == [ids[-1]]
    assert [line.entry_id for line in hits[1].lines] == ids[4:7]  # a line joining a hit brings no more context
    assert [line.entry_id for line in hits[1].lines if line.matched] == ids[4:6]


async def test_an_alias_expands_the_query(campaign: CampaignMemory) -> None:
    await campaign.graph.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc, aliases=["the Ember Wyrm"]))
    ids = await said(campaign, "One", [*FILLER[:5], ("DM", "Eldrinax sleeps beneath the lake."), *FILLER[5:9]])
    (hit,) = await recall(campaign, None, "where does the ember wyrm sleep", limit=1, mode="fulltext")
    assert [line.entry_id for line in hit.lines if line.matched] == [ids[5]]


async def test_an_alias_expands_the_query_as_a_phrase(campaign: CampaignMemory) -> None:
    """ "Kern" found "Grog lifting this giant hammer" and "needle-and-hammer style": the alias "Kern the Hammer" was
    searched word by word. Its words count where the line says the alias."""
    await campaign.graph.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc, aliases=["the Ember Wyrm"]))
    lines = [("DM", "The ember wyrm stirs beneath the lake."), ("DM", "An ember glows in the hearth.")]
    lines += [("DM", f"The {w} wyrm of the tale is only a song.") for w in WORDS[:3]]
    ids = await said(campaign, "One", [*FILLER[:5], *lines, *FILLER[5:9]])
    hits = await recall(campaign, None, "Eldrinax", limit=5, mode="fulltext")
    assert [line.entry_id for hit in hits for line in hit.answering()] == [ids[5]]


async def test_an_everyday_word_of_a_name_asked_counts_where_the_name_is_said(campaign: CampaignMemory) -> None:
    """ "greyskull keep": 4 of 5 hits said only "keep" ("Keeping busy"), above the one line naming the keep. An
    everyday word of a name the question says counts where a line says the name; its rare words count alone."""
    await campaign.graph.add_entity(EntityIn(name="Greyskull Keep", type=EntityType.location))
    lines = [("DM", "Grog wants to guard Greyskull Keep himself."), ("DM", "The Greyskull banners fly.")]
    lines += [("DM", f"Keep the {w} one close, keeping busy.") for w in WORDS[:4]]
    ids = await said(campaign, "One", [*FILLER[:5], *lines, *FILLER[5:9]])
    hits = await recall(campaign, None, "greyskull keep", limit=5, mode="fulltext")
    assert [line.entry_id for hit in hits for line in hit.answering()] == [ids[5], ids[6]]


async def test_a_question_names_an_entity_as_the_recogniser_wrote_it(campaign: CampaignMemory) -> None:
    """A DM typing "key love" as the bot wrote it in voice got lines about keys, and no card for Keyleth: the
    question is read as stage-1 correction reads a line, its heard-as phrases as the name."""
    from memory.recall import recall
    from tests.integration.test_recall_lines import FILLER, said

    await campaign.graph.add_entity(EntityIn(name="Keyleth", type=EntityType.player, heard_as=["key love"]))
    ids = await said(
        campaign,
        "One",
        [*FILLER[:5], ("MARISHA", "Keyleth climbs the Sun Tree."), *FILLER[5:10], ("DM", "He tosses her the key.")],
    )
    assert [n.name for n in await named_entities(campaign, "what did key love climb?", dm=True)] == ["Keyleth"]
    hits = await recall(campaign, None, "what did key love climb?", limit=2, mode="fulltext")
    assert [line.entry_id for line in hits[0].answering()] == [ids[5]]
    assert ids[-1] not in {line.entry_id for hit in hits for line in hit.answering()}


async def test_a_name_misspelt_in_a_question_is_read_as_the_name(campaign: CampaignMemory) -> None:
    """ "Tordak" found nothing and showed no card: a capitalised word no line says, spelled nearly like one word of
    the names, is read as it. A word the lines say, or one not near enough, is searched as it is."""
    await campaign.graph.add_entity(EntityIn(name="Thordak", type=EntityType.npc))
    await campaign.graph.add_entity(EntityIn(name="Grog Strongjaw", type=EntityType.player))
    ids = await said(
        campaign, "One", [*FILLER[:5], ("DM", "Thordak's lair burns."), *FILLER[5:10], ("DM", "Thordan waves.")]
    )
    assert [n.name for n in await named_entities(campaign, "where is Tordak?", dm=True)] == ["Thordak"]
    (hit,) = await recall(campaign, None, "where is Tordak?", limit=1, mode="fulltext")
    assert [line.entry_id for line in hit.answering()] == [ids[5]]
    (hit,) = await recall(campaign, None, "Thordan", limit=1, mode="fulltext")  # said: no misspelling
    assert [line.entry_id for line in hit.answering()] == [ids[-1]]
    assert await named_entities(campaign, "what did Grig say?", dm=True) == []  # 0.75 alike: not Grog


async def test_a_question_reads_the_campaign_names_once(campaign: CampaignMemory) -> None:
    """A capitalised word ("Delilah") had every name and alias of the campaign read twice, once to tell whether it
    is a misspelt name and once for the names it asks of: 1,500 rows and 5-10 ms more at 60 sessions."""
    await campaign.db.execute(
        """
        WITH e AS (
            INSERT INTO entities (campaign_id, type, name)
            SELECT $1, 'npc', 'Entity ' || i FROM generate_series(1, 1000) i RETURNING id, name
        )
        INSERT INTO entity_aliases (campaign_id, entity_id, alias) SELECT $1, id, 'Alias of ' || name FROM e
        """,
        campaign.campaign_id,
    )
    await campaign.graph.add_entity(EntityIn(name="Delilah Briarwood", type=EntityType.npc, aliases=["Delilah"]))
    ids = await said(campaign, "One", [*FILLER[:5], ("DM", "Delilah falls."), *FILLER[5:10]])
    await campaign.db.execute("ANALYZE entities, entity_aliases")
    read = "SELECT seq_tup_read + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables WHERE relid = $1::regclass"
    async with campaign.transaction() as tx:
        before = await tx.db.fetchval(read, "entity_aliases")
        (hit,) = await recall(tx, None, "who killed Delilah", limit=1, mode="fulltext")
        aliases = await tx.db.fetchval(read, "entity_aliases") - before
    assert [line.entry_id for line in hit.answering()] == [ids[5]]
    assert 1_001 <= aliases < 2 * 1_001  # each alias once


async def test_a_name_misspelt_as_its_stem_shows_its_entity(campaign: CampaignMemory) -> None:
    """ "Gilmor" found Gilmore's lines (the same stem) but showed no entity, which "Gilmore" did: a word the
    lines say only as a name's stem is read as the name. "Kerr" said is no "Kerry": it stems otherwise."""
    await campaign.graph.add_entity(EntityIn(name="Shaun Gilmore", type=EntityType.npc, aliases=["Gilmore"]))
    await campaign.graph.add_entity(EntityIn(name="Kerry Dale", type=EntityType.npc))
    ids = await said(campaign, "One", [*FILLER[:5], ("DM", "Gilmore smiles."), ("DM", "Kerr waves."), *FILLER[5:9]])
    assert [n.name for n in await named_entities(campaign, "Gilmor", dm=True)] == ["Shaun Gilmore"]
    (hit,) = await recall(campaign, None, "Gilmor", limit=1, mode="fulltext")
    assert [line.entry_id for line in hit.answering()] == [ids[5]]
    assert await named_entities(campaign, "what did Kerr say?", dm=True) == []


async def test_short_banter_saying_the_question_word_does_not_outrank_the_story(
    campaign: CampaignMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Critical Role's "how did Vex die?": the players' "I die." and "No one else die." ranked above the DM's
    "... Vex has fallen.", each saying one of the question's two words; BM25's length factor gave the two-word
    lines twice a passage's weight for the same word."""
    vex = await campaign.graph.add_entity(EntityIn(name="Vex'ahlia", type=EntityType.player, aliases=["Vex"]))
    fallen = (
        "Five. There, on the banks of the lava flow in the dragon's lair, the breath escapes Vex. Her body going "
        "still and not cold because of the flames nearby, but Vex has fallen."
    )
    ids = await said(
        campaign,
        "One",
        [
            *FILLER[:3],
            ("SAM", "I die."),
            *FILLER[3:6],
            ("MARISHA", "No one else die."),
            *FILLER[6:9],
            ("MATT", fallen),
            *FILLER[9:12],
            *[("MATT", f"Vex, the {w} guard is up.") for w in WORDS[:6]],
            *[("MATT", f"The {w} goblin will die soon.") for w in WORDS[6:10]],
        ],
    )
    session_id = (await campaign.log.sessions())[0].id
    await index_lines(campaign.db, campaign.campaign_id, session_id, {ids[11]: [vex.id]})

    async def answering() -> list[int]:
        hits = await recall(campaign, None, "how did Vex die?", limit=5, mode="fulltext")
        return [line.entry_id for hit in hits for line in hit.answering()]

    found = await answering()
    assert found.index(ids[11]) < min(found.index(ids[3]), found.index(ids[7]))
    monkeypatch.setattr(lexical, "LENGTH_FLOOR", 0)  # each line its own length: the banter first
    found = await answering()
    assert found.index(ids[11]) > max(found.index(ids[3]), found.index(ids[7]))


async def test_a_secret_entity_expands_the_query_for_the_dm_only(campaign: CampaignMemory) -> None:
    await campaign.graph.add_entity(
        EntityIn(name="Vaskerrin Holt", type=EntityType.npc, aliases=["the patron"], visibility=Visibility.secret)
    )
    await said(campaign, "One", [*FILLER[:5], ("DM", "Vaskerrin Holt signs the letter."), *FILLER[5:9]])
    dm = await recall(campaign, None, "who is the patron", limit=1, mode="fulltext")
    assert dm and "Vaskerrin" in dm[0].text
    # a player's question by the alias does not lead to the secret's lines
    assert not await recall(campaign, None, "who is the patron", limit=1, mode="fulltext", dm=False)
    # a line a player finds by its other words still has the secret name masked, as before
    (hit,) = await recall(campaign, None, "who signs the letter", limit=1, mode="fulltext", dm=False)
    shown = cite(hit, await campaign.graph.player_mask())
    assert "Vaskerrin" not in shown and "[secret] signs the letter" in shown
    # nor does a guess at its name: the lines that say it were found by it, "[secret]" where the guess was
    for guess in ("Vaskerrin Holt", "who is vaskerrin?", "Vaskerrin"):
        assert not await recall(campaign, None, guess, limit=1, mode="fulltext", dm=False), guess
    (hit,) = await recall(campaign, None, "what did Vaskerrin Holt sign", limit=1, mode="fulltext", dm=False)
    assert "[secret] signs the letter" in cite(hit, await campaign.graph.player_mask())  # by its other words


async def test_a_players_guess_at_a_secret_name_in_another_form_finds_what_a_made_up_word_finds(
    campaign: CampaignMemory,
) -> None:
    """The search stems the lines as they were said: "Vaskerrins" (or "exiled", of a hidden name) found the lines
    that said the name, shown "[secret]", where a made-up word found nothing — a yes to the guess."""
    holt = await campaign.graph.add_entity(
        EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret)
    )
    await campaign.graph.hide_names(holt.id, ["Vaskerrin the Exile"])
    await campaign.graph.add_entity(EntityIn(name="K'Varn", type=EntityType.npc, visibility=Visibility.secret))
    await said(
        campaign,
        "One",
        [
            *FILLER[:5],
            ("DM", "Vaskerrin Holt nods."),
            ("BEN", "They used to call him Vaskerrin the Exile."),
            ("DM", "The beholder K'Varn waits."),
            *FILLER[5:9],
        ],
    )
    assert await recall(campaign, None, "Vaskerrins", limit=1, mode="fulltext")  # the DM's search stems them
    for guess in ("Zorblaxes", "Vaskerrins", "exiled", "the exiled one", "K'Varns", "Varns", "Holts"):
        assert not await recall(campaign, None, guess, limit=1, mode="fulltext", dm=False), guess
    (hit,) = await recall(campaign, None, "Vaskerrins nodding", limit=1, mode="fulltext", dm=False)
    assert "[secret] nods" in cite(hit, await campaign.graph.player_mask())  # by its other words


class _AshEmbedder:
    """Meaning as one axis: a text of ash or water points one way, any other the other way."""

    model_name, dim = "ash", 384

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        near = [any(w in t.lower() for w in ("ash", "water")) for t in texts]
        return [[float(n), float(not n), *([0.0] * 382)] for n in near]


async def test_a_players_guess_at_a_secret_name_without_its_article_finds_nothing_of_it(
    campaign: CampaignMemory,
) -> None:
    """ "pact" names The Pact of Ash and Water alone, and was hidden first: the name's run was broken, and "pact of
    ash and water" found the line that said it, "[secret]" in its place — a yes to the guess, by words and meaning."""
    await campaign.graph.add_entity(
        EntityIn(name="The Pact of Ash and Water", type=EntityType.item, visibility=Visibility.secret)
    )
    lines = [*FILLER[:5], ("DM", "Deep in the mine you find a tablet: the Pact of Ash and Water, signed in blood.")]
    ids = await said(campaign, "One", [*lines, *FILLER[5:9]])
    embedder = _AshEmbedder()
    session_id = (await campaign.log.sessions())[0].id
    vectors = await embedder.embed([text for _, text in [*lines, *FILLER[5:9]]])
    await campaign.semantic.upsert_lines(
        [LineVectorIn(i, session_id, "x", v) for i, v in zip(ids, vectors, strict=True)]
    )
    assert await recall(campaign, embedder, "pact of ash and water", limit=1, mode="fulltext")  # the DM's
    for guess in ("pact of ash and water", "the pact of ash and water", "Pacts of Ash and Water"):
        for mode in ("fulltext", "both"):
            # by meaning, the nearest line of ten: the filler, now the guess is no longer "ash", "water"
            hits = await recall(campaign, embedder, guess, limit=1, mode=mode, dm=False)  # type: ignore[arg-type]
            assert ids[5] not in [line.entry_id for hit in hits for line in hit.answering()], (guess, mode)
    # its other words still find it, the name masked
    (hit,) = await recall(campaign, None, "what tablet was signed in blood", limit=1, mode="fulltext", dm=False)
    assert "tablet: [secret], signed in blood" in cite(hit, await campaign.graph.player_mask())


async def test_lines_mentioning_a_named_entity_come_first(campaign: CampaignMemory) -> None:
    pike = await campaign.graph.add_entity(EntityIn(name="Pike", type=EntityType.player))
    ids = await said(
        campaign,
        "One",
        [("DM", "The temple bell rings at dawn."), *FILLER[:6], ("DM", "She rings the temple bell."), *FILLER[6:9]],
    )
    session_id = (await campaign.log.sessions())[0].id
    await index_lines(campaign.db, campaign.campaign_id, session_id, {ids[7]: [pike.id]})  # "she" is Pike
    hits = await recall(campaign, None, "Pike temple bell", limit=2, mode="fulltext")
    assert ids[7] in [line.entry_id for line in hits[0].lines if line.matched]
    assert "entity" in hits[0].matched


async def test_a_word_every_line_of_a_named_entity_says_counts_less_than_one_that_tells_them_apart(
    campaign: CampaignMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every line of Thordak's lair says "lair", rarer in the campaign than "egg" (the cook's eggs): each of them
    said both "Thordak" and "lair" and outranked the one line of his egg. Among the lines naming Thordak, "lair"
    tells none apart and "egg" does."""
    thordak = await campaign.graph.add_entity(EntityIn(name="Thordak", type=EntityType.npc))
    lair = [("DM", f"Thordak's lair is {word} with smoke.") for word in WORDS[:8]]
    cook = [("DM", f"The cook cracks egg {n} into the pan.") for n in range(14)]
    answer = ("DM", "You pull the snout of a tiny red Thordak from the egg.")
    lines = [*FILLER[:15], *lair, *FILLER[15:], *cook[:7], answer, *cook[7:]]  # no lair line beside an egg
    ids = await said(campaign, "One", lines)
    session_id = (await campaign.log.sessions())[0].id
    naming = {i: [thordak.id] for i, (_, text) in zip(ids, lines, strict=True) if "Thordak" in text}
    await index_lines(campaign.db, campaign.campaign_id, session_id, naming)
    question = "what was in the egg in Thordak's lair?"
    assert lexical.ENTITY_RARITY > 0
    hits = await recall(campaign, None, question, limit=1, mode="fulltext")
    assert [line.entry_id for line in hits[0].lines if line.matched] == [ids[lines.index(answer)]]

    monkeypatch.setattr(lexical, "ENTITY_RARITY", 0.0)  # the campaign's rarity: a line of the lair first
    hits = await recall(campaign, None, question, limit=1, mode="fulltext")
    assert lines[ids.index(hits[0].lines[0].entry_id)] in lair


async def test_a_question_that_is_an_events_name_shows_the_lines_that_tell_it(campaign: CampaignMemory) -> None:
    """The event's name as a question lost to a player's "We arrive at Vasselheim tomorrow?", which says its words in
    fewer: the event's own lines were boosted once, and only when found."""
    ids = await said(
        campaign,
        "One",
        [
            *FILLER[:4],
            ("DM", "As it currently stands, Vox Machina found itself in the city of Vasselheim, as of late."),
            *FILLER[4:8],
            ("LIAM", "We arrive at Vasselheim tomorrow?"),
            ("TRAVIS", "Arrive, arrive, arrive at Vasselheim!"),
            *FILLER[8:12],
        ],
    )
    session_id = (await campaign.log.sessions())[0].id
    told = Provenance(session_id=session_id, entry_ids=[ids[4]])
    await campaign.graph.add_entity(EntityIn(name="Arrival at Vasselheim", type=EntityType.event, provenance=told))
    for asked in ("Arrival at Vasselheim", "arrival at vasselheim?"):
        for dm in (True, False):
            hits = await recall(campaign, None, asked, limit=2, mode="fulltext", dm=dm)
            assert [line.entry_id for line in hits[0].lines if line.matched] == [ids[4]]
            assert "entity" in hits[0].matched
    # a question naming it among other words asks something else; a session it was not told in has none of it
    hits = await recall(campaign, None, "who said we arrive at Vasselheim", limit=2, mode="fulltext")
    assert ids[4] not in hits[0].entry_ids
    await said(campaign, "Two", [("LIAM", "We arrive at Vasselheim tomorrow?")])
    hits = await recall(campaign, None, "Arrival at Vasselheim last session", limit=2, mode="fulltext")
    assert [h.session for h in hits] == ["Two"]


async def test_last_session_and_a_numbered_session_filter(campaign: CampaignMemory) -> None:
    one = await said(campaign, "One", [*FILLER[:3], ("DM", "The key is in the well."), *FILLER[3:6]])
    two = await said(campaign, "Two", [*FILLER[:3], ("DM", "The key is under the bed."), *FILLER[3:6]])
    await said(campaign, "Tonight", [("DM", "The key glows."), *FILLER[:3]], ended=False)
    (hit,) = await recall(campaign, None, "where was the key last session", limit=5, mode="fulltext")
    assert hit.session == "Two" and two[3] in hit.entry_ids
    (hit,) = await recall(campaign, None, "the key in session 1", limit=5, mode="fulltext")
    assert hit.session == "One" and one[3] in hit.entry_ids
    assert await recall(campaign, None, "the key in session 9", limit=5, mode="fulltext") == []


async def test_a_session_named_like_a_title_the_campaign_lacks_is_said_missing(campaign: CampaignMemory) -> None:
    """ "The dragon in Night 2" of a campaign with no Night 2 answered with another night's lines, and "what
    happened in Night 3?" with "nothing found": both are the "no session … recent ones" "session 9" gets."""
    await said(campaign, "Night 1", [*FILLER[:3], ("DM", "The key is in the well."), *FILLER[3:6]])
    await said(campaign, "Night 2: the Heist", [*FILLER[:3], ("DM", "The key is under the bed."), *FILLER[3:6]])
    for question, missing in (("the key in Night 3", "Night 3"), ("what happened in night 12?", "night 12")):
        with pytest.raises(NotFoundError, match=f"^no {missing} in this campaign; recent ones: 'Night 1', 'Night 2"):
            await recap_asked(campaign, question)
        assert await recall(campaign, None, question, limit=5, mode="fulltext") == []
    with pytest.raises(NotFoundError, match=r"^no Night 4 in"):  # "night": what these sessions are called
        await recap_asked(campaign, "what did the DM say about the key on Night 4?")
    (hit,) = await recall(campaign, None, "the key in Night 2", limit=5, mode="fulltext")  # a title's start names it
    assert hit.session == "Night 2: the Heist"
    assert await recap_asked(campaign, "what is in Room 4?") is None  # no word sessions are called by


async def test_a_night_of_the_story_is_searched_where_no_session_is_titled_so(campaign: CampaignMemory) -> None:
    """ "On night 2 of the siege" was taken for a session in any campaign: with sessions "One", "Ep1" recall said
    "no night 2 in campaign" instead of finding the bridge."""
    await said(campaign, "One", [*FILLER[:3], ("DM", "The bridge burns on the second night of the siege.")])
    ids = await said(campaign, "Ep1", [*FILLER[:3], ("DM", "The trolls hold the bridge."), *FILLER[3:5]])
    question = "what happened at the bridge on night 2 of the siege?"
    assert await recap_asked(campaign, question) is None
    hits = await recall(campaign, None, question, limit=5, mode="fulltext")
    assert ids[3] in {line.entry_id for h in hits for line in h.answering()}


async def played_days_before(
    campaign: CampaignMemory, asked: datetime, lines: dict[int, tuple[str, str]]
) -> dict[int, int]:
    """One session for each line, played its key's days before ``asked``: each key with its line's id."""
    said_in: dict[int, int] = {}
    for days, (speaker, text) in lines.items():
        session = await campaign.log.start_session(f"{days} days ago", started_at=asked - timedelta(days=days))
        (entry,) = await campaign.log.write_many(session.id, [EntryIn(speaker=speaker, text=text, start_s=0.0)])
        await campaign.log.end_session(session.id)
        said_in[days] = entry.id
    return said_in


async def test_a_time_told_against_when_it_is_asked_prefers_the_sessions_played_then(campaign: CampaignMemory) -> None:
    """ "What did we hear two weeks ago about the Ember Key?": the line of the session played two weeks ago, though
    a shorter line of another session says the key too; "two weeks ago" is no word to search for."""
    asked = datetime(2026, 3, 20, 21, tzinfo=UTC)
    lines = {
        28: ("DM", "The Ember Key hangs in the vault."),
        14: ("DM", "A merchant in the market swears the Ember Key was sold last winter to a stranger from the north."),
        1: ("DM", "The Ember Key glows."),
    }
    said_in = await played_days_before(campaign, asked, lines)
    question = "what did we hear two weeks ago about the Ember Key?"
    hits = await recall(campaign, None, question, limit=3, mode="fulltext", now=asked)
    assert [line.entry_id for line in hits[0].lines if line.matched] == [said_in[14]]
    assert "when" in hits[0].matched
    # asked a month later, two weeks ago is another session's time: the key's best line again
    later = await recall(campaign, None, question, limit=3, mode="fulltext", now=asked + timedelta(days=30))
    assert said_in[14] not in later[0].entry_ids and "when" not in later[0].matched


async def test_march_the_verb_is_a_word_to_search_for(campaign: CampaignMemory) -> None:
    """ "we march 5" was read as March 5th and left no word to search for: nothing found."""
    ids = await said(campaign, "One", [*FILLER[:4], ("DEV", "We march 5 miles north to Ironhold."), *FILLER[4:8]])
    for question in ("we march 5", "when we march 5 miles north"):
        (hit, *_) = await recall(
            campaign, None, question, limit=3, mode="fulltext", now=datetime(2026, 12, 5, tzinfo=UTC)
        )
        assert ids[4] in [line.entry_id for line in hit.lines if line.matched], question


async def test_a_time_of_the_story_is_words_to_search_for_not_the_days_asked(campaign: CampaignMemory) -> None:
    """ "The last day of the Festival" was read as the last day before asking: "last day" left the query, and the
    lines of the sessions played since came first."""
    asked = datetime(2026, 12, 5, 21, tzinfo=UTC)
    lines = {
        30: ("DM", "On the last day of the Festival of Lanterns the mayor vanishes."),
        0: ("DM", "The Festival of Lanterns fills the square."),
    }
    said_in = await played_days_before(campaign, asked, lines)
    question = "what happened on the last day of the Festival of Lanterns?"
    hits = await recall(campaign, None, question, limit=3, mode="fulltext", now=asked)
    assert [line.entry_id for line in hits[0].lines if line.matched] == [said_in[30]]
    assert "when" not in hits[0].matched


async def test_when_we_first_or_last_met_someone_shows_the_first_or_last_lines_naming_them(
    campaign: CampaignMemory,
) -> None:
    """ "When did we first meet Kevdak?" ranked lines saying "first" and "meet" above every line naming Kevdak."""
    await campaign.graph.add_entity(EntityIn(name="Kevdak", type=EntityType.npc))
    one = await said(campaign, "One", [*FILLER[:4], ("DM", "A hulking goliath, Kevdak, steps out."), *FILLER[4:8]])
    two = await said(
        campaign,
        "Two",
        [
            ("LIAM", "We meet back here first, at the very least."),
            ("DM", "Kevdak's horn sounds over the camp."),
            *FILLER[:4],
            ("SAM", "First we meet, then we see."),
            ("DM", "Kevdak falls."),
            *FILLER[4:8],
        ],
    )
    for asked, told in (
        ("when did we first meet Kevdak?", one[4]),
        ("When was Kevdak first mentioned", one[4]),
        ("when was the last time we saw Kevdak?", two[7]),
    ):
        hits = await recall(campaign, None, asked, limit=3, mode="fulltext")
        assert told in [line.entry_id for line in hits[0].lines if line.matched], asked
        assert "entity" in hits[0].matched
    # someone the campaign does not know has no first line
    hits = await recall(campaign, None, "when did we first meet Zorbo?", limit=3, mode="fulltext")
    assert all(one[4] not in h.entry_ids for h in hits)


async def test_where_someone_is_shows_the_latest_lines_naming_them(campaign: CampaignMemory) -> None:
    """ "Where is Lady Kima?" showed five lines of sessions 1-2 (where she was sought) above her latest session."""
    await campaign.graph.add_entity(EntityIn(name="Kima", type=EntityType.npc))
    await said(
        campaign,
        "One",
        [line for n in range(5) for line in (("DM", "Kima is hiding, they say."), *FILLER[4 * n : 4 * n + 4])],
    )
    two = await said(campaign, "Two", [*FILLER[:4], ("DM", "Kima stands by the dragon's body."), *FILLER[4:8]])
    hits = await recall(campaign, None, "where is Kima hiding now?", limit=3, mode="fulltext")
    assert two[4] in [line.entry_id for line in hits[0].lines if line.matched]


async def test_the_first_lines_naming_someone_fill_the_hits_in_the_order_played(campaign: CampaignMemory) -> None:
    """ "When did we first meet Cassandra?" -k 4 showed her first three lines, then a line of a later session that
    scored alike, before her fourth."""
    await campaign.graph.add_entity(EntityIn(name="Cassandra", type=EntityType.npc))
    lines = [line for n in range(5) for line in (("DM", f"Cassandra waits by gate {n}."), *FILLER[4 * n : 4 * n + 4])]
    one = await said(campaign, "One", lines)
    later = await said(campaign, "Two", [("DM", "We meet Cassandra again, and meet her we did."), *FILLER[:4]])
    hits = await recall(campaign, None, "when did we first meet Cassandra?", limit=4, mode="fulltext")
    assert [[line.entry_id for line in h.lines if line.matched] for h in hits] == [[i] for i in one[0:20:5]]
    assert later[0] not in {i for h in hits for i in h.entry_ids}


async def test_what_a_speaker_said(campaign: CampaignMemory) -> None:
    ids = await said(
        campaign,
        "One",
        [("DM", "The lich wants the crown."), *FILLER[:5], ("Grog", "I hate that lich and its crown."), *FILLER[5:8]],
    )
    (hit,) = await recall(campaign, None, "what did Grog say about the lich", limit=5, mode="fulltext")
    assert [line.entry_id for line in hit.lines if line.matched] == [ids[6]]
    # not a speaker of this campaign: the words are searched
    hits = await recall(campaign, None, "what did the lich say about the crown", limit=5, mode="fulltext")
    assert {ids[0], ids[6]} <= {i for h in hits for i in h.entry_ids}


AXE_TALK = [
    ("LAURA", "Grog, you should give the axe to Pike."),
    ("DM", "The axe hums when the giant comes near."),
    ("TRAVIS", "Nobody touches my axe, it stays on my back."),
    ("SAM", "I write a song about the axe."),
    ("TRAVIS", "I want another ale."),
]


async def test_what_a_character_said_is_what_its_player_said(campaign: CampaignMemory) -> None:
    await campaign.graph.add_entity(
        EntityIn(name="Grog Strongjaw", type=EntityType.player, aliases=["Grog"], attributes={"played_by": "travis"})
    )
    ids = await said(campaign, "One", [*FILLER[:4], *AXE_TALK, *FILLER[4:8]])
    hits = await recall(campaign, None, "what did Grog say about the axe", limit=5, mode="fulltext")
    answering = [line for hit in hits for line in hit.answering()]
    assert answering[0].entry_id == ids[6]  # TRAVIS's line about the axe, first
    assert {line.speaker for line in answering} == {"TRAVIS"}  # and no other speaker's
    assert answering[0].plays == "Grog Strongjaw" and answering[0].who() == "TRAVIS (Grog Strongjaw)"
    assert "TRAVIS (Grog Strongjaw): Nobody touches my axe" in cite(hits[0])
    # the alias and the whole name reach him too; a name nobody is called by searches its words, as before
    (whole, *_) = await recall(campaign, None, "What did Grog Strongjaw say about the axe?", limit=5, mode="fulltext")
    assert whole.answering()[0].entry_id == ids[6]
    hits = await recall(campaign, None, "what did Pike say about the axe", limit=5, mode="fulltext")
    assert ids[4] in {line.entry_id for hit in hits for line in hit.answering()}


@pytest.mark.parametrize("aliases", [["Grog"], []])
async def test_what_a_character_said_about_someone_no_line_of_theirs_names(
    campaign: CampaignMemory, memory: Memory, aliases: list[str]
) -> None:
    """ "What did Grog say about Jazna?" said "nothing found": no line of Travis names her, though he speaks in the
    scene that does. His lines near those naming her answer, marked so on the command line, on /recall and in the MCP
    tool alike (the mark showed on the command line only); a speaker far from her is not shown. Grog is asked for by
    his alias, or by his first name alone as a character's card calls him."""
    from memory.mcp_tools import CampaignTools

    await campaign.graph.add_entity(
        EntityIn(name="Grog Strongjaw", type=EntityType.player, aliases=aliases, attributes={"played_by": "travis"})
    )
    jazna = await campaign.graph.add_entity(EntityIn(name="Jazna Grebin", type=EntityType.npc))
    scene = [
        ("DM", 'Countess Jazna lifts her chin: "Kill me."'),
        ("TRAVIS", "Okay."),
        ("TRAVIS", "I reach over and aim my greataxe for her neck."),
    ]
    ids = await said(campaign, "One", [("TRAVIS", "I want another ale."), *FILLER[:10], *scene, *FILLER[10:20]])
    session_id = (await campaign.log.sessions())[0].id
    await index_lines(campaign.db, campaign.campaign_id, session_id, {ids[11]: [jazna.id]})
    (hit,) = await recall(campaign, None, "What did Grog say about Jazna?", limit=3, mode="fulltext")
    assert hit.matched == [NEAR_MENTION]
    assert [line.entry_id for line in hit.answering()] == ids[12:14]  # not his ale, far from her
    assert [line.entry_id for line in hit.lines] == ids[11:14]  # from the line naming her
    assert hit.answering()[0].who() == "TRAVIS (Grog Strongjaw)"
    assert cite(hit).endswith(f"{hit.where()} (near a mention)")
    tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=True)
    (passage,) = (await tools.search_sessions("What did Grog say about Jazna?", limit=3)).passages
    assert passage.where == f"{hit.where()} (near a mention)"
    # a line of his that names her is the answer, as before
    await said(campaign, "Two", [*FILLER[:3], ("TRAVIS", "Jazna had it coming."), *FILLER[3:6]])
    (hit, *_) = await recall(campaign, None, "What did Grog say about Jazna?", limit=3, mode="fulltext")
    assert hit.matched != [NEAR_MENTION] and hit.answering()[0].text == "Jazna had it coming."
    assert "near a mention" not in cite(hit)


async def test_a_players_line_has_one_label_however_it_was_found(campaign: CampaignMemory) -> None:
    """ "Travis (Grog Strongjaw)" when asked what Grog said, plain "Travis" when found by its words: the speaker is
    labelled by the character they play in the session whichever way the line was found (as the recap quotes
    them); a player of several whose session says not which keeps their name."""
    await campaign.graph.add_entity(
        EntityIn(name="Grog Strongjaw", type=EntityType.player, aliases=["Grog"], attributes={"played_by": "travis"})
    )
    await campaign.graph.add_entity(EntityIn(name="Vax", type=EntityType.player, attributes={"played_by": "LIAM"}))
    await campaign.graph.add_entity(EntityIn(name="Caleb", type=EntityType.player, attributes={"played_by": "liam"}))
    ids = await said(campaign, "One", [*FILLER[:4], *AXE_TALK, ("LIAM", "I pocket the silver."), *FILLER[4:8]])
    for question in ("what did Grog say about the axe", "who touches the axe?"):
        hits = await recall(campaign, None, question, limit=5, mode="fulltext")
        line = next(line for hit in hits for line in hit.lines if line.entry_id == ids[6])
        assert line.who() == "TRAVIS (Grog Strongjaw)", question
    (hit, *_) = await recall(campaign, None, "who pockets the silver?", limit=5, mode="fulltext")
    assert hit.answering()[0].who() == "LIAM"


async def test_a_character_played_by_several_and_a_speaker_named_like_it(campaign: CampaignMemory) -> None:
    await campaign.graph.add_entity(
        EntityIn(name="Grog", type=EntityType.player, attributes={"played_by": ["TRAVIS", "Zac"]})
    )
    ids = await said(campaign, "One", [*AXE_TALK, ("Grog", "My axe!"), ("ZAC", "Grog swings the axe."), *FILLER[:4]])
    hits = await recall(campaign, None, "what did grog say about the axe", limit=5, mode="fulltext")
    answering = {line.entry_id: line for hit in hits for line in hit.answering()}
    assert set(answering) == {ids[2], ids[5], ids[6]}
    # the speaker named Grog is shown as such, the players with the character they play
    assert answering[ids[5]].who() == "Grog" and answering[ids[6]].who() == "ZAC (Grog)"


async def test_a_secret_character_picks_no_speaker_for_players(campaign: CampaignMemory) -> None:
    await campaign.graph.add_entity(
        EntityIn(
            name="The Masked One",
            type=EntityType.player,
            aliases=["Masked"],
            attributes={"played_by": "TRAVIS"},
            visibility=Visibility.secret,
        )
    )
    ids = await said(campaign, "One", [*AXE_TALK, *FILLER[:4]])
    dm = await recall(campaign, None, "what did Masked say about the axe", limit=5, mode="fulltext")
    assert {line.speaker for hit in dm for line in hit.answering()} == {"TRAVIS"}
    # a player's question is not filtered by a secret's name: its words are searched as they are for any name
    player = await recall(campaign, None, "what did Masked say about the axe", limit=5, mode="fulltext", dm=False)
    assert ids[0] in {line.entry_id for hit in player for line in hit.answering()}
    assert all(line.plays is None for hit in player for line in hit.lines)


async def test_table_talk_ranks_below_the_story(campaign: CampaignMemory) -> None:
    ids = await said(
        campaign,
        "One",
        [
            ("DM", "Roll a perception check for the dragon, DC 15."),
            *FILLER[:5],
            ("DM", "The dragon circles the ruined tower."),
            *FILLER[5:9],
        ],
    )
    hits = await recall(campaign, None, "the dragon", limit=2, mode="fulltext")
    assert [line.entry_id for line in hits[0].lines if line.matched] == [ids[6]]
    assert [line.entry_id for line in hits[1].lines if line.matched] == [ids[0]]


async def test_the_last_session_told_again_at_a_sessions_start_ranks_below_the_line_that_told_it(
    campaign: CampaignMemory,
) -> None:
    """ "Who gave Wren the bone key?" ranked a player's "Last time, we … she gave Wren the bone key" at the next
    session's start above the night it happened: it says the question's words, and tells nothing new."""
    event = await said(campaign, "One", [*FILLER[:5], ("DM", "Ottilie hands the bone key to Wren."), *FILLER[5:9]])
    told = await said(
        campaign,
        "Two",
        [("DM", "Who's doing recap?"), ("PRIYA", "Last time, we met Ottilie and she gave Wren the bone key."), *FILLER],
    )
    hits = await recall(campaign, None, "who gave Wren the bone key?", limit=2, mode="fulltext")
    assert [[line.entry_id for line in hit.answering()] for hit in hits] == [[event[5]], [told[1]]]


async def test_term_counts_follow_every_write_and_stay_in_their_campaign(
    campaign: CampaignMemory, memory: Memory
) -> None:
    async def counts(cid: int) -> dict[str, int]:
        rows = await campaign.db.fetch("SELECT term, lines FROM recall_terms WHERE campaign_id = $1 AND lines > 0", cid)
        return {r["term"]: r["lines"] for r in rows}

    async def recomputed(cid: int) -> dict[str, int]:
        rows = await campaign.db.fetch(
            """SELECT u AS term, count(*) AS lines FROM session_entries e, unnest(tsvector_to_array(e.tsv)) u
               WHERE e.campaign_id = $1 GROUP BY u""",
            cid,
        )
        return {r["term"]: r["lines"] for r in rows}

    ids = await said(campaign, "One", [("DM", "The dragon sleeps."), ("DM", "The dragon wakes, the dragon roars.")])
    other = memory.campaign((await memory.campaigns().create("Other")).id)
    await said(other, "Elsewhere", [("DM", "A dragon and a griffin.")])
    assert (await counts(campaign.campaign_id))["dragon"] == 2  # lines, not words
    await campaign.log.revise(ids[0], "The griffin sleeps.", [])
    session = (await campaign.log.sessions())[0]
    await said(campaign, "Two", [("DM", "A griffin lands.")])
    assert await counts(campaign.campaign_id) == await recomputed(campaign.campaign_id)
    assert (await counts(campaign.campaign_id))["griffin"] == 2
    await campaign.db.execute(
        "DELETE FROM sessions WHERE campaign_id = $1 AND id = $2", campaign.campaign_id, session.id
    )
    assert await counts(campaign.campaign_id) == await recomputed(campaign.campaign_id) == {"griffin": 1, "land": 1}
    corpus = await campaign.db.fetchrow(
        "SELECT lines, terms FROM recall_corpus WHERE campaign_id = $1", campaign.campaign_id
    )
    assert (corpus["lines"], corpus["terms"]) == (1, 2)
    assert await counts(other.campaign_id) == await recomputed(other.campaign_id)
    # the other campaign's lines are never found here
    assert not await recall(campaign, None, "dragon", limit=5, mode="fulltext")


async def test_recall_json_keeps_lines_refs_scores_and_what_matched(campaign: CampaignMemory) -> None:
    from bot.cli.common import to_jsonable

    ids = await said(campaign, "One", [*FILLER[:3], ("DM", "The obsidian dagger is cursed."), *FILLER[3:6]])
    (hit,) = to_jsonable(await recall(campaign, None, "obsidian dagger", limit=1, mode="fulltext"))
    assert hit["matched"] == ["fulltext"] and hit["score"] > 0 and hit["entry_ids"] == ids[2:5]
    assert [(line["entry_id"], line["matched"]) for line in hit["lines"]] == [
        (ids[2], False),
        (ids[3], True),
        (ids[4], False),
    ]
    assert hit["lines"][1]["text"] == "The obsidian dagger is cursed." and hit["lines"][1]["speaker"] == "DM"


async def test_context_lines_are_previews_and_the_answer_is_whole(campaign: CampaignMemory) -> None:
    """A long neighbour shown whole used up a DM's reading before the answer: it is shown as its words nearest the
    answer, cut between words with "…"; ``text`` keeps it whole for tools."""
    before = "We walked past the stalls for an hour " * 5 + "and then the innkeeper told us"
    after = "Then Grog wandered off to find an ale and a fight " * 4 + "as usual."
    ids = await said(campaign, "One", [*FILLER[:4], ("LIAM", before), ("MATT", "Delilah was poisoned."),
                                       ("TRAVIS", after), *FILLER[4:8]])  # fmt: skip
    (hit,) = await recall(campaign, None, "who poisoned Delilah", limit=1, mode="fulltext")
    assert [line.entry_id for line in hit.lines] == ids[4:7]
    first, answer, last = hit.lines
    assert (first.context, answer.context, last.context) == ("before", "", "after")
    assert first.shown() == "…" + " ".join(before.split()[-PREVIEW_WORDS:])
    assert last.shown() == " ".join(after.split()[:PREVIEW_WORDS]) + "…"
    assert answer.shown() == "Delilah was poisoned." and first.text == before and last.text == after
    shown = cite(hit)
    assert "**MATT: Delilah was poisoned.**" in shown and "LIAM: …past the stalls" in shown and before not in shown


async def test_a_long_line_scores_the_same_by_words_and_by_meaning(campaign: CampaignMemory) -> None:
    """The passage of a line both fetched by its words and found by meaning is scored once, the same either way."""
    from memory import lexical

    narration = " ".join(f"The {w} guards watch the gates while the rain falls on the old stones." for w in WORDS)
    narration += " The festival of Winter's Crest begins at dawn."
    ids = await said(campaign, "One", [*FILLER[:5], ("MATT", narration), *FILLER[5:10]])
    query = await lexical.prepare(campaign.db, campaign.campaign_id, [("when does the festival begin", 1.0)])
    alone = await lexical.candidates(campaign.db, campaign.campaign_id, query, limit=5)
    both = await lexical.candidates(campaign.db, campaign.campaign_id, query, limit=5, also=[ids[5]])
    (line,) = alone.lexical
    assert line.entry_id == ids[5] and line.passage is not None
    assert both.lexical == alone.lexical and both.scored == {ids[5]: line.score}
    assert both.passages == alone.passages == {ids[5]: line.passage}


async def test_a_blank_query_is_refused_by_the_core(campaign: CampaignMemory) -> None:
    """Only the command line and the MCP tool refused it: any other caller got passages at random."""
    await said(campaign, "One", FILLER[:6])
    for query in ("", "   ", "\n\t"):
        with pytest.raises(InvalidInputError, match="query is empty"):
            await recall(campaign, None, query, mode="fulltext")


async def test_nothing_found_when_no_word_is_said_and_no_line_is_close_in_meaning(campaign: CampaignMemory) -> None:
    """ "zzzzqqq", "?" and "the" showed the nearest lines as answers: with no word of a question said, a line found
    by meaning alone must be close (MEANING_ALONE)."""
    ids = await said(campaign, "One", [*FILLER[:5], ("DM", "The ziggurat hums beneath the city.")])
    session_id = (await campaign.log.sessions())[0].id
    question = [1.0, *([0.0] * 383)]

    def at(cosine: float) -> list[float]:  # a unit vector at this cosine to the question's
        return [cosine, math.sqrt(1 - cosine**2), *([0.0] * 382)]

    for nearest, found in ((0.3, False), (MEANING_ALONE - 0.02, False), (MEANING_ALONE + 0.05, True)):
        cosines = [0.25] * (len(ids) - 1) + [nearest]
        await campaign.semantic.upsert_lines(
            [LineVectorIn(i, session_id, "x", at(c)) for i, c in zip(ids, cosines, strict=True)]
        )
        for query in ("zzzzqqq", "?", "the"):
            assert bool(await recall(campaign, None, query, embedding=question)) is found, (query, nearest)
    # a line saying a word of the question is an answer however far its meaning: the full text found it
    await campaign.semantic.upsert_lines([LineVectorIn(i, session_id, "x", at(0.1)) for i in ids])
    (hit,) = await recall(campaign, None, "ziggurat", limit=1, embedding=question)
    assert [line.entry_id for line in hit.answering()] == [ids[-1]]


async def test_a_line_found_by_meaning_alone_and_not_close_does_not_pad_the_lines_saying_its_words(
    campaign: CampaignMemory,
) -> None:
    """ "Who is Eskil Ryndarien?" showed its one answer, then "His name is Balan." (cosine under
    MEANING_BESIDE_WORDS) and three more lines found by meaning alone."""
    lines = [("DM", "There was Eskil Ryndarien, the archmage in Westruun."), *FILLER[:6]]
    lines += [("MARISHA", "His name is Balan."), *FILLER[6:12], ("DM", "The old mage of the west has a tower.")]
    ids = await said(campaign, "One", lines)
    session_id = (await campaign.log.sessions())[0].id
    question = [1.0, *([0.0] * 383)]

    def at(cosine: float) -> list[float]:  # a unit vector at this cosine to the question's
        return [cosine, math.sqrt(1 - cosine**2), *([0.0] * 382)]

    cosines = {ids[0]: 0.6, ids[7]: MEANING_BESIDE_WORDS - 0.05, ids[-1]: MEANING_BESIDE_WORDS + 0.05}
    await campaign.semantic.upsert_lines([LineVectorIn(i, session_id, "x", at(c)) for i, c in cosines.items()])
    hits = await recall(campaign, None, "who is Eskil Ryndarien?", limit=5, embedding=question)
    assert [[line.entry_id for line in h.answering()] for h in hits] == [[ids[0]], [ids[-1]]]
