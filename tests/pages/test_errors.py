"""HTML routes answer 404 and 500 pages in the site's style; the API keeps docs/api.md §14's JSON
error body; /favicon.ico is an icon."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db(transaction=True)


def test_unknown_pages_are_an_html_404_and_unknown_api_paths_json(game) -> None:
    for path in ("/no/such/page/", "/games/nope/", "/games/chess/boards/nope/"):
        response = Client().get(path)
        assert response.status_code == 404, path
        assert response["Content-Type"].startswith("text/html")
        html = response.content.decode()
        assert 'id="error-page" data-status="404"' in html and 'href="/static/css/pages.css"' in html
    api = Client().get("/api/v1/no/such/thing")
    assert api.status_code == 404 and api.json() == {"error": {"code": "not_found", "message": "not found"}}
    assert Client().get("/api/v1/games/nope/boards/x/top").json()["error"]["code"] == "unknown_game"


def test_a_failing_page_is_an_html_500_and_a_failing_api_call_json(game, settings) -> None:
    settings.ROOT_URLCONF = "tests.pages.boom_urls"
    browser = Client(raise_request_exception=False)
    page = browser.get("/boom/")
    assert page.status_code == 500 and page["Content-Type"].startswith("text/html")
    html = page.content.decode()
    assert 'data-status="500"' in html and "Something went wrong on our side" in html and "Traceback" not in html
    api = browser.get("/api/v1/boom")
    assert api.status_code == 500
    assert api.json() == {"error": {"code": "internal_error", "message": "internal server error"}}


def test_the_favicon(game) -> None:
    response = Client().get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] == "image/x-icon"
    assert response.content[:4] == b"\x00\x00\x01\x00"  # an ICO file
    assert 'rel="icon" href="/static/favicon.svg"' in Client().get("/").content.decode()
    assert Client().get("/static/favicon.svg").status_code == 200
