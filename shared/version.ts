/**
 * The platform's version, one number: package.json's. The OpenAPI document (`info.version`) and
 * `webhooks --version` print it, so neither can drift from the package (issue 27 item 16). A JSON
 * import, so the cloud functions' bundles carry it as well.
 */
import pkg from "../package.json" with { type: "json" };

export const VERSION: string = pkg.version;
