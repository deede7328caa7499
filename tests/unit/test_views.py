"""Discord-limit helpers of bot/views.py: pages and fields that never exceed what Discord accepts."""

from __future__ import annotations

import discord

from bot.views import MAX_DESCRIPTION, MAX_EMBED_TOTAL, add_field_within, fit_lines, paged_embeds


def test_paged_embeds_fill_pages_with_whole_lines() -> None:
    lines = [f"{n:03d} " + "x" * 296 for n in range(50)]  # 300 characters each: 13 a page (13*300+12 ≤ 4096)
    pages = paged_embeds("t", lines)
    descriptions = [p.description or "" for p in pages]
    assert [len(d.split("\n")) for d in descriptions] == [13, 13, 13, 11]
    assert [line for d in descriptions for line in d.split("\n")] == lines


def test_paged_embeds_clips_only_a_line_longer_than_a_page() -> None:
    pages = paged_embeds("t", ["short", "y" * 5000, "after"])
    assert [p.description for p in pages] == ["short", "y" * 4095 + "…", "after"]
    assert all(len(p.description or "") <= MAX_DESCRIPTION for p in pages)
    assert paged_embeds("t", [])[0].description == "nothing yet"


def test_fit_lines_says_how_many_were_left_out() -> None:
    assert fit_lines(["a", "b"], 10) == "a\nb"
    text = fit_lines(["x" * 10] * 5, 40)
    assert text == "x" * 10 + "\n" + "x" * 10 + "\n… and 3 more" and len(text) <= 40
    assert fit_lines(["z" * 100, "b"], 30).endswith("…\n… and 1 more")


def test_add_field_within_keeps_the_total_and_field_count() -> None:
    embed = discord.Embed(title="t" * 256, description="d" * 4096)
    for n in range(30):
        add_field_within(embed, f"f{n}", "v" * 2000)
    assert len(embed) <= MAX_EMBED_TOTAL and all(len(f.value or "") <= 1024 for f in embed.fields)
    small = discord.Embed(title="t")
    for n in range(30):
        add_field_within(small, f"f{n}", "v")
    assert len(small.fields) == 25


def test_a_review_button_on_an_item_decided_already_says_what_it_was_in_words() -> None:
    # the DM reads the card the button is on: the reply says what happened, not the item's id
    from bot.checks import user_message
    from memory.errors import AlreadyDecidedError

    rejected = AlreadyDecidedError("e4", "rejected", "new npc 'Tobin'")
    assert str(rejected) == "e4 was already rejected: new npc 'Tobin'"  # the command line, given many ids
    assert user_message(rejected) == "Already rejected: new npc 'Tobin'."
    fact = AlreadyDecidedError("f2", "accepted", "Jazna leads Whitestone", correctable=True)
    assert user_message(fact) == (
        "Already accepted: Jazna leads Whitestone. To correct it, /entity link the right one (this one is kept as "
        "history), or /entity unlink it if it was never true."
    )
