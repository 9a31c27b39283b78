/**
 * `relayMode: "scheduled"`: the relay's wake-up. The management function publishes `{"wake": true}`
 * to this topic after a write that makes deliveries due; its push subscription posts it to the
 * relay function (OIDC token of the push service account, as for the processor), which runs a
 * woken run: it delivers and listens until idle, then answers, and the answer acknowledges.
 *
 * Bounds: the relay's max instances bound the runs at once; a push the relay refuses (429, every
 * instance busy) is retried by Pub/Sub for as long as the topic keeps it, the least Pub/Sub
 * allows (10 minutes), and a stale wake-up then only starts a short run that finds the work done.
 */
import { Construct } from "constructs";
import { PubsubSubscription } from "@cdktf/provider-google/lib/pubsub-subscription/index.js";
import { PubsubTopic } from "@cdktf/provider-google/lib/pubsub-topic/index.js";
import { PubsubTopicIamMember } from "@cdktf/provider-google/lib/pubsub-topic-iam-member/index.js";
import type { CloudRunFunction } from "./cloudRunFunction.js";

/** The shortest retention Pub/Sub allows, for the topic and the subscription. */
const WAKE_RETENTION = "600s";

export class RelayWakeTopic extends Construct {
  readonly topic: PubsubTopic;
  readonly subscription: PubsubSubscription;

  constructor(scope: Construct, id: string, props: { prefix: string; relay: CloudRunFunction; relayTimeoutSeconds: number; pushServiceAccountEmail: string }) {
    super(scope, id);
    this.topic = new PubsubTopic(this, "topic", { name: `${props.prefix}-relay-wake`, messageRetentionDuration: WAKE_RETENTION });
    const invoker = props.relay.allowInvoker("wake-push", props.pushServiceAccountEmail);
    this.subscription = new PubsubSubscription(this, "push", {
      name: `${props.prefix}-relay-wake`,
      topic: this.topic.id,
      // The run answers when it ends: the deadline covers a whole run (Pub/Sub's limit is 600 s).
      ackDeadlineSeconds: Math.min(600, Math.max(10, props.relayTimeoutSeconds)),
      messageRetentionDuration: WAKE_RETENTION,
      expirationPolicy: { ttl: "" },
      pushConfig: {
        pushEndpoint: props.relay.uri,
        oidcToken: { serviceAccountEmail: props.pushServiceAccountEmail, audience: props.relay.uri },
      },
      retryPolicy: { minimumBackoff: "10s", maximumBackoff: "60s" },
      dependsOn: [invoker],
    });
  }

  /** Lets the management function's account publish wake-ups. */
  allowPublisher(who: string, serviceAccountEmail: string): PubsubTopicIamMember {
    return new PubsubTopicIamMember(this, `${who}-publishes`, { topic: this.topic.name, role: "roles/pubsub.publisher", member: `serviceAccount:${serviceAccountEmail}` });
  }
}
