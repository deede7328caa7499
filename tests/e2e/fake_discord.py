"""A local fake Discord (gateway + REST) that the real, unpatched discord.py client connects to.

Only the slice of the API the bot uses is served; anything else answers 404 and is listed in
``FakeDiscord.unhandled``. Payload shapes follow what discord.py 2.7 reads (``state.py``, ``interactions.py``,
``webhook/async_.py``). Tests drive users through ``invoke``, ``autocomplete``, ``click`` and ``submit_modal``,
each returning an ``InteractionRecord`` of what the bot answered.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web

JSON = dict[str, Any]
DISCORD_EPOCH_MS = 1420070400000
EPHEMERAL, LOADING = 1 << 6, 1 << 7
ADMINISTRATOR, VIEW_CHANNEL, ALL_PERMISSIONS = 1 << 3, 1 << 10, (1 << 53) - 1
# what @everyone may do in a fresh guild: add reactions, view channel, send, embed links, attach files,
# read history, connect, speak, use application commands
DEFAULT_EVERYONE = sum(1 << bit for bit in (6, 10, 11, 14, 15, 16, 20, 21, 31))
CALLBACK_NAMES = {
    4: "message",
    5: "deferred message",
    6: "deferred update",
    7: "update message",
    8: "autocomplete result",
    9: "modal",
}


class _Snowflakes:
    def __init__(self) -> None:
        self._last = 0

    def __call__(self) -> int:
        self._last = max((int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22, self._last + 1)
        return self._last


def _id_of(value: Any) -> int:
    return int(getattr(value, "id", value))


@dataclass
class FakeRole:
    id: int
    name: str
    permissions: int = 0
    position: int = 0

    def to_payload(self) -> JSON:
        return {"id": str(self.id), "name": self.name, "permissions": str(self.permissions), "position": self.position}


@dataclass
class FakeChannel:
    id: int
    name: str
    type: int = 0  # 0 text, 2 voice
    private: bool = False  # @everyone may not view it
    viewers: list[FakeRole] = field(default_factory=list)  # roles allowed to view it all the same
    members: list[FakeMember] = field(default_factory=list)  # members added by name, allowed to view it

    def to_payload(self, guild_id: int) -> JSON:
        # @everyone's role id is the guild's; an overwrite of type 0 is a role's, of type 1 a member's
        hidden = {"id": str(guild_id), "type": 0, "allow": "0", "deny": str(VIEW_CHANNEL)}
        shown = [
            {"id": str(target.id), "type": int(isinstance(target, FakeMember)), "allow": str(VIEW_CHANNEL), "deny": "0"}
            for target in [*self.viewers, *self.members]
        ]
        data = {
            "id": str(self.id),
            "name": self.name,
            "type": self.type,
            "position": 0,
            "guild_id": str(guild_id),
            "permission_overwrites": ([hidden] if self.private else []) + shown,
        }
        return data | ({"bitrate": 64000, "user_limit": 0} if self.type == 2 else {})


@dataclass
class FakeMember:
    id: int
    name: str
    guild: FakeGuild
    roles: list[FakeRole] = field(default_factory=list)
    bot: bool = False

    @property
    def permissions(self) -> int:
        """Guild-level permissions as Discord computes them (owner and administrator get everything)."""
        value = self.guild.everyone.permissions
        for role in self.roles:
            value |= role.permissions
        return ALL_PERMISSIONS if value & ADMINISTRATOR or self.id == self.guild.owner_id else value

    def user_payload(self) -> JSON:
        return {
            "id": str(self.id),
            "username": self.name,
            "global_name": self.name,
            "discriminator": "0",
            "avatar": None,
            "bot": self.bot,
        }

    def to_payload(self, *, with_permissions: bool = False) -> JSON:
        data = {
            "user": self.user_payload(),
            "roles": [str(r.id) for r in self.roles],
            "flags": 0,
            "joined_at": "2024-01-01T00:00:00+00:00",
            "deaf": False,
            "mute": False,
        }
        return data | ({"permissions": str(self.permissions)} if with_permissions else {})


@dataclass
class FakeGuild:
    id: int
    name: str
    new_id: Callable[[], int]
    owner_id: int = 0
    roles: list[FakeRole] = field(default_factory=list)
    channels: list[FakeChannel] = field(default_factory=list)
    members: list[FakeMember] = field(default_factory=list)

    @property
    def everyone(self) -> FakeRole:
        return self.roles[0]

    @property
    def text_channel(self) -> FakeChannel:
        return next(c for c in self.channels if c.type == 0)

    def add_role(self, name: str, permissions: Any = 0) -> FakeRole:
        """``permissions``: an int or a ``discord.Permissions``."""
        role = FakeRole(self.new_id(), name, int(getattr(permissions, "value", permissions)), len(self.roles))
        self.roles.append(role)
        return role

    def add_channel(
        self,
        name: str,
        type: int = 0,
        *,
        private: bool = False,
        viewers: Iterable[FakeRole] = (),
        members: Iterable[FakeMember] = (),
    ) -> FakeChannel:
        channel = FakeChannel(self.new_id(), name, type, private, list(viewers), list(members))
        self.channels.append(channel)
        return channel

    def add_member(
        self, name: str, *, roles: Iterable[FakeRole] = (), bot: bool = False, member_id: int | None = None
    ) -> FakeMember:
        member = FakeMember(member_id or self.new_id(), name, self, list(roles), bot)
        self.members.append(member)
        return member

    def member(self, member_id: int) -> FakeMember:
        return next(m for m in self.members if m.id == member_id)

    def to_payload(self) -> JSON:
        return {
            "id": str(self.id),
            "name": self.name,
            "owner_id": str(self.owner_id),
            "unavailable": False,
            "large": False,
            "member_count": len(self.members),
            "preferred_locale": "en-US",
            "features": [],
            "roles": [r.to_payload() for r in self.roles],
            "channels": [c.to_payload(self.id) for c in self.channels],
            "members": [m.to_payload() for m in self.members],
        }


@dataclass
class Upload:
    """A file a user attaches to an ``attachment`` option; the fake CDN serves its bytes."""

    filename: str
    data: bytes
    content_type: str = "application/octet-stream"


@dataclass
class SentFile:
    """A file the bot uploaded (multipart ``files[n]``), captured with its bytes."""

    filename: str
    data: bytes
    content_type: str | None

    def text(self) -> str:
        return self.data.decode()


@dataclass
class InteractionRecord:
    """Everything the bot answered to one interaction; updated live while the bot keeps talking."""

    id: int
    token: str
    type: int  # 2 command, 3 component, 4 autocomplete, 5 modal submit
    payload: JSON  # the INTERACTION_CREATE data as sent
    source_message: JSON | None = None  # the message whose component was used
    timeout: float = 5.0  # how long wait_for waits before failing the test
    callback_type: int | None = None
    callback_data: JSON | None = None
    original: JSON | None = None  # current state of the message @original refers to
    followups: list[JSON] = field(default_factory=list)
    edits: list[JSON] = field(default_factory=list)  # request bodies of edits to @original
    files: list[SentFile] = field(default_factory=list)
    original_deleted: bool = False
    diagnostics: Callable[[], str] = field(default=lambda: "", repr=False)  # appended to a timeout's message
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition, repr=False)

    @property
    def answered(self) -> bool:
        return self.callback_type is not None

    @property
    def ephemeral(self) -> bool:
        message = self.original or (self.followups[0] if self.followups else {})
        return bool(message.get("flags", 0) & EPHEMERAL)

    @property
    def choices(self) -> list[JSON]:
        return list((self.callback_data or {}).get("choices", []))

    @property
    def modal(self) -> JSON | None:
        return self.callback_data if self.callback_type == 9 else None

    @property
    def messages(self) -> list[JSON]:
        """The original response (unless deleted) and the follow-ups that are separate messages."""
        first = [self.original] if self.original and not self.original_deleted else []
        return first + [m for m in self.followups if not first or m["id"] != first[0]["id"]]

    def texts(self) -> list[str]:
        """Every visible string the bot answered with: contents, embed titles, descriptions, fields."""
        out: list[str] = []
        for message in self.messages:
            out += [message["content"]] if message.get("content") else []
            for embed in message.get("embeds", []):
                out += [embed[k] for k in ("title", "description") if embed.get(k)]
                out += [f"{f['name']}: {f['value']}" for f in embed.get("fields", [])]
        return out

    def settled(self) -> bool:
        """Answered, and a deferral has been followed by a follow-up or an edit."""
        if self.callback_type in (5, 6):
            return bool(self.followups or self.edits)
        return self.answered

    async def wait_for(self, predicate: Callable[[InteractionRecord], bool]) -> None:
        """Wait until ``predicate(self)`` holds; a TimeoutError after ``self.timeout`` seconds."""
        try:
            async with asyncio.timeout(self.timeout), self._changed:
                await self._changed.wait_for(lambda: predicate(self))
        except TimeoutError:
            raise TimeoutError(
                f"interaction {self.id} (type {self.type}) not answered as expected within "
                f"{self.timeout}s: callback={self.callback_type} followups={len(self.followups)} "
                f"edits={len(self.edits)}\n{self.diagnostics()}"
            ) from None

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()


def _answered(record: InteractionRecord) -> bool:
    return record.answered


@dataclass
class _GatewaySession:
    ws: web.WebSocketResponse
    seq: int = 0
    ready: bool = False


class FakeDiscord:
    """The fake server. Add guilds before the client connects; drive interactions once it is ready."""

    def __init__(self, *, token: str = "fake-bot-token", bot_name: str = "Lorekeeper") -> None:
        self.new_id = _Snowflakes()
        self.token = token
        self.app_id = self.new_id()  # the bot user shares the application's id, as on Discord
        self.bot_user = {
            "id": str(self.app_id),
            "username": bot_name,
            "global_name": None,
            "discriminator": "0",
            "avatar": None,
            "bot": True,
        }
        self.owner_id = self.new_id()  # the application owner (discord.py's is_owner)
        self.guilds: dict[int, FakeGuild] = {}
        self.global_commands: list[JSON] = []
        self.guild_commands: dict[int, list[JSON]] = {}
        self.sync_calls: list[tuple[int | None, list[JSON]]] = []  # (guild id or None, commands as sent)
        self.messages: dict[int, JSON] = {}  # every message the bot created, by id, in its current state
        self.channel_messages: list[JSON] = []  # messages posted with POST /channels/{id}/messages
        self._channel_posted = asyncio.Condition()
        self.interactions: list[InteractionRecord] = []
        self.transcript: list[tuple[str, str]] = []  # (direction, summary)
        self.unhandled: list[str] = []
        self.rejected: list[str] = []  # bodies refused for breaking Discord's limits (answered 400, as Discord)
        self.client_errors: list[str] = []  # errors the client logged (the conftest fixture collects them)
        self.answer_timeout = 5.0  # seconds a test waits for the bot to answer an interaction
        self.member_lookups_forbidden = False  # GET .../members/{id} answers 403, as to a bot without access
        self.port = 0
        self._by_token: dict[str, InteractionRecord] = {}
        self._uploads: dict[int, Upload] = {}
        self._sessions: list[_GatewaySession] = []
        self._runner: web.AppRunner | None = None

    # ------------------------------------------------------------------ lifecycle and configuration
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        """The value for ``discord.http.Route.BASE``."""
        return f"{self.base_url}/api/v10"

    @property
    def gateway_url(self) -> str:
        """The value (as a ``yarl.URL``) for ``discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY``."""
        return f"ws://127.0.0.1:{self.port}/gateway"

    async def start(self) -> None:
        app = web.Application(middlewares=[self._check_token])
        app.router.add_get("/gateway", self._gateway)
        app.router.add_get("/cdn/attachments/{id}/{filename}", self._serve_upload)
        webhook_message = "/webhooks/{app}/{token}/messages/{message}"
        channel_message = "/channels/{channel}/messages/{message}"
        for method, path, handler in [
            ("GET", "/gateway", self._get_gateway),
            ("GET", "/gateway/bot", self._get_gateway),
            ("GET", "/users/@me", self._users_me),
            ("GET", "/oauth2/applications/@me", self._application),
            ("GET", "/applications/@me", self._application),
            ("GET", "/applications/{app}/commands", self._get_commands),
            ("PUT", "/applications/{app}/commands", self._put_commands),
            ("GET", "/applications/{app}/guilds/{guild}/commands", self._get_commands),
            ("PUT", "/applications/{app}/guilds/{guild}/commands", self._put_commands),
            ("POST", "/interactions/{id}/{token}/callback", self._callback),
            ("POST", "/webhooks/{app}/{token}", self._followup),
            ("GET", webhook_message, self._webhook_message),
            ("PATCH", webhook_message, self._webhook_message),
            ("DELETE", webhook_message, self._webhook_message),
            ("GET", "/guilds/{guild}/members/{member}", self._guild_member),
            ("POST", "/channels/{channel}/messages", self._channel_post),
            ("GET", channel_message, self._channel_message),
            ("PATCH", channel_message, self._channel_message),
            ("DELETE", channel_message, self._channel_message),
        ]:
            app.router.add_route(method, "/api/v10" + path, handler)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def close(self) -> None:
        for session in list(self._sessions):
            await session.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def add_guild(self, name: str, *, owner: str = "guild-owner") -> FakeGuild:
        """A guild with @everyone, #general, a voice channel "Session", its owner and the bot as members."""
        guild = FakeGuild(self.new_id(), name, self.new_id)
        guild.roles.append(FakeRole(guild.id, "@everyone", DEFAULT_EVERYONE))
        guild.add_channel("general")
        guild.add_channel("Session", type=2)
        guild.owner_id = guild.add_member(owner).id
        guild.add_member(self.bot_user["username"], bot=True, member_id=self.app_id)
        self.guilds[guild.id] = guild
        return guild

    def format_transcript(self, start: int = 0) -> str:
        return "\n".join(f"{direction:>9}  {summary}" for direction, summary in self.transcript[start:])

    def _diagnostics(self) -> str:
        errors = "\n".join(self.client_errors[-3:]) or "(none)"
        return f"transcript tail:\n{self.format_transcript(max(0, len(self.transcript) - 8))}\nclient errors:\n{errors}"

    def _log(self, direction: str, summary: str) -> None:
        self.transcript.append((direction, summary))

    # ------------------------------------------------------------------ gateway
    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        session = _GatewaySession(ws)
        self._sessions.append(session)
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": 41250}, "s": None, "t": None})
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    await self._on_gateway_message(session, json.loads(msg.data))
        finally:
            self._sessions.remove(session)
        return ws

    async def _on_gateway_message(self, session: _GatewaySession, msg: JSON) -> None:
        op, data = msg.get("op"), msg.get("d") or {}
        if op == 1:
            await session.ws.send_json({"op": 11, "d": None, "s": None, "t": None})
        elif op == 2:
            self._log("bot→gw", f"IDENTIFY intents={data.get('intents')}")
            if data.get("token") != self.token:
                await session.ws.close(code=4004, message=b"Authentication failed.")
                return
            await self._send_event(
                session,
                "READY",
                {
                    "v": 10,
                    "user": self.bot_user,
                    "session_id": f"fake-{self.new_id()}",
                    "resume_gateway_url": self.gateway_url,
                    "shard": [0, 1],
                    "private_channels": [],
                    "guilds": [{"id": str(g), "unavailable": True} for g in self.guilds],
                    "application": {"id": str(self.app_id), "flags": 0},
                },
            )
            for guild in self.guilds.values():
                await self._send_event(session, "GUILD_CREATE", guild.to_payload())
            session.ready = True
        elif op == 6:
            # sessions are not kept, so a RESUME is refused and discord.py identifies afresh
            self._log("bot→gw", "RESUME (refused: invalid session)")
            await session.ws.send_json({"op": 9, "d": False, "s": None, "t": None})
        elif op == 8 and (guild := self.guilds.get(int(data["guild_id"]))) is not None:
            await self._send_event(
                session,
                "GUILD_MEMBERS_CHUNK",
                {
                    "guild_id": str(guild.id),
                    "members": [m.to_payload() for m in guild.members],
                    "chunk_index": 0,
                    "chunk_count": 1,
                    "nonce": data.get("nonce"),
                },
            )
        else:
            self._log("bot→gw", f"op {op} (ignored)")

    async def _send_event(self, session: _GatewaySession, event: str, data: JSON) -> None:
        session.seq += 1
        await session.ws.send_json({"op": 0, "t": event, "s": session.seq, "d": data})
        if event != "INTERACTION_CREATE":  # those are logged with a readable summary by _interact
            self._log("gw→bot", event + (f" {data['name']!r}" if event == "GUILD_CREATE" else ""))

    async def dispatch(self, event: str, data: JSON) -> None:
        """Send a gateway event to every connected, identified client."""
        sessions = [s for s in self._sessions if s.ready]
        if not sessions:
            raise RuntimeError("no discord.py client is connected to the fake gateway")
        for session in sessions:
            await self._send_event(session, event, data)

    # ------------------------------------------------------------------ test API: users interacting
    async def invoke(
        self,
        command: str,
        options: Mapping[str, Any] | None = None,
        *,
        guild_id: int | FakeGuild | None = None,
        user_id: int | FakeMember | None = None,
        channel_id: int | None = None,
        settle: bool = True,
    ) -> InteractionRecord:
        """Run slash command ``command`` ("group sub" for subcommands) as ``user_id``; wait for the answer.

        Option types come from the schema the bot synced (guild first, then global), so the command must
        have been synced, as on Discord. Values: str/int/float/bool, ``FakeMember``, ``FakeRole``,
        ``FakeChannel`` or ``Upload``. With ``settle`` a deferral also waits for a follow-up or edit.
        Defaults: the first guild, its owner, its first text channel.
        """
        guild, member = self._who(guild_id, user_id)
        data = self._command_data(command, dict(options or {}), guild, focused=None)
        record = await self._interact(2, data, guild, member, channel_id, summary=f"/{command} {options or ''}")
        await record.wait_for(InteractionRecord.settled if settle else _answered)
        return record

    async def autocomplete(
        self,
        command: str,
        options: Mapping[str, Any],
        focused: str,
        *,
        guild_id: int | FakeGuild | None = None,
        user_id: int | FakeMember | None = None,
    ) -> list[JSON]:
        """The choices the bot offers for option ``focused``, whose value in ``options`` is what was typed."""
        guild, member = self._who(guild_id, user_id)
        data = self._command_data(command, dict(options), guild, focused=focused)
        summary = f"/{command} {dict(options)} focused={focused}"
        record = await self._interact(4, data, guild, member, None, summary=summary)
        await record.wait_for(_answered)
        if record.callback_type != 8:
            raise AssertionError(f"autocomplete answered with callback type {record.callback_type}")
        return record.choices

    async def click(
        self,
        message: JSON | int,
        custom_id: str,
        *,
        user_id: int | FakeMember | None = None,
        values: list[str] | None = None,
        settle: bool = True,
    ) -> InteractionRecord:
        """Press button ``custom_id`` (or pick ``values`` in that select) on a message the bot sent."""
        stored = self.messages[message if isinstance(message, int) else int(message["id"])]
        component = _find_component(stored.get("components", []), custom_id)
        if component is None:
            raise LookupError(f"no component {custom_id!r} on message {stored['id']}")
        data: JSON = {"custom_id": custom_id, "component_type": component["type"]}
        if values is not None:
            data["values"] = values
        guild, member = self._who(int(stored["guild_id"]), user_id)
        record = await self._interact(
            3,
            data,
            guild,
            member,
            int(stored["channel_id"]),
            message=stored,
            summary=f"click {custom_id!r} on message {stored['id']}",
        )
        await record.wait_for(InteractionRecord.settled if settle else _answered)
        return record

    async def submit_modal(
        self,
        custom_id: str,
        values: Mapping[str, str | list[str]],
        *,
        user_id: int | FakeMember | None = None,
        guild_id: int | FakeGuild | None = None,
        settle: bool = True,
    ) -> InteractionRecord:
        """Submit the modal ``custom_id`` the bot opened last, fields by custom_id (selects take lists).

        The submitter defaults to whoever opened the modal, in the guild it was opened in (``guild_id`` forges a
        submit from another guild); a message it was opened from is carried along.
        """
        opener = next((r for r in reversed(self.interactions) if r.modal and r.modal["custom_id"] == custom_id), None)
        if opener is None or opener.modal is None:
            raise LookupError(f"the bot never opened a modal {custom_id!r}")
        remaining = dict(values)
        components = [_fill_modal_component(c, remaining) for c in opener.modal["components"]]
        if remaining:
            raise LookupError(f"modal {custom_id!r} has no fields {sorted(remaining)}")
        payload = opener.payload
        guild, member = self._who(
            _id_of(guild_id) if guild_id is not None else int(payload["guild_id"]),
            user_id or int(payload["member"]["user"]["id"]),
        )
        message = self.messages.get(int(opener.source_message["id"])) if opener.source_message else None
        record = await self._interact(
            5,
            {"custom_id": custom_id, "components": components},
            guild,
            member,
            int(payload["channel_id"]),
            message=message,
            summary=f"submit modal {custom_id!r} {dict(values)}",
        )
        await record.wait_for(InteractionRecord.settled if settle else _answered)
        return record

    def _who(
        self,
        guild_id: int | FakeGuild | None,
        user_id: int | FakeMember | None,
    ) -> tuple[FakeGuild, FakeMember]:
        if not self.guilds:
            raise RuntimeError("add a guild first")
        guild = self.guilds[_id_of(guild_id)] if guild_id is not None else next(iter(self.guilds.values()))
        return guild, guild.member(_id_of(user_id) if user_id is not None else guild.owner_id)

    def _command_data(self, path: str, options: dict[str, Any], guild: FakeGuild, focused: str | None) -> JSON:
        names = path.split()
        in_guild = [c for c in self.guild_commands.get(guild.id, []) if c["name"] == names[0]]
        schema = (in_guild or [c for c in self.global_commands if c["name"] == names[0]] or [None])[0]
        if schema is None:
            raise LookupError(f"/{names[0]} was never synced (globally or to guild {guild.name!r})")
        data: JSON = {"id": schema["id"], "name": names[0], "type": 1}
        if in_guild:
            data["guild_id"] = str(guild.id)
        container, node = data, schema
        for name in names[1:]:
            node = next((o for o in node.get("options", []) if o["name"] == name and o["type"] in (1, 2)), None)
            if node is None:
                raise LookupError(f"/{path}: no subcommand {name!r}")
            container["options"] = [{"name": name, "type": node["type"]}]
            container = container["options"][0]
        declared = {o["name"]: o for o in node.get("options", []) if o["type"] not in (1, 2)}
        unknown = set(options) - set(declared)
        missing = {n for n, o in declared.items() if o.get("required") and n not in options}
        if unknown or (missing and focused is None):
            raise ValueError(f"/{path}: unknown options {sorted(unknown)}, missing {sorted(missing)}")
        resolved: dict[str, dict[str, JSON]] = {}
        container["options"] = [
            {"name": name, "type": declared[name]["type"], "value": self._option_value(value, guild, resolved)}
            | ({"focused": True} if name == focused else {})
            for name, value in options.items()
        ]
        if resolved:
            data["resolved"] = resolved
        return data

    def _option_value(self, value: Any, guild: FakeGuild, resolved: dict[str, dict[str, JSON]]) -> Any:
        if isinstance(value, Upload):
            (attachment,) = self._attachments([SentFile(value.filename, value.data, value.content_type)])
            resolved.setdefault("attachments", {})[attachment["id"]] = attachment | {"ephemeral": True}
            return attachment["id"]
        if isinstance(value, FakeMember):
            member = value.to_payload(with_permissions=True)
            resolved.setdefault("users", {})[str(value.id)] = member.pop("user")
            resolved.setdefault("members", {})[str(value.id)] = member
        elif isinstance(value, FakeRole):
            resolved.setdefault("roles", {})[str(value.id)] = value.to_payload()
        elif isinstance(value, FakeChannel):
            channel = value.to_payload(guild.id) | {"permissions": str(ALL_PERMISSIONS)}
            resolved.setdefault("channels", {})[str(value.id)] = channel
        else:
            return value
        return str(value.id)

    async def _interact(
        self,
        kind: int,
        data: JSON,
        guild: FakeGuild,
        member: FakeMember,
        channel_id: int | None,
        *,
        summary: str,
        message: JSON | None = None,
    ) -> InteractionRecord:
        channel = next((c for c in guild.channels if c.id == channel_id), guild.text_channel)
        interaction_id = self.new_id()
        payload: JSON = {
            "id": str(interaction_id),
            "application_id": str(self.app_id),
            "type": kind,
            "data": data,
            "token": f"token-{interaction_id}",
            "version": 1,
            "guild_id": str(guild.id),
            "guild": {"id": str(guild.id), "locale": "en-US", "features": []},
            "channel_id": str(channel.id),
            "channel": channel.to_payload(guild.id) | {"permissions": str(member.permissions)},
            # what server-side permission checks read: interaction.permissions and app_permissions
            "member": member.to_payload(with_permissions=True),
            "app_permissions": str(guild.member(self.app_id).permissions),
            "locale": "en-US",
            "guild_locale": "en-US",
            "entitlements": [],
            "context": 0,
            "attachment_size_limit": 10 * 1024 * 1024,
            "authorizing_integration_owners": {"0": str(guild.id)},
        }
        if message is not None:
            payload["message"] = message
        record = InteractionRecord(
            interaction_id, payload["token"], kind, payload, message, self.answer_timeout, diagnostics=self._diagnostics
        )
        self.interactions.append(record)
        self._by_token[record.token] = record
        self._log("user→bot", f"INTERACTION_CREATE type={kind} {summary} by {member.name!r} in {guild.name!r}")
        await self.dispatch("INTERACTION_CREATE", payload)
        return record

    # ------------------------------------------------------------------ REST
    @web.middleware
    async def _check_token(self, request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
        auth = request.headers.get("Authorization")
        if auth is not None and auth != f"Bot {self.token}":
            self._log("bot→rest", f"{request.method} {request.path}: 401, wrong token")
            return _json({"message": "401: Unauthorized", "code": 0}, status=401)
        return await handler(request)

    def _reject(self, request: web.Request, problem: str) -> web.Response:
        self.rejected.append(problem)
        self._log("bot→rest", f"{request.method} {request.path}: 400, {problem}")
        return _json({"message": "Invalid Form Body", "code": 50035, "errors": {"_errors": [problem]}}, status=400)

    async def _unknown(self, request: web.Request) -> web.Response:
        self.unhandled.append(f"{request.method} {request.path}")
        self._log("bot→rest", f"{request.method} {request.path}: 404, not served by the fake")
        return _json({"message": "404: Not Found (fake Discord)", "code": 0}, status=404)

    async def _get_gateway(self, request: web.Request) -> web.Response:
        limit = {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1}
        return _json({"url": self.gateway_url, "shards": 1, "session_start_limit": limit})

    async def _users_me(self, request: web.Request) -> web.Response:
        self._log("bot→rest", "GET /users/@me (login)")
        return _json(self.bot_user)

    async def _application(self, request: web.Request) -> web.Response:
        owner = {"id": str(self.owner_id), "username": "owner", "discriminator": "0", "avatar": None}
        return _json(
            {
                "id": str(self.app_id),
                "name": self.bot_user["username"],
                "description": "",
                "icon": None,
                "bot_public": False,
                "bot_require_code_grant": False,
                "owner": owner,
                "team": None,
                "verify_key": "0" * 64,
                "flags": 0,
                "interactions_endpoint_url": None,
            }
        )

    def _commands(self, request: web.Request) -> tuple[int | None, list[JSON]]:
        guild = request.match_info.get("guild")
        return (
            (None, self.global_commands)
            if guild is None
            else (int(guild), self.guild_commands.setdefault(int(guild), []))
        )

    async def _get_commands(self, request: web.Request) -> web.Response:
        return _json(self._commands(request)[1])

    async def _put_commands(self, request: web.Request) -> web.Response:
        guild_id, current = self._commands(request)
        sent: list[JSON] = await request.json()
        ids = {c["name"]: c["id"] for c in current}  # an overwrite keeps the ids of commands that stay
        current[:] = [
            {
                "type": 1,
                "options": [],
                "default_member_permissions": None,
                **command,
                "id": ids.get(command["name"]) or str(self.new_id()),
                "application_id": str(self.app_id),
                "version": str(self.new_id()),
            }
            | ({"guild_id": str(guild_id)} if guild_id else {})
            for command in sent
        ]
        self.sync_calls.append((guild_id, sent))
        where = f"guild {self.guilds[guild_id].name!r}" if guild_id in self.guilds else "global"
        self._log("bot→rest", f"PUT commands ({where}): {[c['name'] for c in sent]}")
        return _json(current)

    async def _callback(self, request: web.Request) -> web.Response:
        record = self._by_token.get(request.match_info["token"])
        if record is None or str(record.id) != request.match_info["id"]:
            return _json({"message": "Unknown interaction", "code": 10062}, status=404)
        if record.answered:
            return _json({"message": "Interaction has already been acknowledged.", "code": 40060}, status=400)
        body, files = await _read_body(request)
        kind, data = body["type"], body.get("data") or {}
        if problem := _limit_problem(data):
            return self._reject(request, problem)
        record.callback_type, record.callback_data = kind, data
        record.files += files
        if kind in (4, 5):
            flags = data.get("flags", 0) | (LOADING if kind == 5 else 0)
            record.original = self._store_message(data | {"flags": flags}, files, record.payload, webhook=True)
        elif kind == 6:
            record.original = record.source_message
        elif kind == 7 and record.source_message is not None:
            record.original = self._edit_message(self.messages[int(record.source_message["id"])], data, files)
        self._log("bot→user", f"callback: {_describe(kind, data, files)}")
        original = record.original or {}
        resource = {"type": kind} | ({"message": original} if kind in (4, 5, 7) and original else {})
        result = {
            "interaction": {
                "id": str(record.id),
                "type": record.type,
                "activity_instance_id": None,
                "response_message_id": original.get("id"),
                "response_message_loading": kind == 5,
                "response_message_ephemeral": bool(original.get("flags", 0) & EPHEMERAL),
            },
            "resource": resource,
        }
        await record._notify()
        return _json(result)

    def _webhook_record(self, request: web.Request) -> InteractionRecord | None:
        record = self._by_token.get(request.match_info["token"])
        return record if request.match_info["app"] == str(self.app_id) and record and record.answered else None

    async def _followup(self, request: web.Request) -> web.Response:
        record = self._webhook_record(request)
        if record is None:
            return _json({"message": "Unknown Webhook", "code": 10015}, status=404)
        body, files = await _read_body(request)
        if problem := _limit_problem(body):
            return self._reject(request, problem)
        record.files += files
        original = record.original
        if record.callback_type == 5 and original is not None and original["flags"] & LOADING:
            # as on Discord, the first follow-up after a "thinking" deferral replaces the loading message,
            # and the deferral decided whether it is ephemeral
            message = record.original = self._edit_message(
                original, body | {"flags": original["flags"] & ~LOADING}, files
            )
        else:
            message = self._store_message(body, files, record.payload, webhook=True)
        record.followups.append(message)
        self._log("bot→user", f"follow-up: {_describe(4, body, files)}")
        await record._notify()
        return _json(message)

    async def _webhook_message(self, request: web.Request) -> web.Response:
        record = self._webhook_record(request)
        key = request.match_info["message"]
        if record is None:
            return _json({"message": "Unknown Webhook", "code": 10015}, status=404)
        if key == "@original":
            message = None if record.original_deleted else record.original
        else:
            message = self.messages.get(int(key))
        if message is None:
            return _json({"message": "Unknown Message", "code": 10008}, status=404)
        if request.method == "GET":
            return _json(message)
        if request.method == "DELETE":
            self.messages.pop(int(message["id"]), None)
            record.original_deleted = record.original_deleted or key == "@original"
            self._log("bot→user", f"delete {key}")
            await record._notify()
            return web.Response(status=204)
        body, files = await _read_body(request)
        if problem := _limit_problem(body):
            return self._reject(request, problem)
        record.files += files
        edited = self._edit_message(message, body, files)
        if record.original and record.original["id"] == edited["id"]:
            record.original = edited
            record.edits.append(body)
        record.followups = [edited if m["id"] == edited["id"] else m for m in record.followups]
        self._log("bot→user", f"edit {key}: {_describe(4, body, files)}")
        await record._notify()
        return _json(edited)

    async def _guild_member(self, request: web.Request) -> web.Response:
        guild, member_id = self.guilds.get(int(request.match_info["guild"])), request.match_info["member"]
        member = next((m for m in guild.members if str(m.id) == member_id), None) if guild else None
        if self.member_lookups_forbidden:
            error, status = {"message": "Missing Access", "code": 50001}, 403
        elif guild is None:
            error, status = {"message": "Unknown Guild", "code": 10004}, 404
        elif member is None:
            error, status = {"message": "Unknown Member", "code": 10007}, 404
        else:
            self._log("bot→rest", f"GET member {member_id} ({member.name!r})")
            return _json(member.to_payload())
        self._log("bot→rest", f"GET member {member_id}: {status}, {error['message']}")
        return _json(error, status=status)

    async def _channel_post(self, request: web.Request) -> web.Response:
        channel_id = request.match_info["channel"]
        guild = next((g for g in self.guilds.values() if any(str(c.id) == channel_id for c in g.channels)), None)
        if guild is None:
            return _json({"message": "Unknown Channel", "code": 10003}, status=404)
        body, files = await _read_body(request)
        if problem := _limit_problem(body):
            return self._reject(request, problem)
        where = {"channel_id": channel_id, "guild_id": str(guild.id)}
        message = self._store_message(body, files, where, webhook=False)
        self.channel_messages.append(message)
        self._log("bot→chan", f"message in #{channel_id}: {_describe(4, body, files)}")
        async with self._channel_posted:
            self._channel_posted.notify_all()
        return _json(message)

    async def wait_for_channel_messages(self, count: int) -> list[JSON]:
        """Wait until the bot has posted ``count`` channel messages (not interaction replies); the caller bounds
        the wait (``asyncio.timeout``)."""
        async with self._channel_posted:
            await self._channel_posted.wait_for(lambda: len(self.channel_messages) >= count)
        return self.channel_messages

    async def _channel_message(self, request: web.Request) -> web.Response:
        message = self.messages.get(int(request.match_info["message"]))
        if message is None or message["channel_id"] != request.match_info["channel"]:
            return _json({"message": "Unknown Message", "code": 10008}, status=404)
        if request.method == "GET":
            return _json(message)
        if request.method == "DELETE":
            del self.messages[int(message["id"])]
            self._log("bot→chan", f"delete message {message['id']}")
            return web.Response(status=204)
        body, files = await _read_body(request)
        if problem := _limit_problem(body):
            return self._reject(request, problem)
        self._log("bot→chan", f"edit message {message['id']}: {_describe(4, body, files)}")
        return _json(self._edit_message(message, body, files))

    async def _serve_upload(self, request: web.Request) -> web.Response:
        upload = self._uploads.get(int(request.match_info["id"]))
        if upload is None or upload.filename != request.match_info["filename"]:
            return web.Response(status=404)
        return web.Response(body=upload.data, content_type=upload.content_type)

    # ------------------------------------------------------------------ messages
    def _attachments(self, files: list[SentFile]) -> list[JSON]:
        """Store files on the fake CDN and describe them as Discord attachments."""
        out = []
        for sent in files:
            attachment_id = self.new_id()
            self._uploads[attachment_id] = Upload(sent.filename, sent.data, sent.content_type or "")
            url = f"{self.base_url}/cdn/attachments/{attachment_id}/{sent.filename}"
            out.append(
                {
                    "id": str(attachment_id),
                    "filename": sent.filename,
                    "size": len(sent.data),
                    "url": url,
                    "proxy_url": url,
                    "content_type": sent.content_type,
                }
            )
        return out

    def _store_message(self, body: JSON, files: list[SentFile], where: JSON, *, webhook: bool) -> JSON:
        """A message by the bot in ``where``'s channel; an interaction's answer comes from its webhook."""
        interaction_type = where.get("type")
        message: JSON = {
            "id": str(self.new_id()),
            "channel_id": where["channel_id"],
            "guild_id": where["guild_id"],
            "author": self.bot_user,
            "content": body.get("content") or "",
            "timestamp": _now(),
            "edited_timestamp": None,
            "tts": False,
            "mentions": [],
            "mention_roles": [],
            "pinned": False,
            "attachments": self._attachments(files),
            "embeds": body.get("embeds") or [],
            "components": body.get("components") or [],
            "flags": body.get("flags", 0),
            "type": 20 if interaction_type == 2 else 0,
            "application_id": str(self.app_id),
        }
        if webhook:
            message["webhook_id"] = str(self.app_id)
        self.messages[int(message["id"])] = message
        return message

    def _edit_message(self, message: JSON, body: JSON, files: list[SentFile]) -> JSON:
        edited = dict(message)
        for key in ("content", "embeds", "components", "flags"):
            if key in body:
                edited[key] = body[key] if body[key] is not None else ("" if key == "content" else [])
        edited["flags"] = edited.get("flags", 0) & ~LOADING  # any edit ends the "thinking" state
        if "attachments" in body:
            kept = {str(a.get("id")) for a in body["attachments"] or []}
            edited["attachments"] = [a for a in message.get("attachments", []) if a["id"] in kept]
        edited["attachments"] = edited.get("attachments", []) + self._attachments(files)
        edited["edited_timestamp"] = _now()
        self.messages[int(edited["id"])] = edited
        return edited


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _json(data: Any, status: int = 200) -> web.Response:
    # discord.py decodes a body only when the content type is exactly "application/json" (no charset)
    return web.Response(body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"})


async def _read_body(request: web.Request) -> tuple[JSON, list[SentFile]]:
    """The JSON payload and the files of a request, plain JSON or multipart (``payload_json`` + ``files[n]``)."""
    if not request.content_type.startswith("multipart/"):
        text = await request.text()
        return (json.loads(text) if text else {}), []
    body: JSON = {}
    files: list[SentFile] = []
    async for part in await request.multipart():
        raw = bytes(await part.read())  # type: ignore[union-attr]
        if part.name == "payload_json":
            body = json.loads(raw)
        else:
            files.append(SentFile(part.filename or "", raw, part.headers.get("Content-Type")))
    return body, files


def _limit_problem(body: JSON) -> str | None:
    """The first of Discord's message, embed and choice limits that ``body`` breaks, if any."""
    embeds = body.get("embeds") or []
    checks = [
        (len(body.get("content") or ""), 2000, "content"),
        (len(embeds), 10, "embeds"),
        (len(body.get("components") or []), 5, "component rows"),
        (len(body.get("choices") or []), 25, "autocomplete choices"),
        (max((len(c["name"]) for c in body.get("choices") or []), default=0), 100, "choice name"),
    ]
    total = 0
    for embed in embeds:
        fields = embed.get("fields", [])
        texts = [embed.get("title", ""), embed.get("description", ""), embed.get("footer", {}).get("text", "")]
        texts += [embed.get("author", {}).get("name", "")] + [f["name"] + f["value"] for f in fields]
        total += sum(len(t) for t in texts)
        checks += [
            (len(embed.get("title", "")), 256, "embed title"),
            (len(embed.get("description", "")), 4096, "embed description"),
            (len(fields), 25, "embed fields"),
            (max((len(f["name"]) for f in fields), default=0), 256, "embed field name"),
            (max((len(f["value"]) for f in fields), default=0), 1024, "embed field value"),
        ]
    checks.append((total, 6000, "embed characters in total"))
    return next((f"{what}: {size} > {limit}" for size, limit, what in checks if size > limit), None)


def _find_component(components: list[JSON], custom_id: str) -> JSON | None:
    for component in components:
        if component.get("custom_id") == custom_id:
            return component
        children = component.get("components", []) + [
            component[k] for k in ("component", "accessory") if k in component
        ]
        if (found := _find_component(children, custom_id)) is not None:
            return found
    return None


def _fill_modal_component(component: JSON, values: dict[str, str | list[str]]) -> JSON:
    """Mirror the modal's layout (action rows or labels) with the submitted values, as Discord does."""
    if component["type"] == 1:
        return {"type": 1, "components": [_fill_modal_component(c, values) for c in component["components"]]}
    if component["type"] == 18:
        return {"type": 18, "component": _fill_modal_component(component["component"], values)}
    custom_id = component.get("custom_id")
    if custom_id is None:
        return {"type": component["type"]}
    value = values.pop(custom_id, None)
    if value is None and component.get("required", True) and component.get("min_values", 1) > 0:
        raise ValueError(f"modal field {custom_id!r} is required")
    if component["type"] == 4:
        return {"type": 4, "custom_id": custom_id, "value": value or ""}
    return {"type": component["type"], "custom_id": custom_id, "values": list(value or [])}


def _describe(kind: int, data: JSON, files: list[SentFile]) -> str:
    parts = [CALLBACK_NAMES.get(kind, f"type {kind}")]
    if data.get("flags", 0) & EPHEMERAL:
        parts.append("ephemeral")
    if data.get("content"):
        parts.append(repr(data["content"][:120]))
    parts += [f"embed {e.get('title') or e.get('description', '')[:60]!r}" for e in data.get("embeds") or []]
    if "choices" in data:
        parts.append(f"choices {[c['name'] for c in data['choices']]}")
    if kind == 9:
        parts.append(f"{data.get('title')!r} ({data.get('custom_id')})")
    elif custom_ids := [
        c["custom_id"] for row in data.get("components") or [] for c in row.get("components", []) if "custom_id" in c
    ]:
        parts.append(f"buttons {custom_ids}")
    parts += [f"file {f.filename} ({len(f.data)} B)" for f in files]
    return ", ".join(parts)
