"""Bounded caches: at most `size` entries, the oldest forgotten first, each optionally for a time.

Whatever a process remembers of something it can read again (a lease token's identity, a fetched
client metadata document, a hint that a body is stored) is kept in one of these: a key an
outsider chooses must never grow a gateway's memory without end. Forgetting such an entry only
costs the read it saved. A memory of recent events that does decide (the idempotency keys of
calls that never connected, the runs just cancelled hard) is sized far past the moments it
matters for.

`BoundedDict` maps keys to values; `BoundedSet` remembers keys. Both are in insertion order:
putting a key again makes it the newest (and restarts its time). With a `ttl`, an entry is gone
once `ttl` seconds have passed on the injected clock (monotonic by default). Neither is
thread-safe: each is used from one event loop.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable, Iterator
from typing import Generic, TypeVar

from gateway.clock import Clock

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class MonotonicClock:
    """Seconds that only go forward (`time.monotonic`): the default clock of a cache's `ttl`."""

    def now(self) -> float:
        return time.monotonic()


MONOTONIC = MonotonicClock()


class BoundedDict(Generic[K, V]):
    """A mapping of at most `size` entries: putting a new key into a full one forgets the oldest.

    `ttl`: seconds an entry is kept (None: until it is pushed out); `put` may give one entry its
    own. `get` answers None for a missing key; where None is a value, ask `in` and then `[key]`.
    """

    __slots__ = ("_clock", "_data", "_expires", "size", "ttl")

    def __init__(self, size: int, *, ttl: float | None = None, clock: Clock = MONOTONIC) -> None:
        if size < 1:
            raise ValueError("a bounded cache holds at least one entry")
        self.size = size
        self.ttl = ttl
        self._clock = clock
        self._data: dict[K, V] = {}
        # When each entry is gone (clock seconds), only once some entry has a time: a cache without
        # one costs a dict look-up per `get`, nothing more.
        self._expires: dict[K, float] | None = None

    def get(self, key: K) -> V | None:
        if self._expires is not None and self._expired(key):
            return None
        return self._data.get(key)

    def __getitem__(self, key: K) -> V:
        """Raises: KeyError for a key missing or expired."""
        if self._expires is not None and self._expired(key):
            raise KeyError(key)
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        if key not in self._data:
            return False
        return self._expires is None or not self._expired(key)

    def put(self, key: K, value: V, *, ttl: float | None = None) -> None:
        """Remember `value` under `key` as the newest entry, for `ttl` seconds (the cache's by default)."""
        data = self._data
        if key in data:
            del data[key]
        elif len(data) >= self.size:
            self._forget(next(iter(data)))
        data[key] = value
        seconds = self.ttl if ttl is None else ttl
        if seconds is not None:
            if self._expires is None:
                self._expires = {}
            self._expires[key] = self._clock.now() + seconds
        elif self._expires is not None:
            self._expires.pop(key, None)

    __setitem__ = put

    def pop(self, key: K) -> V | None:
        """Forget `key`; its value if it was there (and not expired), else None."""
        value = self.get(key)
        self._forget(key)
        return value

    def clear(self) -> None:
        self._data.clear()
        self._expires = None

    def __len__(self) -> int:
        """Entries held, the expired among them until they are asked for or pushed out."""
        return len(self._data)

    def __iter__(self) -> Iterator[K]:
        """The keys not expired, oldest first."""
        return iter([key for key in list(self._data) if key in self])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, ttl={self.ttl}, entries={len(self._data)})"

    def _expired(self, key: K) -> bool:
        assert self._expires is not None
        expires = self._expires.get(key)
        if expires is None or self._clock.now() < expires:
            return False
        self._forget(key)
        return True

    def _forget(self, key: K) -> None:
        self._data.pop(key, None)
        if self._expires is not None:
            self._expires.pop(key, None)


class BoundedSet(Generic[K]):
    """A set of at most `size` keys: adding a new key to a full one forgets the oldest."""

    __slots__ = ("_keys",)

    def __init__(self, size: int, *, ttl: float | None = None, clock: Clock = MONOTONIC) -> None:
        self._keys: BoundedDict[K, None] = BoundedDict(size, ttl=ttl, clock=clock)

    @property
    def size(self) -> int:
        return self._keys.size

    def add(self, key: K) -> None:
        self._keys.put(key, None)

    def update(self, keys: Iterable[K]) -> None:
        for key in keys:
            self._keys.put(key, None)

    def discard(self, key: K) -> None:
        self._keys.pop(key)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[K]:
        return iter(self._keys)

    def __repr__(self) -> str:
        return f"BoundedSet(size={self._keys.size}, ttl={self._keys.ttl}, entries={len(self._keys)})"
