"""A new DM's first evening on the command line: `campaign info` takes `-c` as the other commands do, says "lines",
and a recall in a campaign without any line says so and how to add some."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

Lk = Callable[..., subprocess.CompletedProcess[str]]


def test_campaign_info_takes_c_as_other_commands_do(lk: Lk) -> None:
    assert lk("campaign", "create", "Vox Machina").returncode == 0
    assert lk("campaign", "create", "Mighty Nein").returncode == 0
    for args in (("-c", "mighty nein"), ("--campaign", "Mighty Nein"), ("Mighty Nein",)):
        info = lk("campaign", "info", *args)
        assert info.returncode == 0, (args, info.stderr)
        assert info.stdout.splitlines()[0] == "Mighty Nein", args
        assert "  lines:           0" in info.stdout.splitlines()  # what a DM calls them, not "utterances"
    both = lk("campaign", "info", "Vox Machina", "-c", "Mighty Nein")
    assert both.returncode == 1
    assert both.stderr == "error: two campaigns named: 'Vox Machina' and 'Mighty Nein'; give one\n"


def test_recall_in_a_campaign_without_lines_says_how_to_add_some(lk: Lk) -> None:
    assert lk("campaign", "create", "Saltmere").returncode == 0
    done = lk("recall", "what did Grog say about the axe")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "nothing found\n'Saltmere' has no lines yet: import a transcript with `lorekeeper ingest FILE`, "
        "or record a session with /session start\n"
    )
