"""Keeping secret names from players: :class:`SecretMask` hides them in text, and the masked-names table keeps a
secret entity's old names hidden after a rename, a merge or its removal."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from difflib import SequenceMatcher

from memory.graph.lookup import EntityLookup
from memory.graph.rules import PLURAL, everyday_masked, names_to_mask, secrets_described, unhidden_secrets
from memory.models import (
    RECAP_NAME_SQL,
    Entity,
    Visibility,
)
from memory.text import folded

_WORD_RUN = re.compile(r"\w+")
#: Between two words of a name joined by a space, hyphen or apostrophe, what a line may write there: any of them, or
#: nothing ("Vel Ashkar", "VelAshkar" of Vel-Ashkâr; "Mother of Thorns" of Mother-of-Thorns). Where the name has a
#: period or comma there, that people drop ("Dr Black", "Dr.Black" of Dr. Black), any of those too.
_LOOSE = re.compile(r"[\s'-]+")
_BETWEEN = r"[\s'-]*"
_DROPPED = re.compile(r"[\s'.,-]+")
_BETWEEN_DROPPED = r"[\s'.,-]*"
#: What a name may end with after its last word that a line writes with it: closing brackets ("Harrowgate (npc)").
_CLOSING = re.compile(r"\s*[)\]}]+")
#: Inside a word, an apostrophe or a hyphen a line may write or not ("Devo'ssa", "Devo-ssa" of Devossa, and back).
_INSIDE = "['-]?"


def _pattern_of_name(name: str) -> str:
    """The regular expression of a :func:`~memory.text.folded` name, its plural too."""
    words = _WORD_RUN.findall(name)
    if not words:  # punctuation alone: as written
        return re.escape(name.strip())
    between = _WORD_RUN.split(name)[1:-1]
    body = _INSIDE.join(map(re.escape, words[0]))
    for sep, word in zip(between, words[1:], strict=True):
        # other punctuation ("Ash & Water", "C++ Guild") stays as written, its spaces any spaces
        if _LOOSE.fullmatch(sep):
            joint = _BETWEEN
        elif _DROPPED.fullmatch(sep):
            joint = _BETWEEN_DROPPED
        else:
            joint = r"\s+".join(map(re.escape, sep.split())).join(["\\s*"] * 2)
        body += joint + _INSIDE.join(map(re.escape, word))
    # a plural says the name too ("the Vaskerrins' ship"); "es" only where English writes it ("Tim" is no "times")
    end = rf"{PLURAL}?(?!\w)"
    if closing := _CLOSING.match(_WORD_RUN.split(name)[-1]):  # hidden with the name: "[secret])" tells it was one
        end = rf"(?:\s*{re.escape(closing.group().strip())}|{end})"
    return rf"(?<!\w){body}{end}"


class SecretMask:
    """Hides secret entities' names in text players read: a recap, a recalled passage or a description may
    quote someone saying one. Their aliases stay: an alias ("the Pale Magister") is what players know such an
    entity by. A name is hidden in every spelling a line may write it (:func:`~memory.text.folded`: case, accents,
    Æ/Œ/Ð/Þ/ß, any apostrophe or none; a space, hyphen or nothing between its words), as lookup reads it."""

    MASK = "[secret]"

    def __init__(self, names: Iterable[str]) -> None:
        spelled = {folded(n)[0].strip(): n for n in names if n.strip()}
        # longest first, so "Vaskerrin Holt" is hidden whole before a shorter secret name inside it
        self._folded = sorted(spelled, key=len, reverse=True)
        self._spellings = [spelled[f] for f in self._folded]
        # A text is searched for the names whose words it all has, and no others: one pattern of every name tried at
        # every character cost 0.6 ms a line at 1,000 entities, and ten times that at 10,000. A name starts a word
        # of the text (its first word may run on into the next: "velashkar"), so it is found by that word's start.
        self._words = [_WORD_RUN.findall(f) for f in self._folded]
        self._by_first: dict[str, list[int]] = {}
        for i, words in enumerate(self._words):
            if words:
                self._by_first.setdefault(words[0], []).append(i)
        self._starts = sorted({len(w) for w in self._by_first})
        self._always = [i for i, words in enumerate(self._words) if not words]
        self._patterns: dict[tuple[int, ...], re.Pattern[str]] = {}

    @functools.cached_property
    def _pattern(self) -> re.Pattern[str]:
        """The one pattern of every name (what a text holding all their words is searched with)."""
        return self._pattern_of(tuple(range(len(self._spellings))))

    def _pattern_of(self, which: tuple[int, ...]) -> re.Pattern[str]:
        if (pattern := self._patterns.get(which)) is None:
            pattern = re.compile("|".join(_pattern_of_name(self._folded[i]) for i in which))
            if len(self._patterns) < 10_000:  # a scene names the same few again and again
                self._patterns[which] = pattern
        return pattern

    def __call__(self, text: str) -> str:
        if not self._spellings or not text:
            return text
        return self._hidden(text, self._spans(text))

    def said(self, text: str) -> list[str]:
        """What of the hidden names ``text`` says, as it writes them, each once (case aside): what players read as
        "[secret]" there."""
        if not self._spellings or not text:
            return []
        found = [text[start:end] for start, end in self._spans(text)]
        return list({" ".join(f.split()).casefold(): " ".join(f.split()) for f in found}.values())

    def _spans(self, text: str, pattern: re.Pattern[str] | None = None) -> list[tuple[int, int]]:
        """Where ``text`` says a hidden name, as found in its :func:`~memory.text.folded` form by ``pattern``; by
        default that of the names whose words it holds."""
        plain, at = folded(text)
        if pattern is None:
            words = _WORD_RUN.findall(plain)
            letters = "".join(words)
            if "'" in plain or "-" in plain:  # "devo'ssa" may say Devossa: its words joined are tried too
                words += _WORD_RUN.findall(plain.replace("'", "").replace("-", ""))
            which = set(self._always)
            for word in set(words):
                for size in self._starts:
                    if size > len(word):
                        break
                    for i in self._by_first.get(word[:size], ()):
                        if all(w in letters for w in self._words[i]):
                            which.add(i)
            if not which:
                return []
            pattern = self._pattern_of(tuple(sorted(which)))
        found = ((m.start(), m.end()) for m in pattern.finditer(plain))
        return list(found) if at is None else [(at[start], at[end]) for start, end in found]

    def _hidden(self, text: str, spans: Sequence[tuple[int, int]]) -> str:
        shown, last = [], 0
        for start, end in spans:
            shown += [text[last:start], self.MASK]
            last = end
        return "".join(shown) + text[last:] if shown else text

    @property
    def names(self) -> list[str]:
        """What is hidden: each secret name, word of one and heard-as phrase, longest first."""
        return list(self._spellings)

    def unsaid(self, words: Sequence[str], stems: Mapping[str, Sequence[str]]) -> list[str]:
        """``words`` without those that say a hidden name to a search that reads a word as its ``stems`` (each of
        ``words`` and of the words of :attr:`names`), nor what the mask hides in the rest: the search stems the
        lines unmasked, so "Clarotas", "K'Varns" or "exiled" (of Clarota the Exile) find the lines that said the
        name, as a made-up word does not."""
        # the runs are read in the words as typed: a word of the name hidden first ("pact" of The Pact of Ash and
        # Water, "thorns" of Mother-of-Thorns) would break the run, and "ash", "water" find the line that said it;
        # first a name in any spelling the mask reads ("Mother of Thorns"), then one the search stems alike
        starts = list(itertools.accumulate((len(w) + 1 for w in words), initial=0))
        spans = self._spans(" ".join(words)) if self._spellings else []
        gone = {i for i, w in enumerate(words) for a, b in spans if a < starts[i] + len(w) and starts[i] < b}
        said = [(i, stem) for i, w in enumerate(words) for stem in stems[w]]  # a stop word ("the") has none
        for name in self._spellings:
            wanted = [stem for w in name.split() for stem in stems[w]]
            for j in range(len(said) - len(wanted) + 1) if wanted else ():
                if [stem for _, stem in said[j : j + len(wanted)]] == wanted:
                    gone.update(i for i, _ in said[j : j + len(wanted)])
        return self(" ".join(w for i, w in enumerate(words) if i not in gone)).replace(self.MASK, " ").split()

    def near(self, text: str) -> bool:
        """Whether ``text`` names a secret name or spells one nearly ("Vaskerin Holt", "Pact of Ash & Water"): the
        check for a model's text, where masking the exact name would leave a near spelling, and half a masked
        sentence may tie a public alias to the secret it hides."""
        words = _spelled(text)
        for name in self._spellings:
            said = " ".join(wanted := _spelled(name))
            if len(said) < 4:
                continue
            for i in range(len(words) - len(wanted) + 1):
                seen = SequenceMatcher(None, " ".join(words[i : i + len(wanted)]), said)
                if seen.real_quick_ratio() >= _NEAR and seen.quick_ratio() >= _NEAR and seen.ratio() >= _NEAR:
                    return True
        return False


#: How alike two spellings are (difflib's ratio) to be one name: one letter off in "Vaskerrin".
_NEAR = 0.85


def _spelled(text: str) -> list[str]:
    return _WORD_RUN.findall(folded(text.replace("&", " and "))[0])


class Masking(EntityLookup):
    """The names players never read."""

    async def player_mask(self) -> SecretMask:
        """What hides this campaign's secret names from players (see :class:`SecretMask`): each name, and each of
        its words that names it alone (a person's first or last name, "Vaskerrin" of Vaskerrin Holt; see
        :func:`~memory.graph.rules.names_to_mask`) — one English hardly uses, and no name players may read holds:
        an accepted public entity's name or an accepted entity's alias (a proposal waiting for review is the DM's to
        read, however the table named it); and what the recogniser writes for each."""
        from memory.correction.evidence import word_zipf  # wordfreq's table loads on first use

        # what the recogniser writes for a secret name is the name said, in a line not corrected yet or a recap
        # written from one: hidden whole, its words being ordinary ones
        heard = await self.db.fetch(
            """
            SELECT h.phrase FROM entity_heard_as h JOIN entities e ON e.id = h.entity_id
            WHERE h.campaign_id = $1 AND e.campaign_id = $1 AND e.visibility = 'secret' AND e.status <> 'rejected'
            """,
            self.campaign_id,
        )
        return SecretMask(names_to_mask(await self._names(), word_zipf, heard=[r["phrase"] for r in heard]))

    async def everyday_masked(self, names: Iterable[str]) -> list[str]:
        """What of the secret ``names`` the DM just gave players will read as "[secret]" wherever it is said, in its
        everyday sense too (see :func:`everyday_masked`): the DM is told."""
        if not (names := list(names)):
            return []
        from memory.correction.evidence import word_zipf

        return everyday_masked((await self.player_mask()).names, names, word_zipf)

    async def secrets_described(self, *written: tuple[Entity | None, Entity]) -> list[tuple[str, str, list[str]]]:
        """Where the DM wrote a secret name into what players read of a public entity (see
        :func:`secrets_described`), for each ``(before, after)`` of an entity just added (``before`` None) or
        changed: allowed, but the "[secret]" players read there tells them a secret is there, so the DM is told."""
        if not written:
            return []
        said = (await self.player_mask()).said
        return [found for before, after in written for found in secrets_described(before, after, said)]

    async def unhidden_secrets(self, *entities: Entity) -> list[tuple[str, str]]:
        """The secret names players read anyway because a name they may read is spelled alike (see
        :func:`unhidden_secrets`), of those the DM just gave ``entities``: allowed, as a campaign file holding them
        must load, but the DM is told."""
        return unhidden_secrets(await self._names(), [n for e in entities for n in (e.name, *e.aliases)])

    async def _names(self) -> list[tuple[str, bool, str | None]]:
        """The campaign's names, each with whether players must not read it and its entity's type (None: an alias
        players read, a removed entity's name), as :meth:`player_mask` weighs them."""
        rows = await self.db.fetch(
            f"""
            SELECT e.name, e.visibility = 'secret' AS secret, e.type FROM entities e
            WHERE e.campaign_id = $1 AND (e.status = 'accepted' OR e.visibility = 'secret' AND e.status <> 'rejected')
              -- a recap's event is named after its session's title ("Session: Vaskerrin's betrayal"), which
              -- players read masked: it does not make a word of a secret name one they may read
              AND NOT (e.type = 'event' AND e.visibility = 'public' AND e.name {RECAP_NAME_SQL})
            UNION ALL
            SELECT a.alias, false, NULL FROM entity_aliases a JOIN entities e ON e.id = a.entity_id
            WHERE a.campaign_id = $1 AND e.status = 'accepted' AND NOT EXISTS (
                SELECT 1 FROM masked_names m
                WHERE m.campaign_id = $1 AND m.entity_id = a.entity_id AND lower(m.name) = lower(a.alias)
            )
            UNION ALL
            SELECT m.name, true, coalesce(e.type, m.type)
            FROM masked_names m LEFT JOIN entities e ON e.campaign_id = $1 AND e.id = m.entity_id
            WHERE m.campaign_id = $1 AND (m.entity_id IS NULL OR e.visibility = 'secret' AND e.status <> 'rejected')
            """,
            self.campaign_id,
        )
        return [(r["name"], r["secret"], r["type"]) for r in rows]

    async def hidden_names(self) -> dict[int | None, list[str]]:
        """The names players never read that no secret entity bears as its name (see migration 0008), by the secret
        entity they were names of (None: one removed), as a campaign file carries them to another campaign."""
        rows = await self.db.fetch(
            "SELECT entity_id, name FROM masked_names WHERE campaign_id = $1 ORDER BY entity_id NULLS FIRST, name",
            self.campaign_id,
        )
        hidden: dict[int | None, list[str]] = {}
        for r in rows:
            hidden.setdefault(r["entity_id"], []).append(r["name"])
        return hidden

    async def hide_names(self, entity_id: int | None, names: Sequence[str]) -> list[str]:
        """Hide ``names`` from players while the secret entity ``entity_id`` stays secret (None: for good), as its
        rename or a merge into it would; returns those not hidden already. A public entity's are not kept: making
        it public released them."""
        if entity_id is not None and (await self.get_entity_by_id(entity_id)).visibility != Visibility.secret:
            return []
        had = {n.casefold() for n in (await self.hidden_names()).get(entity_id, [])}
        new = list({n.casefold(): n for n in names if n.casefold() not in had}.values())
        await self._keep_masked(entity_id, new)
        return new

    async def _keep_masked(self, entity_id: int | None, names: Iterable[str]) -> None:
        """Hide ``names`` from players while the entity ``entity_id`` stays secret; for good with None (a
        secret entity removed: see :meth:`_keep_masked_for_good`)."""
        await self.db.execute(
            """
            INSERT INTO masked_names (campaign_id, entity_id, name)
            SELECT $1, $2, u.name FROM unnest($3::text[]) u(name)
            WHERE NOT EXISTS (
                SELECT 1 FROM masked_names m
                WHERE m.campaign_id = $1 AND m.entity_id IS NOT DISTINCT FROM $2 AND lower(m.name) = lower(u.name)
            )
            """,
            self.campaign_id,
            entity_id,
            list(names),
        )

    async def _keep_masked_for_good(self, entity: Entity) -> None:
        """Hide the names of the secret ``entity`` about to be deleted for good, with its type: a person's first and
        last names stay hidden alone, as they were (the old names it kept follow by the foreign key)."""
        await self._keep_masked(None, [entity.name])
        await self.db.execute(
            """
            UPDATE masked_names SET type = $3
            WHERE campaign_id = $1 AND (entity_id = $2 OR entity_id IS NULL AND lower(name) = lower($4))
            """,
            self.campaign_id,
            entity.id,
            entity.type,
            entity.name,
        )
