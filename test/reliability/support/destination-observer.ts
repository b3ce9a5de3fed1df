/**
 * What drains do about one destination, seen from the drain's side: every claim of one of its
 * messages, every change of its health a settle returned, and every send to it that never
 * became a request there (refused, or cut as the receiver stopped listening), each with the
 * times support/pause-windows.ts needs. The receiver logs the requests it gets; together they
 * are every try on it. The store and the sender are the real ones, each call passed through
 * unchanged.
 */
import type { ClaimRequest, OutboxStore } from '../../../src/core/outbox-store.js';
import type { Sender } from '../../../src/core/sender.js';
import type { Contact, DestinationClaim, SettledChange } from './pause-windows.js';

export interface DestinationObserver {
  store: OutboxStore;
  sender: Sender;
  claims: DestinationClaim[];
  /** Its pauses and resumes, as the settles that made them returned them. */
  changes: SettledChange[];
  /** Sends that got no HTTP status; the receiver adds the requests it logs. */
  contacts: Contact[];
  /** Of those, connections refused (`ECONNREFUSED`): nothing listened on the port. */
  refused(): number;
}

/** Wraps `store` and `sender` for the webhook destination `origin` (`http://127.0.0.1:port`). */
export function observeDestination(
  store: OutboxStore,
  sender: Sender,
  origin: string,
): DestinationObserver {
  const claims: DestinationClaim[] = [];
  const changes: SettledChange[] = [];
  const contacts: Contact[] = [];
  let refused = 0;
  const goesThere = (payload: unknown) =>
    new URL((payload as { url: string }).url).origin === origin;
  return {
    claims,
    changes,
    contacts,
    refused: () => refused,
    store: {
      settleFits: (requests) => store.settleFits(requests),
      claim: async (request: ClaimRequest) => {
        const startedAt = Date.now();
        const result = await store.claim(request);
        const returnedAt = Date.now();
        for (const message of result.claimed) {
          if (!goesThere(message.payload)) continue;
          const { key, attempts: attempt } = message;
          claims.push({ key, attempt, now: request.now.getTime(), startedAt, returnedAt });
        }
        return result;
      },
      settle: async (requests, now, options) => {
        const result = await store.settle(requests, now, options);
        const settledAt = Date.now();
        for (const change of result.destinations ?? []) {
          if (change.destination !== origin) continue;
          changes.push({ change, now: now.getTime(), settledAt });
        }
        return result;
      },
    },
    sender: async (message, signal, context) => {
      const at = Date.now();
      try {
        return await sender(message, signal, context);
      } catch (error) {
        const { status, providerCode } = error as { status?: number; providerCode?: string };
        if (status === undefined && goesThere(message.payload)) {
          contacts.push({ key: message.key, attempt: message.attempt, at });
          if (providerCode === 'ECONNREFUSED') refused += 1;
        }
        throw error;
      }
    },
  };
}
