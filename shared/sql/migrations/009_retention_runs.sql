-- When retention last started, shared by every process on this database (the local platform's
-- job, each cloud relay run): a run starts only when the last one is old enough, so retention
-- runs about once an hour however many instances there are and however often they wake.
CREATE TABLE retention_runs (
  singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  started_at timestamptz NOT NULL
);
