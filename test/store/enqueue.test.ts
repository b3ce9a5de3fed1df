import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_PAYLOAD_BYTES } from '../../src/core/message.js';
import { isValidationError, type NewMessage } from '../../src/index.js';
import { createOutbox } from '../../src/outbox.js';
import { checkStorableText, storableTextProblem } from '../../src/store/own-tables.js';
import { useTestDatabase } from '../support/database.js';
import { countingExecutor, DRIVER_NAMES, useDriver } from '../support/drivers.js';
import { countMessages, insertUser, welcomeEmail } from '../support/fixtures.js';

const database = useTestDatabase();
const outbox = createOutbox({ kinds: { 'slack.post': true } });

beforeAll(async () => {
  await database.pool.query('CREATE TABLE users (id serial PRIMARY KEY, email text NOT NULL)');
});

describe.each(DRIVER_NAMES)('enqueue through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  it('writes a message with its key when the transaction commits', async () => {
    const email = `${driverName}-commit@example.com`;
    const [key] = await driver.writeWithMessages(outbox, insertUser(email), {
      kind: 'email',
      payload: welcomeEmail(email),
    });
    const { rows } = await database.pool.query(
      'SELECT kind, payload, state, attempts FROM outbox.messages WHERE key = $1',
      [key],
    );
    expect(rows).toEqual([
      {
        kind: 'email',
        payload: welcomeEmail(email),
        state: 'pending',
        attempts: 0,
      },
    ]);
    const users = await database.pool.query('SELECT 1 FROM users WHERE email = $1', [email]);
    expect(users.rowCount).toBe(1);
  });

  it('leaves neither the domain row nor the message when the transaction rolls back', async () => {
    const email = `${driverName}-rollback@example.com`;
    const key = crypto.randomUUID();
    await expect(
      driver.writeWithMessages(
        outbox,
        insertUser(email),
        { kind: 'email', key, payload: welcomeEmail(email) },
        { fail: true },
      ),
    ).rejects.toMatchObject({ code: '22012' });
    const messages = await database.pool.query('SELECT 1 FROM outbox.messages WHERE key = $1', [
      key,
    ]);
    const users = await database.pool.query('SELECT 1 FROM users WHERE email = $1', [email]);
    expect(messages.rowCount).toBe(0);
    expect(users.rowCount).toBe(0);
  });

  it('yields one message for one dedupe key, across calls and within a call', async () => {
    const dedupeKey = `${driverName}-order-42-confirmation`;
    const message: NewMessage = { kind: 'slack.post', payload: { n: 1 }, dedupeKey };
    const [first] = await driver.writeWithMessages(outbox, insertUser('a@example.com'), message);
    const [second, third] = await driver.writeWithMessages(outbox, insertUser('b@example.com'), [
      { ...message, payload: { n: 2 } },
      { ...message, payload: { n: 3 } },
    ]);
    expect(second).toBe(first);
    expect(third).toBe(first);
    const { rows } = await database.pool.query(
      'SELECT key, payload FROM outbox.messages WHERE dedupe_key = $1',
      [dedupeKey],
    );
    expect(rows).toEqual([{ key: first, payload: { n: 1 } }]);
  });

  it('writes many messages in one statement, keeping enqueue order and their fields', async () => {
    const counted = countingExecutor(driver.db);
    const dueAt = new Date('2030-01-01T00:00:00.000Z');
    const messages: NewMessage[] = Array.from({ length: 500 }, (_, index) => ({
      kind: 'slack.post',
      payload: { index },
      orderingKey: `${driverName}-bulk`,
      ...(index === 0 ? { dueAt, maxAttempts: 3 } : {}),
    }));
    const keys = await outbox.enqueue(counted, messages);
    expect(counted.statements).toBe(1);
    expect(new Set(keys).size).toBe(500);
    const { rows } = await database.pool.query(
      `SELECT key, payload, due_at, max_attempts FROM outbox.messages
       WHERE ordering_key = $1 ORDER BY id`,
      [`${driverName}-bulk`],
    );
    expect(rows.map((row) => row.key)).toEqual(keys);
    expect(rows.map((row) => row.payload.index)).toEqual(messages.map((_, index) => index));
    expect(rows[0].due_at).toEqual(dueAt);
    expect(rows[0].max_attempts).toBe(3);
    expect(rows[1].max_attempts).toBe(10);
  });

  it('delays a message by delayMs from the database clock at insert', async () => {
    const [key] = await outbox.enqueue(driver.db, {
      kind: 'slack.post',
      payload: {},
      delayMs: 60 * 60 * 1000,
    });
    const { rows } = await database.pool.query(
      `SELECT extract(epoch FROM due_at - created_at) * 1000 AS delay_ms
       FROM outbox.messages WHERE key = $1`,
      [key],
    );
    // due_at is kept to the millisecond, created_at to the microsecond.
    expect(Math.abs(Number(rows[0].delay_ms) - 60 * 60 * 1000)).toBeLessThan(1);
  });

  it('stores astral characters (surrogate pairs) in payload, keys and ordering keys byte for byte', async () => {
    const text = 'party 🎉 family 👩‍👩‍👧 clef 𝄞 last \u{10FFFF} bmp-end \uFFFF é';
    const payload = { text, '🔑': ['😀', { '𝄞': text }] };
    const orderingKey = `${driverName}-order-🎉`;
    const dedupeKey = `${driverName}-dedupe-😀`;
    const [key] = await driver.writeWithMessages(
      outbox,
      insertUser(`${driverName}-astral@example.com`),
      { kind: 'slack.post', payload, orderingKey, dedupeKey },
    );
    const { rows } = await database.pool.query(
      `SELECT payload, ordering_key, dedupe_key,
              convert_to(payload->>'text', 'UTF8') AS text_bytes
         FROM outbox.messages WHERE key = $1`,
      [key],
    );
    expect(rows).toEqual([
      {
        payload,
        ordering_key: orderingKey,
        dedupe_key: dedupeKey,
        text_bytes: Buffer.from(text, 'utf8'),
      },
    ]);
  });

  it('refuses a caller-chosen key that already exists, naming the field', async () => {
    const key = crypto.randomUUID();
    await outbox.enqueue(driver.db, { kind: 'slack.post', key, payload: {} });
    const error = await outbox
      .enqueue(driver.db, { kind: 'slack.post', key, payload: {} })
      .catch((e) => e);
    expect(isValidationError(error)).toBe(true);
    expect(error.field).toBe('key');
  });
});

describe('enqueue validation', () => {
  const cases: [string, unknown, string][] = [
    ['an unknown kind', { kind: 'sms', payload: {} }, 'message.kind'],
    ['a malformed kind', { kind: 'Email!', payload: {} }, 'message.kind'],
    ['a missing payload', { kind: 'slack.post' }, 'message.payload'],
    [
      'a function in the payload',
      { kind: 'slack.post', payload: { f: () => 1 } },
      'message.payload.f',
    ],
    [
      'NaN in the payload',
      { kind: 'slack.post', payload: { n: [1, Number.NaN] } },
      'message.payload.n[1]',
    ],
    [
      'a Date in the payload',
      { kind: 'slack.post', payload: { at: new Date() } },
      'message.payload.at',
    ],
    [
      'undefined in the payload',
      { kind: 'slack.post', payload: { u: undefined } },
      'message.payload.u',
    ],
    ['a bigint payload', { kind: 'slack.post', payload: 1n }, 'message.payload'],
    [
      'an email without a subject',
      { kind: 'email', payload: { to: ['a@example.com'], text: 'x' } },
      'message.payload.subject',
    ],
    [
      'a payload over the size limit',
      { kind: 'slack.post', payload: { blob: 'x'.repeat(MAX_PAYLOAD_BYTES) } },
      'message.payload',
    ],
    [
      'an invalid due time',
      { kind: 'slack.post', payload: {}, dueAt: new Date('nope') },
      'message.dueAt',
    ],
    ['a negative delay', { kind: 'slack.post', payload: {}, delayMs: -5 }, 'message.delayMs'],
    [
      'both dueAt and delayMs',
      { kind: 'slack.post', payload: {}, dueAt: new Date(), delayMs: 1 },
      'message.dueAt',
    ],
    [
      'a key that is not a UUID',
      { kind: 'slack.post', payload: {}, key: 'order-1' },
      'message.key',
    ],
    [
      'an empty ordering key',
      { kind: 'slack.post', payload: {}, orderingKey: '' },
      'message.orderingKey',
    ],
    [
      'an overlong dedupe key',
      { kind: 'slack.post', payload: {}, dedupeKey: 'd'.repeat(201) },
      'message.dedupeKey',
    ],
    [
      'zero max attempts',
      { kind: 'slack.post', payload: {}, maxAttempts: 0 },
      'message.maxAttempts',
    ],
    ['a misspelt property', { kind: 'slack.post', payload: {}, orderKey: 'x' }, 'message.orderKey'],
  ];

  const database2 = database;
  it.each(cases)(
    'rejects %s with a ValidationError naming the field and writes nothing',
    async (_, message, field) => {
      const before = await countMessages(database2.pool);
      const error = await outbox
        .enqueue(
          { query: (text, params) => database2.pool.query(text, params) as never },
          message as NewMessage,
        )
        .catch((e: unknown) => e);
      expect(isValidationError(error)).toBe(true);
      expect((error as { field: string }).field).toBe(field);
      expect(await countMessages(database2.pool)).toBe(before);
    },
  );

  it('names the position of the bad message in a list, and writes none of the list', async () => {
    const before = await countMessages(database.pool);
    const error = await outbox
      .enqueue({ query: (text, params) => database.pool.query(text, params) as never }, [
        { kind: 'slack.post', payload: {} },
        { kind: 'slack.post', payload: { bad: Number.POSITIVE_INFINITY } },
      ])
      .catch((e: unknown) => e);
    expect((error as { field: string }).field).toBe('messages[1].payload.bad');
    expect(await countMessages(database.pool)).toBe(before);
  });
});

describe('strings PostgreSQL cannot store', () => {
  const cases: [string, unknown, string][] = [
    [
      'a lone high surrogate',
      { kind: 'slack.post', payload: { name: 'Ada \ud800' } },
      'message.payload.name',
    ],
    [
      'a lone low surrogate deep in an array',
      { kind: 'slack.post', payload: { tags: ['ok', { label: 'x\udc00y' }] } },
      'message.payload.tags[1].label',
    ],
    [
      'a surrogate pair in the wrong order',
      { kind: 'slack.post', payload: { name: '\udc00\ud800' } },
      'message.payload.name',
    ],
    [
      'a lone surrogate as the whole payload',
      { kind: 'slack.post', payload: '\ud83d' },
      'message.payload',
    ],
    [
      'a lone surrogate in a property name',
      { kind: 'slack.post', payload: { ok: { 'a\ud800': 1 } } },
      'message.payload.ok["a\\ud800"]',
    ],
    [
      'NUL in a value',
      { kind: 'slack.post', payload: { note: 'a\u0000b' } },
      'message.payload.note',
    ],
    [
      'NUL in a property name',
      { kind: 'slack.post', payload: { 'a\u0000b': 1 } },
      'message.payload["a\\u0000b"]',
    ],
    [
      'a lone surrogate in an ordering key',
      { kind: 'slack.post', payload: {}, orderingKey: 'order-\ud800' },
      'message.orderingKey',
    ],
    [
      'a lone surrogate in a dedupe key',
      { kind: 'slack.post', payload: {}, dedupeKey: '\udfff' },
      'message.dedupeKey',
    ],
    [
      'NUL in an ordering key',
      { kind: 'slack.post', payload: {}, orderingKey: 'a\u0000' },
      'message.orderingKey',
    ],
    [
      'a lone surrogate in a key',
      { kind: 'slack.post', payload: {}, key: '\ud800' },
      'message.key',
    ],
    ['a lone surrogate in a kind', { kind: 'slack.post\ud800', payload: {} }, 'message.kind'],
    [
      'a lone surrogate in an email subject',
      { kind: 'email', payload: { to: ['a@example.com'], subject: 'Hi \ud800', text: 'x' } },
      'message.payload.subject',
    ],
    [
      'a lone surrogate in a webhook URL',
      { kind: 'webhook', payload: { url: 'https://hooks.example.com/\ud800', body: {} } },
      'message.payload.url',
    ],
  ];

  it.each(cases)(
    'refuses %s with a ValidationError naming the field, and writes nothing',
    async (_, message, field) => {
      const before = await countMessages(database.pool);
      const error = await outbox
        .enqueue(
          { query: (text, params) => database.pool.query(text, params) as never },
          message as NewMessage,
        )
        .catch((e: unknown) => e);
      expect(isValidationError(error), String(error)).toBe(true);
      expect((error as { field: string }).field).toBe(field);
      expect(await countMessages(database.pool)).toBe(before);
    },
  );

  it('names the message in a list, and writes none of the list', async () => {
    const before = await countMessages(database.pool);
    const error = await outbox
      .enqueue({ query: (text, params) => database.pool.query(text, params) as never }, [
        { kind: 'slack.post', payload: { name: 'fine 🎉' } },
        { kind: 'slack.post', payload: { name: 'Ada \ud800' } },
      ])
      .catch((e: unknown) => e);
    expect((error as { field: string }).field).toBe('messages[1].payload.name');
    expect(await countMessages(database.pool)).toBe(before);
  });
});

describe("storableTextProblem and checkStorableText, for an app's own columns", () => {
  it.each([
    ['', true],
    ['plain', true],
    ['🎉 pair 𝄞', true],
    ['\u{10FFFF}', true],
    ['\ud800', false],
    ['x\udbff', false],
    ['\udc00x', false],
    ['\udc00\ud800', false],
    ['a\u0000', false],
  ])('judges %j storable: %s', async (text, storable) => {
    expect(storableTextProblem(text) === undefined).toBe(storable);
    let thrown: unknown;
    try {
      checkStorableText(text, 'user.name');
    } catch (error) {
      thrown = error;
    }
    expect(thrown === undefined).toBe(storable);
    if (!storable) expect(thrown).toMatchObject({ field: 'user.name', code: 'OUTBOX_VALIDATION' });
    // The rule matches the database: what it accepts, a text column takes; what it refuses, it rejects.
    const stored = await database.pool
      .query('SELECT $1::text AS value', [text])
      .then((result) => result.rows[0].value === text)
      .catch(() => false);
    const storedAsJson = await database.pool
      .query('SELECT $1::jsonb AS value', [JSON.stringify({ text })])
      .then((result) => result.rows[0].value.text === text)
      .catch(() => false);
    expect(stored && storedAsJson).toBe(storable);
  });
});
