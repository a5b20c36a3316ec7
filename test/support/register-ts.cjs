/* eslint-disable */
// Lets a child `node` process (test/support/instance.ts) load the TypeScript sources directly: each .ts file
// is compiled by @swc/core (already here for Jest) to CommonJS as it is required. Type checking stays with
// `npm run typecheck`.
const fs = require('node:fs');
const { transformSync } = require('@swc/core');

require.extensions['.ts'] = function compileTs(module, filename) {
  const { code } = transformSync(fs.readFileSync(filename, 'utf8'), {
    filename,
    sourceMaps: 'inline',
    jsc: { target: 'es2022', parser: { syntax: 'typescript' } },
    module: { type: 'commonjs' },
  });
  module._compile(code, filename);
};
