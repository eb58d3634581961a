import v8 from "node:v8";
const sp = (l) => { globalThis.gc(); console.log(l, "rss", (process.memoryUsage().rss/1e6).toFixed(1)); for (const s of v8.getHeapSpaceStatistics()) if (s.space_size > 0) console.log("  ", s.space_name.padEnd(24), "size", (s.space_size/1e6).toFixed(1), "used", (s.space_used_size/1e6).toFixed(1), "phys", (s.physical_space_size/1e6).toFixed(1)); };
sp("start");
await import(process.argv[2]);
sp("imported");
