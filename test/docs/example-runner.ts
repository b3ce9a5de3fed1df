/**
 * Runs documentation examples as written, in this process: the example is compiled to
 * JavaScript and run as the body of an async function whose parameters are the names it takes
 * as given, bound to real values (a pool on the test database, a recording sender, the
 * package's exports). test/docs/examples-run.test.ts picks the examples that can run.
 */
import ts from 'typescript';
import type { CodeExample } from './code-examples.js';
import { namesOf } from './example-types.js';

export type Scope = Readonly<Record<string, unknown>>;

// biome-ignore lint/complexity/useArrowFunction: the constructor of async functions, by name.
const AsyncFunction = async function () {}.constructor as new (
  ...parameters: string[]
) => (...values: unknown[]) => Promise<unknown>;

/**
 * Runs `example` with `scope`'s names in reach (those it declares itself stay its own), and
 * `modules` serving its imports. Resolves when its last statement has.
 */
export async function runExample(
  example: CodeExample,
  scope: Scope,
  modules: Readonly<Record<string, unknown>> = {},
): Promise<void> {
  const { declared } = namesOf(example.code);
  const given = Object.entries(scope).filter(([name]) => !declared.has(name));
  const require = (name: string) => {
    if (!(name in modules)) throw new Error(`${where(example)} imports ${name}: not provided`);
    return modules[name];
  };
  const body = javascript(example.code);
  const run = new AsyncFunction('require', 'exports', ...given.map(([name]) => name), body);
  await run(require, {}, ...given.map(([, value]) => value));
}

/**
 * One line of an example that states its result: `expression; // result`, or the result on a
 * comment line of its own right below.
 */
export interface StatedResult {
  line: number;
  expression: string;
  /** The stated result, as JavaScript, with a trailing `...` (more follows) taken out. */
  expected: string;
  /** The statement ended in `...`: a string starts with it, an object holds at least it. */
  partial: boolean;
}

const STATED = /^(.+?);\s*\/\/\s*(.+)$/;

/**
 * The lines of an example whose every line is `expression; // result`, both parts JavaScript
 * expressions, or `undefined` for an example written any other way (a comment in words, a
 * declaration).
 */
export function statedResults(example: CodeExample): StatedResult[] | undefined {
  const lines = example.code.trimEnd().split('\n');
  const results: StatedResult[] = [];
  for (let index = 0; index < lines.length; index++) {
    let text = lines[index]!;
    const below = /^\s*\/\/\s*(.+)$/.exec(lines[index + 1] ?? '');
    if (/;\s*$/.test(text) && below) text = `${text} // ${below[1]}`;
    const match = STATED.exec(text);
    const stated = match?.[2]?.trim() ?? '';
    const expected = stated.replace(/,?\s*\.\.\.(\s*[}'"])/g, '$1');
    if (!match || !isExpression(match[1]!) || !isExpression(expected)) return undefined;
    results.push({
      line: example.line + index,
      expression: match[1]!,
      expected,
      partial: expected !== stated,
    });
    if (text !== lines[index]) index++;
  }
  return results;
}

/** The value of one JavaScript expression, with `scope`'s names in reach. */
export function evaluate(expression: string, scope: Scope): unknown {
  const names = Object.keys(scope);
  const run = new Function(...names, `return ${javascript(`(${expression})`)};`);
  return run(...Object.values(scope));
}

function isExpression(text: string): boolean {
  const output = ts.transpileModule(`(${text});`, { reportDiagnostics: true });
  return output.diagnostics?.length === 0;
}

function javascript(code: string): string {
  return ts
    .transpileModule(code, {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
    })
    .outputText.replace(/;\s*$/, '');
}

export function where(example: CodeExample): string {
  return `${example.file}:${example.line}`;
}
