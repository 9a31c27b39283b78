/**
 * Listening on the local port, with the one start failure a new user meets first (the port is
 * taken) told in a sentence that says what to do, instead of an unhandled EADDRINUSE.
 */
import type { Server } from "node:http";

/** The server listening on 127.0.0.1:`port`; a port in use is a StartError that says what to do. */
export function listen(server: Server, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      if (error.code === "EADDRINUSE") reject(new StartError(`Port ${port} on 127.0.0.1 is already in use (another \`npm start\` or \`npm run demo\`?). Stop that process, or choose another port: PORT=8081 npm start (or PORT=8081 npm run demo)`));
      else if (error.code === "EACCES") reject(new StartError(`Port ${port} needs privileges this process lacks; choose a port above 1023: PORT=8081 npm start (or PORT=8081 npm run demo)`));
      else reject(error);
    };
    server.once("error", failed);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", failed);
      resolve();
    });
  });
}

/** A start failure whose message is the whole story: printed without a stack trace. */
export class StartError extends Error {
  override name = "StartError";
}
