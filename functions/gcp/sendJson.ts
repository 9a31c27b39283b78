import type { Response } from "@google-cloud/functions-framework";

/** A JSON answer with `status` and any extra headers (the GCP handlers' one shape of reply). */
export function sendJson(res: Response, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.status(status).set({ "content-type": "application/json; charset=utf-8", ...headers }).send(JSON.stringify(body));
}
