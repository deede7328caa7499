"""Check the example campaign's types against how the CRD3 episodes use each name.

    python -m campaigns.type_evidence [--crd3 ../shared/data/crd3] [--campaign campaigns/examples/critical_role.yaml]

An independent check of the hand-made table in ``critical_role_overrides.yaml``: the episodes' transcripts, their
wiki synopses and the aligned summaries say "the city of Zadash" or "arrive in Emon" of places and "Scanlan says"
or "Kima, who" of people. Each name (and alias) is counted in such phrases; where the count is clear (at least
``MIN_CUES`` cues, two thirds of one kind) the kind is compared with the entity's type. Prints the agreement and
every disagreement. Nothing here feeds the builder: it only reports.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from campaigns.files import read_campaign_file
from memory.models import PERSON_TYPES, EntityType

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CRD3 = Path(os.environ.get("LOREKEEPER_DATA", ROOT.parent / "shared" / "data")) / "crd3"
DEFAULT_CAMPAIGN = Path(__file__).resolve().parent / "examples" / "critical_role.yaml"
MIN_CUES = 3

_PLACE_BEFORE = (
    r"(?:city|town|village|capital|streets|outskirts|gates|kingdom|realm|region|land|lands|isle|island|continent)"
    r" of|(?:arrive[sd]?|arriving|back|travel(?:s|ed|ling)?|head(?:s|ed|ing)?|return(?:s|ed|ing)?|way) (?:in|at|to)"
    r"|(?:leave|leaves|left|leaving|reach|reaches|reached|outside|inside|within|across|toward|towards|into)"
)
_PERSON_AFTER = (
    r"(?:says|said|asks|asked|tells|told|replies|replied|nods|nodded|smiles|smiled|laughs|laughed|whispers"
    r"|whispered|grins|grinned|shouts|shouted|explains|explained|agrees|agreed|sighs|sighed|turns to|thanks"
    r"|introduces (?:himself|herself)|who (?:is|was|has|had))\b|, who\b|, (?:he|she) (?:says|said)"
)
_PERSON_BEFORE = (
    r"(?:ask|asks|asked|tell|tells|told|thank|thanks|thanked|meet|meets|met|talk to|speak to|speaks to"
    r"|speaking with|talks with|kiss|kisses|hug|hugs|farewells? to|goodbye to)"
)


def _texts(crd3: Path) -> Iterator[str]:
    """The transcripts, synopses and aligned summaries of the CRD3 episodes shipped in ../shared."""
    for path in sorted((crd3 / "episodes").glob("*.json")):
        episode = json.loads(path.read_text(encoding="utf-8"))
        for turn in episode.get("TURNS", []):
            yield " ".join(turn.get("UTTERANCES", []))
        meta = episode.get("METADATA", {})
        for blurb in meta.get("Wiki Blurb", []):
            yield blurb.get("content", "")
        for section in meta.get("Synopsis", []):
            for part in section.get("content", []):
                yield part.get("content", "")
    index = crd3 / "aligned_index.dev.jsonl"
    if index.is_file():
        seen: set[str] = set()
        for line in index.read_text(encoding="utf-8").splitlines():
            summary = json.loads(line).get("summary", "")
            if summary not in seen:  # the index repeats a summary once per chunk size
                seen.add(summary)
                yield summary


def cues(names: Iterable[str], texts: list[str]) -> Counter[str]:
    """How often the names stand where a place ("the city of X") or a person ("X says") stands."""
    found: Counter[str] = Counter()
    for name in names:
        n = re.escape(name)
        # "outside Kamaljiori's temple" is about the temple, not Kamaljiori.
        place = re.compile(rf"\b(?:{_PLACE_BEFORE}) (?:the )?{n}\b(?!['’]s)")
        person_after = re.compile(rf"\b{n}(?:'s)? ?(?:{_PERSON_AFTER})")
        person_before = re.compile(rf"\b{_PERSON_BEFORE} {n}\b")
        for text in texts:
            if name not in text:
                continue
            found["place"] += len(place.findall(text))
            found["person"] += len(person_after.findall(text)) + len(person_before.findall(text))
    return found


def evidence_kind(found: Counter[str], min_cues: int = MIN_CUES) -> str | None:
    """ "place" or "person" when the cues say so clearly, else None."""
    total = found["place"] + found["person"]
    if total < min_cues:
        return None
    kind, count = found.most_common(1)[0]
    return kind if count * 3 >= total * 2 else None


def kind_of(entity_type: EntityType) -> str:
    if entity_type in PERSON_TYPES:
        return "person"
    return "place" if entity_type == EntityType.place else "other"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compare the example's types with the episodes' usage.")
    parser.add_argument("--crd3", type=Path, default=DEFAULT_CRD3)
    parser.add_argument("--campaign", type=Path, default=DEFAULT_CAMPAIGN)
    args = parser.parse_args(argv)
    if not (args.crd3 / "episodes").is_dir():
        print(f"error: {args.crd3}/episodes not found", file=sys.stderr)
        return 1
    texts = list(_texts(args.crd3))
    campaign = read_campaign_file(args.campaign)
    checked = agreed = 0
    for entity in campaign.entities:
        # The cues tell a person from a place; "into the Bag of Holding" says nothing about an item or a faction.
        if kind_of(entity.type) == "other":
            continue
        found = cues([entity.name, *entity.aliases], texts)
        kind = evidence_kind(found)
        if kind is None:
            continue
        checked += 1
        if kind == kind_of(entity.type):
            agreed += 1
        else:
            print(f"disagree: {entity.name!r} is {entity.type.value}, the episodes use it as a {kind} ({dict(found)})")
    share = f"{agreed / checked:.0%}" if checked else "n/a"
    print(
        f"{checked} of {len(campaign.entities)} people and places have clear cues; "
        f"the type agrees for {agreed} ({share})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
