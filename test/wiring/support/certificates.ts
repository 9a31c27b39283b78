/**
 * A private CA and one server certificate signed by it, made with openssl for the wiring tests:
 * the TLS-only PostgreSQL, the HTTPS alert receivers, Azurite over HTTPS. Nothing trusts the CA
 * unless a test hands it over, which is the point.
 */
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface Certificate {
  ca: string;
  key: string;
  cert: string;
  caPath: string;
  keyPath: string;
  certPath: string;
}

/** Writes ca.pem, server.key and server.crt into `dir`; `names` is the subjectAltName (`DNS:localhost`, `IP:127.0.0.1`, …). */
export async function makeCertificate(dir: string, names: string, caName = "wiring test private CA"): Promise<Certificate> {
  const ssl = (...args: string[]) => run("openssl", args, { cwd: dir });
  await ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", `/CN=${caName}`,
    "-keyout", "ca.key", "-out", "ca.pem", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign");
  await ssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "server.key", "-out", "server.csr");
  writeFileSync(join(dir, "server.ext"), `subjectAltName=${names}\nextendedKeyUsage=serverAuth\n`);
  await ssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2", "-out", "server.crt", "-extfile", "server.ext");
  const path = (f: string) => join(dir, f);
  return {
    ca: readFileSync(path("ca.pem"), "utf8"),
    key: readFileSync(path("server.key"), "utf8"),
    cert: readFileSync(path("server.crt"), "utf8"),
    caPath: path("ca.pem"),
    keyPath: path("server.key"),
    certPath: path("server.crt"),
  };
}
