import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', '.data/', 'packages/*/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // The console's browser modules (served as they are, src/http/console-routes.ts).
    files: ['src/console/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        ['document', 'window', 'location', 'sessionStorage', 'fetch', 'crypto', 'btoa', 'confirm', 'Node', 'console', 'React', 'ReactDOM', 'GraphiQL'].map((name) => [name, 'readonly']),
      ),
    },
  },
);
