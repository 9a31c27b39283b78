/**
 * The two secrets every stack generates itself at its first apply: the management API's bootstrap
 * admin token and the key the database's secrets are encrypted with (issue 17). Each is written
 * through the provider's write-only argument (`…_wo`, with a `…_wo_version`), so Terraform sends
 * the value once, at creation, and never keeps it in the plan or the state (Terraform ≥ 1.11,
 * OpenTofu ≥ 1.11). Read or rotate it in the cloud's secret store (docs/deploy.md); Terraform
 * leaves later versions alone, and sends a new value only if WRITE_ONLY_VERSION is raised.
 *
 * No random provider is needed: `uuid()` is Terraform's own random source (hashicorp/go-uuid's
 * GenerateUUID: 16 bytes from crypto/rand, "purely random", not an RFC 4122 version 4, so 128
 * random bits in each), hashed into the format the code expects.
 */
import { Fn } from "cdktf";

/** Raising it makes Terraform write a freshly generated value (a rotation by Terraform). */
export const WRITE_ONLY_VERSION = 1;

/** 64 hex characters: SHA-256 of three random UUIDs (384 random bits in, 256 out). */
export function generatedAdminToken(): string {
  return Fn.sha256(`${Fn.uuid()}${Fn.uuid()}${Fn.uuid()}`);
}

/**
 * ENCRYPTION_KEYS' format, `<keyId>:<base64 of 32 bytes>` (shared/crypto): one key, whose id is
 * its creation date (`k20261201`), its bytes SHA-256 of three random UUIDs (`base64sha256` returns
 * the digest's 32 bytes in base64). A rotation prepends a new key (docs/deploy.md).
 */
export function generatedEncryptionKeys(): string {
  return `k${Fn.formatdate("YYYYMMDD", Fn.timestamp())}:${Fn.base64sha256(`${Fn.uuid()}${Fn.uuid()}${Fn.uuid()}`)}`;
}
