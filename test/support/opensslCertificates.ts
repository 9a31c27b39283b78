/**
 * Certificates for mTLS tests, made by the `openssl` command line in a temporary directory: a test
 * CA, a server certificate for 127.0.0.1, and client certificates (EC P-256, fast to make) valid
 * from/until any instant (`openssl ca -startdate/-enddate`, so one can expire seconds from now).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Pem { cert: string; key: string }

/** `YYYYMMDDHHMMSSZ`, the time format of `openssl ca -startdate/-enddate`. */
const asn1Time = (d: Date) => d.toISOString().replace(/[-:T]/g, "").replace(/\.\d+Z$/, "Z");

export function createTestCa(name = "Test CA") {
  const dir = mkdtempSync(join(tmpdir(), "mtls-"));
  const run = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  const newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  run("req", "-x509", ...newKey, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3", "-subj", `/CN=${name}`);
  mkdirSync(join(dir, "newcerts"));
  writeFileSync(join(dir, "index.txt"), "");
  writeFileSync(join(dir, "serial"), "1000\n");
  writeFileSync(join(dir, "ca.cnf"), [
    "[ ca ]", "default_ca = testca", "[ testca ]", `dir = ${dir}`, `database = ${dir}/index.txt`, `new_certs_dir = ${dir}/newcerts`,
    `serial = ${dir}/serial`, "default_md = sha256", "policy = anything", "unique_subject = no", "copy_extensions = copy",
    "[ anything ]", "commonName = supplied", "",
  ].join("\n"));
  const read = (f: string) => readFileSync(join(dir, f), "utf8");
  let n = 0;
  /** A certificate signed by this CA, valid from `notBefore` to `notAfter`. */
  const issue = (commonName: string, options: { notBefore?: Date; notAfter?: Date; extension: string }): Pem => {
    const base = `c${++n}`;
    writeFileSync(join(dir, `${base}.ext`), `[ v3 ]\n${options.extension}\n`);
    run("req", "-new", ...newKey, "-keyout", `${base}.key`, "-out", `${base}.csr`, "-subj", `/CN=${commonName}`);
    run("ca", "-batch", "-notext", "-config", "ca.cnf", "-cert", "ca.crt", "-keyfile", "ca.key", "-in", `${base}.csr`, "-out", `${base}.crt`,
      "-extfile", `${base}.ext`, "-extensions", "v3",
      "-startdate", asn1Time(options.notBefore ?? new Date(Date.now() - 60_000)), "-enddate", asn1Time(options.notAfter ?? new Date(Date.now() + 2 * 86_400_000)));
    return { cert: read(`${base}.crt`), key: read(`${base}.key`) };
  };
  return {
    dir,
    ca: read("ca.crt"),
    server: (host = "127.0.0.1") => issue(host, { extension: `subjectAltName = IP:${host}\nextendedKeyUsage = serverAuth` }),
    client: (commonName: string, validity: { notBefore?: Date; notAfter?: Date } = {}) => issue(commonName, { ...validity, extension: "extendedKeyUsage = clientAuth" }),
  };
}
