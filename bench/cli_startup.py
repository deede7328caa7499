"""How long a `lorekeeper` command takes from the shell: the wall time of a whole process, median of a few runs.

    python bench/cli_startup.py [--runs 5] [--baseline /path/to/an/older/checkout]

Each command runs as `python -c "from bot.cli import main; main()" ARGS` with PYTHONPATH set to this checkout
(and, with --baseline, to the other one, interleaved run by run so both see the same load on a shared machine).
The data dir is a throw-away one under /tmp with the embedded PostgreSQL, so `entity list` includes starting and
stopping it. CPU is user + system time of the process: it varies less than wall time when other work shares
the cores. Bytecode is cached as an installed package's is (in a throw-away PYTHONPYCACHEPREFIX, whatever
PYTHONDONTWRITEBYTECODE says: the checkouts are not written to), and each command runs once unmeasured first.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = [
    ["--help"],
    ["entity", "--help"],
    ["entity", "list"],
    ["campaign", "list"],
    ["search", "bell"],
    ["db", "status"],
]


def timed(checkout: Path, data_dir: Path, args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one `lorekeeper ARGS` process of ``checkout``."""
    env = {
        **os.environ,
        "PYTHONPATH": str(checkout),
        "LOREKEEPER_DATA_DIR": str(data_dir),
        # compiling every module from source at every run is not what a DM's installed copy does
        "PYTHONPYCACHEPREFIX": str(data_dir / "pycache"),
    }
    for name in ("DATABASE_URL", "LOREKEEPER_CONFIG", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", "from bot.cli import main; main()", *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=data_dir,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: lorekeeper {' '.join(args)} failed: {done.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with (e.g. a worktree of main)")
    options = parser.parse_args()
    checkouts = {"this": ROOT} | ({"baseline": options.baseline.resolve()} if options.baseline else {})
    data_dir = Path(tempfile.mkdtemp(prefix="lk-cli-bench-", dir="/tmp"))
    try:
        for checkout in checkouts.values():  # first start: initdb, migrations and bytecode, not measured
            timed(checkout, data_dir, ["campaign", "create", "Bench"] if checkout == ROOT else ["campaign", "list"])
            for args in COMMANDS:
                timed(checkout, data_dir, args)
        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(options.runs):
            for args in COMMANDS:
                for label, checkout in checkouts.items():
                    results.setdefault((" ".join(args), label), []).append(timed(checkout, data_dir, args))
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    head = "| command | wall s (median) | CPU s (median) |"
    if options.baseline:
        head += " baseline wall s | baseline CPU s |"
    print(f"{options.runs} runs each, {os.cpu_count()} cores, Python {sys.version.split()[0]}\n")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for args in COMMANDS:
        name = " ".join(args)
        cells = []
        for label in checkouts:
            runs = results[(name, label)]
            cells += [f"{statistics.median(w for w, _ in runs):.2f}", f"{statistics.median(c for _, c in runs):.2f}"]
        print(f"| `lorekeeper {name}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
