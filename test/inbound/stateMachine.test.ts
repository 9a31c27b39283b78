/**
 * The reconciler's machine (stateMachine.ts) on small machines built for each rule: definition
 * errors, reachability, and every decision with its reason. The order machine's decisions and the
 * convergence property are in reconciler.test.ts.
 */
import { describe, expect, it } from "vitest";
import { decide, defineMachine, MachineDefinitionError } from "../../shared/inbound/stateMachine.js";

/**
 * A document: drafted, reviewed, published, archived, purged; or deleted as a draft. `legacy`
 * has no way in (entities imported from an older system); `doc.purged` has two sources, one of
 * them unreachable once published; `doc.imported` creates or moves a legacy document.
 */
const doc = defineMachine({
  name: "doc",
  states: ["legacy", "draft", "review", "published", "archived", "deleted", "purged"],
  events: {
    "doc.created": { from: [null], to: "draft" },
    "doc.submitted": { from: ["draft"], to: "review" },
    "doc.published": { from: ["review", "draft"], to: "published" },
    "doc.archived": { from: ["published"], to: "archived" },
    "doc.deleted": { from: ["draft"], to: "deleted" },
    "doc.purged": { from: ["archived", "deleted"], to: "purged" },
    "doc.migrated": { from: ["legacy"], to: "draft" },
    "doc.imported": { from: [null, "legacy"], to: "review" },
  },
});

describe("defineMachine", () => {
  it.each([
    ["an event to an unknown state", { x: { from: [null], to: "c" } }, 'm: event x goes to unknown state "c"; add it to states.'],
    ["an event from an unknown state", { x: { from: ["c"], to: "a" } }, 'm: event x comes from unknown state "c".'],
    ["an event with no source", { x: { from: [], to: "a" } }, "m: event x has no source state; list at least one (null for a creation)."],
    ["an event from its own target", { x: { from: ["a"], to: "a" } }, 'm: state "a" can reach itself; a reconciler machine must be acyclic so that "stale" is defined.'],
    ["a longer cycle", { x: { from: [null], to: "a" }, y: { from: ["a"], to: "b" }, z: { from: ["b"], to: "a" } }, /^m: state "[ab]" can reach itself; a reconciler machine must be acyclic so that "stale" is defined\.$/],
  ])("refuses %s, saying which", (_what, events, message) => {
    let error: unknown;
    try { defineMachine({ name: "m", states: ["a", "b"], events: events as never }); } catch (e) { error = e; }
    expect(error).toBeInstanceOf(MachineDefinitionError);
    expect((error as Error).name).toBe("MachineDefinitionError");
    if (typeof message === "string") expect((error as Error).message).toBe(message);
    else expect((error as Error).message).toMatch(message);
  });

  it("reachable: zero or more events, from absence too; nothing from a state the machine does not know", () => {
    const r = (from: string | null, to: string) => doc.reachable(from as never, to as never);
    expect(r("draft", "draft")).toBe(true);
    expect(r("purged", "purged")).toBe(true);
    expect(r(null, "purged")).toBe(true);
    expect(r("draft", "archived")).toBe(true);
    expect(r("legacy", "purged")).toBe(true);
    expect(r("archived", "draft")).toBe(false);
    expect(r(null, "legacy")).toBe(false);
    expect(r("published", "deleted")).toBe(false);
    expect(r("retired", "draft")).toBe(false);
  });

  it("isEvent: only the machine's own event names, not what every object inherits", () => {
    expect(doc.isEvent("doc.created")).toBe(true);
    for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty", "doc.created ", "Doc.created"]) expect(doc.isEvent(name)).toBe(false);
  });
});

describe("decide: each kind and its reason", () => {
  it.each([
    // [current state, event, decision]
    [null, "doc.created", { kind: "apply", from: null, to: "draft" }],
    [null, "doc.imported", { kind: "apply", from: null, to: "review" }],
    ["legacy", "doc.imported", { kind: "apply", from: "legacy", to: "review" }],
    ["draft", "doc.published", { kind: "apply", from: "draft", to: "published" }],
    ["review", "doc.published", { kind: "apply", from: "review", to: "published" }],
    ["review", "doc.submitted", { kind: "duplicate", state: "review", reason: "already review" }],
    ["purged", "doc.purged", { kind: "duplicate", state: "purged", reason: "already purged" }],
    ["published", "doc.submitted", { kind: "stale", state: "published", reason: "doc.submitted leads to review, but the entity is already published, past it" }],
    ["purged", "doc.created", { kind: "stale", state: "purged", reason: "doc.created leads to draft, but the entity is already purged, past it" }],
    [null, "doc.submitted", { kind: "defer", reason: "doc.submitted needs state draft; the entity is absent (a prerequisite event has not arrived yet)" }],
    // One of two sources still reachable is enough to wait for it.
    ["published", "doc.purged", { kind: "defer", reason: "doc.purged needs state archived or deleted; the entity is published (a prerequisite event has not arrived yet)" }],
    ["draft", "doc.archived", { kind: "defer", reason: "doc.archived needs state published; the entity is draft (a prerequisite event has not arrived yet)" }],
    ["deleted", "doc.submitted", { kind: "reject", reason: "doc.submitted needs state draft, which can no longer be reached from deleted" }],
    ["deleted", "doc.imported", { kind: "reject", reason: "doc.imported needs state (absent) or legacy, which can no longer be reached from deleted" }],
    [null, "doc.migrated", { kind: "reject", reason: "doc.migrated needs state legacy, which can no longer be reached from absent" }],
    // An entity left in a state the machine no longer has: nothing applies, and nothing waits forever.
    ["retired", "doc.archived", { kind: "reject", reason: "doc.archived needs state published, which can no longer be reached from retired" }],
    ["draft", "doc.unpublished", { kind: "reject", reason: 'doc has no event "doc.unpublished"; known: doc.created, doc.submitted, doc.published, doc.archived, doc.deleted, doc.purged, doc.migrated, doc.imported.' }],
    [null, "constructor", { kind: "reject", reason: 'doc has no event "constructor"; known: doc.created, doc.submitted, doc.published, doc.archived, doc.deleted, doc.purged, doc.migrated, doc.imported.' }],
  ] as const)("%s + %s", (current, event, decision) => {
    expect(decide(doc, current as never, event)).toEqual(decision);
  });
});

describe("replayInOrder", () => {
  it("applies only what applies: duplicates, stale, deferred, rejected and unknown events leave the state", async () => {
    const { replayInOrder } = await import("../../shared/inbound/stateMachine.js");
    expect(replayInOrder(doc, [])).toBeNull();
    expect(replayInOrder(doc, ["doc.submitted"])).toBeNull();
    expect(replayInOrder(doc, ["doc.created", "doc.created", "doc.archived", "doc.nope", "doc.submitted", "doc.created"])).toBe("review");
    expect(replayInOrder(doc, ["doc.created", "doc.deleted", "doc.submitted", "doc.purged"])).toBe("purged");
  });
});
