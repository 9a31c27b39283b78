/**
 * One classification of "the database is not there right now" for every boundary (503 with
 * Retry-After, keep the retry budget, log as an outage): PostgreSQL's error classes, the network
 * stack's errors and pg's own connection failures. A bad query is not an outage.
 */
import { describe, expect, it } from "vitest";
import { DatabaseUnavailableError, isUnavailable, isUnavailableSqlState } from "../../shared/db/port.js";

const pgError = (code: string, message = "") => Object.assign(new Error(message), { code });

describe("isUnavailable", () => {
  it.each([
    ["08000", "connection_exception"], ["08003", "connection_does_not_exist"], ["08006", "connection_failure"],
    ["08001", "sqlclient_unable_to_establish_sqlconnection"], ["08P01", "protocol_violation"],
    ["57P01", "admin_shutdown"], ["57P02", "crash_shutdown"], ["57P03", "cannot_connect_now"], ["57P04", "database_dropped"], ["57P05", "idle_session_timeout"],
    ["53300", "too_many_connections"], ["53000", "insufficient_resources"], ["53100", "disk_full"], ["53200", "out_of_memory"], ["53400", "configuration_limit_exceeded"],
  ])("SQLSTATE %s (%s) is an outage", (code) => {
    expect(isUnavailable(pgError(code))).toBe(true);
  });

  it("55000 is an outage only as 'not currently accepting connections' (ALLOW_CONNECTIONS false)", () => {
    expect(isUnavailable(pgError("55000", 'database "webhooks" is not currently accepting connections'))).toBe(true);
    expect(isUnavailable(pgError("55000", "prepared statement is not a SELECT"))).toBe(false);
    expect(isUnavailableSqlState("55P03", "could not obtain lock")).toBe(false);
  });

  it.each([
    ["23505", "unique_violation"], ["42P01", "undefined_table"], ["42501", "insufficient_privilege"], ["22P02", "invalid_text_representation"],
    ["40001", "serialization_failure"], ["28P01", "invalid_password"], ["3D000", "invalid_catalog_name"],
  ])("SQLSTATE %s (%s) is not: retrying later does not fix it by itself", (code) => {
    expect(isUnavailable(pgError(code))).toBe(false);
  });

  it.each(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"])("the network error %s is", (code) => {
    expect(isUnavailable(pgError(code, `connect ${code}`))).toBe(true);
  });

  it("pg's connection failures, a pool timeout, wrapped and aggregated causes are; plain errors are not", () => {
    expect(isUnavailable(new Error("Connection terminated unexpectedly"))).toBe(true);
    expect(isUnavailable(new Error("timeout exceeded when trying to connect"))).toBe(true);
    expect(isUnavailable(new DatabaseUnavailableError("down"))).toBe(true);
    expect(isUnavailable(new Error("query failed", { cause: pgError("57P01") }))).toBe(true);
    expect(isUnavailable(new AggregateError([pgError("ECONNREFUSED"), pgError("ECONNREFUSED")], ""))).toBe(true);
    expect(isUnavailable(new Error("column \"x\" does not exist"))).toBe(false);
    expect(isUnavailable(undefined)).toBe(false);
    expect(isUnavailable("08006")).toBe(false);
  });
});
