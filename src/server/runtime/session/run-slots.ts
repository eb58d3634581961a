/**
 * Runs running at once, per API key and per tenant (`WHEELHOUSE_MAX_RUNS_PER_KEY`,
 * `auth.maxRunsPerTenant`): a run takes its slot when its session is claimed, in the session
 * runtime, whichever path started it. The counts are in memory, per process.
 */
import { sessionError } from "./errors.js";

/**
 * Counts the runs each owner (and each tenant) has running and refuses one past the maximum. A run holds its slot
 * from the moment its session is claimed until the session is idle again (a run handed over by
 * `ifBusy: "interrupt"` keeps it). Owner `null` (auth off) is one owner: the limit then bounds all
 * runs together.
 */
export class RunSlots {
	private readonly running = new Map<string | null, number>();
	private readonly byTenant = new Map<string, number>();

	/**
	 * `max`: runs per owner (0: no limit). `perTenant`: runs of all the owners of one tenant
	 * together (`auth.maxRunsPerTenant`); owners without a tenant are not counted there.
	 */
	constructor(
		readonly max: number,
		private readonly onRefused: () => void = () => {},
		private readonly perTenant?: { max: number; tenantOf: (ownerId: string) => string | null },
	) {}

	/** Takes a slot for `ownerId`; throws `TOO_MANY_RUNS` when it, or its tenant, has its maximum already. */
	acquire(ownerId: string | null): void {
		const count = this.running.get(ownerId) ?? 0;
		if (this.max > 0 && count >= this.max) {
			this.onRefused();
			throw sessionError(
				"TOO_MANY_RUNS",
				`This API key already has ${count} ${count === 1 ? "run" : "runs"} running (limit ${this.max}); wait for one to end, or queue the message with ifBusy "steer" or "followUp" on a running session.`,
			);
		}
		const tenant = this.tenantOf(ownerId);
		if (tenant !== null && this.perTenant) {
			const tenantCount = this.byTenant.get(tenant) ?? 0;
			if (tenantCount >= this.perTenant.max) {
				this.onRefused();
				throw sessionError(
					"TOO_MANY_RUNS",
					`Your tenant already has ${tenantCount} ${tenantCount === 1 ? "run" : "runs"} running (limit ${this.perTenant.max}, auth.maxRunsPerTenant); wait for one to end, or queue the message with ifBusy "steer" or "followUp" on a running session.`,
				);
			}
			this.byTenant.set(tenant, tenantCount + 1);
		}
		this.running.set(ownerId, count + 1);
	}

	/** Gives back a slot taken by {@link acquire}. */
	release(ownerId: string | null): void {
		const count = this.running.get(ownerId) ?? 0;
		if (count <= 1) this.running.delete(ownerId);
		else this.running.set(ownerId, count - 1);
		const tenant = this.tenantOf(ownerId);
		if (tenant === null || !this.perTenant) return;
		const tenantCount = this.byTenant.get(tenant) ?? 0;
		if (tenantCount <= 1) this.byTenant.delete(tenant);
		else this.byTenant.set(tenant, tenantCount - 1);
	}

	private tenantOf(ownerId: string | null): string | null {
		return ownerId === null || !this.perTenant ? null : this.perTenant.tenantOf(ownerId);
	}
}
