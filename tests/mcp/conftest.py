from tests.api.conftest import api  # noqa: F401 - the same real server, reused
