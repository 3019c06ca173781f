"""GET .../histogram: the score distribution of a board window."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from boards import histogram
from boards.api.common import PUBLIC_READ_ERRORS, REGION_PARAM, WINDOW_PARAM, BoardWindowOutSerializer, board_window


class HistogramBucketSerializer(serializers.Serializer):
    min = serializers.IntegerField(help_text="lowest score in the bucket (inclusive)")
    max = serializers.IntegerField(help_text="highest score in the bucket (inclusive)")
    count = serializers.IntegerField(help_text="players whose score is in [min, max]")


class HistogramOutSerializer(BoardWindowOutSerializer):
    total = serializers.IntegerField()
    refreshed_at = serializers.DateTimeField(allow_null=True)
    buckets = HistogramBucketSerializer(many=True)
    degraded = serializers.BooleanField(required=False)


HISTOGRAM_MAX_AGE = 60


class HistogramApi(APIView):
    """Public. The score distribution, refreshed on a schedule (boards/histogram.py); a
    window not refreshed yet is computed once on the first read."""

    @extend_schema(
        operation_id="boards_histogram",
        summary="How many players stand in each score bucket (lowest value first); may be minutes old",
        parameters=[WINDOW_PARAM, REGION_PARAM],
        responses={200: HistogramOutSerializer, **PUBLIC_READ_ERRORS},
    )
    def get(self, request: Request, game: str, board: str) -> Response:
        cfg, _, window = board_window(game, board, request)
        found = histogram.histogram_read(cfg, window)
        body = HistogramOutSerializer(
            {
                "game": game,
                "board": board,
                "window": window,
                "total": found.total,
                "refreshed_at": found.refreshed_at,
                "buckets": found.buckets,
            }
        ).data
        if found.degraded:
            body["degraded"] = True
        response = Response(body)
        response["Cache-Control"] = f"public, max-age={1 if found.degraded else HISTOGRAM_MAX_AGE}"
        if found.degraded:
            response["X-Accel-Expires"] = "0"  # the edge cache keeps no degraded answer (scripts/web.py)
        return response
