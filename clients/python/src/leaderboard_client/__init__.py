"""leaderboard-client: a game server's client of the leaderboard service.

    from leaderboard_client import Client, Match, Result

    lb = Client("https://leaderboard.example.com", "chess", key_id=KEY_ID, secret=SECRET)
    lb.submit(Match.new([Result("p42", "rating", 1450)]))

See README.md beside this package."""

from leaderboard_client import errors as _errors
from leaderboard_client._core import NO_RETRIES, RetryPolicy
from leaderboard_client.aio import AsyncClient
from leaderboard_client.batcher import Batcher, BatcherClosed
from leaderboard_client.client import Client, PlayerTokens
from leaderboard_client.errors import *  # noqa: F403 - every error class is public
from leaderboard_client.live import live_url, subscribe
from leaderboard_client.signing import sign, signed_headers
from leaderboard_client.types import (
    Bucket,
    Entry,
    Event,
    EventsPage,
    FriendEntry,
    Friends,
    FrozenEntry,
    Histogram,
    LiveMessage,
    Match,
    PassedMessage,
    PlayerToken,
    RankMessage,
    Result,
    Standing,
    Standings,
    Submitted,
    Top,
    TopMessage,
)

__version__ = "0.1.0"

__all__ = [
    *_errors.__all__,
    "NO_RETRIES", "AsyncClient", "Batcher", "BatcherClosed", "Bucket", "Client", "Entry", "Event", "EventsPage",
    "FriendEntry", "Friends",
    "FrozenEntry", "Histogram", "LiveMessage", "Match", "PassedMessage", "PlayerToken", "PlayerTokens",
    "RankMessage", "Result", "RetryPolicy", "Standing", "Standings", "Submitted", "Top", "TopMessage", "live_url",
    "sign", "signed_headers", "subscribe",
]  # fmt: skip
