"""Settings read from the environment and the config file."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.settings import load_settings


@pytest.fixture
def no_settings_in_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for variable in ("LOREKEEPER_DATA_DIR", "LOREKEEPER_CONFIG", "LOREKEEPER_GUILD_ID"):
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


def test_a_relative_data_dir_in_the_config_file_is_relative_to_the_file(
    tmp_path: Path, no_settings_in_env: pytest.MonkeyPatch
) -> None:
    """From another folder (systemd's WorkingDirectory, a shell elsewhere) it started a new, empty database."""
    (folder := tmp_path / "lk").mkdir()
    (config := folder / "lorekeeper.yaml").write_text("data_dir: data\n")
    (elsewhere := tmp_path / "elsewhere").mkdir()
    no_settings_in_env.chdir(elsewhere)
    assert load_settings(config).data_dir == folder / "data"
    assert load_settings(Path("../lk/lorekeeper.yaml")).data_dir == folder / "data"
    config.write_text(f"data_dir: {tmp_path / 'absolute'}\n")
    assert load_settings(config).data_dir == tmp_path / "absolute"
    # the environment's own is relative to where the command runs, as any path given in a shell is
    no_settings_in_env.setenv("LOREKEEPER_DATA_DIR", "here")
    assert load_settings(config).data_dir == elsewhere / "here"
