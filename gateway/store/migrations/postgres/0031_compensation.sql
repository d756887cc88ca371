-- Warrant store, version 31: compensation (issue 24; docs/decisions/0031-compensation.md).
--
-- actions.compensates: the action a compensating call undoes (NULL for every other call). The
-- compensating action's success moves that original from succeeded to compensated in the same
-- settle transaction; actions_compensates finds an original's compensations.
ALTER TABLE actions ADD COLUMN compensates TEXT;
CREATE INDEX actions_compensates ON actions (compensates) WHERE compensates IS NOT NULL;
