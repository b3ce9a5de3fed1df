/**
 * Trace context through the store (docs/tracing.md): what an enqueue is given, or reads from the
 * outbox's source, is stored with the message, handed to its sender with every attempt, kept in
 * delivered history, and refused at enqueue, naming the field, when it is not W3C Trace Context.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { isValidationError } from '../../src/core/errors.js';
import { replayMessages } from '../../src/core/replay.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox, recordingSender } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';

const database = useTestDatabase();

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const TRACESTATE = 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE';
const OTHER_TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00';

describe.each(['node-pg', 'neon-http'] as const)('trace context through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  it('hands each message its own trace context, or none, and keeps it in delivered history', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const [traced, untraced, parentOnly] = await outbox.enqueue(driver.db, [
      {
        kind: 'test.kind',
        payload: { n: 1 },
        traceContext: { traceparent: TRACEPARENT, tracestate: TRACESTATE },
      },
      { kind: 'test.kind', payload: { n: 2 } },
      { kind: 'test.kind', payload: { n: 3 }, traceContext: { traceparent: OTHER_TRACEPARENT } },
    ]);
    expect((await store.getByKey(traced!))?.traceContext).toEqual({
      traceparent: TRACEPARENT,
      tracestate: TRACESTATE,
    });

    const sender = recordingSender();
    await drainOnce({ store, senders: { 'test.kind': sender.send } });
    const sent = new Map(sender.calls.map((call) => [call.key, call.traceContext]));
    expect(sent.get(traced!)).toEqual({ traceparent: TRACEPARENT, tracestate: TRACESTATE });
    expect(sent.has(untraced!)).toBe(true);
    expect(sent.get(untraced!)).toBeUndefined();
    expect(sent.get(parentOnly!)).toEqual({ traceparent: OTHER_TRACEPARENT });

    const delivered = await store.getByKey(traced!);
    expect(delivered?.state).toBe('delivered');
    expect(delivered?.traceContext).toEqual({ traceparent: TRACEPARENT, tracestate: TRACESTATE });
    expect((await store.getByKey(untraced!))?.traceContext).toBeUndefined();
  });

  it("takes the outbox's source when an enqueue gives none, and the enqueue's own over it", async () => {
    let calls = 0;
    const { outbox, store } = await freshOutbox(driver, {
      traceContext: () => {
        calls += 1;
        return { traceparent: TRACEPARENT };
      },
    });
    const [fromSource, own] = await outbox.enqueue(driver.db, [
      { kind: 'test.kind', payload: {} },
      { kind: 'test.kind', payload: {}, traceContext: { traceparent: OTHER_TRACEPARENT } },
    ]);
    expect(calls).toBe(1);
    expect((await store.getByKey(fromSource!))?.traceContext).toEqual({ traceparent: TRACEPARENT });
    expect((await store.getByKey(own!))?.traceContext).toEqual({ traceparent: OTHER_TRACEPARENT });
  });

  it('enqueues without a trace when the source throws or returns a malformed one', async () => {
    for (const source of [
      () => {
        throw new Error('no tracer here');
      },
      () => ({ traceparent: 'not-a-traceparent' }),
    ]) {
      const { outbox, store } = await freshOutbox(driver, { traceContext: source });
      const [key] = await outbox.enqueue(driver.db, { kind: 'test.kind', payload: {} });
      const message = await store.getByKey(key!);
      expect(message?.state).toBe('pending');
      expect(message?.traceContext).toBeUndefined();
    }
  });
});

describe('trace context at enqueue', () => {
  const driver = useDriver('node-pg', database);

  it('refuses what is not W3C Trace Context, naming the field, and writes nothing', async () => {
    const { outbox, schema } = await freshOutbox(driver);
    const cases: [unknown, string][] = [
      [{ traceparent: 'abc' }, 'messages[1].traceContext.traceparent'],
      // Version ff is invalid, and all-zero ids mean none.
      [{ traceparent: `ff${TRACEPARENT.slice(2)}` }, 'messages[1].traceContext.traceparent'],
      [
        { traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` },
        'messages[1].traceContext.traceparent',
      ],
      [
        { traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01` },
        'messages[1].traceContext.traceparent',
      ],
      [{ traceparent: TRACEPARENT.toUpperCase() }, 'messages[1].traceContext.traceparent'],
      [
        { traceparent: TRACEPARENT, tracestate: 'x'.repeat(513) },
        'messages[1].traceContext.tracestate',
      ],
      [
        { traceparent: TRACEPARENT, tracestate: 'a=b\r\nX-Injected: 1' },
        'messages[1].traceContext.tracestate',
      ],
      [{ traceparent: TRACEPARENT, baggage: 'k=v' }, 'messages[1].traceContext.baggage'],
      ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'messages[1].traceContext'],
    ];
    for (const [traceContext, field] of cases) {
      const error = await outbox
        .enqueue(driver.db, [
          { kind: 'test.kind', payload: {} },
          // biome-ignore lint/suspicious/noExplicitAny: hostile input, as JSON would bring it
          { kind: 'test.kind', payload: {}, traceContext: traceContext as any },
        ])
        .then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
      expect(isValidationError(error), String(traceContext)).toBe(true);
      expect((error as { field?: string }).field).toBe(field);
    }
    const { rows } = await database.pool.query(`SELECT count(*)::int AS n FROM ${schema}.messages`);
    expect(rows[0].n).toBe(0);
  });

  it('is checked by the table too, for rows written from SQL', async () => {
    const { schema } = await freshOutbox(driver);
    await expect(
      database.pool.query(
        `INSERT INTO ${schema}.messages (key, kind, payload, max_attempts, due_at, traceparent)
         VALUES (gen_random_uuid(), 'test.kind', '{}', 3, now(), 'traceparent: evil')`,
      ),
    ).rejects.toMatchObject({ code: '23514' });
  });

  it('comes back with a message replayed from history', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const [key] = await outbox.enqueue(driver.db, {
      kind: 'test.kind',
      payload: {},
      traceContext: { traceparent: TRACEPARENT },
    });
    const first = recordingSender();
    await drainOnce({ store, senders: { 'test.kind': first.send } });
    const report = await replayMessages({
      store: store.replays(),
      selection: { state: 'delivered', kinds: ['test.kind'] },
      requestedBy: 'tester',
    });
    expect(report.replayed).toBe(1);
    const again = recordingSender();
    await drainOnce({ store, senders: { 'test.kind': again.send } });
    expect(again.calls.map((call) => [call.key, call.traceContext])).toEqual([
      [key, { traceparent: TRACEPARENT }],
    ]);
  });
});
