import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { waitFor } from '../support/wait-for.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const workspace = mkdtempSync(join(tmpdir(), 'outbox-start-'));
// As root, PostgreSQL runs as the postgres user, who must be able to reach the data directory.
chmodSync(workspace, 0o755);
const copy = join(workspace, 'repo');
const dataDir = join(workspace, 'pgdata');
let child: ChildProcess | undefined;

afterAll(() => {
  child?.kill('SIGKILL');
  rmSync(workspace, { recursive: true, force: true });
});

/** A clean copy: the tracked files only (what a clone has), sharing node_modules. */
function cleanCopy(): void {
  const files = execFileSync(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    {
      cwd: repo,
      encoding: 'utf8',
    },
  )
    .split('\0')
    .filter(Boolean);
  for (const file of files) {
    mkdirSync(dirname(join(copy, file)), { recursive: true });
    cpSync(join(repo, file), join(copy, file));
  }
  symlinkSync(join(repo, 'node_modules'), join(copy, 'node_modules'));
}

/** Processes whose command line mentions this test's workspace (its PostgreSQL above all). */
function processesInWorkspace(): string[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        const line = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
        return line.includes(workspace) ? [`${pid} ${line}`] : [];
      } catch {
        return [];
      }
    });
}

it('npm start runs the whole stack: a signup reaches the inbox, an order its event the local queue, and Ctrl-C stops everything', async () => {
  cleanCopy();
  child = spawn(process.execPath, ['--import', 'tsx', 'examples/reference-service/start.ts'], {
    cwd: copy,
    env: {
      ...process.env,
      DATABASE_URL: '',
      OUTBOX_DATA_DIR: dataDir,
      PORT: '0',
      OUTBOX_PG_PORT: '0',
      OUTBOX_NEON_PROXY_PORT: '0',
      OUTBOX_SES_PORT: '0',
      OUTBOX_SQS_PORT: '0',
      OUTBOX_SQS_QUEUE_URL: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child?.on('exit', (code, signal) => resolve({ code, signal })),
  );

  await waitFor(
    'npm start to be ready',
    () => {
      if (child?.exitCode !== null) throw new Error(`npm start exited early:\n${output}`);
      return output.includes('Press Ctrl-C');
    },
    90_000,
  );
  expect(output).toContain('Press Ctrl-C');
  const app = /App\s+(http:\/\/\S+)/.exec(output)?.[1];
  const inbox = /Inbox\s+(http:\/\/\S+?)\/\s/.exec(output)?.[1];
  const queue = /Queue\s+(http:\/\/\S+)/.exec(output)?.[1];
  expect(app && inbox && queue, output).toBeTruthy();
  expect(output).toMatch(/Dashboard\s+http:\/\/\S+\/admin\s+\(admin token: \S+\)/);
  expect(output).toMatch(/DATABASE_URL postgres:\/\//);

  const email = `newcomer-${Date.now()}@example.com`;
  const signup = await fetch(`${app}/signups`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, name: 'Newcomer' }),
  });
  expect(signup.status).toBe(201);

  let received: { destination: { to: string[] }; subject: string } | undefined;
  await waitFor(
    'the welcome email in the SES store',
    async () => {
      const store = (await (await fetch(`${inbox}/store`)).json()) as {
        emails: { destination: { to: string[] }; subject: string }[];
      };
      received = store.emails.find((message) =>
        message.destination.to.some((to) => to.includes(email)),
      );
      return received !== undefined;
    },
    10_000,
  );
  expect(received?.subject).toBe('Welcome, Newcomer');

  // An order's event goes through the SQS sender to the local queue, its key as an attribute.
  const { user } = (await signup.json()) as { user: { id: string } };
  const order = await fetch(`${app}/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ userId: user.id, items: [{ sku: 'tea', qty: 2, unitPriceCents: 450 }] }),
  });
  expect(order.status).toBe(201);
  const placed = (await order.json()) as { order: { id: string }; messageKeys: string[] };
  interface QueuedMessage {
    body: string;
    messageAttributes: Record<string, { StringValue?: string }>;
  }
  let event: QueuedMessage | undefined;
  await waitFor(
    'the order.placed event on the local queue',
    async () => {
      const state = (await (await fetch(queue!)).json()) as {
        messages: { ready: QueuedMessage[] };
      };
      event = state.messages.ready.find((message) =>
        placed.messageKeys.includes(
          String(message.messageAttributes['outbox-message-key']?.StringValue),
        ),
      );
      return event !== undefined;
    },
    10_000,
  );
  expect(JSON.parse(event!.body)).toMatchObject({
    order: { id: placed.order.id, totalCents: 900 },
  });

  child.kill('SIGINT');
  expect(await exited).toEqual({ code: 0, signal: null });
  expect(output).toContain('stopped');
  expect(processesInWorkspace()).toEqual([]);
});
