"""The out-of-game talk detector (memory/offgame.py) against hand labels of CRD3 dev turns.

    python bench/offgame.py            # precision/recall per labelled episode, and the share flagged in each episode

The labels (tests/data/offgame_crd3_labels.json, how they were made is written in the file) cover the pre-show,
break and after-show turns of three episodes and 80 random game turns of each; "unclear" turns are left out. A turn
is out of game when labelled anything but "in". A second table scores the DM's own turns (30 drawn at random per
episode, 4 dev and 4 held-out episodes: the rules talk in the DM's voice). The episodes come from
../shared/data/crd3/episodes (override with LOREKEEPER_DATA); MATT is the DM.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory.offgame import Talk, session_talk  # noqa: E402

LABELS = ROOT / "tests" / "data" / "offgame_crd3_labels.json"
DM = "MATT"


def data_dir() -> Path:
    """The CRD3 episodes: LOREKEEPER_DATA, else ../shared/data next to the checkout (or next to its worktrees)."""
    if env := os.environ.get("LOREKEEPER_DATA"):
        return Path(env) / "crd3" / "episodes"
    for base in (ROOT.parent, ROOT.parent.parent):
        if (found := base / "shared" / "data" / "crd3" / "episodes").is_dir():
            return found
    raise SystemExit("no CRD3 episodes: set LOREKEEPER_DATA to the folder holding crd3/episodes")


def episode(name: str) -> list[tuple[str, str]]:
    """(speaker, text) of each turn, in order."""
    turns = json.loads((data_dir() / f"{name}.json").read_text(encoding="utf-8"))["TURNS"]
    return [("/".join(t["NAMES"]), " ".join(t["UTTERANCES"])) for t in turns]


def kinds(turns: list[tuple[str, str]]) -> list[Talk | None]:
    return session_talk([(text, speaker == DM) for speaker, text in turns])


def gold(labels: dict) -> dict[int, str]:
    out = {int(k): v[0] for k, v in labels["turns"].items()}
    for start, end, kind in labels["ranges"]:
        out.update((i, kind) for i in range(start, end + 1) if i not in out)
    return {i: k for i, k in out.items() if k != "unclear"}


def main() -> None:
    labels = json.loads(LABELS.read_text(encoding="utf-8"))["episodes"]
    print("| episode | labelled turns | out of game | flagged | precision | recall | missed (by label) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    total: Counter[str] = Counter()
    for name, ep in labels.items():
        found = kinds(episode(name))
        truth = gold(ep)
        tp = sum(1 for i, k in truth.items() if k != "in" and found[i] is not None)
        fp = sum(1 for i, k in truth.items() if k == "in" and found[i] is not None)
        fn = Counter(k for i, k in truth.items() if k != "in" and found[i] is None)
        out = sum(1 for k in truth.values() if k != "in")
        total.update(tp=tp, fp=fp, fn=sum(fn.values()), n=len(truth), out=out)
        sample = {i: k for i, k in truth.items() if i in set(ep["sample"])}  # line by line, no segment to lean on
        total.update(
            s_tp=sum(1 for i, k in sample.items() if k != "in" and found[i] is not None),
            s_fp=sum(1 for i, k in sample.items() if k == "in" and found[i] is not None),
            s_fn=sum(1 for i, k in sample.items() if k != "in" and found[i] is None),
            s_n=len(sample),
            s_out=sum(1 for k in sample.values() if k != "in"),
        )
        print(
            f"| {name} | {len(truth)} | {out} | {tp + fp} | {tp / max(1, tp + fp):.2f} | {tp / max(1, out):.2f} | "
            f"{', '.join(f'{k} {v}' for k, v in fn.most_common()) or '-'} |"
        )
    for key, label in (("", "all"), ("s_", "all, the 240 random game turns only")):
        tp, fp, missed = total[key + "tp"], total[key + "fp"], total[key + "fn"]
        print(
            f"| {label} | {total[key + 'n']} | {total[key + 'out']} | {tp + fp} | {tp / max(1, tp + fp):.2f} | "
            f"{tp / max(1, tp + missed):.2f} | |"
        )
    print()
    dm_turns(json.loads(LABELS.read_text(encoding="utf-8"))["dm_turns"])
    print()
    print("| episode | turns | flagged | pre-show | break | after-show | sponsor | dice | banter |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for path in sorted(data_dir().glob("*.json")):
        found = kinds(episode(path.stem))
        c = Counter(k for k in found if k is not None)
        print(
            f"| {path.stem} | {len(found)} | {sum(c.values())} | "
            + " | ".join(str(c[k]) for k in (Talk.pre_show, Talk.break_, Talk.after_show, Talk.sponsor, Talk.dice))
            + f" | {c[Talk.banter]} |"
        )


def dm_turns(labels: dict) -> None:
    """The DM's own turns labelled at random (rules talk in the DM's voice), each judged in its session."""
    print("The DM's turns (30 at random per episode): out of game = any label but in; unclear left out")
    print()
    print("| half | episode | labelled | out of game | flagged | precision | recall | missed | wrongly flagged |")
    print("|---|---|---:|---:|---:|---:|---:|---|---|")
    for key in ("dev", "held_out"):
        half = key.replace("_", "-")
        total: Counter[str] = Counter()
        for name in labels[key]:
            found = kinds(episode(name))
            truth = {int(i): k for i, (k, _) in labels["episodes"][name].items() if k != "unclear"}
            tp = sorted(i for i, k in truth.items() if k != "in" and found[i] is not None)
            fp = sorted(i for i, k in truth.items() if k == "in" and found[i] is not None)
            fn = sorted(i for i, k in truth.items() if k != "in" and found[i] is None)
            total.update(n=len(truth), out=len(tp) + len(fn), tp=len(tp), fp=len(fp))
            print(
                f"| {half} | {name} | {len(truth)} | {len(tp) + len(fn)} | {len(tp) + len(fp)} | "
                f"{len(tp) / max(1, len(tp) + len(fp)):.2f} | {len(tp) / max(1, len(tp) + len(fn)):.2f} | "
                f"{', '.join(map(str, fn)) or '-'} | {', '.join(map(str, fp)) or '-'} |"
            )
        hits, wrong, out = total["tp"], total["fp"], total["out"]
        print(
            f"| {half} | all | {total['n']} | {out} | {hits + wrong} | {hits / max(1, hits + wrong):.2f} | "
            f"{hits / max(1, out):.2f} | | |"
        )


if __name__ == "__main__":
    main()
