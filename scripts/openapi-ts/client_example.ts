// A small program against the TypeScript types openapi-typescript generates from our schema,
// called through openapi-fetch as our users do. It is never run: scripts/check_openapi.py
// generates schema.d.ts beside it and type-checks it with `tsc --strict`, so a schema change
// that breaks what a typed TypeScript client writes (a renamed path, an untyped body, a
// download a client cannot read) breaks the build.
import createClient from "openapi-fetch";

import type { components, paths } from "./schema";

type Server = components["schemas"]["Server"];

const api = createClient<paths>({
  baseUrl: "http://127.0.0.1:8000",
  headers: { Authorization: "Bearer hms_..." },
});

export async function runningServers(): Promise<Server[]> {
  const { data, error } = await api.GET("/v1/servers", {
    params: { query: { status: ["running", "starting"], per_page: 100 } },
  });
  if (error) {
    throw new Error(`${error.error.code}: ${error.error.message} (${error.error.request_id})`);
  }
  return data.data.servers;
}

export async function createAndStart(): Promise<string> {
  const created = await api.POST("/v1/servers", {
    params: { header: { "Idempotency-Key": "create-smp-1" } },
    body: { name: "Survival SMP", game: "minecraft-java", region: "eu-central", variables: {} },
  });
  if (!created.data) {
    throw new Error(created.error?.error.code);
  }
  const id: string = created.data.data.server.id;
  const started = await api.POST("/v1/servers/{id}/actions", {
    params: { path: { id } },
    body: { type: "start" },
  });
  return started.data?.data.action.id ?? "not started";
}

// Metric points are [time, value] pairs: `[string, number][]` in the generated types.
// (openapi-fetch 0.17 reads a response's tuples as arrays, `(string | number)[][]`.)
type Point = components["schemas"]["Series"]["points"][number];
export const examplePoint: Point = ["2026-11-23T12:00:00Z", 12.5];

export async function cpuPeak(id: string): Promise<number> {
  const { data } = await api.GET("/v1/servers/{id}/metrics", {
    params: { path: { id }, query: { metrics: "cpu_percent" } },
  });
  let peak = 0;
  for (const series of data?.data.metrics.series ?? []) {
    for (const [, value] of series.points) {
      if (typeof value === "number") {
        peak = Math.max(peak, value);
      }
    }
  }
  return peak;
}

// Downloads are read as what they are.
export async function invoicePdf(id: string): Promise<Blob> {
  const { data, error } = await api.GET("/v1/invoices/{id}/pdf", {
    params: { path: { id } },
    parseAs: "blob",
  });
  if (error) {
    throw new Error(error.error.code);
  }
  return data;
}

// A file part is binary (a Blob), sent as multipart/form-data.
export async function uploadBotCode(id: string, archive: Blob): Promise<string> {
  const { data } = await api.POST("/v1/bots/{id}/source", {
    params: { path: { id } },
    body: { file: archive },
    bodySerializer(body) {
      const form = new FormData();
      if (body) {
        form.append("file", body.file, "bot.tar.gz");
      }
      return form;
    },
  });
  return data?.data.bot.id ?? "";
}

export async function attachFiles(id: string, files: Blob[]): Promise<number> {
  const { data } = await api.POST("/v1/tickets/{id}/attachments", {
    params: { path: { id } },
    body: { file: files, body: "The logs." },
    bodySerializer(body) {
      const form = new FormData();
      for (const file of body.file) {
        form.append("file", file, "log.txt");
      }
      form.append("body", body.body ?? "");
      return form;
    },
  });
  return data ? 1 : 0;
}
