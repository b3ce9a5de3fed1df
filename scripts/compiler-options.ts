/**
 * The repository's own TypeScript compiler options, read from tsconfig.json: strict, with
 * `paths` sending `outbox-relay` and each of its subpaths to the source file. What the API
 * report (scripts/api-report.ts) and the documentation examples' check (test/docs/) compile with.
 */
import { join } from 'node:path';
import ts from 'typescript';

export function repositoryCompilerOptions(root: string): ts.CompilerOptions {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  );
  if (!parsed) throw new Error('tsconfig.json could not be read');
  return parsed.options;
}
