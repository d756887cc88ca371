-- Warrant store, version 20: the run's plan and its tasks (issue 23, docs/tasks.md).
--
-- A plan is versioned like a checkpoint: every version is kept (`plans`), runs.plan_version names
-- the newest, and a new one is compare-and-set on it. `tasks` holds the current plan's tasks with
-- where each stands; a task a new version removes (never a started one) is deleted, and stays in
-- the versions and the chained entries. A tool call made for a task names it (actions.task_id),
-- so calls, cost and effects count per task.
ALTER TABLE runs ADD COLUMN plan_version INTEGER NOT NULL DEFAULT 0;   -- the newest plan; 0: none

CREATE TABLE plans (
    run_id       TEXT NOT NULL REFERENCES runs (run_id),
    version      INTEGER NOT NULL,
    body         TEXT NOT NULL,                  -- canonical JSON: the tasks as defined
    body_sha256  TEXT NOT NULL,
    diff         TEXT NOT NULL,                  -- JSON {added, removed, changed}: task ids
    epoch        INTEGER NOT NULL,
    worker       TEXT NOT NULL,
    created_at   REAL NOT NULL,
    PRIMARY KEY (run_id, version)
);

CREATE TABLE tasks (
    run_id        TEXT NOT NULL REFERENCES runs (run_id),
    task_id       TEXT NOT NULL,
    position      INTEGER NOT NULL,              -- its place in the current plan
    title         TEXT NOT NULL,
    depends_on    TEXT NOT NULL DEFAULT '[]',    -- JSON: task ids
    completion    TEXT NOT NULL DEFAULT '[]',    -- JSON: checks, as a milestone's
    max_attempts  INTEGER NOT NULL,
    status        TEXT NOT NULL,                 -- pending ready running blocked waiting_for_approval retrying
                                                 -- completed failed cancelled compensated
    attempts      INTEGER NOT NULL DEFAULT 0,    -- moves into running from ready or retrying
    output_ref    TEXT,                          -- JSON: the artifact the agent named with its last move
    error         TEXT,                          -- the agent's word with its last move, bounded
    checks        TEXT,                          -- JSON: the last completion checks' results
    plan_version  INTEGER NOT NULL,              -- the version that last defined it
    updated_at    REAL NOT NULL,
    started_at    REAL,                          -- its first attempt began
    finished_at   REAL,                          -- it became completed, failed, cancelled or compensated
    PRIMARY KEY (run_id, task_id)
);

ALTER TABLE actions ADD COLUMN task_id TEXT;
CREATE INDEX actions_task ON actions (run_id, task_id) WHERE task_id IS NOT NULL;
