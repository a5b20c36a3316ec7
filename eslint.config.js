// @ts-check
const eslint = require('@eslint/js');
const tseslint = require('typescript-eslint');

module.exports = tseslint.config(
  { ignores: ['dist/**', 'data/**', 'node_modules/**', 'coverage/**', '*.js', 'public/**'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    // The write side decides from streams only; reply shapes live in src/resources (docs/architecture.md).
    files: ['commands/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/queries/*'], message: 'commands/ must not import the read side' }] },
      ],
    },
  },
  {
    // Tests (and the crash test) read JSON bodies of many shapes; typing each one would add noise, not safety.
    files: ['test/**/*.ts', 'soak/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
