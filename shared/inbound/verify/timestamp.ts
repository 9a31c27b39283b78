/** Signed timestamps: strict parsing and the tolerance window, with distinct reasons for past and future. */
import { DEFAULT_TOLERANCE_SECONDS, reject, type Rejection } from "./types.js";

/** Whole seconds (or milliseconds) since the epoch, digits only; null otherwise. */
export function parseEpoch(text: string): number | null {
  if (!/^\d{1,16}$/.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : null;
}

/** Null when `signedAt` (seconds) is within the tolerance of `nowSeconds`, else a 401 saying which way it is off. */
export function checkFreshness(signedAt: number, nowSeconds: number, toleranceSeconds = DEFAULT_TOLERANCE_SECONDS): Rejection | null {
  const skew = nowSeconds - signedAt;
  if (skew > toleranceSeconds) {
    return reject(401, "timestamp_too_old", `The signed timestamp is ${Math.round(skew)} s old; the tolerance is ${toleranceSeconds} s. Sign again with the current time (a replayed request is refused).`);
  }
  if (-skew > toleranceSeconds) {
    return reject(401, "timestamp_in_future", `The signed timestamp is ${Math.round(-skew)} s in the future; the tolerance is ${toleranceSeconds} s. Check the sender's clock.`);
  }
  return null;
}
