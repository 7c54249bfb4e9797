"""Which Event an event joins: its own, a repeat of one already written, or its object's
combined one (client-go's EventCorrelator, with the recorder's queue as the place to fold).

Keys: an event's own key is (uid, type, reason, message); its similar key is (uid, type,
reason, None), the key of the one Event that combines similar events. `route` picks the
key in this order:
1. its own key if a write for it is pending or was written within `window` s (an identical
   repeat: the count of that Event grows, client-go's PATCH of count/lastTimestamp);
2. the similar key if that one is pending or written within `window` (once combined, stays
   combined for the window, as client-go's aggregator does);
3. the similar key if `similar` distinct messages for it were seen in the window (client-go's
   threshold: 10), if the object's token bucket is empty (the spam filter: no Event is
   lost, it only stops costing a request of its own), or if the caller says the queue is
   under pressure;
4. else its own key: an Event with the caller's reason and message, unchanged.
Every cache here is an LRU of `cache_size` entries (client-go's 4096) and a combined
message keeps at most MESSAGE_LIMIT characters, so memory is bounded whatever the burst.
Not thread-safe: the recorder calls it under its lock.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple, Optional

COMBINED = "(combined from similar events): "
MESSAGE_LIMIT = 1024  # events.k8s.io's limit on a note; a combined message stays under it
Key = tuple[str, str, str, Optional[str]]


class Pending:
    """One write waiting for a sender: the events folded into one key since its last write."""

    __slots__ = ("key", "namespace", "involved", "component", "count", "first", "last", "messages", "more")

    def __init__(self, key: Key, namespace: str, involved: tuple[Any, ...], component: str, stamp: str) -> None:
        self.key, self.namespace, self.involved, self.component = key, namespace, involved, component
        self.count, self.first, self.last = 0, stamp, stamp
        self.messages: list[str] = []  # distinct messages, a combined key's only
        self.more = 0  # distinct messages past MESSAGE_LIMIT, counted, not kept

    def fold(self, message: str, stamp: str) -> None:
        self.count += 1
        self.last = stamp
        if self.key[3] is None:
            add_message(self, message)


class Sent(NamedTuple):
    """An Event this recorder wrote: enough to PATCH it on a repeat."""

    name: str
    namespace: str
    count: int
    first: str
    messages: tuple[str, ...]
    more: int
    at: float  # clock when written


def add_message(holder: Any, message: str) -> None:
    """Keep `message` in `holder.messages` if it is new and the combined message stays under the limit."""
    if message in holder.messages:
        return
    if len(combined_message(holder.messages + [message], holder.more + 1)) <= MESSAGE_LIMIT:
        holder.messages.append(message)
    else:
        holder.more += 1


def combined_message(messages: list[str], more: int) -> str:
    """What a combined Event says; one distinct message (repeated or alone) reads as itself."""
    if len(messages) == 1 and not more:
        return messages[0]
    text = COMBINED + "; ".join(messages)
    return text + f"; and {more} more" if more else text


def split_combined(message: str) -> list[str]:
    """The messages a combined Event lists (a plain Event's own message): what a reader counts."""
    if not message.startswith(COMBINED):
        return [message]
    return [m for m in message[len(COMBINED):].split("; ") if not (m.startswith("and ") and m.endswith(" more"))]


class _LRU(OrderedDict):  # type: ignore[type-arg]
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


class Correlator:
    def __init__(self, *, window: float = 600.0, similar: int = 10, burst: int = 25, refill: float = 1 / 10,
                 cache_size: int = 4096, clock: Callable[[], float]) -> None:
        self.window, self.similar, self.burst, self.refill, self._clock = window, similar, burst, refill, clock
        self.sent: _LRU = _LRU(cache_size)  # Key -> Sent
        self._seen: _LRU = _LRU(cache_size)  # similar Key -> (first seen, distinct messages, at most `similar`)
        self._buckets: _LRU = _LRU(cache_size)  # uid -> (tokens, last refill)

    def sizes(self) -> dict[str, int]:
        return {"sent": len(self.sent), "similar": len(self._seen), "buckets": len(self._buckets)}

    def written(self, key: Key) -> Optional[Sent]:
        """The Event `key` wrote within the window, if any."""
        sent = self.sent.get(key)
        if sent is None or self._clock() - sent.at >= self.window:
            return None
        return sent

    def route(self, uid: str, etype: str, reason: str, message: str, pending: Callable[[Key], bool],
              pressure: bool) -> Key:
        own: Key = (uid, etype, reason, message)
        similar: Key = (uid, etype, reason, None)
        now = self._clock()
        if pending(own) or self.written(own):
            return own
        if pending(similar) or self.written(similar):
            return similar
        first, messages = self._seen.get(similar, (now, frozenset()))
        if now - first >= self.window:
            first, messages = now, frozenset()
        if message not in messages and len(messages) < self.similar:
            messages = messages | {message}
        self._seen.put(similar, (first, messages))
        if message not in messages or pressure or not self._take(uid, now):
            return similar
        return own

    def _take(self, uid: str, now: float) -> bool:
        """A token of `uid`'s bucket (`burst`, refilled at `refill`/s) for an Event of its own."""
        tokens, last = self._buckets.get(uid, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.refill)
        ok = tokens >= 1.0
        self._buckets.put(uid, (tokens - 1.0 if ok else tokens, now))
        return ok

    def record(self, key: Key, sent: Sent) -> None:
        self.sent.put(key, sent)
