/**
 * Pub/Sub: the inbound topic, a push subscription to the processor (OIDC token of the push
 * service account), a dead-letter topic after `maxDeliveryAttempts`, and a pull subscription on
 * the dead-letter topic (a message published to a topic without a subscription is lost).
 * Pub/Sub's own service agent must be allowed to publish to the dead-letter topic and to
 * acknowledge on the main subscription, or dead-lettering silently does not happen.
 */
import { Construct } from "constructs";
import type { DataGoogleProject } from "@cdktf/provider-google/lib/data-google-project/index.js";
import { PubsubSubscription } from "@cdktf/provider-google/lib/pubsub-subscription/index.js";
import { PubsubSubscriptionIamMember } from "@cdktf/provider-google/lib/pubsub-subscription-iam-member/index.js";
import { PubsubTopic } from "@cdktf/provider-google/lib/pubsub-topic/index.js";
import { PubsubTopicIamMember } from "@cdktf/provider-google/lib/pubsub-topic-iam-member/index.js";
import { ServiceAccountIamMember } from "@cdktf/provider-google/lib/service-account-iam-member/index.js";
import type { StackConfig } from "../config.js";
import { pushDeliveryAttempts, pushRetryPolicy } from "./capacity.js";

const seconds = (days: number) => `${days * 86_400}s`;

export class PubSubQueue extends Construct {
  readonly topic: PubsubTopic;
  readonly deadLetterTopic: PubsubTopic;
  readonly subscription: PubsubSubscription;
  readonly deadLetterSubscription: PubsubSubscription;

  constructor(
    scope: Construct,
    id: string,
    props: {
      prefix: string;
      config: StackConfig;
      project: DataGoogleProject;
      pushEndpoint: string;
      pushServiceAccountEmail: string;
      pushServiceAccountId: string;
    },
  ) {
    super(scope, id);
    const { config } = props;
    const serviceAgent = `serviceAccount:service-${props.project.number}@gcp-sa-pubsub.iam.gserviceaccount.com`;
    this.topic = new PubsubTopic(this, "topic", { name: `${props.prefix}-inbound` });
    this.deadLetterTopic = new PubsubTopic(this, "dlq-topic", {
      name: `${props.prefix}-inbound-dlq`,
      messageRetentionDuration: seconds(config.deadLetterRetentionDays),
    });
    this.subscription = new PubsubSubscription(this, "push", {
      name: `${props.prefix}-inbound-processor`,
      topic: this.topic.id,
      ackDeadlineSeconds: Math.min(600, config.processorTimeoutSeconds),
      messageRetentionDuration: seconds(config.queueRetentionDays),
      expirationPolicy: { ttl: "" },
      pushConfig: {
        pushEndpoint: props.pushEndpoint,
        oidcToken: { serviceAccountEmail: props.pushServiceAccountEmail, audience: props.pushEndpoint },
      },
      // A busy processor answers 429 and Pub/Sub counts it as an attempt: see capacity.ts.
      retryPolicy: pushRetryPolicy,
      deadLetterPolicy: { deadLetterTopic: this.deadLetterTopic.id, maxDeliveryAttempts: pushDeliveryAttempts(config) },
    });
    this.deadLetterSubscription = new PubsubSubscription(this, "dlq-pull", {
      name: `${props.prefix}-inbound-dlq`,
      topic: this.deadLetterTopic.id,
      ackDeadlineSeconds: 60,
      messageRetentionDuration: seconds(Math.min(7, config.deadLetterRetentionDays)),
      expirationPolicy: { ttl: "" },
    });
    new PubsubTopicIamMember(this, "agent-publishes-dead-letters", {
      topic: this.deadLetterTopic.name,
      role: "roles/pubsub.publisher",
      member: serviceAgent,
    });
    new PubsubSubscriptionIamMember(this, "agent-acks-forwarded", {
      subscription: this.subscription.name,
      role: "roles/pubsub.subscriber",
      member: serviceAgent,
    });
    // The service agent mints the push OIDC token as the push account. Pub/Sub creates its agent
    // when the API is enabled: waiting for the topic waits for pubsub.googleapis.com (the type
    // itself waits for iam and iamcredentials, see projectApis.ts).
    new ServiceAccountIamMember(this, "agent-mints-push-token", {
      serviceAccountId: props.pushServiceAccountId,
      role: "roles/iam.serviceAccountTokenCreator",
      member: serviceAgent,
      dependsOn: [this.topic],
    });
  }

  /** Lets one service account publish to the inbound topic (ingest; processor re-publishing). */
  allowPublisher(who: string, serviceAccountEmail: string): void {
    new PubsubTopicIamMember(this, `${who}-publishes`, {
      topic: this.topic.name,
      role: "roles/pubsub.publisher",
      member: `serviceAccount:${serviceAccountEmail}`,
    });
  }

  /** Lets one service account publish to the dead-letter topic (the processor, with a `deadLetterReason`). */
  allowDeadLetterPublisher(who: string, serviceAccountEmail: string): void {
    new PubsubTopicIamMember(this, `${who}-publishes-dead-letters`, {
      topic: this.deadLetterTopic.name,
      role: "roles/pubsub.publisher",
      member: `serviceAccount:${serviceAccountEmail}`,
    });
  }
}
