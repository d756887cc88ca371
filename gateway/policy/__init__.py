"""Policy: which tools exist, what they cost, which need approval. Loaded once, decided purely."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.policy.engine import approval_rule, authority_refusal
    from gateway.policy.loader import load_policies, parse_policy
    from gateway.policy.model import PolicyDocument, ToolPolicy
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "PolicyDocument",
    "ToolPolicy",
    "approval_rule",
    "authority_refusal",
    "load_policies",
    "parse_policy",
]
