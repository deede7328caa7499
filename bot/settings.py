"""Settings: environment variables (``LOREKEEPER_*`` plus the usual ``DATABASE_URL``, ``DISCORD_TOKEN``,
``OPENAI_API_KEY``, ``OPENAI_BASE_URL``) over an optional YAML config file, validated by pydantic."""

from __future__ import annotations

import logging
import os
import re
from difflib import get_close_matches
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, SettingsError

from memory.db import EmbeddingSpec, default_data_dir
from memory.models import DEFAULT_ACCEPT_THRESHOLD

if TYPE_CHECKING:
    import yaml

log = logging.getLogger(__name__)

#: LOREKEEPER_ variables that are not settings: the config file's path and the benches' data folder.
_NOT_SETTINGS = frozenset({"LOREKEEPER_CONFIG", "LOREKEEPER_DATA"})

EMBEDDING_DIMS = {
    "all-MiniLM-L6-v2": 384,
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "nomic-embed-text": 768,
}


class ConfigFileError(ValueError):
    pass


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="LOREKEEPER_", extra="forbid", populate_by_name=True, env_ignore_empty=True
    )

    data_dir: Path = Field(
        default_factory=default_data_dir, description="where the embedded PostgreSQL and the spool live"
    )
    database_url: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("DATABASE_URL", "LOREKEEPER_DATABASE_URL", "database_url")
    )
    discord_token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("DISCORD_TOKEN", "LOREKEEPER_DISCORD_TOKEN", "discord_token")
    )
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "LOREKEEPER_OPENAI_API_KEY", "openai_api_key")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "LOREKEEPER_OPENAI_BASE_URL", "openai_base_url")
    )

    # Discord ids (snowflakes) are 64-bit; the database keeps them as bigint.
    guild_id: int = Field(
        default=0, ge=0, lt=2**63, description="guild whose campaigns the CLI works on (0: local campaigns)"
    )
    dev_guild_id: int | None = Field(
        default=None, ge=0, lt=2**63, description="sync slash commands to this guild at start"
    )
    owner_ids: list[int] = Field(default_factory=list)

    llm_model: str | None = Field(default=None, description="chat model for correction, extraction, recaps")
    llm_timeout: float = Field(default=60.0, gt=0, description="seconds one LLM request may take (tried 3 times)")
    stt_model: str = Field(
        default="auto",
        description="offline Whisper model for voice: base, tiny.en, a model directory, or auto (base, else tiny.en)",
    )
    embedding_provider: Literal["minilm", "openai"] = "minilm"
    embedding_model: str = "all-MiniLM-L6-v2"
    embedding_dim: int | None = Field(default=None, gt=0)
    accept_threshold: float = Field(default=DEFAULT_ACCEPT_THRESHOLD, ge=0.0, le=1.0)

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, v: Path) -> Path:
        return v.expanduser().resolve()

    @field_validator("database_url")
    @classmethod
    def _ports_in_range(cls, v: SecretStr | None) -> SecretStr | None:
        # the socket layer wraps a port past 65535 (70000 is 4464): a connection refused on a port never written
        if v is not None and (port := _port_out_of_range(v.get_secret_value())) is not None:
            raise ValueError(f"port {port} is out of range (1-65535)")
        return v

    @property
    def embedding(self) -> EmbeddingSpec:
        dim = self.embedding_dim or EMBEDDING_DIMS.get(self.embedding_model)
        if dim is None:
            raise ConfigFileError(
                f"unknown dimension for embedding model {self.embedding_model!r}: set LOREKEEPER_EMBEDDING_DIM"
            )
        return EmbeddingSpec(self.embedding_model, dim)

    @property
    def llm_enabled(self) -> bool:
        return bool(self.llm_model and (self.openai_api_key or self.openai_base_url))

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Explicit values (the config file is passed in as init values) lose to the environment.
        return env_settings, init_settings


def _port_out_of_range(url: str) -> str | None:
    """The first port of ``url`` (each host of a multi-host URL, or a ``port=`` parameter) that is no TCP port."""
    parts = urlsplit(url)
    hosts = parts.netloc.rpartition("@")[2].split(",")
    ports = [host.rpartition("]")[2].rpartition(":")[2] for host in hosts if ":" in host.rpartition("]")[2]]
    ports += [p for given in parse_qs(parts.query).get("port", []) for p in given.split(",")]
    return next((p for p in ports if p.strip().isdigit() and not 0 < int(p) <= 65535), None)


def _yaml_problem(path: Path, exc: yaml.MarkedYAMLError) -> str:
    """One line naming where the file stops being YAML. PyYAML's own message quotes that line (a token on it
    too) under a caret, over seven lines."""
    mark = exc.problem_mark or exc.context_mark
    at = f"{path}:{mark.line + 1}" if mark is not None else str(path)
    said = f"{exc.problem or exc.context or 'not YAML'}" + (f" (column {mark.column + 1})" if mark is not None else "")
    if exc.problem and exc.context and exc.context_mark is not None:
        said += f", {exc.context} started at line {exc.context_mark.line + 1}"
    return f"{at}: not valid YAML: {said}"


def load_settings(config_file: str | Path | None = None, **overrides: Any) -> Settings:
    """Settings from the environment over ``config_file`` (YAML mapping of the field names)."""
    values: dict[str, Any] = {}
    path: Path | None = None
    if config_file:
        path = Path(config_file)
        import yaml  # only with a config file: most runs have none, and every command reads the settings

        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigFileError(f"cannot read config file {path}: {exc.strerror}") from None
        except yaml.MarkedYAMLError as exc:
            raise ConfigFileError(_yaml_problem(path, exc)) from None
        except yaml.YAMLError as exc:  # a character YAML refuses: its first line names it, not the text
            raise ConfigFileError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
        except RecursionError:
            raise ConfigFileError(f"{path}: not valid YAML: nested too deeply") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigFileError(f"{path}: expected a mapping of settings at the top level")
        for key in loaded or {}:
            if key not in Settings.model_fields:  # a typo must not leave its setting at the default unnoticed
                close = get_close_matches(str(key), list(Settings.model_fields), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ConfigFileError(
                    f"{path}: unknown setting {key!r}{hint}: the keys are the environment variables in lower case, "
                    "without LOREKEEPER_"
                )
        values.update(loaded or {})
        if isinstance(values.get("data_dir"), str):
            # relative to the file, not to wherever the command runs: elsewhere it would start a new, empty database
            values["data_dir"] = path.absolute().parent / Path(values["data_dir"]).expanduser()
    try:
        settings = Settings(**values)
    except ValidationError as exc:
        raise ConfigFileError(_problems(exc, path)) from None
    except SettingsError as exc:  # a variable not even of its type's shape: pydantic-settings names the field only
        field = re.search(r'field "(\w+)"', str(exc))
        where = _variable(field[1]) if field else None
        raise ConfigFileError(f"{where or exc}: cannot be read (a list is written as JSON: '[1, 2]')") from None
    _warn_of_unknown_variables()
    # Command-line flags beat both the environment and the file.
    return settings.model_copy(update={k: v for k, v in overrides.items() if v is not None})


def _variable(field: str) -> str | None:
    """The environment variable that set ``field``, if one did (the environment beats the config file)."""
    alias = Settings.model_fields[field].validation_alias if field in Settings.model_fields else None
    names = [str(n) for n in alias.choices if str(n).isupper()] if isinstance(alias, AliasChoices) else []
    names = names or [f"LOREKEEPER_{field.upper()}"]
    given = {name.upper() for name, value in os.environ.items() if value}
    return next((name for name in names if name in given), None)


def _problems(exc: ValidationError, config_file: Path | None) -> str:
    """What is wrong, each named as the DM wrote it: the variable, else the config file's key; never the value,
    which may be a secret."""
    problems = []
    for error in exc.errors():
        loc = error.get("loc", ())
        where = ".".join(str(p) for p in loc)
        if loc and (variable := _variable(str(loc[0]))):
            where = variable + "".join(f".{p}" for p in loc[1:])
        elif config_file is not None:
            where = f"{config_file}: {where}"
        problems.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
    return "; ".join(problems)


def _warn_of_unknown_variables() -> None:
    """A mistyped variable (LOREKEEPER_ACCEPT_TRESHOLD) would leave its setting at the default unnoticed."""
    names = [f"LOREKEEPER_{field.upper()}" for field in Settings.model_fields]
    for variable in sorted(os.environ):
        if variable.startswith("LOREKEEPER_") and variable not in names and variable not in _NOT_SETTINGS:
            close = get_close_matches(variable, names, n=1)
            log.warning(
                "%s is not a setting%s: it is ignored", variable, f" (did you mean {close[0]}?)" if close else ""
            )
