/**
 * The secrets every stack generates at its first apply (stacks/generatedSecrets.ts) are values the
 * functions accept: the expression each stack synthesizes, evaluated as the apply evaluates it
 * (`terraform console`, or the same functions here without it: test/wiring/support/generatedSecrets.ts),
 * parses as ENCRYPTION_KEYS with the keyring the functions use, and the admin token is long enough
 * for the management API. Two evaluations never give the same value.
 */
import { describe, expect, it } from "vitest";
import { parseEncryptionKeys } from "../../shared/crypto/keyring.js";
import { MIN_ADMIN_TOKEN_LENGTH } from "../../shared/cloud/management.js";
import { resourcesOf } from "../../stacks/terraformJson.js";
import { generatedValue } from "../wiring/support/generatedSecrets.js";
import { synthAll } from "./synthFixture.js";

const stacks = synthAll();
/** Each cloud's write-only argument of the secret named `name`. */
const expressionsOf = (name: string): Record<string, string> => ({
  aws: String(resourcesOf(stacks.aws, "aws_secretsmanager_secret_version").find((v) => v.path.endsWith(`secrets/${name}-initial`))!.body.secret_string_wo),
  azure: String(resourcesOf(stacks.azure, "azurerm_key_vault_secret").find((s) => s.body.name === name)!.body.value_wo),
  gcp: String(resourcesOf(stacks.gcp, "google_secret_manager_secret_version").find((v) => v.path.endsWith(`secrets/${name}-initial`))!.body.secret_data_wo),
});

describe("the secrets the stacks generate", () => {
  it("are the same expression on every cloud", () => {
    for (const name of ["admin-token", "encryption-keys"]) expect(new Set(Object.values(expressionsOf(name))).size, name).toBe(1);
  });

  it("ENCRYPTION_KEYS: one key of 32 bytes under a dated id, which the functions' keyring parses", () => {
    const value = generatedValue(expressionsOf("encryption-keys").aws!);
    const keyring = parseEncryptionKeys(value, "the generated ENCRYPTION_KEYS");
    expect(keyring.keys.size).toBe(1);
    expect(keyring.primary.id).toMatch(/^k\d{8}$/);
    expect(keyring.primary.key).toHaveLength(32);
    expect(generatedValue(expressionsOf("encryption-keys").aws!)).not.toBe(value);
  }, 60_000);

  it("the admin token: 64 hex characters, above the management API's minimum, new at each evaluation", () => {
    const token = generatedValue(expressionsOf("admin-token").aws!);
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect(token.length).toBeGreaterThanOrEqual(MIN_ADMIN_TOKEN_LENGTH);
    expect(generatedValue(expressionsOf("admin-token").aws!)).not.toBe(token);
  }, 60_000);

  it("the wiring tests' evaluation without Terraform gives values of the same form", () => {
    const noTerraform = { PATH: "" };
    expect(generatedValue(expressionsOf("admin-token").aws!, noTerraform)).toMatch(/^[0-9a-f]{64}$/);
    const keyring = parseEncryptionKeys(generatedValue(expressionsOf("encryption-keys").aws!, noTerraform));
    expect(keyring.primary.id).toMatch(/^k\d{8}$/);
    expect(keyring.primary.key).toHaveLength(32);
    expect(() => generatedValue('${md5("x")}', noTerraform)).toThrow(/cannot evaluate/);
  });
});
