-- The local queue: what SQS / Service Bus / Pub/Sub do in the cloud, on PostgreSQL (server or
-- PGlite). One table holds every named queue; a dead-lettered row stays in it, flagged, so moving
-- it to the dead-letter queue is one UPDATE and nothing can be lost between two tables.
CREATE TABLE queue_messages (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue              text        NOT NULL CHECK (queue ~ '^[A-Za-z0-9_.-]{1,120}$'),
  message_id         uuid        NOT NULL DEFAULT gen_random_uuid() UNIQUE,
  body               text        NOT NULL,
  attributes         jsonb       NOT NULL DEFAULT '{}'::jsonb,
  enqueued_at        timestamptz NOT NULL DEFAULT now(),
  -- Not receivable before this time: send delay, visibility timeout, retry delay.
  visible_at         timestamptz NOT NULL DEFAULT now(),
  receive_count      integer     NOT NULL DEFAULT 0,
  -- Token of the current delivery; settling with an older one does nothing (the lease moved on).
  receipt            uuid,
  dead_lettered_at   timestamptz,
  dead_letter_reason text
);

-- What receive scans: due rows of one queue, live or dead, oldest first.
CREATE INDEX queue_messages_live_due ON queue_messages (queue, visible_at, id) WHERE dead_lettered_at IS NULL;
CREATE INDEX queue_messages_dead_due ON queue_messages (queue, visible_at, id) WHERE dead_lettered_at IS NOT NULL;
