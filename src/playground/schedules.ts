/**
 * The schedules panel of the left column: the key's schedules (`GET /v1/schedules`) with their
 * timing, state and next fire, and, opened, their latest fires (`GET /v1/schedules/:id/fires`),
 * each fire's session a link that opens it. Read only: schedules are made through the API.
 */
import type { Api } from "./api.js";
import { el } from "./render.js";

type Schedule = {
	id: string;
	cron: string | null;
	at: number | null;
	timezone: string;
	prompt: string;
	state: string;
	nextFireAt: number | null;
};
type Fire = {
	id: number;
	kind: string;
	tickAt: number;
	outcome: string;
	sessionId: string | null;
	reason: string | null;
};

const FIRES_SHOWN = 10;

function when(ms: number | null): string {
	return ms === null ? "—" : new Date(ms).toLocaleString();
}

/** Fills `list` with the schedules; `open` opens a fire's session. Resolves to how many there are. */
export async function renderSchedules(list: HTMLElement, api: Api, open: (sessionId: string) => void): Promise<number> {
	const page = (await api.call("GET", "/v1/schedules?limit=100")) as { schedules: Schedule[] };
	list.replaceChildren(
		...page.schedules.map((schedule) => {
			const item = el("li", "schedule");
			item.dataset.schedule = schedule.id;
			const details = el("details");
			const timing = schedule.cron ? `${schedule.cron} (${schedule.timezone})` : `once at ${when(schedule.at)}`;
			const summary = el("summary", undefined, `${timing} · ${schedule.state}`);
			summary.title = schedule.prompt;
			const next = el("p", "muted", `Next: ${when(schedule.nextFireAt)} — “${schedule.prompt.slice(0, 80)}”`);
			const fires = el("ul", "fires");
			details.append(summary, next, fires);
			details.addEventListener("toggle", () => {
				if (details.open) void showFires(fires, api, schedule.id, open);
			});
			item.append(details);
			return item;
		}),
	);
	return page.schedules.length;
}

async function showFires(list: HTMLElement, api: Api, id: string, open: (sessionId: string) => void): Promise<void> {
	const page = (await api.call("GET", `/v1/schedules/${encodeURIComponent(id)}/fires?limit=${FIRES_SHOWN}`)) as {
		fires: Fire[];
	};
	if (page.fires.length === 0) {
		list.replaceChildren(el("li", "muted", "No fires yet."));
		return;
	}
	list.replaceChildren(
		...page.fires.map((fire) => {
			const item = el("li", `fire ${fire.outcome}`);
			item.append(el("span", undefined, `${when(fire.tickAt)} · ${fire.kind} · ${fire.outcome}`));
			if (fire.sessionId) {
				const link = el("button", "link", "open session");
				link.type = "button";
				const sessionId = fire.sessionId;
				link.addEventListener("click", () => open(sessionId));
				item.append(link);
			}
			if (fire.reason) item.title = fire.reason;
			return item;
		}),
	);
}
