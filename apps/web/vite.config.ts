import { sveltekit } from '@sveltejs/kit/vite';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// Shared schemas and rules come from the libs source (browser-safe entry only, never '@dryft/libs/node').
const libs = fileURLToPath(new URL('../../libs/src/index.ts', import.meta.url));

export default defineConfig({
  plugins: [sveltekit()],
  resolve: { alias: [{ find: /^@dryft\/libs$/, replacement: libs }] },
  server: {
    fs: { allow: ['../../libs'] },
    proxy: { '/api': 'http://localhost:3000', '/socket.io': { target: 'http://localhost:3000', ws: true } },
  },
  build: { chunkSizeWarningLimit: 800 },
});
