/**
 * The page's elements by role: every element the playground reads or fills, looked up once by id
 * (index.html defines them), so a renamed id fails at start with its name instead of later.
 */

function byId<T extends HTMLElement = HTMLElement>(id: string): T {
	const element = document.getElementById(id);
	if (!element) throw new Error(`the page has no #${id}`);
	return element as T;
}

/** The elements of index.html the playground uses. */
export function pageElements() {
	return {
		connection: byId("connection"),
		notice: byId("notice"),
		authButton: byId<HTMLButtonElement>("auth-button"),
		authForm: byId<HTMLFormElement>("auth-form"),
		authReason: byId("auth-reason"),
		apiKey: byId<HTMLInputElement>("api-key"),
		authForget: byId<HTMLButtonElement>("auth-forget"),
		signOut: byId<HTMLButtonElement>("sign-out"),
		oidcSignIn: byId("oidc-sign-in"),
		oidcButton: byId<HTMLButtonElement>("oidc-button"),
		createForm: byId<HTMLFormElement>("create-form"),
		model: byId<HTMLSelectElement>("model"),
		systemPrompt: byId<HTMLTextAreaElement>("system-prompt"),
		thinking: byId<HTMLSelectElement>("thinking"),
		toolExecution: byId<HTMLSelectElement>("tool-execution"),
		toolList: byId("tool-list"),
		clientTools: byId<HTMLTextAreaElement>("client-tools"),
		createDetails: byId<HTMLDetailsElement>("create"),
		createButton: byId<HTMLButtonElement>("create-button"),
		createStatus: byId("create-status"),
		sessionSearch: byId<HTMLInputElement>("session-search"),
		noSessions: byId("no-sessions"),
		sessionTitle: byId<HTMLInputElement>("session-title"),
		chatScroll: byId("chat-scroll"),
		jumpLatest: byId<HTMLButtonElement>("jump-latest"),
		composerStatus: byId("composer-status"),
		timeline: byId("timeline-heading").parentElement!,
		jumpEvents: byId<HTMLButtonElement>("jump-events"),
		sessionList: byId("session-list"),
		moreSessions: byId<HTMLButtonElement>("more-sessions"),
		schedulesPanel: byId<HTMLDetailsElement>("schedules-panel"),
		scheduleList: byId("schedule-list"),
		noSchedules: byId("no-schedules"),
		sessionInfo: byId("session-info"),
		standInHint: byId("standin-hint"),
		messages: byId("messages"),
		pending: byId("pending"),
		queue: byId("queue"),
		queueList: byId("queue-list"),
		clearQueue: byId<HTMLButtonElement>("clear-queue"),
		composer: byId<HTMLFormElement>("composer"),
		prompt: byId<HTMLTextAreaElement>("prompt"),
		send: byId<HTMLButtonElement>("send"),
		steer: byId<HTMLButtonElement>("steer"),
		followUp: byId<HTMLButtonElement>("follow-up"),
		abort: byId<HTMLButtonElement>("abort"),
		fork: byId<HTMLButtonElement>("fork"),
		regenerate: byId<HTMLButtonElement>("regenerate"),
		editLast: byId<HTMLButtonElement>("edit-last"),
		filter: byId<HTMLInputElement>("filter"),
		events: byId("events"),
	};
}

/** The element map {@link pageElements} returns. */
export type PageElements = ReturnType<typeof pageElements>;
