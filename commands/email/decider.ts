import { left, right } from 'fp-ts/Either';
import { assertNever, type Decider } from '../../src/decider';
import type { EmailEvent, EmailRequested } from './events';

export interface EmailRequestState {
  requested: EmailRequested['data'] | null;
}

export type EmailCommand = { type: 'RequestEmail'; request: EmailRequested['data'] };

export const emailRequest: Decider<EmailCommand, EmailEvent, EmailRequestState> = {
  initialState: () => ({ requested: null }),
  evolve(_state, event) {
    switch (event.type) {
      case 'EmailRequested':
        return { requested: event.data };
      default:
        return assertNever(event.type);
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'RequestEmail':
        if (state.requested) return left({ code: 'conflict', message: 'this e-mail was already requested' });
        return right([{ type: 'EmailRequested', data: command.request }]);
      default:
        return assertNever(command.type);
    }
  },
};
