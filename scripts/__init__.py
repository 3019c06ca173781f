"""Developer-environment helpers (`make run`, `make test`); not part of the service itself."""
