-- Warrant store, version 14: money stays an integer within its bound (issue 26).
--
-- SQLite stores whatever a value is: a sum past 2^63 silently becomes a REAL, after which every
-- read of the row that formats money failed. The store refuses a report that would pass
-- units.MAX_MONEY (10^17 - 1 minor units) and saturates a cost that already happened, inside the
-- transaction; these triggers are the schema's own guard behind that, on every money column and
-- every counter (a table rebuild of `runs` for a CHECK would rewrite the largest table; a
-- trigger says the same and costs one comparison per update). RAISE(ABORT) fails the statement
-- and its transaction: nothing is written.
CREATE TRIGGER runs_money_insert BEFORE INSERT ON runs
WHEN typeof(NEW.spend_limit) != 'integer' OR typeof(NEW.spend_reserved) != 'integer'
  OR typeof(NEW.spend_spent) != 'integer' OR typeof(NEW.tool_calls_limit) != 'integer'
  OR typeof(NEW.tool_calls_reserved) != 'integer' OR typeof(NEW.tool_calls_spent) != 'integer'
  OR typeof(NEW.writes_limit) != 'integer' OR typeof(NEW.writes_reserved) != 'integer'
  OR typeof(NEW.writes_spent) != 'integer'
  OR NEW.spend_limit > 99999999999999999 OR NEW.spend_reserved > 99999999999999999 OR NEW.spend_spent > 99999999999999999
BEGIN
  SELECT RAISE(ABORT, 'money_out_of_range: a run''s money or counter is not an integer within its bound');
END;
CREATE TRIGGER runs_money_update BEFORE UPDATE OF spend_limit, spend_reserved, spend_spent, tool_calls_limit,
  tool_calls_reserved, tool_calls_spent, writes_limit, writes_reserved, writes_spent ON runs
WHEN typeof(NEW.spend_limit) != 'integer' OR typeof(NEW.spend_reserved) != 'integer'
  OR typeof(NEW.spend_spent) != 'integer' OR typeof(NEW.tool_calls_limit) != 'integer'
  OR typeof(NEW.tool_calls_reserved) != 'integer' OR typeof(NEW.tool_calls_spent) != 'integer'
  OR typeof(NEW.writes_limit) != 'integer' OR typeof(NEW.writes_reserved) != 'integer'
  OR typeof(NEW.writes_spent) != 'integer'
  OR NEW.spend_limit > 99999999999999999 OR NEW.spend_reserved > 99999999999999999 OR NEW.spend_spent > 99999999999999999
BEGIN
  SELECT RAISE(ABORT, 'money_out_of_range: a run''s money or counter is not an integer within its bound');
END;
CREATE TRIGGER actions_money BEFORE UPDATE OF actual_spend ON actions
WHEN NEW.actual_spend IS NOT NULL AND (typeof(NEW.actual_spend) != 'integer' OR NEW.actual_spend > 99999999999999999)
BEGIN
  SELECT RAISE(ABORT, 'money_out_of_range: an action''s cost is not an integer within its bound');
END;
CREATE TRIGGER charges_money BEFORE INSERT ON charges
WHEN typeof(NEW.amount) != 'integer' OR NEW.amount > 99999999999999999
BEGIN
  SELECT RAISE(ABORT, 'money_out_of_range: a charge is not an integer within its bound');
END;
