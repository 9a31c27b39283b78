/**
 * Service Bus namespace (Entra ID only: local SAS auth off; TLS 1.2 minimum) and the inbound
 * queue. After `maxDeliveryAttempts` deliveries a message moves to the queue's dead-letter
 * subqueue (`<queue>/$DeadLetterQueue`); expired messages go there too instead of vanishing.
 */
import { Construct } from "constructs";
import { ServicebusNamespace } from "@cdktf/provider-azurerm/lib/servicebus-namespace/index.js";
import { ServicebusQueue } from "@cdktf/provider-azurerm/lib/servicebus-queue/index.js";
import type { StackConfig } from "../config.js";
import type { AzureScope } from "./privateNetwork.js";

export class ServiceBusQueue extends Construct {
  readonly namespace: ServicebusNamespace;
  readonly queue: ServicebusQueue;
  /** `relayMode: "scheduled"`: the relay's wake-ups (the management app sends, the relay app's trigger reads). */
  readonly wakeQueue?: ServicebusQueue;

  constructor(scope: Construct, id: string, props: AzureScope & { config: StackConfig }) {
    super(scope, id);
    const { config } = props;
    this.namespace = new ServicebusNamespace(this, "namespace", {
      name: `${props.prefix}-bus`,
      resourceGroupName: props.resourceGroupName,
      location: props.location,
      // Standard: scheduled messages, dead-letter subqueue, sessions; 256 KB messages.
      sku: "Standard",
      minimumTlsVersion: "1.2",
      localAuthEnabled: false,
      publicNetworkAccessEnabled: true,
      tags: props.tags,
    });
    this.queue = new ServicebusQueue(this, "queue", {
      name: `${props.prefix}-inbound`,
      namespaceId: this.namespace.id,
      maxDeliveryCount: config.maxDeliveryAttempts,
      deadLetteringOnMessageExpiration: true,
      defaultMessageTtl: `P${config.queueRetentionDays}D`,
      // The lock must outlive one processor invocation, like SQS's visibility timeout (max 5 min).
      lockDuration: `PT${Math.min(300, config.processorTimeoutSeconds)}S`,
      maxSizeInMegabytes: 1024,
    });
    if (config.relayMode === "scheduled") {
      this.wakeQueue = new ServicebusQueue(this, "relay-wake", {
        name: `${props.prefix}-relay-wake`,
        namespaceId: this.namespace.id,
        // A wake-up no relay took within a minute is stale (a timer run has come): it expires, unkept.
        defaultMessageTtl: "PT1M",
        deadLetteringOnMessageExpiration: false,
        // A woken run that fails is not run again for that message: the next wake-up or timer does the work.
        maxDeliveryCount: 1,
        // The host renews the lock while the run lasts (up to its auto-renew limit, 5 minutes).
        lockDuration: "PT5M",
        maxSizeInMegabytes: 1024,
      });
    }
  }
}
