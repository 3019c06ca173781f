"""Benchmarks of the leaderboard service. See bench/README.md."""
