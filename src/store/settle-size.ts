/**
 * What the store keeps on each message its claim returns, beside the port's fields, and the
 * limits of one settle, which it reads them for. The drain passes messages back to settle as
 * they came, so these travel with them without the drain knowing of them.
 */
import type { SettledMessage, SettleRequest } from '../core/outbox-store.js';

/**
 * The most outcomes one settle takes. It records its deliveries as one group of delivered
 * history, and one statement's arrays of ids, tokens and errors stay small enough for any
 * driver's request (Neon's HTTP endpoint limits its body).
 */
export const MAX_SETTLE_OUTCOMES = 1000;

/**
 * About the most payload the deliveries of one settle hold, by `payloadBytes`: their history
 * group is one value, which reading or discarding one of its messages reads whole. A settle may
 * pass this by one message (a single payload is never split), and payloads are at most
 * `MAX_PAYLOAD_BYTES`, so no group comes near PostgreSQL's 1 GB limit for a value.
 */
export const MAX_SETTLE_PAYLOAD_BYTES = 8 * 1024 * 1024;

/** What the claim puts on each message it returns, for that message's settle. */
export interface RowPlace {
  /** Where the claim left the row (its ctid): the settle reads it there, with no index probe. */
  rowId: string;
  /** The payload's size as the table stores it, in bytes: it bounds a settle's deliveries. */
  payloadBytes: number;
}

/** The message with this store's fields, which only a message its claim returned has. */
export function placed(message: SettledMessage): SettledMessage & RowPlace {
  const place = message as SettledMessage & Partial<RowPlace>;
  if (place.rowId === undefined || place.payloadBytes === undefined) {
    throw new TypeError(
      `settle: message ${message.id} did not come from this store's claim (it has no row place)`,
    );
  }
  return place as SettledMessage & RowPlace;
}

/**
 * How many of `requests`, from the first, one settle takes: at most MAX_SETTLE_OUTCOMES, and
 * deliveries up to MAX_SETTLE_PAYLOAD_BYTES of payload (the one that passes it included).
 */
export function settleFits(requests: readonly SettleRequest[]): number {
  const most = Math.min(requests.length, MAX_SETTLE_OUTCOMES);
  let bytes = 0;
  for (let taken = 0; taken < most; taken++) {
    const { message, settlement } = requests[taken]!;
    if (settlement.outcome !== 'delivered') continue;
    bytes += placed(message).payloadBytes;
    if (bytes >= MAX_SETTLE_PAYLOAD_BYTES) return taken + 1;
  }
  return Math.max(1, most);
}
