/** The NOTIFY channel that wakes relays: sent on commit of an enqueue, a replay or a re-enable. */
export const NOTIFY_CHANNEL = "outbound_deliveries";
