/**
 * The playground page: a browser client of the `/v1` API written against `wheelhouse-agents/client`
 * (the event stream over fetch with the `Authorization` header, resumed with `Last-Event-ID` after
 * any drop; `MessageAssembler` rebuilds the streaming message). Sessions on the left, the chat in
 * the middle (with steer / follow-up / abort, the queues, approvals and client tool forms), every
 * event of the stream on the right.
 */
import { MessageAssembler, type ReceivedEvent, sessionEvents, WheelhouseHttpError } from "../client/index.js";
import { TITLE_KEY, titleFrom } from "../client/session-title.js";
import { Api, ApiError } from "./api.js";
import { type Follower, follow } from "./autoscroll.js";
import { beginSignIn, finishSignIn, forgetPendingSignIn, loadOidc, type OidcAvailability } from "./oidc.js";
import { pageElements } from "./page.js";
import {
	approvalCard,
	clientToolForm,
	elicitationCard,
	type Pending,
	type PendingElicitation,
	removePendingCards,
} from "./pending-cards.js";
import {
	el,
	fillToolCard,
	formatUsage,
	type Message,
	renderMessage,
	runUsageLine,
	setToolCardState,
} from "./render.js";
import { renderSchedules } from "./schedules.js";
import {
	fillModels,
	fillTools,
	matchesSearch,
	newestFirst,
	newSessionBody,
	type SessionSummary,
	sessionListItem,
} from "./sidebar.js";
import { Timeline } from "./timeline.js";

/** Reconnects `wheelhouse-agents/client` makes at the server's `retry:` pace before the page backs off itself. */
const MAX_RETRIES = 10;
/** The page's own backoff between those rounds, doubling up to the maximum; it never gives up. */
const RETRY_BASE_MS = 1000;
const RETRY_MAX_MS = 15_000;
/** Sessions the list shows at first and adds per "Load more". */
const SESSIONS_PAGE = 20;
/** Sessions the page loads for sorting and search (newest first needs them all; the API lists oldest first). */
const SESSIONS_MAX = 5000;
/** How often a visible page reads the session list again (other clients change it too). */
const SESSIONS_REFRESH_MS = 10_000;
/** Below this width the layout is one column with the chat first. */
const NARROW = "(max-width: 60rem)";

type ConnectionState = "idle" | "connecting" | "live" | "reconnecting" | "closed";

type QueueEntry = { id: number; kind: string; message: Message };

class Playground {
	readonly api = new Api();
	private sessionId: string | null = null;
	/** The open session's model ("" with none open). */
	private sessionModel = "";
	/** The catalog's stand-in models (`standIn: true`), explained under the chat. */
	private standIns = new Set<string>();
	private stream: AbortController | null = null;
	private assembler = new MessageAssembler();
	private readonly seen = new Set<string>();
	private streamingElement: HTMLElement | null = null;
	private renderQueued = false;
	private running = false;
	private lastEventId: number | undefined;
	private clientTools = new Map<string, unknown>();
	private queue = new Map<number, QueueEntry>();
	private sessions: SessionSummary[] = [];
	private sessionsShown = SESSIONS_PAGE;
	/** The open session's metadata (a title change sends it whole: PATCH replaces the map). */
	private metadata: Record<string, string> = {};
	private connection: ConnectionState = "idle";
	private modelsReady = false;
	/** Whether the open session's earlier events were put in the timeline already. */
	private historyLoaded = false;
	private history: AbortController | null = null;
	/** How the page may sign in with the server's identity provider (`GET /playground/auth.json`). */
	private oidc: OidcAvailability = { client: null };

	private readonly ui = pageElements();
	private readonly timeline = new Timeline(this.ui.events, () => this.ui.filter.value);
	private readonly followChat: Follower = follow(this.ui.chatScroll, this.ui.jumpLatest);
	private readonly followEvents: Follower = follow(this.ui.timeline, this.ui.jumpEvents);

	start(): void {
		const { ui } = this;
		this.api.onUnauthorized = () => this.askForKey("refused");
		ui.authButton.addEventListener("click", () => this.askForKey("asked"));
		ui.authForm.addEventListener("submit", (event) => {
			event.preventDefault();
			this.api.apiKey = ui.apiKey.value.trim();
			ui.apiKey.value = "";
			ui.authForm.hidden = true;
			this.notice("");
			this.showSignedIn();
			void this.loadAll();
		});
		ui.authForget.addEventListener("click", () => {
			this.api.apiKey = "";
			ui.apiKey.value = "";
			this.showSignedIn();
		});
		ui.oidcButton.addEventListener("click", () => {
			const oidc = this.oidc;
			if ("unavailable" in oidc) this.notice(`Sign-in is not available now: ${oidc.unavailable}`);
			else if (oidc.client) {
				const client = oidc.client;
				void this.guard(() => beginSignIn(client));
			}
		});
		// Signing out forgets the token in this tab and starts the page afresh (no stream keeps the old one).
		// The provider's own session is not ended: its next sign-in may not ask for a password.
		ui.signOut.addEventListener("click", () => {
			this.api.apiKey = "";
			forgetPendingSignIn();
			location.assign(location.pathname);
		});
		ui.createForm.addEventListener("submit", (event) => {
			event.preventDefault();
			void this.guard(() => this.createSession());
		});
		ui.model.addEventListener("change", () => {
			if (!this.sessionId) this.explainModel(ui.model.value);
		});
		ui.moreSessions.addEventListener("click", () => {
			this.sessionsShown += SESSIONS_PAGE;
			this.renderSessions();
		});
		ui.sessionSearch.addEventListener("input", () => {
			this.sessionsShown = SESSIONS_PAGE;
			this.renderSessions();
		});
		// Loaded when opened: a page that never looks at schedules never asks for them.
		ui.schedulesPanel.addEventListener("toggle", () => {
			if (!ui.schedulesPanel.open) return;
			void this.guard(async () => {
				const count = await renderSchedules(ui.scheduleList, this.api, (id) => void this.guard(() => this.open(id)));
				ui.noSchedules.hidden = count > 0;
			});
		});
		ui.sessionTitle.addEventListener("change", () => void this.guard(() => this.saveTitle(ui.sessionTitle.value)));
		ui.sessionTitle.addEventListener("keydown", (event) => {
			if (event.key === "Escape") ui.sessionTitle.value = this.metadata[TITLE_KEY] ?? "";
			if (event.key === "Enter" || event.key === "Escape") ui.sessionTitle.blur();
		});
		ui.composer.addEventListener("submit", (event) => {
			event.preventDefault();
			void this.guard(() => this.sendMessage("prompt"));
		});
		ui.prompt.addEventListener("keydown", (event) => {
			if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
				event.preventDefault();
				void this.guard(() => this.sendMessage(this.running ? "steer" : "prompt"));
			}
		});
		ui.steer.addEventListener("click", () => void this.guard(() => this.sendMessage("steer")));
		ui.followUp.addEventListener("click", () => void this.guard(() => this.sendMessage("follow-up")));
		ui.abort.addEventListener("click", () => void this.guard(() => this.post("abort")));
		ui.clearQueue.addEventListener("click", () => void this.guard(() => this.call("DELETE", "queue")));
		ui.fork.addEventListener("click", () => void this.guard(() => this.fork()));
		ui.regenerate.addEventListener("click", () => void this.guard(() => this.post("regenerate")));
		ui.editLast.addEventListener("click", () => void this.guard(() => this.editLast()));
		ui.filter.addEventListener("input", () => this.timeline.refilter());
		// Other tabs and clients change sessions too: coming back to the page refreshes the list.
		document.addEventListener("visibilitychange", () => {
			if (document.visibilityState === "visible") void this.guard(() => this.loadSessions());
		});
		// ...and so does a page left open beside a terminal: the list is read again now and then.
		setInterval(() => void this.refreshSessionsQuietly(), SESSIONS_REFRESH_MS);
		void this.signInThenLoad();
	}

	/**
	 * Learns how the page may sign in, finishes a sign-in the provider sent the browser back from
	 * (a refused one is said in the alert region and keeps no token), then loads everything.
	 */
	private async signInThenLoad(): Promise<void> {
		this.oidc = await loadOidc();
		this.ui.oidcSignIn.hidden = "client" in this.oidc && this.oidc.client === null;
		if ("client" in this.oidc && this.oidc.client) {
			this.ui.oidcButton.textContent = `Sign in with ${new URL(this.oidc.client.issuer).host}`;
			// Until `GET /v1/me` says who is signed in.
			this.ui.authButton.textContent = "Sign in…";
		}
		try {
			const token = await finishSignIn("client" in this.oidc ? this.oidc.client : null);
			if (token) this.api.apiKey = token;
		} catch (error) {
			this.notice((error as Error).message);
		}
		this.showSignedIn();
		await this.loadAll();
	}

	/** The header's "Sign out" is there while the tab holds a key or token. */
	private showSignedIn(): void {
		this.ui.signOut.hidden = this.api.apiKey === "";
	}

	// --- helpers ----------------------------------------------------------------------------

	/** Runs an action; its failure is shown in the alert region (a 401 opens the key form instead). */
	private async guard(action: () => Promise<unknown>): Promise<void> {
		try {
			await action();
		} catch (error) {
			if (error instanceof ApiError && error.status === 401) return;
			this.notice(error instanceof ApiError ? `${error.code}: ${error.message}` : String((error as Error).message));
		}
	}

	private notice(text: string): void {
		this.ui.notice.textContent = text;
		this.ui.notice.hidden = text === "";
	}

	/**
	 * Shows the sign-in form: `refused` after a 401, `asked` from the header's button. The server's
	 * own 401 text is written for API clients (header syntax in backticks), so the page says it in
	 * its own words: no key yet, or a key that was refused.
	 */
	private askForKey(why: "refused" | "asked"): void {
		const { ui } = this;
		const oidc = !ui.oidcSignIn.hidden;
		ui.authReason.textContent =
			why === "asked"
				? oidc
					? "Sign in, or enter an API key or login token for this server."
					: "Enter an API key for this server."
				: this.api.apiKey
					? `The ${oidc ? "key or token" : "API key"} in use was not accepted by this server (wrong, expired or revoked). ${oidc ? "Sign in again or enter" : "Enter"} another one.`
					: oidc
						? "This server needs you to sign in: with its identity provider, or with an API key or login token."
						: "This server needs an API key. Enter one of its keys to use the playground.";
		ui.authForm.hidden = false;
		if (why === "refused" && !this.modelsReady) this.setModelsReady(false, "Sign in to load the models.");
		ui.apiKey.focus();
	}

	/**
	 * Says what a stand-in model does under the chat, so that an echo is not taken for a broken
	 * agent: `model` is the open session's, or with none open the one the first message would use.
	 */
	private explainModel(model: string): void {
		const standIn = this.standIns.has(model);
		this.ui.standInHint.hidden = !standIn;
		this.ui.standInHint.textContent = standIn
			? `${model} is a stand-in: it repeats your message (no LLM, no key). Try /tool calculate {"expression":"6*7"}. A provider key on the server gives a real model.`
			: "";
	}

	private setModelsReady(ready: boolean, status: string): void {
		this.modelsReady = ready;
		this.ui.createButton.disabled = !ready;
		this.ui.createStatus.textContent = status;
		this.ui.createStatus.hidden = status === "";
		this.updateControls();
	}

	private setConnection(state: ConnectionState, text: string): void {
		this.connection = state;
		this.ui.connection.dataset.state = state;
		this.ui.connection.textContent = text;
		this.updateControls();
	}

	private path(sub: string): string {
		const base = `/v1/sessions/${encodeURIComponent(this.sessionId ?? "")}`;
		return sub ? `${base}/${sub}` : base;
	}

	private call(method: string, sub: string, body?: unknown): Promise<any> {
		return this.api.call(method, this.path(sub), body);
	}

	private post(sub: string, body?: unknown): Promise<any> {
		return this.call("POST", sub, body);
	}

	// --- catalog and sessions ---------------------------------------------------------------

	private async loadAll(): Promise<void> {
		void this.showIdentity();
		await this.guard(async () => {
			await Promise.all([this.loadCatalog(), this.loadSessions()]);
			const wanted = /(?:^|&)session=([^&]+)/.exec(location.hash.slice(1))?.[1];
			const id = this.sessionId ?? (wanted ? decodeURIComponent(wanted) : null);
			if (id) await this.open(id);
		});
	}

	/** Says who is signed in on the header's button (`GET /v1/me`): the login's subject and tenant, or an API key. */
	private async showIdentity(): Promise<void> {
		let me: { kind: string; subject: string | null; tenant: string | null };
		try {
			me = await this.api.call("GET", "/v1/me");
		} catch (error) {
			// A 401 has asked for a key already; anything else leaves the button as it is.
			if (!(error instanceof ApiError && error.status === 401)) console.warn("GET /v1/me:", error);
			return;
		}
		const who =
			me.kind === "jwt" ? `${me.subject}${me.tenant ? ` (${me.tenant})` : ""}` : me.kind === "key" ? "an API key" : "";
		this.ui.authButton.textContent = who ? `Signed in: ${who}` : "API key…";
		this.ui.authButton.title = who ? "Sign in with another key or token" : "";
	}

	private async loadCatalog(): Promise<void> {
		let models: any;
		let tools: any;
		try {
			[models, tools] = await Promise.all([this.api.call("GET", "/v1/models"), this.api.call("GET", "/v1/tools")]);
		} catch (error) {
			// A 401 has said "sign in" already; anything else is said where the button is.
			if (!(error instanceof ApiError && error.status === 401))
				this.setModelsReady(
					false,
					`The models could not be loaded (${(error as Error).message}). Reload to try again.`,
				);
			throw error;
		}
		const usable = fillModels(this.ui.model, models.models, models.defaultModel);
		this.standIns = new Set(
			(models.models as { id: string; standIn?: boolean }[]).filter((m) => m.standIn).map((m) => m.id),
		);
		this.explainModel(this.sessionId ? this.sessionModel : this.ui.model.value);
		fillTools(this.ui.toolList, tools.tools);
		this.setModelsReady(
			usable > 0,
			usable > 0 ? "" : "No model can be used: the server has no provider key for any of its models.",
		);
	}

	/**
	 * The periodic refresh of the list: only while the page is seen and signed in, never while
	 * keyboard focus is in the list (re-rendering would drop it), and a failure says nothing (the
	 * connection state already does).
	 */
	private async refreshSessionsQuietly(): Promise<void> {
		if (document.visibilityState !== "visible" || !this.modelsReady) return;
		if (this.ui.sessionList.contains(document.activeElement)) return;
		try {
			await this.loadSessions();
		} catch {}
	}

	/** Every session of this key (up to {@link SESSIONS_MAX}), so the list can be newest first and searched. */
	private async loadSessions(): Promise<void> {
		const all: SessionSummary[] = [];
		let cursor: string | undefined;
		do {
			const query = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
			const page = await this.api.call("GET", `/v1/sessions?limit=1000${query}`);
			all.push(...page.sessions);
			cursor = page.nextCursor;
		} while (cursor && all.length < SESSIONS_MAX);
		// Unchanged, the list is left as it is (a re-render would reset a hover or a scroll position).
		if (JSON.stringify(all) === JSON.stringify(this.sessions)) return;
		this.sessions = all;
		this.renderSessions();
	}

	/** The list: newest first, filtered by the search box, {@link SESSIONS_PAGE} more per "Load more". */
	private renderSessions(): void {
		const { ui } = this;
		const query = ui.sessionSearch.value;
		const matching = this.sessions.filter((s) => matchesSearch(s, query)).sort(newestFirst);
		ui.sessionList.replaceChildren(...matching.slice(0, this.sessionsShown).map((s) => this.sessionItem(s)));
		ui.moreSessions.hidden = matching.length <= this.sessionsShown;
		ui.noSessions.hidden = matching.length > 0 || this.sessions.length === 0;
		this.markCurrent();
	}

	/** Adds or updates one session of the list (after a create, a title change, a run). */
	private upsertSession(summary: SessionSummary): void {
		const index = this.sessions.findIndex((s) => s.id === summary.id);
		if (index === -1) this.sessions.push(summary);
		else this.sessions[index] = { ...this.sessions[index], ...summary };
		this.renderSessions();
	}

	private sessionItem(session: SessionSummary): HTMLElement {
		return sessionListItem(session, {
			open: () => void this.guard(() => this.open(session.id)),
			remove: () =>
				void this.guard(async () => {
					await this.api.call("DELETE", `/v1/sessions/${encodeURIComponent(session.id)}`);
					this.sessions = this.sessions.filter((s) => s.id !== session.id);
					this.renderSessions();
					if (this.sessionId === session.id) this.close();
				}),
		});
	}

	private markCurrent(): void {
		for (const item of this.ui.sessionList.children) {
			const li = item as HTMLElement;
			li.setAttribute("aria-current", String(li.dataset.session === this.sessionId));
		}
	}

	/** Forks the open session (its whole transcript) and opens the fork. */
	private async fork(): Promise<void> {
		const fork = await this.call("POST", "fork", {});
		this.upsertSession(this.summaryOf(fork));
		await this.open(fork.id);
	}

	/**
	 * Replaces the last user message with the composer's text (`PATCH .../messages/wh-<index>`):
	 * the transcript is read back from its end to find that message.
	 */
	private async editLast(): Promise<void> {
		const content = this.ui.prompt.value;
		if (!content.trim()) {
			this.notice("Type the new text of the last user message above, then press Edit last.");
			this.ui.prompt.focus();
			return;
		}
		const { total } = await this.call("GET", "messages?limit=1");
		for (let end = total; end > 0; end -= 200) {
			const offset = Math.max(0, end - 200);
			const page = await this.call("GET", `messages?offset=${offset}&limit=${end - offset}`);
			const messages: Message[] = page.messages ?? [];
			for (let i = messages.length - 1; i >= 0; i--) {
				if (messages[i]?.role !== "user") continue;
				await this.call("PATCH", `messages/wh-${offset + i}`, { content });
				this.ui.prompt.value = "";
				this.notice("");
				return;
			}
		}
		this.notice("This session has no user message to edit.");
	}

	/** Shows the stored transcript in the chat (after what is there), with a usage line after each prompt's answers. */
	private async showTranscript(): Promise<void> {
		let sinceUser: Message[] = [];
		for (let offset = 0; ; ) {
			const page = await this.call("GET", `messages?offset=${offset}&limit=1000`);
			const messages: Message[] = page.messages ?? [];
			for (const message of messages) {
				if (message.role === "user" && sinceUser.length > 0) {
					this.appendRunUsage(sinceUser);
					sinceUser = [];
				}
				sinceUser.push(message);
				this.appendMessage(message);
			}
			offset += messages.length;
			if (messages.length === 0 || offset >= (page.total ?? offset)) break;
		}
		if (!this.running) this.appendRunUsage(sinceUser);
	}

	private async createSession(): Promise<void> {
		const session = await this.api.call("POST", "/v1/sessions", newSessionBody(this.ui));
		this.upsertSession({ ...session, messageCount: 0, lastActiveAt: session.createdAt });
		await this.open(session.id);
	}

	/** Stores the open session's title as its metadata (`PATCH`; an empty title removes it). */
	private async saveTitle(text: string): Promise<void> {
		const id = this.sessionId;
		if (!id) return;
		const title = text.trim();
		if (title === (this.metadata[TITLE_KEY] ?? "")) return;
		const { [TITLE_KEY]: _old, ...rest } = this.metadata;
		const metadata = title ? { ...rest, [TITLE_KEY]: title } : rest;
		const session = await this.api.call("PATCH", `/v1/sessions/${encodeURIComponent(id)}`, { metadata });
		if (this.sessionId === id) this.metadata = session.metadata ?? metadata;
		this.upsertSession({ ...this.summaryOf(session) });
	}

	/**
	 * Moves the open session up the list after a run: its last message's time (the server's clock,
	 * like the list's `lastActiveAt`) is its latest activity.
	 */
	private markActive(messages: Message[]): void {
		const at = messages.at(-1)?.timestamp;
		const entry = this.sessions.find((s) => s.id === this.sessionId);
		if (entry && at && at > (entry.lastActiveAt ?? 0)) entry.lastActiveAt = at;
	}

	/** A list entry from a full session view, keeping the list's last-activity time when it is newer. */
	private summaryOf(session: any): SessionSummary {
		const known = this.sessions.find((s) => s.id === session.id);
		return {
			id: session.id,
			model: session.model,
			status: session.status,
			messageCount: session.messageCount,
			createdAt: session.createdAt,
			lastActiveAt: Math.max(known?.lastActiveAt ?? 0, session.updatedAt ?? 0, session.createdAt ?? 0),
			metadata: session.metadata,
		};
	}

	// --- the open session -------------------------------------------------------------------

	private close(): void {
		this.stream?.abort();
		this.stream = null;
		this.history?.abort();
		this.history = null;
		this.sessionId = null;
		this.assembler = new MessageAssembler();
		this.seen.clear();
		this.queue.clear();
		this.streamingElement = null;
		this.lastEventId = undefined;
		this.running = false;
		this.metadata = {};
		this.historyLoaded = false;
		this.ui.messages.replaceChildren();
		this.ui.pending.replaceChildren();
		this.ui.events.replaceChildren();
		this.renderQueue();
		this.ui.sessionTitle.value = "";
		this.ui.sessionTitle.disabled = true;
		this.ui.sessionInfo.textContent = "Create or pick a session — or just type a message to start one.";
		this.sessionModel = "";
		this.explainModel(this.ui.model.value);
		this.setConnection("idle", "No session open");
		history.replaceState(null, "", location.pathname);
		this.updateControls();
		this.markCurrent();
	}

	private async open(id: string): Promise<void> {
		this.close();
		this.sessionId = id;
		history.replaceState(null, "", `${location.pathname}#session=${encodeURIComponent(id)}`);
		this.markCurrent();
		this.ui.sessionTitle.disabled = false;
		// On a phone the form would push the chat away: it folds once a session is open.
		if (matchMedia(NARROW).matches) this.ui.createDetails.open = false;
		await this.refreshSession();
		this.connect(undefined);
	}

	/** Session config and totals (`GET /v1/sessions/:id`): the info line and the client tool schemas. */
	private async refreshSession(): Promise<void> {
		const session = await this.call("GET", "");
		this.clientTools = new Map(
			(session.clientTools ?? []).map((t: { name: string; parameters?: unknown }) => [t.name, t.parameters]),
		);
		this.metadata = session.metadata ?? {};
		if (document.activeElement !== this.ui.sessionTitle) this.ui.sessionTitle.value = this.metadata[TITLE_KEY] ?? "";
		this.sessionModel = session.model;
		this.explainModel(session.model);
		this.ui.sessionInfo.textContent = `${session.model} · ${session.status} · ${session.messageCount} message${session.messageCount === 1 ? "" : "s"} · session total: ${formatUsage(session.usage)} · ${session.id}`;
		this.upsertSession(this.summaryOf(session));
	}

	/** Opens the event stream (after `after`, or from a snapshot); it resumes by itself after drops. */
	private connect(after: number | undefined, attempt = 0): void {
		const sessionId = this.sessionId;
		if (!sessionId) return;
		const controller = new AbortController();
		this.stream = controller;
		let reconnecting = attempt > 0;
		if (!reconnecting) this.setConnection("connecting", "Connecting…");
		const trackedFetch: typeof fetch = async (input, init) => {
			const response = await fetch(input, init);
			if (response.ok && !controller.signal.aborted) {
				this.setConnection(
					"live",
					reconnecting && this.lastEventId !== undefined
						? `Live — reconnected, resumed after event #${this.lastEventId}`
						: "Live",
				);
				reconnecting = false;
			}
			return response;
		};
		const events = sessionEvents({
			baseUrl: location.origin,
			sessionId,
			apiKey: this.api.apiKey || undefined,
			lastEventId: after,
			signal: controller.signal,
			maxRetries: MAX_RETRIES,
			fetch: trackedFetch,
			onReconnect: ({ attempt, lastEventId }) => {
				reconnecting = true;
				this.setConnection(
					"reconnecting",
					`Connection lost — reconnecting (attempt ${attempt}${lastEventId !== undefined ? `, will resume after event #${lastEventId}` : ""})…`,
				);
			},
		});
		void (async () => {
			try {
				for await (const event of events) {
					if (controller.signal.aborted) return;
					await this.handle(event);
				}
			} catch (error) {
				if (controller.signal.aborted) return;
				if (error instanceof WheelhouseHttpError && error.status < 500) {
					// An answer, not an outage (the key, a deleted session): retrying would not change it.
					if (error.status === 401) this.askForKey("refused");
					this.setConnection("closed", `Disconnected: ${error.message}`);
					this.offerReconnect();
					return;
				}
				// The server is away (a restart takes a while): keep trying, less often, and say so.
				const delayMs = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** Math.min(attempt, 5));
				this.setConnection(
					"reconnecting",
					`Server unreachable — retrying in ${Math.round(delayMs / 1000)} s${this.lastEventId !== undefined ? `, will resume after event #${this.lastEventId}` : ""}…`,
				);
				setTimeout(() => {
					if (this.stream === controller) this.connect(this.lastEventId, attempt + 1);
				}, delayMs);
			}
		})();
	}

	private offerReconnect(): void {
		const button = el("button", "secondary", "Reconnect");
		button.type = "button";
		button.addEventListener("click", () => {
			button.remove();
			this.connect(this.lastEventId);
		});
		this.ui.connection.append(" ", button);
	}

	// --- events -----------------------------------------------------------------------------

	private async handle(event: ReceivedEvent): Promise<void> {
		if (event.id !== undefined) this.lastEventId = event.id;
		this.addToTimeline(event);
		if (event.type === "session_snapshot" && !this.historyLoaded) {
			this.historyLoaded = true;
			if (event.id) void this.loadHistory(event.id);
		}
		const data = event.data as any;
		this.assembler.apply(event.data);
		switch (event.type) {
			case "session_snapshot":
				await this.applySnapshot(data);
				break;
			case "agent_start":
				this.running = true;
				this.updateControls();
				void this.guard(() => this.refreshSession());
				break;
			case "message_start":
				if (data.message?.role === "assistant") this.startStreaming();
				break;
			case "message_update":
				if (!this.streamingElement) this.startStreaming();
				this.scheduleRender();
				break;
			case "message_end":
				this.streamingElement?.remove();
				this.streamingElement = null;
				this.appendMessage(data.message);
				break;
			case "tool_result_requested":
				// Sent once the call waits for its result (after its approval, when it asks for one).
				this.addClientToolForm(data);
				this.toolCardState(data.toolCallId, "waiting for your result");
				break;
			case "tool_execution_end":
				this.removePending(data.toolCallId, "client");
				break;
			case "approval_requested":
				this.addApproval(data);
				this.toolCardState(data.toolCallId, "waiting for approval");
				break;
			case "approval_resolved":
				this.removePending(data.toolCallId, "approval");
				this.toolCardState(data.toolCallId, "running…");
				break;
			case "elicitation_requested":
				this.addElicitation(data);
				this.toolCardState(data.toolCallId, `waiting for your answer to ${data.server}`);
				break;
			case "elicitation_resolved":
				this.removePending(data.elicitationId, "elicitation");
				this.toolCardState(data.toolCallId, "running…");
				break;
			case "queue_update":
				for (const entry of data.messages as QueueEntry[]) {
					if (data.action === "queued") this.queue.set(entry.id, entry);
					else this.queue.delete(entry.id);
				}
				if (data.action === "cleared" && data.steeringCount === 0 && data.followUpCount === 0) this.queue.clear();
				this.renderQueue();
				break;
			case "agent_end":
			case "run_interrupted":
				if (event.type === "agent_end") {
					this.appendRunUsage(data.messages ?? []);
					this.markActive(data.messages ?? []);
				}
				this.running = false;
				this.updateControls();
				if (event.type === "run_interrupted") {
					// The message that was streaming when the process died was not kept: drop it.
					this.streamingElement?.remove();
					this.streamingElement = null;
					this.assembler = new MessageAssembler();
					this.notice(data.message);
				}
				await this.guard(() => this.refreshSession());
				break;
			case "transcript_rewound":
				// The transcript was cut (a rewind, a regenerate, an edit): show it as it is now; the
				// run that follows streams after it (messages already shown are skipped).
				this.seen.clear();
				this.ui.messages.replaceChildren();
				this.streamingElement = null;
				await this.showTranscript();
				break;
			case "stream_dropped":
				this.setConnection("reconnecting", `The server dropped this stream (${data.reason}) — resuming…`);
				break;
		}
	}

	private async applySnapshot(data: any): Promise<void> {
		if (data.reset) {
			this.seen.clear();
			this.ui.messages.replaceChildren();
			this.streamingElement = null;
		}
		const state = data.state ?? {};
		this.running = state.status === "running" || state.isStreaming === true;
		this.queue.clear();
		for (const kind of ["steering", "followUp"] as const) {
			for (const entry of state.queue?.[kind] ?? []) this.queue.set(entry.id, { ...entry, kind });
		}
		this.renderQueue();
		// The transcript up to now; messages that also come on the stream later are skipped there.
		// A line with the usage follows each prompt's answers (the run in progress has none yet).
		await this.showTranscript();
		if (data.streamingMessage) {
			this.startStreaming();
			this.scheduleRender();
		}
		this.ui.pending.replaceChildren();
		for (const approval of (state.pendingApprovals ?? []) as Pending[])
			if (!approval.orphaned) {
				this.addApproval(approval);
				this.toolCardState(approval.toolCallId, "waiting for approval");
			}
		for (const call of (state.pendingClientToolCalls ?? []) as Pending[])
			if (!call.orphaned) this.addClientToolForm(call);
		for (const request of (state.pendingElicitations ?? []) as PendingElicitation[])
			if (!request.orphaned) {
				this.addElicitation(request);
				this.toolCardState(request.toolCallId, `waiting for your answer to ${request.server}`);
			}
		this.updateControls();
	}

	private messageKey(message: Message): string {
		return `${message.role}:${message.timestamp ?? ""}:${message.toolCallId ?? ""}:${message.role === "user" ? JSON.stringify(message.content) : ""}`;
	}

	private appendMessage(message: Message | undefined): void {
		if (!message) return;
		const key = this.messageKey(message);
		if (this.seen.has(key)) return;
		this.seen.add(key);
		// A tool's result goes into its call's card, when the call is on the page.
		if (message.role === "toolResult" && message.toolCallId) {
			const card = this.toolCard(message.toolCallId);
			if (card) {
				fillToolCard(card, message);
				this.followChat.added();
				return;
			}
		}
		this.insertInChat(renderMessage(message));
	}

	/** The card of a tool call in the chat, if it is there. */
	private toolCard(toolCallId: string): HTMLElement | undefined {
		return [...this.ui.messages.querySelectorAll<HTMLElement>(".tool-card")].find(
			(c) => c.dataset.toolCallId === toolCallId,
		);
	}

	private toolCardState(toolCallId: string, text: string): void {
		const card = this.toolCard(toolCallId);
		if (card) setToolCardState(card, text);
	}

	/** Adds an element to the chat (before the message still streaming) and keeps the newest in view. */
	private insertInChat(element: HTMLElement): void {
		if (this.streamingElement) this.ui.messages.insertBefore(element, this.streamingElement);
		else this.ui.messages.append(element);
		this.followChat.added();
	}

	/** The usage line of a run (its model calls, tokens and cost), after its messages. */
	private appendRunUsage(messages: Message[]): void {
		const line = runUsageLine(messages);
		if (line) this.insertInChat(line);
	}

	/**
	 * A reopened session's stream starts with a snapshot: the events before it are read from the
	 * start of the server's log (as far as it keeps them) and put in front of it in the timeline.
	 */
	private async loadHistory(upTo: number): Promise<void> {
		const sessionId = this.sessionId;
		if (!sessionId) return;
		const controller = new AbortController();
		this.history = controller;
		const events: ReceivedEvent[] = [];
		try {
			for await (const event of sessionEvents({
				baseUrl: location.origin,
				sessionId,
				apiKey: this.api.apiKey || undefined,
				lastEventId: 0,
				signal: controller.signal,
				maxRetries: 0,
			})) {
				if (this.sessionId !== sessionId) break;
				// A snapshot here means the log no longer starts at the beginning: what came before it is all there is.
				if (event.type === "session_snapshot") break;
				events.push(event);
				if ((event.id ?? 0) >= upTo) break;
			}
		} catch {
			// The history is a nicety: without it the timeline starts at the snapshot, as before.
		} finally {
			controller.abort();
			if (this.history === controller) this.history = null;
		}
		if (this.sessionId === sessionId && events.length > 0) this.timeline.prepend(events);
	}

	private startStreaming(): void {
		this.streamingElement?.remove();
		this.streamingElement = renderMessage(this.assembler.message as Message, true);
		this.ui.messages.append(this.streamingElement);
		this.followChat.added();
	}

	/** Re-renders the streaming message once per frame, however many deltas arrived. */
	private scheduleRender(): void {
		if (this.renderQueued) return;
		this.renderQueued = true;
		requestAnimationFrame(() => {
			this.renderQueued = false;
			const current = this.streamingElement;
			const message = this.assembler.message as Message | undefined;
			if (!current || !message || !this.assembler.isStreaming) return;
			const next = renderMessage(message, true);
			current.replaceWith(next);
			this.streamingElement = next;
			this.followChat.added();
		});
	}

	/**
	 * The composer follows the session and the connection: with no session open a message starts
	 * one (once the models are loaded); while the server is unreachable nothing can be sent, and the
	 * status under the buttons says why.
	 */
	private updateControls(): void {
		const { ui } = this;
		const open = this.sessionId !== null;
		const live = this.connection === "live";
		const canStart = !open && this.modelsReady;
		ui.prompt.disabled = !open && !canStart;
		ui.send.disabled = open ? this.running || !live : !canStart;
		ui.steer.disabled = !open || !this.running || !live;
		ui.followUp.disabled = !open || !this.running || !live;
		ui.abort.disabled = !open || !this.running || !live;
		ui.fork.disabled = !open || this.running || !live;
		ui.regenerate.disabled = !open || this.running || !live;
		ui.editLast.disabled = !open || this.running || !live;
		ui.composerStatus.textContent = !open
			? ""
			: this.connection === "reconnecting" || this.connection === "closed"
				? "Not connected to the server: sending is paused until the connection is back."
				: this.connection === "connecting"
					? "Connecting…"
					: "";
		ui.composerStatus.dataset.state = this.connection;
	}

	private async sendMessage(kind: "prompt" | "steer" | "follow-up"): Promise<void> {
		const message = this.ui.prompt.value;
		if (!message.trim()) {
			this.ui.prompt.focus();
			return;
		}
		if (this.sessionId === null) {
			if (kind !== "prompt" || !this.modelsReady) return;
			await this.createSession();
		}
		const untitled = kind === "prompt" && !this.metadata[TITLE_KEY];
		await this.post(kind, { message });
		this.ui.prompt.value = "";
		this.notice("");
		// A session is named after its first prompt (the title can be edited above the chat).
		if (untitled && titleFrom(message)) {
			this.ui.sessionTitle.value = titleFrom(message);
			await this.saveTitle(titleFrom(message));
		}
	}

	private renderQueue(): void {
		const { queue, queueList } = this.ui;
		queueList.replaceChildren();
		for (const entry of [...this.queue.values()].sort((a, b) => a.id - b.id)) {
			const content = entry.message?.content;
			const text =
				typeof content === "string"
					? content
					: (content ?? []).map((block) => (block.type === "text" ? block.text : `[${block.type}]`)).join(" ");
			queueList.append(
				el("li", undefined, `${entry.kind === "steer" || entry.kind === "steering" ? "steer" : "follow-up"}: ${text}`),
			);
		}
		queue.hidden = this.queue.size === 0;
	}

	// --- approvals and client tools ---------------------------------------------------------

	private removePending(toolCallId: string, kind: "approval" | "client" | "elicitation"): void {
		removePendingCards(this.ui.pending, toolCallId, kind);
	}

	private addApproval(request: Pending): void {
		this.removePending(request.toolCallId, "approval");
		const { card, focus } = approvalCard(
			request,
			(card, approve, reason) =>
				void this.guard(async () => {
					await this.post(
						`approvals/${encodeURIComponent(request.toolCallId)}`,
						reason ? { approve, reason } : { approve },
					);
					card.remove();
				}),
		);
		this.ui.pending.append(card);
		focus.focus();
	}

	/** An MCP server's question as a form; a refused answer (a field that does not fit) shows the server's message. */
	private addElicitation(request: PendingElicitation): void {
		this.removePending(request.elicitationId, "elicitation");
		const card = elicitationCard(
			request,
			(card, reply) =>
				void this.guard(async () => {
					await this.post(`elicitations/${encodeURIComponent(request.elicitationId)}`, reply);
					card.remove();
				}),
		);
		this.ui.pending.append(card);
	}

	private addClientToolForm(call: Pending): void {
		this.removePending(call.toolCallId, "client");
		const form = clientToolForm(
			call,
			this.clientTools.get(call.toolName),
			(form, answer) =>
				void this.guard(async () => {
					await this.post(`tool-results/${encodeURIComponent(call.toolCallId)}`, answer);
					form.remove();
				}),
		);
		this.ui.pending.append(form);
	}

	// --- timeline ---------------------------------------------------------------------------

	private addToTimeline(event: ReceivedEvent): void {
		this.timeline.add(event);
		this.followEvents.added();
	}
}

new Playground().start();
