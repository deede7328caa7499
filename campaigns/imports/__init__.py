"""Worlds from other tools into a campaign: Foundry VTT, Roll20, Kanka and CSV files read into campaign-file entries.

Pure (no database): :func:`read_import` takes the files' bytes and returns an :class:`ImportedWorld`, whose
:meth:`ImportedWorld.campaign_file` is what the DM reviews and a load applies. A file that cannot be read raises
:class:`ImportFileError` naming the file, the record and the field; nothing of any file is kept then.
"""

from __future__ import annotations

import codecs
import io
import json
import re
import zipfile
from collections.abc import Sequence
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

from campaigns.imports import csv_format, foundry, kanka, roll20
from campaigns.imports.common import MAX_IMPORT_BYTES, ImportFileError, World, problem
from campaigns.schema import CampaignFile, EntitySpec, RelationshipSpec, name_key
from memory.graph import SINGLE_VALUED
from memory.graph.rules import HOLDING, held_by_many, one_way
from memory.models import HELD_BY_MANY, IMPORT_TOOLS, SYMMETRIC

Format = Literal["foundry", "roll20", "kanka", "csv"]
FORMATS: tuple[Format, ...] = ("foundry", "roll20", "kanka", "csv")

__all__ = [
    "FORMATS",
    "MAX_IMPORT_BYTES",
    "READABLE",
    "Format",
    "ImportFileError",
    "ImportedWorld",
    "detect_format",
    "read_import",
    "readable",
]


class ImportedWorld(BaseModel):
    """What the files held, as campaign-file entries, and what was left out on purpose (said to the DM)."""

    format: Format
    sources: list[str]
    entities: list[EntitySpec] = Field(default_factory=list)
    relationships: list[RelationshipSpec] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    #: An entity's name → the tool's ids of the records it was read from, each with that record's name.
    source_ids: dict[str, dict[str, str]] = Field(default_factory=dict)
    #: Entities whose records have a place for GM notes: notes they had and the import lacks were deleted.
    notes_stated: list[str] = Field(default_factory=list)
    #: Of those, an entity whose such records include labelled ones → the labels ("" unlabelled; an entity not
    #: here, as in a batch staged before labels were kept, has only unlabelled records).
    notes_stated_as: dict[str, list[str]] = Field(default_factory=dict)
    #: Entities whose records list all their relations: a relation they had and lack now was deleted.
    relations_stated: list[str] = Field(default_factory=list)
    #: An entity → the label its first record's GM notes have (``journal``: ``dm_notes_journal``), where it has one.
    notes_labels: dict[str, str] = Field(default_factory=dict)
    #: What the import assumed where the files do not say → the entities it concerns (said on the card).
    assumed: dict[str, list[str]] = Field(default_factory=dict)
    #: Each fact (:func:`~campaigns.schema.fact_key`) → the file of the record it was read from (its history says it).
    fact_files: dict[str, str] = Field(default_factory=dict)
    #: An entity's name → where its first record is ("world.csv: line 2 ('Vexy')"), for a problem to name.
    records: dict[str, str] = Field(default_factory=dict)

    def campaign_file(self) -> CampaignFile:
        return CampaignFile(entities=self.entities, relationships=self.relationships)


def _size(file: str, data: bytes) -> None:
    if len(data) > MAX_IMPORT_BYTES:
        raise problem(
            file,
            None,
            None,
            f"{len(data) / 2**20:.1f} MB, more than the {MAX_IMPORT_BYTES // 2**20} MB an "
            "import reads: export fewer documents at a time",
        )


def _decode(file: str, data: bytes) -> str:
    _size(file, data)
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and not data.startswith(codecs.BOM_UTF32_LE):
        try:  # Excel's "Unicode text", Notepad's and PowerShell's "Unicode": UTF-16 with its byte-order mark
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise problem(
                file, None, None, f"not UTF-16 text after all (byte {exc.start + 3}); save it as UTF-8"
            ) from None
    if data.startswith(b"\x00") or b"\x00" in data[:4096]:
        raise problem(
            file,
            None,
            None,
            "a binary file (part of a Foundry v11+ LevelDB folder? import the whole folder, or a zip of it)",
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise problem(file, None, None, f"not UTF-8 text (byte {exc.start + 1}); save it as UTF-8") from None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _yaml(text: str) -> Any:
    """A YAML document (the dnd5e system's ``packs/_source/*.yml``), or None; safe loading only."""
    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return None


def _nedb(text: str) -> bool:
    """One JSON object a line (its first line read whole): a NeDB file; a bad later line is then reported by line."""
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and isinstance(_json(lines[0]), dict) and all(line.lstrip().startswith("{") for line in lines)


def detect_format(file: str, text: str) -> Format:
    """The format of one file, from what it holds (not its name)."""
    parsed = _json(text)
    if parsed is not None:
        if roll20.looks_like(parsed):
            return "roll20"
        if foundry.looks_like(parsed):
            return "foundry"
        if kanka.looks_like(parsed):
            return "kanka"
        raise problem(file, None, None, "JSON, but not a Foundry VTT, Roll20 or Kanka export I know: pass --format")
    if _nedb(text):
        return "foundry"
    if text.lstrip()[:1] not in ("", "{", "[") and isinstance(found := _yaml(text), dict) and foundry.looks_like(found):
        return "foundry"  # a compendium source written as YAML
    if csv_format.looks_like(text):
        return "csv"
    if broken := _broken_json(text) or ("an empty file" if not text.strip() else None):  # --format would not help
        raise problem(file, None, None, broken)
    raise problem(file, None, None, "not JSON, a Foundry .db or .yml source nor CSV with a header: pass --format")


def _told(file: str, text: str) -> Format | None:
    """The format the file's content says, if it says one."""
    try:
        return detect_format(file, text)
    except ImportFileError:
        return None


def _broken_json(text: str) -> str | None:
    """What is wrong with a text that begins as JSON but does not parse (a download cut short, a bad hand edit),
    else None."""
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return (
            f"broken JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}): is the file cut short? export it again"
        )
    return None


#: What a zip's members may hold unpacked, all together: a Kanka export or a zipped Foundry world, not a bomb.
MAX_UNZIPPED_BYTES = 5 * MAX_IMPORT_BYTES
#: The files a zip or a folder is read for, besides a LevelDB folder's (:func:`readable`).
READABLE = (".json", ".db", ".csv", ".yml", ".yaml")
#: The files of a LevelDB folder (Foundry v11+ keeps a world's data/actors/ … and packs/<name>/ so) that hold its
#: data: not ``LOCK`` (Foundry's while it runs) nor ``LOG`` (LevelDB's diary).
_LEVELDB_FILE = re.compile(r"CURRENT|MANIFEST-\d+|\d+\.(?:ldb|sst|log)")


def _name(file: str) -> str:
    return re.split(r"[/\\]", file)[-1]


def _folder(file: str) -> str:
    return file[: -len(_name(file)) - 1] or "."


def readable(file: str) -> bool:
    """Whether an import reads the file a folder or a zip holds: a readable export, or a LevelDB folder's part."""
    return file.casefold().endswith(READABLE) or bool(_LEVELDB_FILE.fullmatch(_name(file)))


def _unzipped(files: Sequence[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """The files, a zip (Kanka's export, a zipped world folder) standing for its readable members."""
    out: list[tuple[str, bytes]] = []
    for file, data in files:
        if not data.startswith(b"PK\x03\x04"):
            out.append((file, data))
            continue
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                members = [
                    m
                    for m in archive.infolist()
                    if not m.is_dir() and readable(m.filename) and "__MACOSX" not in m.filename
                ]
                if sum(m.file_size for m in members) > MAX_UNZIPPED_BYTES:
                    raise problem(file, None, None, f"unpacks to more than {MAX_UNZIPPED_BYTES // 2**20} MB")
                for member in members:
                    if member.file_size > MAX_IMPORT_BYTES:
                        raise problem(f"{file}/{member.filename}", None, None, "more than an import reads")
                    out.append((f"{file}/{member.filename}", archive.read(member)))
        except (zipfile.BadZipFile, OSError) as exc:
            raise problem(file, None, None, f"a damaged zip ({exc})") from None
        if not any(name.startswith(f"{file}/") for name, _ in out):
            raise problem(file, None, None, "a zip holding no .json, .db, .csv or .yml file nor a LevelDB folder")
    return out


def read_import(files: Sequence[tuple[str, bytes]], format: Format | None = None) -> ImportedWorld:
    """Read every file (all of one format; a zip stands for the files in it) into one world; the first bad file
    stops it all."""
    if not files:
        raise ImportFileError("no files to import")
    for file, data in files:
        _size(file, data)
    files = _unzipped(files)
    world = World()
    formats: list[Format] = []
    kanka_reader = kanka.KankaReader(world)
    leveldb = _leveldb_folders(files)
    # Foundry v11+ migrates data/actors.db to the LevelDB folder data/actors/ and keeps the old file: stale
    folders = {_folder(file) for file in leveldb}
    migrated = [file for file, _ in files if file.casefold().endswith(".db") and file[:-3] in folders]
    world.skipped += [
        f"{file}: the NeDB file Foundry migrated to {_name(file[:-3])}/ (read instead)" for file in migrated
    ]
    files = [(file, data) for file, data in files if file not in migrated]
    for file, data in files:
        folder = leveldb.get(file)
        if folder is not None and format not in (None, "foundry"):
            raise problem(_folder(file), None, None, f"a Foundry v11+ LevelDB folder, not {format}")
        text = _decode(file, data) if folder is None else ""
        found = "foundry" if folder is not None else format or detect_format(file, text)
        told = _told(file, text) if folder is None and format is not None else None
        if told is not None and told != found:
            # what --format would make of another tool's file is no help ("record None: no name")
            raise problem(
                file,
                None,
                None,
                f"a {IMPORT_TOOLS[told]} export, not {IMPORT_TOOLS[found]}: import it without --format",
            )
        if formats and found != formats[0]:
            raise problem(
                file,
                None,
                None,
                f"a {found} file, but {files[0][0]} is {formats[0]}: import one tool's files at a time",
            )
        formats.append(found)
        if folder is not None:
            if folder[0] == file:  # the folder is read once, at its first file
                foundry.parse_leveldb(_folder(file), folder[1], world)
            continue
        if found == "csv":
            csv_format.parse(file, text, world)
            continue
        parsed = _json(text)
        if found == "foundry":
            if parsed is None and not _nedb(text) and isinstance(document := _yaml(text), dict):
                foundry.parse_json(file, document, world)
            elif parsed is None:
                foundry.parse_nedb(file, text, world)
            else:
                foundry.parse_json(file, parsed, world)
        elif parsed is None:
            raise problem(file, None, None, _broken_json(text) or f"not JSON, which a {found} export is")
        elif found == "roll20":
            roll20.parse_json(file, parsed, world)
        else:
            kanka_reader.read(file, parsed)
    kanka_reader.finish()
    _mark_held_by_many(world.entities, world.relationships)
    sources = list(dict.fromkeys(_folder(file) if file in leveldb else file for file, _ in files))
    return ImportedWorld(
        format=formats[0],
        # those that gave something (the card and each fact's history name them), or all when none did
        sources=[source for source in sources if source in world.read_from] or sources,
        entities=world.entities,
        relationships=_consistent(world.entities, world.relationships, world.skipped),
        skipped=world.skipped,
        source_ids={world.entities[index].name: ids for index, ids in world.source_ids.items()},
        notes_stated=[world.entities[index].name for index in sorted(world.notes_stated)],
        notes_stated_as={
            world.entities[index].name: sorted(labels) for index, labels in world.notes_stated.items() if labels != {""}
        },
        relations_stated=sorted(world.relations_stated),
        notes_labels={world.entities[index].name: label for index, label in world.notes_labels.items() if label},
        assumed=world.assumed,
        fact_files=world.fact_files,
        records={world.entities[index].name: where for index, where in world.records.items()},
    )


def _leveldb_folders(files: Sequence[tuple[str, bytes]]) -> dict[str, tuple[str, list[tuple[str, bytes]]]]:
    """Each file of a LevelDB folder (one with its ``CURRENT``) → the folder's first file and all its files."""
    parts: dict[str, list[tuple[str, bytes]]] = {}
    for file, data in files:
        if _LEVELDB_FILE.fullmatch(_name(file)):
            parts.setdefault(_folder(file), []).append((file, data))
    folders: dict[str, tuple[str, list[tuple[str, bytes]]]] = {}
    for held in parts.values():
        if not any(_name(file) == "CURRENT" for file, _ in held):
            raise problem(
                held[0][0], None, None, "part of a LevelDB folder without its CURRENT: import the whole folder"
            )
        folders.update((file, (held[0][0], held)) for file, _ in held)
    return folders


def _mark_held_by_many(entities: list[EntitySpec], facts: list[RelationshipSpec]) -> None:
    """An item several sheets of the import hold (a "Longsword +1" on three) is a kind of item many hold, not one
    object: marked so (:data:`~memory.models.HELD_BY_MANY`), each sheet keeps it, and a holder told in play adds to
    them instead of taking it from one."""
    holders: dict[str, set[str]] = {}
    for fact in facts:
        if fact.type == "owns" and fact.target is not None:
            holders.setdefault(name_key(fact.target), set()).add(name_key(fact.source))
    for entity in entities:
        if len(holders.get(name_key(entity.name), ())) > 1:
            entity.attributes[HELD_BY_MANY] = True


def _consistent(
    entities: list[EntitySpec], facts: list[RelationshipSpec], skipped: list[str]
) -> list[RelationshipSpec]:
    """The facts a campaign file can hold: once each (a symmetric or inverse one once from either end), one of a
    one-at-a-time type per entity (the first; the others said), none naming an entity the import lacks."""
    names = {name_key(e.name) for e in entities} | {name_key(a) for e in entities for a in e.aliases}
    many = {name_key(e.name) for e in entities if held_by_many(e.attributes)}
    kept: list[RelationshipSpec] = []
    seen: set[tuple[str, str, str | None, str | None]] = set()
    single: set[tuple[str, str, bool]] = set()
    for fact in facts:
        source, target = name_key(fact.source), name_key(fact.target) if fact.target is not None else None
        if source not in names or (target is not None and target not in names):
            skipped.append(f"fact {fact.describe()}: names an entity not in the import")
            continue
        # as the graph weighs it: "Balcor leader_of Greywatch" is "Greywatch ruled_by Balcor" (see ``find_conflicts``)
        type, source, target = one_way(fact.type, source, target)
        key = (source, type, target, fact.value)
        if key in seen or (type in SYMMETRIC and (target or "", type, source, None) in seen):
            continue
        if fact.value is not None or (type in SINGLE_VALUED and not (type in HOLDING and source in many)):
            one = (source, type, fact.value is None)
            if one in single:
                held = fact.source if source == name_key(fact.source) else fact.target
                skipped.append(f"fact {fact.describe()}: {held} has one {type!r} already")
                continue
            single.add(one)
        seen.add(key)
        kept.append(fact)
    return kept
