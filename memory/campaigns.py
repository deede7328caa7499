"""Campaigns of a guild: create, list, activate, delete (with everything in it).

Every other part of the memory is reached through a :class:`~memory.store.CampaignMemory`, which is bound to
one campaign id; this module is the only one that works across campaigns, and only within one guild.
"""

from __future__ import annotations

import builtins  # ``Campaigns.list`` shadows the builtin in the class's annotations
from typing import Any

import asyncpg

from memory.db import Executor, transaction
from memory.errors import AlreadyExistsError, InvalidInputError, MemoryError_, NotFoundError, did_you_mean, quoted
from memory.jobs.queue import delete_campaign_jobs
from memory.models import Campaign, ReviewKind
from memory.review import parse_ref
from memory.text import clean_name, name_query, session_title, shown_text, storable

#: The campaigns table's limit; also what a Discord autocomplete choice holds, so every name can be offered.
MAX_NAME = 100

#: A campaign ``c`` has an entity named, or also known as, ``$3`` (as ``KnowledgeGraph.find_entity`` finds one).
_HOLDS_ENTITY = """
    EXISTS (SELECT 1 FROM entities e WHERE e.campaign_id = c.id AND e.status <> 'rejected'
            AND (lower(e.name) = lower($3) OR EXISTS (SELECT 1 FROM entity_aliases a
                 WHERE a.campaign_id = c.id AND a.entity_id = e.id AND lower(a.alias) = lower($3))))
"""


def _text(field: str, value: str) -> str:
    """A campaign's description or system as given: storable, no control character that hides or reorders text."""
    try:
        return shown_text(storable(value), lines=field == "description")
    except ValueError as exc:
        raise InvalidInputError(f"{field} {exc}") from None


class Campaigns:
    def __init__(self, db: Executor, guild_id: int = 0) -> None:
        self.db = db
        self.guild_id = guild_id

    async def create(
        self, name: str, *, description: str = "", system: str = "", activate: bool | None = None
    ) -> Campaign:
        """A new campaign; the guild's first campaign becomes its active one unless ``activate`` says no.

        It starts with the settings of the guild's active campaign (the DM role, the review channel), so whoever
        is the DM there, and created it, is its DM too."""
        name = clean_name(name)
        if len(name) > MAX_NAME:
            raise InvalidInputError(
                f"a campaign name is at most {MAX_NAME} characters; {name[:40]}… has {len(name)}: choose a shorter one"
            )
        description, system = _text("description", description), _text("system", system)
        try:
            async with transaction(self.db) as conn:
                # Two creates at once (the guild's first campaigns) would both see no active campaign and both
                # take the active place; one waits for the other instead.
                await self._lock_guild(conn)
                row = await conn.fetchrow(
                    """
                    INSERT INTO campaigns (guild_id, name, description, system, active, settings)
                    VALUES ($1, $2, $3, $4,
                            coalesce($5, true) AND NOT EXISTS (SELECT 1 FROM campaigns WHERE guild_id = $1 AND active),
                            coalesce((SELECT settings FROM campaigns WHERE guild_id = $1 AND active), '{}'))
                    RETURNING *
                    """,
                    self.guild_id,
                    name,
                    description,
                    system,
                    activate,
                )
        except asyncpg.UniqueViolationError:
            raise AlreadyExistsError(
                f"a campaign named {quoted(name)} already exists", subject="campaign", name=name
            ) from None
        if activate:
            return await self.activate(name)
        return Campaign(**dict(row))

    async def _lock_guild(self, conn: asyncpg.Connection) -> None:
        """Until the transaction ends: creates and settings changes of this guild take turns."""
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('lorekeeper campaigns of guild ' || $1, 0))",
            str(self.guild_id),
        )

    async def set_settings(self, settings: dict[str, Any]) -> int:
        """``settings`` (who the DM is, the review channel) on every campaign of the guild: they are the server's,
        so switching campaigns keeps them. Returns how many campaigns there are."""
        async with transaction(self.db) as conn:
            await self._lock_guild(conn)  # a campaign created meanwhile copies the new settings, not the old
            done = await conn.execute("UPDATE campaigns SET settings = $2 WHERE guild_id = $1", self.guild_id, settings)
        return int(done.split()[-1])

    async def list(self) -> list[Campaign]:
        rows = await self.db.fetch("SELECT * FROM campaigns WHERE guild_id = $1 ORDER BY lower(name)", self.guild_id)
        return [Campaign(**dict(r)) for r in rows]

    async def elsewhere(self) -> tuple[int, int]:
        """How many campaigns, in how many other guilds, there are: a guild with none may be the wrong guild id
        (the CLI's ``LOREKEEPER_GUILD_ID``). Counts only, never names: guilds are kept apart."""
        row = await self.db.fetchrow(
            "SELECT count(*) AS campaigns, count(DISTINCT guild_id) AS guilds FROM campaigns WHERE guild_id <> $1",
            self.guild_id,
        )
        return row["campaigns"], row["guilds"]

    async def holding(self, subject: str, key: str, *, besides: int) -> builtins.list[str]:
        """The guild's other campaigns (not ``besides``) that hold what a not-found error was about: a review item
        (``key`` e12), an entity (its name or an alias) or a session (its title); any other subject: none. For the
        DM with the wrong campaign active: this guild's campaign names only, never what they hold."""
        arg: int | str  # the row id of a review item, else a name or title
        if subject == "review item":
            try:
                kind, arg = parse_ref(key)
            except MemoryError_:  # not an id any row has
                return []
            rows = "entities" if kind == ReviewKind.entity else "relationships"
            holds = f"EXISTS (SELECT 1 FROM {rows} x WHERE x.campaign_id = c.id AND x.id = $3)"
        elif subject == "entity":
            holds, arg = _HOLDS_ENTITY, name_query(key)
        elif subject == "session":
            holds = "EXISTS (SELECT 1 FROM sessions s WHERE s.campaign_id = c.id AND lower(s.title) = lower($3))"
            arg = session_title(key)
        else:
            return []
        found = await self.db.fetch(
            f"SELECT name FROM campaigns c WHERE guild_id = $1 AND id <> $2 AND {holds} ORDER BY lower(name)",
            self.guild_id,
            besides,
            arg,
        )
        return [r["name"] for r in found]

    async def get(self, name: str) -> Campaign:
        row = await self.db.fetchrow(
            "SELECT * FROM campaigns WHERE guild_id = $1 AND lower(name) = lower($2)", self.guild_id, name_query(name)
        )
        if row is None:
            hint = did_you_mean(name, [c.name for c in await self.list()])
            raise NotFoundError(f"no campaign named {quoted(name)}{hint}", subject="campaign")
        return Campaign(**dict(row))

    async def get_by_id(self, campaign_id: int) -> Campaign:
        # an id from a button's custom id, which anyone can forge: one past bigint is as missing as any other
        row = (
            await self.db.fetchrow(
                "SELECT * FROM campaigns WHERE guild_id = $1 AND id = $2", self.guild_id, campaign_id
            )
            if campaign_id < 2**63
            else None
        )
        if row is None:
            raise NotFoundError(f"no campaign with id {campaign_id}")
        return Campaign(**dict(row))

    async def active(self) -> Campaign | None:
        row = await self.db.fetchrow("SELECT * FROM campaigns WHERE guild_id = $1 AND active", self.guild_id)
        return Campaign(**dict(row)) if row else None

    async def activate(self, name: str) -> Campaign:
        target = await self.get(name)
        # The old one off, then the new one on: the unique "one active per guild" index is checked row by row,
        # so one statement doing both fails whenever it reaches the new row first. Two switches at once queue
        # on the guild's rows.
        async with transaction(self.db) as conn:
            await conn.execute("SELECT 1 FROM campaigns WHERE guild_id = $1 FOR UPDATE", self.guild_id)
            await conn.execute("UPDATE campaigns SET active = false WHERE guild_id = $1 AND active", self.guild_id)
            await conn.execute(
                "UPDATE campaigns SET active = true WHERE guild_id = $1 AND id = $2", self.guild_id, target.id
            )
        return target.model_copy(update={"active": True})

    async def update(self, name: str, **fields: Any) -> Campaign:
        allowed = {"description", "system", "settings"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot update {', '.join(sorted(unknown))}")
        for key in {"description", "system"} & set(fields):
            fields[key] = _text(key, fields[key])
        target = await self.get(name)
        sets = [f"{key} = ${i}" for i, key in enumerate(fields, start=3)]
        if not sets:
            return target
        row = await self.db.fetchrow(
            f"UPDATE campaigns SET {', '.join(sets)} WHERE guild_id = $1 AND id = $2 RETURNING *",
            self.guild_id,
            target.id,
            *fields.values(),
        )
        return Campaign(**dict(row))

    async def delete(self, name: str) -> Campaign | None:
        """Delete the campaign and everything in it (sessions, log, chunks, entities, facts, background jobs).

        When it was the active one, the newest campaign left becomes active, so the guild's commands keep
        working. Returns the active campaign now (None: the guild has none left)."""
        target = await self.get(name)
        async with transaction(self.db) as conn:
            # a switch or another delete at once waits, so the guild never ends with two or no active campaign
            await conn.execute("SELECT 1 FROM campaigns WHERE guild_id = $1 FOR UPDATE", self.guild_id)
            await delete_campaign_jobs(conn, target.id)
            await conn.execute("DELETE FROM campaigns WHERE guild_id = $1 AND id = $2", self.guild_id, target.id)
            await conn.execute(
                """
                UPDATE campaigns SET active = true
                WHERE id = (SELECT id FROM campaigns WHERE guild_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1)
                  AND NOT EXISTS (SELECT 1 FROM campaigns WHERE guild_id = $1 AND active)
                """,
                self.guild_id,
            )
        return await self.active()

    async def counts(self, campaign_id: int) -> dict[str, int]:
        await self.get_by_id(campaign_id)  # scoped to this guild
        row = await self.db.fetchrow(
            """
            SELECT (SELECT count(*) FROM sessions WHERE campaign_id = $1) AS sessions,
                   (SELECT count(*) FROM session_entries WHERE campaign_id = $1) AS entries,
                   (SELECT count(*) FROM chunks WHERE campaign_id = $1) AS chunks,
                   (SELECT count(*) FROM entities WHERE campaign_id = $1 AND status = 'accepted') AS entities,
                   (SELECT count(*) FROM relationships
                     WHERE campaign_id = $1 AND status = 'accepted' AND valid_to IS NULL) AS facts,
                   (SELECT count(*) FROM entities WHERE campaign_id = $1 AND status = 'pending')
                 + (SELECT count(*) FROM relationships WHERE campaign_id = $1 AND status = 'pending') AS pending,
                   -- an import waits whole, as one card of the review queue: its entities are not pending rows
                   (SELECT count(*) FROM import_batches WHERE campaign_id = $1 AND status = 'pending')
                     AS pending_imports
            """,
            campaign_id,
        )
        return dict(row)
