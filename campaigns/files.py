"""Reading and writing campaign files, with every error pointing at a file, a line and an item.

A campaign file comes from a DM's upload, so it is untrusted: the size is checked before any parsing, nesting
depth is checked on the event stream before building nodes (libyaml's composer recurses in C and a 200 KB file
of ``[[[[…`` crashes the process), and aliases are counted on the composed node graph before anything is
expanded, so a billion-laughs file is refused without ever being built.

Parsing keeps the composed YAML nodes next to the values so that a pydantic error at ``("attributes", "hp")``
of entity #3 can be reported at the line where that attribute is written.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from campaigns.schema import (
    CampaignFile,
    CampaignHeader,
    EntitySpec,
    RelationshipSpec,
    find_conflicts,
    name_key,
)
from memory.errors import describe_value, printable
from memory.models import EntityType, suggest_entity_type

DEFAULT_MAX_BYTES = 5 * 1024 * 1024
#: A load holds the campaign's graph lock, so live play waits for it: 20,000 entities take about a minute, and are
#: ten times what a long campaign needs. 5 MB holds 100,000 small ones (two minutes).
MAX_ENTITIES = 20_000
#: Nodes after expanding aliases. A 5 MB campaign file written by hand has far fewer; a YAML bomb far more.
DEFAULT_MAX_NODES = 1_000_000
#: campaign → entities → entity → attributes → list is depth 5; anything near this limit is not a campaign.
MAX_DEPTH = 32
#: The message lists this many problems, then counts the rest.
MAX_REPORTED = 20

_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: Not libyaml's CSafeDumper: it writes every character beyond U+FFFF as an escape ("A dragon \U0001F409" for the
#: 🐉 the DM typed). The Python emitter writes them as typed, at about 30 µs an entity (0.6 s for 20,000).
_Dumper: type[Any] = yaml.SafeDumper
_TAG = "tag:yaml.org,2002:"
# Only builds the scalar types; no stream is attached.
_SCALARS = yaml.constructor.SafeConstructor()
_SECTIONS = ("campaign", "entities", "relationships")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a campaign file. ``line`` is 1-based; 0 when it is about the file as a whole."""

    filename: str
    line: int
    item: str  # "entity #3 'Eldrinax'", "relationship #2 (A -[x]-> B)", "campaign", "top level", "file"
    message: str

    def __str__(self) -> str:
        where = f"{self.filename}:{self.line}" if self.line else self.filename
        return f"{where}: {self.item}: {self.message}"


class CampaignFileError(ValueError):
    """A campaign file was refused. ``str()`` lists the problems (file:line: item: message), first by line."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(problems, key=lambda p: p.line)
        lines = [str(p) for p in self.problems[:MAX_REPORTED]]
        if len(self.problems) > MAX_REPORTED:
            lines.append(f"… and {len(self.problems) - MAX_REPORTED} more problems")
        super().__init__("\n".join(lines))

    @property
    def filename(self) -> str:
        return self.problems[0].filename

    @property
    def line(self) -> int:
        return self.problems[0].line


class _NodeError(Exception):
    def __init__(self, node: yaml.Node, message: str) -> None:
        super().__init__(message)
        self.node = node
        self.message = message


def _file_error(filename: str, line: int, message: str) -> CampaignFileError:
    """A problem with the file as a whole (size, encoding, syntax, bombs): nothing after it can be checked."""
    return CampaignFileError([Problem(filename, line, "file", message)])


# ---------------------------------------------------------------------------------------------------- reading


def parse_campaign_file(
    data: bytes | str,
    filename: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
    *,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> CampaignFile:
    """Parse and check a campaign file; raise :class:`CampaignFileError` naming file, line and item.

    ``filename`` is only used in messages (pass the upload's name). Synchronous and CPU-bound for big files:
    call it through ``asyncio.to_thread`` from the bot.
    """
    encoded = _encode(data, filename, max_bytes)
    with _gc_paused():
        root = _compose(encoded, filename)
        _check_expansion(root, filename, max_nodes)
        return _Reader(filename, root).read()


def too_big_to_load(entities: int, size: int, *, max_bytes: int = DEFAULT_MAX_BYTES, how: str) -> str:
    """Why an exported file (``entities``, ``size`` bytes) could not be loaded back by ``how`` in one piece, and
    what to do; '' if it can. The export is written all the same: the DM's data must get out."""
    over = [f"{entities:,} entities (at most {MAX_ENTITIES:,})"] * (entities > MAX_ENTITIES)
    over += [f"{size:,} bytes (at most {max_bytes:,})"] * (size > max_bytes)
    if not over:
        return ""
    return (
        f"the file has {' and '.join(over)}, more than one {how} takes: to load it back, split it into smaller files "
        "(a relationship goes in a file with both its entities; one loaded before may be listed again by name and "
        "type alone) and load them one after another"
    )


def read_campaign_file(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> CampaignFile:
    """:func:`parse_campaign_file` for a file on disk, refusing an oversized one before reading it."""
    path = Path(path)
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        # Read one byte past the limit rather than trusting st_size alone: pipes and growing files lie.
        data = handle.read(max_bytes + 1) if size <= max_bytes else b""
    if size > max_bytes or len(data) > max_bytes:
        size = max(size, len(data))
        raise _file_error(str(path), 0, f"is {size:,} bytes; the limit is {max_bytes:,} bytes")
    return parse_campaign_file(data, str(path), max_bytes)


def _encode(data: bytes | str, filename: str, max_bytes: int) -> bytes:
    """The file as UTF-8 bytes without a BOM, refused if too big or not UTF-8."""

    def too_big(size: int) -> CampaignFileError:
        return _file_error(filename, 0, f"is {size:,} bytes; the limit is {max_bytes:,} bytes")

    # Sizes first: neither decoding nor YAML should ever see a 50 MB upload. A str has at most as many
    # characters as its UTF-8 encoding has bytes, so its length alone can refuse it before encoding.
    if len(data) > max_bytes:
        raise too_big(len(data))
    if isinstance(data, str):
        try:
            encoded = data.encode("utf-8")
        except UnicodeEncodeError as exc:  # lone surrogates from a badly decoded upload
            line = data.count("\n", 0, exc.start) + 1
            raise _file_error(
                filename, line, f"contains an unencodable character U+{ord(data[exc.start]):04X}"
            ) from None
        if len(encoded) > max_bytes:
            raise too_big(len(encoded))
        return encoded.removeprefix(b"\xef\xbb\xbf")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise _file_error(filename, 1, "is UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        column = len(data[line_start : exc.start].decode("utf-8", "replace")) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        message = f"is not valid UTF-8 (byte 0x{data[exc.start]:02x} at column {column}); save it as UTF-8"
        raise _file_error(filename, line, message) from None
    return data.removeprefix(b"\xef\xbb\xbf")


@contextmanager
def _gc_paused() -> Iterator[None]:
    # Parsing allocates a few objects per YAML node and frees almost nothing until the end, so every cyclic
    # collection re-scans the whole growing node tree: a 5 MB file took 16 s with the collector on, 3 s off.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _compose(encoded: bytes, filename: str) -> yaml.Node:
    try:
        _check_depth(encoded, filename)
        root = yaml.compose(encoded, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        raise CampaignFileError([_syntax_problem(exc, filename, encoded)]) from None
    except yaml.reader.ReaderError as exc:  # a forbidden character; libyaml reports a byte offset
        line = encoded.count(b"\n", 0, exc.position) + 1
        char = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
        raise _file_error(filename, line, f"contains the control character {char}, which YAML does not allow") from None
    if root is None:
        raise _file_error(filename, 0, "is empty; expected 'entities:' and a list")
    return root


def _check_depth(encoded: bytes, filename: str) -> None:
    too_deep = f"nests lists/mappings more than {MAX_DEPTH} levels deep"
    depth = 0
    try:
        for event in yaml.parse(encoded, Loader=_Loader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    assert event.start_mark is not None  # the parser marks every event it makes
                    raise _file_error(filename, event.start_mark.line + 1, too_deep)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        # libyaml 0.2.6 (PyYAML 6.0.4's wheels) stops at 1,000 levels itself, and its scanner reads "[[[..." ahead
        # of the events counted here: the same refusal, not a syntax error.
        if "maximum nesting depth" not in (exc.problem or "") or exc.context_mark is None:
            raise
        raise _file_error(filename, exc.context_mark.line + 1, too_deep) from None


def _syntax_problem(exc: yaml.MarkedYAMLError, filename: str, encoded: bytes) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    column = f" (column {mark.column + 1})" if mark is not None else ""
    at = encoded.split(b"\n")[mark.line][mark.column : mark.column + 1] if mark is not None else b""
    if at == b"\t" and "tab" not in (exc.problem or ""):
        column += ": a tab, and YAML indents with spaces only"  # the parser names no character
    if exc.context and exc.context.startswith("while") and exc.context_mark is not None:
        # "did not find expected ',' (column 9), while parsing a flow sequence started at line 4"
        detail = f"{exc.problem}{column}, {exc.context} started at line {exc.context_mark.line + 1}"
    elif exc.context:
        detail = f"{exc.context}, {exc.problem}{column}"  # "expected a single document …, but found another"
    else:
        detail = f"{exc.problem}{column}"
    return Problem(filename, mark.line + 1 if mark is not None else 0, "file", f"YAML syntax error: {detail}")


def _check_expansion(root: yaml.Node, filename: str, max_nodes: int) -> None:
    """Count the values the document would have with every alias expanded, without expanding anything.

    An alias is the same node object reused, so the composed graph is small even for a billion laughs; sizes
    are memoised per node, which makes the count linear in the file. A node reached again while it is still
    being counted is an alias to its own ancestor, which would expand forever. The expanded depth is bounded too,
    because aliases nested in aliases can build a deep tree out of shallow text.
    """
    measured: dict[int, tuple[int, int]] = {}  # id(node) → (expanded size, expanded depth)
    in_progress: set[int] = set()

    def refuse(line: int, message: str) -> CampaignFileError:
        return _file_error(filename, line, message)

    def measure(node: yaml.Node) -> tuple[int, int]:
        key = id(node)
        if key in measured:
            return measured[key]
        in_progress.add(key)
        size, depth = 1, 1
        # Each child with the node whose line refers to it: for a mapping value that is its key, where an alias
        # such as ``aliases: *loop`` is written (the alias itself leaves no mark on the node it points to).
        if isinstance(node, yaml.SequenceNode):
            children: Iterable[tuple[yaml.Node, yaml.Node]] = ((child, node) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            children = ((child, k) for k, v in node.value for child in (k, v))
        else:
            children = ()
        for child, referrer in children:
            if id(child) in in_progress:
                raise refuse(_line(referrer), "an alias refers to a list or mapping that contains it")
            child_size, child_depth = measure(child)
            size += child_size
            depth = max(depth, child_depth + 1)
        in_progress.discard(key)
        # The first (innermost) node over a limit: its line is where the amplification happens.
        if size > max_nodes:
            raise refuse(
                _line(node),
                f"expands to more than {max_nodes:,} YAML values once aliases (*name) are expanded; "
                "refusing it as a possible YAML bomb",
            )
        if depth > MAX_DEPTH:
            raise refuse(_line(node), f"aliases nest lists/mappings more than {MAX_DEPTH} levels deep")
        measured[key] = (size, depth)
        return size, depth

    measure(root)


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return describe_value(node.value)


def _to_python(node: yaml.Node) -> Any:
    """A node as plain Python (str, int, float, bool, None, list, dict); other YAML types are refused."""
    if isinstance(node, yaml.ScalarNode):
        return _scalar(node)
    if isinstance(node, yaml.SequenceNode):
        if node.tag != _TAG + "seq":
            raise _NodeError(node, f"unsupported YAML tag {node.tag!r}")
        return [_to_python(child) for child in node.value]
    assert isinstance(node, yaml.MappingNode)
    if node.tag != _TAG + "map":
        raise _NodeError(node, f"unsupported YAML tag {node.tag!r}")
    result: dict[Any, Any] = {}
    for source in _merged_keys(node):
        result.update(_to_python(source))  # explicit keys below override merged ones, as YAML says
    first_line: dict[Any, int] = {}
    previous: tuple[Any, yaml.Node] | None = None
    for key_node, value_node in node.value:
        if key_node.tag == _TAG + "merge":
            continue
        if previous is not None and _continues(previous[1], key_node, value_node):
            # ``{personality: paranoid wizard, speaks in riddles}`` (the design's own file): YAML reads the words
            # after the comma as a key with no value; a DM means the rest of the value.
            result[previous[0]] = f"{result[previous[0]]}, {key_node.value}"
            continue
        if not isinstance(key_node, yaml.ScalarNode):
            raise _NodeError(key_node, "a key must be plain text, not a list or mapping")
        key = _scalar(key_node)
        if key in first_line:
            # Silently keeping the last of two keys would hide exactly the kind of typo this format refuses.
            raise _NodeError(key_node, f"key {key!r} appears twice (first at line {first_line[key]})")
        first_line[key] = _line(key_node)
        result[key] = _to_python(value_node)
        previous = (key, value_node)
    return result


def _continues(value_before: yaml.Node, key_node: yaml.Node, value_node: yaml.Node) -> bool:
    """Whether ``key_node`` of a flow mapping is the rest of the plain text before it: a key written without a
    colon (its empty value starts where it ends), after an unquoted text value (unquoted: no style)."""
    return (
        isinstance(value_before, yaml.ScalarNode)
        and value_before.tag == _TAG + "str"
        and not value_before.style
        and isinstance(key_node, yaml.ScalarNode)
        and key_node.tag == _TAG + "str"
        and not key_node.style
        and isinstance(value_node, yaml.ScalarNode)
        and value_node.tag == _TAG + "null"
        and value_node.value == ""
        and value_node.start_mark.index == key_node.end_mark.index
    )


def _merged_keys(node: yaml.MappingNode, *, strict: bool = True) -> list[yaml.MappingNode]:
    """The mappings pulled in by ``<<: *anchor`` (or ``<<: [*a, *b]``), highest priority last.

    Not ``strict`` when only locating lines for a message: a bad merge is reported by the conversion instead.
    """
    sources: list[yaml.MappingNode] = []
    for key_node, value_node in node.value:
        if key_node.tag != _TAG + "merge":
            continue
        candidates = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
        for candidate in candidates:
            if not isinstance(candidate, yaml.MappingNode):
                if not strict:
                    return []
                raise _NodeError(candidate, "'<<' must merge a mapping or a list of mappings")
        # In ``<<: [*a, *b]`` the earlier mapping wins, so it must be applied last.
        sources.extend(reversed(candidates))
    return sources


def _scalar(node: yaml.ScalarNode) -> Any:
    tag = node.tag.removeprefix(_TAG)
    if tag in ("str", "value", "merge"):
        return node.value
    if tag == "timestamp":
        # Dates in a campaign are in-world text ("1203-04-05" of some calendar), not Python datetimes.
        return node.value
    if tag == "null":
        return None
    if tag == "bool":
        return _SCALARS.construct_yaml_bool(node)
    try:
        if tag == "int":
            return _SCALARS.construct_yaml_int(node)
        if tag == "float":
            return _SCALARS.construct_yaml_float(node)
    except ValueError:  # Python refuses int() of more than 4,300 digits
        raise _NodeError(node, f"the number {node.value[:20]!r}… is too long") from None
    raise _NodeError(node, f"unsupported YAML tag {node.tag!r}; campaign files hold only text, numbers and lists")


def _child(node: yaml.Node, part: str | int, *, key: bool = False) -> yaml.Node | None:
    """The node at one step of a pydantic error location, looking through ``<<`` merges."""
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        return node.value[part]
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == str(part) and key_node.tag != _TAG + "merge":
                return key_node if key else value_node
        for source in reversed(_merged_keys(node, strict=False)):
            found = _child(source, part, key=key)
            if found is not None:
                return found
    return None


def _locate(node: yaml.Node, loc: tuple[str | int, ...], *, key: bool = False) -> int:
    """The line of the deepest node along ``loc``; with ``key``, of the last step's key, not its value."""
    for i, part in enumerate(loc):
        found = _child(node, part, key=key and i == len(loc) - 1)
        if found is None:
            break
        node = found
    return _line(node)


def _peek(node: yaml.Node, key: str) -> str | None:
    """A scalar field of a mapping as written, for naming an item even when the item itself is invalid."""
    found = _child(node, key)
    if isinstance(found, yaml.ScalarNode) and found.value:
        text = " ".join(found.value.split())
        return text if len(text) <= 60 else text[:57] + "…"
    return None


def _field_name(loc: tuple[str | int, ...]) -> str:
    # ("aliases", 1) reads as "aliases #2": DMs count from one.
    return "".join(f" #{part + 1}" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


_WANTED = {
    "string_type": "text",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
}


def _friendly(error: Any, model: type[BaseModel]) -> str:
    """A pydantic error in words a DM understands, naming the field."""
    loc: tuple[str | int, ...] = tuple(error["loc"])
    kind: str = error["type"]
    field = _field_name(loc)
    value = error.get("input")
    if kind == "extra_forbidden":
        allowed = list(model.model_fields)
        hint = get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
        suggestion = f"; did you mean {hint[0]!r}?" if hint else f"; allowed: {', '.join(allowed)}"
        return f"unknown field {loc[-1]!r}{suggestion}"
    if kind == "missing":
        return f"missing field {field!r}"
    if kind == "enum" and loc == ("type",):
        types = ", ".join(t.value for t in EntityType)
        meant = suggest_entity_type(str(value))
        suggestion = f"; did you mean {meant!r}?" if meant else ""
        return f"type {value!r} is not one of {types}{suggestion}"
    if loc and loc[-1] == "[key]":
        # loc is (..., <the key itself>, "[key]")
        return f"{_field_name(loc[:-2])} has the key {value!r}; names of attributes must be text"
    if kind in _WANTED:
        message = f"must be {_WANTED[kind]}, not {describe_value(value)}"
        if kind == "string_type" and isinstance(value, bool | int | float):
            message += " (put it in quotes to make it text)"
        if kind == "list_type" and isinstance(value, str) and len(value) <= 40:
            message += f" (write [{value}] for a list of one)"
        return f"{field} {message}" if field else f"expected {_WANTED[kind]}, found {describe_value(value)}"
    # Our own validators (names, attribute values) phrase their message to follow the field's name.
    message = error["msg"].removeprefix("Value error, ")  # a ValueError raised by the store's own checks
    return f"{field} {message}" if field else message


class _Reader:
    """Turns a composed document into a :class:`CampaignFile`, collecting every problem with its line."""

    def __init__(self, filename: str, root: yaml.Node) -> None:
        self.filename = filename
        self.root = root
        self.problems: list[Problem] = []

    def problem(self, line: int, item: str, message: str) -> None:
        self.problems.append(Problem(self.filename, line, item, message))

    def read(self) -> CampaignFile:
        sections = self._sections()
        listed = sections.get("entities")
        if isinstance(listed, yaml.SequenceNode) and len(listed.value) > MAX_ENTITIES:
            # before checking each of them, which alone takes seconds
            self.problem(
                _line(listed),
                "entities",
                f"lists {len(listed.value):,}; the limit is {MAX_ENTITIES:,} entities in one file, as play waits "
                "while one loads: split it into several files and load them one after another",
            )
            raise CampaignFileError(self.problems)
        header = self._header(sections.get("campaign"))
        entities, unchecked = self._items(sections.get("entities"), "entities", EntitySpec)
        relationships, _ = self._items(sections.get("relationships"), "relationships", RelationshipSpec)
        for conflict in find_conflicts(entities, relationships, frozenset(unchecked)):
            section_node = sections[conflict.section]
            item_node = section_node.value[conflict.index]
            message = conflict.message
            if conflict.other_index is not None:
                message += f" (line {_line(section_node.value[conflict.other_index])})"
            label = self._label(conflict.section, conflict.index, item_node)
            self.problem(_locate(item_node, conflict.loc), label, message)
        if self.problems:
            raise CampaignFileError(self.problems)
        try:
            return CampaignFile(
                campaign=header,
                entities=[spec for _, spec in entities],
                relationships=[spec for _, spec in relationships],
            )
        except ValidationError as exc:  # find_conflicts above runs the same checks; this would be a bug
            raise AssertionError(f"{self.filename}: checked campaign failed validation: {exc}") from exc

    def _sections(self) -> dict[str, yaml.Node]:
        root = self.root
        if not isinstance(root, yaml.MappingNode):
            raise CampaignFileError(
                [
                    Problem(
                        self.filename,
                        _line(root),
                        "top level",
                        "expected a mapping with 'entities:' (and optionally 'campaign:', 'relationships:'), "
                        f"found {_kind(root)}",
                    )
                ]
            )
        sections: dict[str, yaml.Node] = {}
        for key_node, value_node in root.value:
            name = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if name not in _SECTIONS:
                hint = get_close_matches(str(name), _SECTIONS, n=1, cutoff=0.6)
                suggestion = f"; did you mean {hint[0]!r}?" if hint else f"; expected {', '.join(_SECTIONS)}"
                self.problem(_line(key_node), "top level", f"unknown section {name!r}{suggestion}")
            elif name in sections:
                self.problem(
                    _line(key_node),
                    "top level",
                    f"section {name!r} appears twice (first at line {_line(sections[name])})",
                )
            else:
                sections[name] = value_node
        for name in ("entities", "relationships"):
            node = sections.get(name)
            if node is None or isinstance(node, yaml.SequenceNode) or _is_null(node):
                continue
            self.problem(_line(node), name, f"expected a list of {name}, found {_kind(node)}")
            del sections[name]
        return sections

    def _header(self, node: yaml.Node | None) -> CampaignHeader | None:
        if node is None or _is_null(node):
            return None
        return self._validate(node, CampaignHeader, "campaign")

    def _items(
        self, node: yaml.Node | None, section: str, model: type[EntitySpec] | type[RelationshipSpec]
    ) -> tuple[list[tuple[int, Any]], set[str]]:
        """Valid items with their index, and the name keys of entities that failed on their own."""
        valid: list[tuple[int, Any]] = []
        failed_names: set[str] = set()
        if not isinstance(node, yaml.SequenceNode):
            return valid, failed_names
        for index, item_node in enumerate(node.value):
            label = self._label(section, index, item_node)
            if not isinstance(item_node, yaml.MappingNode):
                wanted = "name and type" if section == "entities" else "source, type and target (or value)"
                self.problem(_line(item_node), label, f"expected a mapping with {wanted}, found {_kind(item_node)}")
                continue
            spec = self._validate(item_node, model, label)
            if isinstance(spec, EntitySpec):
                object.__setattr__(spec, "where", f"{self.filename}:{_locate(item_node, ('name',))}")
            if spec is not None:
                valid.append((index, spec))
            elif section == "entities":
                failed_names.update(name_key(n) for n in self._spellings(item_node))
        return valid, failed_names

    def _spellings(self, node: yaml.Node) -> list[str]:
        names = [self._raw(_child(node, "name"))]
        aliases = _child(node, "aliases")
        if isinstance(aliases, yaml.SequenceNode):
            names += [self._raw(alias) for alias in aliases.value]
        return [n for n in names if n]

    @staticmethod
    def _raw(node: yaml.Node | None) -> str:
        return node.value if isinstance(node, yaml.ScalarNode) else ""

    def _validate(self, node: yaml.Node, model: type[BaseModel], label: str) -> Any:
        try:
            value = _to_python(node)
        except _NodeError as exc:
            self.problem(_line(exc.node), label, exc.message)
            return None
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            for error in exc.errors():
                loc = tuple(error["loc"])
                if loc and loc[-1] == "[key]":
                    line = _locate(node, loc[:-1])
                else:
                    line = _locate(node, loc, key=error["type"] == "extra_forbidden")
                self.problem(line, label, _friendly(error, model))
            return None

    def _label(self, section: str, index: int, node: yaml.Node) -> str:
        if section == "entities":
            name = _peek(node, "name") if isinstance(node, yaml.MappingNode) else None
            return f"entity #{index + 1}" + (f" {name!r}" if name else "")
        if section == "relationships":
            if isinstance(node, yaml.MappingNode):
                source, kind = (_peek(node, f) or "?" for f in ("source", "type"))
                target = _peek(node, "target") or _peek(node, "value") or "?"
                # as given, so each is escaped: a bidi override in one would reorder the message
                source, kind, target = (printable(str(part)) for part in (source, kind, target))
                return f"relationship #{index + 1} ({source} -[{kind}]-> {target})"
            return f"relationship #{index + 1}"
        return section


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == _TAG + "null"


# ---------------------------------------------------------------------------------------------------- writing


def dump_campaign_file(campaign: CampaignFile, header_comment: str = "") -> str:
    """YAML that :func:`parse_campaign_file` reads back to an equal :class:`CampaignFile`.

    Fields left at their defaults are omitted so an exported file reads like a hand-written one.
    ``header_comment`` (several lines allowed) is written as ``#`` comments on top, e.g. a licence.
    """
    document: dict[str, Any] = {}
    if campaign.campaign is not None:
        document["campaign"] = campaign.campaign.model_dump(mode="json", exclude_defaults=True)
    document["entities"] = [e.model_dump(mode="json", exclude_defaults=True) for e in campaign.entities]
    if campaign.relationships:
        document["relationships"] = [r.model_dump(mode="json", exclude_defaults=True) for r in campaign.relationships]
    body = yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)
    comment = "".join(f"# {line}".rstrip() + "\n" for line in header_comment.splitlines())
    return comment + body
