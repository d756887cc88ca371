-- Warrant store (PostgreSQL), version 14: money stays within its bound (issue 26).
--
-- The columns are BIGINT already (never a float); these bound them at units.MAX_MONEY (10^17 - 1
-- minor units), far below BIGINT's overflow, behind the store's own check inside the transaction
-- (a report that would pass it is refused 422 amount_out_of_range; a cost that happened saturates).
-- NOT VALID: enforced on every row written from now on, without failing the migration on a row
-- damaged before it (warrant ledger verify and the watchdog name such a row).
ALTER TABLE runs ADD CONSTRAINT runs_money_bounded
    CHECK (spend_limit <= 99999999999999999 AND spend_reserved <= 99999999999999999 AND spend_spent <= 99999999999999999) NOT VALID;
ALTER TABLE actions ADD CONSTRAINT actions_money_bounded
    CHECK (actual_spend IS NULL OR actual_spend <= 99999999999999999) NOT VALID;
ALTER TABLE charges ADD CONSTRAINT charges_money_bounded CHECK (amount <= 99999999999999999) NOT VALID;
