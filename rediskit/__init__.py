"""The project's Redis toolkit, below every app that talks to Redis (boards/, anticheat/,
monitoring/): none of them reaches into another for it.

- client.py   the connection (django-redis' pool of the default cache), what "Redis is down"
              looks like (REDIS_DOWN), and the one-line log of it
- breaker.py  the circuit breaker in front of every connection (settings.CACHES sets it)
- scripts.py  the Lua scripts of lua/, loaded once per process
- keys.py     every Redis key the project uses

It imports no app of the project; scores/ never imports it (the durable core does not touch
Redis)."""
