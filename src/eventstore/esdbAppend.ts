import {
  WrongExpectedVersionError,
  convertToCommandError,
  type AppendExpectedRevision,
  type AppendResult,
  type EventStoreDBClient,
  type JSONEventData,
} from '@eventstore/db-client';
import { StreamsClient } from '@eventstore/db-client/generated/streams_grpc_pb';
import { AppendReq, type AppendResp } from '@eventstore/db-client/generated/streams_pb';
import { Empty, StreamIdentifier, UUID } from '@eventstore/db-client/generated/shared_pb';

/*
 * One append on its own `Streams.Append` call, with the client's per-call deadline (`defaultDeadline`), on
 * the client's channel and error handling (its `execute`: a call failing UNAVAILABLE or CANCELLED makes it
 * reconnect). Why not the client's own ways (@eventstore/db-client 6.2.1):
 * - `appendToStream` sends through BatchAppend whenever the node offers it, and that crashes the process:
 *   the client keeps the appends waiting on every client's BatchAppend call in one module-wide map, an
 *   "error" on any one call (a node restart, a keepalive timeout on a half-open connection, a dispose)
 *   rejects and forgets them all, and their answers, when they then come on a call still up, throw a
 *   TypeError inside a gRPC handler: an uncaught exception. Its calls have no deadline either (one call
 *   lives for good), so a node that stops answering held every append.
 * - Passing `credentials` makes `appendToStream` take the Append function below (the connection's own
 *   credentials would have to be handed to every call), with its fault.
 * - Its Append function (`dist/streams/appendToStream/append.js`, reachable by a deep require: the package
 *   has no "exports" map) starts the call inside an `async` Promise executor: a call started on a channel
 *   the client has just closed (it does when it reconnects, under calls about to start) throws there, which
 *   is an unhandled rejection (the process down under Node's default) and an append that never settles.
 * What goes on the wire is what that function sends, built with the client's own generated messages.
 */

/** The client's protected members this uses (declared `protected` in its types; present at run time). */
type AppendArgs = Parameters<StreamsClient['append']>;
interface ClientInternals {
  execute<T>(
    Client: typeof StreamsClient,
    debugName: string,
    action: (client: StreamsClient) => Promise<T>,
  ): Promise<T>;
  /** Metadata (connection name, credentials) and options with the deadline (the default unless given). */
  callArguments(options: { deadline?: number }): [AppendArgs[0], AppendArgs[1]];
}

const expectedOf = (answer: AppendResp.WrongExpectedVersion): AppendExpectedRevision => {
  if (answer.hasExpectedRevision()) return BigInt(answer.getExpectedRevision());
  if (answer.hasExpectedStreamExists()) return 'stream_exists';
  if (answer.hasExpectedNoStream()) return 'no_stream';
  return 'any';
};

const utf8 = (s: string) => Buffer.from(s, 'utf8');

/** Appends `events` to `streamName` on one Append call of `client`; a refused expectation throws. */
export function appendOnCall(
  client: EventStoreDBClient,
  streamName: string,
  events: JSONEventData[],
  expectedRevision: AppendExpectedRevision,
): Promise<AppendResult> {
  const internals = client as unknown as ClientInternals;
  const options = new AppendReq.Options();
  const stream = new StreamIdentifier();
  stream.setStreamName(utf8(streamName));
  options.setStreamIdentifier(stream);
  if (expectedRevision === 'any') options.setAny(new Empty());
  else if (expectedRevision === 'no_stream') options.setNoStream(new Empty());
  else if (expectedRevision === 'stream_exists') options.setStreamExists(new Empty());
  else options.setRevision(expectedRevision.toString(10));
  const header = new AppendReq();
  header.setOptions(options);
  const entries = events.map((event) => {
    const message = new AppendReq.ProposedMessage();
    const id = new UUID();
    id.setString(event.id);
    message.setId(id);
    message.getMetadataMap().set('type', event.type);
    message.getMetadataMap().set('content-type', event.contentType);
    message.setData(utf8(JSON.stringify(event.data)));
    if (event.metadata !== undefined) message.setCustomMetadata(utf8(JSON.stringify(event.metadata)));
    const entry = new AppendReq();
    entry.setProposedMessage(message);
    return entry;
  });
  return internals.execute(
    StreamsClient,
    'appendToStream',
    (grpc) =>
      // A plain executor: what starting the call throws (a closed channel) rejects this promise.
      new Promise<AppendResult>((resolve, reject) => {
        const sink = grpc.append(...internals.callArguments({}), (error, resp) => {
          if (error) return reject(convertToCommandError(error));
          const wrong = resp.getWrongExpectedVersion();
          if (resp.hasWrongExpectedVersion() && wrong) {
            return reject(
              new WrongExpectedVersionError(undefined, {
                streamName,
                current: wrong.hasCurrentRevision() ? BigInt(wrong.getCurrentRevision()) : 'no_stream',
                expected: expectedOf(wrong),
              }),
            );
          }
          const success = resp.getSuccess();
          if (!resp.hasSuccess() || !success) {
            return reject(new Error(`EventStoreDB answered an append to ${streamName} with neither result`));
          }
          const position = success.getPosition();
          resolve({
            success: true,
            nextExpectedRevision: BigInt(success.getCurrentRevision()),
            position: position
              ? {
                  commit: BigInt(position.getCommitPosition()),
                  prepare: BigInt(position.getPreparePosition()),
                }
              : undefined,
          });
        });
        sink.on('error', reject);
        // Buffered by the stream and sent as the connection takes them; the call's deadline bounds it all.
        sink.write(header);
        for (const entry of entries) sink.write(entry);
        sink.end();
      }),
  );
}
