/**
 * The entry points' own drain options reach `drainOnce`: a Workers plan's subrequests and a cron
 * drain's time, Lambda's safety margin, a kick's budget and subrequests, an operator's budget
 * and message limit. Each test sets a value whose effect the default would not have, and where
 * the effect is a deadline's, shows the default's effect in the same world too. The probes are
 * drain-builder.test.ts's: a recording store and sender, and a claim that takes long on the clock.
 */
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/database.js';
import {
  newWorld,
  outcomesOfClaim,
  postDrain,
  runKick,
  runLambdaKit,
  runWorkersKit,
  subrequests,
  type World,
  type WorldOptions,
} from './drain-entry-points.js';

const database = useTestDatabase();

/** What became of the first claim's row: sent and delivered, or handed back unsent. */
function firstRow(world: World): string | undefined {
  return outcomesOfClaim(world.seen, 0)[0]?.outcome;
}

/** Runs `drain` in a world whose first claim takes `slowClaimMs` of the clock. */
async function afterSlowClaim(slowClaimMs: number, drain: (world: World) => Promise<void>) {
  const world = await newWorld(database, {}, { slowFirstClaimMs: slowClaimMs });
  await drain(world);
  return firstRow(world);
}

const FIVE_MESSAGES: WorldOptions = { messages: 5 };

describe('the Workers kit', () => {
  it('subrequestBudget: 5 makes at most five subrequests', async () => {
    const world = await newWorld(database, {}, FIVE_MESSAGES);
    await runWorkersKit(world, { subrequestBudget: 5 });
    expect(world.seen.sendsStarted).toBeGreaterThan(0);
    expect(subrequests(world.seen)).toBeLessThanOrEqual(5);
  });

  it('drainBudgetMs: 4000 leaves no time to send after a 2 s claim; the default 45 s does', async () => {
    const budget = { subrequestBudget: 1_000 };
    expect(
      await afterSlowClaim(2_000, (world) =>
        runWorkersKit(world, { ...budget, drainBudgetMs: 4_000 }),
      ),
    ).toBe('release');
    expect(await afterSlowClaim(2_000, (world) => runWorkersKit(world, budget))).toBe('delivered');
  });
});

describe('the Lambda kit', () => {
  it('safetyMarginMs: 6000 of 10 s left leaves no time to send after a 2 s claim; the default 2 s does', async () => {
    expect(
      await afterSlowClaim(2_000, (world) =>
        runLambdaKit(world, 10_000, { safetyMarginMs: 6_000 }),
      ),
    ).toBe('release');
    expect(await afterSlowClaim(2_000, (world) => runLambdaKit(world, 10_000))).toBe('delivered');
  });
});

describe('the kick', () => {
  it('budgetMs: 20000 still sends after a 4 s claim; the default 5 s does not', async () => {
    expect(await afterSlowClaim(4_000, (world) => runKick(world, { budgetMs: 20_000 }))).toBe(
      'delivered',
    );
    expect(await afterSlowClaim(4_000, (world) => runKick(world))).toBe('release');
  });

  it('subrequestBudget: 5 makes at most five subrequests', async () => {
    const world = await newWorld(database, {}, FIVE_MESSAGES);
    await runKick(world, { subrequestBudget: 5 });
    expect(world.seen.sendsStarted).toBeGreaterThan(0);
    expect(subrequests(world.seen)).toBeLessThanOrEqual(5);
  });
});

describe("the admin's POST /drain", () => {
  it('budgetMs: 20000 still sends after a 6 s claim; the default 10 s does not', async () => {
    expect(await afterSlowClaim(6_000, (world) => postDrain(world, { budgetMs: 20_000 }))).toBe(
      'delivered',
    );
    expect(await afterSlowClaim(6_000, (world) => postDrain(world, {}))).toBe('release');
  });

  it('maxMessages: 2 claims two messages at most', async () => {
    const world = await newWorld(database, {}, FIVE_MESSAGES);
    await postDrain(world, { maxMessages: 2 });
    expect(world.seen.claims[0]?.request.limit).toBe(2);
    expect(world.seen.sendsStarted).toBe(2);
  });
});
