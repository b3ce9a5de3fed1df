/**
 * The TypeScript a reader is shown: every ```ts (or ```typescript) block of README.md and
 * docs/*.md, and every `@example` of a doc comment in src/ and examples/, each with the file
 * and line it is written at. test/docs/examples.test.ts type-checks them all.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CodeExample {
  /** Repository-relative path of the file the example is written in. */
  file: string;
  /** The line of that file the example's first line of code is on (1-based). */
  line: number;
  code: string;
  /**
   * For a Markdown block right after `<!-- excerpt: PATH -->`: the file it is cut from, word for
   * word. It is checked as part of that file, not alone (an excerpt starts mid-function).
   */
  excerptOf?: string;
}

const FENCE = /^(\s*)```\s*([\w-]*)\s*$/;
const TYPESCRIPT = new Set(['ts', 'typescript']);
const EXCERPT = /^<!-- excerpt: (\S+) -->$/;

/** The TypeScript blocks of one Markdown file, dedented to the fence's own indentation. */
export function markdownExamples(file: string, markdown: string): CodeExample[] {
  const lines = markdown.split('\n');
  const examples: CodeExample[] = [];
  for (let open = 0; open < lines.length; open++) {
    const fence = FENCE.exec(lines[open] ?? '');
    if (!fence) continue;
    const indent = fence[1]?.length ?? 0;
    let close = open + 1;
    while (close < lines.length && !/^\s*```\s*$/.test(lines[close] ?? '')) close++;
    if (TYPESCRIPT.has(fence[2] ?? '')) {
      const code = lines
        .slice(open + 1, close)
        .map((line) => line.slice(Math.min(indent, line.length - line.trimStart().length)))
        .join('\n');
      const excerptOf = EXCERPT.exec(lines[open - 1]?.trim() ?? '')?.[1];
      examples.push({
        file,
        line: open + 2,
        code: `${code}\n`,
        ...(excerptOf ? { excerptOf } : {}),
      });
    }
    open = close;
  }
  return examples;
}

/**
 * The `@example`s of one source file's doc comments: from the line after the tag to the next
 * tag or the comment's end. A fenced block inside (TSDoc's own style) is taken alone.
 */
export function docCommentExamples(file: string, source: string): CodeExample[] {
  const examples: CodeExample[] = [];
  for (const comment of source.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
    const firstLine = source.slice(0, comment.index).split('\n').length;
    const lines = comment[0].split('\n').map((line) =>
      line
        .replace(/^\s*\/?\*+\/?/, '')
        .replace(/^ /, '')
        .replace(/\s*\*\/$/, ''),
    );
    for (let tag = 0; tag < lines.length; tag++) {
      if (!/^@example\b/.test(lines[tag] ?? '')) continue;
      let end = tag + 1;
      while (end < lines.length && !/^@[a-zA-Z]/.test(lines[end] ?? '')) end++;
      const body = lines.slice(tag + 1, end);
      const fenced = markdownExamples(file, body.join('\n'));
      const blocks =
        fenced.length > 0
          ? fenced.map((block) => ({ line: block.line, code: block.code }))
          : [{ line: 1, code: `${body.join('\n')}\n` }];
      for (const block of blocks) {
        const trimmed = block.code.replace(/^(\s*\n)+/, '');
        const skipped = block.code.length - trimmed.length;
        const leadingLines = block.code.slice(0, skipped).split('\n').length - 1;
        examples.push({
          file,
          line: firstLine + tag + block.line + leadingLines,
          code: `${trimmed.trimEnd()}\n`,
        });
      }
      tag = end - 1;
    }
  }
  return examples;
}

/** Every example in the repository at `root`: README.md, docs/, src/ and examples/. */
export function repositoryExamples(root: string): CodeExample[] {
  const read = (file: string) => readFileSync(join(root, file), 'utf8');
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  const sources = ['src', 'examples'].flatMap((dir) =>
    readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))
      .sort()
      .map((name) => `${dir}/${name}`),
  );
  return [
    ...['README.md', ...docs].flatMap((file) => markdownExamples(file, read(file))),
    ...sources.flatMap((file) => docCommentExamples(file, read(file))),
  ];
}
