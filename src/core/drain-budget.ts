/**
 * A drain's subrequest budget as its claims, sends and settle writes see it: what is spent, what
 * must stay free for the writes a claim's lease may force and for the run's record, and what
 * one send may still take.
 */
import type { DrainRun } from './drain-run.js';
import { SubrequestBudgetError } from './errors.js';
import type { SendContext } from './sender.js';

/**
 * Subrequests still free: spent ones are taken, and so is one settle write per claim whose rows
 * are not all in a write yet, and per claim on the wire (see {@link writesOwed}): every write a
 * lease may force is paid for, and so is the last write of a drain, and the run's record.
 */
export function budgetLeft(run: DrainRun): number {
  return run.settings.subrequestBudget - spent(run) - writesOwed(run);
}

/**
 * Settle writes the budget must keep free. A claim's rows are all written by the write its
 * lease forces (every send of them ends before it: see reasonNotToSend in drain.ts), so one
 * write per claim with rows still unwritten covers every forced write and the drain's last;
 * a write that takes a claim's last rows is paid for by that claim.
 */
export function writesOwed(run: DrainRun): number {
  return run.unsettledClaims + run.claimsOnWire;
}

/**
 * Sends the budget can still pay for in a claim on the wire (counted in `claimsOnWire`, so its
 * write is kept free): rows queued or on the wire in another claim have their sends taken first,
 * `rowsPerSend` rows a send (see rowsPerSend in resolved-settings.ts).
 */
export function sendsAffordable(run: DrainRun): number {
  const { rowsPerSend } = run.settings;
  return (
    budgetLeft(run) -
    Math.ceil(run.queue.length / rowsPerSend) -
    Math.ceil(run.rowsOnWire / rowsPerSend)
  );
}

function spent({ report, recordOwed }: DrainRun): number {
  return report.roundTrips + report.sends + report.senderSubrequests + recordOwed;
}

/**
 * The budget as one send sees it: a request a sender reports is taken from what is free,
 * the settle owed included, so a sender can never spend a settle's subrequest.
 */
export function sendContext(run: DrainRun): SendContext {
  return {
    run: run.identity,
    spend(subrequests, what) {
      if (!Number.isInteger(subrequests) || subrequests < 0) {
        throw new RangeError(`spend: subrequests must be a whole number >= 0, got ${subrequests}`);
      }
      const left = budgetLeft(run);
      if (subrequests > left) {
        throw new SubrequestBudgetError(
          `${what} needs ${subrequests} subrequests and the drain's budget has ${left} left; the message goes back unsent`,
        );
      }
      run.report.senderSubrequests += subrequests;
    },
  };
}
