"""gateway/bounded.py: every cache a process keeps is bounded, oldest forgotten first."""

from __future__ import annotations

import pytest

from gateway.bounded import BoundedDict, BoundedSet
from gateway.clock import ManualClock


def test_a_full_cache_forgets_its_oldest_entry_for_a_new_one() -> None:
    cache: BoundedDict[str, int] = BoundedDict(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("c", 3)
    assert "a" not in cache and cache.get("a") is None
    assert list(cache) == ["b", "c"] and len(cache) == 2


def test_putting_a_key_again_makes_it_the_newest_without_growing_the_cache() -> None:
    cache: BoundedDict[str, int] = BoundedDict(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)
    cache.put("c", 3)
    assert list(cache) == ["a", "c"] and cache["a"] == 10


def test_an_entry_is_gone_once_its_time_has_passed_on_the_injected_clock() -> None:
    clock = ManualClock()
    cache: BoundedDict[str, int] = BoundedDict(10, ttl=60, clock=clock)
    cache.put("a", 1)
    clock.advance(59.9)
    assert cache.get("a") == 1
    clock.advance(0.1)
    assert cache.get("a") is None and "a" not in cache and len(cache) == 0
    with pytest.raises(KeyError):
        cache["a"]


def test_one_entry_may_be_kept_for_a_time_of_its_own() -> None:
    clock = ManualClock()
    cache: BoundedDict[str, int | None] = BoundedDict(10, ttl=300, clock=clock)
    cache.put("found", 1)
    cache.put("failed", None, ttl=60)
    clock.advance(61)
    assert "failed" not in cache and cache["found"] == 1
    clock.advance(240)
    assert "found" not in cache


def test_a_value_of_none_is_told_from_a_missing_key_by_in() -> None:
    cache: BoundedDict[str, None] = BoundedDict(1)
    cache["a"] = None
    assert "a" in cache and cache["a"] is None and cache.get("a") is None
    assert "b" not in cache


def test_putting_again_restarts_an_entrys_time_and_without_one_keeps_it_for_good() -> None:
    clock = ManualClock()
    cache: BoundedDict[str, int] = BoundedDict(10, clock=clock)
    cache.put("a", 1, ttl=10)
    clock.advance(9)
    cache.put("a", 2)  # the cache's own ttl: none
    clock.advance(1_000)
    assert cache["a"] == 2


def test_pop_and_clear_forget() -> None:
    cache: BoundedDict[str, int] = BoundedDict(3, ttl=5, clock=ManualClock())
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.pop("a") == 1 and cache.pop("a") is None and list(cache) == ["b"]
    cache.clear()
    assert len(cache) == 0 and "b" not in cache


def test_a_set_remembers_at_most_its_size_of_keys() -> None:
    seen: BoundedSet[tuple[str, int]] = BoundedSet(2)
    seen.update([("a", 1), ("b", 2)])
    seen.add(("c", 3))
    assert ("a", 1) not in seen and ("b", 2) in seen and len(seen) == 2
    seen.discard(("b", 2))
    seen.discard(("b", 2))
    assert list(seen) == [("c", 3)] and seen.size == 2


def test_a_set_with_a_ttl_forgets_on_time() -> None:
    clock = ManualClock()
    seen: BoundedSet[str] = BoundedSet(5, ttl=1, clock=clock)
    seen.add("a")
    clock.advance(1)
    assert "a" not in seen


def test_a_cache_of_no_entries_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        BoundedDict(0)
