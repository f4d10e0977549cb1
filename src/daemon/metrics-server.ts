/**
 * `serve --metrics HOST:PORT`: `/metrics` (the Prometheus text format) and `/health` (the
 * `health` op's JSON) over HTTP. Opt-in, and on a loopback address only: the figures name the
 * database and its load, which are nobody else's business.
 */
import { createServer, type Server } from "node:http";
import { isIP } from "node:net";
import { invalidArgument } from "../errors.js";
import type { HealthResult } from "../protocol/control.js";
import { prometheusText } from "../protocol/prometheus-text.js";

export interface MetricsAddress {
  host: string;
  /** 0: any free port (the log says which). */
  port: number;
}

/** `127.0.0.1:9464`, `[::1]:9464`, `localhost:9464`; anything but a loopback address is refused. */
export function parseMetricsAddress(text: string): MetricsAddress {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text);
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (host === undefined || !Number.isInteger(port) || port > 65535) {
    throw invalidArgument(`--metrics takes HOST:PORT, e.g. 127.0.0.1:9464, not ${JSON.stringify(text)}`);
  }
  const loopback = host === "localhost" || (isIP(host) === 4 && host.startsWith("127.")) || (isIP(host) === 6 && host === "::1");
  if (!loopback) throw invalidArgument(`--metrics serves on a loopback address only (127.0.0.1, ::1, localhost), not ${host}`);
  return { host, port };
}

export class MetricsServer {
  readonly #server: Server;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async listen(address: MetricsAddress, health: () => HealthResult): Promise<MetricsServer> {
    const server = createServer((request, response) => {
      const path = (request.url ?? "/").split("?")[0];
      if (request.method !== "GET" && request.method !== "HEAD") {
        response.writeHead(405, { allow: "GET, HEAD" }).end();
        return;
      }
      if (path === "/metrics") {
        response.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" }).end(prometheusText(health()));
      } else if (path === "/health") {
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(health()));
      } else {
        response.writeHead(404, { "content-type": "text/plain" }).end("sessiondb serves /metrics and /health\n");
      }
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(address.port, address.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    return new MetricsServer(server);
  }

  /** Where it listens, as `http://HOST:PORT`. */
  get url(): string {
    const a = this.#server.address();
    if (a === null || typeof a === "string") return String(a);
    return `http://${a.family === "IPv6" ? `[${a.address}]` : a.address}:${a.port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}
