/**
 * deploy/kubernetes, without a cluster: the base and each overlay render (test/helpers/kustomize.ts,
 * checked against `kubectl kustomize` where kubectl is installed), every rendered resource is valid
 * against the Kubernetes API schemas of `kubernetes-models` and has no field those schemas lack,
 * every pod sets `enableServiceLinks: false`, the parts refer to one another, the shutdown fits in
 * `terminationGracePeriodSeconds` by the server's own defaults and constants, and the real server
 * started with the environment a pod would get answers the probes, the scrape and refuses the
 * committed placeholders.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { resolveClusterSettings } from "../../src/server/cluster/settings.js";
import { CONFIG_VARS, ConfigError, loadConfig } from "../../src/server/config/config.js";
import { SHUTDOWN_FLUSH_MS } from "../../src/server/http/app.js";
import { SHUTDOWN_ABORT_WAIT_MS } from "../../src/server/runtime/session/manager.js";
import { haveClusterServices, NO_CLUSTER_SERVICES, REDIS_URL } from "../helpers/cluster.js";
import { findKubectl, type K8sObject, kubectlKustomize, renderKustomization } from "../helpers/kustomize.js";
import { freePort, refusedStartup, repoRoot, startMain, stopAll } from "../helpers/main-process.js";
import { PG_URL, testSchemas } from "../helpers/postgres.js";

const k8sDir = path.join(repoRoot, "deploy", "kubernetes");
const TARGETS = ["base", "overlays/single", "overlays/cluster"] as const;
const render = (target: string) => renderKustomization(path.join(k8sDir, target));

/** The schema of each kind the manifests may hold; a kind not listed fails the test. */
const MODELS: Record<string, { prototype: { validate(): void } }> = {
	"v1/ConfigMap": ConfigMap,
	"v1/Secret": Secret,
	"v1/Service": Service,
	"v1/PersistentVolumeClaim": PersistentVolumeClaim,
	"apps/v1/Deployment": Deployment,
	"policy/v1/PodDisruptionBudget": PodDisruptionBudget,
	"autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
};

/** Kinds whose pods come from a template (each must set enableServiceLinks: false). */
const WORKLOADS = new Set(["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"]);

/**
 * Validates `object` with `model`'s schema and returns the paths of fields the schema never looked
 * at: the generated validators read every property their schema declares (and every entry of a
 * map), so a field nobody read is one the API does not know (a typo the API server would drop).
 */
function validateStrictly(model: { prototype: { validate(): void } }, object: unknown): string[] {
	const read = new WeakMap<object, Set<PropertyKey>>();
	const proxies = new WeakMap<object, object>();
	const watch = (value: unknown): unknown => {
		if (value === null || typeof value !== "object") return value;
		let proxy = proxies.get(value);
		if (!proxy) {
			read.set(value, new Set());
			proxy = new Proxy(value, {
				get(target, key, receiver) {
					read.get(target)!.add(key);
					return watch(Reflect.get(target, key, receiver));
				},
			});
			proxies.set(value, proxy);
		}
		return proxy;
	};
	model.prototype.validate.call(watch(object));
	const unknown: string[] = [];
	const walk = (value: unknown, at: string) => {
		if (value === null || typeof value !== "object") return;
		if (Array.isArray(value)) {
			for (const [i, item] of value.entries()) walk(item, `${at}/${i}`);
			return;
		}
		for (const [key, child] of Object.entries(value)) {
			if (read.get(value)?.has(key)) walk(child, `${at}/${key}`);
			else unknown.push(`${at}/${key}`);
		}
	};
	walk(object, "");
	return unknown;
}

function find(objects: K8sObject[], kind: string, name?: string): any {
	const found = objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
	if (!found) throw new Error(`no ${kind}${name ? ` ${name}` : ""} rendered`);
	return found;
}

/** The pod specs of every workload, by `Kind/name`. */
function podSpecs(objects: K8sObject[]): Array<[string, any]> {
	return objects
		.filter((o) => WORKLOADS.has(o.kind))
		.map((o) => [`${o.kind}/${o.metadata.name}`, (o as any).spec.template.spec]);
}

/** The workloads whose pod spec does not set `enableServiceLinks: false`. */
function withServiceLinks(objects: K8sObject[]): string[] {
	return podSpecs(objects)
		.filter(([, spec]) => spec.enableServiceLinks !== false)
		.map(([name]) => name);
}

/** A Secret's or ConfigMap's entries as strings (`stringData` and base64 `data`). */
function entries(object: any): Record<string, string> {
	const out: Record<string, string> = {};
	for (const [key, value] of Object.entries(object.data ?? {}))
		out[key] = object.kind === "Secret" ? Buffer.from(String(value), "base64").toString() : String(value);
	for (const [key, value] of Object.entries(object.stringData ?? {})) out[key] = String(value);
	return out;
}

/** The environment the Deployment's container gets, as the kubelet builds it from `envFrom` and `env`. */
function containerEnv(objects: K8sObject[]): Record<string, string> {
	const container = find(objects, "Deployment").spec.template.spec.containers[0];
	const source = (kind: string, name: string) => entries(find(objects, kind, name));
	const env: Record<string, string> = {};
	for (const from of container.envFrom ?? []) {
		if (from.configMapRef) Object.assign(env, source("ConfigMap", from.configMapRef.name));
		if (from.secretRef) Object.assign(env, source("Secret", from.secretRef.name));
	}
	for (const variable of container.env ?? []) {
		if ("value" in variable) {
			env[variable.name] = variable.value;
			continue;
		}
		const ref = variable.valueFrom.secretKeyRef ?? variable.valueFrom.configMapKeyRef;
		const values = source(variable.valueFrom.secretKeyRef ? "Secret" : "ConfigMap", ref.name);
		if (ref.key in values) env[variable.name] = values[ref.key]!;
		else if (!ref.optional) throw new Error(`${variable.name}: ${ref.name} has no key ${ref.key}`);
	}
	return env;
}

/** The rendered objects with each Secret's entries named in `values` replaced, as an operator fills them in. */
function fillSecrets(objects: K8sObject[], values: Record<string, string>): K8sObject[] {
	return objects.map((o) => {
		if (o.kind !== "Secret") return o;
		const stringData = entries(o);
		for (const key of Object.keys(stringData)) if (key in values) stringData[key] = values[key]!;
		return { ...o, data: undefined, stringData };
	});
}

const apiKey = randomBytes(16).toString("hex");
const metricsToken = randomBytes(16).toString("hex");
/** Whether the server has an operator credential of its own for /metrics (else an API key reads it). */
const hasMetricsToken = CONFIG_VARS.some((v) => v.env === "WHEELHOUSE_METRICS_TOKEN");
const SECRETS = { WHEELHOUSE_API_KEYS: apiKey, WHEELHOUSE_METRICS_TOKEN: metricsToken };

/** The milliseconds a preStop hook waits (`exec: sleep N` or the `sleep` action). */
function preStopMs(container: any): number {
	const hook = container.lifecycle?.preStop;
	if (hook?.sleep) return hook.sleep.seconds * 1000;
	const command: string[] | undefined = hook?.exec?.command;
	if (command?.[0] === "sleep" && command.length === 2 && /^\d+$/.test(command[1]!)) return Number(command[1]) * 1000;
	throw new Error(`not a preStop sleep: ${JSON.stringify(hook)}`);
}

const dirs: string[] = [];
afterEach(() => {
	stopAll();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe.each(TARGETS)("deploy/kubernetes/%s", (target) => {
	const objects = render(target);

	it("renders resources of known kinds, each valid against the Kubernetes schema with no field it lacks", () => {
		expect(objects.length).toBeGreaterThan(0);
		for (const object of objects) {
			const id = `${object.apiVersion}/${object.kind}`;
			const model = MODELS[id];
			expect(model, `${id} ${object.metadata?.name}: no schema in the test's list`).toBeDefined();
			expect(() => validateStrictly(model!, object), `${id} ${object.metadata.name}`).not.toThrow();
			expect(validateStrictly(model!, object), `${id} ${object.metadata.name}: fields the API does not know`).toEqual(
				[],
			);
		}
		const names = objects.map((o) => `${o.kind}/${o.metadata.name}`);
		expect(new Set(names).size, "a kind and name appear once").toBe(names.length);
	});

	const kubectl = findKubectl();
	it.skipIf(!kubectl)("renders as kubectl kustomize does", () => {
		const byId = (list: K8sObject[]) =>
			Object.fromEntries(list.map((o) => [`${o.apiVersion}/${o.kind}/${o.metadata.name}`, o]));
		expect(byId(objects)).toEqual(byId(kubectlKustomize(kubectl!, path.join(k8sDir, target))));
	});

	it("sets enableServiceLinks: false on every pod", () => {
		expect(podSpecs(objects).length).toBeGreaterThan(0);
		expect(withServiceLinks(objects)).toEqual([]);
	});

	it("wires its parts together: selectors, ports, probes, scrape annotations, references", () => {
		const deployment = find(objects, "Deployment");
		const pod = deployment.spec.template;
		const container = pod.spec.containers[0];
		const podLabels = pod.metadata.labels;
		const matches = (selector: Record<string, string>) =>
			Object.entries(selector).every(([key, value]) => podLabels[key] === value);
		expect(matches(deployment.spec.selector.matchLabels)).toBe(true);
		expect(matches(find(objects, "Service").spec.selector)).toBe(true);
		expect(matches(find(objects, "PodDisruptionBudget").spec.selector.matchLabels)).toBe(true);

		// The named port is the port the server listens on (PORT), and what the Service, probes and scrape use.
		const env = containerEnv(fillSecrets(objects, SECRETS));
		const http = container.ports.find((p: any) => p.name === "http");
		expect(String(http.containerPort)).toBe(env.PORT);
		expect(find(objects, "Service").spec.ports[0].targetPort).toBe("http");
		expect(container.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
		expect(container.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "http" });
		expect(pod.metadata.annotations["prometheus.io/scrape"]).toBe("true");
		expect(pod.metadata.annotations["prometheus.io/port"]).toBe(env.PORT);
		expect(pod.metadata.annotations["prometheus.io/path"]).toBe("/metrics");

		// API keys come from a Secret (the server listens beyond loopback); provider keys may.
		expect(env.HOST).toBe("0.0.0.0");
		const fromSecret = (name: string) =>
			container.env.find((e: any) => e.name === name)?.valueFrom?.secretKeyRef?.name as string | undefined;
		expect(fromSecret("WHEELHOUSE_API_KEYS")).toBeDefined();
		// The scrape's credential: the operator token where the server reads one (then the Secret
		// must hold it), else an API key.
		expect(fromSecret("WHEELHOUSE_METRICS_TOKEN")).toBeDefined();
		if (hasMetricsToken)
			expect(Object.keys(entries(find(objects, "Secret", "wheelhouse")))).toContain("WHEELHOUSE_METRICS_TOKEN");
		for (const provider of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"])
			expect(fromSecret(provider), provider).toBeDefined();

		// Every volume a container mounts exists, and every claim is rendered.
		const volumes = new Map(pod.spec.volumes.map((v: any) => [v.name, v]));
		for (const mount of container.volumeMounts) expect(volumes.has(mount.name), mount.name).toBe(true);
		for (const volume of volumes.values() as Iterable<any>)
			if (volume.persistentVolumeClaim)
				expect(find(objects, "PersistentVolumeClaim", volume.persistentVolumeClaim.claimName)).toBeDefined();
	});

	it("runs as the Dockerfile's non-root user with requests and limits", () => {
		const dockerfile = readFileSync(path.join(repoRoot, "Dockerfile"), "utf8");
		const runtime = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
		const user = /^USER\s+(\S+)/m.exec(runtime)?.[1];
		// The official Node.js images' `node` user.
		expect(user).toBe("node");
		const { securityContext, containers } = find(objects, "Deployment").spec.template.spec;
		expect(securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000 });
		expect(containers[0].securityContext).toMatchObject({
			allowPrivilegeEscalation: false,
			capabilities: { drop: ["ALL"] },
		});
		expect(containers[0].resources.requests).toMatchObject({ cpu: expect.anything(), memory: expect.anything() });
		expect(containers[0].resources.limits).toMatchObject({ memory: expect.anything() });
	});

	it("gives the shutdown time to finish: preStop sleep + delay + grace + abort wait + flush ≤ terminationGracePeriodSeconds", () => {
		const pod = find(objects, "Deployment").spec.template.spec;
		// loadConfig applies the server's own defaults to what the ConfigMap leaves unset.
		const config = loadConfig(containerEnv(fillSecrets(objects, SECRETS)));
		const sleep = preStopMs(pod.containers[0]);
		expect(sleep).toBeGreaterThan(0);
		const stop = sleep + config.shutdownDelayMs + config.shutdownGraceMs + SHUTDOWN_ABORT_WAIT_MS + SHUTDOWN_FLUSH_MS;
		expect(stop).toBeLessThanOrEqual(pod.terminationGracePeriodSeconds * 1000);
	});

	it("refuses to start with the committed placeholders (the API keys must be filled in)", () => {
		const env = containerEnv(objects);
		let error: unknown;
		try {
			loadConfig(env);
		} catch (err) {
			error = err;
		}
		expect(error).toBeInstanceOf(ConfigError);
		expect((error as Error).message).toMatch(/WHEELHOUSE_API_KEYS/);
	});
});

describe("the checks themselves", () => {
	it("a pod without enableServiceLinks: false, and a misspelt field, are caught", () => {
		const objects = render("overlays/single");
		const deployment = structuredClone(find(objects, "Deployment"));
		delete deployment.spec.template.spec.enableServiceLinks;
		deployment.spec.template.spec.enableServiceLink = false;
		const changed = objects.map((o) => (o.kind === "Deployment" ? deployment : o));
		expect(withServiceLinks(changed)).toEqual(["Deployment/wheelhouse"]);
		expect(validateStrictly(Deployment, deployment)).toEqual(["/spec/template/spec/enableServiceLink"]);
	});
});

describe("overlays/single: one replica on SQLite", () => {
	const objects = render("overlays/single");

	it("keeps the database on the claim and stops the old pod before the new one starts", () => {
		const deployment = find(objects, "Deployment");
		expect(deployment.spec.replicas).toBe(1);
		expect(deployment.spec.strategy).toEqual({ type: "Recreate" });
		const config = loadConfig(containerEnv(fillSecrets(objects, SECRETS)));
		expect(config.store).toBe("sqlite");
		const pod = deployment.spec.template.spec;
		const mount = pod.containers[0].volumeMounts.find((m: any) => config.dbPath.startsWith(`${m.mountPath}/`));
		expect(mount, `a volume mounted above ${config.dbPath}`).toBeDefined();
		const volume = pod.volumes.find((v: any) => v.name === mount.name);
		const claim = find(objects, "PersistentVolumeClaim", volume.persistentVolumeClaim.claimName);
		expect(claim.spec.accessModes).toEqual(["ReadWriteOnce"]);
	});

	it("the real server, started with the pod's environment, answers the probes and the scrape", async () => {
		const env = containerEnv(fillSecrets(objects, SECRETS));
		const deployment = find(objects, "Deployment");
		const container = deployment.spec.template.spec.containers[0];
		// The claim's mount becomes a temporary folder; the port any free one.
		const dir = mkdtempSync(path.join(tmpdir(), "wh-k8s-"));
		dirs.push(dir);
		for (const mount of container.volumeMounts) {
			for (const [key, value] of Object.entries(env))
				if (value.startsWith(`${mount.mountPath}/`)) env[key] = path.join(dir, value.slice(mount.mountPath.length));
		}
		const port = await freePort();
		const { url: base } = await startMain({ db: env.WHEELHOUSE_DB!, port, env: { ...env, PORT: String(port) } });
		for (const probe of [container.startupProbe, container.livenessProbe, container.readinessProbe]) {
			const res = await fetch(`${base}${probe.httpGet.path}`);
			expect(res.status, probe.httpGet.path).toBe(200);
		}
		// The API keys of the Secret are enforced.
		expect((await fetch(`${base}/v1/sessions`)).status).toBe(401);
		expect((await fetch(`${base}/v1/sessions`, { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(200);
		// The scrape: the operator credential where the server has one, else an API key.
		const credential = hasMetricsToken ? metricsToken : apiKey;
		const annotations = deployment.spec.template.metadata.annotations;
		const scrape = await fetch(`${base}${annotations["prometheus.io/path"]}`, {
			headers: { authorization: `Bearer ${credential}` },
		});
		expect(scrape.status).toBe(200);
		expect(await scrape.text()).toMatch(/^# HELP /m);
	});

	it("the real server refuses to start with the Secret as committed", async () => {
		const env = containerEnv(objects);
		const { code, stderr } = await refusedStartup({ ...env, PORT: "0" });
		expect(code).not.toBe(0);
		expect(stderr).toMatch(/WHEELHOUSE_API_KEYS/);
	});
});

describe("overlays/cluster: replicas on PostgreSQL and Redis", async () => {
	const objects = render("overlays/cluster");
	const services = await haveClusterServices();
	const schemas = testSchemas("k8s-cluster");
	afterAll(() => stopAll());

	it("runs in cluster mode, replaces replicas one at a time and never lets a drain take the last one", () => {
		const config = loadConfig(containerEnv(fillSecrets(objects, SECRETS)));
		expect(config.store).toBe("postgres");
		// The PostgreSQL and Redis URLs (they may hold passwords) come from a Secret, and no ConfigMap has them.
		const container = find(objects, "Deployment").spec.template.spec.containers[0];
		for (const name of ["WHEELHOUSE_DATABASE_URL", "WHEELHOUSE_REDIS_URL"]) {
			const ref = container.env.find((e: any) => e.name === name)?.valueFrom?.secretKeyRef;
			expect(ref, name).toBeDefined();
			expect(Object.keys(entries(find(objects, "Secret", ref.name))), name).toContain(ref.key);
			for (const configMap of objects.filter((o) => o.kind === "ConfigMap"))
				expect(Object.keys(entries(configMap)), name).not.toContain(name);
		}
		expect(resolveClusterSettings(config)).toBeDefined();
		const deployment = find(objects, "Deployment");
		expect(deployment.spec.strategy).toEqual({
			type: "RollingUpdate",
			rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
		});
		const hpa = find(objects, "HorizontalPodAutoscaler");
		expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: "apps/v1", kind: "Deployment", name: "wheelhouse" });
		const pdb = find(objects, "PodDisruptionBudget");
		expect(pdb.spec.maxUnavailable).toBeLessThan(hpa.spec.minReplicas);
		// The autoscaler sets the count: a count in the Deployment would reset it at every apply.
		expect(deployment.spec.replicas).toBeUndefined();
		// Every replica's pool fits in PostgreSQL's default max_connections (100).
		expect(hpa.spec.maxReplicas * config.databasePoolSize).toBeLessThanOrEqual(100);
	});

	it.skipIf(!services)(
		"the real server, started with the pod's environment, is ready on PostgreSQL and Redis",
		async () => {
			const schema = schemas.next();
			const env = containerEnv(
				fillSecrets(objects, { ...SECRETS, WHEELHOUSE_DATABASE_URL: PG_URL, WHEELHOUSE_REDIS_URL: REDIS_URL }),
			);
			const port = await freePort();
			const { url } = await startMain({
				db: "/nonexistent/unused.db",
				port,
				env: {
					...env,
					PORT: String(port),
					WHEELHOUSE_DATABASE_SCHEMA: schema,
					WHEELHOUSE_REDIS_PREFIX: `wh-test:${schema}:`,
				},
			});
			const container = find(objects, "Deployment").spec.template.spec.containers[0];
			const ready = await fetch(`${url}${container.readinessProbe.httpGet.path}`);
			expect(ready.status).toBe(200);
			expect(await ready.json()).toMatchObject({ status: "ready", store: "postgres" });
			const live = await fetch(`${url}${container.livenessProbe.httpGet.path}`);
			expect(live.status).toBe(200);
		},
	);
	if (!services) it.skip(NO_CLUSTER_SERVICES, () => {});
});
