"""The server over real transports: stdio in a subprocess, streamable HTTP with a token."""

from __future__ import annotations

import subprocess

import httpx
import httpx2
import pytest
from conftest import TOKEN, free_port, serve_cmd, server_env, stdio_params
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from cranimem_mcp.config import HTTP_KEEP_ALIVE_SECONDS, load_settings
from cranimem_mcp.errors import ConfigError
from cranimem_mcp.server.auth import resolve_token

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_stdio_server_in_a_subprocess(tmp_path):
    params = stdio_params(tmp_path / "data")
    async with Client(params, cache=None) as client:
        stored = await client.call_tool(
            "remember", {"content": "I am allergic to shellfish, so no seafood please."}
        )
        assert stored.structured_content["status"] == "stored", stored
        recalled = await client.call_tool("recall", {"query": "What must I avoid eating?"})
        assert "shellfish" in recalled.structured_content["context"]
    # A second session (a new process) sees what the first one stored.
    async with Client(params, cache=None) as client:
        recalled = await client.call_tool("recall", {"query": "What must I avoid eating?"})
        assert recalled.structured_content["items"][0]["id"] == stored.structured_content["id"]


@pytest.mark.slow
async def test_http_requires_the_bearer_token(http_server):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx.AsyncClient() as http:

        async def denied(headers: dict[str, str]) -> tuple[str, str, str]:
            response = await http.post(http_server, json=body, headers=headers)
            assert response.status_code == 401
            data = response.json()
            assert TOKEN not in response.text
            return data["error"], data["error_description"], response.headers["www-authenticate"]

        code, why, challenge = await denied({})
        assert code == "missing_token" and why.startswith("missing bearer token")
        assert "Authorization: Bearer <token>" in why and "CRANIMEM_TOKEN" in why
        assert challenge == 'Bearer realm="cranimem"'  # RFC 6750: no error code without one
        for malformed in ("Basic " + TOKEN, "Bearer", TOKEN, f"Bearer {TOKEN} x"):
            code, why, challenge = await denied({"Authorization": malformed})
            assert code == "invalid_request", malformed
            assert why == "malformed Authorization header: expected 'Bearer <token>'"
            assert 'error="invalid_request"' in challenge
        code, why, challenge = await denied({"Authorization": "Bearer " + "y" * len(TOKEN)})
        assert code == "invalid_token" and why.startswith("invalid bearer token")
        assert 'error="invalid_token"' in challenge
        rebinding = {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example:80",
                     "Content-Type": "application/json", "Accept": "application/json"}  # fmt: skip
        response = await http.post(http_server, json=body, headers=rebinding)
        assert response.status_code in (400, 403, 421)


@pytest.mark.slow
async def test_http_with_the_token_serves_the_tools(http_server):
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(http_server, http_client=http), cache=None) as c:
            stored = await c.call_tool("remember", {"content": "I prefer window seats."})
            assert stored.structured_content["status"] == "stored"
            recalled = await c.call_tool("recall", {"query": "seat preference"})
            assert recalled.structured_content["items"][0]["content"] == "I prefer window seats."


def test_the_server_keeps_an_idle_connection_longer_than_the_sdk_client_pool_does():
    """The client must drop an idle keep-alive connection before the server closes it: else
    a request sent on it as the server closes it gets no answer, and the SDK's client ends
    the whole session ("Connection closed"; tests/replicas.py met it under load)."""
    assert HTTP_KEEP_ALIVE_SECONDS > 2 * httpx2.Limits().keepalive_expiry  # httpx2: 5 s


@pytest.mark.slow
def test_non_loopback_bind_needs_allow_remote(tmp_path):
    proc = subprocess.run(
        serve_cmd(tmp_path / "d", "--host", "0.0.0.0", transport="http", port=free_port()),
        env=server_env(tmp_path / "d", CRANIMEM_TOKEN=TOKEN),
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert b"--allow-remote" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_short_token_stops_the_server_at_start_with_one_line(tmp_path, transport):
    proc = subprocess.run(
        serve_cmd(tmp_path / "d", transport=transport, port=free_port()),
        env=server_env(tmp_path / "d", CRANIMEM_TOKEN="x" * 15),
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode() == (
        "error: invalid configuration: CRANIMEM_TOKEN must be at least 16 characters long "
        "(it has 15); unset it to have one generated\n"
    )
    assert not (tmp_path / "d").exists()  # stopped before touching anything


def test_a_short_generated_token_file_is_refused(tmp_path):
    settings = load_settings(home=tmp_path / "home")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "http-token").write_text("short\n")
    with pytest.raises(ConfigError, match="at least 16 characters long \\(it has 5\\)"):
        resolve_token(settings)


def test_generated_token_is_kept_in_a_private_file(tmp_path):
    settings = load_settings(home=tmp_path / "home")
    token, path = resolve_token(settings)
    assert len(token) >= 32 and path is not None
    assert path.stat().st_mode & 0o777 == 0o600
    assert resolve_token(settings) == (token, path)  # stable across restarts
