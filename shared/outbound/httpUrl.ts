/**
 * The shape every URL the relay calls must have, whatever it is for (an endpoint, an OAuth 2.0
 * token URL): absolute, http(s), at most 2048 characters, no credentials in it (they belong in
 * their own fields), no #fragment. Where it may point is the destination policy's business
 * (destinationPolicy.ts), checked when it is called.
 */
import * as z from "zod/mini";

export function httpUrlSchema(options: { example: string; credentialsHint: string }) {
  return z.string().check(
    z.maxLength(2048, "must have at most 2048 characters"),
    z.superRefine((value, ctx) => {
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        ctx.addIssue({ code: "custom", message: `must be an absolute URL such as ${options.example}` });
        return;
      }
      if (url.protocol !== "https:" && url.protocol !== "http:") ctx.addIssue({ code: "custom", message: "must use https (or http)" });
      if (url.username || url.password) ctx.addIssue({ code: "custom", message: `must not carry credentials; ${options.credentialsHint}` });
      if (url.hash) ctx.addIssue({ code: "custom", message: "must not have a #fragment" });
    }),
  );
}
