"""Submitting results (docs/api.md §4): one match, or a batch of up to 1000.

One implementation per endpoint (docs/architecture.md, "One implementation per hot endpoint"): a
POST is answered by the view's `post`, which `dispatch` calls with Django's own request. It
checks the signature (scores.auth), reads the body (leaderboard_project.plain), parses it
(scores/api/match_body.py), stores it (scores.ingest) and writes the answer with orjson. DRF
serves only the OpenAPI schema (the decorated `post`s and scores/api/match_schema.py) and the
other methods (OPTIONS, 405)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import extend_schema

from leaderboard_project.errors import ApiError, ErrorBodySerializer, error_body
from leaderboard_project.plain import PlainApiView, accepts_json, json_body, json_response
from scores import ingest
from scores.api.common import SUBMIT_ERRORS, ServerApiView
from scores.api.match_body import BodyInvalid, batch_parse, match_parse
from scores.api.match_schema import BatchInSerializer, BatchOutSerializer, MatchInSerializer, MatchOutSerializer
from scores.auth import ServerKeyAuthentication, server_key_signed
from scores.models import ServerKey

ALLOW = "POST, OPTIONS"  # what DRF's APIView answers in Allow for these views
_AUTHENTICATE = ServerKeyAuthentication().authenticate_header(None)  # type: ignore[arg-type]


class _SubmitApi(ServerApiView, PlainApiView):
    """A POST goes to `post` with Django's request (leaderboard_project.plain.PlainApiView)."""

    plain_methods = ("POST",)
    allow = ALLOW
    authenticate = _AUTHENTICATE

    def post(self, request: HttpRequest, game: str) -> HttpResponse:
        raise NotImplementedError  # each endpoint's own, decorated for the schema

    def signed_key(self, request: HttpRequest) -> ServerKey:
        """The request's server key, allowed to submit to the URL's game; 406 first for an
        Accept header that refuses JSON, as DRF negotiates before it authenticates."""
        accepts_json(request)
        return server_key_signed(request, game=self.kwargs["game"], scope="submit")


class MatchSubmitApi(_SubmitApi):
    @extend_schema(
        operation_id="matches_submit",
        summary="Submit one match's results (idempotent by match_id)",
        request=MatchInSerializer,
        responses={201: MatchOutSerializer, 200: MatchOutSerializer, 409: ErrorBodySerializer, **SUBMIT_ERRORS},
    )
    def post(self, request: HttpRequest, game: str) -> HttpResponse:
        key = self.signed_key(request)
        match = match_parse(json_body(request))
        outcome = ingest.match_submit_gathered(game=self.game(), server_key=key, match=match)
        body = _item(outcome.match_id, outcome.status, outcome.duplicate, None, outcome.missed_windows)
        return json_response(body, 200 if outcome.duplicate else 201, allow=ALLOW)


class MatchBatchApi(_SubmitApi):
    @extend_schema(
        operation_id="matches_submit_batch",
        summary="Submit up to 1000 matches; each stands alone",
        description=(
            "One result per match, in request order. Each match stands alone: an invalid one is `rejected` with "
            "its error and the others are stored; a match sent before is answered as it was stored "
            "(`duplicate: true`). A body that is not a list of 1-1000 matches is a 400 and stores nothing."
        ),
        request=BatchInSerializer,
        responses={200: BatchOutSerializer, **SUBMIT_ERRORS},
    )
    def post(self, request: HttpRequest, game: str) -> HttpResponse:
        key = self.signed_key(request)
        raw_matches = batch_parse(json_body(request))
        game_obj = self.game()
        items: list[dict[str, Any] | None] = []
        valid: list[ingest.MatchIn] = []
        for raw in raw_matches:
            try:
                match = match_parse(raw)
            except BodyInvalid as exc:
                match_id = raw.get("match_id") if type(raw) is dict else None
                items.append(_item(match_id if type(match_id) is str else None, "rejected", error=exc))
                continue
            items.append(None)
            valid.append(match)
        outcomes = iter(ingest.matches_submit(game=game_obj, server_key=key, matches=valid))
        results = []
        for item in items:
            if item is None:
                o = next(outcomes)
                item = _item(o.match_id, o.status, o.duplicate, o.error, o.missed_windows)
            results.append(item)
        return json_response({"results": results}, allow=ALLOW)  # BatchOutSerializer's shape


def _item(
    match_id: str | None,
    status_: str,
    duplicate: bool = False,
    error: ApiError | None = None,
    missed_windows: list[str] | None = None,
) -> dict[str, Any]:
    """One match's answer: the keys, in the order, MatchOutSerializer documents."""
    item: dict[str, Any] = {"match_id": match_id, "status": status_, "duplicate": duplicate}
    if error is not None:
        item["error"] = error_body(error.code, error.message)["error"]
    if missed_windows:
        item["missed_windows"] = missed_windows
    return item
