/**
 * The VPC: private services access (Cloud SQL gets a private IP only), a Serverless VPC Access
 * connector so functions reach that IP, and Cloud NAT with a static address for the relay,
 * whose egress is routed through the connector (`ALL_TRAFFIC`), so deliveries leave from one
 * IP receivers can allow-list.
 */
import { Construct } from "constructs";
import { ComputeAddress } from "@cdktf/provider-google/lib/compute-address/index.js";
import { ComputeGlobalAddress } from "@cdktf/provider-google/lib/compute-global-address/index.js";
import { ComputeNetwork } from "@cdktf/provider-google/lib/compute-network/index.js";
import { ComputeRouter } from "@cdktf/provider-google/lib/compute-router/index.js";
import { ComputeRouterNat } from "@cdktf/provider-google/lib/compute-router-nat/index.js";
import { ServiceNetworkingConnection } from "@cdktf/provider-google/lib/service-networking-connection/index.js";
import { VpcAccessConnector } from "@cdktf/provider-google/lib/vpc-access-connector/index.js";

export class PrivateNetwork extends Construct {
  readonly networkId: string;
  readonly connectorId: string;
  /** The Cloud NAT static address (receivers allow-list it). */
  readonly egressIp: string;
  /** Cloud SQL must wait for the peering. */
  readonly peering: ServiceNetworkingConnection;

  constructor(scope: Construct, id: string, props: { prefix: string; region: string }) {
    super(scope, id);
    const network = new ComputeNetwork(this, "vpc", { name: `${props.prefix}-vpc`, autoCreateSubnetworks: false });
    const range = new ComputeGlobalAddress(this, "private-services-range", {
      name: `${props.prefix}-private-services`,
      purpose: "VPC_PEERING",
      addressType: "INTERNAL",
      prefixLength: 20,
      network: network.id,
    });
    this.peering = new ServiceNetworkingConnection(this, "private-services", {
      network: network.id,
      service: "servicenetworking.googleapis.com",
      reservedPeeringRanges: [range.name],
    });
    const connector = new VpcAccessConnector(this, "connector", {
      name: `${props.prefix}-conn`,
      region: props.region,
      network: network.name,
      ipCidrRange: "10.60.0.0/28",
      minInstances: 2,
      maxInstances: 3,
      machineType: "e2-micro",
    });
    const router = new ComputeRouter(this, "router", { name: `${props.prefix}-router`, region: props.region, network: network.id });
    const natIp = new ComputeAddress(this, "nat-ip", { name: `${props.prefix}-nat`, region: props.region });
    new ComputeRouterNat(this, "nat", {
      name: `${props.prefix}-nat`,
      router: router.name,
      region: props.region,
      natIpAllocateOption: "MANUAL_ONLY",
      natIps: [natIp.selfLink],
      sourceSubnetworkIpRangesToNat: "ALL_SUBNETWORKS_ALL_IP_RANGES",
      logConfig: { enable: true, filter: "ERRORS_ONLY" },
    });
    this.networkId = network.id;
    this.connectorId = connector.id;
    this.egressIp = natIp.address;
  }
}
