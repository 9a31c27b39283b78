/**
 * The virtual network: a subnet delegated to the Function Apps (VNet integration), a subnet
 * delegated to PostgreSQL Flexible Server (private access, no public endpoint), the private DNS
 * zone that resolves the server, and a NAT gateway with a static IP for outbound deliveries
 * (new VNets have no default outbound internet access).
 */
import { Construct } from "constructs";
import { NatGateway } from "@cdktf/provider-azurerm/lib/nat-gateway/index.js";
import { NatGatewayPublicIpAssociation } from "@cdktf/provider-azurerm/lib/nat-gateway-public-ip-association/index.js";
import { PrivateDnsZone } from "@cdktf/provider-azurerm/lib/private-dns-zone/index.js";
import { PrivateDnsZoneVirtualNetworkLink } from "@cdktf/provider-azurerm/lib/private-dns-zone-virtual-network-link/index.js";
import { PublicIp } from "@cdktf/provider-azurerm/lib/public-ip/index.js";
import { Subnet } from "@cdktf/provider-azurerm/lib/subnet/index.js";
import { SubnetNatGatewayAssociation } from "@cdktf/provider-azurerm/lib/subnet-nat-gateway-association/index.js";
import { VirtualNetwork } from "@cdktf/provider-azurerm/lib/virtual-network/index.js";

export interface AzureScope {
  prefix: string;
  resourceGroupName: string;
  location: string;
  /** Tags for every resource that takes them (`app`, `stack`). */
  tags: Record<string, string>;
}

export class PrivateNetwork extends Construct {
  readonly functionsSubnetId: string;
  readonly databaseSubnetId: string;
  readonly databaseDnsZoneId: string;
  /** The DNS link must exist before the server is created, or creation fails. */
  readonly dnsLink: PrivateDnsZoneVirtualNetworkLink;
  /** The NAT gateway's static public IP: every delivery from the VNet-integrated apps leaves from it. */
  readonly egressIp: string;

  constructor(scope: Construct, id: string, props: AzureScope) {
    super(scope, id);
    const where = { resourceGroupName: props.resourceGroupName, location: props.location, tags: props.tags };
    const vnet = new VirtualNetwork(this, "vnet", { ...where, name: `${props.prefix}-vnet`, addressSpace: ["10.50.0.0/16"] });
    const functions = new Subnet(this, "functions", {
      name: "functions",
      resourceGroupName: props.resourceGroupName,
      virtualNetworkName: vnet.name,
      addressPrefixes: ["10.50.1.0/24"],
      delegation: [{ name: "functions", serviceDelegation: { name: "Microsoft.Web/serverFarms", actions: ["Microsoft.Network/virtualNetworks/subnets/action"] } }],
    });
    const database = new Subnet(this, "database", {
      name: "database",
      resourceGroupName: props.resourceGroupName,
      virtualNetworkName: vnet.name,
      addressPrefixes: ["10.50.2.0/24"],
      delegation: [
        { name: "postgres", serviceDelegation: { name: "Microsoft.DBforPostgreSQL/flexibleServers", actions: ["Microsoft.Network/virtualNetworks/subnets/join/action"] } },
      ],
    });
    const zone = new PrivateDnsZone(this, "postgres-dns", {
      name: `${props.prefix}.private.postgres.database.azure.com`,
      resourceGroupName: props.resourceGroupName,
      tags: props.tags,
    });
    this.dnsLink = new PrivateDnsZoneVirtualNetworkLink(this, "postgres-dns-link", {
      name: `${props.prefix}-postgres`,
      resourceGroupName: props.resourceGroupName,
      privateDnsZoneName: zone.name,
      virtualNetworkId: vnet.id,
      tags: props.tags,
    });
    const ip = new PublicIp(this, "nat-ip", { ...where, name: `${props.prefix}-nat`, allocationMethod: "Static", sku: "Standard" });
    const nat = new NatGateway(this, "nat", { ...where, name: `${props.prefix}-nat`, skuName: "Standard" });
    new NatGatewayPublicIpAssociation(this, "nat-ip-assoc", { natGatewayId: nat.id, publicIpAddressId: ip.id });
    new SubnetNatGatewayAssociation(this, "nat-assoc", { subnetId: functions.id, natGatewayId: nat.id });
    this.functionsSubnetId = functions.id;
    this.databaseSubnetId = database.id;
    this.databaseDnsZoneId = zone.id;
    this.egressIp = ip.ipAddress;
  }
}
