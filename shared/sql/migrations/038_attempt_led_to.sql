-- What each attempt decided for its delivery (issue 27 item 8): the status its completion set,
-- pending (it will be retried), delivered or dead. The admin page's chart told "failed, will retry"
-- from "failed, not retried" by the delivery's status now, which a replay changes: the last
-- attempt of a replayed dead letter turned into "will retry". Recorded at the attempt, it stays.
-- NULL for an attempt whose outcome was not applied (stale) and for attempts logged before this
-- migration (the chart falls back to the delivery's status for those). A nullable column without
-- a default: no table rewrite.
ALTER TABLE outbound_attempts ADD COLUMN led_to text;
