"""Evidence other than phrasing for a turning point, on the dev episodes only (tried, not kept; bench/README.md
"The offline review queue"): the DM's sentences the meaning rule reads (``meaning_sentences``), their cosine to
the kind's prototypes, whether 2+ players exclaimed in short lines right after the line (the table's reaction),
and whether the entity is named more in the 40 lines after than before (its salience jump).

    LOREKEEPER_DATA=../shared/data PYTHONPATH=$PWD python bench/turning_evidence.py [--window 6] [--floor 0.35]

Prints the counts and lists the pool a lower threshold would open (between ``--floor`` and the kind's threshold,
past the near-misses' margin), each with its reaction; which of them are turning points is judged by hand.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.extraction import entries, known_entities
from bench.offgame import data_dir, episode
from memory.extraction.events import (
    MEANING_MARGIN,
    MEANING_THRESHOLD,
    NEAR_MISSES,
    PROTOTYPES,
    meaning_sentences,
    narration,
    said_whole,
)
from memory.gazetteer import Gazetteer
from memory.models import Entry
from memory.offgame import narrator, out_of_game
from memory.providers.embeddings import MiniLMEmbedder

EXCLAIMED = re.compile(
    r"\b(?:no+|oh+|god|shit|fuck\w*|holy|wow|whoa|jesus|damn|yes+|yay|what)\b|!"
    r"|\((?:gasps?|groans?|screams?|cheers?|cheering|shouting|yelling|gasping)\)",
    re.IGNORECASE,
)
SHORT_WORDS = 6  # a reaction is a short line
SALIENCE_LINES = 40


def reacting(lines: list[Entry], n: int, window: int, by_dm: object) -> set[str]:
    """The players (not the DM) who exclaimed in a short line among the ``window`` lines after line ``n``."""
    return {
        e.speaker
        for e in lines[n + 1 : n + 1 + window]
        if not by_dm(e) and len(e.text.split()) <= SHORT_WORDS and EXCLAIMED.search(e.text)  # type: ignore[operator]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=int, default=6, help="lines after the DM's line a reaction is looked for in")
    parser.add_argument("--floor", type=float, default=0.35, help="the lowest cosine of the pool listed")
    args = parser.parse_args()
    gazetteer, embedder = Gazetteer(known_entities()), MiniLMEmbedder()
    protos = {k: np.asarray(embedder.embed_blocking(list(v)), dtype=np.float64) for k, v in PROTOTYPES.items()}
    misses = np.asarray(embedder.embed_blocking(list(NEAR_MISSES)), dtype=np.float64)
    read = reacted = 0
    pool: list[str] = []
    for place, path in enumerate(sorted(data_dir().glob("*.json"))):
        if place % 2:  # held-out: never read here
            continue
        lines = entries(episode(path.stem))
        talk, by_dm = out_of_game(lines, None), narrator(lines, None)
        sentences = []
        for n, e in enumerate(lines):
            if e.id in talk or not by_dm(e):
                continue
            text = narration(e.text)
            spans = [(a, b, x) for a, b, x in gazetteer.find(text) if said_whole(text, a, b)]
            sentences += [(n, s) for s in meaning_sentences(text, spans)] if spans else []
        if not sentences:
            continue
        vectors = np.asarray(embedder.embed_blocking([s.text for _, s in sentences]), dtype=np.float64)
        for (n, s), v in zip(sentences, vectors, strict=True):
            score, miss = float((protos[s.kind] @ v).max()), float((misses @ v).max())
            who = reacting(lines, n, args.window, by_dm)
            read += 1
            reacted += len(who) >= 2
            if args.floor <= score < MEANING_THRESHOLD[s.kind] and score >= miss + MEANING_MARGIN:
                said = [e for e in lines[max(0, n - SALIENCE_LINES) : n + 1 + SALIENCE_LINES] if e.id not in talk]
                at = next(i for i, e in enumerate(said) if e.id == lines[n].id)
                before = sum(s.entity.id in gazetteer.mentioned_ids(e) for e in said[:at])
                after = sum(s.entity.id in gazetteer.mentioned_ids(e) for e in said[at + 1 :])
                pool.append(
                    f"{path.stem} t{n} {s.kind.value} {s.entity.name} {score:.3f} reacted by {len(who)}, "
                    f"named {before} -> {after}: {s.text[:120]}"
                )
    print(f"dev sentences read by the meaning rule: {read}; 2+ players reacting within {args.window} lines: {reacted}")
    print(f"pool between {args.floor} and the thresholds, past the margin: {len(pool)}")
    print("\n".join(pool))


if __name__ == "__main__":
    main()
