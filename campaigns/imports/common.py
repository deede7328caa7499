"""What every import format shares: the error naming file, record and field; HTML to plain text; the builder
that turns a format's records into campaign-file entries (checked by the campaign file's own models)."""

from __future__ import annotations

import itertools
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import unescape
from html.parser import HTMLParser
from typing import Any

from pydantic import ValidationError

from campaigns.schema import EntitySpec, RelationshipSpec, fact_key, name_key
from memory.models import EntityType
from memory.text import MAX_FACT_VALUE_CHARS, attribute_text

#: An import file may be at most this big (the bot's upload limit is lower): a world's `actors.db` with embedded
#: items is a few megabytes; more is a media file or a whole data folder.
MAX_IMPORT_BYTES = 20 * 1024 * 1024

#: The secret attribute fact that holds an entity's GM-only text (pf2e `privateNotes`, Roll20 `gmnotes`, Foundry
#: secret blocks): a fact, because a fact can be secret on a public entity, and a description cannot.
DM_NOTES = "dm_notes"
#: Any part of an entity's GM notes: ``dm_notes``, ``dm_notes_2`` …, and those of a labelled record
#: (``dm_notes_journal``, ``dm_notes_journal_2`` …). Group 1 is the set of notes (one record's), group 2 the part.
NOTES_TYPE = re.compile(rf"({DM_NOTES}(?:_[a-z]+)?)(?:_(\d+))?")


def notes_of(label: str) -> str:
    """The fact type of the first part of a record's GM notes: ``dm_notes``, or ``dm_notes_journal`` for a record
    labelled ``journal``."""
    return f"{DM_NOTES}_{label}" if label else DM_NOTES


class ImportFileError(ValueError):
    """A file that cannot be imported, said once: the file, the record and the field, and what is wrong."""


def problem(file: str, record: str | int | None, field_name: str | None, message: str) -> ImportFileError:
    where = [file]
    if record is not None:
        where.append(f"record {record}" if isinstance(record, int) else record)
    if field_name:
        where.append(f"field {field_name!r}")
    return ImportFileError(f"{': '.join(where)}: {message}")


# ------------------------------------------------------------------------------------------------ text


_BLOCKS = frozenset(
    {"p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "table", "section", "blockquote"}
    | {"hr", "dt", "dd", "pre", "figcaption", "article", "aside", "header", "footer", "details", "summary"}
)
_SKIPPED = frozenset({"script", "style", "template"})


class _Text(HTMLParser):
    """Plain text of an HTML fragment, its secret blocks apart: Foundry's ``<section class="secret">`` (and any
    element with the class ``secret``) is GM-only text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.public: list[str] = []
        self.secret: list[str] = []
        self._stack: list[tuple[str, bool]] = []  # (tag, opens a secret block)
        self._secret_depth = 0
        self._skip_depth = 0
        self._cells = 0  # cells of the table row read so far
        self._lists: list[list[Any]] = []  # the lists open: [tag, items so far]
        self._marker = ""  # a list item's "- " or "2. ", written before its first text

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = " ".join(value or "" for key, value in attrs if key == "class").split()
        opens = "secret" in classes
        if tag == "li":  # one line an item, as the editor shows it: "- item", or "1. item" in a numbered list
            self._line()
            if self._lists:
                self._lists[-1][1] += 1
            numbered = bool(self._lists) and self._lists[-1][0] == "ol"
            self._marker = f"{self._lists[-1][1]}. " if numbered else "- "
        elif tag in _BLOCKS and not self._marker:  # ProseMirror writes <li><p>…</p></li>: the item's own line
            self._out("\n")
        if tag in ("ul", "ol"):
            self._lists.append([tag, 0])
        if tag == "tr":
            self._cells = 0
        elif tag in ("td", "th"):  # a table's cells apart, not glued into one word ("Goblin7")
            self._out(" | " if self._cells else "")
            self._cells += 1
        alt = " ".join(v or "" for k, v in attrs if k == "alt").strip() if tag == "img" else ""
        if alt and not self._skip_depth:  # what the picture shows, as the DM described it: the GM's if it is secret
            (self.secret if self._secret_depth or opens else self.public).append(f"[image: {alt}]")
        if tag in ("br", "hr", "img", "input", "meta", "link"):  # void elements: no end tag follows
            return
        self._stack.append((tag, opens))
        self._secret_depth += opens
        self._skip_depth += tag in _SKIPPED

    def handle_endtag(self, tag: str) -> None:
        # close up to the matching tag: HTML from editors is not always well nested
        for index in range(len(self._stack) - 1, -1, -1):
            if self._stack[index][0] == tag:
                for closed, opened in self._stack[index:]:
                    self._secret_depth -= opened
                    self._skip_depth -= closed in _SKIPPED
                del self._stack[index:]
                break
        if tag in ("ul", "ol") and self._lists:
            self._lists.pop()
        if tag in _BLOCKS:
            self._out("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip_depth:
            if self._marker and data.strip():
                self._out(self._marker)
                self._marker = ""
            self._out(data)

    def _line(self) -> None:
        """Start a new line, not a blank one: a list's items are not paragraphs."""
        out = self.secret if self._secret_depth else self.public
        while out and not out[-1].strip(" \t\n") and "\n" in out[-1]:
            out.pop()
        out.append("\n")

    def _out(self, text: str) -> None:
        (self.secret if self._secret_depth else self.public).append(text)


def clean_text(text: str) -> str:
    """Text as the store keeps it: no invisible or control characters (a zero-width space pasted into a VTT's
    editor is no reason to refuse a world), non-breaking spaces as spaces, blank runs folded, lines trimmed."""
    text = text.replace("\u00a0", " ").replace("\r\n", "\n").replace("\r", "\n").replace("\v", "\n")
    text = "".join(c for c in text if c in "\n\t" or not unicodedata.category(c).startswith("C"))
    lines = [" ".join(line.split()) for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def html_to_text(html: str | None) -> tuple[str, str]:
    """(public text, GM-only text) of an HTML fragment; plain text passes through."""
    if not html:
        return "", ""
    if "<" not in html:
        return clean_text(unescape(html)), ""
    parser = _Text()
    parser.feed(html)
    parser.close()
    return clean_text("".join(parser.public)), clean_text("".join(parser.secret))


def js_unescape(text: str) -> str:
    """JavaScript's ``unescape``: Roll20 keeps a character's ``bio`` and ``gmnotes`` so (``%3Cp%3E``, ``%u2019``)."""
    return re.sub(r"%u([0-9A-Fa-f]{4})|%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1) or m.group(2), 16)), text)


def as_object(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one: a field of another tool's file may hold anything."""
    return value if isinstance(value, dict) else {}


def as_text(value: Any) -> str:
    """A record's scalar as one line of text ("" for nothing)."""
    if value is None or isinstance(value, dict | list):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return clean_text(str(value))


def json_string(value: Any) -> Any:
    """A field a VTT stores as JSON inside a string (Roll20's ``tags``, ``defaulttoken``), read; as it is otherwise."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


# ------------------------------------------------------------------------------------------------ building


@dataclass
class World:
    """What an import read: entries for a campaign file, and what it left out on purpose (said to the DM)."""

    entities: list[EntitySpec] = field(default_factory=list)
    relationships: list[RelationshipSpec] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: The tool's own ids of the records each entry was read from (its index) → the record's name: a re-import
    #: finds the entity by them, renamed or not.
    source_ids: dict[int, dict[str, str]] = field(default_factory=dict)
    #: Entries (their index) a record of which has a place for GM notes → the labels of those records' notes (""
    #: unlabelled): the notes read are all it has now, so notes it had before and lacks now were deleted in the tool.
    notes_stated: dict[int, set[str]] = field(default_factory=dict)
    #: Names of the entities a record of which lists all its relations (Kanka's ``relations``): one it had before
    #: and lacks now, to another entity of the import, was deleted in the tool.
    relations_stated: set[str] = field(default_factory=set)
    #: An entry (its index) → the label of its first record's GM notes, where it has one.
    notes_labels: dict[int, str] = field(default_factory=dict)
    #: What the import assumed where the files do not say (said to the DM on the card) → the entities it concerns.
    assumed: dict[str, list[str]] = field(default_factory=dict)
    #: Where each entry (its index) was first read, as a problem names it ("world.csv: line 2"): a load that
    #: refuses the entry says the record, not the campaign file's "entity #1" the DM never wrote.
    records: dict[int, str] = field(default_factory=dict)
    #: The files (a LevelDB folder) an entry or fact was read from: the import's sources, not a folders DB or a
    #: world manifest that gave nothing.
    read_from: set[str] = field(default_factory=set)
    #: Each fact (:func:`~campaigns.schema.fact_key`) → the file of the record it was read from.
    fact_files: dict[str, str] = field(default_factory=dict)
    _names: dict[str, int] = field(default_factory=dict)
    _aliases: dict[str, int] = field(default_factory=dict)
    #: The fact types each entity (its name's key) has among the first ``_typed`` relationships: GM notes of
    #: thousands of records find their free part without reading every fact each time.
    _types: dict[str, set[str]] = field(default_factory=dict)
    _typed: int = 0

    def entity(
        self,
        where: tuple[str, str | int | None],
        *,
        name: Any,
        type: EntityType,
        description: str = "",
        aliases: list[str] | None = None,
        attributes: dict[str, Any] | None = None,
        secret: bool = False,
        dm_notes: str = "",
        source_ids: Sequence[Any] = (),
        states_notes: bool = False,
        notes_label: str = "",
    ) -> str | None:
        """Add an entity (or fold it into the one of that name already read); returns its name, or None when the
        record has no name at all (skipped and said). ``states_notes``: the record has a field for GM notes, so
        ``dm_notes`` empty means it has none. ``notes_label``: its notes are kept apart from those of the entity's
        other records (``dm_notes_journal``), so that each record imported again replaces or ends only its own."""
        file, record = where
        text_name = clean_text(str(name)) if isinstance(name, str | int | float) else ""
        text_name = " ".join(text_name.split())
        if not text_name:
            self.skipped.append(f"{file}: {'' if record is None else f'record {record}: '}no name, left out")
            return None
        attrs = {k: v for k, v in (attributes or {}).items() if v not in (None, "", [])}
        fields: dict[str, Any] = {"name": text_name[:200], "type": type, "secret": secret}
        if description:
            fields["description"] = description
        if aliases:
            fields["aliases"] = [a for a in dict.fromkeys(aliases) if a and name_key(a) != name_key(text_name)]
        if attrs:
            fields["attributes"] = attrs
        try:
            spec = EntitySpec.model_validate(fields)
        except ValidationError as exc:
            raise problem(file, _record(record, text_name), *_first(exc)) from None
        index = self._holder(spec.name)
        if index is not None and _apart(self.entities[index].type, spec.type):
            # two things of one name (Kanka's fort and old soldier "Harrowgate"): two entities, not one npc
            other = self.entities[index].type.value
            spec = spec.model_copy(update={"name": f"{spec.name} ({spec.type.value})"})
            self.assume(f"named by its type, another record ({other}) having its name", spec.name)
            index = self._holder(spec.name)
        taken = [a for a in spec.aliases if self._holder(a) not in (None, index)]
        if taken:  # another record's name (Roll20's token "Vex" of Vex'ahlia, and a handout "Vex"): it keeps it
            self.skipped.append(f"{file}: {spec.name}: alias {', '.join(map(repr, taken))} left out, another's name")
            spec = spec.model_copy(update={"aliases": [a for a in spec.aliases if a not in taken]})
        hidden_notes, hidden_label = "", notes_label  # what a secret record says, as its record's GM notes
        if index is not None:  # one world, one entity of a name (or alias): the second record adds to the first
            first = self.entities[index]
            if first.secret == spec.secret:
                self.entities[index] = _folded(first, spec)
            else:  # a GM-only journal and a public actor of one name: what is secret stays so, as GM notes
                public, hidden = (first, spec) if spec.secret else (spec, first)
                self.entities[index] = public.model_copy(update={"name": first.name})
                hidden_notes = secret_text(hidden)  # after the record's own notes, as when imported on its own
                if hidden is first:  # the entry is the public record's now
                    hidden_label, self.notes_labels[index] = self.notes_labels.get(index, ""), notes_label
        else:
            index = self._names[name_key(spec.name)] = len(self.entities)
            self.entities.append(spec)
            self.records[index] = ": ".join([file, _record(record, spec.name)])
            self.notes_labels[index] = notes_label
        self.read_from.add(file)
        for alias in self.entities[index].aliases:
            self._aliases.setdefault(name_key(alias), index)
        for source_id in source_ids:
            if isinstance(source_id, str) and source_id.strip():
                self.source_ids.setdefault(index, {})[source_id.strip()[:300]] = spec.name
        if states_notes:
            self.notes_stated.setdefault(index, set()).add(notes_label)
        name = self.entities[index].name
        if dm_notes:
            self.notes(where, name, dm_notes, notes_label)
        if hidden_notes:
            self.notes(where, name, hidden_notes, hidden_label)
        return name

    def assume(self, what: str, name: str) -> None:
        """Say on the card that ``what`` was assumed of the entity ``name``, the files not saying."""
        names = self.assumed.setdefault(what, [])
        if name not in names:
            names.append(name)

    def _holder(self, name: str) -> int | None:
        """The entry already read that is called ``name``, by its name or an alias."""
        return self._names.get(name_key(name), self._aliases.get(name_key(name)))

    def notes(self, where: tuple[str, str | int | None], name: str, text: str, label: str = "") -> None:
        """GM-only text of an entity, as secret ``dm_notes`` facts (a fact's value holds 500 characters; a longer
        text goes in numbered parts, nothing cut); a labelled record's as ``dm_notes_<label>`` facts."""
        for fact in self.relationships[self._typed :]:  # facts are only ever appended
            self._types.setdefault(name_key(fact.source), set()).add(fact.type)
        self._typed = len(self.relationships)
        taken = set(self._types.get(name_key(name), ()))
        first = notes_of(label)
        kinds = (first if number == 1 else f"{first}_{number}" for number in itertools.count(1))
        free = (kind for kind in kinds if kind not in taken)  # two records' notes: the second's after the first's
        for part in _split(text, MAX_FACT_VALUE_CHARS):
            self.fact(where, source=name, type=next(free), value=part, secret=True)

    def fact(
        self,
        where: tuple[str, str | int | None],
        *,
        source: str,
        type: str,
        target: str | None = None,
        value: str | None = None,
        attributes: dict[str, Any] | None = None,
        secret: bool = False,
    ) -> None:
        file, record = where
        fields: dict[str, Any] = {"source": source, "type": type, "secret": secret}
        if target is not None:
            fields["target"] = target
        else:
            fields["value"] = value
        if attributes:
            fields["attributes"] = {k: v for k, v in attributes.items() if v not in (None, "", [])}
        try:
            self.relationships.append(RelationshipSpec.model_validate(fields))
        except ValidationError as exc:
            raise problem(file, _record(record, source), *_first(exc)) from None
        self.read_from.add(file)
        self.fact_files.setdefault(fact_key(self.relationships[-1]), file)


def _first(exc: ValidationError) -> tuple[str | None, str]:
    """The field and message of a model's first complaint (one clear error, not a list)."""
    error = exc.errors()[0]
    field_name = ".".join(str(part) for part in error.get("loc", ())) or None
    return field_name, error["msg"].removeprefix("Value error, ")


def _record(record: str | int | None, name: str) -> str:
    return f"record {record} ({name!r})" if isinstance(record, int) else f"{record or 'record'} ({name!r})"


#: Of two records of one name, the type of the one that says more of what the thing is, whatever the files' order:
#: a character sheet (a player's, then an NPC's), a group, a scene, an item …; a journal or handout (concept) is
#: only text about something, so any other record's type wins over it (a scene and its lore page: a location).
TYPE_PRECEDENCE = (
    EntityType.player,
    EntityType.npc,
    EntityType.faction,
    EntityType.location,
    EntityType.item,
    EntityType.quest,
    EntityType.event,
    EntityType.concept,
)


def _apart(first: EntityType, second: EntityType) -> bool:
    """Whether records of one name are two things: of two kinds (a location and a character), neither a text about
    something (a concept: a journal, a handout) nor a sheet of the other kind of character (player, npc)."""
    kinds = {first, second} - {EntityType.concept}
    return len(kinds) > 1 and kinds != {EntityType.player, EntityType.npc}


def _folded(first: EntitySpec, second: EntitySpec) -> EntitySpec:
    """Two records of one name (a world actor and its compendium copy, two journals "Ironhold"): the first's
    fields, the second's where the first has none, the second's description after the first's unless the first
    says it already (nothing of either lost), aliases and attributes of both, secret only if both are, and the
    type that comes first in ``TYPE_PRECEDENCE``."""
    more = second.description if second.description not in first.description else ""
    return first.model_copy(
        update={
            "type": min(first.type, second.type, key=TYPE_PRECEDENCE.index),
            "description": "\n\n".join(d for d in (first.description, more) if d),
            "aliases": list(dict.fromkeys([*first.aliases, *second.aliases])),
            "attributes": {**second.attributes, **first.attributes},
            "secret": first.secret and second.secret,
        }
    )


def secret_text(spec: EntitySpec) -> str:
    """What a secret record says (its description, aliases and attributes), as GM notes for a public entity of its
    name: nothing of it is for players."""
    parts = [spec.description] if spec.description else []
    if spec.aliases:
        parts.append(f"also called {', '.join(spec.aliases)}")
    parts += [f"{k}: {attribute_text(v)}" for k, v in spec.attributes.items()]
    return "\n".join(parts)


def _split(text: str, limit: int) -> list[str]:
    """``text`` in parts of at most ``limit`` characters, cut at line breaks or spaces where it can be."""
    parts: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        cut = max(rest.rfind("\n", 0, limit), rest.rfind(" ", 0, limit))
        cut = cut if cut > limit // 2 else limit
        parts.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        parts.append(rest)
    return parts
