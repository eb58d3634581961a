const specs = process.argv.slice(2);
const m = () => { globalThis.gc(); return process.memoryUsage().rss; };
let prev = m();
console.log("start", (prev/1e6).toFixed(1));
for (const s of specs) {
	await import(s);
	await new Promise(r=>setTimeout(r,100));
	const now = m();
	console.log(s.padEnd(50), "+", ((now-prev)/1e6).toFixed(1), "=", (now/1e6).toFixed(1));
	prev = now;
}
