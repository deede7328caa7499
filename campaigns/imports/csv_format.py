"""A generic CSV world: ``name,type,aliases,description`` and any further columns as attributes.

UTF-8 with or without a byte-order mark, quoted fields, line breaks inside quotes (the csv module's own rules);
commas, or the semicolons or tabs spreadsheets write in many locales.
Aliases are separated by ``;`` or ``|``. A ``secret`` column (true/yes/1) makes the entity DM-only; a ``dm_notes``
column is GM-only text. Column names are matched case-insensitively.
"""

from __future__ import annotations

import csv
import io
import re

from campaigns.imports.common import World, clean_text, problem
from memory.models import EntityType, suggest_entity_type

REQUIRED = ("name", "type")
_TRUE = frozenset({"true", "yes", "y", "1", "x", "secret"})
_FALSE = frozenset({"", "false", "no", "n", "0", "public"})


def delimiter(text: str) -> str:
    """The header's separator: a comma, or the semicolon or tab a spreadsheet in many locales writes."""
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    return max((",", ";", "\t"), key=lambda d: (len(next(csv.reader([first], delimiter=d), [])), d == ","))


def looks_like(text: str) -> bool:
    """Whether ``text`` starts with a CSV header: two columns or more, not JSON (a missing ``name`` column is then
    said by :func:`parse`)."""
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    if first.lstrip()[:1] in ("{", "["):
        return False
    try:
        header = next(csv.reader([first], delimiter=delimiter(text)))
    except (csv.Error, StopIteration):
        return False
    return len(header) >= 2 and all(0 < len(h.strip()) <= 60 for h in header)


def _unclosed_quote(text: str, separator: str) -> int | None:
    """The line a quoted field opens on that no quote closes, else None. The lenient reader :func:`parse` uses
    reads such a field to the end of the file, and its row's problem would name the last line."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator, strict=True)
    start = 1
    try:
        for _ in reader:
            start = reader.line_num + 1
    except csv.Error as exc:
        if "unexpected end of data" in str(exc):
            return start
    return None  # another strictness the lenient reader forgives


def parse(file: str, text: str, world: World) -> None:
    text = text.lstrip("\ufeff")
    if (line := _unclosed_quote(text, delimiter(text))) is not None:
        raise problem(
            file, f"line {line}", None, 'a quoted field opens on this line and is never closed (a " missing?)'
        )
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter(text))
    try:
        header = next(reader)
    except StopIteration:
        raise problem(file, None, None, "the file is empty: a CSV import needs a header row") from None
    except csv.Error as exc:
        raise problem(file, 1, None, f"not CSV: {exc}") from None
    columns = [h.strip().casefold() for h in header]
    for required in REQUIRED:
        if required not in columns:
            raise problem(file, None, required, f"no {required!r} column; the header is {', '.join(header)}")
    seen: set[str] = set()
    for column, raw in zip(columns, header, strict=True):
        if column in seen or not column:
            raise problem(file, None, raw or f"column {columns.index(column) + 1}", "a column with no name or twice")
        seen.add(column)
    try:
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) > len(columns):
                raise problem(file, line, None, f"{len(row)} fields, but the header has {len(columns)}")
            # a spreadsheet drops a row's trailing empty cells: they are empty, not columns the row lacks
            cells = dict(zip(columns, [*row, *[""] * (len(columns) - len(row))], strict=True))
            _row(file, line, cells, world)
    except csv.Error as exc:
        raise problem(file, reader.line_num, None, f"not CSV: {exc}") from None


def _row(file: str, line: int, cells: dict[str, str], world: World) -> None:
    written = cells.get("type", "").strip()
    try:
        kind = EntityType(written)
    except ValueError:
        meant = suggest_entity_type(written)
        hint = f"; did you mean {meant!r}?" if meant else ""
        types = ", ".join(t.value for t in EntityType)
        raise problem(
            file, f"line {line} ({cells.get('name', '').strip()!r})", "type", f"{written!r} is not one of {types}{hint}"
        ) from None
    secret_cell = cells.get("secret", "").strip().casefold()
    if secret_cell not in _TRUE | _FALSE:
        raise problem(file, f"line {line}", "secret", f"{cells['secret']!r}: write true or false")
    attributes = {
        key: clean_text(value)
        for key, value in cells.items()
        if key not in ("name", "type", "aliases", "description", "secret", "dm_notes") and value.strip()
    }
    world.entity(
        (file, f"line {line}"),
        name=cells.get("name", ""),
        type=kind,
        description=clean_text(cells.get("description", "")),
        aliases=[a.strip() for a in re.split(r"[;|]", cells.get("aliases", "")) if a.strip()],
        attributes=attributes,
        secret=secret_cell in _TRUE,
        dm_notes=clean_text(cells.get("dm_notes", "")),
        states_notes="dm_notes" in cells,  # no such column: the file says nothing of GM notes
    )
