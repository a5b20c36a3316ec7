import { isLeft, isRight } from 'fp-ts/Either';
import { fold } from '../../src/decider';
import { service, type ServiceCommand } from '../../commands/services/decider';
import type { ServiceEvent, ServiceFields } from '../../commands/services/events';

const serviceId = '22222222-2222-4222-8222-222222222222';
const coachId = '33333333-3333-4333-8333-333333333333';
const otherCoach = '44444444-4444-4444-8444-444444444444';
const now = '2030-01-01T10:00:00.000Z';
const fields: ServiceFields = {
  name: 'Tennis',
  description: '',
  promo: false,
  price: 40,
  priceCurrency: 'EUR',
  serviceOtherType: '',
  sessionMinutesDuration: 60,
  sessionCancellationHours: 24,
  serviceTypes: ['tennis'],
  numberOfSessions: 1,
  expiresInDays: 365,
  groupSession: false,
  maxGroupSize: 1,
  slots: [],
  minimumNoticeHours: 2,
  bookingWindowDays: 60,
};
const created: ServiceEvent = {
  type: 'ServiceCreated',
  data: { serviceId, coachId, ...fields, status: 'review', createdAt: now },
};
const approved: ServiceEvent = { type: 'ServiceApproved', data: { serviceId, coachId, at: now } };
const rejected: ServiceEvent = {
  type: 'ServiceRejected',
  data: { serviceId, coachId, reason: 'vague', at: now },
};

const when = (history: ServiceEvent[], command: ServiceCommand) =>
  service.decide(command, fold(service, history));
const update = (changes: Partial<ServiceFields>, by = coachId): ServiceCommand => ({
  type: 'UpdateService',
  serviceId,
  coachId: by,
  changes,
  now,
});
const approve: ServiceCommand = { type: 'ApproveService', serviceId, now };
const reject: ServiceCommand = { type: 'RejectService', serviceId, reason: 'vague', now };
const errorOf = (r: ReturnType<typeof when>) => (isLeft(r) ? r.left.code : null);
const eventsOf = (r: ReturnType<typeof when>) => (isRight(r) ? r.right : null);

describe('service decider', () => {
  it('creates a service in review', () => {
    expect(eventsOf(when([], { type: 'CreateService', serviceId, coachId, fields, now }))).toEqual([created]);
    expect(fold(service, [created]).service?.status).toBe('review');
  });

  it('refuses a second creation with the same id', () => {
    expect(errorOf(when([created], { type: 'CreateService', serviceId, coachId, fields, now }))).toBe(
      'conflict',
    );
  });

  it('refuses a one-to-one service with more than one seat, on create and on edit', () => {
    const bad = { ...fields, maxGroupSize: 3 };
    expect(errorOf(when([], { type: 'CreateService', serviceId, coachId, fields: bad, now }))).toBe(
      'validation',
    );
    expect(errorOf(when([created], update({ maxGroupSize: 3 })))).toBe('validation');
    expect(eventsOf(when([created], update({ groupSession: true, maxGroupSize: 3 })))).toHaveLength(1);
  });

  it('needs maxGroupSize when an edit makes a one-to-one service a group one, as create does', () => {
    const result = when([created], update({ groupSession: true }));
    expect(isLeft(result) && result.left).toMatchObject({
      code: 'validation',
      locs: [['body', 'maxGroupSize']],
      type: 'missing',
    });
    // Sent with it (even as 1), or on a service that already is a group one, the edit passes.
    expect(eventsOf(when([created], update({ groupSession: true, maxGroupSize: 1 })))).toHaveLength(1);
    const group = when([created], update({ groupSession: true, maxGroupSize: 4 }));
    const asGroup = [created, ...(eventsOf(group) ?? [])];
    expect(eventsOf(when(asGroup, update({ groupSession: true, name: 'Group tennis' })))).toHaveLength(1);
  });

  it("refuses a price finer than its currency's minor unit; other edits of such a stored price pass", () => {
    const create = (over: Partial<ServiceFields>) =>
      when([], { type: 'CreateService', serviceId, coachId, fields: { ...fields, ...over }, now });
    expect(errorOf(create({ price: 19.999 }))).toBe('validation');
    expect(errorOf(create({ price: 0.5, priceCurrency: 'JPY' }))).toBe('validation');
    expect(eventsOf(create({ price: 19.99 }))).toHaveLength(1);
    expect(eventsOf(create({ price: 0.1 + 0.2 }))).toHaveLength(1); // 0.30000000000000004 is 0.30
    expect(eventsOf(create({ price: 1.234, priceCurrency: 'BHD' }))).toHaveLength(1);
    expect(errorOf(when([created], update({ price: 40.001 })))).toBe('validation');
    expect(errorOf(when([created], update({ priceCurrency: 'JPY', price: 40.5 })))).toBe('validation');
    const stored: ServiceEvent = { ...created, data: { ...created.data, price: 40.005 } } as ServiceEvent;
    expect(eventsOf(when([stored], update({ name: 'Tennis II' })))).toHaveLength(1);
  });

  it('records only the fields that changed', () => {
    expect(eventsOf(when([created], update({ price: 50, name: 'Tennis' })))).toEqual([
      { type: 'ServiceUpdated', data: { serviceId, coachId, changes: { price: 50 }, updatedAt: now } },
    ]);
    expect(eventsOf(when([created], update({ price: 40 })))).toEqual([]);
  });

  it('keeps an approved service approved when its price or duration changes', () => {
    const events = eventsOf(when([created, approved], update({ price: 55, sessionMinutesDuration: 90 })))!;
    expect(events.map((e) => e.type)).toEqual(['ServiceUpdated']);
    expect(fold(service, [created, approved, ...events]).service).toMatchObject({
      status: 'approved',
      price: 55,
      sessionMinutesDuration: 90,
    });
  });

  it('sends an edited rejected service back to review', () => {
    const events = eventsOf(when([created, rejected], update({ description: 'clearer' })))!;
    expect(events.map((e) => e.type)).toEqual(['ServiceUpdated', 'ServiceResubmitted']);
    expect(fold(service, [created, rejected, ...events]).service?.status).toBe('review');
  });

  it("hides a service from another coach's edits", () => {
    expect(errorOf(when([created], update({ price: 1 }, otherCoach)))).toBe('service_not_found');
  });

  it('answers service_not_found for unknown services', () => {
    expect(errorOf(when([], update({ price: 1 })))).toBe('service_not_found');
    expect(errorOf(when([], approve))).toBe('service_not_found');
    expect(errorOf(when([], reject))).toBe('service_not_found');
  });

  it('approves a service in review, once', () => {
    expect(eventsOf(when([created], approve))).toEqual([approved]);
    expect(eventsOf(when([created, approved], approve))).toEqual([]);
  });

  it('refuses to approve a rejected service until it is edited', () => {
    expect(errorOf(when([created, rejected], approve))).toBe('invalid_transition');
  });

  it('rejects a service in review or approved, once', () => {
    expect(eventsOf(when([created], reject))).toEqual([rejected]);
    expect(eventsOf(when([created, approved], reject))).toEqual([rejected]);
    expect(eventsOf(when([created, rejected], reject))).toEqual([]);
    expect(fold(service, [created, approved, rejected]).service?.status).toBe('rejected');
  });
});
