"""How long the players' mask takes to build from a campaign's names: :func:`names_to_mask` and :class:`SecretMask`,
what ``Masking.player_mask`` does after its two queries (the queries are timed in bench/campaign_scale.py).

    python bench/player_mask.py [--names 20000] [--runs 15]

The names are generated: two-syllable-word names ("Eldrin Korvash"), some of everyday words ("The Iron Gate"),
every tenth secret, every fifth public entity with an alias, and a few secret look-alikes of public names ("The
X" beside X), each run with the matcher's ``normalize`` cache cleared (names that changed: why the mask is built
again). The baseline, timed in the same run, is ``names_to_mask`` as it was before the look-alike rules (names
compared casefolded, no ``spelled_alike``): the cost those rules add.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Iterable

from memory.correction.evidence import word_zipf
from memory.correction.text import normalize
from memory.graph.masking import SecretMask
from memory.graph.rules import NAMING_ZIPF, name_words, names_to_mask

SYLLABLES = ["el", "drin", "ax", "kor", "vash", "iron", "hold", "mir", "ath", "zen", "tal", "gor", "ul", "wyn", "bre"]
WORDS = ["gate", "iron", "pale", "tower", "crow", "river", "black", "silver", "inn", "keep", "road", "queen", "hand"]


def campaign_names(n: int, seed: int = 7) -> list[tuple[str, bool, str | None]]:
    """``n`` names, each with whether it is secret and its entity's type (half of the invented names a person's, the
    names of everyday words a place's; None of an alias), as ``Masking._names`` returns them."""
    rng = random.Random(seed)

    def word() -> str:
        return "".join(rng.choices(SYLLABLES, k=rng.randint(2, 3))).title()

    names: list[tuple[str, bool, str | None]] = []
    while len(names) < n:
        i = len(names)
        everyday = i % 7 == 0
        name = f"The {rng.choice(WORDS).title()} {rng.choice(WORDS).title()}" if everyday else f"{word()} {word()}"
        secret = i % 10 == 0
        type = "location" if everyday or i % 2 else "npc"
        names.append((name, secret, type))
        if not secret and i % 5 == 1:
            names.append((f"the {rng.choice(WORDS)} {word().lower()}", False, None))  # an alias
        if not secret and i % 97 == 3:
            names.append((f"The {name}", True, type))  # a secret look-alike of a public name
    return names[:n]


def names_to_mask_before(names: Iterable[tuple[str, bool, str | None]], zipf: Callable[[str], float]) -> list[str]:
    """The baseline: ``names_to_mask`` before the look-alike rules (2cf2573^), names compared casefolded."""
    names = list(names)
    readable = {name.casefold() for name, secret, _ in names if not secret}
    hidden = [name for name, secret, _ in names if secret and name.casefold() not in readable]
    shown = {w for name, secret, _ in names if not secret for w in name_words(name)}
    own = {w for name in hidden for w in name_words(name) if len(w) >= 3 and w not in shown and zipf(w) < NAMING_ZIPF}
    return [*hidden, *own]


def timed(build: Callable[[], object], runs: int) -> float:
    """Median CPU milliseconds of ``build`` (the process's: the cores are shared, and wall time counts waiting for
    them), the ``normalize`` cache cleared before each run."""
    took = []
    for _ in range(runs):
        normalize.cache_clear()
        started = time.process_time()
        build()
        took.append((time.process_time() - started) * 1000)
    return statistics.median(took)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    names = campaign_names(args.names)
    word_zipf("warm")  # wordfreq's table loads once per process, not per mask
    secret = sum(s for _, s, _ in names)
    print(f"{len(names):,} names ({secret:,} secret); median CPU ms of {args.runs} runs")
    rows = [
        ("before the look-alike rules", lambda: SecretMask(names_to_mask_before(names, word_zipf))),
        ("now", lambda: SecretMask(names_to_mask(names, word_zipf))),
    ]
    for label, build in rows:
        print(f"  {label:<28} {timed(build, args.runs):7.1f}")


if __name__ == "__main__":
    main()
