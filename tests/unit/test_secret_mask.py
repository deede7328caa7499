"""What players read of a text that names a secret entity: the name is hidden, everything else stays."""

from __future__ import annotations

from memory.graph import SecretMask
from memory.jobs import recap_for_players


def test_a_secret_name_is_hidden_whatever_its_case_spacing_or_ending() -> None:
    mask = SecretMask(["Vaskerrin Holt", "Eldrinax"])
    assert mask("Eldrinax's lair, ELDRINAX, eldrinax.") == "[secret]'s lair, [secret], [secret]."
    assert mask("then vaskerrin   Holt\nspoke") == "then [secret]\nspoke"  # a multi-word name however spaced


def test_a_plural_of_a_secret_name_is_hidden_as_the_name() -> None:
    """The search finds "the Vaskerrins' ship" by its stem, so a player reading the line must not see it."""
    mask = SecretMask(["Vaskerrin", "Ash"])
    assert mask("The Vaskerrins sail; the Vaskerrins' ship, VASKERRINS.") == (
        "The [secret] sail; the [secret]' ship, [secret]."
    )
    assert mask("ashes, Ashley, Vaskerrinsen") == "[secret], Ashley, Vaskerrinsen"  # a plural, not another word
    # "es" only where English writes it: "Tim" hid "times", "Jam" would hide "James"
    assert (
        SecretMask(["Tim", "Jam", "Fox"])("three times, James, the Foxes, Tims")
        == "three times, James, the [secret], [secret]"
    )


def test_only_whole_words_and_the_longest_name_first() -> None:
    mask = SecretMask(["Holt", "Vaskerrin Holt", "C++ Guild"])
    assert mask("Holton and Holtz met Vaskerrin Holt") == "Holton and Holtz met [secret]"  # one mask, not two
    assert mask("the C++ Guild (and C+ guild)") == "the [secret] (and C+ guild)"  # names are text, not patterns


def test_no_secret_names_changes_nothing() -> None:
    assert SecretMask([])("Eldrinax sleeps") == "Eldrinax sleeps"
    assert SecretMask(["  "])("Eldrinax sleeps") == "Eldrinax sleeps"


def test_a_recap_for_players_hides_names_and_drops_them_from_involved() -> None:
    summary = "DM: Eldrinax watches from Ironhold.\nAna: I buy rope.\nInvolved: Ironhold, Eldrinax"
    assert recap_for_players(summary, SecretMask(["Eldrinax"])) == (
        "DM: [secret] watches from Ironhold.\nAna: I buy rope.\nInvolved: Ironhold"
    )
    # the list goes when only secrets were in it
    assert recap_for_players("Ana: hi there all.\nInvolved: Eldrinax", SecretMask(["Eldrinax"])) == "Ana: hi there all."


def test_a_guess_at_a_secret_name_is_dropped_whole_though_one_of_its_words_is_hidden_alone() -> None:
    """ "pact" names The Pact of Ash and Water alone: hidden first, it broke the name's run, and "ash", "water" were
    left to find the line that said it. The words as the search stems them, a stop word none."""
    mask = SecretMask(["The Pact of Ash and Water", "pact", "The Who"])
    stem = {"pact": "pact", "pacts": "pact", "ash": "ash", "water": "water", "signed": "sign"}
    said = "the pact pacts of ash and water who signed".split()
    stems = {w: [stem[w.lower()]] if w.lower() in stem else [] for w in [*said, *(w.title() for w in said)]}
    for guess in ("pact of ash and water", "the pacts of ash and water", "The Pact of Ash and Water"):
        assert [w for w in mask.unsaid(guess.split(), stems) if stems[w]] == [], guess
    assert mask.unsaid("who signed the pact".split(), stems) == ["who", "signed", "the"]
    assert mask.unsaid("ash and water".split(), stems) == ["ash", "and", "water"]  # not the name: no guess at it
    assert mask.unsaid("the who signed".split(), stems) == ["signed"]  # what the mask hides, though no word stems


def test_a_secret_name_is_hidden_in_every_spelling_a_line_may_write_it() -> None:
    """A table, a transcript or a phone writes a name without its accents, decomposed (NFD), with another
    apostrophe or none, a hyphen as a space or nothing: each is the name, as lookup reads it, hidden whole."""
    import unicodedata

    def nfd(text: str) -> str:
        return unicodedata.normalize("NFD", text)

    mask = SecretMask(["Devo'ssa", "Sister Mórwen", "Mórwen", "Aubigné", "Vel-Ashkâr", "Æthelric", "Straße"])
    for said in ("Devo'ssa", "Devossa", "Devoʼssa", "Devo’ssa", "Devo´ssa", "Devo`ssa", "DEVO SSA"):
        assert mask(f"ask {said}, then") == "ask [secret], then", said
    assert mask("what's Devo’ssa's plan?") == "what's [secret]'s plan?"  # whole, not "[secret]’[secret]"
    typed = SecretMask(["Kal’thar", "Ix´Chel"])  # the name itself typed with ’ or ´
    assert typed("Kal'thar's axe, Kalthar, Ix'Chel, IxChel") == "[secret]'s axe, [secret], [secret], [secret]"
    for said in ("Morwen", "MORWEN", nfd("Mórwen"), "Sister Morwen", nfd("Sister Mórwen")):
        assert mask(f"the name {said}.") == "the name [secret].", said
    assert mask("Morwen's ring, " + nfd("Mórwen's ring")) == "[secret]'s ring, [secret]'s ring"
    assert mask("Lady Aubigne's letters, " + nfd("d'Aubigné") + ".") == "Lady [secret]'s letters, d'[secret]."
    for said in ("Vel-Ashkâr", "Vel Ashkar", "VelAshkar", "vel–ashkar", "Vel-Ashkar's", nfd("Vel Ashkâr")):
        assert mask(f"to {said} gate") in ("to [secret] gate", "to [secret]'s gate"), said
    assert mask("Aethelric, AEthelric and ÆTHELRIC; strasse") == "[secret], [secret] and [secret]; [secret]"
    assert mask("Morwenna and Velvet Ashes") == "Morwenna and Velvet Ashes"  # still whole words only


def test_a_hyphenated_secret_name_said_with_spaces_is_hidden_whole() -> None:
    mask = SecretMask(["Mother-of-Thorns", "thorns", "Black-Thorn Gate"])
    assert mask("The Mother of Thorns dwells; mother of thorns; Mother–of–Thorns; motherofthorns") == (
        "The [secret] dwells; [secret]; [secret]; [secret]"
    )
    assert mask("The Black Thorn Gate opens, the blackthorn gate") == "The [secret] opens, the [secret]"


def test_a_guess_at_a_secret_name_in_another_spelling_is_dropped_whole() -> None:
    """ "thorns" names Mother-of-Thorns alone: taken first by its stem, it left "mother" to find the lines."""
    mask = SecretMask(["Mother-of-Thorns", "thorns", "Mórwen"])
    stem = {"mother": "mother", "thorns": "thorn", "morwen": "morwen", "roses": "rose"}
    said = "Mother of Thorns MORWEN roses".split()
    stems = {w: [stem[w.lower()]] if w.lower() in stem else [] for w in [*said, *mask.names]}
    assert mask.unsaid(said, stems) == ["roses"]


def test_a_secret_name_written_with_an_invisible_character_is_hidden() -> None:
    """Text pasted from a web page or a word processor carries soft hyphens and zero-width spaces: the search drops
    them (SQL ``visible()``), so a line with "Mor\u00adwen" is found, and players would read it as "Morwen"."""
    mask = SecretMask(["Mórwen", "Vel Ashkar"])
    for invisible in "\u00ad\u200b\u200c\u200d\u2060\ufeff":
        assert mask(f"DM: Mor{invisible}wen smiles.") == "DM: [secret] smiles.", hex(ord(invisible))
    assert mask("Vel\u200b Ash\u00adkar and Mór\ufeffwen's ring") == "[secret] and [secret]'s ring"


def test_a_period_or_comma_of_a_secret_name_may_be_dropped() -> None:
    """A transcript writes "Dr Black" as often as "Dr. Black": the period is an abbreviation's, said or not."""
    mask = SecretMask(["Dr. Black", "St. Vellan", "C++ Guild"])
    said = "Dr Black came in. Dr. Black sat down. Dr.Black left. DR BLACK, st vellan, St.Vellan."
    assert mask(said) == "[secret] came in. [secret] sat down. [secret] left. [secret], [secret], [secret]."
    assert mask("Dr Blackwood, the C+ guild") == "Dr Blackwood, the C+ guild"  # still whole words, other marks kept


def test_an_apostrophe_or_hyphen_inside_a_word_of_a_secret_name_is_the_name() -> None:
    """A line (a transcript, a player's own spelling) may split a one-word name with ' or -, or join it back."""
    mask = SecretMask(["Devossa", "Kal'thar"])
    said = "The envoy Devo'ssa arrives. Then Devo-ssa bows, Devo’ssa's aide, and Devossa smiles; Kal-thar, Kalthar."
    assert mask(said) == "The envoy [secret] arrives. Then [secret] bows, [secret]'s aide, and [secret] smiles; " + (
        "[secret], [secret]."
    )
    assert mask("Devo ssa, Devo'ssan") == "Devo ssa, Devo'ssan"  # a space splits two words; whole words only
