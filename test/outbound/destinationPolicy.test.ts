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

describe("destination policy: every range and its edges", () => {
  const bare = createDestinationPolicy({ resolve: fakeDns({}) });

  // Each blocked IPv4 range: its first and last address refused, the addresses just outside allowed.
  it.each([
    ["0.0.0.0/8", "0.0.0.0", "0.255.255.255", null, "1.0.0.0"],
    ["10.0.0.0/8", "10.0.0.0", "10.255.255.255", "9.255.255.255", "11.0.0.0"],
    ["100.64.0.0/10", "100.64.0.0", "100.127.255.255", "100.63.255.255", "100.128.0.0"],
    ["127.0.0.0/8", "127.0.0.0", "127.255.255.255", "126.255.255.255", "128.0.0.0"],
    ["169.254.0.0/16", "169.254.0.0", "169.254.255.255", "169.253.255.255", "169.255.0.0"],
    ["172.16.0.0/12", "172.16.0.0", "172.31.255.255", "172.15.255.255", "172.32.0.0"],
    ["192.0.0.0/24", "192.0.0.0", "192.0.0.255", "191.255.255.255", "192.0.1.0"],
    ["192.0.2.0/24", "192.0.2.0", "192.0.2.255", "192.0.1.255", "192.0.3.0"],
    ["192.88.99.0/24", "192.88.99.0", "192.88.99.255", "192.88.98.255", "192.88.100.0"],
    ["192.168.0.0/16", "192.168.0.0", "192.168.255.255", "192.167.255.255", "192.169.0.0"],
    ["198.18.0.0/15", "198.18.0.0", "198.19.255.255", "198.17.255.255", "198.20.0.0"],
    ["198.51.100.0/24", "198.51.100.0", "198.51.100.255", "198.51.99.255", "198.51.101.0"],
    ["203.0.113.0/24", "203.0.113.0", "203.0.113.255", "203.0.112.255", "203.0.114.0"],
    ["224.0.0.0/4 and 240.0.0.0/4", "224.0.0.0", "255.255.255.255", "223.255.255.255", null],
  ])("IPv4 %s: %s and %s refused, %s and %s allowed", (_range, first, last, below, above) => {
    for (const address of [first, last]) expect(bare.refusalFor(address)).toBe("non-public IPv4 address");
    for (const address of [below, above]) if (address) expect(bare.refusalFor(address)).toBeNull();
  });

  it.each([
    ["2001:db8::/32", "2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::"],
    ["Teredo 2001::/32", "2001::", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff", null, "2001:1::"],
    ["ORCHID 2001:10::/28", "2001:10::", "2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", "2001:f:ffff:ffff:ffff:ffff:ffff:ffff", null],
    ["ORCHIDv2 2001:20::/28", "2001:20::", "2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", null, "2001:30::"],
  ])("IPv6 %s: %s and %s refused as reserved, %s and %s allowed", (_range, first, last, below, above) => {
    for (const address of [first, last]) expect(bare.refusalFor(address)).toBe("reserved IPv6 address");
    for (const address of [below, above]) if (address) expect(bare.refusalFor(address)).toBeNull();
  });

  it.each([
    ["unspecified", "::"], ["loopback", "::1"], ["unique-local fc00::/7, first", "fc00::"], ["unique-local, last", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"],
    ["link-local", "fe80::1"], ["link-local with a zone", "fe80::1%eth0"], ["multicast", "ff02::1"], ["just below 2000::/3", "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"],
    ["just above 2000::/3", "4000::"], ["IPv4-compatible (deprecated)", "::808:808"], ["local-use NAT64 64:ff9b:1::/48", "64:ff9b:1::808:808"],
  ])("IPv6 outside global unicast is refused: %s (%s)", (_label, address) => {
    expect(bare.refusalFor(address)).toBe("non-global IPv6 address (loopback, unspecified, unique-local, link-local or multicast)");
  });

  it.each([
    ["first of 2000::/3", "2000::"], ["last of 2000::/3", "3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"], ["a public address", "2606:4700:4700::1111"],
    ["a public address with a zone", "2606:4700:4700::1111%eth0"],
    ["a public address whose low 48 bits look like ::ffff:10.0.0.1", "2606:4700::ffff:a00:1"],
    ["a public address whose low bits look like NAT64 of 10.0.0.1", "2606:64:ff9b::a00:1"],
    ["a public address close to 6to4 carrying 10.0.0.1", "2102:a00:1::"],
  ])("IPv6 in global unicast is allowed: %s (%s)", (_label, address) => {
    expect(bare.refusalFor(address)).toBeNull();
  });

  it.each([
    ["::ffff:127.0.0.1", "127.0.0.1"], ["::ffff:7f00:1", "127.0.0.1"], ["::FFFF:192.168.100.200", "192.168.100.200"], ["::ffff:10.20.30.40%eth0", "10.20.30.40"],
    ["0:0:0:0:0:ffff:a9fe:a9fe", "169.254.169.254"], ["64:ff9b::203.0.113.77", "203.0.113.77"], ["64:ff9b::a00:1", "10.0.0.1"], ["64:ff9b:0:0:0:0:808:808", "8.8.8.8"],
    ["2002:c0a8:101::1", "192.168.1.1"], ["2002:a9fe:a9fe:1:2:3:4:5", "169.254.169.254"], ["2002:808:808::", "8.8.8.8"],
  ])("%s carries %s", (address, carried) => {
    expect(embeddedIpv4(address)).toBe(carried);
  });

  it.each([
    ["not an address"], ["10.0.0.1"], ["1:2:3"], ["::1"], ["::808:808"], ["::ff:808:808"], ["::ff00:808:808"], ["::fffe:808:808"], ["1::ffff:808:808"],
    ["2606:4700::ffff:808:808"], ["0:9b::808:808"], ["1:ff9b::808:808"], ["164:ff9b::808:808"], ["65:ff9b::808:808"], ["64:fe9b::808:808"],
    ["64:ff9a::808:808"], ["64:ff9b:1::808:808"], ["64:ff9b::1:808:808"], ["2003:808:808::"], ["2102:808:808::"], ["2606:4700::1111"],
    ["2002:zz"], ["::ffff:zz"], ["64:ff9b::zz"],
  ])("%s carries no IPv4", (address) => {
    expect(embeddedIpv4(address)).toBeNull();
  });

  it.each([
    ["mapped", "::ffff:10.0.0.1", "10.0.0.1"], ["NAT64", "64:ff9b::a9fe:a9fe", "169.254.169.254"], ["6to4", "2002:c0a8:101::", "192.168.1.1"],
  ])("an IPv6 address carrying a private IPv4 (%s) is refused as that IPv4", (_form, address, carried) => {
    expect(bare.refusalFor(address)).toBe(`IPv6 address carrying ${carried}, a non-public IPv4 address`);
  });

  it.each([["::ffff:8.8.8.8"], ["64:ff9b::808:808"], ["2002:808:808::1"]])("an IPv6 address carrying a public IPv4 is allowed: %s", (address) => {
    expect(bare.refusalFor(address)).toBeNull();
  });

  it("an answer that is not an IP address is refused", () => {
    expect(bare.refusalFor("example.com")).toBe("not an IP address");
    expect(createDestinationPolicy({ allowed: ["10.0.0.0/8", "fd00::/8"] }).refusalFor("example.com")).toBe("not an IP address");
  });
});

describe("destination policy: host names", () => {
  const dnsTable = fakeDns({
    "localhost.example.com": ["93.184.216.34"], "local.example.com": ["93.184.216.34"], "internal.example.com": ["93.184.216.34"],
    "cloudmetadata.example.com": ["93.184.216.34"], "metadata.example.org": ["93.184.216.34"], "notlocalhost": ["93.184.216.34"],
    "mymetadata": ["93.184.216.34"], "metadatax": ["93.184.216.34"], "internals": ["93.184.216.34"],
  });
  const p = createDestinationPolicy({ resolve: dnsTable });

  it.each([
    ["localhost"], ["LOCALHOST"], ["LocalHost"], ["localhost."], [" localhost "], ["api.localhost"], ["a.b.localhost."], ["printer.local"],
    ["Printer.LOCAL"], ["metadata.google.internal"], ["metadata.google.internal."], ["Metadata.Google.Internal"], ["metadata"], ["METADATA"], ["metadata."],
    ["internal"], ["local"],
  ])("refuses the name %j before resolving it", async (host) => {
    const err = await p.resolveChecked(host).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DestinationRefusedError);
    expect(err).toMatchObject({ name: "DestinationRefusedError", host: host.trim().toLowerCase().replace(/\.$/, ""), address: null, reason: "local or internal host name" });
    expect(dnsTable.calls).not.toContain(host);
  });

  it.each([
    ["localhost.example.com"], ["local.example.com"], ["internal.example.com"], ["cloudmetadata.example.com"], ["metadata.example.org"],
    ["notlocalhost"], ["mymetadata"], ["metadatax"], ["internals"],
  ])("does not refuse %s, a name that only contains a refused word", async (host) => {
    await expect(p.resolveChecked(host)).resolves.toEqual([{ address: "93.184.216.34", family: 4 }]);
  });

  it.each([
    ["IPv4 literal", "127.0.0.1"], ["IPv4 literal with a trailing dot", "127.0.0.1."], ["IPv6 literal in brackets", "[::1]"], ["IPv6 literal without brackets", "::1"],
    ["bracketed literal with a trailing dot", "[::1]."], ["upper-case IPv6", "[FE80::1]"], ["spaces around", " 10.0.0.1 "],
  ])("checks an %s: %j", (_label, host) => {
    expect(() => p.checkHost(host)).toThrow(DestinationRefusedError);
  });

  it("resolves an IP literal to itself, without DNS", async () => {
    const untouched = fakeDns({});
    const literal = createDestinationPolicy({ resolve: untouched });
    await expect(literal.resolveChecked("8.8.8.8")).resolves.toEqual([{ address: "8.8.8.8", family: 4 }]);
    await expect(literal.resolveChecked("[2606:4700:4700::1111]")).resolves.toEqual([{ address: "2606:4700:4700::1111", family: 6 }]);
    expect(untouched.calls).toEqual([]);
  });

  it("a name with no address is ENOTFOUND, not allowed", async () => {
    const empty = createDestinationPolicy({ resolve: async () => [] });
    await expect(empty.resolveChecked("void.example.com")).rejects.toMatchObject({ code: "ENOTFOUND", message: "void.example.com has no address" });
  });

  it("the refusal says the host, the address when it differs, and what to do", async () => {
    expect(() => p.checkHost("127.0.0.1")).toThrow(
      "Destination 127.0.0.1 refused: non-public IPv4 address. Webhook URLs must reach public addresses; for a local demo or test add the host to ALLOWED_DESTINATIONS.",
    );
    expect(() => p.checkHost("localhost")).toThrow(/^Destination localhost refused: local or internal host name\. /);
    const err = await policy.resolveChecked("intranet.example.com").catch((e: unknown) => e);
    expect(err).toMatchObject({ host: "intranet.example.com", address: "10.1.2.3", reason: "non-public IPv4 address" });
    expect((err as Error).message).toMatch(/^Destination intranet\.example\.com \(10\.1\.2\.3\) refused: non-public IPv4 address\. /);
  });
});

describe("destination policy: the socket lookup", () => {
  const both = fakeDns({ "dual.example.com": ["93.184.216.34", "2606:4700:4700::1111"], "v4.example.com": ["93.184.216.34"] });
  const p = createDestinationPolicy({ resolve: both });
  const call = (host: string, opts: Parameters<typeof p.lookup>[1]) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family: unknown }>((resolve) => p.lookup(host, opts, (err, address, family) => resolve({ err, address, family })));

  it.each([
    ["no family", {}, "93.184.216.34", 4],
    ["family 4", { family: 4 }, "93.184.216.34", 4],
    ["family 6", { family: 6 }, "2606:4700:4700::1111", 6],
    ["family 0 (any)", { family: 0 }, "93.184.216.34", 4],
    ["family as a number argument", 6, "2606:4700:4700::1111", 6],
  ] as const)("single address, %s", async (_label, opts, address, family) => {
    expect(await call("dual.example.com", opts)).toEqual({ err: null, address, family });
  });

  it("all addresses, filtered by family when one is asked for", async () => {
    expect((await call("dual.example.com", { all: true })).address).toEqual([{ address: "93.184.216.34", family: 4 }, { address: "2606:4700:4700::1111", family: 6 }]);
    expect((await call("dual.example.com", { all: true, family: 6 })).address).toEqual([{ address: "2606:4700:4700::1111", family: 6 }]);
  });

  it("no address of the family asked for is ENOTFOUND", async () => {
    const { err } = await call("v4.example.com", { family: 6 });
    expect(err).toMatchObject({ code: "ENOTFOUND", message: "v4.example.com has no IPv6 address" });
  });
});

describe("destination policy: allow-list entries", () => {
  const dnsTable = fakeDns({
    "api.corp.example": ["10.0.0.5"], "deep.api.corp.example": ["10.0.0.6"], "corp.example": ["10.0.0.7"], "evilcorp.example": ["10.0.0.8"],
    "db.example.com": ["10.9.9.9"], "other.example.com": ["10.9.9.9"],
  });
  const allowed = createDestinationPolicy({ resolve: dnsTable, allowed: ["*.corp.example", "db.example.com", "", "  ", "127.0.0.1"] });

  it("*.suffix exempts names under the suffix, not the suffix itself nor a name that merely ends with its letters", async () => {
    await expect(allowed.resolveChecked("api.corp.example")).resolves.toEqual([{ address: "10.0.0.5", family: 4 }]);
    await expect(allowed.resolveChecked("deep.api.corp.example")).resolves.toEqual([{ address: "10.0.0.6", family: 4 }]);
    await expect(allowed.resolveChecked("corp.example")).rejects.toBeInstanceOf(DestinationRefusedError);
    await expect(allowed.resolveChecked("evilcorp.example")).rejects.toBeInstanceOf(DestinationRefusedError);
    expect(allowed.isAllowedHost("API.Corp.Example.")).toBe(true);
    expect(allowed.isAllowedHost("corp.example.evil.com")).toBe(false);
  });

  it("a listed name may resolve anywhere; an unlisted one resolving to the same address is refused", async () => {
    await expect(allowed.resolveChecked("db.example.com")).resolves.toEqual([{ address: "10.9.9.9", family: 4 }]);
    await expect(allowed.resolveChecked("other.example.com")).rejects.toMatchObject({ address: "10.9.9.9" });
  });

  it("a listed IPv4 address also exempts its NAT64 and 6to4 forms", () => {
    for (const host of ["[::ffff:127.0.0.1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]"]) expect(allowed.isAllowedHost(host)).toBe(true);
    expect(allowed.refusalFor("64:ff9b::7f00:1")).toBeNull();
    expect(allowed.refusalFor("64:ff9b::7f00:2")).toMatch(/carrying 127\.0\.0\.2/);
  });

  it("empty entries are skipped", () => {
    expect(allowed.isAllowedHost("")).toBe(false);
  });

  it.each([
    ["10.0.0.0/32", "10.0.0.0", "10.0.0.1"], ["10.0.0.0/0", "255.255.255.255", null], ["10.1.0.0/16", "10.1.255.255", "10.2.0.0"],
    ["fd12::/16", "fd12:ffff::1", "fd13::"], ["fd12:3456::/64", "fd12:3456::ffff", "fd12:3456:0:1::"], ["fd12::1/128", "fd12::1", "fd12::2"],
    ["::/0", "fe80::1", null], [" 10.3.0.0/16 ", "10.3.0.1", "10.4.0.1"], ["[fd99::]/16", "fd99::1", "fd98::1"], ["[fd77::1]", "fd77::1", "fd77::2"],
    ["fd55::1%eth0", "fd55::1", "fd55::2"],
  ])("the CIDR %j exempts %s and not %s", (entry, inside, outside) => {
    const p = createDestinationPolicy({ allowed: [entry] });
    expect(p.refusalFor(inside)).toBeNull();
    expect(p.refusalFor(`${inside}%eth0`)).toBe(inside.includes(":") ? null : "not an IP address");
    if (outside) expect(p.refusalFor(outside)).not.toBeNull();
  });

  it.each([
    ["example.com/8", "has a prefix, but what comes before the slash is not an IP address"],
    ["bad host", "is neither a hostname, *.suffix, IP nor CIDR"],
    ["!example.com", "is neither a hostname, *.suffix, IP nor CIDR"],
    ["example.com!", "is neither a hostname, *.suffix, IP nor CIDR"],
    ["*.", "is neither a hostname, *.suffix, IP nor CIDR"],
    ["*.bad host", "is neither a hostname, *.suffix, IP nor CIDR"],
    ["*example.com", "is neither a hostname, *.suffix, IP nor CIDR"],
    ["[fd00::1", "is neither a hostname, *.suffix, IP nor CIDR"],
    ["fd00::1]", "is neither a hostname, *.suffix, IP nor CIDR"],
    ["10.0.0.0/33", "has a bad CIDR prefix: it must be a whole number from 0 to 32"],
    ["fd00::/129", "has a bad CIDR prefix: it must be a whole number from 0 to 128"],
  ])("the entry %j %s", (entry, problem) => {
    expect(() => createDestinationPolicy({ allowed: [entry] })).toThrow(
      `ALLOWED_DESTINATIONS entry "${entry}" ${problem}. Write a hostname, *.suffix, an IP or a CIDR such as 10.0.0.0/8 or fd00::/8, comma-separated.`,
    );
  });
});

describe("destination policy: the system resolver", () => {
  it("resolves with dns.lookup when no resolver is given (localhost, from the hosts file)", async () => {
    const p = createDestinationPolicy({ allowed: ["localhost"] });
    const addresses = await p.resolveChecked("localhost");
    expect(Array.isArray(addresses)).toBe(true);
    expect(addresses).toContainEqual({ address: "127.0.0.1", family: 4 });
  });
});
