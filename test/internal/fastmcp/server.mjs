// A small FastMCP server in stateless mode (no Mcp-Session-Id), for
// test/listings: it names itself SERVER_NAME, offers the tool "mark"
// (annotated readOnlyHint when READ_ONLY=1, which appends a line to
// RUNS_FILE each time it runs), the prompt PROMPT and the resource
// RESOURCE, on 127.0.0.1:PORT/mcp. The test kills it with SIGKILL.
import { appendFileSync } from "node:fs";
import { FastMCP } from "fastmcp";

const env = process.env;
const server = new FastMCP({ name: env.SERVER_NAME, version: "1.0.0" });
server.addTool({
  name: "mark",
  description: "records a run",
  annotations: { readOnlyHint: env.READ_ONLY === "1" },
  execute: async () => {
    appendFileSync(env.RUNS_FILE, "run\n");
    if (env.DIE_ON_MARK === "1") {
      process.kill(process.pid, "SIGKILL"); // ran, and never answers
    }
    return "marked";
  },
});
server.addPrompt({ name: env.PROMPT, description: "a prompt", load: async () => "hello" });
server.addResource({ uri: env.RESOURCE, name: "r", mimeType: "text/plain", load: async () => ({ text: "r" }) });
await server.start({
  transportType: "httpStream",
  httpStream: { host: "127.0.0.1", port: Number(env.PORT), endpoint: "/mcp", stateless: true },
});
