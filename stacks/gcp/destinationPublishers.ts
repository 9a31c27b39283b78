/**
 * The relay's grants on the Pub/Sub destinations of `relayDestinations` (issue 31):
 * `roles/pubsub.publisher` (pubsub.topics.publish, nothing else) on each topic listed, for the
 * relay's service account alone. A topic in another project takes the grant there: the identity
 * that applies the stack needs `pubsub.topics.setIamPolicy` on it (or its owner applies the same
 * binding, docs/deploy-gcp.md, and the list stays empty).
 */
import { Construct } from "constructs";
import { PubsubTopicIamMember } from "@cdktf/provider-google/lib/pubsub-topic-iam-member/index.js";
import type { GcpRelayDestination } from "../relayDestinations.js";

export const PUBLISHER_ROLE = "roles/pubsub.publisher";

export class DestinationPublishers extends Construct {
  /** Depend on these to send only once the grants exist. */
  readonly grants: PubsubTopicIamMember[];

  constructor(scope: Construct, id: string, props: { project: string; relayServiceAccountEmail: string; destinations: readonly GcpRelayDestination[] }) {
    super(scope, id);
    this.grants = props.destinations.map((d, i) =>
      new PubsubTopicIamMember(this, `topic${i}`, {
        topic: `projects/${d.project ?? props.project}/topics/${d.topic}`,
        role: PUBLISHER_ROLE,
        member: `serviceAccount:${props.relayServiceAccountEmail}`,
      }));
  }
}
