/**
 * Destination policy (SSRF). A webhook URL is supplied by a customer, so without a policy our relay
 * would POST, from inside our network, to anything it names: 127.0.0.1, the database, the cloud
 * metadata service at 169.254.169.254. This module decides which addresses a delivery may reach.
 *
 * The check is made on the address actually connected to: the transport hands `policy.lookup` to
 * the socket, so every address DNS returns is checked at connect time (a name that resolved to a
 * public address when the subscription was created and to 10.0.0.5 now, "DNS rebinding", is refused),
 * and IP literals, which the socket never resolves, are checked by `checkHost` before connecting.
 *
 * Refused: IPv4 this-network 0/8, RFC 1918 private, loopback 127/8, link-local 169.254/16 (cloud
 * metadata), CGNAT 100.64/10, IETF protocol 192.0.0/24, documentation and benchmarking ranges,
 * 6to4 relay anycast, multicast, reserved 240/4 and broadcast; every IPv6 address outside global
 * unicast 2000::/3 (so ::, ::1, fc00::/7, fe80::/10, ff00::/8), documentation 2001:db8::/32,
 * Teredo 2001::/32, ORCHID 2001:10::/28 and 2001:20::/28; IPv4 embedded in IPv6 (mapped
 * ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16) is judged as the IPv4 it carries; names
 * `localhost`, `*.localhost`, `*.local`, `*.internal` (metadata.google.internal) and bare `metadata`.
 *
 * The allow-list (hostnames, `*.suffix` wildcards, IPs, CIDRs) exempts destinations: a listed
 * hostname may resolve anywhere; a listed IP or CIDR may be connected to whatever name led there.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP } from "node:net";
import { ConfigError } from "../config.js";

/** Error code carried by a refusal, whichever layer (lookup, connect) raised it. */
export const DESTINATION_REFUSED = "ERR_DESTINATION_REFUSED";

/** A destination the policy refuses. The transport classifies it as permanent, `destination_refused`. */
export class DestinationRefusedError extends Error {
  override name = "DestinationRefusedError";
  readonly code = DESTINATION_REFUSED;
  constructor(
    /** The host name or IP literal of the URL. */
    readonly host: string,
    /** The offending address, when the refusal is about an address. */
    readonly address: string | null,
    readonly reason: string,
  ) {
    super(
      `Destination ${host}${address && address !== host ? ` (${address})` : ""} refused: ${reason}. ` +
        "Webhook URLs must reach public addresses; for a local demo or test add the host to ALLOWED_DESTINATIONS.",
    );
  }
}

/**
 * Why deliveries to `url` are refused before any lookup (its host an IP literal the policy refuses,
 * or a local name such as `localhost`), naming the setting that allows it; null when nothing
 * refuses it so. Names that resolve to private addresses are refused only when delivered (then the
 * dead letter says so): this check makes no DNS request.
 */
export function refusalOfUrl(policy: Pick<DestinationPolicy, "checkHost">, url: string): string | null {
  // A queue destination's `url` is a description (sqs:…, rabbitmq:…; destinations/config.ts), checked at creation.
  if (!url.startsWith("https://") && !url.startsWith("http://")) return null;
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return null;
  }
  try {
    policy.checkHost(host);
    return null;
  } catch (error) {
    if (!(error instanceof DestinationRefusedError)) throw error;
    return `${error.host} is refused by the destination policy (${error.reason}): deliveries to it are dead-lettered as destination_refused; add ${error.host} to ALLOWED_DESTINATIONS to deliver there`;
  }
}

/** The `dns.lookup` shape, with `all: true`: every address of a name. Injectable for tests. */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

/** The callback-style lookup `net.connect` / `tls.connect` accept (`all` may or may not be set). */
export type SocketLookup = (
  hostname: string,
  options: { all?: boolean; family?: number | string } | number,
  callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
) => void;

export interface DestinationPolicyOptions {
  /** Exempt destinations: hostnames, `*.example.com`, IPs, CIDRs (`10.1.0.0/16`, `fd00::/8`). Default: none. */
  allowed?: readonly string[];
  /** How names are resolved. Default: the system resolver (`dns.lookup`, all addresses). */
  resolve?: Resolver;
}

export interface DestinationPolicy {
  /** Why `address` (an IP) may not be connected to, or null when it may. */
  refusalFor(address: string): string | null;
  /** Checks a URL host before any connection: refused names and IP literals throw. */
  checkHost(host: string): void;
  /** Whether `host` (a name or IP literal) is exempt by the allow-list. */
  isAllowedHost(host: string): boolean;
  /** Resolves `hostname` and throws DestinationRefusedError if any address is refused. */
  resolveChecked(hostname: string): Promise<LookupAddress[]>;
  /** `resolveChecked` in the shape `net.connect({ lookup })` expects. */
  readonly lookup: SocketLookup;
}

const BLOCKED_V4: Array<[string, number]> = [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16],
  ["172.16.0.0", 12], ["192.0.0.0", 24], ["192.0.2.0", 24], ["192.88.99.0", 24], ["192.168.0.0", 16],
  ["198.18.0.0", 15], ["198.51.100.0", 24], ["203.0.113.0", 24], ["224.0.0.0", 4], ["240.0.0.0", 4],
];
const BLOCKED_V6: Array<[string, number]> = [
  ["2001:db8::", 32], ["2001::", 32], ["2001:10::", 28], ["2001:20::", 28],
];
const GLOBAL_UNICAST_V6 = new BlockList();
GLOBAL_UNICAST_V6.addSubnet("2000::", 3, "ipv6");
const BLOCKED = new BlockList();
for (const [net, prefix] of BLOCKED_V4) BLOCKED.addSubnet(net, prefix, "ipv4");
for (const [net, prefix] of BLOCKED_V6) BLOCKED.addSubnet(net, prefix, "ipv6");

const REFUSED_NAME = /(^|\.)(localhost|local|internal)$|^metadata$/;

/** Strips a trailing dot and URL brackets, lower-cases: the form every check compares. */
export function normaliseHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.endsWith(".")) h = h.slice(0, -1);
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  return h;
}

/** The 16 bytes of a valid IPv6 address (`isIP` says 6), its zone (`%eth0`) dropped. */
function ipv6Bytes(address: string): number[] {
  let text = address.split("%")[0] ?? address;
  // A trailing dotted quad (::ffff:10.0.0.1) stands for the last two groups.
  const lastColon = text.lastIndexOf(":");
  const last = text.slice(lastColon + 1);
  if (last.includes(".")) {
    const [a, b, c, d] = last.split(".").map(Number) as [number, number, number, number];
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const groupsOf = (part = "") => (part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)));
  const [head, tail] = text.split("::");
  const left = groupsOf(head);
  const right = groupsOf(tail);
  const groups = [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  return groups.flatMap((g) => [g >> 8, g & 0xff]);
}

const v4From = (b: number[], at: number) => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;
const zeros = (b: number[], from: number, to: number) => b.slice(from, to).every((x) => x === 0);

/** The IPv4 address an IPv6 address carries (mapped, NAT64 well-known prefix, 6to4), if any. */
export function embeddedIpv4(address: string): string | null {
  if (isIP(address) !== 6) return null;
  const b = ipv6Bytes(address);
  if (zeros(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return v4From(b, 12); // ::ffff:a.b.c.d
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(b, 4, 12)) return v4From(b, 12); // 64:ff9b::/96
  if (b[0] === 0x20 && b[1] === 0x02) return v4From(b, 2); // 2002:AABB:CCDD::/48
  return null;
}

function refusalForIp(address: string): string | null {
  const family = isIP(address);
  if (family === 4) return BLOCKED.check(address, "ipv4") ? "non-public IPv4 address" : null;
  if (family !== 6) return "not an IP address";
  const carried = embeddedIpv4(address);
  if (carried) {
    const inner = refusalForIp(carried);
    return inner ? `IPv6 address carrying ${carried}, a ${inner}` : null;
  }
  // BlockList reads a zone (fe80::1%eth0) itself.
  if (!GLOBAL_UNICAST_V6.check(address, "ipv6")) return "non-global IPv6 address (loopback, unspecified, unique-local, link-local or multicast)";
  return BLOCKED.check(address, "ipv6") ? "reserved IPv6 address" : null;
}

/** A CIDR prefix length as written: digits only (`Number` would read "" as 0, "0x8" as 8, " 8" as 8). */
const PREFIX_DIGITS = /^\d{1,3}$/;
const HOST_NAME = /^[a-z0-9_.-]+$/;

const badEntry = (raw: string, problem: string) =>
  new ConfigError(`ALLOWED_DESTINATIONS entry "${raw}" ${problem}. Write a hostname, *.suffix, an IP or a CIDR such as 10.0.0.0/8 or fd00::/8, comma-separated.`);

/** Parses allow-list entries; throws a ConfigError naming the entry at fault. */
function parseAllowList(entries: readonly string[]) {
  const names = new Set<string>();
  // Stryker disable next-line ArrayDeclaration: equivalent: a suffix with capitals and spaces ("Stryker was here") matches no normalised host
  const suffixes: string[] = [];
  const nets = new BlockList();
  for (const raw of entries) {
    const entry = normaliseHost(raw);
    if (!entry) continue;
    const slash = entry.indexOf("/");
    const base = normaliseHost(slash === -1 ? entry : entry.slice(0, slash));
    const prefixText = slash === -1 ? undefined : entry.slice(slash + 1);
    const family = isIP(base);
    if (family) {
      const max = family === 4 ? 32 : 128;
      // An empty prefix once read as /0 and allowed every address: only digits in range count.
      const prefix = prefixText === undefined ? max : PREFIX_DIGITS.test(prefixText) ? Number(prefixText) : Number.NaN;
      if (Number.isNaN(prefix) || prefix > max) throw badEntry(raw, `has a bad CIDR prefix: it must be a whole number from 0 to ${max}`);
      nets.addSubnet(base, prefix, family === 4 ? "ipv4" : "ipv6");
    } else if (prefixText !== undefined) {
      throw badEntry(raw, "has a prefix, but what comes before the slash is not an IP address");
    } else if (entry.startsWith("*.") && HOST_NAME.test(entry.slice(2))) {
      suffixes.push(entry.slice(1));
    } else if (HOST_NAME.test(entry)) {
      names.add(entry);
    } else {
      throw badEntry(raw, "is neither a hostname, *.suffix, IP nor CIDR");
    }
  }
  return { names, suffixes, nets };
}

const systemResolve: Resolver = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true }, (err, addrs) => (err ? reject(err) : resolve(addrs))));

/** Builds the policy. Invalid allow-list entries throw here, at start, not at delivery time. */
export function createDestinationPolicy(options: DestinationPolicyOptions = {}): DestinationPolicy {
  const allow = parseAllowList(options.allowed ?? []);
  const resolve = options.resolve ?? systemResolve;

  const ipAllowed = (address: string): boolean => {
    const family = isIP(address);
    if (family === 4) return allow.nets.check(address, "ipv4");
    // BlockList matches a mapped ::ffff:a.b.c.d against IPv4 entries itself (and no IPv6 entry
    // matches what is not an address); NAT64 and 6to4 are read here.
    const carried = embeddedIpv4(address);
    return allow.nets.check(address, "ipv6") || (carried !== null && allow.nets.check(carried, "ipv4"));
  };
  const isAllowedHost = (host: string): boolean => {
    const h = normaliseHost(host);
    if (isIP(h)) return ipAllowed(h);
    return allow.names.has(h) || allow.suffixes.some((s) => h.endsWith(s));
  };
  const refusalFor = (address: string): string | null => {
    const a = normaliseHost(address);
    return ipAllowed(a) ? null : refusalForIp(a);
  };
  const checkHost = (host: string): void => {
    const h = normaliseHost(host);
    if (isAllowedHost(h)) return;
    if (isIP(h)) {
      const reason = refusalForIp(h);
      if (reason) throw new DestinationRefusedError(h, h, reason);
    } else if (REFUSED_NAME.test(h)) {
      throw new DestinationRefusedError(h, null, "local or internal host name");
    }
  };
  const resolveChecked = async (hostname: string): Promise<LookupAddress[]> => {
    const h = normaliseHost(hostname);
    checkHost(h);
    if (isIP(h)) return [{ address: h, family: isIP(h) }];
    const addresses = await resolve(h);
    if (addresses.length === 0) throw Object.assign(new Error(`${h} has no address`), { code: "ENOTFOUND" });
    if (isAllowedHost(h)) return addresses;
    for (const { address } of addresses) {
      const reason = refusalFor(address);
      if (reason) throw new DestinationRefusedError(h, address, reason);
    }
    return addresses;
  };
  const lookup: SocketLookup = (hostname, opts, callback) => {
    const { all, family: wanted } = typeof opts === "number" ? { all: false, family: opts } : opts;
    const family = Number(wanted ?? 0) || 0;
    resolveChecked(hostname).then(
      (addresses) => {
        const fitting = family ? addresses.filter((a) => a.family === family) : addresses;
        const first = fitting[0];
        // Stryker disable next-line ArrayDeclaration: equivalent: net and tls never read the address passed with an error
        if (!first) return callback(Object.assign(new Error(`${hostname} has no IPv${family} address`), { code: "ENOTFOUND" }), []);
        if (all === true) callback(null, fitting);
        else callback(null, first.address, first.family);
      },
      // Stryker disable next-line ArrayDeclaration: equivalent: net and tls never read the address passed with an error
      (err: NodeJS.ErrnoException) => callback(err, []),
    );
  };
  return { refusalFor, checkHost, isAllowedHost, resolveChecked, lookup };
}
