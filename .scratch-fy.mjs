const fmt = (l) => { globalThis.gc(); const u = process.memoryUsage(); console.log(l.padEnd(22), Object.entries(u).map(([k,v])=>`${k} ${(v/1e6).toFixed(1)}`).join("  ")); };
const Fastify = (await import("fastify")).default;
fmt("imported");
const app = Fastify();
app.get("/x", { schema: { querystring: { type: "object", properties: { a: { type: "integer" } } } } }, async () => "ok");
fmt("built");
await app.ready(); fmt("ready");
await app.listen({ port: 0 }); fmt("listen");
process.exit(0);
