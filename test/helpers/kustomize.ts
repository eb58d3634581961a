/**
 * Renders a kustomization folder the way `kustomize build` does, for the subset the manifests in
 * deploy/kubernetes use, so their tests need no kustomize binary: `resources` (YAML files and
 * kustomization folders) and `patches` given by `path` whose patch names its target by kind and
 * name (a strategic merge patch). Anything else in a kustomization.yaml is refused, never skipped.
 *
 * The strategic merge follows Kubernetes' rules for the fields the manifests patch: maps merge
 * key by key, a `null` deletes a key, the lists of the API's merge keys (containers and volumes by
 * `name`, volume mounts by `mountPath`, ...) merge item by item, every other list is replaced whole.
 * A merged list holds the patch's items first, in its order, then the base's other items: the
 * order kustomize (kyaml) gives it. Where `kubectl` is installed, the tests compare this rendering with
 * `kubectl kustomize`.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { parseAllDocuments } from "yaml";

/** One rendered Kubernetes object. */
export interface K8sObject {
	apiVersion: string;
	kind: string;
	metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
	[field: string]: unknown;
}

/** The kustomization.yaml keys this renderer implements. */
const SUPPORTED = new Set(["apiVersion", "kind", "resources", "patches"]);

/** List fields merged item by item, by the merge key the Kubernetes API declares for them. */
const MERGE_KEYS: Record<string, string> = {
	containers: "name",
	initContainers: "name",
	env: "name",
	volumes: "name",
	volumeMounts: "mountPath",
	ports: "containerPort",
	imagePullSecrets: "name",
};

function readYaml(file: string): unknown[] {
	return parseAllDocuments(readFileSync(file, "utf8")).map((doc) => {
		if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
		return doc.toJS();
	});
}

/** `kustomize build dir` for the subset above; throws naming the file and key it does not implement. */
export function renderKustomization(dir: string): K8sObject[] {
	const file = path.join(dir, "kustomization.yaml");
	const [k] = readYaml(file) as [Record<string, unknown>];
	for (const key of Object.keys(k)) {
		if (!SUPPORTED.has(key)) throw new Error(`${file}: \`${key}\` is not implemented by test/helpers/kustomize.ts`);
	}
	const objects: K8sObject[] = [];
	for (const entry of (k.resources ?? []) as string[]) {
		const target = path.resolve(dir, entry);
		if (statSync(target).isDirectory()) objects.push(...renderKustomization(target));
		else objects.push(...(readYaml(target).filter((d) => d != null) as K8sObject[]));
	}
	for (const patch of (k.patches ?? []) as Array<Record<string, unknown>>) {
		const keys = Object.keys(patch);
		if (keys.length !== 1 || typeof patch.path !== "string") {
			throw new Error(`${file}: a patch is \`path\` only here (got ${keys.join(", ")})`);
		}
		const patchFile = path.resolve(dir, patch.path);
		for (const doc of readYaml(patchFile) as K8sObject[]) {
			const i = objects.findIndex((o) => o.kind === doc.kind && o.metadata.name === doc.metadata.name);
			if (i < 0) throw new Error(`${patchFile}: no ${doc.kind} ${doc.metadata.name} to patch`);
			objects[i] = strategicMerge(objects[i], doc) as K8sObject;
		}
	}
	return objects;
}

/** A strategic merge patch of `patch` onto `base` (see the file comment for the rules). */
export function strategicMerge(base: unknown, patch: unknown, field = ""): unknown {
	if (Array.isArray(patch)) {
		const key = MERGE_KEYS[field];
		if (!key || !Array.isArray(base)) return structuredClone(patch);
		const items = patch as Array<Record<string, unknown>>;
		const baseItems = base as Array<Record<string, unknown>>;
		const named = new Set(items.map((item) => item[key]));
		return [
			...items.map((item) => {
				const counterpart = baseItems.find((b) => b[key] === item[key]);
				return counterpart ? strategicMerge(counterpart, item) : structuredClone(item);
			}),
			...baseItems.filter((b) => !named.has(b[key])).map((b) => structuredClone(b)),
		];
	}
	if (!isMap(patch) || !isMap(base)) return structuredClone(patch);
	const merged: Record<string, unknown> = structuredClone(base);
	for (const [key, value] of Object.entries(patch)) {
		if (key.startsWith("$")) throw new Error(`strategic merge directive ${key} is not implemented`);
		if (value === null) delete merged[key];
		else merged[key] = key in merged ? strategicMerge(merged[key], value, key) : structuredClone(value);
	}
	return merged;
}

function isMap(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The `kubectl` binary on PATH (or `KUBECTL_PATH`), if any. */
export function findKubectl(): string | undefined {
	if (process.env.KUBECTL_PATH) return process.env.KUBECTL_PATH;
	for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
		const candidate = path.join(dir, "kubectl");
		if (dir && existsSync(candidate)) return candidate;
	}
	return undefined;
}

/** `kubectl kustomize dir`, parsed. */
export function kubectlKustomize(kubectl: string, dir: string): K8sObject[] {
	const out = execFileSync(kubectl, ["kustomize", dir], { encoding: "utf8" });
	return parseAllDocuments(out)
		.map((doc) => doc.toJS() as K8sObject)
		.filter((d) => d != null);
}
