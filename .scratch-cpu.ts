import { spawn } from "node:child_process";
import { readFileSync, mkdtempSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
const cpu = (pid: number) => { const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" "); return (Number(f[11]) + Number(f[12])) * 10; }; // ms
function start(port: number, flags: string[], store: string) {
	const dir = mkdtempSync(path.join(tmpdir(), "cpu-"));
	return spawn(process.execPath, [...flags, "dist/main.js"], { env: { PATH: process.env.PATH!, PORT: String(port), HOST: "127.0.0.1", WHEELHOUSE_STORE: store, WHEELHOUSE_DB: path.join(dir, "w.db"), WHEELHOUSE_FAUX_DELAY_MS: "0", LOG_LEVEL: "warn" }, stdio: "ignore" });
}
async function healthy(url: string) { for (;;) { try { const r = await fetch(url + "/healthz"); if (r.ok) return; } catch {} await new Promise(r => setTimeout(r, 100)); } }
function stream(url: string, body: string) { return new Promise<number>((res, rej) => { const q = request(url, { method: "POST", headers: { accept: "text/event-stream", "content-type": "application/json" }, agent: false }, (r) => { let n = 0; r.on("data", (c) => { n += c.toString().split("\n\n").length - 1; }); r.on("end", () => res(n)); }); q.on("error", rej); q.end(body); }); }
async function job(url: string) {
	const ids: string[] = [];
	for (let i = 0; i < 100; i++) { const r = await fetch(url + "/v1/sessions", { method: "POST", headers: { "content-type": "application/json" }, body: '{"model":"faux/echo"}' }); ids.push(((await r.json()) as any).id); }
	const prompt = JSON.stringify({ message: Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ") });
	const counts = await Promise.all(ids.map((id) => stream(`${url}/v1/sessions/${id}/prompt`, prompt)));
	return counts.reduce((a, b) => a + b, 0);
}
const store = process.argv[2] ?? "memory"; const flag = process.argv[3] ?? "--max-semi-space-size=2";
const a = start(24701, [], store), b = start(24702, [flag], store);
await healthy("http://127.0.0.1:24701"); await healthy("http://127.0.0.1:24702");
const servers = [{ name: "default", p: a, url: "http://127.0.0.1:24701" }, { name: flag, p: b, url: "http://127.0.0.1:24702" }];
for (const s of servers) await job(s.url);
const ratios: number[] = []; const per: Record<string, number[]> = { default: [], [flag]: [] };
for (let r = 0; r < 12; r++) {
	const order = r % 2 ? servers : [...servers].reverse();
	const res: Record<string, number> = {};
	for (const s of order) { const c0 = cpu(s.p.pid!); const ev = await job(s.url); const c1 = cpu(s.p.pid!); res[s.name] = ((c1 - c0) * 1000) / ev; per[s.name]!.push(res[s.name]!); }
	ratios.push(res.default! / res[flag]!);
}
const med = (x: number[]) => [...x].sort((p, q) => p - q)[Math.floor(x.length / 2)]!;
console.log("µs/event default", med(per.default!).toFixed(2), flag, med(per[flag]!).toFixed(2), "median ratio default/flag", med(ratios).toFixed(3), ratios.map((x) => x.toFixed(2)).join(" "));
const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
console.log("rss after", rss(a.pid!).toFixed(1), rss(b.pid!).toFixed(1));
a.kill(); b.kill();
