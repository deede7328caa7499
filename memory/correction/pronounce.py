"""How words sound: ARPAbet phones from the CMU Pronouncing Dictionary, and from eSpeak NG for words it lacks.

Spelling hides sound ("key love" and Keyleth share four of five phones but few letters in place), so the
matcher also compares pronunciations. English words are read from CMUdict (the reference most recognisers
and re-spellings agree with); invented names and other words it lacks go through eSpeak NG's letter-to-sound
rules, loaded from the ``espeakng-loader`` wheel through its C API. Phones are written one character each so
that rapidfuzz's edit distances count phones, not letters.

Without eSpeak NG (a platform with no wheel) a word missing from CMUdict has no pronunciation and the
matcher falls back to spelling for it.
"""

from __future__ import annotations

import ctypes
import logging
import re
import threading
from functools import lru_cache
from itertools import pairwise

log = logging.getLogger(__name__)

#: The 39 ARPAbet phones without stress; each is written as one letter of this string's alphabet.
PHONES = "AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R S SH T TH UH UW V W Y Z ZH".split()
_CHAR = {p: chr(ord("A") + i) if i < 26 else chr(ord("a") + i - 26) for i, p in enumerate(PHONES)}

# eSpeak NG's ASCII phoneme mnemonics (en-us) as ARPAbet. r-coloured vowels carry their R; eSpeak's own
# allophones (flapped t#, syllabic n-, reduced I2/@2) are the phones a listener hears.
_ESPEAK = {
    "p": "P", "b": "B", "t": "T", "d": "D", "k": "K", "g": "G", "f": "F", "v": "V", "s": "S", "z": "Z",
    "h": "HH", "m": "M", "n": "N", "l": "L", "r": "R", "w": "W", "j": "Y", "T": "TH", "D": "DH", "S": "SH",
    "Z": "ZH", "tS": "CH", "dZ": "JH", "N": "NG", "x": "K", "C": "HH", "W": "W",
    "a": "AE", "aa": "AE", "a#": "AH", "A": "AA", "A:": "AA", "A@": "AA R", "0": "AA", "O": "AO", "O:": "AO",
    "O2": "AO", "O@": "AO R", "o@": "OW R", "@": "AH", "@2": "AH", "@5": "AH", "@L": "AH L", "3": "ER",
    "3:": "ER", "E": "EH", "e": "EH", "e@": "EH R", "eI": "EY", "I": "IH", "I2": "IH", "I#": "IH", "i:": "IY",
    "i": "IY", "y": "IY", "i@": "IY AH", "i@3": "IH R", "aI": "AY", "aI@": "AY AH", "aI3": "AY ER", "aU": "AW",
    "aU@": "AW ER", "OI": "OY", "oU": "OW", "o": "OW", "U": "UH", "u:": "UW", "u": "UW", "U@": "UH R", "V": "AH",
}  # fmt: skip
_ESPEAK_CODE = {k: "".join(_CHAR[p] for p in v.split()) for k, v in _ESPEAK.items()}
# An r-coloured vowel before an r is heard with one R, not two ("Tary": t 'e@ r i is T EH R IY), as eSpeak's
# own IPA writes it; "A@" and "U@" keep theirs inside a word ("Ashari": AA R R IY) and lose it before a
# linking "r-" between words.
_MERGED = {"e@": "EH", "o@": "OW", "O@": "AO", "i@3": "IH"}
_MERGED_LINKING = {**_MERGED, "A@": "AA", "U@": "UH"}
#: A doubled "y" after a consonant, which no English word has, is one vowel of an invented name (K'ryyn: K R IH N);
#: eSpeak NG's rules read two syllables into it (K R AY IH N, and "cry in" would be the name). After a vowel it is
#: a consonant said long (Khayyam) and stays.
_DOUBLED_Y = re.compile(r"(?<=[^aeiouy\W])yy+")


def arpabet_code(phones: list[str]) -> str:
    """ARPAbet phones (stress digits allowed) as a phone string."""
    return "".join(_CHAR[p.rstrip("012")] for p in phones)


class _Espeak:
    """eSpeak NG's text-to-phonemes through its C API. The library keeps global state: one call at a time."""

    def __init__(self) -> None:
        import espeakng_loader

        lib = ctypes.CDLL(espeakng_loader.get_library_path())
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int]
        lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
        # AUDIO_OUTPUT_SYNCHRONOUS, no buffer, the wheel's data; nothing is ever spoken.
        if lib.espeak_Initialize(0x02, 0, espeakng_loader.get_data_path().encode(), 0) <= 0:
            raise OSError("espeak_Initialize failed")
        if lib.espeak_SetVoiceByName(b"en-us") != 0:
            raise OSError("eSpeak NG has no en-us voice")
        self._lib = lib
        self._lock = threading.Lock()

    def phonemes(self, text: str) -> str:
        """Space-separated phoneme mnemonics of ``text`` (UTF-8 in, espeakPHONEMES_SHOW-style mnemonics out)."""
        buffer = ctypes.create_string_buffer(text.encode())
        pointer = ctypes.c_void_p(ctypes.addressof(buffer))
        out: list[bytes] = []
        with self._lock:
            while pointer.value:  # one clause per call; the library moves the pointer on
                # textmode 1: UTF-8; phonememode: mnemonics separated by spaces (bits 8-23 hold the separator)
                out.append(self._lib.espeak_TextToPhonemes(ctypes.byref(pointer), 1, ord(" ") << 8) or b"")
        return b" ".join(out).decode(errors="replace")


@lru_cache(maxsize=1)
def _espeak() -> _Espeak | None:
    try:
        return _Espeak()
    except (ImportError, OSError) as exc:
        log.warning("eSpeak NG unavailable (%s): words missing from CMUdict are matched by spelling only", exc)
        return None


@lru_cache(maxsize=1)
def _cmudict() -> dict[str, str]:
    """CMUdict's first pronunciation of each word, as phone strings (~0.8 s once per process)."""
    import cmudict

    table: dict[str, str] = {}
    with cmudict.dict_stream() as stream:
        for raw in stream:
            line = raw.decode("latin-1") if isinstance(raw, bytes) else raw
            word, _, phones = line.partition(" ")
            if line.startswith(";;;") or word.endswith(")") or word in table:
                continue  # comments; alternative pronunciations "word(2)"
            table[word] = arpabet_code(phones.partition("#")[0].split())  # "# foreign" and other notes
    return table


def _from_espeak(mnemonics: str) -> str:
    """ARPAbet of eSpeak's mnemonics, written the way eSpeak's IPA reads them (one R, "t S" as CH)."""
    tokens = mnemonics.replace("'", " ").replace(",", " ").split()
    out = []
    for token, after in pairwise([*tokens, ""]):  # none at all for some text ("٣"): no phones
        base = token if token in _ESPEAK_CODE else token.rstrip("0123456789#-")
        merged = (_MERGED if after == "r" else _MERGED_LINKING if after == "r-" else {}).get(base)
        code = _CHAR[merged] if merged else _ESPEAK_CODE.get(base)
        if code:  # stress marks, pauses and glottal stops are not phones a re-spelling keeps
            out.append(code)
    return "".join(out).replace(_CHAR["T"] + _CHAR["SH"], _CHAR["CH"])


@lru_cache(maxsize=262144)
def word_phones(word: str) -> str:
    """The phone string of one normalised word ("" when it cannot be pronounced)."""
    if not word:
        return ""
    found = _cmudict().get(word)
    if found is not None:
        return found
    espeak = _espeak()
    return _from_espeak(espeak.phonemes(_DOUBLED_Y.sub("y", word))) if espeak is not None else ""


def phrase_phones(words: tuple[str, ...] | list[str]) -> str:
    """The phone string of normalised words said one after another ("" if any cannot be pronounced)."""
    out = []
    for word in words:
        phones = word_phones(word)
        if not phones:
            return ""
        out.append(phones)
    return "".join(out)


def dictionary_phones(words: tuple[str, ...]) -> str:
    """CMUdict's pronunciation of a name made of dictionary words ("lorne", "astor"), "" otherwise."""
    table = _cmudict()
    said = [table.get(w, "") for w in words]  # CMUdict has no word without phones
    return "".join(said) if all(said) else ""


@lru_cache(maxsize=262144)
def name_phones(words: tuple[str, ...]) -> str:
    """The phone string of a name: eSpeak NG reads it whole (linking r, its English words too), or, without
    eSpeak NG, word by word."""
    espeak = _espeak()
    if espeak is None:
        return phrase_phones(words)
    return _from_espeak(espeak.phonemes(_DOUBLED_Y.sub("y", " ".join(words))))


def warm() -> None:
    """Load CMUdict and eSpeak NG now, not during the first utterance."""
    _cmudict()
    _espeak()
