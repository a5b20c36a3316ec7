/**
 * The demo marketplace `npm run seed` writes (coaches, their services and hours, clients), as data: the seed
 * sends it through the public API, and /openapi.json takes its examples from it.
 */
const hours = (start: string, end: string) => [{ start, end }];
export const weekly = {
  monday: hours('09:00', '18:00'),
  tuesday: hours('09:00', '18:00'),
  wednesday: hours('09:00', '18:00'),
  thursday: hours('09:00', '18:00'),
  friday: hours('09:00', '18:00'),
  saturday: hours('10:00', '14:00'),
};

export interface DemoAddress {
  name: string;
  address: string;
  lat: number;
  lng: number;
  city: string;
  country: string;
}
export interface DemoCoach {
  id: string;
  profile: Record<string, unknown> & { firstName: string; lastName: string; timezone: string };
  address: DemoAddress;
  services: Record<string, unknown>[];
  /** Weekly hours; the shared `weekly` when absent. */
  weekly?: Record<string, { start: string; end: string }[]>;
}

/** Fixed, recognisable ids: "5eed" prefix, version-4 shape. */
export const DEMO_IDS = {
  admin: '5eedad00-0000-4000-8000-000000000001',
  service: '5eed5e00-0000-4000-8000-000000000001',
  coaches: [
    '5eedc0ac-0000-4000-8000-000000000001',
    '5eedc0ac-0000-4000-8000-000000000002',
    '5eedc0ac-0000-4000-8000-000000000003',
  ],
  clients: ['5eedc11e-0000-4000-8000-000000000001', '5eedc11e-0000-4000-8000-000000000002'],
  /** A coach bookable around the clock at 15 minutes' notice, to walk a session's whole life quickly. */
  quickCoach: '5eedc0ac-0000-4000-8000-0000000000ff',
} as const;

const allDay = hours('00:00', '24:00');

export const COACHES: DemoCoach[] = [
  {
    id: DEMO_IDS.coaches[0],
    profile: {
      firstName: 'Anna',
      lastName: 'Schmidt',
      email: 'anna.schmidt@demo.coaching.local',
      timezone: 'Europe/Berlin',
      languages: ['de', 'en'],
      experience: 8,
      description: 'Tennis coach in Berlin: technique for beginners and match play for club players.',
    },
    address: {
      name: 'Court',
      address: 'Tennisclub Mitte, Alexanderplatz 1, Berlin',
      lat: 52.5219,
      lng: 13.4132,
      city: 'Berlin',
      country: 'DE',
    },
    services: [
      {
        name: 'Tennis group clinic',
        description: 'Drills and games for up to four players.',
        price: 25,
        priceCurrency: 'EUR',
        sessionMinutesDuration: 90,
        serviceTypes: ['tennis'],
        groupSession: true,
        maxGroupSize: 4,
      },
      {
        name: 'Tennis private lessons (3-pack)',
        description: 'Three one-to-one lessons, booked together.',
        price: 180,
        priceCurrency: 'EUR',
        sessionMinutesDuration: 60,
        serviceTypes: ['tennis'],
        numberOfSessions: 3,
      },
    ],
  },
  {
    id: DEMO_IDS.coaches[1],
    profile: {
      firstName: 'João',
      lastName: 'Silva',
      email: 'joao.silva@demo.coaching.local',
      timezone: 'Europe/Lisbon',
      languages: ['pt', 'en', 'es'],
      experience: 12,
      description: 'Surf coach on the Lisbon coast, from first waves to reading the line-up.',
    },
    address: {
      name: 'Beach',
      address: 'Praia de Carcavelos, Lisbon',
      lat: 38.6776,
      lng: -9.3363,
      city: 'Lisbon',
      country: 'PT',
    },
    services: [
      {
        name: 'Surf group session',
        description: 'Two hours in the water with up to six surfers.',
        price: 35,
        priceCurrency: 'EUR',
        sessionMinutesDuration: 120,
        serviceTypes: ['surf'],
        groupSession: true,
        maxGroupSize: 6,
      },
      {
        name: 'Surf private coaching (3-pack)',
        description: 'Three one-to-one sessions with video review.',
        price: 210,
        priceCurrency: 'EUR',
        sessionMinutesDuration: 90,
        serviceTypes: ['surf'],
        numberOfSessions: 3,
      },
    ],
  },
  {
    id: DEMO_IDS.coaches[2],
    profile: {
      firstName: 'Maya',
      lastName: 'Johnson',
      email: 'maya.johnson@demo.coaching.local',
      timezone: 'America/New_York',
      languages: ['en', 'es'],
      experience: 5,
      description: 'Yoga teacher in Manhattan: vinyasa flow and mobility.',
    },
    address: {
      name: 'Studio',
      address: 'Bryant Park, New York, NY',
      lat: 40.7536,
      lng: -73.9832,
      city: 'New York',
      country: 'US',
    },
    services: [
      {
        name: 'Yoga group flow',
        description: 'A vinyasa class for up to ten people.',
        price: 20,
        priceCurrency: 'USD',
        sessionMinutesDuration: 60,
        serviceTypes: ['yoga'],
        groupSession: true,
        maxGroupSize: 10,
      },
      {
        name: 'Private yoga (3-pack)',
        description: 'Three one-to-one sessions built around your goals.',
        price: 240,
        priceCurrency: 'USD',
        sessionMinutesDuration: 60,
        serviceTypes: ['yoga'],
        numberOfSessions: 3,
      },
    ],
  },
  {
    id: DEMO_IDS.quickCoach,
    profile: {
      firstName: 'Quinn',
      lastName: 'Quick',
      email: 'quinn.quick@demo.coaching.local',
      timezone: 'UTC',
      languages: ['en'],
      experience: 3,
      description:
        'Fifteen-minute check-ins around the clock: book, approve, complete and review in minutes.',
    },
    address: {
      name: 'Online',
      address: 'Video call',
      lat: 51.5072,
      lng: -0.1276,
      city: 'London',
      country: 'GB',
    },
    weekly: {
      monday: allDay,
      tuesday: allDay,
      wednesday: allDay,
      thursday: allDay,
      friday: allDay,
      saturday: allDay,
      sunday: allDay,
    },
    services: [
      {
        name: 'Quick check-in (15 min)',
        description: 'A short call; the next slot starts within a quarter of an hour.',
        price: 5,
        priceCurrency: 'EUR',
        sessionMinutesDuration: 15,
        serviceTypes: ['check-in'],
        minimumNoticeHours: 0,
      },
    ],
  },
];

export const CLIENTS: { id: string; profile: Record<string, unknown>; address: DemoAddress }[] = [
  {
    id: DEMO_IDS.clients[0],
    profile: {
      firstName: 'Lena',
      lastName: 'Weber',
      email: 'lena.weber@demo.coaching.local',
      timezone: 'Europe/Berlin',
      languages: ['de', 'en'],
    },
    address: {
      name: 'Home',
      address: 'Kastanienallee 10, Berlin',
      lat: 52.5387,
      lng: 13.4097,
      city: 'Berlin',
      country: 'DE',
    },
  },
  {
    id: DEMO_IDS.clients[1],
    profile: {
      firstName: 'Tom',
      lastName: 'Baker',
      email: 'tom.baker@demo.coaching.local',
      timezone: 'America/New_York',
      languages: ['en'],
    },
    address: {
      name: 'Home',
      address: '350 W 42nd St, New York, NY',
      lat: 40.7577,
      lng: -73.9918,
      city: 'New York',
      country: 'US',
    },
  },
];
