-- Warrant store, version 9: a hard cancel is remembered on the run, not only in its history.
-- Calls in flight on another gateway process are aborted when it hears of the cancel
-- (gateway/cancel_relay.py); one that was not listening then asks, when it listens again,
-- which of the runs it has calls in flight for were cancelled hard. 1: hard (also a soft cancel
-- made hard later, or a child of a run cancelled hard), 0: not cancelled, or cancelled softly.
ALTER TABLE runs ADD COLUMN cancelled_hard INTEGER NOT NULL DEFAULT 0;
