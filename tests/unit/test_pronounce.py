"""Pronunciations: CMUdict for English words, eSpeak NG's rules for invented names, as phone strings."""

from __future__ import annotations

import pytest

from memory.correction import pronounce
from memory.correction.pronounce import arpabet_code, name_phones, phrase_phones, word_phones


def test_english_words_come_from_cmudict() -> None:
    assert word_phones("please") == arpabet_code("P L IY1 Z".split())
    assert phrase_phones(["key", "love"]) == arpabet_code("K IY1 L AH1 V".split())


def test_invented_names_are_pronounced_by_espeak() -> None:
    # eSpeak NG reads "Keyleth" as k 'i: l @ T: one phone from "key love".
    assert word_phones("keyleth") == arpabet_code("K IY L AH TH".split())
    assert word_phones("vasselheim") != ""


def test_espeak_is_read_the_way_its_ipa_writes_it() -> None:
    # An r-coloured vowel before r has one R ("Tary": t 'e@ r i); "t S" is CH; a name is read whole, so a
    # linking r joins its words ("Fire Ashari": f 'aI3 r- a# S 'A@ r i).
    assert word_phones("tary") == arpabet_code("T EH R IY".split())
    assert word_phones("glintshore") == arpabet_code("G L IH N CH OW R".split())
    assert name_phones(("fire", "ashari")) == arpabet_code("F AY ER R AH SH AA R R IY".split())


def test_a_doubled_y_is_one_vowel() -> None:
    # eSpeak NG reads "kryyn" as k r 'aI I n, two syllables, as if it were "cry in"; after a vowel the y is a
    # consonant and stays doubled ("khayyam": k 'A: j j a m).
    assert word_phones("kryyn") == name_phones(("kryyn",)) == arpabet_code("K R IH N".split())
    assert word_phones("khayyam") == arpabet_code("K AA Y Y AE M".split())


def test_odd_input_has_no_pronunciation_or_a_harmless_one() -> None:
    assert word_phones("") == ""
    assert phrase_phones([]) == ""
    assert isinstance(word_phones("ꙮ"), str)  # never raises


def test_without_espeak_only_cmudict_words_are_pronounced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pronounce, "_espeak", lambda: None)
    word_phones.cache_clear()
    try:
        assert word_phones("zzyzxqwv") == ""
        assert phrase_phones(["please", "zzyzxqwv"]) == ""
        assert word_phones("please") != ""
        assert name_phones(("please", "zzyzxqwv")) == ""  # word by word: one word cannot be said
    finally:
        word_phones.cache_clear()
