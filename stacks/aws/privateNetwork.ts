/**
 * The VPC the database and the VPC-attached functions live in: two private subnets (Aurora
 * needs two availability zones), one public subnet holding the NAT gateway through which the
 * functions reach AWS APIs and the relay webhook endpoints on the internet, and three security
 * groups (database; processor and migrate; relay).
 */
import { Fn, type ITerraformDependable } from "cdktf";
import { Construct } from "constructs";
import { DataAwsAvailabilityZones } from "@cdktf/provider-aws/lib/data-aws-availability-zones/index.js";
import { Eip } from "@cdktf/provider-aws/lib/eip/index.js";
import { InternetGateway } from "@cdktf/provider-aws/lib/internet-gateway/index.js";
import { NatGateway } from "@cdktf/provider-aws/lib/nat-gateway/index.js";
import { RouteTable } from "@cdktf/provider-aws/lib/route-table/index.js";
import { RouteTableAssociation } from "@cdktf/provider-aws/lib/route-table-association/index.js";
import { SecurityGroup } from "@cdktf/provider-aws/lib/security-group/index.js";
import { Subnet } from "@cdktf/provider-aws/lib/subnet/index.js";
import { Vpc } from "@cdktf/provider-aws/lib/vpc/index.js";
import { VpcSecurityGroupEgressRule } from "@cdktf/provider-aws/lib/vpc-security-group-egress-rule/index.js";
import { VpcSecurityGroupIngressRule } from "@cdktf/provider-aws/lib/vpc-security-group-ingress-rule/index.js";

export class PrivateNetwork extends Construct {
  readonly privateSubnetIds: string[];
  /** Attached to the processor and migrate functions: HTTPS out, PostgreSQL to the database. */
  readonly workerSecurityGroupId: string;
  /** Attached to the relay: any TCP port out (webhook endpoints), PostgreSQL to the database. */
  readonly relaySecurityGroupId: string;
  /** Attached to the database: accepts PostgreSQL from the two function groups only. */
  readonly databaseSecurityGroupId: string;
  /** The NAT gateway's elastic IP: every call from the VPC functions to the internet leaves from it. */
  readonly egressIp: string;
  /** What a VPC function needs before it can reach the internet (the NAT gateway and its route). */
  readonly egressReady: ITerraformDependable[];

  constructor(scope: Construct, id: string, props: { prefix: string }) {
    super(scope, id);
    const zones = new DataAwsAvailabilityZones(this, "zones", { state: "available" });
    const vpc = new Vpc(this, "vpc", {
      cidrBlock: "10.40.0.0/16",
      enableDnsHostnames: true,
      enableDnsSupport: true,
      tags: { Name: `${props.prefix}-vpc` },
    });
    const publicSubnet = new Subnet(this, "public", {
      vpcId: vpc.id,
      cidrBlock: "10.40.0.0/24",
      availabilityZone: Fn.element(zones.names, 0),
      tags: { Name: `${props.prefix}-public` },
    });
    const privateSubnets = [0, 1].map(
      (i) =>
        new Subnet(this, `private${i}`, {
          vpcId: vpc.id,
          cidrBlock: `10.40.${10 + i}.0/24`,
          availabilityZone: Fn.element(zones.names, i),
          tags: { Name: `${props.prefix}-private-${i}` },
        }),
    );
    const gateway = new InternetGateway(this, "igw", { vpcId: vpc.id });
    const natIp = new Eip(this, "nat-ip", { domain: "vpc", tags: { Name: `${props.prefix}-nat` } });
    // One NAT gateway: the VPC functions' only way out to the internet (and to SQS/Secrets
    // Manager endpoints). Its elastic IP is the fixed source address receivers can allow-list.
    const nat = new NatGateway(this, "nat", { allocationId: natIp.id, subnetId: publicSubnet.id, dependsOn: [gateway] });
    const publicRoutes = new RouteTable(this, "public-routes", {
      vpcId: vpc.id,
      route: [{ cidrBlock: "0.0.0.0/0", gatewayId: gateway.id }],
    });
    new RouteTableAssociation(this, "public-assoc", { subnetId: publicSubnet.id, routeTableId: publicRoutes.id });
    const privateRoutes = new RouteTable(this, "private-routes", {
      vpcId: vpc.id,
      route: [{ cidrBlock: "0.0.0.0/0", natGatewayId: nat.id }],
    });
    const privateAssociations = privateSubnets.map((subnet, i) => new RouteTableAssociation(this, `private-assoc${i}`, { subnetId: subnet.id, routeTableId: privateRoutes.id }));

    const database = new SecurityGroup(this, "database-sg", {
      name: `${props.prefix}-database`,
      description: "Aurora PostgreSQL, reachable from the functions only",
      vpcId: vpc.id,
    });
    // The processor and migrate call AWS APIs (HTTPS through the NAT gateway) and the database.
    const workers = new SecurityGroup(this, "workers-sg", {
      name: `${props.prefix}-workers`,
      description: "Processor and migrate functions",
      vpcId: vpc.id,
    });
    new VpcSecurityGroupEgressRule(this, "workers-https", {
      securityGroupId: workers.id,
      description: "HTTPS to AWS APIs (SQS, S3, Secrets Manager)",
      ipProtocol: "tcp",
      fromPort: 443,
      toPort: 443,
      cidrIpv4: "0.0.0.0/0",
    });
    // The relay delivers to subscription URLs, which may name any port (and http:): every TCP
    // port is open, and the destination policy in code refuses private, loopback and metadata
    // addresses on the address actually connected to, which a security group cannot express.
    const relay = new SecurityGroup(this, "relay-sg", {
      name: `${props.prefix}-relay`,
      description: "Relay function: webhook endpoints on any TCP port",
      vpcId: vpc.id,
    });
    new VpcSecurityGroupEgressRule(this, "relay-any-tcp", {
      securityGroupId: relay.id,
      description: "Webhook endpoints on any TCP port (checked in code) and AWS APIs",
      ipProtocol: "tcp",
      fromPort: 0,
      toPort: 65535,
      cidrIpv4: "0.0.0.0/0",
    });
    for (const [name, group] of [["workers", workers], ["relay", relay]] as const) {
      new VpcSecurityGroupEgressRule(this, `${name}-postgres`, {
        securityGroupId: group.id,
        description: "PostgreSQL to the database",
        ipProtocol: "tcp",
        fromPort: 5432,
        toPort: 5432,
        referencedSecurityGroupId: database.id,
      });
      new VpcSecurityGroupIngressRule(this, `database-from-${name}`, {
        securityGroupId: database.id,
        description: `PostgreSQL from the ${name} functions`,
        ipProtocol: "tcp",
        fromPort: 5432,
        toPort: 5432,
        referencedSecurityGroupId: group.id,
      });
    }
    this.privateSubnetIds = privateSubnets.map((s) => s.id);
    this.workerSecurityGroupId = workers.id;
    this.relaySecurityGroupId = relay.id;
    this.databaseSecurityGroupId = database.id;
    this.egressIp = natIp.publicIp;
    this.egressReady = [nat, ...privateAssociations];
  }
}
