from __future__ import annotations

import pytest

from gateway.backoff import backoff_delay


@pytest.mark.parametrize(("attempt", "full"), [(1, 0.1), (2, 0.2), (3, 0.4), (10, 30.0), (10_000, 30.0)])
def test_the_delay_doubles_up_to_its_cap_and_jitters_down_to_half(attempt: int, full: float) -> None:
    assert backoff_delay(attempt, rng=lambda: 1.0) == pytest.approx(full)
    assert backoff_delay(attempt, rng=lambda: 0.0) == pytest.approx(full / 2)
