import { describe, expect, it } from 'vitest';
import { claimStatements } from './claim-statements.js';
import { type DueClaimShape, dueClaimNamed, type KeyedRows } from './due-claim-shape.js';
import { outboxStatements } from './statements.js';

describe('a due claim names its shape in a comment it ends with', () => {
  const ways: readonly KeyedRows[] = ['walk', 'heads', 'none'];
  const shapes: DueClaimShape[] = ways.flatMap((keyed) =>
    [false, true].flatMap((after) =>
      [false, true].map((answersWhenEmpty) => ({
        limit: 100,
        share: 10,
        after,
        keyed,
        answersWhenEmpty,
        probe: after,
      })),
    ),
  );

  it.each(shapes)('$keyed, after $after, answering when empty $answersWhenEmpty', (shape) => {
    const text = claimStatements('"outbox"')(shape);
    // Last, where pg_stat_statements keeps it.
    expect(text.trimEnd().endsWith('*/')).toBe(true);
    expect(dueClaimNamed(text)).toEqual({
      keyed: shape.keyed,
      after: shape.after,
      sharesOnly: false,
    });
  });

  it('one text per shape, the walk where none is named', () => {
    const texts = claimStatements('"outbox"');
    const walk = texts({ limit: 100, share: 10, after: false });
    expect(dueClaimNamed(walk)).toEqual({ keyed: 'walk', after: false, sharesOnly: false });
    expect(texts({ limit: 100, share: 10, after: false, keyed: 'walk' })).toBe(walk);
    expect(texts({ limit: 100, share: 5, after: false })).not.toBe(walk);
  });

  it('a walk of first shares only is a text of its own, without second shares or the caught-up test', () => {
    const texts = claimStatements('"outbox"');
    const whole = texts({ limit: 100, share: 10, after: true });
    const shares = texts({ limit: 100, share: 10, after: true, sharesOnly: true });
    expect([whole.includes('keyed_more'), whole.includes('AS caught_up')]).toEqual([true, true]);
    expect([shares.includes('keyed_more'), shares.includes('caught_up')]).toEqual([false, false]);
    expect(dueClaimNamed(shares)).toEqual({ keyed: 'walk', after: true, sharesOnly: true });
  });

  it('no other statement reads as one: the claim by key, the settles', () => {
    const statements = outboxStatements('"outbox"');
    expect(dueClaimNamed(statements.claimMessagesByKey)).toBeUndefined();
    expect(dueClaimNamed(statements.settleClaimedMessages)).toBeUndefined();
    expect(dueClaimNamed(statements.settleClaimedMessagesWithHealth)).toBeUndefined();
  });
});
