from django.urls import path

from scores import api

urlpatterns = [
    path("games/<str:game>/matches", api.MatchSubmitApi.as_view(), name="matches-submit"),
    path("games/<str:game>/matches/batch", api.MatchBatchApi.as_view(), name="matches-batch"),
]
