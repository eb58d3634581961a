/**
 * The playground page: a browser client of the `/v1` API written against `wheelhouse/client`
 * (the event stream over fetch with the `Authorization` header, resumed with `Last-Event-ID` after
 * any drop; `MessageAssembler` rebuilds the streaming message). Sessions on the left, the chat in
 * the middle (with steer / follow-up / abort, the queues, approvals and client tool forms), every
 * event of the stream on the right.
 */
import { MessageAssembler, type ReceivedEvent, sessionEvents, WheelhouseHttpError } from "../client/index.js";
import { Api, ApiError } from "./api.js";
import { pageElements } from "./page.js";
import { approvalCard, clientToolForm, type Pending, removePendingCards } from "./pending-cards.js";
import { el, formatUsage, type Message, renderMessage } from "./render.js";
import { fillModels, fillTools, newSessionBody, sessionListItem } from "./sidebar.js";
import { applyTimelineFilter, MAX_TIMELINE, timelineItem } from "./timeline.js";

/** Reconnects `wheelhouse/client` makes at the server's `retry:` pace before the page backs off itself. */
const MAX_RETRIES = 10;
/** The page's own backoff between those rounds, doubling up to the maximum; it never gives up. */
const RETRY_BASE_MS = 1000;
const RETRY_MAX_MS = 15_000;

type QueueEntry = { id: number; kind: string; message: Message };

class Playground {
	readonly api = new Api();
	private sessionId: string | null = null;
	private stream: AbortController | null = null;
	private assembler = new MessageAssembler();
	private readonly seen = new Set<string>();
	private streamingElement: HTMLElement | null = null;
	private renderQueued = false;
	private running = false;
	private lastEventId: number | undefined;
	private clientTools = new Map<string, unknown>();
	private queue = new Map<number, QueueEntry>();
	private nextCursor: string | undefined;

	private readonly ui = pageElements();

	start(): void {
		const { ui } = this;
		this.api.onUnauthorized = (message) => this.askForKey(message);
		ui.authButton.addEventListener("click", () => this.askForKey("Enter an API key for this server."));
		ui.authForm.addEventListener("submit", (event) => {
			event.preventDefault();
			this.api.apiKey = ui.apiKey.value.trim();
			ui.apiKey.value = "";
			ui.authForm.hidden = true;
			this.notice("");
			void this.loadAll();
		});
		ui.authForget.addEventListener("click", () => {
			this.api.apiKey = "";
			ui.apiKey.value = "";
		});
		ui.createForm.addEventListener("submit", (event) => {
			event.preventDefault();
			void this.guard(() => this.createSession());
		});
		ui.moreSessions.addEventListener("click", () => void this.guard(() => this.loadSessions(true)));
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
		ui.filter.addEventListener("input", () => {
			for (const item of ui.events.children) applyTimelineFilter(item as HTMLElement, ui.filter.value);
		});
		void this.loadAll();
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

	private askForKey(message: string): void {
		this.ui.authReason.textContent = message;
		this.ui.authForm.hidden = false;
		this.ui.apiKey.focus();
	}

	private setConnection(state: "idle" | "connecting" | "live" | "reconnecting" | "closed", text: string): void {
		this.ui.connection.dataset.state = state;
		this.ui.connection.textContent = text;
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
		await this.guard(async () => {
			await Promise.all([this.loadCatalog(), this.loadSessions(false)]);
			const wanted = /(?:^|&)session=([^&]+)/.exec(location.hash.slice(1))?.[1];
			const id = this.sessionId ?? (wanted ? decodeURIComponent(wanted) : null);
			if (id) await this.open(id);
		});
	}

	private async loadCatalog(): Promise<void> {
		const [models, tools] = await Promise.all([this.api.call("GET", "/v1/models"), this.api.call("GET", "/v1/tools")]);
		fillModels(this.ui.model, models.models, models.defaultModel);
		fillTools(this.ui.toolList, tools.tools);
	}

	private async loadSessions(more: boolean): Promise<void> {
		const query = more && this.nextCursor ? `&cursor=${encodeURIComponent(this.nextCursor)}` : "";
		const page = await this.api.call("GET", `/v1/sessions?limit=20${query}`);
		if (!more) this.ui.sessionList.replaceChildren();
		for (const session of page.sessions) this.ui.sessionList.append(this.sessionItem(session));
		this.nextCursor = page.nextCursor;
		this.ui.moreSessions.hidden = !page.nextCursor;
		this.markCurrent();
	}

	private sessionItem(session: { id: string; model: string; status: string; messageCount: number }): HTMLElement {
		return sessionListItem(session, {
			open: () => void this.guard(() => this.open(session.id)),
			remove: (item) =>
				void this.guard(async () => {
					await this.api.call("DELETE", `/v1/sessions/${encodeURIComponent(session.id)}`);
					item.remove();
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

	private async createSession(): Promise<void> {
		const session = await this.api.call("POST", "/v1/sessions", newSessionBody(this.ui));
		this.ui.sessionList.append(this.sessionItem({ ...session, messageCount: 0 }));
		await this.open(session.id);
	}

	// --- the open session -------------------------------------------------------------------

	private close(): void {
		this.stream?.abort();
		this.stream = null;
		this.sessionId = null;
		this.assembler = new MessageAssembler();
		this.seen.clear();
		this.queue.clear();
		this.streamingElement = null;
		this.lastEventId = undefined;
		this.running = false;
		this.ui.messages.replaceChildren();
		this.ui.pending.replaceChildren();
		this.ui.events.replaceChildren();
		this.renderQueue();
		this.ui.sessionInfo.textContent = "Create or pick a session.";
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
		this.ui.prompt.disabled = false;
		await this.refreshSession();
		this.connect(undefined);
	}

	/** Session config and totals (`GET /v1/sessions/:id`): the info line and the client tool schemas. */
	private async refreshSession(): Promise<void> {
		const session = await this.call("GET", "");
		this.clientTools = new Map(
			(session.clientTools ?? []).map((t: { name: string; parameters?: unknown }) => [t.name, t.parameters]),
		);
		this.ui.sessionInfo.textContent = `${session.id} · ${session.model} · ${session.status} · session total: ${formatUsage(session.usage)}`;
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
					if (error.status === 401) this.askForKey(error.message);
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
			case "tool_execution_start":
				if (this.clientTools.has(data.toolName))
					this.addClientToolForm({ toolCallId: data.toolCallId, toolName: data.toolName, args: data.args });
				break;
			case "tool_execution_end":
				this.removePending(data.toolCallId, "client");
				break;
			case "approval_requested":
				this.addApproval(data);
				break;
			case "approval_resolved":
				this.removePending(data.toolCallId, "approval");
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
		for (let offset = 0; ; ) {
			const page = await this.call("GET", `messages?offset=${offset}&limit=1000`);
			const messages: Message[] = page.messages ?? [];
			for (const message of messages) this.appendMessage(message);
			offset += messages.length;
			if (messages.length === 0 || offset >= (page.total ?? offset)) break;
		}
		if (data.streamingMessage) {
			this.startStreaming();
			this.scheduleRender();
		}
		this.ui.pending.replaceChildren();
		for (const approval of (state.pendingApprovals ?? []) as Pending[])
			if (!approval.orphaned) this.addApproval(approval);
		for (const call of (state.pendingClientToolCalls ?? []) as Pending[])
			if (!call.orphaned) this.addClientToolForm(call);
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
		const element = renderMessage(message);
		if (this.streamingElement) this.ui.messages.insertBefore(element, this.streamingElement);
		else this.ui.messages.append(element);
		element.scrollIntoView({ block: "nearest" });
	}

	private startStreaming(): void {
		this.streamingElement?.remove();
		this.streamingElement = renderMessage(this.assembler.message as Message, true);
		this.ui.messages.append(this.streamingElement);
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
			next.scrollIntoView({ block: "nearest" });
		});
	}

	private updateControls(): void {
		const { ui } = this;
		const open = this.sessionId !== null;
		ui.prompt.disabled = !open;
		ui.send.disabled = !open || this.running;
		ui.steer.disabled = !open || !this.running;
		ui.followUp.disabled = !open || !this.running;
		ui.abort.disabled = !open || !this.running;
	}

	private async sendMessage(kind: "prompt" | "steer" | "follow-up"): Promise<void> {
		const message = this.ui.prompt.value;
		if (!message.trim()) {
			this.ui.prompt.focus();
			return;
		}
		await this.post(kind, { message });
		this.ui.prompt.value = "";
		this.notice("");
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

	private removePending(toolCallId: string, kind: "approval" | "client"): void {
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
		const item = timelineItem(event);
		applyTimelineFilter(item, this.ui.filter.value);
		this.ui.events.append(item);
		while (this.ui.events.childElementCount > MAX_TIMELINE) this.ui.events.firstElementChild?.remove();
	}
}

new Playground().start();
