"""`kind: http` adapters: the adapter, its configuration, the mapping of arguments to requests,
outcomes, the OpenAPI importer."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.adapters.http.adapter import HttpAdapter
    from gateway.adapters.http.config import HttpAdapterConfig, HttpToolConfig, url_problem
    from gateway.adapters.http.http11 import Answer, Http11Pool, Lost, Unsent
    from gateway.adapters.http.httpx_pool import HttpxPool
    from gateway.adapters.http.openapi_import import (
        GUESSED_RETENTION,
        KEY_RETENTION,
        ImportResult,
        OpenApiError,
        import_openapi,
    )
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "GUESSED_RETENTION",
    "KEY_RETENTION",
    "Answer",
    "Http11Pool",
    "HttpAdapter",
    "HttpAdapterConfig",
    "HttpToolConfig",
    "HttpxPool",
    "ImportResult",
    "Lost",
    "OpenApiError",
    "Unsent",
    "import_openapi",
    "url_problem",
]
