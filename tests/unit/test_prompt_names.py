"""The speech recogniser's prompt holds a few dozen of a campaign's names: which ones (memory.voice.prompt)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pytest import MonkeyPatch

from memory.models import PromptEntity
from memory.providers import stt as providers_stt
from memory.providers.stt import Transcript, Word, build_name_prompt
from memory.voice.prompt import (
    RECENT_WINDOW_S,
    Said,
    StaticNames,
    held_unpinned,
    only_names,
    rank_names,
    transcribe_heard,
)


def campaign(size: int = 1_000) -> list[PromptEntity]:
    """A large campaign: well-connected lore nobody mentions, a cast, a pinned villain, names of past sessions."""
    lore = [PromptEntity(id=i, name=f"Lorename{i:04d}", degree=50 - i % 50) for i in range(size)]
    return [
        *lore,
        PromptEntity(id=10_001, name="Vex'ahlia", aliases=("Vex",), cast=True),
        PromptEntity(id=10_002, name="Grog Strongjaw", aliases=("Grog",), cast=True),
        PromptEntity(id=10_003, name="Eldrinax", aliases=("the Ember Wyrm",), pinned=True),
        PromptEntity(id=10_004, name="Kraghammer", said_lately=40),
        PromptEntity(id=10_005, name="Whitestone", said_lately=90),
        PromptEntity(id=10_006, name="Sylas Briarwood", aliases=("Sylas", "Lord Briarwood"), degree=3),
        PromptEntity(id=10_007, name="Orthax", degree=1),
    ]


def tokens(text: str) -> int:
    return len(text.split())  # one a word: enough to see what a budget keeps


def test_a_campaign_larger_than_the_budget_keeps_the_cast_the_pinned_and_the_recently_said() -> None:
    said = {10_006: Said(at=1_000.0, forms={"Sylas": None}), 10_007: Said(at=1_200.0, forms={"Orthax": None})}
    names = rank_names(campaign(), said, now=1_300.0)
    prompt = build_name_prompt(names, count_tokens=tokens, budget=28)  # 27 for the 11 names below
    kept = prompt.removeprefix("Names: ").removesuffix(".").split(" - ")

    # cast and pinned with their aliases, then the names said lately (the latest first, the alias said with it),
    # then the most said in the last sessions; no lore name fits
    assert kept[:6] == ["Eldrinax", "the Ember Wyrm", "Grog Strongjaw", "Grog", "Vex'ahlia", "Vex"]
    assert kept[6:9] == ["Orthax", "Sylas Briarwood", "Sylas"]
    assert kept[9:11] == ["Whitestone", "Kraghammer"]
    assert "Lord Briarwood" not in kept  # an alias nobody said costs tokens for nothing
    assert not any(name.startswith("Lorename") for name in kept)


def test_names_said_long_ago_or_later_in_the_recording_are_not_recent() -> None:
    said = {10_007: Said(at=100.0, forms={"Orthax": None})}
    assert rank_names(campaign(20), said, now=100.0 + RECENT_WINDOW_S)[6] == "Orthax"
    aged = rank_names(campaign(20), said, now=101.0 + RECENT_WINDOW_S)
    assert aged[6:8] == ["Whitestone", "Kraghammer"] and "Orthax" in aged[8:]
    # another speaker's track read before this one: what they say later is not "said lately" yet
    assert rank_names(campaign(20), said, now=50.0)[6] == "Whitestone"


def test_each_name_once_and_the_rest_by_connections() -> None:
    entities = [
        PromptEntity(id=1, name="Pike", cast=True, aliases=("pike",)),
        PromptEntity(id=2, name="Tal'Dorei", degree=2),
        PromptEntity(id=3, name="Emon", degree=9),
        PromptEntity(id=4, name="Taldorei", degree=1),  # written otherwise, said alike: one name is enough
    ]
    assert rank_names(entities) == ["Pike", "Emon", "Tal'Dorei"]
    # a small campaign's prompt has room for every alias, after every name
    entities.append(PromptEntity(id=5, name="Emon City Watch", aliases=("the Watch", "Emon"), degree=4))
    assert rank_names(entities) == ["Pike", "Emon", "Emon City Watch", "Tal'Dorei", "the Watch"]


def test_an_event_is_prompted_where_said_or_pinned_not_by_its_connections() -> None:
    """A session's recap event and a turning point link everyone who took part, so "Session: Night 1" and "Death of
    Corvane Hale" outranked the places by degree, though no one says them."""
    entities = [
        PromptEntity(id=1, name="Session: Night 1", degree=9, event=True),
        PromptEntity(id=2, name="Death of Corvane Hale", degree=3, event=True),
        PromptEntity(id=3, name="Port Venmark", degree=1),
        PromptEntity(id=4, name="The Red Wedding", said_lately=2, event=True),
        PromptEntity(id=5, name="Festival of Lanterns", pinned=True, event=True),
    ]
    assert rank_names(entities) == ["Festival of Lanterns", "The Red Wedding", "Port Venmark"]


def test_nothing_to_rank() -> None:
    assert rank_names([]) == []
    assert build_name_prompt(rank_names([])) == ""


def two_tables() -> list[PromptEntity]:
    """Two parties' player characters in one campaign, more names than the budget holds, and some lore."""
    first = [PromptEntity(id=i, name=f"Firstparty{i}", aliases=(f"Fp{i}",), cast=True) for i in range(8)]
    second = [PromptEntity(id=100 + i, name=f"Secondparty{i}", aliases=(f"Sp{i}",), cast=True) for i in range(8)]
    lore = [PromptEntity(id=200 + i, name=f"Lorename{i}", degree=9 - i) for i in range(5)]
    return [*first, *second, *lore, PromptEntity(id=300, name="Whitestone", said_lately=4)]


def test_the_session_s_cast_comes_first_and_other_players_after_the_names_said_most() -> None:
    cast = {100, 101, 102}
    names = rank_names(two_tables(), {300: Said(at=5.0)}, now=10.0, cast=cast)
    assert names[:6] == ["Secondparty0", "Sp0", "Secondparty1", "Sp1", "Secondparty2", "Sp2"]
    assert names[6] == "Whitestone"  # said lately, and said most in the last sessions
    # the players of this session's table not named yet, and the other table's, come before the unsaid lore
    others = names[7:33]
    assert {n for n in others if n.startswith("Firstparty")} == {f"Firstparty{i}" for i in range(8)}
    assert "Sp7" in others and "Fp3" in others  # with their aliases: what a table calls them
    assert names[33:] == [f"Lorename{i}" for i in range(5)]
    prompt = build_name_prompt(names, count_tokens=tokens, budget=15)  # 15 for these 7
    assert prompt == "Names: Secondparty0 - Sp0 - Secondparty1 - Sp1 - Secondparty2 - Sp2 - Whitestone."


def test_without_a_session_cast_every_player_is_in_the_first_tier() -> None:
    names = rank_names(two_tables())
    assert set(names[:32]) == {n for e in two_tables() if e.cast for n in (e.name, *e.aliases)}
    assert rank_names(two_tables(), cast=None) == names
    # a pinned entity stays in the first tier whatever the cast
    pinned = [*two_tables(), PromptEntity(id=400, name="Eldrinax", pinned=True)]
    assert rank_names(pinned, cast={101})[:3] == ["Eldrinax", "Secondparty1", "Sp1"]


def test_a_small_campaign_s_prompt_holds_every_alias_so_pinning_changes_nothing() -> None:
    """A name said in the last sessions went in without its alias ("Ysolde" of Ysolde Varrow),
    though a small campaign's prompt has room for all: every alias comes last, and pinning adds nothing there,
    which ``entity pin`` says; in a campaign larger than the prompt, pinning does."""
    small = [
        PromptEntity(id=1, name="Ysolde Varrow", aliases=("Ysolde",), said_lately=3),
        PromptEntity(id=2, name="Quillon Ashgrove", aliases=("Quillon",), degree=2),
        PromptEntity(id=3, name="Wren Halloway", aliases=("Wren",), cast=True),
    ]
    names = rank_names(small, {2: Said(at=5.0, forms={"Quillon Ashgrove": None})}, now=10.0)
    assert names == ["Wren Halloway", "Wren", "Quillon Ashgrove", "Ysolde Varrow", "Quillon", "Ysolde"]
    assert held_unpinned(small, 1) and held_unpinned([*small[:2], small[2].model_copy(update={"pinned": True})], 3)
    assert not held_unpinned(campaign(), 10_003)  # Eldrinax, pinned in a campaign of a thousand names


def test_a_line_of_nothing_but_names_is_told() -> None:
    names = ["Thessaly Brightwater", "Thessaly", "Wren Halloway", "Khar-Duun"]
    assert only_names("Thessaly Brightwater", names)
    assert only_names("Thessaly Brightwater.", names)
    assert only_names("Wren Halloway, Thessaly!", names)
    assert only_names("khar duun", names)
    assert not only_names("Thessaly rolls.", names)
    assert not only_names("Brightwater", names)  # a surname alone is no prompt name
    assert not only_names("Wren", names)
    assert not only_names("17.", names)
    assert not only_names("", names)


class Echo:
    """A recogniser that writes its first prompt name when it has one, each word at ``sure``, what was said
    otherwise."""

    def __init__(self, said: str, seconds: float = 1.5, sure: float | None = 0.0) -> None:
        self.said, self.seconds, self.sure = said, seconds, sure
        self.prompts: list[list[str]] = []

    async def transcribe(self, pcm: np.ndarray, *, prompt_names: Sequence[str] = ()) -> Transcript:
        self.prompts.append(list(prompt_names))
        if not prompt_names:
            return Transcript(text=self.said, duration=self.seconds)
        words = [Word(word=w, start=0.0, end=0.1, confidence=self.sure) for w in prompt_names[0].split()]
        return Transcript(text=prompt_names[0], words=words, duration=self.seconds)


async def test_a_short_line_that_echoes_the_prompt_is_heard_again_without_names() -> None:
    stt = Echo("17.")
    heard = await transcribe_heard(stt, np.zeros(100, np.float32), StaticNames(), ["Thessaly Brightwater", "Wren"])
    assert heard.text == "17."
    assert stt.prompts == [["Thessaly Brightwater", "Wren"], []]


async def test_a_long_line_of_names_or_a_name_heard_surely_is_kept() -> None:
    # a roll call: a minute of names is no echo of a word; a name said alone had a word at 0.12 or more; and
    # without word confidences nothing tells an echo
    for stt in (Echo("17.", seconds=6.0), Echo("Affiliate.", sure=0.18), Echo("Affiliate.", sure=None)):
        heard = await transcribe_heard(stt, np.zeros(100, np.float32), StaticNames(), ["Thessaly Brightwater"])
        assert heard.text == "Thessaly Brightwater"
        assert len(stt.prompts) == 1


ACCENTED = ["Œil-de-Bœuf", "Ìyá", "Fjǫrgyn's Pact", "Khaz-Morûn", "Ysolde d'Aubigné", "Dûn Kaldor", "K'tharr-Vel"]


def test_the_prompts_count_of_accented_names_never_falls_short_of_whispers(monkeypatch: MonkeyPatch) -> None:
    # three characters a token said "Œil-de-Bœuf" took 5 tokens, Whisper's tokenizer 10: a prompt "fitting" 220
    # tokens took 224, and Whisper drops a long prompt's start, the most important names
    tokenizer = providers_stt._whisper_tokenizer()
    assert tokenizer is not None  # Whisper base is a dependency
    real = {n: len(tokenizer.encode(" - " + n, add_special_tokens=False).ids) for n in ACCENTED}
    assert all(providers_stt.estimate_tokens(" - " + n) == real[n] for n in ACCENTED)
    prompt = build_name_prompt(ACCENTED * 20, budget=60)
    assert len(tokenizer.encode(" " + prompt, add_special_tokens=False).ids) <= 60
    # without the tokenizer, the estimate still errs high
    monkeypatch.setattr(providers_stt, "_whisper_tokenizer", lambda: None)
    assert all(providers_stt.estimate_tokens(" - " + n) >= real[n] for n in ACCENTED)
