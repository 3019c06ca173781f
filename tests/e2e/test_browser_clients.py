"""Browser game clients in Chromium (docs/clients.md): a page served on another loopback origin
reads its player's rank with the player's token and follows the live board, through the web
tier `make run` starts (nginx, gunicorn, uvicorn); a page on an origin the game does not allow
can read the public top, but not the rank, and its websocket is refused.

The game's pages live on 127.0.0.2 and 127.0.0.3 (loopback addresses other than the service's
127.0.0.1, which ALLOWED_HOSTS names and the websocket check would accept by host alone)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from scores.models import Game, Player
from scores.selectors import config_cache_clear
from scores.services import player_token_issue
from scripts.services import spare_port
from tests.conftest import SignedClient
from tests.e2e.test_browser import _result, _submit, _wait, _wait_live

pytestmark = pytest.mark.slow

# The game's own page: no framework, what a studio's web client does with the token its server
# handed it. Everything it learns goes to window.seen for the test to read.
GAME_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>A web game</title></head><body>
<p id="rank">?</p>
<script>
const p = new URLSearchParams(location.hash.slice(1));
const base = p.get("base"), token = p.get("token"), player = p.get("player");
window.seen = {rank: null, rankError: null, top: null, topError: null, ws: "connecting", messages: []};
fetch(base + "/api/v1/games/chess/boards/rating/players/" + player, {headers: {Authorization: "Bearer " + token}})
  .then(r => r.json()).then(b => { window.seen.rank = b; document.getElementById("rank").textContent = b.rank; })
  .catch(e => { window.seen.rankError = String(e); });
fetch(base + "/api/v1/games/chess/boards/rating/top?limit=3")
  .then(r => r.json()).then(b => { window.seen.top = b; })
  .catch(e => { window.seen.topError = String(e); });
const ws = new WebSocket(base.replace("http", "ws") + "/ws/games/chess/boards/rating/?token=" + token);
ws.onopen = () => { window.seen.ws = "open"; };
ws.onclose = () => { if (window.seen.ws !== "open") window.seen.ws = "refused"; };
ws.onmessage = e => { window.seen.messages.push(JSON.parse(e.data)); };
</script></body></html>"""


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = GAME_PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _serve(host: str) -> Iterator[str]:
    httpd = ThreadingHTTPServer((host, spare_port()), _Page)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def game_site() -> Iterator[str]:
    yield from _serve("127.0.0.2")


@pytest.fixture
def other_site() -> Iterator[str]:
    yield from _serve("127.0.0.3")


def _seen(driver) -> dict:
    return driver.execute_script("return window.seen || {}")


def _open(driver, site: str, base: str, token: str) -> None:
    driver.get(f"{site}/#base={base}&player=p2&token={token}")


@pytest.fixture
def token(server: SignedClient, game_site: str) -> str:
    Game.objects.filter(slug="chess").update(allowed_origins=[game_site])
    config_cache_clear()
    _submit(server, "m1", [_result("p1", 500, "Ana"), _result("p2", 400, "Bo"), _result("p3", 300)])
    return player_token_issue(player=Player.objects.get(game__slug="chess", external_id="p2"))[0]


def test_a_page_on_the_games_origin_reads_the_rank_and_follows_it_live(
    web, browser, server: SignedClient, game_site: str, token: str
) -> None:
    _open(browser, game_site, web.url, token)
    _wait(browser, lambda d: _seen(d).get("rank") is not None, "the rank was never read")
    seen = _seen(browser)
    assert seen["rank"]["player"] == "p2" and seen["rank"]["rank"] == 2 and seen["rankError"] is None
    _wait(browser, lambda d: _seen(d).get("ws") == "open", "the websocket did not open")
    _wait(
        browser,
        lambda d: {"type": "rank", "rank": 2, "score": 400} in _seen(d)["messages"],
        f"no first rank message: {_seen(browser)}",
    )

    _submit(server, "m2", [_result("p2", 600)])  # p2 passes p1
    _wait_live(
        browser,
        lambda d: {"type": "rank", "rank": 1, "score": 600} in _seen(d)["messages"],
        f"no live rank update: {_seen(browser)}",
    )
    assert browser.find_element("id", "rank").text == "2"  # what the page read before the update


def test_a_page_on_another_origin_reads_the_public_top_but_not_the_rank(
    web, browser, other_site: str, token: str
) -> None:
    _open(browser, other_site, web.url, token)
    _wait(browser, lambda d: _seen(d).get("top") is not None, f"the public top was not read: {_seen(browser)}")
    assert [e["player"] for e in _seen(browser)["top"]["entries"]] == ["p1", "p2", "p3"]
    _wait(browser, lambda d: _seen(d).get("rankError") is not None, f"the rank read did not fail: {_seen(browser)}")
    _wait(browser, lambda d: _seen(d).get("ws") == "refused", f"the websocket was not refused: {_seen(browser)}")
    seen = _seen(browser)
    assert seen["rank"] is None and seen["messages"] == []
    assert "Failed to fetch" in seen["rankError"], json.dumps(seen)
