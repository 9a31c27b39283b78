/** `webhooks events send`: enqueue one event, or a batch from a JSON file, through the API. */
import { readFile } from "node:fs/promises";
import type { ApiBody, ApiData } from "../api.js";
import { UsageError, type Command } from "../command.js";
import { printJson, table } from "../output.js";

type EnqueueResult = ApiData<"/events", "post">;

/** Parses the JSON an option carries, or says which option holds what. */
function jsonOf(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${where} is not JSON: ${(error as Error).message}.`);
  }
}

async function readText(path: string, option: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    throw new UsageError(`Cannot read ${option} ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
  }
}

const line = (r: EnqueueResult) =>
  r.created
    ? `Enqueued ${r.eventId}: ${r.deliveries.length} ${r.deliveries.length === 1 ? "delivery" : "deliveries"}.`
    : `${r.eventId} was already enqueued (nothing changed): ${r.deliveries.length} ${r.deliveries.length === 1 ? "delivery" : "deliveries"}.`;

export const eventsSend: Command = {
  name: "events send",
  summary: "Enqueue an outbound event (or a batch from a file) for every subscription that wants its type.",
  usage: "events send --type <type> [--data <json> | --data-file <path>] [--id <event id>] [--application <id>]  |  events send --file <events.json>",
  help: `Options:
  --type <type>        event type, e.g. order.paid (required for one event)
  --data <json>        the event's data (default: null)
  --data-file <path>   read the data from a JSON file instead
  --id <event id>      stable id: sending it again changes nothing (default: generated)
  --application <id>   the application it is for (default: the default one; an application
                       key's own). With --file, each event may name its own applicationId
  --file <path>        a JSON array of events ({ id?, type, data, occurredAt? }), up to 1000,
                       enqueued in one transaction (none if one is invalid)

Examples:
  webhooks events send --type order.paid --id order-42-paid --data '{"orderId":42}'
  webhooks events send --file events.json`,
  options: {
    type: { type: "string" },
    data: { type: "string" },
    "data-file": { type: "string" },
    id: { type: "string" },
    file: { type: "string" },
    application: { type: "string" },
  },
  async run(inv) {
    const file = inv.values.file as string | undefined;
    if (file !== undefined) {
      for (const other of ["type", "data", "data-file", "id", "application"]) {
        if (inv.values[other] !== undefined) throw new UsageError(`--file carries whole events: use it without --${other}.`);
      }
      const events = jsonOf(await readText(file, "--file"), `--file ${file}`);
      if (!Array.isArray(events)) throw new UsageError(`--file ${file} must hold a JSON array of events.`);
      // The file's events as they are: the API validates each and says which is wrong.
      const { results } = await inv.api().POST("/events/batch", { body: { events: events as ApiBody<"/events/batch", "post">["events"] } });
      if (inv.json) inv.io.stdout(printJson(results));
      else inv.io.stdout(table(results, [
        { header: "event", value: (r) => r.eventId },
        { header: "new", value: (r) => (r.created ? "yes" : "no (already enqueued)") },
        { header: "deliveries", value: (r) => r.deliveries.length },
      ]));
      return;
    }
    const type = inv.values.type as string | undefined;
    if (!type) throw new UsageError("--type is required (e.g. --type order.paid), or give --file with a batch.");
    if (inv.values.data !== undefined && inv.values["data-file"] !== undefined) throw new UsageError("Give --data or --data-file, not both.");
    const dataFile = inv.values["data-file"] as string | undefined;
    const data = dataFile !== undefined
      ? jsonOf(await readText(dataFile, "--data-file"), `--data-file ${dataFile}`)
      : inv.values.data === undefined ? null : jsonOf(inv.values.data as string, "--data");
    const body: ApiBody<"/events", "post"> = { type, data };
    if (inv.values.id !== undefined) body.id = inv.values.id as string;
    if (inv.values.application !== undefined) body.applicationId = inv.values.application as string;
    const result = await inv.api().POST("/events", { body });
    inv.io.stdout(inv.json ? printJson(result) : `${line(result)}\n`);
  },
};
