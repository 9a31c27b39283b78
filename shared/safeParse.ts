/**
 * Every zod parse of the platform goes through here. The schemas use `zod/mini`, zod's
 * tree-shakable functional API: in a function bundle it costs ~35 KiB where the classic `z`
 * cost ~190 KiB. Unlike the classic API, zod/mini registers no locale by itself, and without
 * one every message would read "Invalid input"; this module registers zod's English messages,
 * the same texts the classic API gives.
 */
import * as z from "zod/mini";
import en from "zod/v4/locales/en.js";

z.config(en());

/**
 * `z.safeParse`, with English messages.
 * @example const result = safeParse(z.object({ id: z.string() }), input);
 */
export const safeParse: typeof z.safeParse = (schema, value, context) => z.safeParse(schema, value, context);
