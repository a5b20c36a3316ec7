import { Metadata, status } from '@grpc/grpc-js';
import { EventStoreDBClient, WrongExpectedVersionError, convertToCommandError } from '@eventstore/db-client';
import { isTransient } from '../../projections/runner';

/** A gRPC failure as @grpc/grpc-js hands it to the EventStoreDB client, turned into the client's error. */
const clientError = (code: status, details: string, meta: Record<string, string> = {}) => {
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(meta)) metadata.set(k, v);
  return convertToCommandError(Object.assign(new Error(`${code} ${details}`), { code, details, metadata }));
};

describe('transient error classification (EventStoreDB client errors are all named "Error")', () => {
  it('treats a node that does not answer as transient (a real connection refused)', async () => {
    const client = EventStoreDBClient.connectionString('esdb://127.0.0.1:1?tls=false');
    const err = await (async () => {
      for await (const _ of client.readAll({ maxCount: 1 })) break;
    })().catch((e: unknown) => e);
    await client.dispose();
    expect((err as Error).name).toBe('Error');
    expect((err as { type?: string }).type).toBe('unavailable');
    expect(isTransient(err)).toBe(true);
  });

  it.each([
    ['deadline exceeded', clientError(status.DEADLINE_EXCEEDED, 'Deadline exceeded')],
    ['connection dropped', clientError(status.UNAVAILABLE, 'Connection dropped')],
    ['cancelled by the server', clientError(status.CANCELLED, 'Cancelled on server')],
    ['aborted (timeout)', clientError(status.ABORTED, 'Operation timed out')],
    [
      'not the leader',
      clientError(status.NOT_FOUND, 'Leader info available', {
        exception: 'not-leader',
        'leader-endpoint-host': '10.0.0.2',
        'leader-endpoint-port': '2113',
      }),
    ],
  ])('treats %s as transient', (_, err) => {
    expect((err as Error).name).toBe('Error');
    expect(isTransient(err)).toBe(true);
  });

  it('does not retry what will fail again: a wrong expected version, an unknown error', () => {
    const wev = clientError(status.UNKNOWN, 'Wrong expected version', {
      exception: 'wrong-expected-version',
      'stream-name': 's',
      'expected-version': '1',
      'actual-version': '2',
    });
    expect(wev).toBeInstanceOf(WrongExpectedVersionError);
    expect(isTransient(wev)).toBe(false);
    expect(isTransient(clientError(status.INTERNAL, 'boom'))).toBe(false);
    expect(isTransient(new Error('a bug'))).toBe(false);
  });
});

describe('transient PostgreSQL errors while the server crashes and recovers', () => {
  it.each([
    ['57P01', 'terminating connection due to administrator command'],
    ['57P02', 'terminating connection because of crash of another server process'],
    ['57P03', 'the database system is starting up'],
  ])('treats %s (%s) as transient', (code, message) => {
    expect(isTransient(Object.assign(new Error(message), { code }))).toBe(true);
  });

  it('does not treat a dropped database (57P04) as transient', () => {
    expect(isTransient(Object.assign(new Error('database dropped'), { code: '57P04' }))).toBe(false);
  });
});
