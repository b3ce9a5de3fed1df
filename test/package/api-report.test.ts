/**
 * docs/api.md is the public API as reviewers read it (scripts/api-report.ts writes it from the
 * sources): a change to any entry's exports fails here until the report is regenerated, so the
 * change shows in the diff under review rather than only in the code.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_REPORT, renderApiReport } from '../../scripts/api-report.js';
import { repo } from './consumer-project.js';

describe('the API report', () => {
  it('is what the sources export (after changing the surface: npm run api:report, then review the diff)', () => {
    expect(readFileSync(join(repo, API_REPORT), 'utf8')).toBe(renderApiReport());
  }, 60_000);

  it('has a section for every entry of the exports map', () => {
    const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
      exports: Record<string, unknown>;
    };
    const entries = Object.keys(manifest.exports).filter((key) => key !== './package.json');
    const sections = [...renderApiReport().matchAll(/^## `(outbox-relay[^`]*)`$/gm)].map(
      (match) => match[1],
    );
    expect(sections).toEqual(
      entries.map((key) => (key === '.' ? 'outbox-relay' : `outbox-relay/${key.slice(2)}`)),
    );
  }, 60_000);
});
