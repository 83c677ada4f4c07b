// Builds web/dist/ (what the browser loads, committed) from web/src/ and the pinned npm
// packages: `npm ci && npm run build`. `--check` rebuilds in memory and fails when dist/
// differs (the committed bundle is the build of these sources); `--test` bundles the unit
// tests into test-out/ for `node --test`.
import * as esbuild from "esbuild";
import { readFileSync, writeFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "dist");
const mode = process.argv[2] ?? "--build";

if (mode === "--test") {
  rmSync(join(here, "test-out"), { recursive: true, force: true });
  const tests = readdirSync(join(here, "test")).filter((f) => f.endsWith(".test.ts"));
  await esbuild.build({
    entryPoints: tests.map((f) => join(here, "test", f)),
    outdir: join(here, "test-out"),
    bundle: true,
    platform: "node",
    format: "esm",
    outExtension: { ".js": ".mjs" },
    logLevel: "warning",
  });
  process.exit(0);
}

const bundle = await esbuild.build({
  entryPoints: [join(here, "src", "app.ts")],
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: true,
  legalComments: "eof",
  charset: "utf8",
  write: false,
  logLevel: "warning",
});
const files = {
  "phux-web.js": bundle.outputFiles[0].contents,
  "phux-web.css": readFileSync(join(here, "src", "phux-web.css")),
  "xterm.css": readFileSync(join(here, "node_modules", "@xterm", "xterm", "css", "xterm.css")),
  "index.html": readFileSync(join(here, "index.html")),
};

if (mode === "--check") {
  const stale = Object.entries(files).filter(([name, bytes]) => {
    let committed;
    try {
      committed = readFileSync(join(dist, name));
    } catch {
      return true;
    }
    return Buffer.compare(Buffer.from(bytes), committed) !== 0;
  });
  if (stale.length) {
    console.error(`web/dist is not the build of web/src: ${stale.map(([n]) => n).join(", ")} differ; run \`npm ci && npm run build\` in web/`);
    process.exit(1);
  }
  console.log(`web/dist matches a rebuild (${Object.keys(files).length} files)`);
} else {
  mkdirSync(dist, { recursive: true });
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(dist, name), bytes);
  console.log(`built web/dist: ${Object.entries(files).map(([n, b]) => `${n} ${b.length} B`).join(", ")}`);
}
