import { byteRange } from '../../src/storage/types';

describe('byteRange: what a Range header asks of a file of 100 bytes', () => {
  it.each([
    [undefined, 'whole'],
    ['bytes=0-9', { start: 0, end: 9 }],
    ['bytes=90-', { start: 90, end: 99 }],
    ['bytes=90-500', { start: 90, end: 99 }],
    ['bytes=-10', { start: 90, end: 99 }],
    ['bytes=-500', { start: 0, end: 99 }],
    ['bytes=99-99', { start: 99, end: 99 }],
    ['bytes=100-', 'unsatisfiable'],
    ['bytes=150-200', 'unsatisfiable'],
    ['bytes=-0', 'unsatisfiable'],
    ['bytes=9-0', 'whole'],
    ['bytes=0-1,5-6', 'whole'],
    ['items=0-1', 'whole'],
    ['bytes=-', 'whole'],
    ['bytes=a-b', 'whole'],
  ] as const)('%s -> %j', (header, expected) => {
    expect(byteRange(header, 100)).toEqual(expected);
  });
});
