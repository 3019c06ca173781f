"""docs/api.md §11: health and the OpenAPI schema."""

from __future__ import annotations

import re

import pytest
from django.test import Client


def test_healthz_ok(transactional_db) -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["postgres"] == "ok" and body["redis"] == "ok"  # the rest: tests/monitoring/test_health.py


def test_schema_describes_the_ingest_endpoints(transactional_db) -> None:
    response = Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    text = response.content.decode()
    assert "/api/v1/games/{game}/matches" in text and "/api/v1/games/{game}/matches/batch" in text
    assert "openapi: 3" in text or '"openapi": "3' in text


def test_docs_page_renders(transactional_db) -> None:
    response = Client().get("/api/docs/")
    assert response.status_code == 200 and b"swagger" in response.content.lower()


@pytest.mark.parametrize("page", ["/api/docs/", "/api/redoc/"])
def test_docs_pages_load_only_local_assets(transactional_db, page: str) -> None:
    """Swagger UI and ReDoc come from drf-spectacular-sidecar's static files, not a CDN: every
    script, stylesheet and icon the page names is on this server and is served."""
    client = Client()
    html = client.get(page).content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert assets, html
    assert not [a for a in assets if "//" in a], f"{page} loads from elsewhere: {assets}"
    for asset in assets:
        response = client.get(asset)
        assert response.status_code == 200, asset


def test_unknown_path_uses_the_error_body(transactional_db) -> None:
    response = Client().get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_admin_css_is_served_by_the_web_process(transactional_db) -> None:
    response = Client().get("/static/admin/css/base.css")
    assert response.status_code == 200
    assert b"body" in b"".join(response.streaming_content) if response.streaming else b"body" in response.content
