"""An entity's names: aliases, what the recogniser writes for its name (heard as) and what it writes that is
never its name (not heard as), each checked free before it is written."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

import asyncpg

from memory.errors import AlreadyExistsError, InvalidInputError
from memory.graph.lookup import EntityLookup
from memory.graph.rules import removed_heard_as
from memory.graph.sql import (
    bare,
)
from memory.jobs.queue import enqueue_recorrection, enqueue_restoration


class Names(EntityLookup):
    """Aliases, heard-as and not-heard-as phrases of the campaign's entities."""

    async def _set_aliases(self, entity_id: int, aliases: Iterable[str]) -> None:
        await self.db.execute(
            "DELETE FROM entity_aliases WHERE campaign_id = $1 AND entity_id = $2", self.campaign_id, entity_id
        )
        rows = [(self.campaign_id, entity_id, a) for a in aliases]
        if rows:
            try:
                await self.db.executemany(
                    "INSERT INTO entity_aliases (campaign_id, entity_id, alias) VALUES ($1, $2, $3)", rows
                )
            except asyncpg.UniqueViolationError:
                raise AlreadyExistsError("an alias is already used by another entity") from None

    async def _check_names_free(self, names: Sequence[str], *, except_id: int | None = None) -> None:
        """A name or alias may name one entity only: no entity's name may be another's alias. Nor may it be what
        the recogniser is known to write for a name (a heard-as phrase), which is corrected away."""
        if not names:
            return
        await self.lock()  # two writers checking at once would both find a name free
        lowered = [n.casefold() for n in names]
        if len(set(lowered)) != len(lowered):
            raise InvalidInputError("an alias repeats the entity's name or another alias")
        # Two index probes (``entities_name``, ``entity_aliases_lookup``), as in ``find_entity``: a join from every
        # entity to its names scanned the whole campaign per entity written, so loading a file took quadratic time.
        # The campaign's heard-as phrases, a few, are read through, as the matcher compares them: spacing aside.
        row = await self.db.fetchrow(
            f"""
            WITH used AS (
                SELECT id AS entity_id, name AS used, false AS heard FROM entities
                WHERE campaign_id = $1 AND lower(name) = ANY($2::text[]) AND status <> 'rejected'
                UNION ALL
                SELECT entity_id, alias, false FROM entity_aliases
                WHERE campaign_id = $1 AND lower(alias) = ANY($2::text[])
                UNION ALL
                SELECT entity_id, phrase, true FROM entity_heard_as
                WHERE campaign_id = $1
                  AND {bare("phrase")} = ANY(ARRAY(SELECT {bare("n")} FROM unnest($2::text[]) n))
            )
            SELECT e.id, e.name, e.status, u.used, u.heard FROM used u JOIN entities e ON e.id = u.entity_id
            WHERE e.campaign_id = $1 AND e.status <> 'rejected'
              AND (e.id IS DISTINCT FROM $3 OR u.heard AND lower(u.used) = ANY($2::text[]))
            LIMIT 1
            """,
            self.campaign_id,
            [n.lower() for n in names],
            except_id,
        )
        if row is not None:
            # A name the bot heard waits for the DM's review: it is in no list yet, so say where it is.
            waiting = (
                f" (waiting for review as e{row['id']}: accept, edit or reject it first)"
                if row["status"] == "pending"
                else ""
            )
            # one still waiting for review is in no list: the message above says what to do instead
            about = {} if waiting else {"subject": "entity", "name": row["name"]}
            if row["heard"]:
                raise AlreadyExistsError(
                    f"{row['used']!r} is what the recogniser writes for {row['name']!r} (heard as): take it out of "
                    f"{row['name']}'s heard-as phrases first",
                    **about,
                )
            if row["used"].casefold() == row["name"].casefold():
                raise AlreadyExistsError(f"an entity named {row['name']!r} already exists{waiting}", **about)
            raise AlreadyExistsError(f"{row['used']!r} is already an alias of {row['name']!r}{waiting}", **about)

    async def _set_heard_as(self, entity_id: int, phrases: Sequence[str], *, had: Sequence[str] = ()) -> None:
        """Make ``phrases`` what the recogniser is known to write for the entity's name (``had``: what it was), and
        have the campaign's lines holding a new one corrected again, and those where one it lost was corrected to
        it restored (:func:`memory.jobs.enqueue_restoration`). A phrase that is a name or an alias, or another
        entity's heard-as phrase, is refused: said, it would be two things at once."""
        await self.db.execute(
            "DELETE FROM entity_heard_as WHERE campaign_id = $1 AND entity_id = $2", self.campaign_id, entity_id
        )
        if gone := removed_heard_as(had, phrases):
            await enqueue_restoration(self.db, self.campaign_id, entity_id, gone)
        if not phrases:
            return
        await self.lock()  # as for names: two writers checking at once would both find a phrase free
        await self._check_heard_as_free(entity_id, phrases)
        await self.db.executemany(
            "INSERT INTO entity_heard_as (campaign_id, entity_id, phrase) VALUES ($1, $2, $3)",
            [(self.campaign_id, entity_id, p) for p in phrases],
        )
        old = {h.casefold() for h in had}
        if new := [p for p in phrases if p.casefold() not in old]:
            await enqueue_recorrection(self.db, self.campaign_id, new)

    async def _check_heard_as_free(self, entity_id: int, phrases: Sequence[str]) -> None:
        """Refuse a heard-as phrase that is another entity's name, alias or heard-as phrase, spacing and punctuation
        aside, or the entity's own name or alias as written."""
        # Spacing and punctuation aside, as the matcher reads them: "iron hold" is another's name, Ironhold, which
        # wins there ("frump kin" of Frumpkin itself is only said again). A scan of the campaign's names (no index
        # holds them so): a heard-as edit is rare.
        row = await self.db.fetchrow(
            f"""
            WITH wanted AS (
                SELECT p AS phrase, lower(p) AS low, {bare("p")} AS bare FROM unnest($2::text[]) p
            ), used AS (
                SELECT w.phrase, e.id AS entity_id, e.name AS used, 'name' AS what FROM entities e
                JOIN wanted w ON {bare("e.name")} = w.bare AND (lower(e.name) = w.low OR e.id <> $3)
                WHERE e.campaign_id = $1 AND e.status <> 'rejected'
                UNION ALL
                SELECT w.phrase, a.entity_id, a.alias, 'alias' FROM entity_aliases a
                JOIN wanted w ON {bare("a.alias")} = w.bare AND (lower(a.alias) = w.low OR a.entity_id <> $3)
                WHERE a.campaign_id = $1
                UNION ALL
                SELECT w.phrase, h.entity_id, h.phrase, 'heard' FROM entity_heard_as h
                JOIN wanted w ON {bare("h.phrase")} = w.bare
                WHERE h.campaign_id = $1
            )
            SELECT u.phrase, e.name, u.used, u.what FROM used u JOIN entities e ON e.id = u.entity_id
            WHERE e.campaign_id = $1 AND e.status <> 'rejected'
            LIMIT 1
            """,
            self.campaign_id,
            list(phrases),
            entity_id,
        )
        if row is not None:
            what = {"name": "the name of", "alias": "an alias of", "heard": "already what the recogniser writes for"}[
                row["what"]
            ]
            if row["used"].casefold() == row["phrase"].casefold():
                raise AlreadyExistsError(f"heard as: {row['used']!r} is {what} {row['name']!r}")
            raise AlreadyExistsError(
                f"heard as: {row['phrase']!r} is read as {row['used']!r}, spacing and punctuation aside, which is "
                f"{what} {row['name']!r}"
            )

    async def _set_not_heard_as(
        self, entity_id: int, phrases: Sequence[str], *, had: Sequence[str] = (), restore: bool = True
    ) -> None:
        """Make ``phrases`` what the recogniser writes that is never the entity's name (``had``: what it was): stage
        1 and 2 no longer correct them to it, and the stored lines where a new one was corrected to it are restored
        by a background job. One that is its name, an alias or a heard-as phrase (spacing and punctuation aside) is
        refused: said, it would be the name and not the name."""
        await self.db.execute(
            "DELETE FROM entity_not_heard_as WHERE campaign_id = $1 AND entity_id = $2", self.campaign_id, entity_id
        )
        if not phrases:
            return
        await self.db.executemany(
            "INSERT INTO entity_not_heard_as (campaign_id, entity_id, phrase) VALUES ($1, $2, $3)",
            [(self.campaign_id, entity_id, p) for p in phrases],
        )
        await self._check_not_heard_as(entity_id)
        if restore and (new := removed_heard_as(phrases, had)):  # those ``had`` lacked
            await enqueue_restoration(self.db, self.campaign_id, entity_id, new, any_stage=True)

    async def not_heard_as_of(self, entity_ids: Collection[int]) -> dict[int, set[str]]:
        """What the recogniser writes that is never each entity's name, as the matcher reads it (spaces and
        punctuation dropped): for a writer checking, after it locked the lines, corrections it worked out earlier."""
        from memory.correction.text import spaceless

        if not entity_ids:
            return {}
        rows = await self.db.fetch(
            """
            SELECT entity_id, phrase FROM entity_not_heard_as
            WHERE campaign_id = $1 AND entity_id = ANY($2::bigint[])
            """,
            self.campaign_id,
            list(entity_ids),
        )
        never: dict[int, set[str]] = {}
        for r in rows:
            never.setdefault(r["entity_id"], set()).add(spaceless(r["phrase"]))
        return never

    async def _check_not_heard_as(self, entity_id: int) -> None:
        """Refuse the entity's not-heard-as phrases if one is its name, an alias or a heard-as phrase of it, as the
        matcher reads them (spacing and punctuation aside)."""
        row = await self.db.fetchrow(
            f"""
            WITH said AS (
                SELECT name AS used, 'the name of' AS what FROM entities WHERE campaign_id = $1 AND id = $2
                UNION ALL
                SELECT alias, 'an alias of' FROM entity_aliases WHERE campaign_id = $1 AND entity_id = $2
                UNION ALL
                SELECT phrase, 'what the recogniser writes for' FROM entity_heard_as
                WHERE campaign_id = $1 AND entity_id = $2
            )
            SELECT n.phrase, s.used, s.what, e.name FROM entity_not_heard_as n
            JOIN said s ON {bare("s.used")} = {bare("n.phrase")}
            JOIN entities e ON e.id = n.entity_id
            WHERE n.campaign_id = $1 AND n.entity_id = $2
            ORDER BY lower(n.phrase) LIMIT 1
            """,
            self.campaign_id,
            entity_id,
        )
        if row is not None:
            read = "" if row["used"].casefold() == row["phrase"].casefold() else f" (read as {row['used']!r})"
            raise InvalidInputError(
                f"not heard as: {row['phrase']!r}{read} is {row['what']} {row['name']!r}: it cannot also be what "
                "is never its name; take it out of one of them"
            )
