/** Outbound delivery's public API: import from here. See docs/outbound.md. */
export { enqueue, enqueueMany, prepareEvent, DEFAULT_MAX_PAYLOAD_BYTES, MAX_EVENTS_PER_BATCH, type OutboundEvent, type EnqueueResult, type EnqueuedDelivery, type EnqueueOptions } from "./enqueue.js";
export { createSubscription, getSubscription, listSubscriptions, enableSubscription, rotateSecrets, subscriptionInputSchema, createSubscriptionSchema, MAX_BACKFILL_EVENTS, type Subscription, type SubscriptionInput, type SubscriptionStatus, type SubscriptionHealth } from "./subscriptions.js";
export { updateSubscription, pauseSubscription, resumeSubscription, deleteSubscription } from "./subscriptionChanges.js";
export { headersSchema, headerNameProblem, MAX_CUSTOM_HEADERS } from "./subscriptionHeaders.js";
export { listEvents, getEvent, type EventSummary, type EventDetail, type EventFilter } from "./events.js";
export { resendEvent, sendTestEvent, NotSubscribedError, TEST_EVENT_TYPE, type SendResult } from "./operatorSends.js";
export { createRelay, type Relay, type RelayOptions } from "./relay.js";
export { createRelayLoop, type RelayLoop, type RelayLoopCallbacks, type RelayLoopOptions } from "./relayLoop.js";
export { listDeliveries, getDelivery, listAttempts, type Delivery, type DeliveryStatus, type DeliveryFilter, type Attempt } from "./deliveries.js";
export { listDeadLetters, countDeadLetters, getDeadLetter, replayDeadLetter, replayDeadLetters, MAX_BULK_REPLAY, type DeadLetter, type DeadLetterFilter } from "./deadLetters.js";
export { listOrderingKeys, getOrderingKey, skipOrderingKey, type OrderingKeyState, type SkipResult } from "./ordering.js";
export { DEFAULT_HEALTH_POLICY, type HealthPolicy } from "./health.js";
export { matchesEventType, eventTypeProblem, eventPatternProblem } from "./eventTypes.js";
export { NOTIFY_CHANNEL } from "./notify.js";
export * from "./errors.js";
export type { ClaimedDelivery, Completion, Decision } from "./types.js";
