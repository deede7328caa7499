"""`lorekeeper mcp`: one campaign's memory as an MCP server for an AI assistant or NPC agent.

stdio by default (the client starts the process); ``--http`` serves streamable HTTP on 127.0.0.1 only, every
request carrying the bearer token of ``LOREKEEPER_MCP_TOKEN``.
"""

from __future__ import annotations

import hmac
import logging
import os
from typing import Any

import click

from bot.cli import cli
from bot.cli.common import CliError, async_command, campaign_memory, campaign_option, open_memory, settings_from
from memory.jobs import make_job_context

log = logging.getLogger("lorekeeper")

TOKEN_ENV = "LOREKEEPER_MCP_TOKEN"
#: A token shorter than this is guessable over a local port in a day.
MIN_TOKEN_CHARS = 24


class BearerToken:
    """ASGI middleware: an HTTP request without ``Authorization: Bearer <token>`` gets 401 and reaches nothing."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": b"a bearer token is required\n"})
                return
        await self.app(scope, receive, send)


@cli.command("mcp")
@campaign_option
@click.option(
    "--as",
    "view",
    type=click.Choice(["player", "dm"]),
    default="player",
    show_default=True,
    help="player: secrets hidden and masked as for players in Discord; dm: everything, secrets marked.",
)
@click.option(
    "--allow-proposals", is_flag=True, help="Offer propose_entity and propose_fact: they become review items."
)
@click.option("--http", is_flag=True, help=f"Serve streamable HTTP on 127.0.0.1 (needs {TOKEN_ENV}).")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="Port for --http.")
@click.pass_context
@async_command
async def mcp(
    ctx: click.Context, campaign: str | None, view: str, allow_proposals: bool, http: bool, port: int
) -> None:
    """Serve the campaign's memory to an MCP client (Claude Desktop, an IDE, an NPC voice agent): search the
    sessions, entities and their facts, recaps, the live session's last minutes and an NPC's hot context."""
    from memory.mcp_tools import CampaignTools, build_server, tool_names

    token = os.environ.get(TOKEN_ENV, "")
    if http and len(token) < MIN_TOKEN_CHARS:
        raise CliError(
            f"--http needs a bearer token of at least {MIN_TOKEN_CHARS} characters in {TOKEN_ENV} "
            '(e.g. `export LOREKEEPER_MCP_TOKEN=$(python -c "import secrets; print(secrets.token_urlsafe(32))")`)'
        )
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, name = await campaign_memory(memory, settings, campaign)
        chosen = await memory.campaigns(settings.guild_id).get(name)
        tools = CampaignTools(
            mem, chosen, dm=view == "dm", embedder=lambda: make_job_context(memory, settings).embedder
        )
        server = build_server(tools, allow_proposals=allow_proposals)
        mode = "read-only" if not allow_proposals else "proposals allowed"
        # stderr: on stdio, stdout is the protocol's
        click.echo(
            f"lorekeeper mcp: campaign {name!r}, {view} view, {mode}; tools: {', '.join(tool_names(allow_proposals))}",
            err=True,
        )
        if not http:
            await server.run_stdio_async()
            return
        import uvicorn

        app = BearerToken(server.streamable_http_app(host="127.0.0.1"), token)
        click.echo(f"serving http://127.0.0.1:{port}/mcp", err=True)
        await uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")).serve()
