from django.urls import path

from anticheat import api

urlpatterns = [
    # match ids may hold any printable character, "/" included
    path("games/<str:game>/matches/<path:match_id>/void", api.MatchVoidApi.as_view(), name="matches-void"),
    path("games/<str:game>/matches/<path:match_id>/approve", api.MatchApproveApi.as_view(), name="matches-approve"),
]
