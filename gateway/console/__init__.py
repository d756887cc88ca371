"""The operator console: server-rendered pages under /console, signed in with an API key or,
when `console_sign_in.oidc` is configured, through an OpenID Connect provider (docs/oidc.md).

`/` redirects to the runs. Pages (gateway/console/pages.py) reuse the API's authentication, role
table and views; the session is a signed cookie (gateway/console/session.py); templates are
Jinja2 with autoescaping (gateway/console/templates/).
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.console.routes import console_routes
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "console_routes",
]
