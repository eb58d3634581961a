/** Types of reference-server.mjs (plain JavaScript, run by `node` itself in bench/memory). */
export function startReferenceServer(port?: number): Promise<{ url: string }>;
