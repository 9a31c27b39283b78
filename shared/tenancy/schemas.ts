/** The answers of the tenancy operations (applications, API keys, audit log), for the OpenAPI document. */
import * as z from "zod/mini";

const time = z.iso.datetime();
const int = z.number().check(z.int());

export const applicationSchema = z.strictObject({ id: z.string(), name: z.string(), createdAt: time });
export const deletedApplicationSchema = z.strictObject({
  id: z.string(), deletedAt: time, deletedSubscriptions: int, cancelledDeliveries: int, revokedKeys: int,
});
export const apiKeySchema = z.strictObject({
  id: z.string(),
  applicationId: z.nullable(z.string()),
  access: z.enum(["write", "read"]),
  description: z.nullable(z.string()),
  createdBy: z.string(),
  createdAt: time,
  revokedAt: z.nullable(time),
  revokedBy: z.nullable(z.string()),
});
/** The answer to a creation: the key itself, shown this once. */
export const createdApiKeySchema = z.extend(apiKeySchema, { key: z.string() });
export const auditEntrySchema = z.strictObject({
  id: int, at: time, actor: z.string(), operation: z.string(), method: z.string(), path: z.string(),
  resourceId: z.nullable(z.string()), applicationId: z.nullable(z.string()), status: int,
});
/** Who the caller is: what the admin page shows and hides by. */
export const principalSchema = z.strictObject({
  kind: z.enum(["bootstrap", "key"]),
  keyId: z.nullable(z.string()),
  applicationId: z.nullable(z.string()),
  access: z.enum(["write", "read"]),
});
