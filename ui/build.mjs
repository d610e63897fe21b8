// Builds the dashboard into one directory that `carve server` embeds (tools/embed_assets.py):
//   index.html            the page (not cached: it names the current assets)
//   favicon.svg
//   assets/main-HASH.js   one ES module bundle (Preact + the pages), minified
//   assets/main-HASH.css
//   manifest.json         the files written, for the embedding step
// Usage: node build.mjs --out DIR   (CMake runs it; `npm run build` writes ./dist)
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outIndex = process.argv.indexOf('--out');
if (outIndex < 0 || !process.argv[outIndex + 1]) {
  console.error('usage: node build.mjs --out DIR');
  process.exit(2);
}
const out = process.argv[outIndex + 1];
rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'assets'), { recursive: true });

const result = await build({
  entryPoints: [join(here, 'src/main.jsx')],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome111', 'firefox115', 'safari16.4'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  entryNames: '[name]-[hash]',
  outdir: join(out, 'assets'),
  metafile: true,
  legalComments: 'linked',
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((p) => relative(out, p));
const js = outputs.find((p) => p.endsWith('.js'));
const css = outputs.find((p) => p.endsWith('.css'));
if (!js || !css) {
  console.error(`build.mjs: expected one .js and one .css output, got ${outputs.join(', ')}`);
  process.exit(1);
}
const html = readFileSync(join(here, 'src/index.html'), 'utf8')
  .replace('%JS%', `/ui/${js}`)
  .replace('%CSS%', `/ui/${css}`);
writeFileSync(join(out, 'index.html'), html);
copyFileSync(join(here, 'src/favicon.svg'), join(out, 'favicon.svg'));
const files = ['index.html', 'favicon.svg', ...outputs].sort();
writeFileSync(join(out, 'manifest.json'), JSON.stringify({ files }, null, 2) + '\n');
console.log(`dashboard: ${files.join(' ')}`);
