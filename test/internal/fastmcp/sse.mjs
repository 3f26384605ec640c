// A FastMCP server with sessions, for test/sse: the tools are ours, written
// with FastMCP's API as any author of a FastMCP server would; the transport
// is FastMCP's (mcp-proxy's startHTTPServer: Streamable HTTP at /mcp,
// HTTP+SSE at /sse). zod is FastMCP's own dependency.
// PORT is where it listens, on 127.0.0.1; each run of the unannotated tool
// "increment" appends its id to the file SSESERVER_LOG (O_APPEND), so that a
// test counts runs across processes.
import { appendFileSync } from "node:fs";
import { FastMCP } from "fastmcp";
import { z } from "zod";

const server = new FastMCP({ name: "resilientmcp-fastmcp", version: "1.0.0" });
server.addTool({
  name: "echo",
  annotations: { readOnlyHint: true },
  parameters: z.object({ text: z.string() }),
  execute: async (args) => args.text,
});
server.addTool({
  name: "increment",
  parameters: z.object({ id: z.string() }),
  execute: async (args) => {
    appendFileSync(process.env.SSESERVER_LOG, args.id + "\n");
    return "incremented";
  },
});
await server.start({ transportType: "httpStream", httpStream: { port: Number(process.env.PORT), host: "127.0.0.1" } });
