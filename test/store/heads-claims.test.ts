/**
 * Over many ordering keys with a few messages each, due claims take keyed rows as heads in due
 * order instead of walking the keys (src/store/claim-heads.ts; when, src/store/due-claim.ts):
 * after a walk that came back full of runs shorter than a share, claims take heads while they
 * come back full. A claim taking heads takes a keyed row only while nothing earlier with its
 * key is pending or claimed, reads a window of the due order, and comes back partial when the
 * window ended among rows it could not take; the claims after it walk. The statement is the same
 * over every driver; the store's claims run over node-pg, the drains over every driver.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { ClaimResult, HeldRun, OutboxStore } from '../../src/core/outbox-store.js';
import type { Outbox } from '../../src/outbox.js';
import { HEADS_WINDOW_PER_ROW } from '../../src/store/claim-heads.js';
import { useTestDatabase } from '../support/database.js';
import {
  claimCountingStore,
  claimOf10,
  claimRequest,
  freshOutbox,
  keysTaken,
  recordingSender,
  settleDelivered,
  walkKeysNext,
  watchedClaims,
} from '../support/drain-fixtures.js';
import { DRIVER_NAMES, type Driver, useDriver } from '../support/drivers.js';
import { allNodes, type PlanNode, planAsRun } from '../support/query-plans.js';

const database = useTestDatabase();

/**
 * A store over a fresh outbox (or `over`) that notes how each of its claims took keyed rows, the
 * messages given (kind test.kind, one ordering key each, or none) enqueued in order, due a
 * millisecond apart from a minute ago, so due order is enqueue order.
 */
async function headsOutbox(
  driver: Driver,
  orderingKeys: readonly (string | undefined)[],
  over?: Outbox,
) {
  const outbox = over ?? (await freshOutbox(driver)).outbox;
  const startMs = Date.now() - 60_000;
  const keys = await outbox.enqueue(
    driver.db,
    orderingKeys.map((orderingKey, n) => ({
      kind: 'test.kind',
      payload: { n },
      orderingKey,
      dueAt: new Date(startMs + n),
    })),
  );
  return { outbox, keys, ...watchedClaims(outbox, driver.db) };
}

/**
 * How many rows of messages_claimable the claim's scans of the due order read, as it ran in a
 * transaction rolled back: the rows they returned and those their filter removed. Not the
 * windows' entries (alias w), which only say whether a short claim was held back.
 */
async function rowsScanned(
  claim: { text: string; params: unknown[] },
  options: { generic?: boolean } = {},
): Promise<number> {
  const plan = await planAsRun(database.pool, claim.text, claim.params, options);
  // An index scan of messages_claimable, or a bitmap scan of it (the heap scan names the alias;
  // m, or m_1 under the subquery that checks heads, also m).
  const scansDueOrder = (node: PlanNode) =>
    /^m(_\d+)?$/.test(node.Alias ?? '') &&
    (node['Index Name'] === 'messages_claimable' ||
      (node['Node Type'] === 'Bitmap Heap Scan' && node['Relation Name'] === 'messages'));
  return allNodes(plan)
    .filter(scansDueOrder)
    .reduce((read, node) => read + node['Actual Rows']! + (node['Rows Removed by Filter'] ?? 0), 0);
}

/** `count` ordering keys, key-000, key-001, ... in turn over `keys` keys. */
function inTurn(count: number, keys: number): string[] {
  return Array.from({ length: count }, (_, n) => `key-${String(n % keys).padStart(3, '0')}`);
}

/** Readies `store` to walk, then makes two claims of 10: the walk, and the claim after it. */
async function walkThenNext(
  store: OutboxStore,
): Promise<{ walked: ClaimResult; next: ClaimResult }> {
  await walkKeysNext(store);
  const walked = await store.claim(claimOf10());
  const next = await store.claim(claimOf10({ resumeAt: walked.resumeAt }));
  return { walked, next };
}

/**
 * Delivers `claims` as a settle records them, then claims 10 at a time from where the last left
 * off, each delivered, until one takes nothing: the store's last claim then says whether any
 * keyed message is unfinished.
 */
async function deliverAll(store: OutboxStore, ...claims: ClaimResult[]): Promise<void> {
  for (const claim of claims) await settleDelivered(store, claim.claimed);
  let resumeAt = claims.at(-1)?.resumeAt;
  for (let n = 0; n < 20; n++) {
    const result = await store.claim(claimOf10({ resumeAt }));
    if (result.claimed.length === 0) break;
    await settleDelivered(store, result.claimed);
    resumeAt = result.resumeAt;
  }
}

/** The runs a drain holds after these claims: one per row taken, each its own run. */
function heldRunsOf(claims: readonly ClaimResult[]): HeldRun[] {
  return claims.flatMap((result) =>
    result.claimed.map((message) => ({
      orderingKey: message.orderingKey!,
      firstId: message.id,
      lastId: message.id,
      lastToken: message.claimToken,
    })),
  );
}

describe('claims taking heads', () => {
  const driver = useDriver('node-pg', database);

  it('follow a walk that came back full of short runs over many keys, and take heads in due order', async () => {
    // 30 keys, two messages each: the walk's runs are two long, a share is five.
    const { store, keys, ways, lastClaim } = await headsOutbox(driver, inTurn(60, 30));
    const { walked, next: heads } = await walkThenNext(store);
    expect(keysTaken(walked)).toHaveLength(10);
    // The heads of keys 5 to 14 in due order. Keys 0 to 4 are out with the walk's claim (both
    // their messages), so nothing of theirs is a head.
    expect(ways.slice(1)).toEqual(['walk', 'heads']);
    expect(keysTaken(heads)).toEqual(keys.slice(5, 15));
    expect(heads.partial).toBeUndefined();
    expect(heads.oneAtATime).toBeUndefined();
    // In a backlog, the next claim's scan starts after the last row this one took, keyed or not.
    const next = await store.claim(claimOf10({ resumeAt: heads.resumeAt, backlog: true }));
    expect(ways.at(-1)).toBe('heads');
    expect(String(lastClaim().params.at(-2))).toBe(heads.claimed.at(-1)!.id);
    expect(keysTaken(next)).toEqual(keys.slice(15, 25));
  });

  it('never take a message while an earlier one of its key is pending or claimed, whatever its due time', async () => {
    // key-00's two messages are due first; keys 01 to 40 have one message each after them.
    const { store, keys, ways } = await headsOutbox(driver, [
      'key-000',
      'key-000',
      ...inTurn(41, 41).slice(1),
    ]);
    // Another drain's kick holds key-00's first message.
    const kicked = await store.claim(claimRequest({ keys: [keys[0]!], limit: 1 }));
    expect(keysTaken(kicked)).toEqual([keys[0]]);
    const { walked, next: heads } = await walkThenNext(store);
    expect(keysTaken(walked)).toEqual(keys.slice(2, 12));
    // key-00's second message, due before every head, waits for its first.
    expect(ways.at(-1)).toBe('heads');
    expect(keysTaken(heads)).toEqual(keys.slice(12, 22));
    // Once key-00's first is delivered, its second is a head like any other.
    await settleDelivered(store, kicked.claimed);
    const next = await store.claim(claimOf10({ resumeAt: heads.resumeAt }));
    expect(ways.at(-1)).toBe('heads');
    expect(keysTaken(next)[0]).toBe(keys[1]);
  });

  it('come back partial when their window ends among held-back rows, and the claims after them walk', async () => {
    // Twelve keys of one message, then one key with a long backlog, due after them (and last
    // in key order, so the walk takes the others first).
    const deep = HEADS_WINDOW_PER_ROW * 10 * 3;
    const { store, keys, ways } = await headsOutbox(driver, [
      ...inTurn(12, 12),
      ...Array.from({ length: deep }, () => 'zz-deep'),
    ]);
    const { walked, next: heads } = await walkThenNext(store);
    expect(keysTaken(walked)).toEqual(keys.slice(0, 10));
    // The two heads left and the deep key's head; the rest of the window is the deep key's
    // backlog, held back behind its head.
    expect(ways.at(-1)).toBe('heads');
    expect(keysTaken(heads)).toEqual(keys.slice(10, 13));
    expect(heads.partial).toBe(true);
    await store.claim(claimOf10({ resumeAt: heads.resumeAt }));
    expect(ways.at(-1)).toBe('walk');
  });

  it('go on taking heads when their window is held back behind the heads of more keys than a walk visits, this drain’s', async () => {
    // Fifty keys of two messages in two waves: the second message of each key is due after the
    // first of every key, and waits until the first is recorded.
    const { store, keys, ways } = await headsOutbox(driver, inTurn(100, 50));
    const { walked, next: heads } = await walkThenNext(store);
    const claims = [walked, heads];
    const holding = () => heldRunsOf(claims);
    while (claims.at(-1)!.claimed.length === 10) {
      claims.push(
        await store.claim(claimOf10({ resumeAt: claims.at(-1)!.resumeAt, holding: holding() })),
      );
    }
    // The first wave's last five heads, then a window after the cursor (40 rows) of the second
    // wave, every row behind a head this drain holds: partial, and heads again rather than the
    // walk, which over many keys pays a step per key for rows that are heads once this drain's
    // are recorded.
    const short = claims.at(-1)!;
    expect(keysTaken(short)).toEqual(keys.slice(45, 50));
    expect(short.partial).toBe(true);
    expect(ways.at(-1)).toBe('heads');
    await store.claim(claimOf10({ resumeAt: short.resumeAt, holding: holding() }));
    expect(ways.at(-1)).toBe('heads');
  });

  it('read at most their window of the due order, however deep the backlog held back', async () => {
    const window = 2 * HEADS_WINDOW_PER_ROW * 10;
    const { store, ways, lastClaim } = await headsOutbox(driver, [
      ...inTurn(12, 12),
      ...Array.from({ length: 3 * window }, () => 'zz-deep'),
    ]);
    await walkThenNext(store);
    expect(ways.at(-1)).toBe('heads');
    // From the start of the due order (no cursor): a window of twice the rows, for the rows
    // claimed and not yet settled at its head. The window counts rows it could take; its text run
    // again steps over the 13 the walk and it took besides (claimed now).
    expect(await rowsScanned(lastClaim())).toBeLessThanOrEqual(window + 13);
  });

  it.each([
    { plan: 'one built for its values', generic: false },
    { plan: 'the generic one a prepared claim keeps', generic: true },
  ])('read the due order only as far as the rows they take, on $plan', async ({ generic }) => {
    // Two hundred keys of one message each: every row is its key's head, and a claim of 10
    // takes the first ten it reads.
    const { store, ways, lastClaim } = await headsOutbox(driver, inTurn(200, 200));
    const { next: heads } = await walkThenNext(store);
    expect(ways.at(-1)).toBe('heads');
    expect(heads.claimed).toHaveLength(10);
    // Its text again, as it ran: the twenty the walk and it took are claimed now, and it steps
    // over them to the next ten. No more: a window found first (the fortieth or eightieth row
    // on) read that many index entries more, and a plan that sorted the due rows read them all.
    expect(await rowsScanned(lastClaim(), { generic })).toBeLessThanOrEqual(30);
  });

  // A claim of 10 at shares of 5: a walk visits two keys. Thirteen keys of one message: the
  // walk takes ten, the claim taking heads the three left. What follows depends on the runs the
  // drain holds as it makes that claim: of more keys than a walk visits (the walk's ten), what
  // the claim left waits behind heads of its own, and heads go on; of fewer, few keys are left
  // and the walk takes their runs.
  it.each([
    { holding: 'the walk’s ten keys', next: 'heads' },
    { holding: 'no runs', next: 'walk' },
  ])(
    'come back short but not partial when their window held every due row; made holding $holding, the next claim takes $next',
    async ({ next }) => {
      const { store, keys, ways } = await headsOutbox(driver, inTurn(13, 13));
      await walkKeysNext(store);
      const walked = await store.claim(claimOf10());
      const holding = next === 'heads' ? heldRunsOf([walked]) : [];
      const heads = await store.claim(claimOf10({ resumeAt: walked.resumeAt, holding }));
      expect(ways.slice(-2)).toEqual(['walk', 'heads']);
      expect(keysTaken(heads)).toEqual(keys.slice(10, 13));
      expect(heads.partial).toBeUndefined();
      await store.claim(claimOf10({ resumeAt: heads.resumeAt }));
      expect(ways.at(-1)).toBe(next);
    },
  );

  it('come back after a claim without keyed rows when the last full claim over the schema took heads', async () => {
    const { outbox, store, ways } = await headsOutbox(driver, inTurn(60, 30));
    const { walked, next: heads } = await walkThenNext(store);
    expect(ways.at(-1)).toBe('heads');
    expect(keysTaken(heads)).toHaveLength(10);
    await deliverAll(store, walked, heads);
    // A store that takes no keyed rows (its first claim takes heads, after a store that took
    // them, and finds none unfinished) leaves the next store's first claim without them.
    await outbox.store(driver.db).claim(claimOf10());
    // A new keyed backlog: the claim after the one that finds it waiting takes heads, as the
    // last full claim over the schema led to, not the walk.
    const again = await headsOutbox(driver, inTurn(60, 30), outbox);
    const first = await again.store.claim(claimOf10());
    expect(first.claimed).toEqual([]);
    await again.store.claim(claimOf10({ resumeAt: first.resumeAt }));
    expect(again.ways).toEqual(['none', 'heads']);
  });

  it('start a store after one that took keyed rows and left none unfinished', async () => {
    const { outbox, store, ways } = await headsOutbox(driver, inTurn(60, 30));
    const { walked, next: heads } = await walkThenNext(store);
    await deliverAll(store, walked, heads);
    // The store's last claim took heads, and found no keyed message unfinished.
    expect(ways.at(-1)).toBe('heads');
    // A tick later, a new keyed backlog: the next store's first claim takes its heads at once,
    // with no claim ahead of it that leaves keyed rows out (over Neon's HTTP driver, a
    // subrequest every tick that drains its keyed messages).
    const again = await headsOutbox(driver, inTurn(60, 30), outbox);
    const first = await again.store.claim(claimOf10());
    expect(again.ways).toEqual(['heads']);
    expect(keysTaken(first)).toEqual(again.keys.slice(0, 10));
    expect(first.partial).toBeUndefined();
  });

  it('in a backlog, from the start, come back short but not partial when their window ends among rows not yet due', async () => {
    const { outbox, store, keys, ways, lastClaim } = await headsOutbox(driver, inTurn(13, 13));
    // More than the window from the start holds, due in an hour, after the thirteen.
    const window = 2 * HEADS_WINDOW_PER_ROW * 10;
    await outbox.enqueue(
      driver.db,
      Array.from({ length: window }, (_, n) => ({
        kind: 'test.kind',
        payload: { later: n },
        dueAt: new Date(Date.now() + 3_600_000),
      })),
    );
    await walkKeysNext(store);
    await store.claim(claimOf10());
    // In a backlog with no cursor yet: the claim reads a cursor past every row.
    const heads = await store.claim(claimOf10({ backlog: true }));
    expect(ways.at(-1)).toBe('heads');
    expect(lastClaim().params.at(-3)).toBe('infinity');
    expect(keysTaken(heads)).toEqual(keys.slice(10, 13));
    // Its window ended on a row due in an hour: nothing past it is due either.
    expect(heads.partial).toBeUndefined();
  });

  it('wait eight walks after one that was held back before taking heads again', async () => {
    // A key of many messages due first, so a claim taking heads finds its window held back;
    // then many keys of one message, so every walk comes back full of runs of one.
    const deep = HEADS_WINDOW_PER_ROW * 10 * 3;
    const { store, ways } = await headsOutbox(driver, [
      ...Array.from({ length: deep }, () => 'zz-deep'),
      ...inTurn(400, 200),
    ]);
    await walkKeysNext(store);
    let resumeAt: string | undefined;
    const claims: ClaimResult[] = [];
    for (let n = 0; n < 12; n++) {
      const result = await store.claim(claimOf10({ resumeAt }));
      claims.push(result);
      resumeAt = result.resumeAt;
    }
    // The walk takes both messages of five keys; the claim after it takes heads, and its window,
    // the deep key's backlog, is held back. Eight walks follow before heads again.
    expect(ways.slice(1)).toEqual([
      'walk',
      'heads',
      ...Array.from({ length: 8 }, () => 'walk'),
      'walk',
      'heads',
    ]);
    expect(claims[1]!.partial).toBe(true);
  });
});

describe.each(DRIVER_NAMES)('drains taking heads, through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  it('deliver each key in enqueue order and each message once, two claims on the wire', async () => {
    const { outbox } = await freshOutbox(driver);
    const keys = await outbox.enqueue(
      driver.db,
      inTurn(300, 150).map((orderingKey, n) => ({
        kind: 'test.kind',
        payload: { n },
        orderingKey,
      })),
    );
    const { store, ways } = watchedClaims(outbox, driver.db);
    // Each claim 10 ms away, so the lanes empty the queue before one lands.
    const far = claimCountingStore(store, 10);
    const sender = recordingSender();
    const report = await drainOnce({
      store: far.store,
      senders: { 'test.kind': sender.send },
      batchSize: 10,
      concurrency: 4,
    });
    expect(report.delivered).toBe(300);
    expect(ways).toContain('heads');
    expect(far.seen.mostOnWire).toBe(2);
    expect(new Set(sender.calls.map((call) => call.key)).size).toBe(300);
    for (let key = 0; key < 150; key++) {
      const ofKey = (message: string) => keys.indexOf(message) % 150 === key;
      expect(sender.delivered.filter(ofKey)).toEqual(keys.filter(ofKey));
    }
  });
});
