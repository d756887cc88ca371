import pytest

from gateway.domain import currency_exponent, format_duration, format_money, parse_duration, parse_money, reported_money
from gateway.domain.units import MAX_DURATION


@pytest.mark.parametrize(
    ("text", "minor"),
    [("4.20", 420), ("4.2", 420), ("4", 400), ("0", 0), ("0.05", 5), ("20.00", 2000), (" 4.20 ", 420), (7, 700)],
)
def test_decimal_money_becomes_integer_minor_units(text: object, minor: int) -> None:
    assert parse_money(text) == minor


def test_large_amounts_are_exact() -> None:
    assert parse_money("999999999999999.99") == 99999999999999999


@pytest.mark.parametrize("value", [0.1, 4.2, 1.0, float("nan")])
def test_float_money_is_refused(value: float) -> None:
    with pytest.raises(ValueError):
        parse_money(value)


@pytest.mark.parametrize("value", [True, None, [], {"amount": "1"}, b"4.20"])
def test_money_that_is_not_a_string_or_whole_number_is_refused(value: object) -> None:
    with pytest.raises(ValueError):
        parse_money(value)


@pytest.mark.parametrize("text", ["1.234", "0.001", "4.205"])
def test_money_with_more_decimals_than_the_currency_has_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_money(text, "USD")


@pytest.mark.parametrize("value", ["-1", "-0.01", -5])
def test_negative_money_is_refused(value: object) -> None:
    with pytest.raises(ValueError):
        parse_money(value)


@pytest.mark.parametrize(
    "text", ["", "abc", "1e3", ".5", "4.", "1,000.00", "$4.20", "+4", "4.20\n5", "1234567890123456", "４.２０", "٤"]
)
def test_money_not_written_as_a_plain_ascii_decimal_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_money(text)


def test_jpy_has_no_minor_units() -> None:
    assert currency_exponent("JPY") == 0
    assert parse_money("500", "JPY") == 500
    assert format_money(500, "JPY") == "500"


def test_jpy_with_decimals_is_refused() -> None:
    with pytest.raises(ValueError):
        parse_money("4.5", "JPY")


@pytest.mark.parametrize("currency", ["usd", "US", "USDX", "", "USD\n", "ＵＳＤ"])
def test_a_currency_that_is_not_an_iso_code_is_refused(currency: str) -> None:
    with pytest.raises(ValueError):
        currency_exponent(currency)


@pytest.mark.parametrize(("minor", "text"), [(420, "4.20"), (5, "0.05"), (0, "0.00"), (2000, "20.00"), (-5, "-0.05")])
def test_minor_units_format_as_a_decimal_string(minor: int, text: str) -> None:
    assert format_money(minor, "USD") == text


@pytest.mark.parametrize("minor", [0, 1, 99, 100, 123456789])
def test_money_round_trips_through_its_wire_form(minor: int) -> None:
    assert parse_money(format_money(minor, "EUR"), "EUR") == minor


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("72h", 259200), ("1h30m", 5400), ("2d", 172800), ("90s", 90), ("5m", 300), ("1d2h3m4s", 93784), (45, 45)],
)
def test_durations_become_seconds(text: object, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "value", ["", " ", "h", "1.5h", "-1h", "1H", "30m1h", "1h 30m", "72", "3 days", "1w", "P1D", "٧٢h", "5m\nx"]
)
def test_badly_written_durations_are_refused(value: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)


def test_whitespace_around_a_duration_is_ignored() -> None:
    assert parse_duration(" 5m\n") == 300


@pytest.mark.parametrize("value", [0, "0s", "0h", "0d0h0m0s", -3])
def test_a_zero_or_negative_duration_is_refused(value: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)


@pytest.mark.parametrize("value", [True, None, 1.5, [], {"h": 1}])
def test_a_duration_that_is_not_a_string_or_whole_number_is_refused(value: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)


def test_a_duration_beyond_the_maximum_is_refused() -> None:
    assert parse_duration(MAX_DURATION) == MAX_DURATION
    for value in (MAX_DURATION + 1, "99999999999999999999d", "9" * 30 + "s"):
        with pytest.raises(ValueError):
            parse_duration(value)


@pytest.mark.parametrize("seconds", [1, 59, 60, 90, 3600, 5400, 86400, 93784, 259200])
def test_durations_round_trip_through_their_written_form(seconds: int) -> None:
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize(
    ("value", "currency", "minor"),
    [("0.05", "USD", 5), ("0.0125", "USD", 2), (0.01, "USD", 1), (3, "USD", 300), ("12.5", "JPY", 13), ("0", "USD", 0)],
)
def test_a_reported_cost_becomes_minor_units_rounded_up(value: object, currency: str, minor: int) -> None:
    assert reported_money(value, currency) == minor


@pytest.mark.parametrize("value", ["-0.01", "abc", "", True, None, [1], "1e3", float("nan")])
def test_a_reported_cost_that_is_not_an_amount_is_refused(value: object) -> None:
    with pytest.raises(ValueError):
        reported_money(value)
