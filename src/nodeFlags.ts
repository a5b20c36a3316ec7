/**
 * The Node/V8 flags the service runs with (`npm start`, the Dockerfile's CMD; the bench starts both of its
 * servers so). `--max-old-space-size=1024` caps the JS heap at 1 GB, far above what the service keeps
 * (~40-70 MB live under load), and with it V8 grows the heap by a smaller factor between full collections:
 * measured under the bench's booking load, RSS 177-183 MB against 232-245 MB without, with the same live
 * lag and CPU per booking (docs/scaling.md, "Memory"). test/unit/node-flags.test.ts keeps the three places
 * in step.
 */
export const SERVICE_NODE_FLAGS = ['--max-old-space-size=1024'];
