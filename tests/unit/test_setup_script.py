"""scripts/setup installs on a fresh machine and is quiet and quick when nothing changed: pip runs only when
pyproject.toml (or the extras asked for) differ from what the last complete install recorded."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Stands in for .venv/bin/python: logs each pip call, runs the script's one-liners with the real Python, and
# "installs" the package as pip would (the lorekeeper entry point), failing when told to.
FAKE_PYTHON = f"""#!/usr/bin/env bash
if [ "$1" = "-c" ]; then exec {sys.executable} "$@"; fi
echo "$*" >> "$(dirname "$0")/../pip.log"
case " $* " in *" -e "*)
  if [ -e "$(dirname "$0")/../fail" ]; then echo "pip: no network" >&2; exit 1; fi
  touch "$(dirname "$0")/lorekeeper" && chmod +x "$(dirname "$0")/lorekeeper";;
esac
exit 0
"""


def _checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup", repo / "scripts" / "setup")
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    bin_ = repo / ".venv" / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "python").write_text(FAKE_PYTHON)
    (bin_ / "python").chmod(0o755)
    tools = tmp_path / "tools"  # dpkg says every system package is there: no apt-get in a unit test
    tools.mkdir()
    (tools / "dpkg").write_text("#!/bin/sh\nexit 0\n")
    (tools / "dpkg").chmod(stat.S_IRWXU)
    return repo


def _setup(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{repo.parent / 'tools'}:{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", str(repo / "scripts" / "setup"), *args], env=env, capture_output=True, text=True, timeout=60
    )


def _pip_calls(repo: Path) -> list[str]:
    log = repo / ".venv" / "pip.log"
    return log.read_text().splitlines() if log.exists() else []


def test_first_run_installs_then_nothing_until_pyproject_changes(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    first = _setup(repo, "--dev")
    assert first.returncode == 0, first.stderr
    assert any(call.endswith("-e .[dev]") for call in _pip_calls(repo))

    calls = len(_pip_calls(repo))
    again = _setup(repo, "--dev")
    assert again.returncode == 0 and again.stdout == "" and again.stderr == ""  # quiet
    assert len(_pip_calls(repo)) == calls  # and no pip at all
    assert _setup(repo).returncode == 0 and len(_pip_calls(repo)) == calls  # a dev install covers a plain one

    with (repo / "pyproject.toml").open("a") as fh:
        fh.write("\n# a new dependency\n")
    assert _setup(repo, "--dev").returncode == 0
    assert len(_pip_calls(repo)) > calls


def test_a_plain_install_is_not_a_dev_one(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    assert _setup(repo).returncode == 0
    assert _pip_calls(repo)[-1].endswith("-e .")
    assert _setup(repo, "--dev").returncode == 0
    assert _pip_calls(repo)[-1].endswith("-e .[dev]")


def test_a_failed_install_is_tried_again(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    (repo / ".venv" / "fail").touch()
    failed = _setup(repo, "--dev")
    assert failed.returncode != 0 and "no network" in failed.stderr
    (repo / ".venv" / "fail").unlink()
    calls = len(_pip_calls(repo))
    assert _setup(repo, "--dev").returncode == 0
    assert len(_pip_calls(repo)) > calls
