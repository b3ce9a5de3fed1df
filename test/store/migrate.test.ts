import { describe, expect, it } from 'vitest';
import {
  generatedModulePath,
  MIGRATION_SETS,
  renderMigrationsModule,
} from '../../scripts/build-migrations.js';
import { isOutboxError } from '../../src/core/errors.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { migrate } from '../../src/store/migrate.js';
import { migrations } from '../../src/store/migrations.generated.js';
import { useTestDatabase } from '../support/database.js';
import { DRIVER_NAMES, useDriver } from '../support/drivers.js';
import { waitFor } from '../support/wait-for.js';

const database = useTestDatabase({ migrated: false });
const ALL_VERSIONS = migrations.map((migration) => migration.version);

describe.each(DRIVER_NAMES)('migrate through %s', (driverName) => {
  const driver = useDriver(driverName, database);
  const schema = `outbox_${driverName.replace('-', '_')}`;

  it('two concurrent migrations leave one correct schema and no error', async () => {
    const results = await Promise.all([
      migrate(driver.db, { schema }),
      migrate(driver.db, { schema }),
    ]);
    // Exactly one of them applied version 1; the other waited on the lock and found it done.
    expect(results.map((result) => result.applied).sort()).toEqual([[], ALL_VERSIONS]);
    const { rows } = await database.pool.query(
      `SELECT version, name FROM ${schema}.schema_migrations ORDER BY version`,
    );
    expect(rows.map((row) => row.version).sort((a, b) => a - b)).toEqual(ALL_VERSIONS);
    expect(rows[0]).toEqual({ version: 1, name: 'outbox' });
  });

  it('is idempotent: running it again applies nothing', async () => {
    const again = await migrate(driver.db, { schema });
    expect(again).toEqual({ schema, applied: [], version: ALL_VERSIONS.at(-1) });
  });

  it('builds the table the outbox writes to, in the configured schema', async () => {
    const outbox = createOutbox({ schema });
    const [key] = await outbox.enqueue(driver.db, {
      kind: 'webhook',
      payload: { url: 'https://example.com/hook', body: { ok: true } },
    });
    const { rows } = await database.pool.query(
      `SELECT state FROM ${schema}.all_messages WHERE key = $1`,
      [key],
    );
    expect(rows).toEqual([{ state: 'pending' }]);
  });
});

describe('migrations', () => {
  it('a second migration waits for one in progress, then finds it done', async () => {
    const schema = 'outbox_waits';
    const client = await database.pool.connect();
    let reachCommit!: () => void;
    const atCommit = new Promise<void>((resolve) => {
      reachCommit = resolve;
    });
    let allowCommit!: () => void;
    const mayCommit = new Promise<void>((resolve) => {
      allowCommit = resolve;
    });
    // The first migration stops just before its COMMIT, holding everything it has locked.
    const paused = pgExecutor({
      async query(text: string, values?: unknown[]) {
        if (text === 'COMMIT') {
          reachCommit();
          await mayCommit;
        }
        return client.query(text, values);
      },
    });
    try {
      const first = migrate(paused, { schema });
      await atCommit;
      const second = migrate(pgExecutor(database.pool), { schema });
      await waitFor('the second migration to wait on a lock', async () => {
        const { rows } = await database.pool.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return rows[0].n > 0;
      });
      allowCommit();
      const results = await Promise.all([first, second]);
      expect(results.map((result) => result.applied)).toEqual([ALL_VERSIONS, []]);
    } finally {
      allowCommit();
      client.release();
    }
  });

  it('refuses a schema name that would need quoting rules', async () => {
    expect(() => createOutbox({ schema: 'Outbox; DROP TABLE x' })).toThrow(/schema/);
    const error = await migrate(
      { query: async () => ({ rows: [], rowCount: 0 }), batch: async () => [] },
      {
        schema: 'bad-name',
      },
    ).catch((e: unknown) => e);
    expect(isOutboxError(error) && error.code).toBe('OUTBOX_CONFIGURATION');
  });

  it('CHECK constraints refuse rows in an impossible state', async () => {
    await migrate(pgExecutor(database.pool), { schema: 'outbox_checks' });
    const insert = (columns: string, values: string) =>
      database.pool.query(
        `INSERT INTO outbox_checks.messages (key, kind, payload, ${columns})
         VALUES (gen_random_uuid(), 'email', '{}', ${values})`,
      );
    const claim = `gen_random_uuid(), now(), now()`;
    const refused = [
      // An unknown state, attempts past the maximum or below zero, a maximum out of range.
      ['state', `'sent'`],
      ['attempts, max_attempts', '4, 3'],
      ['attempts', '-1'],
      ['max_attempts', '1001'],
      // Each state with a column another state sets.
      ['claim_token', 'gen_random_uuid()'],
      ['delivered_at', 'now()'],
      ['state, attempts', `'claimed', 1`],
      ['state, attempts, claim_token, claimed_at', `'claimed', 1, gen_random_uuid(), now()`],
      ['state, claim_token, claimed_at, lease_expires_at', `'claimed', ${claim}`],
      [
        'state, attempts, claim_token, claimed_at, lease_expires_at, dead_at',
        `'claimed', 1, ${claim}, now()`,
      ],
      ['state, attempts', `'delivered', 1`],
      ['state, delivered_at', `'delivered', now()`],
      ['state, attempts, delivered_at, claim_token', `'delivered', 1, now(), gen_random_uuid()`],
      ['state', `'dead'`],
      ['state, dead_at, delivered_at', `'dead', now(), now()`],
      // Key lengths, checked by their domains.
      ['ordering_key', `''`],
      ['dedupe_key', `repeat('k', 201)`],
    ];
    for (const [columns, values] of refused) {
      await expect(insert(columns!, values!), `${columns} = ${values}`).rejects.toMatchObject({
        code: '23514',
      });
    }
    // The rows each state allows.
    const allowed = [
      ['state', `'pending'`],
      ['state, attempts, claim_token, claimed_at, lease_expires_at', `'claimed', 1, ${claim}`],
      ['state, attempts, delivered_at, dedupe_key', `'delivered', 1, now(), 'order-1'`],
      ['state, dead_at, ordering_key', `'dead', now(), repeat('k', 200)`],
    ];
    for (const [columns, values] of allowed) {
      await expect(insert(columns!, values!), `${columns} = ${values}`).resolves.toBeDefined();
    }
  });

  it('compresses history with lz4 where the server has it, and keeps pglz where it does not', async () => {
    await migrate(pgExecutor(database.pool), { schema: 'outbox_compression' });
    const { rows } = await database.pool.query<{ compression: string; lz4: boolean }>(
      `SELECT a.attcompression AS compression,
         (SELECT 'lz4' = ANY (enumvals) FROM pg_settings
          WHERE name = 'default_toast_compression') AS lz4
       FROM pg_attribute a
       WHERE a.attrelid = 'outbox_compression.delivered_groups'::regclass AND a.attname = 'messages'`,
    );
    // 'l' is lz4; '' is the server's default, pglz unless an operator changed it.
    expect(rows).toEqual([{ compression: rows[0]!.lz4 ? 'l' : '', lz4: rows[0]!.lz4 }]);
  });

  it('moves history kept a row per message into groups, readable as before', async () => {
    const schema = 'outbox_history_upgrade';
    const db = pgExecutor(database.pool);
    await migrate(db, { schema, migrations: migrations.filter((m) => m.version <= 4) });
    // 2,500 messages as version 4's settles left them: a row each, 250 settles of ten, and
    // one settle of 1,500 (a backlog cleared at once), which becomes groups of 1,000 and 500.
    await database.pool.query(
      `INSERT INTO ${schema}.delivered_messages
         (id, key, kind, payload, ordering_key, attempts, max_attempts, due_at, last_error,
          created_at, delivered_at)
       SELECT g, gen_random_uuid(), 'email', jsonb_build_object('g', g),
         CASE WHEN g % 3 = 0 THEN 'order-' || g % 7 END, 1 + g % 4, 10,
         now() - g * interval '1 second', CASE WHEN g % 4 > 0 THEN 'try ' || g % 4 END,
         now() - g * interval '2 seconds',
         CASE WHEN g <= 1000 THEN now() - interval '1 hour' + ((g - 1) / 10) * interval '1 second'
           ELSE now() - interval '1 minute' END
       FROM generate_series(1, 2500) AS g`,
    );
    const before = await database.pool.query(
      `SELECT * FROM ${schema}.delivered_messages ORDER BY id`,
    );
    expect((await migrate(db, { schema })).applied).toEqual(
      ALL_VERSIONS.filter((version) => version > 4),
    );
    const after = await database.pool.query(
      `SELECT * FROM ${schema}.delivered_messages ORDER BY id`,
    );
    expect(after.rows).toEqual(before.rows);
    const groups = await database.pool.query<{ size: number }>(
      `SELECT size FROM ${schema}.delivered_groups ORDER BY size DESC`,
    );
    expect(groups.rows.map((group) => group.size)).toEqual([1000, 500, ...Array(100).fill(10)]);

    const store = createOutbox({ schema }).store(db);
    expect((await store.stats(new Date())).delivered).toBe(2500);
    const sample = before.rows[1234] as { id: string; key: string };
    expect(await store.get(String(sample.id))).toMatchObject({ key: sample.key });
    expect(await store.getByKey(sample.key)).toMatchObject({ id: String(sample.id) });
  });

  it.each(MIGRATION_SETS)(
    'the bundled module for $folder matches its SQL files (run npm run build:migrations)',
    async (set) => {
      const { readFile } = await import('node:fs/promises');
      expect(await readFile(generatedModulePath(set), 'utf8')).toBe(
        await renderMigrationsModule(set),
      );
    },
  );
});
