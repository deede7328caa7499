"""What players read of a text that names a secret entity: the name is hidden, everything else stays."""

from __future__ import annotations

from memory.graph import SecretMask
from memory.jobs import recap_for_players


def test_a_secret_name_is_hidden_whatever_its_case_spacing_or_ending() -> None:
    mask = SecretMask(["Vaskerrin Holt", "Eldrinax"])
    assert mask("Eldrinax's lair, ELDRINAX, eldrinax.") == "[secret]'s lair, [secret], [secret]."
    assert mask("then vaskerrin   Holt\nspoke") == "then [secret]\nspoke"  # a multi-word name however spaced


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
