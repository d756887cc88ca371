import pytest

from gateway.domain import ExpressionError, compiled
from gateway.domain.expressions import Expression


@pytest.mark.parametrize("source", ["", "   ", "args.to.endsWith(", "a b", "args.(", "1 +"])
def test_an_expression_that_does_not_compile_raises_value_error(source: str) -> None:
    with pytest.raises(ValueError):
        Expression(source)


def test_an_expression_that_is_not_a_string_raises_value_error() -> None:
    with pytest.raises(ValueError):
        Expression(None)  # type: ignore[arg-type]


def test_an_expression_evaluates_over_args() -> None:
    expr = Expression("args.to.endsWith('@acme.example') && args.amount <= 100")
    assert expr.evaluate({"to": "bo@acme.example", "amount": 100}) is True
    assert expr.evaluate({"to": "bo@evil.example", "amount": 1}) is False


@pytest.mark.parametrize(
    ("source", "args"),
    [
        ("args.to.endsWith('@acme.example')", {}),  # a missing field
        ("args.amount > 'x'", {"amount": 3}),  # a type mismatch
        ("1 / args.n == 1", {"n": 0}),  # division by zero
        ("args.amount", {"amount": 3}),  # not a boolean
        ("args.to", {"to": "x"}),  # not a boolean
    ],
)
def test_an_expression_that_cannot_be_evaluated_raises_expression_error(source: str, args: dict[str, object]) -> None:
    with pytest.raises(ExpressionError):
        Expression(source).evaluate(args)


def test_an_expression_is_compiled_once_per_source() -> None:
    assert compiled("args.n == 1") is compiled("args.n == 1")
    assert compiled("args.n == 1").source == "args.n == 1"
