import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture
def lk(fresh_dsn: str, tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`lorekeeper ARGS` as a process of this checkout (PYTHONPATH: not whichever one is installed) on a fresh
    database, no config file; ``env`` adds variables for one run."""
    base = {**os.environ, "DATABASE_URL": fresh_dsn, "LOREKEEPER_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    base.pop("LOREKEEPER_CONFIG", None)

    def run(
        *args: str, input: str | None = None, timeout: float = 120, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from bot.cli import main; main()", *args],
            env={**base, **(env or {})},
            capture_output=True,
            text=True,
            input=input,
            timeout=timeout,
            cwd=tmp_path,
        )

    return run
