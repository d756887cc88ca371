from tests.api.conftest import anyio_backend, api  # noqa: F401 - the same real server, reused
