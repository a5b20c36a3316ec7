/**
 * ICU, which answers `Intl`'s canonical zone names, keeps the names CLDR first gave a zone, so a coach in
 * Kyiv who sends `Europe/Kyiv` would read back `Europe/Kiev`. These are the zones whose IANA name was
 * changed since (found by resolving every zone of tzdata 2024 with Node 20's ICU): the service answers the
 * name IANA uses today.
 */
const CURRENT_IANA_NAME: Readonly<Record<string, string>> = {
  'Africa/Asmera': 'Africa/Asmara',
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Catamarca': 'America/Argentina/Catamarca',
  'America/Cordoba': 'America/Argentina/Cordoba',
  'America/Coral_Harbour': 'America/Atikokan',
  'America/Godthab': 'America/Nuuk',
  'America/Indianapolis': 'America/Indiana/Indianapolis',
  'America/Jujuy': 'America/Argentina/Jujuy',
  'America/Louisville': 'America/Kentucky/Louisville',
  'America/Mendoza': 'America/Argentina/Mendoza',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh',
  'Atlantic/Faeroe': 'Atlantic/Faroe',
  'Europe/Kiev': 'Europe/Kyiv',
  'Pacific/Enderbury': 'Pacific/Kanton',
  'Pacific/Ponape': 'Pacific/Pohnpei',
  'Pacific/Truk': 'Pacific/Chuuk',
};

/**
 * The name a zone is stored and answered by, or null when the runtime knows no such zone. `Intl` takes
 * names in any case and links (`europe/berlin`, `US/Eastern`) and resolves them to one canonical name;
 * that name, in IANA's current spelling, is the zone's (`Europe/Berlin`, `America/New_York`).
 */
export const zoneName = (sent: string): string | null => {
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en', { timeZone: sent }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
  return CURRENT_IANA_NAME[resolved] ?? resolved;
};
