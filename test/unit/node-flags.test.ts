import fs from 'node:fs';
import path from 'node:path';
import { SERVICE_NODE_FLAGS } from '../../src/nodeFlags';

/**
 * The service runs with the same Node flags wherever it is started for real (`npm start`, the image), and
 * the bench measures it so (bench/http.ts takes them from src/nodeFlags.ts): a figure the README prints
 * must be one an operator gets.
 */
const root = path.join(__dirname, '..', '..');

describe("the service's Node flags", () => {
  it('are on the npm start line', () => {
    const start = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts
      .start as string;
    expect(start).toBe(`node ${SERVICE_NODE_FLAGS.join(' ')} dist/src/main.js`);
  });

  it("are on the image's CMD", () => {
    const cmd = /^CMD (.*)$/m.exec(fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8'))?.[1];
    expect(JSON.parse(cmd ?? 'null')).toEqual(['node', ...SERVICE_NODE_FLAGS, 'dist/src/main.js']);
  });
});
