"""Settings read from the environment and the config file."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli.common import database_of
from bot.settings import ConfigFileError, Settings, load_settings


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


def test_a_bad_value_is_named_as_the_dm_wrote_it(tmp_path: Path, no_settings_in_env: pytest.MonkeyPatch) -> None:
    """ "guild_id: Input should be a valid integer" did not say where to look: the variable or the file's key."""
    (config := tmp_path / "lorekeeper.yaml").write_text("guild_id: my server\ndiscord_token: 12345\n")
    with pytest.raises(ConfigFileError) as raised:
        load_settings(config)
    assert str(raised.value) == (
        f"{config}: discord_token: Input should be a valid string; "
        f"{config}: guild_id: Input should be a valid integer, unable to parse string as an integer"
    )
    no_settings_in_env.setenv("LOREKEEPER_GUILD_ID", "abc")  # the environment's value is the one used
    with pytest.raises(ConfigFileError, match="; LOREKEEPER_GUILD_ID: Input should be a valid integer, unable"):
        load_settings(config)
    assert "my server" not in str(raised.value) and "12345" not in str(raised.value)  # a value may be a secret


def test_the_database_a_service_names_at_start_has_no_password(tmp_path: Path) -> None:
    embedded = Settings(data_dir=tmp_path)
    assert database_of(embedded) == f"the embedded PostgreSQL in {tmp_path / 'pg'}"
    remote = Settings(data_dir=tmp_path, database_url="postgresql://lk:s3cret@db:5432/lorekeeper?sslmode=require")
    assert database_of(remote) == f"DATABASE_URL postgresql://lk@db:5432/lorekeeper (data dir {tmp_path})"


def test_a_config_file_that_is_not_yaml_is_one_line_that_quotes_none_of_it(
    tmp_path: Path, no_settings_in_env: pytest.MonkeyPatch
) -> None:
    """PyYAML's message is seven lines quoting the line it stopped at, with a caret under it: the token on it went
    to stderr (and a service's journal), and the CLI promises one line for an error."""
    (config := tmp_path / "lorekeeper.yaml").write_text('data_dir: data\ndiscord_token: "MTIz.secret\nguild_id: 1\n')
    with pytest.raises(ConfigFileError) as raised:
        load_settings(config)
    said = str(raised.value)
    assert "\n" not in said and "secret" not in said and "MTIz" not in said
    assert said == (
        f"{config}:4: not valid YAML: found unexpected end of stream (column 1), while scanning a quoted scalar "
        "started at line 2"
    )
    (config := tmp_path / "deep.yaml").write_text("[" * 5000)
    with pytest.raises(ConfigFileError, match=r"deep\.yaml: not valid YAML: nested too deeply"):
        load_settings(config)
    (config := tmp_path / "nul.yaml").write_text("discord_token: MTIz\x00secret\n")
    with pytest.raises(ConfigFileError) as raised:
        load_settings(config)
    assert str(raised.value).startswith(f"{config}: not valid YAML: unacceptable character #x0000")
    assert "secret" not in str(raised.value) and "\n" not in str(raised.value)


def test_a_database_port_past_65535_is_one_error_naming_database_url(
    tmp_path: Path, no_settings_in_env: pytest.MonkeyPatch
) -> None:
    """Port 70000 went to the socket layer, which wrapped it: "Connect call failed ('127.0.0.1', 4464)"."""
    no_settings_in_env.setenv("DATABASE_URL", "postgresql://u:s3cret@localhost:70000/db")
    with pytest.raises(ConfigFileError) as raised:
        load_settings()
    assert str(raised.value) == "DATABASE_URL: port 70000 is out of range (1-65535)"
    for url in ("postgresql://u@a:5432,b:99999/db", "postgresql://u@[::1]:65536/db", "postgresql:///db?port=70000"):
        no_settings_in_env.setenv("DATABASE_URL", url)
        with pytest.raises(ConfigFileError, match=r"^DATABASE_URL: port \d+ is out of range"):
            load_settings()
    for url in ("postgresql://u@a:5432,b:65535/db", "postgresql://u@[::1]/db", "postgresql:///db?host=/run/pg"):
        no_settings_in_env.setenv("DATABASE_URL", url)
        assert load_settings().database_url is not None
    (config := tmp_path / "lorekeeper.yaml").write_text("database_url: postgresql://u@localhost:123456/db\n")
    no_settings_in_env.delenv("DATABASE_URL")
    with pytest.raises(ConfigFileError, match=f"^{config}: database_url: port 123456 is out of range"):
        load_settings(config)
