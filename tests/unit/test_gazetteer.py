"""The gazetteer: which known entities a text mentions, as written (misheard names are the corrector's)."""

from __future__ import annotations

from memory.extraction.schema import KnownEntity
from memory.gazetteer import Gazetteer
from memory.models import EntityType


def known(i: int, name: str, *aliases: str) -> KnownEntity:
    return KnownEntity(id=i, name=name, type=EntityType.npc, aliases=list(aliases))


GAZETTEER = Gazetteer(
    [
        known(1, "Mira Tolvanek", "Mira"),
        known(2, "Zyx'ara"),
        known(3, "Ironhold"),
        known(4, "Half-Orc"),
        known(5, "Hunter's Mark"),
        known(6, "Vox Machina", "Vox"),
        known(7, "Élodie"),
        known(8, "The Sunken Crown"),
        known(9, "Raise the Sunken Crown"),
        known(10, "St. Cuthbert"),
        known(11, 'Bo "The Breaker"'),
        known(12, "Half Orc"),
        known(13, "Aramente"),
        known(14, "Aramenté"),
        known(15, "The Hells"),
        known(16, "Gilmore's"),
        known(17, "Hunter"),
        known(18, "Hunter's"),
    ]
)


def ids(text: str) -> list[int]:
    return [e.id for e in GAZETTEER.mentions(text)]


def test_names_and_aliases_are_found_whole_longest_first_each_once() -> None:
    assert ids("Mira says Zyxara should go to Ironhold's gate, Mira said") == [1, 2, 3]
    assert ids("Vox Machina rides; vox is back") == [6]
    text = "the vox machina's wagon"
    assert [text[s:e] for s, e, _ in GAZETTEER.find(text)] == ["vox machina's"]  # the possessive goes with it
    assert ids("nothing here, not Miranda nor Ironholds") == []
    # a name inside a longer one is mentioned too, though a tagger wants mentions that do not overlap
    text = "we must raise the Sunken Crown"
    assert ids(text) == [9, 8]
    assert [text[s:e] for s, e, _ in GAZETTEER.find(text)] == ["raise the Sunken Crown"]


def test_case_accents_apostrophes_and_hyphens_aside() -> None:
    assert ids("a half-orc, a half‐orc, a HALFORC") == [4]  # an ASCII hyphen, then U+2010
    assert ids("a Half Orc") == [12]  # an entity's own spelling before another's spaced at its hyphen
    assert ids("she casts hunter's mark") == [5]
    # a possessive is part of a name only where the name has it
    assert ids("what the hell's going on") == [] and ids("what the hells") == [15]
    assert ids("we went to gilmore's") == [16]
    assert ids("we went to Gilmore’s") == [16]  # a curly apostrophe
    assert ids("the hunter's bow") == [18] and ids("the hunter's") == [18] and ids("the hunter") == [17]
    assert ids("elodie and ZYX'ARA") == [7, 2]
    assert ids("aramenté") == [14] and ids("Aramente") == [13]  # two entities spelled alike: the one written


def test_a_name_does_not_run_across_punctuation() -> None:
    text = "Vox. Machina"
    assert [text[s:e] for s, e, _ in GAZETTEER.find(text)] == ["Vox"]  # the alias alone, not the two-word name
    # unless the punctuation is the name's own
    assert ids('St. Cuthbert, Bo "The Breaker" said, and St Cuthbert again') == [10, 11]
