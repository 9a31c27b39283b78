/**
 * Issue 31 item 5: `webhooks subscriptions create|update --destination <kind> …` and
 * `--destination-file`, the real bin/webhooks.js as a child process against the platform in this
 * process: each kind created from its options, its secret parts read from files and never printed
 * (not in the record, not in --json, not on stderr), shown by kind and settings with who it sends
 * as; switched to another kind and back to an endpoint; misuse refused with exit 2 and what to do,
 * the API's refusals (a bad queue URL) with exit 1 and the field.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTestDatabase } from "../support/databases.js";
import { startTestPlatform, type TestPlatform } from "./harness.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = `${ROOT}bin/webhooks.js`;
let t: TestPlatform;
let closeDb: () => Promise<void>;
const dir = mkdtempSync(join(tmpdir(), "cli-destinations-"));
const file = (name: string, text: string) => { writeFileSync(join(dir, name), text); return join(dir, name); };

/** Secrets that must never reach stdout or stderr. */
const AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYcli31secret";
const SESSION_TOKEN = "FwoGZXIvYXdzEcli31sessiontoken";
const CONNECTION_KEY = "cli31SharedAccessKeyValue=";
const PRIVATE_KEY = "-----BEGIN PRIVATE KEY-----\nMIIcli31privatekey\n-----END PRIVATE KEY-----\n";
const AMQP_PASSWORD = "cli31-amqp-password";
const SECRETS = [AWS_SECRET, SESSION_TOKEN, CONNECTION_KEY, "MIIcli31privatekey", AMQP_PASSWORD];

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", WEBHOOKS_URL: t.baseUrl, ADMIN_TOKEN: t.token }, timeout: 100_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }));
  });
}
const expectNoSecret = (out: { stdout: string; stderr: string }) => {
  for (const secret of SECRETS) {
    expect(out.stdout).not.toContain(secret);
    expect(out.stderr).not.toContain(secret);
  }
};
const idOf = (stdout: string) => /Created (sub_\S+)\./.exec(stdout)![1]!;

beforeAll(async () => {
  const opened = await openTestDatabase("pglite");
  closeDb = opened.close;
  t = await startTestPlatform(opened.db, {});
}, 180_000);
afterAll(async () => {
  await t?.stop();
  await closeDb?.();
});

describe("subscriptions create --destination", () => {
  it("sqs from its options, with an access key whose secret parts come from files and are never printed", async () => {
    const created = await cli(["subscriptions", "create", "--destination", "sqs", "--queue-url", "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo", "--event", "order.*",
      "--access-key-id", "AKIAIOSFODNN7EXAMPLE", "--secret-access-key-file", file("aws-secret", `${AWS_SECRET}\n`), "--session-token-file", file("aws-session", SESSION_TOKEN)]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/destination\s+sqs https:\/\/sqs\.eu-west-1\.amazonaws\.com\/123456789012\/orders\.fifo \(eu-west-1, FIFO\)/);
    expect(created.stdout).toMatch(/sends as\s+access key AKIAIOSFODNN7EXAMPLE \(secret stored encrypted\)/);
    expectNoSecret(created);
    const id = idOf(created.stdout);
    expect((await t.api("GET", `/subscriptions/${id}`)).destination).toEqual({
      kind: "sqs", queueUrl: "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo", region: "eu-west-1", endpoint: null, fifo: true, credentials: { accessKeyId: "AKIAIOSFODNN7EXAMPLE" },
    });
    const asJson = await cli(["subscriptions", "get", id, "--json"]);
    expect(asJson.code, asJson.stderr).toBe(0);
    expect(JSON.parse(asJson.stdout).destination.credentials).toEqual({ accessKeyId: "AKIAIOSFODNN7EXAMPLE" });
    expectNoSecret(asJson);
    const listed = await cli(["subscriptions", "list"]);
    // The url column says which kind (a long one is cut to the table's width).
    expect(listed.stdout).toMatch(new RegExp(`${id}\\s+healthy\\s+0\\s+sqs:https://sqs\\.eu-west-1\\.amazonaws\\.com/123456789012/orders`));
  });

  it("each other kind from its options: sns and eventbridge as the relay's own identity, the rest with file credentials", async () => {
    const cases: { args: string[]; shown: RegExp; sendsAs: string; destination: Record<string, unknown> }[] = [
      {
        args: ["--destination", "sns", "--topic-arn", "arn:aws:sns:eu-west-1:123456789012:order-events"],
        shown: /sns arn:aws:sns:eu-west-1:123456789012:order-events/, sendsAs: "the relay's own cloud identity",
        destination: { kind: "sns", topicArn: "arn:aws:sns:eu-west-1:123456789012:order-events", region: "eu-west-1", endpoint: null, fifo: false, credentials: null },
      },
      {
        args: ["--destination", "eventbridge", "--event-bus", "orders", "--region", "eu-central-1", "--source", "acme.shop", "--detail-type", "Order"],
        shown: /eventbridge orders \(eu-central-1, source acme\.shop, detail-type Order\)/, sendsAs: "the relay's own cloud identity",
        destination: { kind: "eventbridge", eventBus: "orders", region: "eu-central-1", source: "acme.shop", detailType: "Order", endpoint: null, credentials: null },
      },
      {
        args: ["--destination", "servicebus", "--topic", "order-events", "--connection-string-file", file("sb", `Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send-only;SharedAccessKey=${CONNECTION_KEY}\n`)],
        shown: /servicebus acme\.servicebus\.windows\.net topic order-events/, sendsAs: "connection string (policy send-only) (stored encrypted)",
        destination: { kind: "servicebus", queue: null, topic: "order-events", namespace: "acme.servicebus.windows.net", credentials: { keyName: "send-only" } },
      },
      {
        args: ["--destination", "servicebus", "--queue", "orders", "--namespace", "acme.servicebus.windows.net"],
        shown: /servicebus acme\.servicebus\.windows\.net queue orders/, sendsAs: "the relay's own cloud identity",
        destination: { kind: "servicebus", queue: "orders", topic: null, namespace: "acme.servicebus.windows.net", credentials: null },
      },
      {
        args: ["--destination", "pubsub", "--topic", "projects/acme-analytics/topics/orders", "--service-account-key-file",
          file("key.json", JSON.stringify({ type: "service_account", client_email: "relay@acme-analytics.iam.gserviceaccount.com", private_key: PRIVATE_KEY, private_key_id: "k1" }))],
        shown: /pubsub projects\/acme-analytics\/topics\/orders/, sendsAs: "service account relay@acme-analytics.iam.gserviceaccount.com (key stored encrypted)",
        destination: { kind: "pubsub", topic: "projects/acme-analytics/topics/orders", endpoint: null, emulator: false, credentials: { clientEmail: "relay@acme-analytics.iam.gserviceaccount.com" } },
      },
      {
        args: ["--destination", "rabbitmq", "--amqp-url", "amqp://127.0.0.1:5672/", "--exchange", "", "--routing-key", "orders", "--amqp-username", "guest", "--amqp-password-file", file("amqp", AMQP_PASSWORD)],
        shown: /rabbitmq amqp:\/\/127\.0\.0\.1:5672\/ exchange "", routing key "orders"/, sendsAs: "user guest (password stored encrypted)",
        destination: { kind: "rabbitmq", url: "amqp://127.0.0.1:5672/", exchange: "", routingKey: "orders", credentials: { username: "guest" } },
      },
    ];
    for (const c of cases) {
      const created = await cli(["subscriptions", "create", "--event", "order.*", ...c.args]);
      expect(created.code, `${c.args.join(" ")}\n${created.stderr}`).toBe(0);
      expect(created.stdout).toMatch(c.shown);
      expect(created.stdout).toContain(c.sendsAs);
      expectNoSecret(created);
      expect((await t.api("GET", `/subscriptions/${idOf(created.stdout)}`)).destination).toEqual(c.destination);
    }
  });

  it("--destination-file takes the whole destination as JSON", async () => {
    const created = await cli(["subscriptions", "create", "--event", "a.*", "--destination-file", file("dest.json", JSON.stringify({ kind: "pubsub", topic: "projects/acme-local/topics/orders", endpoint: "127.0.0.1:8085", emulator: true }))]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/pubsub projects\/acme-local\/topics\/orders \(via 127\.0\.0\.1:8085, emulator\)/);
    expect(created.stdout).toMatch(/sends as\s+no one \(the emulator takes no credentials\)/);
  });
});

describe("subscriptions update --destination", () => {
  it("moves an endpoint's subscription to a queue, rotates its credentials with a new destination, and back to an endpoint", async () => {
    const created = await cli(["subscriptions", "create", "--endpoint", "http://127.0.0.1:9/hooks", "--event", "a.*"]);
    const id = idOf(created.stdout);
    const moved = await cli(["subscriptions", "update", id, "--destination", "sqs", "--queue-url", "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"]);
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toMatch(/destination\s+sqs https:\/\/sqs\.eu-west-1\.amazonaws\.com\/123456789012\/orders \(eu-west-1\)/);
    const rotated = await cli(["subscriptions", "update", id, "--destination", "sqs", "--queue-url", "https://sqs.eu-west-1.amazonaws.com/123456789012/orders",
      "--access-key-id", "AKIAI44QH8DHBEXAMPLE", "--secret-access-key-file", join(dir, "aws-secret")]);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toContain("access key AKIAI44QH8DHBEXAMPLE");
    expectNoSecret(rotated);
    const back = await cli(["subscriptions", "update", id, "--endpoint", "http://127.0.0.1:9/again"]);
    expect(back.code, back.stderr).toBe(0);
    expect((await t.api("GET", `/subscriptions/${id}`)).destination).toEqual({ kind: "http", url: "http://127.0.0.1:9/again" });
  });
});

it("refuses misuse with exit 2 and what to do, and passes on the API's refusals with the field", async () => {
  const misuse: [string[], string][] = [
    [["subscriptions", "create", "--event", "a"], "Give --endpoint <url> (where deliveries are POSTed) or --destination <kind>"],
    [["subscriptions", "create", "--event", "a", "--queue-url", "https://sqs.eu-west-1.amazonaws.com/123456789012/q"], "--queue-url needs --destination (sqs, sns, eventbridge, servicebus, pubsub, rabbitmq)."],
    [["subscriptions", "create", "--event", "a", "--destination", "kafka"], '--destination must be sqs, sns, eventbridge, servicebus, pubsub, rabbitmq (or http, the default, with --endpoint); got "kafka".'],
    [["subscriptions", "create", "--event", "a", "--destination", "sqs"], "--destination sqs needs --queue-url (https://sqs.<region>.amazonaws.com/<account>/<queue>)."],
    [["subscriptions", "create", "--event", "a", "--destination", "sns", "--topic-arn", "arn:aws:sns:eu-west-1:123456789012:t", "--exchange", "x"], "--exchange does not apply to --destination sns"],
    [["subscriptions", "create", "--event", "a", "--destination", "sqs", "--queue-url", "https://sqs.eu-west-1.amazonaws.com/123456789012/q", "--endpoint", "http://127.0.0.1:9/h"], "Give --endpoint (an HTTP endpoint) or --destination sqs, not both"],
    [["subscriptions", "create", "--event", "a", "--destination", "sqs", "--queue-url", "https://sqs.eu-west-1.amazonaws.com/123456789012/q", "--access-key-id", "AKIAIOSFODNN7EXAMPLE"], "credentials need both --access-key-id and --secret-access-key-file"],
    [["subscriptions", "create", "--event", "a", "--destination", "sqs", "--queue-url", "https://sqs.eu-west-1.amazonaws.com/123456789012/q", "--access-key-id", "AKIAIOSFODNN7EXAMPLE", "--secret-access-key-file", join(dir, "missing")], "--secret-access-key-file: cannot read"],
    [["subscriptions", "create", "--event", "a", "--destination", "servicebus", "--namespace", "acme.servicebus.windows.net"], "--destination servicebus needs --queue <name> or --topic <name> (one of them)."],
    [["subscriptions", "create", "--event", "a", "--destination", "servicebus", "--queue", "q"], "needs --namespace <name>.servicebus.windows.net (to send as the relay's managed identity) or --connection-string-file <path>."],
    [["subscriptions", "create", "--event", "a", "--destination", "pubsub", "--topic", "projects/p-123456/topics/t", "--service-account-key-file", file("notakey.json", "{}")], "has no client_email and private_key"],
    [["subscriptions", "create", "--event", "a", "--destination", "pubsub", "--topic", "projects/p-123456/topics/t", "--emulator"], "--emulator needs --service-endpoint <host:port>"],
    [["subscriptions", "create", "--event", "a", "--destination", "rabbitmq", "--amqp-url", "amqp://127.0.0.1/", "--routing-key", "k"], '--destination rabbitmq needs --exchange'],
    [["subscriptions", "create", "--event", "a", "--destination-file", file("nokind.json", "[]")], 'must be a JSON object with a "kind"'],
    [["subscriptions", "create", "--event", "a", "--destination-file", join(dir, "dest.json"), "--destination", "sqs"], "Give --destination-file or --destination with its options, not both"],
  ];
  for (const [args, message] of misuse) {
    const out = await cli(args);
    expect(out.code, args.join(" ")).toBe(2);
    expect(out.stderr, args.join(" ")).toContain(message);
  }
  const refused = await cli(["subscriptions", "create", "--event", "a", "--destination", "sqs", "--queue-url", "https://sqs.eu-west-1.amazonaws.com/orders"]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("destination.queueUrl");
  expect(refused.stderr).not.toMatch(/\n\s+at /); // no stack trace
});
