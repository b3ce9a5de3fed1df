/**
 * Per-key order and keys through a replay: real drains sending real webhooks to a receiver on
 * 127.0.0.1, which records what arrived, in order, under which webhook-id (the message key).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { replayMessages } from '../../src/core/replay.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { useTestDatabase } from '../support/database.js';
import { recordingSender } from '../support/drain-fixtures.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';
import { insertDeadMessages } from '../support/replay-fixtures.js';
import { loopbackWebhookSender } from '../support/webhook-receiver.js';

const database = useTestDatabase();
let receiver: LoopbackServer;
/** Bodies (`orderingKey/n`) the receiver refuses with a 400 while listed. */
const refused = new Set<string>();
/** What the receiver accepted, in arrival order: the body's name and the webhook-id. */
const accepted: { name: string; key: string }[] = [];

beforeAll(async () => {
  receiver = await startLoopbackServer((request, response) => {
    const { name } = JSON.parse(request.body) as { name: string };
    if (refused.has(name)) {
      response.statusCode = 400;
      response.end('refused');
      return;
    }
    accepted.push({ name, key: request.headers['webhook-id']! });
    response.statusCode = 200;
    response.end('ok');
  });
});

afterAll(async () => {
  await receiver?.close();
});

let schemas = 0;

async function setup() {
  schemas += 1;
  const outbox = createOutbox({ schema: `replay_order_${schemas}`, kinds: { webhook: true } });
  const db = pgExecutor(database.pool);
  await outbox.migrate(db);
  const store = outbox.store(db);
  const sender = loopbackWebhookSender(receiver.port);
  /** Enqueues one webhook per name (`orderingKey/n`), ordered by the part before the slash. */
  const enqueue = (names: string[]) =>
    outbox.enqueue(
      db,
      names.map((name) => ({
        kind: 'webhook',
        orderingKey: name.split('/')[0],
        payload: { url: `${receiver.url}/orders`, body: { name } },
      })),
    );
  const drain = () =>
    drainOnce({ store, senders: { webhook: sender }, concurrency: 10, batchSize: 10 });
  return { store, enqueue, drain };
}

/** The names accepted since `from`, of one ordering key, in arrival order. */
function arrivals(from: number, orderingKey: string): string[] {
  return accepted
    .slice(from)
    .filter((each) => each.name.startsWith(`${orderingKey}/`))
    .map((each) => each.name);
}

function keyOf(name: string, from = 0): string | undefined {
  return accepted.slice(from).find((each) => each.name === name)?.key;
}

describe('replay keeps per-key order and keys, through real drains and a real receiver', () => {
  it('redriven dead heads go out before the followers they held, under their original keys', async () => {
    const { store, enqueue, drain } = await setup();
    const keys = await enqueue(['a/1', 'a/2', 'a/3', 'a/4', 'b/1', 'b/2', 'b/3']);
    refused.add('a/1').add('b/2');
    await drain();
    // a/1 is dead and holds a/2..a/4; b/1 went out, b/2 is dead and holds b/3.
    expect(arrivals(0, 'a')).toEqual([]);
    expect(arrivals(0, 'b')).toEqual(['b/1']);
    refused.clear();
    const from = accepted.length;
    const report = await replayMessages({
      store: store.replays(),
      selection: { state: 'dead', destination: `127.0.0.1:${receiver.port}/orders` },
      requestedBy: 'tester',
      batchSize: 1,
      // A drain between batches: the follower of a head not yet replayed must still wait.
      onProgress: async () => {
        await drain();
      },
    });
    expect(report).toMatchObject({ matched: 2, replayed: 2 });
    await drain();
    expect(arrivals(from, 'a')).toEqual(['a/1', 'a/2', 'a/3', 'a/4']);
    expect(arrivals(from, 'b')).toEqual(['b/2', 'b/3']);
    expect(keyOf('a/1', from)).toBe(keys[0]);
    expect(keyOf('b/2', from)).toBe(keys[5]);
  });

  it('a resent delivered head goes before a follower enqueued after it, under its original key', async () => {
    const { store, enqueue, drain } = await setup();
    const keys = await enqueue(['c/1', 'c/2', 'c/3']);
    await drain();
    expect(arrivals(0, 'c')).toEqual(['c/1', 'c/2', 'c/3']);
    await enqueue(['c/4']);
    const from = accepted.length;
    const report = await replayMessages({
      store: store.replays(),
      selection: { state: 'delivered', orderingKeys: ['c'], until: new Date(Date.now() + 60_000) },
      requestedBy: 'tester',
      batchSize: 2,
    });
    expect(report).toMatchObject({ matched: 3, replayed: 3 });
    await drain();
    expect(arrivals(from, 'c')).toEqual(['c/1', 'c/2', 'c/3', 'c/4']);
    expect([keyOf('c/1', from), keyOf('c/2', from), keyOf('c/3', from)]).toEqual(keys);
  });

  it('a resent follower never passes its resent head, however drains interleave with batches', async () => {
    const { store, enqueue, drain } = await setup();
    const keys = await enqueue(['d/1', 'd/2', 'd/3']);
    await drain();
    const from = accepted.length;
    await replayMessages({
      store: store.replays(),
      selection: { state: 'delivered', orderingKeys: ['d'] },
      requestedBy: 'tester',
      batchSize: 1,
      onProgress: async () => {
        await drain();
      },
    });
    await drain();
    expect(arrivals(from, 'd')).toEqual(['d/1', 'd/2', 'd/3']);
    expect(accepted.slice(from).map((each) => each.key)).toEqual(keys);
  });

  it('a redrive of 2,000 dead messages over 50 keys, with drains running all along, sends each once in id order per key', async () => {
    schemas += 1;
    const schema = `replay_order_${schemas}`;
    const outbox = createOutbox({ schema, kinds: { 'test.kind': true } });
    const db = pgExecutor(database.pool);
    await outbox.migrate(db);
    await insertDeadMessages(database.pool, schema, 2000, { orderingKey: "'k-' || (g % 50)" });
    const { rows } = await database.pool.query(
      `SELECT id::int AS id, key::text AS key, ordering_key::text AS ordering_key FROM ${schema}.messages`,
    );
    const byKey = new Map(rows.map((row) => [row.key as string, row]));
    const sender = recordingSender();
    const store = outbox.store(db);
    let replaying = true;
    const drains = (async () => {
      for (;;) {
        // Only a drain that started once the replay was over may end the loop: one that started
        // before could have claimed before the last batch committed, and found nothing.
        const afterReplay = !replaying;
        const report = await drainOnce({
          store,
          senders: { 'test.kind': sender.send },
          concurrency: 10,
        });
        if (afterReplay && report.claimed === 0) return;
      }
    })();
    const report = await replayMessages({
      store: store.replays(),
      selection: { state: 'dead' },
      requestedBy: 'tester',
      batchSize: 100,
      ratePerSecond: 4000,
    });
    replaying = false;
    await drains;
    expect(report.replayed).toBe(2000);
    expect(sender.calls).toHaveLength(2000);
    expect(new Set(sender.calls.map((call) => call.key)).size).toBe(2000);
    const sent = new Map<string, number[]>();
    for (const call of sender.calls) {
      const row = byKey.get(call.key)!;
      sent.set(row.ordering_key, [...(sent.get(row.ordering_key) ?? []), row.id]);
    }
    for (const ids of sent.values()) expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });
});
