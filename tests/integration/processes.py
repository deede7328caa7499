"""Helpers for tests that run `lorekeeper` as a separate process, or give one long work to interrupt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "campaigns" / "examples"


def lorekeeper(*args: str, env: dict[str, str | None]) -> subprocess.Popen[str]:
    """The CLI of this checkout (cwd is first on its sys.path); ``env`` overrides the environment (None: unset).
    No config file is read."""
    merged = {k: v for k, v in os.environ.items() if k != "LOREKEEPER_CONFIG"}
    for key, value in env.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return subprocess.Popen(
        [sys.executable, "-c", "from bot.cli import main; main()", *args],
        env=merged,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def long_session(tmp_path: Path) -> Path:
    """Twelve variants of the sample session in one transcript: enough work that a worker is still busy when a
    test interrupts it."""
    lines = (EXAMPLES / "sunken_crown_session1.jsonl").read_text().splitlines()
    big = tmp_path / "long.jsonl"
    with big.open("w") as fh:
        for part in range(12):
            for n, line in enumerate(lines):
                obj = json.loads(line)
                obj.update(text=f"{obj['text']} (part {part})", start=obj["start"] + part * 400, ref=f"p{part}:{n}")
                fh.write(json.dumps(obj) + "\n")
    return big
