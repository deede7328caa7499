"""The command reference of the docs site is what the commands say: a command or option added, renamed or
documented otherwise fails here until `python -m bot.reference` has rewritten docs/reference/."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import click
import pytest

from bot import reference


def test_the_reference_pages_are_up_to_date() -> None:
    # in a process of its own, as `lorekeeper --help` runs: click keeps state on its command objects (the help
    # option it first made), which other tests' calls to a single command would change here
    env = {**os.environ, "PYTHONPATH": str(reference.ROOT)}
    res = subprocess.run(
        [sys.executable, "-m", "bot.reference", "--check"],
        cwd=reference.ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr


def test_a_stale_page_is_found(tmp_path, monkeypatch) -> None:
    stale = tmp_path / "cli.md"
    stale.write_text(reference.CLI_PAGE.read_text(encoding="utf-8").replace("--campaign", "--campagne"))
    monkeypatch.setattr(reference, "CLI_PAGE", stale)
    monkeypatch.setattr(reference.sys, "argv", ["bot.reference", "--check"])
    with pytest.raises(SystemExit) as exited:
        reference.main()
    assert "out of date" in str(exited.value) and stale.read_text().count("--campagne") > 0  # and left alone


def test_every_cli_command_and_option_has_a_heading_and_its_help() -> None:
    from bot.cli import _register, cli

    _register()
    page = reference.cli_page()
    paths = [path for path, _ in reference.cli_commands(cli)]
    assert ("campaign", "load") in paths and ("ingest",) in paths and ("db", "migrate") in paths
    for path, command in reference.cli_commands(cli):
        heading = f"lorekeeper {' '.join(path)}"
        block = re.search(rf"^#+ {re.escape(heading)}\n\n```text\n(.*?)\n```$", page, re.M | re.S)
        assert block and block[1].startswith(f"Usage: {heading} "), f"{heading}: no heading or usage"
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.opts[-1] in block[1], f"{heading}: {param.opts} undocumented"


def test_every_slash_command_and_option_is_listed() -> None:
    page = reference.slash_page()
    for heading in ("/campaign load", "/entity link", "/session start", "/review", "/recall", "/lorekeeper setup"):
        assert re.search(rf"^### {re.escape(heading)}$", page, re.M), heading
    assert "| `file` (attachment) | yes |" in page  # an option's row: name, kind, required


def test_every_setting_is_in_the_configuration_page() -> None:
    from bot.settings import Settings

    page = (reference.ROOT / "docs" / "guide" / "configuration.md").read_text(encoding="utf-8")
    for name, field in Settings.model_fields.items():
        aliases = getattr(field.validation_alias, "choices", None) or [f"LOREKEEPER_{name.upper()}"]
        assert f"`{aliases[0]}`" in page, f"setting {name} ({aliases[0]}) is not in docs/guide/configuration.md"


def test_readme_is_short_starts_with_the_two_commands_and_has_no_lab_notes() -> None:
    readme = (reference.ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    assert readme.split("```bash\n", 1)[1].startswith("scripts/demo ") and "\nscripts/test " in readme[:400]
    user_docs = [reference.ROOT / "README.md", reference.ROOT / "bench" / "README.md"]
    user_docs += sorted((reference.ROOT / "docs").rglob("*.md"))
    for path in user_docs:
        # "session 17" dated the old figures; "Session 1 at 1:45" and "Session 1, 2026-12-05 at 1:56" (the demo's
        # output) are a title, "--sessions 100" an option
        found = re.search(
            r"(?<!--)\b[Ss]essions? \d+\b(?!(, \d{4}-\d\d-\d\d)? at \d)", path.read_text(encoding="utf-8")
        )
        assert found is None, f"{path.relative_to(reference.ROOT)}: change history ({found[0]!r})"


def test_the_readmes_campaign_file_is_a_valid_campaign_file(tmp_path) -> None:
    from campaigns.files import read_campaign_file

    readme = (reference.ROOT / "README.md").read_text(encoding="utf-8")
    example = tmp_path / "world.yaml"
    example.write_text(readme.split("```yaml\n", 1)[1].split("```", 1)[0], encoding="utf-8")
    parsed = read_campaign_file(example)
    assert parsed.campaign is not None and parsed.campaign.name == "The Sunken Crown"
    assert {e.name for e in parsed.entities} >= {"Eldrinax", "Ironhold", "Mira Tolvanek"}


def test_the_progress_bars_say_what_the_recap_waits_for_as_the_worker_does() -> None:
    """The page said the recap waits for the embedding and the extraction; it waits for the extraction only, and a
    DM saw "recapped 1 of 1" with the embedding at 40 %."""
    from memory.jobs.queue import CHUNK, EXTRACT
    from memory.jobs.worker import _SUMMARY_WAITS_FOR

    page = (reference.ROOT / "docs" / "guide" / "command-line.md").read_text(encoding="utf-8")
    [said] = re.findall(r"^- \*\*recapped\*\*: (.*?)(?=\n\S|\n\n)", page, re.M | re.S)
    assert EXTRACT in _SUMMARY_WAITS_FOR and CHUNK not in _SUMMARY_WAITS_FOR
    assert "waits for the extraction, not for the embedding" in " ".join(said.split()), said


def _user_pages() -> list:
    return [reference.ROOT / "README.md", *sorted((reference.ROOT / "docs").rglob("*.md"))]


def test_the_readme_and_the_index_show_the_same_recall_sample_with_todays_type_names() -> None:
    """The index's sample was older than the README's, and both said "Ironhold (place)": the product says location."""
    readme, index = ((reference.ROOT / f).read_text(encoding="utf-8") for f in ("README.md", "docs/index.md"))
    [sample] = {page.split("```text\n", 1)[1].split("```", 1)[0] for page in (readme, index)}
    assert "Ironhold (location)" in sample and "—blacksmith_of→" not in sample  # facts are said in words
    for path in _user_pages():
        text = path.read_text(encoding="utf-8")
        assert "type: place" not in text and "| place " not in text, f"{path.name}: the type is location"


def test_a_slash_command_in_the_docs_names_its_option() -> None:
    for path in _user_pages():
        if path.parent.name == "reference":  # generated: headings and option tables
            continue
        found = re.search(r"/recall (?!query:)\w", path.read_text(encoding="utf-8"))
        assert found is None, f"{path.name}: {found[0]!r} (Discord needs query:)"


def test_the_backup_command_archives_the_data_folder_a_dm_set(tmp_path) -> None:
    """It was `tar … -C /var/lib lorekeeper`: root's folder only, nothing of a DM running as themself."""
    page = (reference.ROOT / "docs" / "guide" / "backups.md").read_text(encoding="utf-8")
    [command] = re.findall(r"## The embedded database.*?```bash\n(.*?)```", page, re.S)
    data = tmp_path / "my data"
    (data / "pg").mkdir(parents=True)
    (data / "pg" / "PG_VERSION").write_text("16")
    env = {**os.environ, "LOREKEEPER_DATA_DIR": str(data)}
    subprocess.run(["bash", "-ec", command], cwd=tmp_path, env=env, check=True, timeout=60)
    listed = subprocess.run(["tar", "-tzf", "lorekeeper.tgz"], cwd=tmp_path, capture_output=True, text=True)
    assert "my data/pg/PG_VERSION" in listed.stdout.splitlines()


def test_the_command_line_page_names_every_command_help_lists() -> None:
    """`lorekeeper --help` listed mcp; the page's list of what it shows did not."""
    from bot.cli import ADMIN, COMMANDS

    page = (reference.ROOT / "docs" / "guide" / "command-line.md").read_text(encoding="utf-8")
    [everyday, admin] = re.findall(r"\(([a-z, ]+)\)", " ".join(page.split("\n\n", 2)[1].split()))[:2]
    assert everyday.split(", ") == [name for name in COMMANDS if name not in ADMIN]
    assert admin.split(", ") == list(ADMIN)


def test_the_recording_page_names_every_field_of_a_jsonl_line() -> None:
    """A .jsonl line's "session" (it picks the session) was in `ingest --help`, not in the page's table."""
    from bot.cli import ingest

    [fields] = re.findall(r"\.jsonl +(\{.*\})", ingest.ingest.help or "")
    page = (reference.ROOT / "docs" / "guide" / "recording.md").read_text(encoding="utf-8")
    [row] = re.findall(r"^\| `\.jsonl` \|.*$", page, re.M)
    for field in set(re.findall(r'"(\w+)"', fields)) - {"word", "confidence"}:
        assert f'"{field}"' in row or f"`{field}`" in row, field


def test_every_page_of_the_dms_guide_is_one_its_nav_lists() -> None:
    """A page the guide's nav does not list still shows in "Guide for DMs" (its glob): the developers' page did."""
    guide = reference.ROOT / "docs" / "guide"
    listed = re.findall(r"^  - (\S+\.md)$", (guide / ".nav.yml").read_text(encoding="utf-8"), re.M)
    assert sorted(listed) == sorted(p.name for p in guide.glob("*.md"))


def test_the_dms_guide_leaves_code_and_measured_figures_to_the_developers_pages() -> None:
    """The guide said "cosine 0.45", `memory/offgame.py`, a Python API and "reverted ≥ 96 %": a DM's page says what
    happens and what to do; the rules are in docs/rules.md, the figures in bench/README.md."""
    for path in sorted((reference.ROOT / "docs" / "guide").glob("*.md")):
        prose = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)  # sample output may say 61%
        for found in re.finditer(r"`memory[./]\w+|\bcosine\b|\bBM25\b|\d ?%|\babout \d+ tokens\b", prose):
            raise AssertionError(f"{path.name}: {found[0]!r}")


def test_commands_in_the_docs_run_as_written() -> None:
    """`python -m campaigns.build_examples` needs the venv's python (and wrote over the shipped file without --out);
    `/session start Test` needs `title:` in Discord."""
    for path in _user_pages():
        text = path.read_text(encoding="utf-8")
        for found in re.finditer(r"(?<![/\w])python -m campaigns\.\w+|/session start (?!title:)[A-Z]\w*", text):
            raise AssertionError(f"{path.name}: {found[0]!r}")
        for build in re.findall(r"python -m campaigns\.build_examples.*", text):
            assert "--out" in build, f"{path.name}: {build!r} writes over the shipped example"
