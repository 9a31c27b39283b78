export { MIN_RETENTION_DAYS, retentionPolicy, type RetentionPolicy, type PurgeOptions } from "./policy.js";
export { purgeOutbox, type PurgeResult, type OutboxRetention } from "./outbox.js";
export { purgeInbox } from "./inbox.js";
export { purgeAll, purgeIfDue, startRetention, type RetentionResult } from "./run.js";
