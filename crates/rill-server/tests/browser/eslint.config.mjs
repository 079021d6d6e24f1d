// Lints the instrument page's scripts (crates/rill-server/web/*.js) and this
// end-to-end test: `npm run lint` here (.ci/run does), which runs eslint from
// crates/rill-server with this config, so paths are relative to that folder.
import js from "@eslint/js";
import globals from "globals";

export default [
  {
    files: ["web/*.js"],
    ...js.configs.recommended,
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: { ...globals.browser, ...globals.audioWorklet },
    },
    rules: {
      ...js.configs.recommended.rules,
      // The page keeps its handler names readable; a leading _ marks one unused.
      "no-unused-vars": ["error", { argsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_" }],
    },
  },
  {
    files: ["tests/browser/*.mjs"],
    ...js.configs.recommended,
    // Its page.evaluate callbacks run in the browser.
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { ...globals.node, ...globals.browser },
    },
  },
];
