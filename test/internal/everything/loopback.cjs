// Preloaded into server-everything (node --require) by everything.go: its
// Streamable HTTP transport listens on process.env.PORT with no host, that
// is on every interface. A server a test starts must be reachable from this
// machine only, so a listen given a port alone gets host 127.0.0.1. Nothing
// else of the server changes.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const portOnly = typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]));
  if (portOnly && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
