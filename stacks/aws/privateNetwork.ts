/**
 * The VPC the database and the VPC-attached functions live in: two private subnets (Aurora
 * needs two availability zones), one public subnet holding the NAT gateway through which the
 * relay reaches webhook endpoints on the internet, and the two security groups.
 */
import { Fn } from "cdktf";
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
  /** Attached to the processor and relay functions. */
  readonly functionSecurityGroupId: string;
  /** Attached to the database: accepts PostgreSQL from the functions' group only. */
  readonly databaseSecurityGroupId: string;

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
    // One NAT gateway: the relay's only way out to the internet (and to SQS/Secrets Manager
    // endpoints). Its elastic IP is the fixed source address receivers can allow-list.
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
    privateSubnets.forEach((subnet, i) => new RouteTableAssociation(this, `private-assoc${i}`, { subnetId: subnet.id, routeTableId: privateRoutes.id }));

    const functions = new SecurityGroup(this, "functions-sg", {
      name: `${props.prefix}-functions`,
      description: "Processor and relay functions",
      vpcId: vpc.id,
    });
    // Outbound HTTPS to webhook endpoints and AWS APIs, PostgreSQL to the database; nothing inbound.
    new VpcSecurityGroupEgressRule(this, "functions-https", {
      securityGroupId: functions.id,
      description: "HTTPS to webhook endpoints and AWS APIs",
      ipProtocol: "tcp",
      fromPort: 443,
      toPort: 443,
      cidrIpv4: "0.0.0.0/0",
    });
    const database = new SecurityGroup(this, "database-sg", {
      name: `${props.prefix}-database`,
      description: "Aurora PostgreSQL, reachable from the functions only",
      vpcId: vpc.id,
    });
    new VpcSecurityGroupEgressRule(this, "functions-postgres", {
      securityGroupId: functions.id,
      description: "PostgreSQL to the database",
      ipProtocol: "tcp",
      fromPort: 5432,
      toPort: 5432,
      referencedSecurityGroupId: database.id,
    });
    new VpcSecurityGroupIngressRule(this, "database-from-functions", {
      securityGroupId: database.id,
      description: "PostgreSQL from the functions",
      ipProtocol: "tcp",
      fromPort: 5432,
      toPort: 5432,
      referencedSecurityGroupId: functions.id,
    });
    this.privateSubnetIds = privateSubnets.map((s) => s.id);
    this.functionSecurityGroupId = functions.id;
    this.databaseSecurityGroupId = database.id;
  }
}
