// Copies GraphiQL's browser bundles (and their licences) from node_modules into the directory the API
// serves at /graphiql-assets/, so the GraphiQL page needs no CDN. Run by `npm run vendor` after `npm ci`.
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const modules = join(here, "node_modules");
const target = process.argv[2] ?? join(here, "..", "web", "static", "graphiql", "vendor");

// served name -> file inside node_modules; web/graphiql.html loads exactly these
const assets = {
  "react.production.min.js": "react/umd/react.production.min.js",
  "react-dom.production.min.js": "react-dom/umd/react-dom.production.min.js",
  "graphiql.min.js": "graphiql/graphiql.min.js",
  "graphiql.min.css": "graphiql/graphiql.min.css",
  "plugin-explorer.umd.js": "@graphiql/plugin-explorer/dist/index.umd.js",
  "plugin-explorer.css": "@graphiql/plugin-explorer/dist/style.css",
};
const packages = ["react", "react-dom", "graphiql", "@graphiql/plugin-explorer", "graphql"];

rmSync(target, { recursive: true, force: true });
mkdirSync(target, { recursive: true });
for (const [name, source] of Object.entries(assets)) {
  copyFileSync(join(modules, source), join(target, name));
}

const notices = packages.map((name) => {
  const manifest = JSON.parse(readFileSync(join(modules, name, "package.json"), "utf8"));
  const licenceFile = join(modules, name, "LICENSE");
  const text = existsSync(licenceFile) ? readFileSync(licenceFile, "utf8") : `${manifest.license} (see ${manifest.repository?.url ?? name})`;
  return `${name}@${manifest.version} (${manifest.license})\n\n${text.trim()}\n`;
});
writeFileSync(join(target, "LICENSES.txt"), notices.join("\n" + "-".repeat(72) + "\n\n"));
console.log(`GraphiQL assets copied to ${target}`);
