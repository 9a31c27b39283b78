import type { LookupAddress } from "node:dns";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../shared/config.js";
import { createDestinationPolicy, DestinationRefusedError, embeddedIpv4, type Resolver } from "../../shared/outbound/destinationPolicy.js";

/** A fake DNS (named as such): answers from a table, so tests choose what a name resolves to. */
function fakeDns(table: Record<string, string[] | (() => string[])>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve = async (name: string): Promise<LookupAddress[]> => {
    calls.push(name);
    const entry = table[name];
    const addresses = typeof entry === "function" ? entry() : entry;
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return Object.assign(resolve, { calls });
}

const dns = fakeDns({
  "intranet.example.com": ["10.1.2.3"],
  "router.example.com": ["192.168.1.1"],
  "metadata.example.com": ["169.254.169.254"],
  "ula.example.com": ["fd12:3456:789a::1"],
  "mixed.example.com": ["93.184.216.34", "127.0.0.1"],
  "mapped.example.com": ["::ffff:10.0.0.1"],
  "public.example.com": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
  "partner.example.com": ["8.8.8.8"],
});
const policy = createDestinationPolicy({ resolve: dns });

/** The host of a URL the way the transport sees it. */
const hostOf = (url: string) => new URL(url).hostname;

async function refusal(url: string): Promise<unknown> {
  try {
    await policy.resolveChecked(hostOf(url));
    return null;
  } catch (err) {
    return err;
  }
}

// 30 forbidden destinations: every one must be refused.
const FORBIDDEN: Array<[string, string]> = [
  ["IPv4 loopback", "http://127.0.0.1/hook"],
  ["IPv4 loopback, other host", "http://127.8.9.10/"],
  ["loopback as a decimal integer", "http://2130706433/"],
  ["loopback in hex", "http://0x7f000001/"],
  ["this network / unspecified", "http://0.0.0.0/"],
  ["RFC 1918 10/8", "http://10.0.0.1/"],
  ["RFC 1918 172.16/12", "http://172.16.5.4/"],
  ["RFC 1918 172.31 edge", "http://172.31.255.255/"],
  ["RFC 1918 192.168/16", "https://192.168.0.10/"],
  ["link-local / AWS, Azure, GCP metadata", "http://169.254.169.254/latest/meta-data/"],
  ["CGNAT 100.64/10 (Alibaba metadata)", "http://100.100.100.200/"],
  ["IETF protocol assignments", "http://192.0.0.8/"],
  ["benchmarking 198.18/15", "http://198.18.0.1/"],
  ["documentation TEST-NET-3", "http://203.0.113.7/"],
  ["multicast", "http://224.0.0.1/"],
  ["reserved 240/4", "http://240.1.2.3/"],
  ["broadcast", "http://255.255.255.255/"],
  ["IPv6 loopback", "http://[::1]/"],
  ["IPv6 unspecified", "http://[::]/"],
  ["IPv6 unique-local fc00::/7", "http://[fd00:ec2::254]/"],
  ["IPv6 link-local fe80::/10", "http://[fe80::1]/"],
  ["IPv6 multicast", "http://[ff02::1]/"],
  ["IPv4-mapped IPv6 loopback", "http://[::ffff:127.0.0.1]/"],
  ["IPv4-mapped IPv6 metadata", "http://[::ffff:169.254.169.254]/"],
  ["NAT64 carrying a private address", "http://[64:ff9b::10.0.0.1]/"],
  ["6to4 carrying loopback", "http://[2002:7f00:1::]/"],
  ["IPv6 documentation", "http://[2001:db8::1]/"],
  ["name localhost", "http://localhost:8080/"],
  ["name *.localhost", "http://api.localhost/"],
  ["GCP metadata name", "http://metadata.google.internal/computeMetadata/v1/"],
  ["bare metadata name", "http://metadata/"],
  ["mDNS .local name", "http://printer.local/"],
  ["name resolving to 10/8", "https://intranet.example.com/hook"],
  ["name resolving to 192.168/16", "https://router.example.com/"],
  ["name resolving to the metadata address", "https://metadata.example.com/"],
  ["name resolving to unique-local IPv6", "https://ula.example.com/"],
  ["name resolving to IPv4-mapped private", "https://mapped.example.com/"],
  ["name with one public and one loopback address", "https://mixed.example.com/"],
];

describe("destination policy (SSRF)", () => {
  it("has a table of at least 20 forbidden destinations", () => {
    expect(FORBIDDEN.length).toBeGreaterThanOrEqual(20);
  });

  it.each(FORBIDDEN)("refuses %s: %s", async (_label, url) => {
    const err = await refusal(url);
    expect(err).toBeInstanceOf(DestinationRefusedError);
    expect((err as DestinationRefusedError).code).toBe("ERR_DESTINATION_REFUSED");
    expect((err as Error).message).toMatch(/ALLOWED_DESTINATIONS/);
  });

  it.each([
    ["public IPv4", "https://93.184.216.34/"],
    ["public IPv4 next to 172.16/12", "http://172.32.0.1/"],
    ["public IPv4 next to CGNAT", "http://100.128.0.1/"],
    ["public IPv6", "https://[2606:4700:4700::1111]/"],
    ["IPv4-mapped public", "http://[::ffff:8.8.8.8]/"],
    ["NAT64 carrying a public address", "http://[64:ff9b::8.8.8.8]/"],
    ["name resolving to public v4 and v6", "https://public.example.com/hook"],
  ])("allows %s: %s", async (_label, url) => {
    expect(await refusal(url)).toBeNull();
  });

  it("DNS rebinding: a name that resolved public and now resolves private is refused on the new answer", async () => {
    let answer = "93.184.216.34";
    const rebinding = fakeDns({ "rebind.example.com": () => [answer] });
    const p = createDestinationPolicy({ resolve: rebinding });
    await expect(p.resolveChecked("rebind.example.com")).resolves.toEqual([{ address: "93.184.216.34", family: 4 }]);
    answer = "127.0.0.1";
    await expect(p.resolveChecked("rebind.example.com")).rejects.toBeInstanceOf(DestinationRefusedError);
    expect(rebinding.calls).toEqual(["rebind.example.com", "rebind.example.com"]);
  });

  it("the socket lookup refuses in both callback shapes (single address and all: true)", async () => {
    const viaLookup = (all: boolean) =>
      new Promise<{ err: unknown; address: unknown }>((resolve) => policy.lookup("intranet.example.com", { all }, (err, address) => resolve({ err, address })));
    for (const all of [false, true]) {
      const { err } = await viaLookup(all);
      expect(err).toBeInstanceOf(DestinationRefusedError);
    }
    const ok = await new Promise<unknown>((resolve) => policy.lookup("partner.example.com", { all: true }, (_e, a) => resolve(a)));
    expect(ok).toEqual([{ address: "8.8.8.8", family: 4 }]);
    const single = await new Promise<unknown[]>((resolve) => policy.lookup("partner.example.com", {}, (_e, a, f) => resolve([a, f])));
    expect(single).toEqual(["8.8.8.8", 4]);
  });

  describe("allow-list", () => {
    const allowed = createDestinationPolicy({
      resolve: dns,
      allowed: ["localhost", "*.internal.test", "127.0.0.1", "10.1.0.0/16", "fd12::/16", "intranet.example.com"],
    });

    it.each([
      ["allow-listed name", "localhost"],
      ["allow-listed wildcard", "hooks.internal.test"],
      ["allow-listed IP", "127.0.0.1"],
      ["IPv4-mapped form of an allow-listed IP", "[::ffff:127.0.0.1]"],
      ["IP inside an allow-listed CIDR", "10.1.200.3"],
      ["IPv6 inside an allow-listed CIDR", "[fd12::9]"],
    ])("exempts an %s (%s)", (_label, host) => {
      expect(() => allowed.checkHost(host)).not.toThrow();
    });

    it("exempts a name whose addresses are private when the name itself is listed", async () => {
      await expect(allowed.resolveChecked("intranet.example.com")).resolves.toEqual([{ address: "10.1.2.3", family: 4 }]);
    });

    it("still refuses what the list does not cover", async () => {
      expect(() => allowed.checkHost("127.0.0.2")).toThrow(DestinationRefusedError);
      expect(() => allowed.checkHost("10.2.0.1")).toThrow(DestinationRefusedError);
      expect(() => allowed.checkHost("api.localhost")).toThrow(DestinationRefusedError);
      await expect(allowed.resolveChecked("router.example.com")).rejects.toBeInstanceOf(DestinationRefusedError);
    });

    it.each([["10.0.0.0/33"], ["not a host!"], ["::1/200"]])("rejects the malformed entry %s at construction", (entry) => {
      expect(() => createDestinationPolicy({ allowed: [entry] })).toThrow(/ALLOWED_DESTINATIONS entry/);
    });

    // An empty prefix once read as /0 (Number("") is 0): "10.0.0.0/" allowed every IPv4 address,
    // loopback and metadata included. Every prefix that is not plain digits in range is refused.
    it.each([
      ["10.0.0.0/"], ["fd00::/"], ["10.0.0.0/ 8"], ["10.0.0.0/0x8"], ["10.0.0.0/1e1"], ["10.0.0.0/8.0"],
      ["10.0.0.0/-1"], ["10.0.0.0/+8"], ["10.0.0.0/8/8"], ["10.0.0.0//8"], ["fd00::/8/"], ["::/129"],
    ])("refuses the CIDR %s with a configuration error naming it", (entry) => {
      let error: unknown;
      try {
        createDestinationPolicy({ allowed: [entry] });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toContain(`ALLOWED_DESTINATIONS entry "${entry}"`);
      expect((error as Error).message).toMatch(/prefix/);
    });
  });

  it("reads the IPv4 carried by mapped, NAT64 and 6to4 addresses", () => {
    expect(embeddedIpv4("::ffff:7f00:1")).toBe("127.0.0.1");
    expect(embeddedIpv4("64:ff9b::a00:1")).toBe("10.0.0.1");
    expect(embeddedIpv4("2002:c0a8:101::1")).toBe("192.168.1.1");
    expect(embeddedIpv4("2606:4700::1111")).toBeNull();
  });
});
