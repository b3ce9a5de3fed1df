/**
 * A drain claiming a backlog starts each claim after the last row it claimed, so the claim does
 * not step over the rows it has claimed and not yet settled, nor over every message delivered
 * since the last vacuum (their index entries stay at the head of the due order until then);
 * every CLAIMS_PER_FULL_SCAN-th claim scans from the start for what came due behind it, and a
 * claim after the cursor that comes back short has looked from the start too.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { DrainResume } from '../../src/core/drain-settings.js';
import type { ClaimRequest, ClaimResult, OutboxStore } from '../../src/core/outbox-store.js';
import type { Outbox } from '../../src/outbox.js';
import {
  CLAIMS_PER_FULL_SCAN,
  type ClaimCursor,
  positionOf,
} from '../../src/store/claim-position.js';
import { useTestDatabase } from '../support/database.js';
import {
  claimCountingStore,
  claimRequest,
  freshOutbox,
  type RecordingSender,
  recordingSender,
  watchedExecutor,
} from '../support/drain-fixtures.js';
import { DRIVER_NAMES, type Driver, useDriver } from '../support/drivers.js';

const database = useTestDatabase();

const BATCH = 1000;
/** One claim from the start, three after the cursor, one more from the start. */
const BACKLOG = (CLAIMS_PER_FULL_SCAN + 1) * BATCH;

async function enqueueBacklog(outbox: Outbox, driver: Driver): Promise<void> {
  for (let start = 0; start < BACKLOG; start += BATCH) {
    await outbox.enqueue(
      driver.db,
      Array.from({ length: BATCH }, (_, n) => ({ kind: 'test.kind', payload: { n: start + n } })),
    );
  }
}

/** The last row without an ordering key a claim took (or the one before it), from its result. */
const lastOf = (result: ClaimResult): ClaimCursor | undefined => positionOf(result.resumeAt).cursor;

/**
 * A store over `driver` with every claim written down: its request, its result, and the cursor
 * its statement scanned after (none: from the start of the due order), read from the statement
 * it ran.
 */
function recordingStore(
  outbox: Outbox,
  driver: Driver,
  onClaim?: (claim: RecordedClaim) => Promise<void>,
) {
  const statements: { text: string; after: ClaimCursor | undefined; skip: number }[] = [];
  const store = outbox.store(
    watchedExecutor(driver.db, (text, params) => {
      if (/^\s*WITH RECURSIVE claim_now\b/.test(text)) {
        statements.push({ text, ...cursorIn(text, params) });
      }
    }),
  );
  const claims: RecordedClaim[] = [];
  const recording: OutboxStore = {
    settleFits: (requests) => store.settleFits(requests),
    async claim(request) {
      const result = await store.claim(request);
      const claim = { request, result, ...statements.shift()! };
      claims.push(claim);
      await onClaim?.(claim);
      return result;
    },
    settle: (requests, now) => store.settle(requests, now),
  };
  return { claims, store: recording };
}

interface RecordedClaim {
  request: ClaimRequest;
  result: ClaimResult;
  /** The cursor the claim's scan of the due order started after; none: from the start. */
  after: ClaimCursor | undefined;
  /** The unfinished rows past the cursor it stepped (claims on the wire from there). */
  skip: number;
  /** The statement it ran. */
  text: string;
}

/**
 * The cursor a claim statement's text reads from its parameters, if it reads one, and the rows
 * past it the scan steps (claim-cursor.ts). A cursor past every row (due `infinity`: a claim from
 * the start in a backlog, see dueClaimShape) scans from the start: none.
 */
function cursorIn(
  text: string,
  params: readonly unknown[] | undefined,
): { after: ClaimCursor | undefined; skip: number } {
  const read =
    /cursor AS MATERIALIZED \([\s\S]*?\$(\d+)::timestamptz AS due_at,\s+\$(\d+)::bigint AS id\)/.exec(
      text,
    );
  const step = /OFFSET greatest\(\$(\d+)::integer/.exec(text);
  if (!read) return { after: undefined, skip: 0 };
  const [dueAt, id] = read.slice(1).map((n) => params![Number(n) - 1]);
  const skip = step ? params![Number(step[1]) - 1] : 0;
  if (dueAt === 'infinity') return { after: undefined, skip: Number(skip) };
  return { after: { dueAt: new Date(dueAt as Date), id: String(id) }, skip: Number(skip) };
}

describe.each(DRIVER_NAMES)('claims after a cursor through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  it('take rows after the cursor first, top up from the start, and name the last row taken', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    const base = Date.now() - 60_000;
    // Due times out of enqueue order, and three rows sharing one due time: due order is due
    // time, then id.
    const dueOffsets = [5, 1, 3, 3, 3, 0, 9, 7, 2, 8];
    await outbox.enqueue(
      driver.db,
      dueOffsets.map((offset, index) => ({
        kind: 'test.kind',
        payload: { index },
        dueAt: new Date(base + offset * 1000),
      })),
    );
    // In a backlog: the claims after the first start after the last row the one before took.
    const resume = (result: ClaimResult) =>
      claimRequest({ limit: 4, resumeAt: result.resumeAt, backlog: true });
    const first = await store.claim(claimRequest({ limit: 4, backlog: true }));
    // Rows after a cursor come first; rows before it only top up a batch they do not fill.
    const order = (result: ClaimResult) => result.claimed.map((m) => m.payload);
    expect(order(first)).toEqual([{ index: 5 }, { index: 1 }, { index: 8 }, { index: 2 }]);
    expect(lastOf(first)).toEqual({ dueAt: new Date(base + 3000), id: first.claimed[3]!.id });

    const second = await store.claim(resume(first));
    expect(order(second)).toEqual([{ index: 3 }, { index: 4 }, { index: 0 }, { index: 7 }]);
    expect(lastOf(second)).toEqual({ dueAt: new Date(base + 7000), id: second.claimed[3]!.id });

    // Two rows are left after the cursor; the batch is topped up with the row behind it that
    // the first claim skipped (its lease ran out: here, it was released by hand).
    await driver.db.query(
      `UPDATE ${schema}.messages SET state = 'pending', claim_token = NULL,
         claimed_at = NULL, lease_expires_at = NULL, attempts = 0 WHERE id = $1`,
      [first.claimed[1]!.id],
    );
    const third = await store.claim(resume(second));
    expect(order(third)).toEqual([{ index: 1 }, { index: 9 }, { index: 6 }]);
    expect(lastOf(third)).toEqual({ dueAt: new Date(base + 9000), id: third.claimed[2]!.id });

    // Nothing after the last row and nothing due from the start: an empty claim leaves the
    // cursor where it was.
    const fourth = await store.claim(resume(third));
    expect(fourth).toMatchObject({ claimed: [], exhausted: [] });
    expect(lastOf(fourth)).toEqual(lastOf(third));
    // Out of a backlog, a claim scans from the start, wherever the last one left off: of a row
    // before the cursor and one after it, it takes the one before.
    await driver.db.query(
      `UPDATE ${schema}.messages SET state = 'pending', claim_token = NULL,
         claimed_at = NULL, lease_expires_at = NULL, attempts = 0 WHERE id = $1`,
      [first.claimed[0]!.id],
    );
    await outbox.enqueue(driver.db, {
      kind: 'test.kind',
      payload: { index: 10 },
      dueAt: new Date(base + 10_000),
    });
    const fifth = await store.claim(claimRequest({ limit: 1, resumeAt: third.resumeAt }));
    expect(order(fifth)).toEqual([{ index: 5 }]);
  });

  it('beside a claim on the wire from the same cursor, start past the rows it takes', async () => {
    const { outbox } = await freshOutbox(driver);
    await outbox.enqueue(
      driver.db,
      Array.from({ length: 40 }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    const recorded = recordingStore(outbox, driver);
    const first = await recorded.store.claim(claimRequest({ limit: 10, backlog: true }));
    const resume = () => claimRequest({ limit: 10, resumeAt: first.resumeAt, backlog: true });
    // Two claims on the wire from the first one's cursor, as a drain makes them when the first
    // of the two has not landed when its queue runs low.
    const [ahead, beside] = await Promise.all([
      recorded.store.claim(resume()),
      recorded.store.claim(resume()),
    ]);
    const order = (result: ClaimResult) => result.claimed.map((m) => m.payload);
    const firstIndex = (result: ClaimResult) =>
      (result.claimed[0]!.payload as { index: number }).index;
    const indexes = (from: number) => Array.from({ length: 10 }, (_, n) => ({ index: from + n }));
    expect(order(first)).toEqual(indexes(0));
    expect(recorded.claims.map(({ skip }) => skip).sort()).toEqual([0, 0, 10]);
    // One of the two stepped past the ten the other takes (which reached DueClaims first, and
    // which the server, is the event loop's and the driver's: both orders take these rows). The
    // recording pairs statements with claims in the order they land, so it cannot say which.
    const [near, far] = [ahead, beside].sort((a, b) => firstIndex(a) - firstIndex(b));
    expect([order(near!), order(far!)]).toEqual([indexes(10), indexes(20)]);
    // With none on the wire, the next claim steps nowhere: it starts at the furthest cursor.
    const next = await recorded.store.claim(
      claimRequest({ limit: 10, resumeAt: far!.resumeAt, backlog: true }),
    );
    expect(recorded.claims.at(-1)!.skip).toBe(0);
    expect(order(next)).toEqual(indexes(30));
  });
});

// The drain's use of the cursor is the same over every driver (the statement is tested above on
// each); these backlogs are large, so they run over node-pg only. Most claim one batch at a time
// (prefetch off), so each claim's cursor is the last row of the claim before it.
describe('a drain through a backlog', () => {
  const driver = useDriver('node-pg', database);

  /** Drains with prefetch off: each claim's cursor is the last row of the claim before it. */
  const drainOneClaimAtATime = (store: OutboxStore, sender: RecordingSender) =>
    drainOnce({ store, senders: { 'test.kind': sender.send }, batchSize: BATCH, prefetch: false });

  it('a drain through a backlog claims from the cursor, and from the start every fourth claim', async () => {
    const { outbox } = await freshOutbox(driver);
    await enqueueBacklog(outbox, driver);
    const recorded = recordingStore(outbox, driver);
    const sender = recordingSender();
    const report = await drainOneClaimAtATime(recorded.store, sender);
    expect(report.delivered).toBe(BACKLOG);
    const { claims } = recorded;
    // Full claims, then one that finds nothing (after the cursor, nor from the start) while the
    // last batch is still being sent. It left keyed rows out, and says no keyed message is
    // unfinished either, so it is not partial: nothing more was due. When the last batch's
    // outcomes were still being written as it came back, the drain claims once more after they
    // are recorded. Which lands first is the machine's timing: one empty claim or two.
    const sizes = claims.map((c) => c.result.claimed.length);
    expect(sizes.slice(0, BACKLOG / BATCH)).toEqual(Array(BACKLOG / BATCH).fill(BATCH));
    expect([[0], [0, 0]]).toContainEqual(sizes.slice(BACKLOG / BATCH));
    expect(claims.filter((c) => c.result.partial === true)).toEqual([]);
    // Through the backlog and its first empty claim:
    claims.slice(0, BACKLOG / BATCH + 1).forEach(({ after }, index) => {
      // The first claim has no cursor yet; from then on, every fourth starts from the start.
      const fromStart = index % CLAIMS_PER_FULL_SCAN === 0;
      expect({ index, after }).toEqual({
        index,
        after: fromStart ? undefined : lastOf(claims[index - 1]!.result),
      });
    });
  });

  it('in a backlog, claims from the start run the text the claims at the cursor run', async () => {
    const { outbox } = await freshOutbox(driver);
    await enqueueBacklog(outbox, driver);
    const recorded = recordingStore(outbox, driver);
    const report = await drainOneClaimAtATime(recorded.store, recordingSender());
    expect(report.delivered).toBe(BACKLOG);
    const inBacklog = recorded.claims.filter(({ request }) => request.backlog === true);
    // Every fourth from the start (the fifth claim here), the others at the cursor: one text, so
    // each connection plans one text five times before PostgreSQL keeps its generic plan, not two.
    expect(inBacklog.filter(({ after }) => after === undefined).length).toBeGreaterThanOrEqual(1);
    expect(new Set(inBacklog.map(({ text }) => text)).size).toBe(1);
    // The first claim is no backlog's: the text without a cursor, planned in less.
    expect(recorded.claims[0]!.request.backlog).not.toBe(true);
    expect(recorded.claims[0]!.text).not.toContain(' cursor AS ');
  });

  it('after a backlog, the claims that end the drain run the text the backlog ran', async () => {
    const { outbox } = await freshOutbox(driver);
    await enqueueBacklog(outbox, driver);
    const recorded = recordingStore(outbox, driver);
    await drainOneClaimAtATime(recorded.store, recordingSender());
    const firstInBacklog = recorded.claims.findIndex(({ request }) => request.backlog === true);
    const rest = recorded.claims.slice(firstInBacklog);
    // The claim that ends the drain, after one came back short, is no backlog's, and would
    // otherwise be a text of its own, planned anew on its connection.
    expect(rest.filter(({ request }) => request.backlog !== true).length).toBeGreaterThanOrEqual(1);
    expect(new Set(rest.map(({ text }) => text)).size).toBe(1);
  });

  it('a row that comes due behind the cursor goes out with the next scan from the start', async () => {
    const { outbox } = await freshOutbox(driver);
    await enqueueBacklog(outbox, driver);
    let late: string | undefined;
    const recorded = recordingStore(outbox, driver, async ({ after, result }) => {
      const last = lastOf(result);
      if (late !== undefined || after === undefined || !last) return;
      // Due before everything the first claim after a cursor took: behind the cursor.
      [late] = await outbox.enqueue(driver.db, {
        kind: 'test.kind',
        payload: { late: true },
        dueAt: new Date(last.dueAt.getTime() - 60_000),
      });
    });
    const sender = recordingSender();
    await drainOneClaimAtATime(recorded.store, sender);
    expect(sender.timesSent(late!)).toBe(1);
    const firstAfterCursor = recorded.claims.findIndex(({ after }) => after);
    const takenBy = recorded.claims.findIndex(({ result }) =>
      result.claimed.some((m) => m.key === late),
    );
    // Taken by the next claim from the start, while most of the backlog was still due: not
    // left for the drain's last claim.
    expect(takenBy - firstAfterCursor).toBe(CLAIMS_PER_FULL_SCAN - 1);
    expect(recorded.claims[takenBy]!.after).toBeUndefined();
    expect(takenBy).toBeLessThan(recorded.claims.length - 1);
  });

  it('a row that comes due behind the cursor as the backlog runs out still goes out in this drain', async () => {
    const { outbox } = await freshOutbox(driver);
    await enqueueBacklog(outbox, driver);
    let claimedSoFar = 0;
    let late: string | undefined;
    const recorded = recordingStore(outbox, driver, async ({ result }) => {
      claimedSoFar += result.claimed.length;
      const last = lastOf(result);
      // This claim took the backlog's last rows; the next starts after them, where nothing
      // is left, though this row is due.
      if (claimedSoFar !== BACKLOG || late !== undefined || !last) return;
      [late] = await outbox.enqueue(driver.db, {
        kind: 'test.kind',
        payload: { late: true },
        dueAt: new Date(last.dueAt.getTime() - 60_000),
      });
    });
    const sender = recordingSender();
    const report = await drainOneClaimAtATime(recorded.store, sender);
    expect(report.delivered).toBe(BACKLOG + 1);
    expect(sender.timesSent(late!)).toBe(1);
    // That claim, finding nothing after its cursor, took the row from the start of the due order.
    const topUp = recorded.claims[BACKLOG / BATCH]!;
    expect(topUp.after).toBeDefined();
    expect(topUp.result.claimed.map((m) => m.key)).toEqual([late]);
  });

  it('a drain that resumes where another stopped scans its first claim from the start', async () => {
    const { outbox } = await freshOutbox(driver);
    await enqueueBacklog(outbox, driver);
    const resume: DrainResume = {};
    const sender = recordingSender();
    const drain = (store: OutboxStore, maxMessages: number) =>
      drainOnce({
        store,
        senders: { 'test.kind': sender.send },
        batchSize: BATCH,
        prefetch: false,
        maxMessages,
        resume,
      });
    // Two claims: the second after the first's cursor, which the position keeps.
    const earlier = recordingStore(outbox, driver);
    await drain(earlier.store, 2 * BATCH);
    expect(earlier.claims.map(({ after }) => after !== undefined)).toEqual([false, true]);
    // Due before every row of the backlog: behind that cursor.
    const [late] = await outbox.enqueue(driver.db, {
      kind: 'test.kind',
      payload: { late: true },
      dueAt: new Date(Date.now() - 3_600_000),
    });
    const next = recordingStore(outbox, driver);
    await drain(next.store, BATCH);
    expect(next.claims[0]!.after).toBeUndefined();
    expect(next.claims[0]!.result.claimed[0]!.key).toBe(late);
  });

  it('with two claims on the wire, a drain through the backlog sends every row once', async () => {
    const { outbox } = await freshOutbox(driver);
    await enqueueBacklog(outbox, driver);
    const recorded = recordingStore(outbox, driver);
    const watched = claimCountingStore(recorded.store);
    const sender = recordingSender();
    const report = await drainOnce({
      store: watched.store,
      senders: { 'test.kind': sender.send },
      batchSize: BATCH,
    });
    expect(watched.seen.mostOnWire).toBe(2);
    expect(report).toMatchObject({ delivered: BACKLOG, stale: 0 });
    expect(sender.calls).toHaveLength(BACKLOG);
    expect(new Set(sender.calls.map((call) => call.key)).size).toBe(BACKLOG);
    expect(recorded.claims.some(({ after }) => after)).toBe(true);
    // Some claim went beside one from its own cursor, and started past that one's rows.
    expect(recorded.claims.some(({ skip }) => skip === BATCH)).toBe(true);
  });
});
