/**
 * Type-checks documentation examples as a reader's own modules, in one TypeScript program: the
 * repository's strict tsconfig.json, with `outbox-relay` and its subpaths resolving to the
 * sources through its `paths`. The modules live in memory under `.doc-examples/`; nothing is
 * written to disk.
 *
 * An example may leave out what a reader supplies. A name it uses without declaring it is
 * imported for it, from the first of:
 * 1. for a doc comment, the exports of the file it documents (what the comment is about), by
 *    their public name where the package exports them;
 * 2. the package's public exports;
 * 3. test/docs/given-names.ts, the connection, outbox, app and env every reader has.
 * An example that imports from `outbox-relay` itself gets nothing from 1 and 2 that the package
 * exports: its imports are what a reader copies, so they must be complete. Anything else is
 * undeclared and an error, as it is for the reader.
 */
import { join, relative } from 'node:path';
import ts from 'typescript';
import { repositoryCompilerOptions } from '../../scripts/compiler-options.js';
import type { CodeExample } from './code-examples.js';

export const GIVEN_NAMES = 'test/docs/given-names.ts';
const VIRTUAL_DIR = '.doc-examples';
const PACKAGE_IMPORT = /^outbox-relay(\/|$)/;

interface Importable {
  /** The module specifier, as the example's module writes it. */
  from: string;
  /** `false` for a type or interface: imported with `type` (verbatimModuleSyntax). */
  isValue: boolean;
  /** What the name is, so a file's export can be found under its public name. */
  symbol: ts.Symbol;
}

/** One failed check, named by the documentation file and line it points at. */
export type ExampleError = string;

/** An example as the module the check compiles: one line of imports, then its code. */
export interface ExampleModule {
  example: CodeExample;
  /** Line N + 1 of the text is line N of the example. */
  text: string;
}

/**
 * The modules of `examples` (excerpts left out), importing the given names from
 * `givenNamesFrom` (default: given-names.ts, seen from where the check puts the modules).
 */
export function exampleModules(
  root: string,
  examples: readonly CodeExample[],
  givenNamesFrom?: string,
): ExampleModule[] {
  return prepare(root, examples, givenNamesFrom).modules;
}

/**
 * The type errors of every example, as `docs/x.md:12:5 TS2304: Cannot find name 'y'.` lines.
 * An excerpt (`excerptOf`) is checked as part of the file it is cut from.
 */
export function exampleTypeErrors(root: string, examples: readonly CodeExample[]): ExampleError[] {
  const { options, host, scope, modules: prepared } = prepare(root, examples);
  const modules = new Map<string, CodeExample>();
  for (const { example, text } of prepared) {
    const name = `${example.file.replaceAll('/', '__')}-${example.line}.ts`;
    const path = join(root, VIRTUAL_DIR, name);
    host.addVirtual(path, text);
    modules.set(path, example);
  }
  const excerptFiles = [
    ...new Set(examples.flatMap((example) => (example.excerptOf ? [example.excerptOf] : []))),
  ].map((file) => join(root, file));
  const program = ts.createProgram({
    rootNames: [...modules.keys(), ...excerptFiles],
    options,
    host,
    oldProgram: scope,
  });

  const errors: ExampleError[] = [];
  for (const file of [...modules.keys(), ...excerptFiles]) {
    const source = program.getSourceFile(file);
    if (!source) {
      errors.push(`${relative(root, file)}: not found`);
      continue;
    }
    const origin = modules.get(file);
    for (const diagnostic of [
      ...program.getSyntacticDiagnostics(source),
      ...program.getSemanticDiagnostics(source),
    ]) {
      const at = source.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
      const where = origin
        ? `${origin.file}:${origin.line + at.line - 1}:${at.character + 1}`
        : `${relative(root, file)}:${at.line + 1}:${at.character + 1}`;
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
      errors.push(`${where} TS${diagnostic.code}: ${message}`);
    }
  }
  return errors;
}

function prepare(root: string, examples: readonly CodeExample[], givenNamesFrom?: string) {
  const options = repositoryCompilerOptions(root);
  const host = cachingHost(options);
  const specifier = (file: string) =>
    relative(join(root, VIRTUAL_DIR), join(root, file)).replace(/\.ts$/, '.js');
  const documented = examples.filter((example) => !example.excerptOf);
  const scope = packageScope(root, options, host, documented, specifier, givenNamesFrom);
  const modules = documented.map((example) => ({
    example,
    text: `${scope.header(example)}\n${example.code}`,
  }));
  return { options, host, scope: scope.program, modules };
}

/**
 * What an example's module may be given, read from a first program over the package's entry
 * points, the documented files and given-names; `header` writes the imports of one example.
 */
function packageScope(
  root: string,
  options: ts.CompilerOptions,
  host: ts.CompilerHost,
  documented: readonly CodeExample[],
  specifier: (file: string) => string,
  givenNamesFrom = specifier(GIVEN_NAMES),
) {
  const entries = Object.entries(options.paths ?? {}).map(([name, [file]]) => ({
    name,
    file: join(root, file ?? ''),
  }));
  const hostFiles = [...new Set(documented.map((example) => example.file))]
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(root, file));
  const program = ts.createProgram({
    rootNames: [...entries.map((entry) => entry.file), ...hostFiles, join(root, GIVEN_NAMES)],
    options,
    host,
  });
  const checker = program.getTypeChecker();
  const exportsOf = (file: string, from: string): Map<string, Importable> => {
    const source = program.getSourceFile(file);
    const module = source && checker.getSymbolAtLocation(source);
    const names = new Map<string, Importable>();
    if (!module) return names;
    for (const exported of checker.getExportsOfModule(module)) {
      const symbol =
        exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const isValue = (symbol.flags & ts.SymbolFlags.Value) !== 0;
      names.set(exported.name, { from, isValue, symbol });
    }
    return names;
  };
  const given = exportsOf(join(root, GIVEN_NAMES), givenNamesFrom);
  const publicNames = new Map<string, Importable>();
  const publicSymbols = new Map<ts.Symbol, { name: string; from: string }>();
  for (const entry of entries) {
    for (const [name, found] of exportsOf(entry.file, entry.name)) {
      if (!publicNames.has(name)) publicNames.set(name, found);
      if (!publicSymbols.has(found.symbol)) {
        publicSymbols.set(found.symbol, { name, from: entry.name });
      }
    }
  }

  /** The import a name the example uses but does not declare gets, if any (see the top). */
  const source = (name: string, own: Map<string, Importable>, importsPackage: boolean) => {
    const mine = own.get(name);
    if (!mine) return (!importsPackage && publicNames.get(name)) || given.get(name);
    const published = publicSymbols.get(mine.symbol);
    if (published?.name !== name) return mine;
    return importsPackage ? undefined : { ...mine, from: published.from };
  };
  const header = (example: CodeExample): string => {
    const own = example.file.endsWith('.ts')
      ? exportsOf(join(root, example.file), specifier(example.file))
      : new Map<string, Importable>();
    const { declared, used, importsPackage } = namesOf(example.code);
    const imports = new Map<string, string[]>();
    for (const name of used) {
      const found = declared.has(name) ? undefined : source(name, own, importsPackage);
      if (!found) continue;
      const list = imports.get(found.from) ?? [];
      imports.set(found.from, [...list, found.isValue ? name : `type ${name}`]);
    }
    return [...imports]
      .map(([from, names]) => `import { ${names.join(', ')} } from '${from}';`)
      .concat('export {};')
      .join(' ');
  };
  return { program, header };
}

/**
 * The names an example declares at its top level, every identifier it mentions (a superset of
 * what it uses: importing a name it does not use is harmless), and whether it imports from the
 * package itself.
 */
export function namesOf(code: string) {
  const source = ts.createSourceFile('example.ts', code, ts.ScriptTarget.Latest, true);
  const declared = new Set<string>();
  const used = new Set<string>();
  let importsPackage = false;
  const bind = (name: ts.BindingName) => {
    if (ts.isIdentifier(name)) {
      declared.add(name.text);
      return;
    }
    for (const element of name.elements) {
      if (!ts.isOmittedExpression(element)) bind(element.name);
    }
  };
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      const from = (statement.moduleSpecifier as ts.StringLiteral).text;
      if (PACKAGE_IMPORT.test(from)) importsPackage = true;
      const clause = statement.importClause;
      if (clause?.name) declared.add(clause.name.text);
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) declared.add(bindings.name.text);
      if (bindings && ts.isNamedImports(bindings)) {
        for (const element of bindings.elements) declared.add(element.name.text);
      }
    } else if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) bind(declaration.name);
    } else if (
      (ts.isFunctionDeclaration(statement) ||
        ts.isClassDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement) ||
        ts.isEnumDeclaration(statement) ||
        ts.isModuleDeclaration(statement)) &&
      statement.name &&
      ts.isIdentifier(statement.name)
    ) {
      declared.add(statement.name.text);
    }
  }
  const visit = (node: ts.Node) => {
    if (ts.isIdentifier(node)) used.add(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { declared, used, importsPackage };
}

/**
 * A compiler host that parses each file once for both programs and serves the examples'
 * modules from memory.
 */
function cachingHost(options: ts.CompilerOptions) {
  const base = ts.createCompilerHost(options, true);
  const virtual = new Map<string, string>();
  const parsed = new Map<string, ts.SourceFile | undefined>();
  const host: ts.CompilerHost & { addVirtual(path: string, text: string): void } = {
    ...base,
    addVirtual: (path, text) => virtual.set(path, text),
    fileExists: (file) => virtual.has(file) || base.fileExists(file),
    readFile: (file) => virtual.get(file) ?? base.readFile(file),
    getSourceFile: (file, language, onError) => {
      const text = virtual.get(file);
      if (text !== undefined) return ts.createSourceFile(file, text, language, true);
      if (!parsed.has(file)) parsed.set(file, base.getSourceFile(file, language, onError));
      return parsed.get(file);
    },
  };
  return host;
}
