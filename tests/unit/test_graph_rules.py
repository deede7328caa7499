"""The graph's rules without a database: vouched facts, review status, contradiction, what players see, which of
two copies of a fact a merge keeps, and what a merge does with names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.errors import InvalidInputError
from memory.graph.rules import (
    CLOSE_NAME,
    FactCopy,
    FactKey,
    can_contradict,
    contradicts,
    copy_rank,
    everyday_masked,
    hidden_by_merge,
    merge_drops,
    name_closeness,
    names_to_mask,
    new_never_heard_as,
    one_way,
    plan_merge,
    players_see,
    players_see_fact,
    stated_as,
    status_for,
    unhidden_secrets,
    vouched,
)
from memory.models import Entity, EntityType, Provenance, ReviewStatus, Source, Visibility
from memory.text import MAX_ALIASES

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def entity(id: int, name: str, **fields: object) -> Entity:
    defaults: dict[str, object] = {
        "description": "",
        "aliases": [],
        "attributes": {},
        "visibility": Visibility.public,
        "status": ReviewStatus.accepted,
        "provenance": Provenance(),
    }
    return Entity.model_validate(
        {"id": id, "campaign_id": 1, "name": name, "type": EntityType.npc, "created_at": NOW, "updated_at": NOW}
        | defaults
        | fields
    )


@pytest.mark.parametrize(
    ("provenance", "expected"),
    [
        (Provenance(), True),  # the model's default source is the DM
        (Provenance(source=Source.campaign_file), True),
        (Provenance(source=Source.stated, confidence=0.99), False),
        (Provenance(source=Source.stated, confidence=0.2, dm_confirmed=True), True),
        (Provenance(source=Source.inferred), False),
    ],
)
def test_the_dms_word_is_what_the_dm_typed_loaded_or_confirmed(provenance: Provenance, expected: bool) -> None:
    assert vouched(provenance) is expected


def test_a_guess_is_accepted_only_at_the_threshold_and_the_dms_word_always() -> None:
    assert status_for(Provenance(source=Source.stated, confidence=0.7), 0.7) == ReviewStatus.accepted
    assert status_for(Provenance(source=Source.stated, confidence=0.69), 0.7) == ReviewStatus.pending
    assert status_for(Provenance(source=Source.dm, confidence=0.0), 0.7) == ReviewStatus.accepted


def test_a_value_or_a_single_valued_edge_may_close_another_fact_and_a_plain_edge_never() -> None:
    assert can_contradict("status", "dead")
    assert can_contradict("knows", "Elvish")  # an attribute fact is single-valued per type
    assert can_contradict("lives_in", None)
    assert not can_contradict("knows", None)


def test_a_value_contradicts_another_value_of_its_type_not_an_edge_nor_itself() -> None:
    dead = FactKey(id=2, source_id=1, type="status", value="dead")
    alive = FactKey(id=1, source_id=1, type="status", value="alive")
    assert contradicts(dead, alive)
    assert not contradicts(dead, dead)
    assert not contradicts(dead, FactKey(id=3, source_id=1, type="status", value="dead"))  # the same fact again
    assert not contradicts(dead, FactKey(id=4, source_id=9, type="status", value="alive"))  # another entity's
    assert not contradicts(dead, FactKey(id=5, source_id=1, type="mood", value="grim"))  # another type
    knows_bob = FactKey(id=6, source_id=1, type="knows", target_id=7)
    assert not contradicts(FactKey(id=8, source_id=1, type="knows", value="Elvish"), knows_bob)


def test_a_single_valued_type_closes_edges_and_values_alike() -> None:
    road = FactKey(id=2, source_id=1, type="home", value="the road")
    keep = FactKey(id=1, source_id=1, type="home", target_id=5)
    assert contradicts(road, keep)
    assert contradicts(FactKey(id=3, source_id=1, type="home", target_id=6), keep)


def test_only_an_accepted_current_fact_is_closed() -> None:
    dead = FactKey(id=2, source_id=1, type="status", value="dead")
    assert not contradicts(dead, FactKey(id=1, source_id=1, type="status", value="alive", status=ReviewStatus.pending))
    assert not contradicts(dead, FactKey(id=1, source_id=1, type="status", value="alive", current=False))


def test_players_see_what_is_accepted_and_public_and_a_fact_only_with_its_target() -> None:
    public = entity(1, "Vell", status=ReviewStatus.accepted, visibility=Visibility.public)
    secret = entity(2, "Holt", status=ReviewStatus.accepted, visibility=Visibility.secret)
    pending = entity(3, "Mira", status=ReviewStatus.pending, visibility=Visibility.public)
    assert players_see(public)
    assert not players_see(secret)
    assert not players_see(pending)
    assert players_see_fact(public, None)
    assert players_see_fact(public, public)
    assert not players_see_fact(public, secret)


def copy(id: int, status: ReviewStatus, days: int = 0, **provenance: object) -> FactCopy:
    return FactCopy(id=id, status=status, provenance=Provenance(**provenance), valid_from=NOW + timedelta(days=days))


def test_of_two_copies_a_merge_keeps_the_accepted_then_the_dms_then_the_surest_then_the_oldest() -> None:
    def best(*copies: FactCopy) -> int:
        return min(copies, key=copy_rank).id

    guess = {"source": Source.stated}
    assert best(copy(1, ReviewStatus.pending), copy(2, ReviewStatus.accepted, **guess)) == 2
    assert best(copy(1, ReviewStatus.accepted, **guess, confidence=1.0), copy(2, ReviewStatus.accepted)) == 2
    assert best(copy(1, ReviewStatus.accepted, **guess, confidence=0.8), copy(2, ReviewStatus.accepted, **guess)) == 2
    assert best(copy(1, ReviewStatus.accepted, days=1), copy(2, ReviewStatus.accepted)) == 2
    assert best(copy(2, ReviewStatus.accepted), copy(1, ReviewStatus.accepted)) == 1


def test_a_merge_of_an_entity_into_itself_is_refused_saying_why() -> None:
    vell = entity(1, "Vell", aliases=["the Pale"])
    with pytest.raises(InvalidInputError, match="into itself"):
        plan_merge(vell, vell, "Vell", "vell ")
    with pytest.raises(InvalidInputError, match="both name 'Vell'"):
        plan_merge(vell, vell, "the Pale", "Vell")


def test_a_merge_gives_into_the_names_it_lacks_unless_a_secret_would_reach_players() -> None:
    gorrim = entity(1, "Gorrim", aliases=["the smith", "Gorrim Ashfoot"])
    ashfoot = entity(2, "Gorrim Ashfoot")
    assert plan_merge(gorrim, ashfoot, 1, 2).names == ["Gorrim", "the smith"]
    assert not plan_merge(gorrim, ashfoot, 1, 2).hide
    secret = gorrim.model_copy(update={"visibility": Visibility.secret})
    assert plan_merge(secret, ashfoot, 1, 2).hide


def test_a_merge_over_the_alias_cap_is_refused_before_anything_changes() -> None:
    many = entity(1, "Many", aliases=[f"name {i}" for i in range(MAX_ALIASES)])
    with pytest.raises(InvalidInputError, match="more than the"):
        plan_merge(entity(2, "One"), many, 2, 1)


def test_a_secret_into_keeps_from_players_the_merged_name_and_a_proposals_aliases() -> None:
    into = entity(1, "Holt", visibility=Visibility.secret)
    accepted = entity(2, "Vaskerrin", status=ReviewStatus.accepted)
    proposal = entity(3, "Vask", status=ReviewStatus.pending)
    assert hidden_by_merge(accepted, into, ["Vaskerrin", "the Pale"]) == ["Vaskerrin"]
    assert hidden_by_merge(proposal, into, ["Vask", "the Pale"]) == ["Vask", "the Pale"]
    assert hidden_by_merge(accepted, into.model_copy(update={"visibility": Visibility.public}), ["Vaskerrin"]) == []


def test_a_merge_says_what_it_dropped_of_the_merged_ones_description_and_attributes() -> None:
    source = entity(1, "Gorrim", description="A smith.", attributes={"age": "50", "hair": "red"})
    into = entity(2, "Gorrim Ashfoot", description="A dwarf.", attributes={"age": "60"})
    assert merge_drops(source, into, hide=False) == ("A smith.", {"age": "50"})
    assert merge_drops(source, into.model_copy(update={"description": ""}), hide=False) == ("", {"age": "50"})
    assert merge_drops(source, into, hide=True) == ("", {})


def test_the_never_heard_as_phrases_each_lacked_are_restored_after_a_merge() -> None:
    source = entity(1, "Frumpkin", not_heard_as=["from kin"])
    into = entity(2, "Frump", not_heard_as=["frump", "from-kin"])
    assert new_never_heard_as(source, into) == ["frump"]  # "from kin" is "from-kin", spacing aside


def test_players_are_kept_from_a_secret_name_and_its_rare_words_they_cannot_read_elsewhere() -> None:
    zipf = {"vaskerrin": 0.0, "holt": 3.7, "pale": 4.1, "the": 7.0, "magister": 2.0}.get
    names = [("Vaskerrin Holt", True, "npc"), ("the Pale Magister", False, None), ("Holt", True, "npc")]
    names += [("Mira", False, "npc")]
    masked = names_to_mask(names, lambda w: zipf(w, 0.0))
    assert masked[:2] == ["Vaskerrin Holt", "Holt"]
    assert set(masked[2:]) == {"vaskerrin", "holt"}  # "pale" and "magister": in a name players read
    # a name a public entity bears now is players' to read, whatever once bore it
    assert names_to_mask([("Mira", True, "npc"), ("mira", False, None)], lambda w: 0.0) == []
    # so is one spelled as theirs but for a leading "The" or accents: hiding it would mask the public one
    alike = [("The Whispering Gate", True, "location"), ("Whispering Gate", False, "location")]
    alike += [("Café Noir", True, "location"), ("the cafe noir", False, None)]
    assert names_to_mask(alike, lambda w: 0.0) == []
    assert names_to_mask([("Café Vrask", True, "npc"), ("Cafe", False, "location")], lambda w: 0.0) == [
        "Café Vrask",
        "vrask",
    ]
    # what the recogniser writes for a secret name: whole, not its ordinary words
    heard = ["vast carrion", "the Whispering gate"]
    assert names_to_mask(alike, lambda w: 9.0, heard=heard) == ["vast carrion"]


def test_a_public_name_the_mask_would_read_as_a_plural_keeps_its_singular_from_the_mask() -> None:
    """The mask hides a name's plural too: a public "Bastions" must keep "bastion" of the secret "Hosin Bastion"
    plain, as a public "Bastion" did. Not a secret whole name: a secret "Raven" beside the public "Ravens" stays
    hidden (unmasked, "Raven slips the duke a vial" told players the secret)."""
    names = [("Hosin Bastion", True, "npc"), ("Bastions", False, "faction"), ("Hosin", False, None)]
    assert names_to_mask(names, lambda w: 0.0) == ["Hosin Bastion"]
    ravens = [("Raven", True, "npc"), ("The Ravens", False, "faction")]
    assert names_to_mask(ravens, lambda w: 0.0) == ["Raven"]
    assert unhidden_secrets(ravens, ["The Ravens"]) == []
    from memory.graph import SecretMask

    assert SecretMask(["Raven"])("Raven slips the duke a vial.") == "[secret] slips the duke a vial."
    # not the other way round: the mask of "Foxes" does not hide "Fox"
    assert names_to_mask([("Marsh Foxes", True, "faction"), ("Fox", False, "npc")], lambda w: 0.0) == ["Marsh Foxes"]


def test_the_type_an_import_names_a_second_record_by_is_no_word_to_hide() -> None:
    """An import names a private record sharing the public fort's name "Harrowgate (npc)": players must not read
    "[secret]" for every "npc" or "faction" said, yet the record's name is hidden whole, its ")" too."""
    from memory.graph import SecretMask

    names = [
        ("Harrowgate", False, "location"),
        ("Harrowgate (npc)", True, "npc"),
        ("Zorath (faction)", True, "faction"),
    ]
    masked = names_to_mask(names, lambda w: 0.0)
    assert masked == ["Harrowgate (npc)", "Zorath (faction)", "zorath"]  # the name players say, not its type
    said = "Its old soldier is Harrowgate (npc). The NPC joins a faction at Harrowgate; Zorath (Faction)."
    assert SecretMask(masked)(said) == "Its old soldier is [secret]. The NPC joins a faction at Harrowgate; [secret]."


def test_the_dm_is_told_of_the_english_words_a_secret_name_masks_wherever_they_are_said() -> None:
    """ "The Exile" masks every "the exile" a player reads, "Vaskerrin Holt" every "holt": the DM who adds one hears
    which words; of an invented name ("Eldrinax") or one a table says only as a name ("Mira"), nothing."""
    common = {"vaskerrin": 0.0, "holt": 3.7, "the": 7.7, "exile": 3.8, "gate": 4.5, "mira": 3.3, "raven": 3.8}

    def zipf(word: str) -> float:
        return common.get(word, 0.0)

    names = ["Vaskerrin Holt", "The Exile", "Eldrinax", "Mira", "The Gate", "Raven Queen", "Holt"]
    masked = names_to_mask([(n, True, "npc") for n in names], zipf)

    def told(*given: str) -> list[str]:
        return everyday_masked(masked, given, zipf)

    assert told("Vaskerrin Holt") == ["holt"] and told("Holt") == ["holt"]
    # a name of an article and a word is said whole, as the mention index reads it: "an exile" stays
    assert told("The Exile") == ["the exile"]
    assert told("The Gate") == ["the gate"]  # its words are not masked alone ("gate"), the name is, wherever said
    assert told("Eldrinax") == told("Mira") == told() == []
    assert told("The Exile", "Mira", "Vaskerrin Holt") == ["holt", "the exile"]
    # a word players read in a public name is not masked: nothing to tell
    farm = names_to_mask([("Vaskerrin Holt", True, "npc"), ("Holt Farm", False, "location")], zipf)
    assert everyday_masked(farm, ["Vaskerrin Holt"], zipf) == []


def test_a_plural_word_of_a_secret_name_is_weighed_with_its_singular() -> None:
    """ "thorns" (3.25) of Mother-of-Thorns is "thorn" (3.48) said of more than one: English says the word as often as
    "holt", so players read [secret] for a garden's thorns and the DM is told, as of "holt"."""
    common = {"mother": 5.2, "of": 7.4, "thorns": 3.25, "thorn": 3.48, "pip": 3.35, "pips": 2.9}

    def zipf(word: str) -> float:
        return common.get(word, 0.0)

    names = ["Mother-of-Thorns", "Pip"]
    masked = names_to_mask([(n, True, "npc") for n in names], zipf)
    assert everyday_masked(masked, ["Mother-of-Thorns"], zipf) == ["thorns"]
    assert everyday_masked(masked, ["Pip"], zipf) == []  # a singular is not weighed with its plural: a name


def test_a_secret_name_players_read_anyway_is_found_for_the_entity_just_named() -> None:
    """What the DM is warned of: a secret name unmasked because a readable one is spelled alike."""
    names = [("The Whispering Gate", True, "location"), ("Whispering Gate", False, "location")]
    names += [("Café Noir", True, "location"), ("Mira", False, "npc")]
    gate = [("The Whispering Gate", "Whispering Gate")]
    assert unhidden_secrets(names, ["The Whispering Gate"]) == gate  # the secret one added
    assert unhidden_secrets(names, ["whispering gáte"]) == gate  # or the public one, accents and case aside
    assert unhidden_secrets(names, ["Mira", "Café Noir"]) == []  # a secret name of its own, or another pair


def test_the_players_mask_of_a_mixed_campaign_keeps_its_names() -> None:
    """What is masked, pinned for a campaign of every kind of name (accents, apostrophes, hyphens, a leading
    "The", look-alikes of public names, heard phrases): a faster build must hide the same names."""
    zipf = {"the": 7.0, "gate": 5.0, "queen": 5.2, "holt": 3.7, "pale": 4.1, "crow": 3.9, "sister": 4.8, "ash": 4.2}
    zipf |= {"black": 5.5, "hand": 5.6, "old": 6.0, "road": 5.0}
    npc, place, faction = "npc", "location", "faction"
    names = [
        ("Vaskerrin Holt", True, npc), ("the Pale Magister", False, None), ("Queen Mab", True, npc),
        ("queen mäb", False, None), ("The Whispering Gate", True, place), ("Whispering Gate", False, place),
        ("Vex'ahlia", True, npc), ("Vexahlia's Crow", True, npc), ("Café Noir", True, place),
        ("the cafe", False, place),
        ("Sister Ash-Wyn", True, npc), ("Ashwyn Road", False, place), ("Black Hand", True, faction),
        ("Grom", False, npc), ("the smith", False, None), ("Éldrïn Korvash", True, npc), ("Korvash", False, place),
        ("Old Tom", True, npc), ("Tom", False, npc), ("Ironhold", False, place), ("Eldrin", False, npc),
    ]  # fmt: skip
    heard = ["vast carrion", "whispering gáte", "pale magister", "mob queen"]
    masked = names_to_mask(names, lambda w: zipf.get(w, 0.0), heard=heard)
    whole = ["Vaskerrin Holt", "Vex'ahlia", "Vexahlia's Crow", "Café Noir", "Sister Ash-Wyn", "Black Hand"]
    whole += ["Éldrïn Korvash", "Old Tom", "vast carrion", "mob queen"]
    assert masked[: len(whole)] == whole
    # "éldrïn" is Eldrin's to players, accents aside; "ash", "road", "old": English or theirs; a person's first and
    # last names alone and the parts of a one-word one ("vex", "ahlia": the search reads them apart), a place's or a
    # faction's words ("noir", "hand") never
    assert set(masked[len(whole) :]) == {"vaskerrin", "holt", "vexahlia", "vex", "ahlia", "crow", "wyn"}


def test_did_you_mean_matches_whole_words_never_letters_inside_one() -> None:
    """WRatio suggested "Oni" for "Nonexistent Person" and "Goristro" or "Herd of the Storm" for "Gorm": a run of
    letters inside a word. A name is close as a whole, by as many of its words as typed, or among the words typed."""
    from rapidfuzz import process

    from memory.correction.text import normalize

    names = ["Oni", "Orn", "Senth", "Goran Vedmire", "Goristro", "Herd of the Storm", "Grom", "Taryon Darrington"]
    names += ["Death of Thordak", "Doty", "Thed", "Kash"]

    def close(typed: str) -> list[str]:
        found = process.extract(typed, names, scorer=name_closeness, processor=normalize, score_cutoff=CLOSE_NAME)
        return [name for name, _, _ in found]

    assert close("Nonexistent Person") == []
    assert close("Gorm") == ["Grom"]
    assert close("Tary") == ["Taryon Darrington"]
    assert close("Thordack") == ["Death of Thordak"]
    assert close("Doty the robot") == ["Doty"]
    assert close("Sister Ash") == []


def test_an_inverse_edge_is_weighed_as_its_other_end_states_it() -> None:
    """ "Mira has the Sunblade" is "the Sunblade owned_by Mira": a new holder closes the old, stated from either end;
    "Balcor leader_of Greywatch" is "Greywatch ruled_by Balcor" (tester report ud, items 1 and 2)."""
    sunblade, thalia, mira, korrin, dagger = 1, 2, 3, 4, 5
    owned_by_thalia = FactKey(id=1, source_id=sunblade, type="owned_by", target_id=thalia)
    mira_has = FactKey(id=2, source_id=mira, type="has", target_id=sunblade)
    assert can_contradict("has", None) and can_contradict("carried", None)
    assert contradicts(mira_has, owned_by_thalia)
    assert contradicts(FactKey(id=3, source_id=korrin, type="carried", target_id=sunblade), mira_has)
    assert contradicts(FactKey(id=4, source_id=sunblade, type="owned_by", target_id=korrin), mira_has)
    assert not contradicts(FactKey(id=5, source_id=sunblade, type="owned_by", target_id=mira), mira_has)  # the same
    assert not contradicts(FactKey(id=6, source_id=mira, type="has", target_id=dagger), mira_has)  # two items
    assert not contradicts(FactKey(id=7, source_id=mira, type="has", value="a scar"), mira_has)  # a value of hers
    # a sheet's "owns", as an import writes it, is a holder too: a new one told in play closes it
    assert contradicts(mira_has, FactKey(id=8, source_id=korrin, type="owns", target_id=sunblade))
    greywatch, serah, balcor, circle = 1, 2, 3, 4
    serah_rules = FactKey(id=1, source_id=greywatch, type="ruled_by", target_id=serah)
    balcor_leads = FactKey(id=2, source_id=balcor, type="leader_of", target_id=greywatch)
    assert contradicts(balcor_leads, serah_rules)
    assert contradicts(FactKey(id=3, source_id=greywatch, type="ruled_by", target_id=serah), balcor_leads)
    assert not contradicts(FactKey(id=4, source_id=balcor, type="leader_of", target_id=circle), balcor_leads)


def test_a_synonym_is_weighed_as_the_type_it_says_in_other_words() -> None:
    """ "the Iron Circle led_by Greta" is "the Iron Circle ruled_by Greta", so the other end of "Greta leader_of the
    Iron Circle"; "killed" is "killed_by" from the other end, kin and allies one fact either way."""
    circle, greta, balcor = 1, 2, 3
    led_by_greta = FactKey(id=1, source_id=circle, type="led_by", target_id=greta)
    assert one_way("led_by", circle, greta) == ("ruled_by", circle, greta)
    assert one_way("led_by", circle, None) == ("ruled_by", circle, None)  # a value in other words too
    assert can_contradict("led_by", None) and can_contradict("killed", None)
    assert contradicts(FactKey(id=2, source_id=balcor, type="leader_of", target_id=circle), led_by_greta)
    assert contradicts(FactKey(id=3, source_id=circle, type="ruled_by", target_id=balcor), led_by_greta)
    assert not contradicts(FactKey(id=4, source_id=greta, type="leader_of", target_id=circle), led_by_greta)
    assert not contradicts(FactKey(id=5, source_id=greta, type="led_by", target_id=balcor), led_by_greta)
    assert one_way("killed", greta, balcor) == ("killed_by", balcor, greta)
    assert not can_contradict("parent_of", None) and not can_contradict("ally_of", None)  # one of many
    # what a stored copy of the same fact may be typed as: from the same end, and from the other
    assert stated_as("led_by") == (["ruled_by"], ["leader_of"])
    assert stated_as("ruled_by") == (["led_by"], ["leader_of"])
    assert stated_as("leader_of") == ([], ["led_by", "ruled_by"])
    assert stated_as("has")[1] == ["owned_by"] and "carried" in stated_as("has")[0]
    assert stated_as("child_of") == ([], ["parent_of"])
    assert stated_as("ally_of") == (["allied_with"], ["allied_with", "ally_of"])
    assert stated_as("knows") == ([], [])
    assert stated_as("sibling_of") == ([], ["sibling_of"])


def test_the_parts_of_a_secret_one_word_name_are_hidden_whatever_it_names() -> None:
    """The search reads "Kal'thar" as "kal" and "thar": a player's guess at "Thar" must find nothing, a place's
    one-word name as a person's; a place of several words stays hidden whole only."""
    masked = names_to_mask([("Kal'thar", True, "location"), ("Tithe Barrow", True, "location")], lambda w: 0.0)
    assert set(masked) == {"Kal'thar", "Tithe Barrow", "kal", "thar"}


def test_the_parts_of_a_hyphenated_secret_one_word_name_are_hidden_too() -> None:
    """The search reads "Vel-Ashkar" as "vel" and "ashkar", as it does "Kal'thar": a player's "Ashkar" finds nothing."""
    masked = names_to_mask([("Vel-Ashkar", True, "location")], lambda w: 0.0)
    assert set(masked) == {"Vel-Ashkar", "vel", "ashkar"}
