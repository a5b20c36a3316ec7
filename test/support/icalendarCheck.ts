/**
 * A strict check of a calendar feed against the RFC 5545 rules the feed relies on: CRLF content lines of at
 * most 75 octets, folded with one leading space and never inside a character's UTF-8 bytes; the content-line
 * grammar; VCALENDAR and VEVENT with their required properties once, and none of the at-most-once ones twice;
 * UTC DATE-TIME values; DTEND after DTSTART; an INTEGER SEQUENCE; escaped TEXT values; unique UIDs.
 * Throws on the first rule broken; answers the events, each as its unfolded, unescaped property values.
 */
export function checkICalendar(bytes: Buffer): Record<string, string>[] {
  const fail = (msg: string, line?: string): never => {
    throw new Error(`RFC 5545: ${msg}${line === undefined ? '' : `: ${JSON.stringify(line)}`}`);
  };
  const text = bytes.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(bytes)) fail('not valid UTF-8');
  if (!text.endsWith('\r\n')) fail('the last line does not end with CRLF');
  const physical = text.slice(0, -2).split('\r\n');
  for (const line of physical) {
    if (/[\r\n]/.test(line)) fail('a bare CR or LF', line);
    const octets = Buffer.from(line, 'utf8');
    if (octets.length > 75) fail(`a line of ${octets.length} octets (75 at most)`, line);
    // Each physical line is whole UTF-8 on its own: a fold did not split a character.
    if (octets.toString('utf8') !== line || line.includes('\uFFFD')) fail('a fold splits a character', line);
  }
  if (physical[0]?.startsWith(' ')) fail('the first line is a continuation');
  // Unfold: a CRLF followed by one space or tab is removed.
  const lines = text
    .slice(0, -2)
    .replace(/\r\n[ \t]/g, '')
    .split('\r\n');
  const NAME =
    /^([A-Za-z0-9-]+)((?:;[A-Za-z0-9-]+=(?:"[^"\u0000-\u001f]*"|[^";:,\u0000-\u001f]*)(?:,(?:"[^"\u0000-\u001f]*"|[^";:,\u0000-\u001f]*))*)*):(.*)$/; // eslint-disable-line no-control-regex
  const UTC = /^\d{8}T\d{6}Z$/;
  const TEXT_PROPS = new Set(['SUMMARY', 'DESCRIPTION', 'LOCATION', 'X-WR-CALNAME', 'COMMENT']);
  const ONCE_EVENT = [
    'UID',
    'DTSTAMP',
    'DTSTART',
    'DTEND',
    'DURATION',
    'SUMMARY',
    'DESCRIPTION',
    'LOCATION',
    'STATUS',
    'SEQUENCE',
    'LAST-MODIFIED',
    'CREATED',
    'TRANSP',
    'CLASS',
    'URL',
    'ORGANIZER',
  ];
  const unescape = (name: string, value: string) => {
    if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) fail(`a control character in ${name}`, value); // eslint-disable-line no-control-regex
    if (!TEXT_PROPS.has(name)) return value;
    // TEXT: `;` and `,` only escaped; a backslash only before \ ; , n N.
    if (/(^|[^\\])(\\\\)*[;,]/.test(value)) fail(`an unescaped ; or , in ${name}`, value);
    if (/\\[^\\;,nN]|\\$/.test(value.replace(/\\\\/g, ''))) fail(`a bad escape in ${name}`, value);
    return value.replace(/\\([\\;,nN])/g, (_, c: string) => (c === 'n' || c === 'N' ? '\n' : c));
  };

  const events: Record<string, string>[] = [];
  const stack: string[] = [];
  let props: [string, string, string][] = [];
  const calendarProps: string[] = [];
  for (const line of lines) {
    const m = NAME.exec(line);
    if (!m) fail('not a content line (name *(";" param) ":" value)', line);
    const name = m![1]!.toUpperCase();
    const params = m![2]!;
    const value = m![3]!;
    if (name === 'BEGIN') {
      if (stack.length === 0 && value !== 'VCALENDAR') fail('the object does not begin with VCALENDAR', line);
      if (stack.length === 1 && value !== 'VEVENT') fail(`an unexpected component ${value}`, line);
      if (stack.length > 1) fail('a component nested in a VEVENT', line);
      stack.push(value);
      props = [];
      continue;
    }
    if (name === 'END') {
      if (stack.pop() !== value) fail('END does not match BEGIN', line);
      if (value === 'VEVENT') {
        const count = (p: string) => props.filter(([n]) => n === p).length;
        for (const p of ['UID', 'DTSTAMP', 'DTSTART'])
          if (count(p) !== 1) fail(`a VEVENT with ${count(p)} ${p} (exactly one)`);
        for (const p of ONCE_EVENT) if (count(p) > 1) fail(`a VEVENT with ${count(p)} ${p} (at most one)`);
        if (count('DTEND') && count('DURATION')) fail('a VEVENT with both DTEND and DURATION');
        const event = Object.fromEntries(props.map(([n, , v]) => [n, unescape(n, v)]));
        for (const p of ['DTSTAMP', 'DTSTART', 'DTEND', 'LAST-MODIFIED', 'CREATED'])
          if (event[p] !== undefined) {
            if (props.find(([n]) => n === p)![1]) fail(`${p} with parameters (this feed writes UTC only)`);
            if (!UTC.test(event[p]!)) fail(`${p} is no UTC DATE-TIME`, event[p]);
          }
        if (event.DTEND !== undefined && !(event.DTEND > event.DTSTART!))
          fail('DTEND is not after DTSTART', `${event.DTSTART} ${event.DTEND}`);
        if (event.SEQUENCE !== undefined && !/^\d{1,10}$/.test(event.SEQUENCE))
          fail('SEQUENCE is no non-negative INTEGER', event.SEQUENCE);
        if (event.SEQUENCE !== undefined && Number(event.SEQUENCE) > 2147483647) fail('SEQUENCE too large');
        if (event.STATUS !== undefined && !['TENTATIVE', 'CONFIRMED', 'CANCELLED'].includes(event.STATUS))
          fail('a VEVENT STATUS that is none of TENTATIVE, CONFIRMED, CANCELLED', event.STATUS);
        if (events.some((e) => e.UID === event.UID)) fail('two VEVENTs with one UID', event.UID);
        events.push(event);
      }
      continue;
    }
    if (stack.length === 0) fail('a property outside VCALENDAR', line);
    if (stack.length === 1) {
      calendarProps.push(name);
      unescape(name, value);
    } else props.push([name, params, value]);
  }
  if (stack.length) fail(`${stack.join(', ')} not ended`);
  for (const p of ['PRODID', 'VERSION'])
    if (calendarProps.filter((n) => n === p).length !== 1) fail(`VCALENDAR without exactly one ${p}`);
  return events;
}
