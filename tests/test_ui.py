"""The inspector at /ui: end to end in headless Chromium (Debian's ``chromium`` driven by
Playwright) against a ``cranimem-mcp ui`` subprocess seeded over MCP, plus its auth and CSRF
checks over plain HTTP. What the page does is checked through the MCP ``cranimem://stats``
resource, read by a real MCP client with the bearer token.

Screenshots go to ``$UI_SCREENSHOTS_DIR`` (default: a temporary directory);
``UI_SCREENSHOTS_DIR=docs/img pytest tests/test_ui.py`` refreshes the README's images.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import anyio
import httpx
import httpx2
import pytest
from conftest import CLI, answering, free_port, server_env, stdio_params
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
TOKEN = "ui-test-token-" + "z" * 24
SCRIPT = "<script>alert('pwned')</script>"
SEED = {
    "alice": "My sister Alice Martin lives in Lyon and works at Acme Robotics.",
    "shellfish": "I am allergic to shellfish, so no seafood restaurants please.",
    "bob": "Bob Chen works at Acme Robotics on the Atlas project.",
    "seats": "I prefer window seats on long flights.",
    "atlas": "My project Atlas uses PostgreSQL and runs on Kubernetes.",
}
HOSTILE = f"The Atlas design doc by Carol Diaz contains {SCRIPT} and <b>bold</b> markup."
CHROMIUM = shutil.which("chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


async def _mcp(base: str, fn):  # type: ignore[no-untyped-def]
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        async with Client(streamable_http_client(base + "/mcp", http_client=http), cache=None) as c:
            return await fn(c)


async def scope_stats(base: str) -> dict:
    async def read(c):  # type: ignore[no-untyped-def]
        result = await c.read_resource("cranimem://stats")
        return json.loads(result.contents[0].text)

    data = await _mcp(base, read)
    return next(s for s in data["scopes"] if s["scope"] == "default")


async def _seed(base: str) -> dict[str, str]:
    async def seed(c):  # type: ignore[no-untyped-def]
        ids = {}
        for key, content in SEED.items():
            r = (await c.call_tool("remember", {"content": content})).structured_content
            assert r["status"] == "stored", r
            ids[key] = r["id"]
        r = await c.call_tool(
            "remember", {"content": HOSTILE, "goal": "Notes about the Atlas design doc"}
        )
        assert r.structured_content["status"] == "stored", r.structured_content
        ids["hostile"] = r.structured_content["id"]
        report = (await c.call_tool("consolidate", {})).structured_content
        assert report["promoted"] == len(ids), report
        return ids

    return await _mcp(base, seed)


@pytest.fixture(scope="module")
def inspector(tmp_path_factory):
    """``cranimem-mcp ui`` on a fresh data directory, seeded over MCP; yields its addresses."""
    home = tmp_path_factory.mktemp("ui") / "data"
    port = free_port()
    env = server_env(
        home,
        CRANIMEM_TOKEN=TOKEN,
        CRANIMEM_MODELS__EMBEDDER="local",
        CRANIMEM_MODELS__TAGGER="heuristic",
        CRANIMEM_MODELS__EXTRACTOR="heuristic",
        CRANIMEM_CONSOLIDATION__INTERVAL_SECONDS="0",
    )
    cmd = [*CLI, "ui", "--port", str(port), "--data-dir", str(home)]
    base = f"http://127.0.0.1:{port}"
    with answering(cmd, env=env, probe=base + "/ui") as served:
        printed = served.first_line()
        ids = anyio.run(_seed, base)
        yield SimpleNamespace(base=base, printed=printed, ids=ids)


# --- over plain HTTP -------------------------------------------------------------------------


def test_ui_command_prints_the_address_with_the_token(inspector):
    assert inspector.printed.strip().endswith(f"{inspector.base}/ui?token={TOKEN}")


def test_without_the_token_the_ui_answers_401(inspector):
    base = inspector.base
    for path in ("/ui", "/ui/", "/ui/memories", "/ui/graph", "/ui/api/stats", "/ui/static/ui.js"):
        assert httpx.get(base + path).status_code == 401, path
    assert httpx.get(base + "/ui?token=" + "y" * len(TOKEN)).status_code == 401
    forged = {"Cookie": "cranimem_ui=" + "0" * 64}
    assert httpx.get(base + "/ui", headers=forged).status_code == 401
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(base + "/ui", headers=bearer).status_code == 200
    rebinding = {**bearer, "Host": "evil.example"}  # DNS rebinding: a foreign name for us
    assert httpx.get(base + "/ui", headers=rebinding).status_code == 421


def test_token_in_the_url_becomes_a_strict_cookie_for_the_ui_only(inspector):
    base = inspector.base
    with httpx.Client(base_url=base) as http:
        first = http.get(f"/ui/memories?token={TOKEN}&tier=longterm")
        assert first.status_code == 303
        assert first.headers["location"] == "/ui/memories?tier=longterm"  # token dropped
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/ui" in cookie
        assert TOKEN not in cookie  # the cookie is not the bearer token
        assert http.get("/ui/memories?tier=longterm").status_code == 200  # cookie sent
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        # The cookie opens /ui only: /mcp stays bearer-only.
        value = cookie.split(";")[0]
        mcp = httpx.post(base + "/mcp", json=body, headers={"Cookie": value})
        assert mcp.status_code == 401


def test_changes_need_a_same_origin_json_post(inspector):
    base, mid = inspector.base, inspector.ids["shellfish"]
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    payload = {"ids": [mid], "scope": "default"}
    evil = httpx.post(base + "/ui/api/forget", json=payload,
                      headers={**bearer, "Origin": "http://evil.example"})  # fmt: skip
    assert evil.status_code == 403
    assert httpx.post(base + "/ui/api/forget", json=payload, headers=bearer).status_code == 403
    form = httpx.post(base + "/ui/api/forget", data={"ids": mid},
                      headers={**bearer, "Origin": base})  # fmt: skip
    assert form.status_code == 415
    assert httpx.get(base + "/ui/api/forget", headers=bearer).status_code == 405
    memories = httpx.get(base + "/ui/api/memories?tier=trash", headers=bearer).json()
    assert memories["memories"] == []  # nothing was forgotten


def test_stored_markup_is_escaped(inspector):
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    page = httpx.get(inspector.base + "/ui/memories", headers=bearer)
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in page.text
    assert SCRIPT not in page.text and "<b>bold" not in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]  # no inline script


# --- in Chromium -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def async_api():
    """Playwright's async API, or a skip (before any server starts) saying what is missing."""
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH (apt-get install -y chromium)")
    return pytest.importorskip(
        "playwright.async_api", reason="playwright not installed (pip install -e '.[ui-test]')"
    )


@pytest.fixture
async def browser(async_api, inspector, tmp_path):
    """A page in headless Chromium that accepts (and records) every dialog."""
    async with async_api.async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await chromium.new_page(viewport={"width": 1280, "height": 900})
        dialogs: list[str] = []

        async def on_dialog(dialog):  # type: ignore[no-untyped-def]
            dialogs.append(dialog.type)
            await dialog.accept()

        page.on("dialog", on_dialog)
        shots = Path(os.environ.get("UI_SCREENSHOTS_DIR") or tmp_path)
        shots.mkdir(parents=True, exist_ok=True)
        yield SimpleNamespace(page=page, expect=async_api.expect, dialogs=dialogs, shots=shots)
        await chromium.close()


async def test_inspector_end_to_end_in_chromium(browser, inspector):
    page, expect, shots = browser.page, browser.expect, browser.shots
    base, ids = inspector.base, inspector.ids
    before = await scope_stats(base)
    assert before["longterm"] == len(ids) and before["trash"] == 0

    # Overview: the token in the address becomes a cookie; the counts show.
    await page.goto(f"{base}/ui?token={TOKEN}")
    assert urlsplit(page.url).query == ""
    row = page.locator('tr[data-scope="default"]')
    await expect(row.locator('[data-stat="longterm"]')).to_have_text(str(before["longterm"]))
    await expect(row.locator('[data-stat="trash"]')).to_have_text("0")
    await expect(row.locator('[data-stat="facts"]')).to_have_text(str(before["facts"]))
    await expect(page.locator(".report tr.promote")).to_have_count(len(ids))
    await page.screenshot(path=shots / "ui-overview.png", full_page=True)

    # Memories: a search (the dual-path recall) finds Bob's memory; stored markup is text.
    await page.goto(f"{base}/ui/memories")
    await expect(page.get_by_text(HOSTILE)).to_be_visible()
    await page.get_by_label("Search").fill("Who works at Acme Robotics?")
    await page.get_by_role("button", name="Search").click()
    bob = page.locator(f'article.memory[data-id="{ids["bob"]}"]')
    await expect(bob.locator(".content")).to_have_text(SEED["bob"])
    await bob.locator("summary").click()
    await expect(bob.locator("dl")).to_contain_text("tagged by")
    await page.screenshot(path=shots / "ui-memories.png", full_page=True)

    # Forget in the page: the memory is in the trash, as the MCP stats resource sees it.
    await bob.get_by_role("button", name="Forget").click()
    await expect(page.locator("#status")).to_contain_text("forget: 1")
    after = await scope_stats(base)
    assert (after["trash"], after["longterm"]) == (1, before["longterm"] - 1)

    # Restore from the trash view brings it back.
    await page.goto(f"{base}/ui/memories?tier=trash")
    trashed = page.locator(f'article.memory[data-id="{ids["bob"]}"]')
    await trashed.get_by_role("button", name="Restore").click()
    await expect(page.locator("#status")).to_contain_text("restore: 1")
    restored = await scope_stats(base)
    assert (restored["trash"], restored["longterm"]) == (0, before["longterm"])

    # Purge erases for good: not in any tier afterwards.
    await page.goto(f"{base}/ui/memories")
    seats = page.locator(f'article.memory[data-id="{ids["seats"]}"]')
    await seats.get_by_role("button", name="Purge").click()
    await expect(page.locator("#status")).to_contain_text("purge: 1")
    await expect(seats).to_have_count(0)
    purged = await scope_stats(base)
    assert (purged["trash"], purged["longterm"]) == (0, before["longterm"] - 1)
    assert browser.dialogs == ["confirm"] * 3  # no alert() from stored text

    # Graph: it renders; clicking a node lists its facts with their source memories.
    await page.goto(f"{base}/ui/graph")
    await expect(page.locator("#graph")).to_have_attribute("data-state", "settled")
    assert await page.locator("#graph .node").count() >= 5
    assert await page.locator("#graph .edge").count() >= 4
    await page.locator("#graph .node", has_text="Acme Robotics").locator("circle").click()
    triple = page.locator(".triple", has_text="Bob Chen works at Acme Robotics")
    fact = page.locator("#facts li.fact", has=triple)
    await expect(fact).to_be_visible()
    await expect(fact.locator(".source")).to_contain_text(SEED["bob"])
    await expect(page.locator("#graph")).to_have_attribute("data-state", "settled")
    await page.screenshot(path=shots / "ui-graph.png")


# --- bridged to another owner ----------------------------------------------------------------


async def test_the_inspector_bridges_to_the_process_that_owns_the_directory(tmp_path):
    """With a `serve` owning the data directory (Claude Desktop's, say), `cranimem-mcp ui`
    starts anyway, shows the owner's memories and graph, and its changes reach the owner."""
    from cranimem_mcp.sharing.ownership import read_owner_info

    home = tmp_path / "data"
    env = server_env(
        home, CRANIMEM_TOKEN=TOKEN, CRANIMEM_MODELS__EMBEDDER="local",
        CRANIMEM_MODELS__TAGGER="heuristic", CRANIMEM_MODELS__EXTRACTOR="heuristic",
        CRANIMEM_GATING__TAU_NOISE="-1.0", CRANIMEM_GATING__DEFAULT_GATE="false",
        CRANIMEM_CONSOLIDATION__INTERVAL_SECONDS="0",
    )  # fmt: skip
    async with Client(stdio_params(home, env), cache=None) as owner:
        ids = {}
        for key in ("bob", "seats"):
            r = (await owner.call_tool("remember", {"content": SEED[key]})).structured_content
            ids[key] = r["id"]
        await owner.call_tool("consolidate", {})
        owner_pid = read_owner_info(home).pid

        port = free_port()
        base = f"http://127.0.0.1:{port}"
        cmd = [*CLI, "ui", "--port", str(port), "--data-dir", str(home)]
        # The inspector answers /ui once it has bridged to the owner (or it exits, failing).
        with answering(cmd, env=env, probe=base + "/ui") as served:
            bearer = {"Authorization": f"Bearer {TOKEN}"}
            async with httpx.AsyncClient(base_url=base, headers=bearer, timeout=60) as http:
                listed = (await http.get("/ui/api/memories")).json()
                assert {m["id"] for m in listed["memories"]} == set(ids.values())
                assert {m["tier"] for m in listed["memories"]} == {"longterm"}
                found = await http.get("/ui/api/memories", params={"q": "Who works at Acme?"})
                assert ids["bob"] in {m["id"] for m in found.json()["memories"]}
                page = await http.get("/ui/memories", params={"id": ids["seats"]})
                assert SEED["seats"] in page.text
                graph = (await http.get("/ui/api/graph")).json()
                assert "acme robotics" in {n["id"] for n in graph["nodes"]}
                entity = await http.get("/ui/api/entity", params={"name": "Acme Robotics"})
                sources = {s["id"] for f in entity.json()["facts"] for s in f["sources"]}
                assert ids["bob"] in sources
                payload = {"ids": [ids["seats"]], "scope": "default"}
                forgot = await http.post("/ui/api/forget", headers={"Origin": base}, json=payload)
                assert forgot.json()["forgotten"] == 1
            # The change went to the owner, which still owns the directory.
            trash = await owner.call_tool("list_memories", {"tier": "trash"})
            assert [m["id"] for m in trash.structured_content["items"]] == [ids["seats"]]
            assert read_owner_info(home).pid == owner_pid
        _out, err = served.stop()
        assert b"in use by another cranimem-mcp process" not in err
